// Preference training as each framework's file states it (request/src/config_preference.cpp): the
// objective TRL, LLaMA-Factory and axolotl run, DPO's precomputed reference, what stays open and
// what is refused.

#include <string>

#include "config_fixture.hpp"
#include "trainplan/request/request_files.hpp"

namespace trainplan::request {
namespace {

using namespace config_test;

// TRL's configs: DPOConfig's own fields make it DPO (precompute_ref_log_probs with it), CPOConfig's
// SimPO; the fields all of them share leave the trainer, and so the objective, open.
TEST(ConfigPreference, TrlConfigsByTheirOwnFields) {
  const ConfigRead dpo = read_training_config_text(
      "per_device_train_batch_size: 2\nbeta: 0.1\nprecompute_ref_log_probs: true\nmax_length: 1024\n", "dpo.yaml");
  EXPECT_EQ(option(dpo, "objective"), "dpo");
  EXPECT_EQ(option(dpo, "precomputed-reference"), "true");
  EXPECT_TRUE(dpo.warnings.empty()) << dpo.warnings[0];

  const ConfigRead simpo =
      read_training_config_text("per_device_train_batch_size: 2\nbeta: 2.0\nsimpo_gamma: 0.5\n", "cpo.yaml");
  EXPECT_EQ(option(simpo, "objective"), "simpo");

  const ConfigRead open =
      read_training_config_text("per_device_train_batch_size: 1\nbeta: 0.05\nmax_prompt_length: 1792\n", "orpo.yaml");
  EXPECT_EQ(option(open, "objective"), "");
  ASSERT_EQ(open.unresolved_options.size(), 1u);
  EXPECT_EQ(open.unresolved_options[0], "objective");
  EXPECT_NE(open.unresolved[0].find("give --objective dpo, orpo or simpo"), std::string::npos) << open.unresolved[0];
  EXPECT_TRUE(open.warnings.empty()) << open.warnings[0];

  // SFTConfig has a loss_type too ("nll", "dft"): it says nothing of pairs.
  const ConfigRead sft = read_training_config_text("per_device_train_batch_size: 1\nloss_type: dft\n", "sft.yaml");
  EXPECT_TRUE(sft.unresolved_options.empty());
  EXPECT_EQ(option(sft, "objective"), "");

  try {
    (void)read_training_config_text("per_device_train_batch_size: 1\nrpo_alpha: 1.0\ncpo_alpha: 1.0\n", "both.yaml");
    ADD_FAILURE() << "DPOConfig and CPOConfig fields together accepted";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("both.yaml"), std::string::npos) << m;
    EXPECT_NE(m.find("cpo_alpha"), std::string::npos) << m;
    EXPECT_NE(m.find("rpo_alpha"), std::string::npos) << m;
  }
}

// LLaMA-Factory's stage dpo with each pref_loss (finetuning_args.py: orpo and simpo need no
// reference), and a pref_loss it does not take.
TEST(ConfigPreference, LlamaFactoryPrefLoss) {
  const std::string head = "model_name_or_path: Qwen/Qwen3-4B\nstage: dpo\nfinetuning_type: lora\ntemplate: qwen3\n";
  EXPECT_EQ(option(read_training_config_text(head, "lf.yaml"), "objective"), "dpo");
  EXPECT_EQ(option(read_training_config_text(head + "pref_loss: ipo\n", "lf.yaml"), "objective"), "dpo");
  EXPECT_EQ(option(read_training_config_text(head + "pref_loss: orpo\n", "lf.yaml"), "objective"), "orpo");
  EXPECT_EQ(option(read_training_config_text(head + "pref_loss: simpo\n", "lf.yaml"), "objective"), "simpo");
  EXPECT_TRUE(has_warning(read_training_config_text(head + "ref_model: Qwen/Qwen3-4B\n", "lf.yaml"), "ref_model"));
  EXPECT_TRUE(has_warning(
      read_training_config_text("model_name_or_path: Qwen/Qwen3-4B\nstage: kto\nfinetuning_type: lora\n", "lf.yaml"),
      "stage = kto"));
  try {
    (void)read_training_config_text(head + "pref_loss: dpo\n", "lf.yaml");
    ADD_FAILURE() << "pref_loss dpo accepted";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("lf.yaml"), std::string::npos) << m;
    EXPECT_NE(m.find("pref_loss"), std::string::npos) << m;
    EXPECT_NE(m.find("sigmoid, hinge, ipo, kto_pair, orpo or simpo"), std::string::npos) << m;
  }
}

// axolotl's rl (core/builders/rl.py): dpo and ipo run the DPOTrainer, orpo and simpo theirs; the
// trainers it cannot price are said.
TEST(ConfigPreference, AxolotlRl) {
  const std::string head = "base_model: Qwen/Qwen2.5-0.5B\nsequence_len: 2048\nmicro_batch_size: 2\n";
  EXPECT_EQ(option(read_training_config_text(head + "rl: ipo\n", "ax.yml"), "objective"), "dpo");
  EXPECT_EQ(option(read_training_config_text(head + "rl: orpo\n", "ax.yml"), "objective"), "orpo");
  const ConfigRead pre = read_training_config_text(head + "rl: dpo\nprecompute_ref_log_probs: true\n", "ax.yml");
  EXPECT_EQ(option(pre, "precomputed-reference"), "true");
  const ConfigRead kto = read_training_config_text(head + "rl: kto\n", "ax.yml");
  EXPECT_EQ(option(kto, "objective"), "");
  EXPECT_TRUE(has_warning(kto, "rl = kto"));
  EXPECT_TRUE(has_warning(
      read_training_config_text(head + "rl: dpo\nadapter: lora\nrl_adapter_ref_model: true\n", "ax.yml"),
      "rl_adapter_ref_model"));
}

}  // namespace
}  // namespace trainplan::request
