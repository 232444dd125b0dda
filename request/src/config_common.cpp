#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <filesystem>

#include "config_reader.hpp"
#include "trainplan/core/error.hpp"

namespace trainplan::request::config {

std::string shown(const Json& v) {
  if (v.is_string()) return "\"" + text_excerpt(v.get<std::string>()) + "\"";
  if (v.is_object()) return "{...}";
  if (!v.is_array()) return json_excerpt(v);
  // Element by element, only as far as a message shows: a deep or long list costs nothing.
  constexpr std::size_t kShown = 200;
  std::string s = "[";
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (s.size() > kShown) return s + ", ... (" + std::to_string(v.size()) + " values)]";
    s += (s.size() > 1 ? ", " : "") + (it->is_array() ? std::string("[...]") : shown(*it));
  }
  return s + "]";
}

std::string join_key(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : prefix + "." + key;
}

bool is_auto(const Json& v) {
  if (!v.is_string()) return false;
  std::string s = v.get<std::string>();
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s == "auto";
}

Reader::Reader(ConfigRead& out, std::string format)
    : out_(out),
      name_(std::filesystem::path(out.path).filename().string()),
      format_(std::move(format)) {}

void Reader::set(const std::string& option, const std::string& value, const std::string& key,
                 const Json& raw) {
  set(option, value, key, shown(raw));
}

void Reader::set(const std::string& option, const std::string& value, const std::string& key,
                 const std::string& raw_text) {
  const std::string source = name_ + ": " + key + (raw_text.empty() ? "" : " = " + raw_text);
  for (const Setting& s : out_.settings) {
    if (s.option != option) continue;
    if (s.value == value) return;
    throw InputError(out_.path + ": " + key + (raw_text.empty() ? "" : " = " + raw_text) +
                     " contradicts " + s.source.substr(name_.size() + 2) + " (" + option + " " +
                     value + " vs " + s.value + ")");
  }
  out_.settings.push_back({option, value, source});
}

void Reader::set_yielding(const std::string& option, const std::string& value, const std::string& key,
                          const std::string& raw_text) {
  set(option, value, key, raw_text);
  for (Setting& s : out_.settings)
    if (s.option == option) s.yields = true;
}

void Reader::unresolved(const std::string& option, const std::string& key, const Json& raw,
                        const std::string& why) {
  out_.unresolved.push_back(name_ + ": " + text_excerpt(key) + " = " + shown(raw) + ": " + why);
  out_.unresolved_options.push_back(option);
}

void Reader::unmodelled(const std::string& option, const std::string& key, const Json& raw,
                        const std::string& why, const std::string& nearest) {
  out_.unmodelled.push_back(
      {out_.path + ": key '" + text_excerpt(key) + "' = " + shown(raw) + ": " + why, option, nearest});
}

std::string zero_stage_strategy(std::int64_t stage) {
  static constexpr std::array kStrategy{"ddp", "zero1", "zero2", "zero3"};
  return kStrategy.at(static_cast<std::size_t>(stage));
}

void Reader::warn(const std::string& text) { out_.warnings.push_back(name_ + ": " + text); }

void Reader::from_checkpoint(const std::string& key, const Json& raw, const std::string& autocast,
                             const std::string& open_text) {
  out_.precision_from_checkpoint = CheckpointPrecision{name_ + ": " + key + " = " + shown(raw), autocast,
                                                       name_ + ": " + key + " = " + shown(raw) + ": " + open_text};
}

void Reader::check_keys(const Json& obj, const std::string& prefix,
                        std::span<const std::string_view> used,
                        std::span<const std::string_view> known) {
  if (!obj.is_object()) return;
  for (const auto& [k, v] : obj.items()) {
    const auto is = [&k](std::string_view s) { return s == k; };
    if (std::any_of(used.begin(), used.end(), is) || std::any_of(known.begin(), known.end(), is))
      continue;
    warn("key '" + text_excerpt(join_key(prefix, k)) + "' is not a " + format_ + " key; ignored");
  }
}

void Reader::fail(const std::string& key, const Json& raw, const std::string& problem) const {
  throw InputError(out_.path + ": key '" + text_excerpt(key) + "' = " + shown(raw) + ": " + problem);
}

void Reader::fail(const std::string& problem) const {
  throw InputError(out_.path + ": " + problem);
}

const Json* Reader::given(const Json& obj, const std::string& key, const std::string& prefix,
                          const std::string& option) {
  if (!obj.contains(key) || obj.at(key).is_null()) return nullptr;
  const Json& v = obj.at(key);
  if (is_auto(v)) {
    unresolved(option, join_key(prefix, key), v, "left to other inputs");
    return nullptr;
  }
  return &v;
}

std::optional<std::int64_t> Reader::integer(const Json& obj, const std::string& key,
                                            const std::string& prefix, const std::string& option,
                                            std::int64_t min) {
  const Json* value = given(obj, key, prefix, option);
  if (!value) return std::nullopt;
  const Json& v = *value;
  const std::string path = join_key(prefix, key);
  std::int64_t i = 0;
  if (v.is_number_integer()) {
    i = v.get<std::int64_t>();
  } else if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>() &&
             std::abs(v.get<double>()) < 9.0e15) {
    i = static_cast<std::int64_t>(v.get<double>());  // DeepSpeed's 2e8 style
  } else {
    fail(path, v, "must be an integer");
  }
  if (i < min) fail(path, v, "must be at least " + std::to_string(min));
  return i;
}

std::optional<double> Reader::number(const Json& obj, const std::string& key,
                                     const std::string& prefix, const std::string& option) {
  const Json* value = given(obj, key, prefix, option);
  if (!value) return std::nullopt;
  const Json& v = *value;
  if (!v.is_number()) fail(join_key(prefix, key), v, "must be a number");
  return v.get<double>();
}

std::optional<bool> Reader::boolean(const Json& obj, const std::string& key,
                                    const std::string& prefix, const std::string& option) {
  const Json* value = given(obj, key, prefix, option);
  if (!value) return std::nullopt;
  const Json& v = *value;
  if (!v.is_boolean()) fail(join_key(prefix, key), v, "must be true or false");
  return v.get<bool>();
}

std::optional<std::string> Reader::string(const Json& obj, const std::string& key,
                                          const std::string& prefix, const std::string& option) {
  const Json* value = given(obj, key, prefix, option);
  if (!value) return std::nullopt;
  const Json& v = *value;
  if (!v.is_string()) fail(join_key(prefix, key), v, "must be a string");
  return v.get<std::string>();
}

std::optional<std::string> Reader::string_list(const Json& obj, const std::string& key,
                                               const std::string& prefix,
                                               const std::string& option) {
  if (!obj.contains(key) || obj.at(key).is_null()) return std::nullopt;
  const Json& v = obj.at(key);
  if (!v.is_array()) return string(obj, key, prefix, option);
  std::string joined;
  for (const Json& e : v) {
    if (!e.is_string() || e.get<std::string>().empty())
      fail(join_key(prefix, key), v, "must be a list of module names");
    joined += (joined.empty() ? "" : ",") + e.get<std::string>();
  }
  if (joined.empty()) fail(join_key(prefix, key), v, "must name at least one module");
  return joined;
}

std::optional<std::int64_t> Reader::set_integer(const Json& obj, const std::string& key,
                                                const std::string& prefix, const std::string& option,
                                                std::int64_t min) {
  const std::optional<std::int64_t> v = integer(obj, key, prefix, option, min);
  if (v) set(option, std::to_string(*v), join_key(prefix, key), obj.at(key));
  return v;
}

Json section(const Json& j, const std::string& key) {
  return j.contains(key) && j.at(key).is_object() ? j.at(key) : Json::object();
}

const Named* find_named(std::span<const Named> table, std::string_view name) {
  for (const Named& n : table)
    if (n.name == name) return &n;
  return nullptr;
}

void set_named(Reader& r, const std::string& option, std::span<const Named> table,
               const std::string& key, const Json& raw, const std::string& why) {
  if (const Named* n = find_named(table, raw.get<std::string>()))
    r.set(option, std::string(n->value), key, raw);
  else
    r.unresolved(option, key, raw, why);
}

std::span<const Named> fsdp_sharding_strategies() {
  static constexpr std::array kStrategies{
      Named{"FULL_SHARD", "fsdp-full"}, Named{"SHARD_GRAD_OP", "fsdp-grad-op"},
      Named{"HYBRID_SHARD", "fsdp-hybrid"}, Named{"NO_SHARD", "ddp"}};
  return kStrategies;
}

void set_lora_alpha_and_dropout(Reader& r, const Json& obj, const std::string& prefix) {
  const std::string alpha = join_key(prefix, "lora_alpha");
  const std::string dropout = join_key(prefix, "lora_dropout");
  if (r.number(obj, "lora_alpha", prefix, "lora-alpha"))
    r.set("lora-alpha", obj.at("lora_alpha").dump(), alpha, obj.at("lora_alpha"));
  if (const auto v = r.number(obj, "lora_dropout", prefix, "lora-dropout")) {
    if (*v < 0 || *v >= 1) r.fail(dropout, obj.at("lora_dropout"), "must be in [0, 1)");
    r.set("lora-dropout", obj.at("lora_dropout").dump(), dropout, obj.at("lora_dropout"));
  }
}

void set_attn_implementation(Reader& r, const Json& j) {
  const auto attn = r.string(j, "attn_implementation", "", "attention");
  if (!attn) return;
  if (*attn == "flash_attention_2")
    r.set("attention", "flash", "attn_implementation", j.at("attn_implementation"));
  else if (*attn == "sdpa" || *attn == "eager")
    r.set("attention", *attn, "attn_implementation", j.at("attn_implementation"));
  else
    r.unresolved("attention", "attn_implementation", j.at("attn_implementation"),
                 "an attention kernel trainplan does not model");
}

namespace {
std::vector<std::string> words(const Json& raw) {
  std::vector<std::string> out;
  const auto split = [&out](const std::string& s) {
    std::string w;
    for (char c : s) {
      if (c == ' ' || c == ',') {
        if (!w.empty()) out.push_back(w);
        w.clear();
      } else {
        w += c;
      }
    }
    if (!w.empty()) out.push_back(w);
  };
  if (raw.is_string()) split(raw.get<std::string>());
  if (raw.is_array())
    for (const Json& e : raw)
      if (e.is_string()) split(e.get<std::string>());
  return out;
}
}  // namespace

// transformers/training_args.py FSDPOption (v4.46): full_shard, shard_grad_op, no_shard,
// hybrid_shard, hybrid_shard_zero2, offload, auto_wrap.
void set_trainer_fsdp(Reader& r, const std::string& key, const Json& raw) {
  if (!raw.is_string() && !raw.is_array())
    r.fail(key, raw, "must be a string or a list of FSDP options");
  for (const std::string& w : words(raw)) {
    if (w == "full_shard")
      r.set("strategy", "fsdp-full", key, raw);
    else if (w == "shard_grad_op")
      r.set("strategy", "fsdp-grad-op", key, raw);
    else if (w == "hybrid_shard")
      r.set("strategy", "fsdp-hybrid", key, raw);
    else if (w == "no_shard")
      r.set("strategy", "ddp", key, raw);
    else if (w == "offload")
      r.set("offload", "optimizer+params", key, raw);
    else if (w == "auto_wrap")
      r.set("fsdp-wrap", "block", key, raw);
    else if (w == "hybrid_shard_zero2")
      r.unresolved("strategy", key, raw, "hybrid_shard_zero2 has no trainplan strategy");
    else
      r.fail(key, raw,
             "'" + w +
                 "' is not an FSDP option (full_shard, shard_grad_op, "
                 "hybrid_shard, no_shard, offload, auto_wrap)");
  }
}

void set_fsdp_version(Reader& r, const Json& obj, const std::string& key, const std::string& prefix) {
  const auto version = r.integer(obj, key, prefix, "fsdp-version", 1);
  if (!version) return;
  if (*version > 2)
    r.fail(join_key(prefix, key), obj.at(key), "must be 1 (FullyShardedDataParallel) or 2 (fully_shard)");
  r.set("fsdp-version", std::to_string(*version), join_key(prefix, key), obj.at(key));
}

// transformers training_args.py (AcceleratorConfig.gradient_accumulation_kwargs, handed to accelerate's
// GradientAccumulationPlugin) and trainer.py's loop, which skips no_sync when sync_each_batch is set.
void read_accelerator_config(const Json& j, Reader& r) {
  if (!j.contains("accelerator_config") || j.at("accelerator_config").is_null()) return;
  const Json& a = j.at("accelerator_config");
  if (!a.is_object()) {
    r.warn("accelerator_config given as a string (a JSON file's path or text): not read");
    return;
  }
  const Json g = section(a, "gradient_accumulation_kwargs");
  if (const auto sync = r.boolean(g, "sync_each_batch", "accelerator_config.gradient_accumulation_kwargs",
                                  "sync-each-batch"))
    r.set("sync-each-batch", *sync ? "true" : "false",
          "accelerator_config.gradient_accumulation_kwargs.sync_each_batch", g.at("sync_each_batch"));
}

// transformers training_args.py __post_init__: "if (self.torch_compile_mode is not None or
// self.torch_compile_backend is not None) and not self.torch_compile: self.torch_compile = True";
// axolotl core/builders/base.py _configure_torch_compile passes its truthy torch_compile ("auto"
// too) to the Trainer. The default mode has no CUDA graphs; reduce-overhead's and max-autotune's
// graphs and autotuned GEMMs are not priced.
void read_torch_compile(const Json& j, Reader& r) {
  std::string given;
  bool on = false;
  if (j.contains("torch_compile") && j.at("torch_compile").is_string()) {
    // Read raw: Reader::string takes "auto" for a value left to the framework, which here it is not.
    on = j.at("torch_compile").get<std::string>() == "auto";
    if (!on) r.warn("torch_compile: only true, false or \"auto\" are read; estimated eager");
    given = "torch_compile";
  } else if (const auto c = r.boolean(j, "torch_compile", "", "compile")) {
    on = *c;
    given = "torch_compile";
  }
  for (const char* key : {"torch_compile_mode", "torch_compile_backend"}) {
    const auto v = r.string(j, key, "", "compile");
    if (!v) continue;
    if (given.empty()) {
      on = true;
      given = key;
    }
    const bool backend = std::string_view(key) == "torch_compile_backend";
    if (*v != (backend ? "inductor" : "default")) warn_unpriced_compile(r, key, *v, backend);
  }
  if (!given.empty()) r.set("compile", on ? "true" : "false", given, j.at(given));
}

void warn_unpriced_compile(Reader& r, const std::string& key, const std::string& value, bool backend) {
  r.warn(key + " = " + value +
         (backend ? ": priced as Inductor's"
                  : ": priced as the default mode (its CUDA graphs and autotuned kernels are not modelled)"));
}

// axolotl's Liger plugin (src/axolotl/integrations/liger, at 067b021c: args.py LigerArgs, each
// kernel its own key; liger_swiglu is the deprecated name of liger_glu_activation): the four the
// model types' apply functions turn on by default, together, are what --liger prices.
void read_axolotl_liger(const Json& j, Reader& r) {
  int defaults = 0;  // of rope, rms_norm, glu_activation (or swiglu), fused_linear_cross_entropy
  bool others = false;
  std::string given;
  for (const std::string_view key : {"liger_rope", "liger_rms_norm", "liger_glu_activation", "liger_swiglu",
                                     "liger_fused_linear_cross_entropy", "liger_cross_entropy", "liger_layer_norm"}) {
    if (!r.boolean(j, std::string(key), "", "liger").value_or(false)) continue;
    given += (given.empty() ? "" : ", ") + std::string(key);
    const bool is_default = key != "liger_cross_entropy" && key != "liger_layer_norm";
    defaults += is_default ? 1 : 0;
    others = others || !is_default;
  }
  if (defaults == 4 && !others)
    r.set("liger", "true", given, "true");
  else if (!given.empty())
    r.warn(given + ": a choice of Liger's kernels other than its four defaults together (rope, rms_norm, "
           "glu_activation, fused_linear_cross_entropy) is not modelled; estimated without Liger");
}

// unfrozen_parameters: under full training the weights its patterns name train, the rest frozen
// (partial fine-tuning, the patterns resolved against the model's names: request/src/unfrozen.cpp).
// With an adapter axolotl matches them against the PEFT model's names (train.py calls
// freeze_layers_except after the adapters are added), which begin base_model.model.: a pattern
// anchored at another start unfreezes nothing, and every parameter, the adapters too, is frozen.
void read_unfrozen(const Json& j, Reader& r) {
  if (!j.contains("unfrozen_parameters") || j.at("unfrozen_parameters").is_null()) return;
  const Json& list = j.at("unfrozen_parameters");
  std::string spec;
  bool anchored_elsewhere = true;
  for (const Json& p : list.is_array() ? list : Json::array({list})) {
    if (!p.is_string() || p.get<std::string>().empty() || p.get<std::string>().find(',') != std::string::npos)
      r.fail("unfrozen_parameters", list, "each entry must be a non-empty pattern without a comma");
    spec += (spec.empty() ? "match:" : ",match:") + p.get<std::string>();
    anchored_elsewhere = anchored_elsewhere && p.get<std::string>().starts_with("^") &&
                         !p.get<std::string>().starts_with("^base_model");
  }
  const Setting* method = r.read().find("method");
  if (spec.empty()) return;
  if (method == nullptr || method->value == "full") r.set("trainable", spec, "unfrozen_parameters", list);
  else if (anchored_elsewhere)
    r.warn("unfrozen_parameters with an adapter: axolotl matches them against the PEFT model's names "
           "(base_model.model....), which none of these anchored patterns can match, so it freezes every "
           "parameter, the adapters too, and nothing trains ('All parameters are frozen'); priced as the "
           "adapter's training");
  else
    r.warn("unfrozen_parameters with an adapter: the base weights it unfreezes are not counted; priced as the "
           "adapter's training");
}

// axolotl's bf16 (or bfloat16) loads the model in bf16 (axolotl-ai-cloud/axolotl v0.18.0
// src/axolotl/utils/config/__init__.py: cfg.torch_dtype) and turns on
// the Trainer's autocast (core/builders/base.py _configure_precision_settings); nothing upcasts what
// trains, so a full fine-tune keeps fp32 master weights only where DeepSpeed or accelerate's FSDP
// under mixed precision does (config_trainer.cpp read_precision): without either, bf16-true.
void read_axolotl_bf16(const Json& j, Reader& r) {
  const Json bf = j.value("bf16", Json());
  const Setting* method = r.read().find("method");
  const bool engine = (j.contains("deepspeed") && !j.at("deepspeed").is_null()) ||
                      (j.contains("fsdp") && !j.at("fsdp").is_null()) ||
                      (j.contains("fsdp_config") && j.at("fsdp_config").is_object());
  const bool own_weights = !engine && !(method && method->value != "full");
  if (is_auto(bf)) {
    r.unresolved("precision", "bf16", bf,
                 own_weights ? "bf16 where the GPU supports it, the model loaded in bf16: left to other inputs "
                               "(--precision bf16-true: no deepspeed or fsdp here keeps fp32 master weights)"
                             : "bf16 where the GPU supports it; left to other inputs");
    return;
  }
  const char* key = r.boolean(j, "bf16", "", "precision").value_or(false)       ? "bf16"
                    : r.boolean(j, "bfloat16", "", "precision").value_or(false) ? "bfloat16"
                                                                                : nullptr;
  if (!key) return;
  if (!own_weights)
    r.set("precision", "bf16-mixed", key, true);
  else
    r.set_yielding("precision", "bf16-true",
                   std::string(key) + " = true (axolotl loads the model in bf16 and no deepspeed or fsdp in this file "
                                      "keeps fp32 master weights: the optimizer steps the bf16 weights)",
                   "");
}

}  // namespace trainplan::request::config
