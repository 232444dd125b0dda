// Liger's kernels as each framework's file turns them on: the Trainer's use_liger_kernel,
// LLaMA-Factory's enable_liger_kernel (not for the stages that keep the logits), axolotl's
// per-kernel keys (its four defaults together, or a warning) and open-instruct's flag.

#include <string>

#include "config_fixture.hpp"
#include "trainplan/request/request_files.hpp"

namespace trainplan::request {
namespace {

using namespace config_test;

TEST(ConfigLiger, TrainerUseLigerKernel) {
  const ConfigRead on = read_training_config_text("per_device_train_batch_size: 2\nuse_liger_kernel: true\n", "sft.yaml");
  EXPECT_EQ(option(on, "liger"), "true");
  EXPECT_FALSE(has_warning(on, "liger")) << (on.warnings.empty() ? "" : on.warnings[0]);
  const ConfigRead off = read_training_config_text("per_device_train_batch_size: 2\nuse_liger_kernel: false\n", "sft.yaml");
  EXPECT_EQ(option(off, "liger"), "false");
}

TEST(ConfigLiger, LlamaFactoryEnableLigerKernelBySftStageOnly) {
  const ConfigRead sft = read_training_config_text(
      "model_name_or_path: meta-llama/Meta-Llama-3-8B\nstage: sft\nfinetuning_type: lora\nenable_liger_kernel: true\n",
      "lf.yaml");
  EXPECT_EQ(option(sft, "liger"), "true");
  // Pairwise stages keep the logits: LLaMA-Factory swaps the fused linear loss for the plain one.
  const ConfigRead dpo = read_training_config_text(
      "model_name_or_path: meta-llama/Meta-Llama-3-8B\nstage: dpo\nfinetuning_type: lora\nenable_liger_kernel: true\n",
      "lf.yaml");
  EXPECT_EQ(option(dpo, "liger"), "");
  EXPECT_TRUE(has_warning(dpo, "enable_liger_kernel = true with stage dpo"));
}

TEST(ConfigLiger, AxolotlItsFourDefaultsTogether) {
  const std::string base = "base_model: meta-llama/Llama-3.1-8B\nadapter: lora\nlora_r: 16\nlora_alpha: 32\n"
                           "lora_target_linear: true\nmicro_batch_size: 1\nsequence_len: 2048\n"
                           "plugins:\n  - axolotl.integrations.liger.LigerPlugin\n";
  const ConfigRead all = read_training_config_text(
      base + "liger_rope: true\nliger_rms_norm: true\nliger_glu_activation: true\n"
             "liger_fused_linear_cross_entropy: true\n",
      "ax.yaml");
  EXPECT_EQ(option(all, "liger"), "true");
  EXPECT_FALSE(has_warning(all, "liger")) << (all.warnings.empty() ? "" : all.warnings[0]);
  // The deprecated liger_swiglu counts as liger_glu_activation.
  const ConfigRead old = read_training_config_text(
      base + "liger_rope: true\nliger_rms_norm: true\nliger_swiglu: true\nliger_fused_linear_cross_entropy: true\n",
      "ax.yaml");
  EXPECT_EQ(option(old, "liger"), "true");
  // A subset is not what --liger prices: said, and answered without Liger.
  const ConfigRead some = read_training_config_text(base + "liger_rms_norm: true\nliger_cross_entropy: true\n", "ax.yaml");
  EXPECT_EQ(option(some, "liger"), "");
  EXPECT_TRUE(has_warning(some, "liger_rms_norm, liger_cross_entropy: a choice of Liger's kernels"))
      << (some.warnings.empty() ? "" : some.warnings[0]);
}

}  // namespace
}  // namespace trainplan::request
