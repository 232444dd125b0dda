// PEFT adapter_config.json (LoraConfig.save_pretrained). Key meanings: huggingface/peft v0.20.0
// (@5d602fdb), src/peft/tuners/lora/config.py (LoraConfig: r, lora_alpha, lora_dropout,
// target_modules: a list, a regex string, "all-linear", or null for the model type's defaults)
// and src/peft/config.py (PeftConfigMixin: peft_type, base_model_name_or_path).

#include <string>

#include "config_reader.hpp"

namespace trainplan::request::config {

void read_peft(const Json& j, Reader& r) {
  const auto type = r.string(j, "peft_type", "", "method");
  if (!type || *type != "LORA")
    r.fail("peft_type", j.at("peft_type"),
           "trainplan estimates LoRA adapters only (peft_type LORA)");
  r.set("method", "lora", "peft_type", j.at("peft_type"));
  if (const auto base = r.string(j, "base_model_name_or_path", "", "model"))
    r.set("model", *base, "base_model_name_or_path", j.at("base_model_name_or_path"));
  r.set_integer(j, "r", "", "lora-rank", 1);
  if (const auto alpha = r.number(j, "lora_alpha", "", "lora-alpha")) {
    if (*alpha <= 0) r.fail("lora_alpha", j.at("lora_alpha"), "must be positive");
    r.set("lora-alpha", j.at("lora_alpha").dump(), "lora_alpha", j.at("lora_alpha"));
  }
  if (const auto drop = r.number(j, "lora_dropout", "", "lora-dropout")) {
    if (*drop < 0 || *drop >= 1) r.fail("lora_dropout", j.at("lora_dropout"), "must be in [0, 1)");
    r.set("lora-dropout", j.at("lora_dropout").dump(), "lora_dropout", j.at("lora_dropout"));
  }
  if (!j.contains("target_modules") || j.at("target_modules").is_null()) {
    r.unresolved("lora-targets", "target_modules", nullptr,
                 "PEFT picks the model type's default targets; left to other inputs");
  } else if (j.at("target_modules").is_string() &&
             j.at("target_modules").get<std::string>() != "all-linear") {
    r.unresolved("lora-targets", "target_modules", j.at("target_modules"),
                 "a regular expression over module names; left to other inputs");
  } else if (const auto t = r.string_list(j, "target_modules", "", "lora-targets")) {
    r.set("lora-targets", *t, "target_modules", j.at("target_modules"));
  }
  if (const std::optional<bool> dora = r.boolean(j, "use_dora", "", ""); dora && *dora)
    r.warn(
        "use_dora = true: DoRA's magnitude vectors and weight norms are not modelled; estimated "
        "as plain LoRA");
  const auto non_empty = [&j](const char* k) {
    return j.contains(k) && !j.at(k).is_null() && !j.at(k).empty();
  };
  for (const char* k : {"rank_pattern", "alpha_pattern", "layers_to_transform", "exclude_modules"})
    if (non_empty(k))
      r.warn(std::string(k) + " is set: trainplan applies one rank to every target");
  if (non_empty("modules_to_save"))
    r.warn("modules_to_save " + shown(j.at("modules_to_save")) +
           ": these modules train in full, which trainplan does not count");
  r.check_keys(j, "",
               {"peft_type", "base_model_name_or_path", "r", "lora_alpha", "lora_dropout",
                "target_modules", "use_dora", "rank_pattern", "alpha_pattern",
                "layers_to_transform", "exclude_modules", "modules_to_save"},
               {"task_type",
                "auto_mapping",
                "peft_version",
                "revision",
                "inference_mode",
                "fan_in_fan_out",
                "bias",
                "use_rslora",
                "init_lora_weights",
                "layers_pattern",
                "megatron_config",
                "megatron_core",
                "trainable_token_indices",
                "loftq_config",
                "eva_config",
                "corda_config",
                "lora_ga_config",
                "velora_config",
                "alora_invocation_tokens",
                "use_qalora",
                "qalora_group_size",
                "monteclora_config",
                "layer_replication",
                "runtime_config",
                "lora_bias",
                "target_parameters",
                "use_bdlora",
                "arrow_config",
                "kasa_config",
                "ensure_weight_tying"});
}

}  // namespace trainplan::request::config
