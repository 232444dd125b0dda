// GaLore as the frameworks' files turn it on: transformers' optim galore_adamw[_layerwise] with its
// optim_args rank, and LLaMA-Factory's use_galore with its own default rank (16) and layer-wise
// stepping.

#include <string>

#include "config_fixture.hpp"
#include "trainplan/request/request_files.hpp"

namespace trainplan::request {
namespace {

using namespace config_test;

TEST(ConfigGalore, TrainerOptimAndItsRank) {
  const ConfigRead plain = read_training_config_text(
      "per_device_train_batch_size: 1\noptim: galore_adamw\noptim_target_modules: [attn, mlp]\n"
      "optim_args: \"rank=64, update_proj_gap=100\"\n",
      "sft.yaml");
  EXPECT_EQ(option(plain, "optimizer"), "galore-adamw");
  EXPECT_EQ(option(plain, "galore-rank"), "64");
  EXPECT_EQ(option(plain, "optimizer-in-backward"), "");
  const ConfigRead layerwise =
      read_training_config_text("per_device_train_batch_size: 1\noptim: galore_adamw_layerwise\n", "sft.yaml");
  EXPECT_EQ(option(layerwise, "optimizer"), "galore-adamw");
  EXPECT_EQ(option(layerwise, "optimizer-in-backward"), "true");
  EXPECT_EQ(option(layerwise, "galore-rank"), "");  // the Trainer's 128, the option's default
}

TEST(ConfigGalore, LlamaFactoryDefaultsAndTargets) {
  const ConfigRead r = read_training_config_text(
      "model_name_or_path: meta-llama/Meta-Llama-3-8B\nstage: sft\nfinetuning_type: full\nuse_galore: true\n"
      "galore_target: q_proj,v_proj\n",
      "lf.yaml");
  EXPECT_EQ(option(r, "optimizer"), "galore-adamw");
  EXPECT_EQ(option(r, "galore-rank"), "16");
  EXPECT_TRUE(has_warning(r, "galore_target q_proj,v_proj: GaLore on these modules only is not modelled"));
  const ConfigRead real = read_training_config(config_path("llamafactory-llama3-galore.yaml"));
  EXPECT_EQ(option(real, "galore-rank"), "128");
  EXPECT_EQ(option(real, "optimizer-in-backward"), "true");  // galore_layerwise: true
}

}  // namespace
}  // namespace trainplan::request
