// Partial fine-tuning as the frameworks' files ask for it: LLaMA-Factory's finetuning_type freeze
// (its layers, modules and LLaMA Pro's spread layers) and axolotl's unfrozen_parameters (patterns
// over the parameter names, resolved against the model and the transformers release).

#include <string>

#include "config_fixture.hpp"
#include "../common/catalog.hpp"
#include "trainplan/model/partial.hpp"
#include "../../request/src/unfrozen.hpp"

namespace trainplan::request {
namespace {

using namespace config_test;

TEST(ConfigPartial, LlamaFactoryFreezeDefaultsAndModules) {
  const ConfigRead plain = read_training_config_text(
      "model_name_or_path: meta-llama/Meta-Llama-3-8B\nstage: sft\nfinetuning_type: freeze\n", "lf.yaml");
  EXPECT_EQ(option(plain, "method"), "full");
  EXPECT_EQ(option(plain, "trainable"), "last:2");  // freeze_trainable_layers' default
  EXPECT_EQ(option(plain, "checkpoint-trained-only"), "true");
  const ConfigRead first = read_training_config_text(
      "model_name_or_path: m\nstage: sft\nfinetuning_type: freeze\nfreeze_trainable_layers: -4\nfreeze_trainable_modules: mlp,self_attn\n"
      "freeze_extra_modules: embed_tokens,lm_head\n",
      "lf.yaml");
  EXPECT_EQ(option(first, "trainable"), "first:4,mlp,attention,embedding,head");
  const ConfigRead pro = read_training_config(config_path("llamafactory-llama3pro-freeze.yaml"));
  EXPECT_EQ(option(pro, "trainable"), "spread:8");
}

TEST(ConfigPartial, LlamaFactoryFreezeRefusesWhatItCannotName) {
  for (const char* text : {"model_name_or_path: m\nstage: sft\nfinetuning_type: freeze\nfreeze_trainable_modules: feathers\n",
                           "model_name_or_path: m\nstage: sft\nfinetuning_type: freeze\nfreeze_trainable_layers: 0\n",
                           "model_name_or_path: m\nstage: sft\nfinetuning_type: freeze\nuse_llama_pro: true\nfreeze_trainable_layers: -2\n",
                           "model_name_or_path: m\nstage: sft\nfinetuning_type: freeze\nfreeze_extra_modules: vision_tower\n"}) {
    try {
      (void)read_training_config_text(text, "lf.yaml");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("lf.yaml: key 'freeze_"), std::string::npos) << e.what();
    }
  }
}

TEST(ConfigPartial, LlamaProSpreadIsTheLastLayerOfEachGroup) {
  // LLaMA-Factory _setup_freeze_tuning: stride = 32 / 8 = 4, layers 3, 7, ..., 31.
  const model::Architecture a = test::catalog().resolve_model("llama-3.1-8b").arch;
  const model::TrainedSubset s =
      model::resolve_trained_subset(a, model::parse_trained_subset("spread:8", "t"), "t");
  EXPECT_EQ(model::trained_subset_text(s), "3,7,11,15,19,23,27,31");
  EXPECT_THROW((void)model::resolve_trained_subset(a, model::parse_trained_subset("spread:5", "t"), "t"),
               InputError);  // 5 does not divide 32: LLaMA-Factory's ValueError
  EXPECT_THROW((void)model::resolve_trained_subset(a, model::parse_trained_subset("last:40", "t"), "t"), InputError);
}

TEST(ConfigPartial, AxolotlPatternsAreReadAsTrainable) {
  const ConfigRead r = read_training_config(config_path("axolotl-bigstral-ds-zero3.yaml"));
  EXPECT_EQ(option(r, "trainable"),
            "match:^lm_head.weight$,match:^model.embed_tokens.weight$,match:model.layers.4[4-9]+.block_sparse_moe.gate,"
            "match:model.layers.4[4-9]+.block_sparse_moe.experts,match:model.layers.5[0-5]+.block_sparse_moe.gate,"
            "match:model.layers.5[0-5]+.block_sparse_moe.experts");
  // Under an adapter the PEFT names begin base_model.model.: patterns anchored elsewhere match none.
  const ConfigRead gemma = read_training_config(config_path("axolotl-gemma3-1b-qlora.yml"));
  EXPECT_EQ(option(gemma, "trainable"), "");
  EXPECT_TRUE(has_warning(gemma, "freezes every parameter, the adapters too, and nothing trains"));
}

// The bigstral example's patterns name Mixtral's block_sparse_moe, which transformers 5 (axolotl
// 0.18 pins 5.14.1) calls mlp: only the embedding and the head train there; under 4.x the router
// and experts of the layers named train too (here Mixtral-8x7B's last eight, as the example names
// Mixtral-8x22B's last twelve).
TEST(ConfigPartial, AxolotlPatternsFollowTheTransformersRelease) {
  const model::Architecture a = test::catalog().resolve_model("mixtral-8x7b").arch;
  const std::vector<std::string> patterns = {"^lm_head.weight$", "^model.embed_tokens.weight$",
                                             "model.layers.2[4-9]+.block_sparse_moe.gate",
                                             "model.layers.2[4-9]+.block_sparse_moe.experts",
                                             "model.layers.3[0-1]+.block_sparse_moe.gate",
                                             "model.layers.3[0-1]+.block_sparse_moe.experts"};
  model::Training t;
  t.partial.active = true;
  std::vector<std::string> warnings;
  t.transformers = 514;
  const model::TrainedSubset v5 = resolve_trainable_patterns(a, t, patterns, "--trainable", warnings);
  EXPECT_EQ(model::trained_subset_text(v5), "embedding,head");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("'model.layers.3[0-1]+.block_sparse_moe.experts' match no parameter"), std::string::npos);
  warnings.clear();
  t.transformers = 457;
  const model::TrainedSubset v4 = resolve_trainable_patterns(a, t, patterns, "--trainable", warnings);
  EXPECT_EQ(model::trained_subset_text(v4), "24-31,mlp,embedding,head");
  EXPECT_TRUE(warnings.empty());
  // A pattern that names nothing trainable at all is refused; so is a broken one.
  EXPECT_THROW((void)resolve_trainable_patterns(a, t, {"^vision_tower"}, "--trainable", warnings), InputError);
  EXPECT_THROW((void)resolve_trainable_patterns(a, t, {"model.layers.(4"}, "--trainable", warnings), InputError);
}

}  // namespace
}  // namespace trainplan::request
