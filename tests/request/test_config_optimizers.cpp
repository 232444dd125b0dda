// Optimizer names as files spell them: every name the Hugging Face Trainer accepts is either read
// as a modelled optimizer or refused, naming the file, the key, the name and the nearest modelled
// optimizer; never answered silently as AdamW.
#include <array>
#include <fstream>
#include <string>

#include "config_fixture.hpp"
#include "trainplan/core/modes.hpp"
#include "trainplan/request/request_files.hpp"

namespace trainplan::request {
namespace {

// transformers/training_args.py OptimizerNames at v4.57.1 (huggingface/transformers), all 44
// values, plus adamw_hf and adamw_apex_fused, which older files still name.
constexpr std::array kTrainerOptimNames{
    "adamw_torch",        "adamw_torch_fused",    "adamw_torch_xla",
    "adamw_torch_npu_fused", "adamw_apex_fused",  "adafactor",
    "adamw_anyprecision", "adamw_torch_4bit",     "adamw_torch_8bit",
    "ademamix",           "sgd",                  "adagrad",
    "adamw_bnb_8bit",     "adamw_8bit",           "ademamix_8bit",
    "lion_8bit",          "lion_32bit",           "paged_adamw_32bit",
    "paged_adamw_8bit",   "paged_ademamix_32bit", "paged_ademamix_8bit",
    "paged_lion_32bit",   "paged_lion_8bit",      "rmsprop",
    "rmsprop_bnb",        "rmsprop_bnb_8bit",     "rmsprop_bnb_32bit",
    "galore_adamw",       "galore_adamw_8bit",    "galore_adafactor",
    "galore_adamw_layerwise", "galore_adamw_8bit_layerwise", "galore_adafactor_layerwise",
    "lomo",               "adalomo",              "grokadamw",
    "schedule_free_radam", "schedule_free_adamw", "schedule_free_sgd",
    "apollo_adamw",       "apollo_adamw_layerwise", "stable_adamw",
    "adamw_hf"};

ConfigRead trainer_args(const std::string& optim) {
  return read_training_config_text(
      R"({"per_device_train_batch_size": 2, "output_dir": "x", "optim": ")" + optim + "\"}", "args.json");
}

bool is_optimizer(const std::string& name) {
  for (const auto& [o, text] : EnumTable<Optimizer>::kEntries)
    if (text == name) return true;
  return false;
}

TEST(ConfigOptimizers, EveryTrainerOptimIsModelledOrRefusedWithTheNearest) {
  for (const char* optim : kTrainerOptimNames) {
    SCOPED_TRACE(optim);
    const ConfigRead r = trainer_args(optim);
    if (const Setting* s = r.find("optimizer")) {
      EXPECT_TRUE(is_optimizer(s->value)) << s->value;
      EXPECT_TRUE(r.unmodelled.empty());
      continue;
    }
    ASSERT_EQ(r.unmodelled.size(), 1u);
    EXPECT_TRUE(is_optimizer(r.unmodelled[0].nearest)) << r.unmodelled[0].nearest;
    // Known by name, with what keeps it from being modelled: not the catch-all for unknown names.
    EXPECT_EQ(r.unmodelled[0].text.find("does not know"), std::string::npos) << r.unmodelled[0].text;
  }
}

TEST(ConfigOptimizers, LionAndLambAreTheirOwnOptimizers) {
  const auto optimizer = [](const ConfigRead& r) {
    const Setting* s = r.find("optimizer");
    return s ? s->value : std::string("(none)");
  };
  EXPECT_EQ(optimizer(trainer_args("lion_32bit")), "lion");
  EXPECT_EQ(optimizer(trainer_args("lion_8bit")), "lion-8bit");
  EXPECT_EQ(optimizer(trainer_args("paged_lion_8bit")), "paged-lion-8bit");
  // DeepSpeed's types compare without case (runtime/config.py lowers them).
  const ConfigRead ds = read_training_config_text(
      R"({"train_micro_batch_size_per_gpu": 1, "optimizer": {"type": "Lamb", "params": {"lr": 1e-3}}})", "ds.json");
  EXPECT_EQ(optimizer(ds), "lamb");
  EXPECT_TRUE(ds.warnings.empty()) << ds.warnings[0];
  const ConfigRead tt = read_training_config_text(
      "model:\n  _component_: torchtune.models.llama3_1.llama3_1_8b\nbatch_size: 2\n"
      "optimizer:\n  _component_: bitsandbytes.optim.PagedLion8bit\n",
      "tt.yaml");
  EXPECT_EQ(optimizer(tt), "paged-lion-8bit");
}

// A file naming an optimizer trainplan does not model is refused with the file, key, value and the
// nearest modelled optimizer; choosing one on the command line answers the question.
TEST(ConfigOptimizers, UnmodelledOptimizerIsRefusedUnlessOneIsChosen) {
  const std::string path = ::testing::TempDir() + "/ds-onebit.json";
  {
    std::ofstream f(path);
    f << R"({"train_micro_batch_size_per_gpu": 1, "optimizer": {"type": "OneBitAdam"}})";
  }
  try {
    (void)make_request({path}, {}, command::estimate);
    ADD_FAILURE() << "not refused";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(path + ": key 'optimizer.type' = \"OneBitAdam\""), std::string::npos) << m;
    EXPECT_NE(m.find("error-feedback"), std::string::npos) << m;
    EXPECT_NE(m.find("--optimizer adam "), std::string::npos) << m;
  }
  const Request r = make_request({path}, {{"optimizer", "adam", "--optimizer"}}, command::estimate);
  EXPECT_EQ(r.training.optimizer, Optimizer::adam);
}

}  // namespace
}  // namespace trainplan::request
