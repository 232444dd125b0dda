// Preference training (DPO, ORPO, SimPO) as each framework's file states it: which objective runs,
// and whether DPO's reference log-probabilities come from a model held during training.
//
// TRL (huggingface/trl v1.9, f2cd577): DPOConfig (trl/trainer/dpo_config.py) trains pairs with a
// reference; precompute_ref_log_probs computes its log-probabilities before training and holds no
// reference model (dpo_trainer.py L893-898). ORPOConfig and CPOConfig (trl/experimental/orpo,
// cpo) train pairs without one; CPOConfig's loss_type "simpo" is SimPO.
// LLaMA-Factory (hiyouga/LLaMA-Factory ff6d4d1): stage dpo runs TRL's DPOTrainer; pref_loss
// sigmoid, hinge, ipo and kto_pair keep the reference, orpo and simpo drop it
// (hparams/finetuning_args.py L593 use_ref_model); ref_model names a reference loaded apart
// (train/trainer_utils.py create_ref_model).
// axolotl (axolotl-ai-cloud/axolotl 067b021): rl dpo and ipo run TRL's DPOTrainer, orpo the
// ORPOTrainer, simpo the CPOTrainer (core/builders/rl.py L71-80); under an adapter the reference is
// the model with its adapters off unless rl_adapter_ref_model loads one (train.py L137-154).

#include <algorithm>
#include <array>
#include <span>
#include <string>
#include <string_view>

#include "config_reader.hpp"

namespace trainplan::request::config {
namespace {

void set_precomputed(const Json& j, Reader& r, const std::string& key) {
  if (r.boolean(j, key, "", "precomputed-reference").value_or(false))
    r.set("precomputed-reference", "true", key, j.at(key));
}

}  // namespace

// DPOConfig's own fields (a file with any of them is a DPO run), and the fields every preference
// config shares (DPOConfig, ORPOConfig, CPOConfig: which trainer runs is the script's choice).
constexpr std::array kDpoOnlyKeys = std::to_array<std::string_view>(
    {"precompute_ref_log_probs", "precompute_ref_batch_size", "ref_model_init_kwargs", "ref_adapter_name",
     "model_adapter_name", "sync_ref_model", "ref_model_mixup_alpha", "ref_model_sync_steps", "rpo_alpha",
     "reference_free", "f_divergence_type", "f_alpha_divergence_coef", "ld_alpha", "use_weighting",
     "discopop_tau", "loss_weights", "force_use_ref_model"});
constexpr std::array kCpoOnlyKeys = std::to_array<std::string_view>({"cpo_alpha", "simpo_gamma"});
constexpr std::array kSharedPreferenceKeys = std::to_array<std::string_view>(
    {"beta", "max_prompt_length", "max_completion_length", "label_smoothing", "padding_value", "label_pad_token_id",
     "is_encoder_decoder", "generate_during_eval"});
// Fields the preference configs have that SFTConfig or GRPOConfig have too (loss_type "nll" or
// "dft", pad_token, disable_dropout, truncation_mode; TRL v1.9 sft_config.py, grpo_config.py):
// known, but they say nothing of the objective.
constexpr std::array kOtherTrlKeys =
    std::to_array<std::string_view>({"loss_type", "pad_token", "disable_dropout", "truncation_mode"});

std::span<const std::string_view> trl_preference_keys() {
  static const auto kAll = [] {
    std::array<std::string_view, kDpoOnlyKeys.size() + kCpoOnlyKeys.size() + kSharedPreferenceKeys.size() +
                                     kOtherTrlKeys.size()>
        a{};
    std::size_t i = 0;
    for (const std::span<const std::string_view> list :
         {std::span<const std::string_view>(kDpoOnlyKeys), std::span<const std::string_view>(kCpoOnlyKeys),
          std::span<const std::string_view>(kSharedPreferenceKeys), std::span<const std::string_view>(kOtherTrlKeys)})
      for (const std::string_view k : list) a[i++] = k;
    return a;
  }();
  return kAll;
}

void read_trl_preference(const Json& j, Reader& r) {
  std::string dpo_key;
  std::string cpo_key;
  std::string shared_key;
  for (const auto& [k, v] : j.items()) {
    if (v.is_null()) continue;
    if (dpo_key.empty() && std::ranges::find(kDpoOnlyKeys, k) != kDpoOnlyKeys.end()) dpo_key = k;
    if (cpo_key.empty() && std::ranges::find(kCpoOnlyKeys, k) != kCpoOnlyKeys.end()) cpo_key = k;
    if (shared_key.empty() && std::ranges::find(kSharedPreferenceKeys, k) != kSharedPreferenceKeys.end())
      shared_key = k;
  }
  if (!dpo_key.empty() && !cpo_key.empty())
    r.fail(cpo_key, j.at(cpo_key),
           "a CPOConfig field beside DPOConfig's " + dpo_key + ": no TRL trainer reads both");
  if (!dpo_key.empty()) {
    r.set("objective", "dpo", dpo_key, j.at(dpo_key));
    set_precomputed(j, r, "precompute_ref_log_probs");
  } else if (!cpo_key.empty()) {
    // CPOConfig: loss_type simpo is SimPO; its other losses (sigmoid, hinge, ipo) are CPO's, the
    // same pairs and no reference either.
    r.set("objective", "simpo", cpo_key, j.at(cpo_key));
  } else if (!shared_key.empty()) {
    r.unresolved("objective", shared_key, j.at(shared_key),
                 "a TRL preference config (DPOConfig, ORPOConfig or CPOConfig): the trainer its script runs "
                 "decides; give --objective dpo, orpo or simpo");
  }
}

void read_llamafactory_stage(const Json& j, Reader& r) {
  const std::string stage = r.string(j, "stage", "", "objective").value_or("sft");
  if (stage == "sft" || stage == "pt") return;  // the objective's default
  if (stage != "dpo") {
    r.warn("stage = " + stage +
           ": the reward, value or reference models of this stage are not modelled; priced as supervised "
           "training of the policy");
    return;
  }
  const std::string loss = r.string(j, "pref_loss", "", "objective").value_or("sigmoid");
  std::string objective;
  if (loss == "orpo" || loss == "simpo")
    objective = loss;
  else if (loss == "sigmoid" || loss == "hinge" || loss == "ipo" || loss == "kto_pair")
    objective = "dpo";
  else
    r.fail("pref_loss", j.at("pref_loss"), "LLaMA-Factory takes sigmoid, hinge, ipo, kto_pair, orpo or simpo");
  if (j.contains("pref_loss"))
    r.set("objective", objective, "pref_loss", j.at("pref_loss"));
  else
    r.set("objective", objective, "stage", "dpo (no pref_loss: LLaMA-Factory's default, sigmoid)");
  if (objective == "dpo" && j.contains("ref_model") && !j.at("ref_model").is_null())
    r.warn("ref_model = " + shown(j.at("ref_model")) +
           ": a reference model loaded apart is counted only as the policy's copy under full training, not "
           "beside adapters");
}

void read_axolotl_rl(const Json& j, Reader& r) {
  const auto rl = r.string(j, "rl", "", "objective");
  if (!rl) return;  // supervised fine-tuning, the objective's default
  std::string objective;
  if (*rl == "dpo" || *rl == "ipo") objective = "dpo";
  if (*rl == "orpo" || *rl == "simpo") objective = *rl;
  if (objective.empty()) {
    r.warn("rl = " + *rl +
           ": this trainer's reference, reward or generation work is not modelled; priced as supervised "
           "training of the policy");
    return;
  }
  r.set("objective", objective, "rl", j.at("rl"));
  if (objective == "dpo") set_precomputed(j, r, "precompute_ref_log_probs");
  if (objective == "dpo" && r.boolean(j, "rl_adapter_ref_model", "", "").value_or(false) && j.contains("adapter") &&
      !j.at("adapter").is_null())
    r.warn("rl_adapter_ref_model = true: the reference model it loads beside the adapters is not counted");
}

}  // namespace trainplan::request::config
