// Reading reference cases: the committed data parses, a well-formed fixture reads as written, and
// every kind of bad input is an InputError that names the file, the case and the key.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "paths.hpp"
#include "trainplan/core/error.hpp"

namespace trainplan {
namespace {

using planner::CaseKind;
using planner::Metric;
using planner::Unit;

TEST(Reference, CommittedDataParses) {
  const auto& cases = test::reference_cases();
  std::size_t oracle = 0, measured = 0;
  for (const auto& c : cases) (c.kind == CaseKind::oracle ? oracle : measured)++;
  // 71 oracle outputs (tools/oracle/cases.py; 6 of partial fine-tuning); 18 litgpt, 1 KAUST, 10 Megatron, 8 Korthikanti
  // runs, 18 + 3 QLoRA H200 runs and 14 runs of the 2025-26 families (tools/measure), 6 published
  // FSDP runs of fms-fsdp, 46 rows of litgpt's config_hub table, 209 rows of llm-foundry's tables,
  // 2 bf16 and 3 eager torchao float8 runs on an H100 (tools/measure --plan fp8), 23 published
  // FP8 runs (Megatron-Bridge, llm-foundry, Trainy's torchtitan runs; two of them under Megatron
  // FSDP), 11 H200 runs with
  // Liger's kernels and 2 eager twins (tools/measure --plan liger), 3 compiled H200 runs
  // (tools/measure --plan compile) with a compiled float8 one, 2 on an H100 (--plan fp8), 10 litgpt
  // rows replayed on an H200 (tools/measure/litgpt_replay.py), 8 rows of torchtune's README table of
  // its memory options.
  EXPECT_EQ(oracle, 71u);
  EXPECT_EQ(measured, 398u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name + " (" + c.file + ")");
    EXPECT_FALSE(c.source.empty());
    EXPECT_FALSE(c.measurements.empty());
    for (const auto& m : c.measurements) {
      EXPECT_TRUE(planner::unit_fits(m.metric, m.unit));
      EXPECT_FALSE(m.what.empty());
      EXPECT_GT(m.value, 0.0);
    }
  }
}

TEST(Reference, OracleFileBecomesOneCaseWithEveryMetric) {
  const auto cases = request::read_reference_file(
      test::kReferenceDir + "/oracle/llama-gqa-eager-s128-b2-fp32.json", test::catalog());
  ASSERT_EQ(cases.size(), 1u);
  const auto& c = cases.front();
  EXPECT_EQ(c.kind, CaseKind::oracle);
  EXPECT_EQ(c.name, "llama-gqa-eager-s128-b2-fp32");
  EXPECT_EQ(c.training.precision, Precision::fp32);
  EXPECT_EQ(c.training.attention, Attention::eager);
  EXPECT_EQ(c.training.micro_batch, 2);
  EXPECT_EQ(c.training.seq, 128);
  // parameters, trainable, forward, backward, gradients, optimizer state, 2 blocks, the head.
  ASSERT_EQ(c.measurements.size(), 9u);
  // The hand check of tools/oracle/README.md: block 1 keeps 3,803,136 bytes; 615,040 parameters.
  EXPECT_EQ(c.measurements[0].metric, Metric::parameters);
  EXPECT_EQ(c.measurements[0].value, 615040.0);
  EXPECT_EQ(c.measurements[7].metric, Metric::saved_for_backward_layer);
  EXPECT_EQ(c.measurements[7].layer, 1);
  EXPECT_EQ(c.measurements[7].value, 3803136.0);
  EXPECT_EQ(c.measurements[7].tolerance_pct, 5.0);
  // Head: final norm 3 x 131072 + 1024, log-softmax 1048576, labels 2048, total weight 4.
  EXPECT_EQ(c.measurements[8].metric, Metric::saved_for_backward_head);
  EXPECT_EQ(c.measurements[8].value, 1444868.0);
}

TEST(Reference, FixtureReadsAsWritten) {
  const auto cases =
      request::read_reference_file(test::kFixtureDir + "/good/minimal.json", test::catalog());
  ASSERT_EQ(cases.size(), 2u);
  const auto& c = cases[0];
  EXPECT_EQ(c.kind, CaseKind::measured);
  EXPECT_EQ(c.name, "tiny-llama-lora");
  EXPECT_EQ(c.source, "test fixture, none, one");
  EXPECT_EQ(c.arch.name, "tiny-llama");  // from the file's "models" table
  EXPECT_EQ(c.arch.kv_heads, 2);
  EXPECT_EQ(c.cluster.world(), 1);
  EXPECT_EQ(c.cluster.gpu.name, "A100-80GB");
  EXPECT_EQ(c.training.method, Method::lora);
  EXPECT_EQ(c.training.precision, Precision::bf16_true);
  EXPECT_EQ(c.training.lora.rank, 8);
  EXPECT_EQ(c.training.lora.dropout, 0.0);
  ASSERT_EQ(c.measurements.size(), 4u);
  EXPECT_EQ(c.measurements[0].unit, Unit::GB);
  EXPECT_EQ(c.measurements[1].unit, Unit::GiB);
  EXPECT_EQ(c.measurements[2].layer, 1);
  EXPECT_EQ(c.measurements[3].unit, Unit::ms);
  EXPECT_EQ(cases[1].arch.name, "bloom-560m");  // from the catalogue
  EXPECT_EQ(cases[1].measurements[0].unit, Unit::MiB);
}

TEST(Reference, UnitScales) {
  EXPECT_EQ(planner::unit_scale(Unit::GiB), 1073741824.0);
  EXPECT_EQ(planner::unit_scale(Unit::GB), 1e9);
  EXPECT_EQ(planner::unit_scale(Unit::MiB), 1048576.0);
  EXPECT_EQ(planner::unit_scale(Unit::ms), 1e-3);
  EXPECT_TRUE(planner::unit_fits(Metric::peak_allocated, Unit::GB));
  EXPECT_FALSE(planner::unit_fits(Metric::peak_allocated, Unit::s));
  EXPECT_FALSE(planner::unit_fits(Metric::step_time, Unit::GiB));
  EXPECT_FALSE(planner::unit_fits(Metric::parameters, Unit::bytes));
  EXPECT_EQ(planner::allowed_units(Metric::step_time), "s, ms");
}

struct BadInput {
  std::string file;  // under tests/validate/data/bad/
  std::vector<std::string> message_has;
};

// Reading or predicting the file fails with an InputError whose message holds every fragment.
void expect_rejected(const std::string& path, const std::vector<std::string>& fragments) {
  try {
    const auto cases = request::read_reference_paths({path}, test::catalog());
    (void)planner::validate(cases);
    ADD_FAILURE() << "accepted " << path;
  } catch (const InputError& e) {
    const std::string msg = e.what();
    for (const auto& f : fragments)
      EXPECT_NE(msg.find(f), std::string::npos) << "'" << f << "' not in: " << msg;
  }
}

TEST(Reference, BadInputNamesFileCaseAndKey) {
  const std::vector<BadInput> rows = {
      {"unknown_metric.json",
       {"case 'tiny-llama-lora'", "measured[0]", "key 'metric'", "unknown metric 'peak_memory'"}},
      {"missing_precision.json", {"case 'tiny-llama-lora' training", "key 'precision' is missing"}},
      {"no_unit.json", {"measured[0]", "key 'unit' is missing", "GiB, GB, MiB"}},
      {"wrong_unit.json", {"key 'unit'", "'GiB' is not a unit of metric 'step_time'"}},
      {"no_what.json", {"key 'what' is missing"}},
      {"unknown_key.json", {"training", "unknown key 'micro_batch_size'"}},
      {"lora_missing.json", {"key 'lora' is missing"}},
      {"quant_without_qlora.json", {"key 'quant' is given"}},
      {"quant_block_without_qlora.json", {"key 'quant_block' is given"}},
      {"qlora_stack_without_qlora.json", {"key 'qlora_stack' is given"}},
      {"unknown_qlora_stack.json", {"qlora_stack", "litgpt-2019"}},
      {"bitsandbytes_without_qlora.json", {"key 'bitsandbytes' is given but method is not 'qlora'"}},
      {"bitsandbytes_not_a_release.json",
       {"case 'tiny-llama-lora' training", "key 'bitsandbytes'", "'0.42.x' is not a bitsandbytes release"}},
      {"library_version_not_a_release.json",
       {"case 'tiny-llama-lora' training", "key 'library_version'", "'0.4.x' is not a library release"}},
      {"library_version_without_versioned_traits.json",
       {"case 'tiny-llama-lora' training", "key 'library_version' is given but library 'hf-trainer'"}},
      {"previous_share_negative.json", {"case 'tiny-llama-lora' training", "key 'previous_share'"}},
      {"previous_share_without_held_graph.json",
       {"case 'tiny-llama-lora' training", "key 'previous_share' is given but no previous micro-batch's graph is held"}},
      {"fsdp_version_without_fsdp.json",
       {"case 'tiny-llama-lora' training", "key 'fsdp_version' is given but PyTorch does not shard the parameters",
        "strategy 'single'"}},
      {"fsdp_version_out_of_range.json", {"case 'tiny-llama-lora' training", "key 'fsdp_version'"}},
      {"transformers_not_a_release.json",
       {"case 'tiny-llama-lora' training", "key 'transformers'", "'latest' is not a transformers release"}},
      {"offload_activations_outside_megatron.json",
       {"reference case 'tiny-llama-lora'", "key 'offload_activations'", "key 'framework' megatron"}},
      {"hidden_dropout_out_of_range.json",
       {"case 'tiny-llama-lora' training", "key 'hidden_dropout' must be a probability", "1.5"}},
      {"attention_dropout_without_dropout_layers.json",
       {"case 'tiny-llama-lora' training", "key 'attention_dropout' is given but library 'litgpt'"}},
      {"expandable_segments_not_a_boolean.json", {"case 'tiny-llama-lora' training", "key 'expandable_segments'"}},
      {"chunked_loss_without_chunked_library.json",
       {"case 'tiny-llama-lora' training", "key 'chunked_loss' is given but library 'hf-trainer'"}},
      {"optimizer_in_backward_with_accumulation.json",
       {"case 'tiny-llama-lora' training", "key 'optimizer_in_backward' needs grad_accum 1"}},
      {"expert_parallel_dense.json", {"reference case 'tiny-llama-lora'", "key 'expert_parallel' 2", "not a mixture of experts"}},
      {"unknown_model.json", {"key 'model'", "'no-such-model'"}},
      {"no_hardware.json", {"key 'hardware' is missing"}},
      {"unknown_schema.json", {"unknown schema 'trainplan.reference/9'"}},
      {"no_schema.json", {"key 'schema' is missing"}},
      {"duplicate_name.json", {"'tiny-llama-lora' is used twice"}},
      {"layer_out_of_range.json", {"key 'layer'", "block 7 does not exist"}},
      {"truncated.json", {"invalid JSON"}},
      {"oracle_unknown_key.json",
       {"oracle file", "case 'llama-gqa-eager-s128-b2-fp32' flops", "unknown key 'recompute'"}},
      // Readable but impossible: the prediction names the case and the file.
      {"tp_on_one_gpu.json", {"reference case 'tiny-llama-lora'", "does not divide the 1 GPUs"}},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.file);
    const std::string path = test::kFixtureDir + "/bad/" + r.file;
    auto fragments = r.message_has;
    fragments.push_back(path);
    expect_rejected(path, fragments);
  }
}

TEST(Reference, UnreadablePathsAreInputErrors) {
  namespace fs = std::filesystem;
  expect_rejected(test::kFixtureDir + "/no-such-file.json",
                  {"cannot read reference file", "no-such-file.json"});
  const fs::path empty = fs::temp_directory_path() / "trainplan-validate-empty-folder";
  fs::create_directories(empty);
  expect_rejected(empty.string(), {"holds no .json files", empty.string()});
  fs::remove_all(empty);
  const fs::path blank = fs::temp_directory_path() / "trainplan-validate-blank.json";
  std::ofstream(blank) << "  \n";
  expect_rejected(blank.string(), {"the file is empty"});
  fs::remove(blank);
  EXPECT_THROW((void)request::read_reference_paths({}, test::catalog()), InputError);
}

}  // namespace
}  // namespace trainplan
