// MosaicML llm-foundry train YAMLs (scripts/train/train.py; the keys and defaults of
// llmfoundry/utils/config_utils.py TrainConfig at 8c8dd48f: precision amp_bf16,
// device_train_microbatch_size "auto", fsdp_config None, compile_config None), run by Composer
// (composer/utils/parallelism.py FSDPConfig at 640518880: sharding_strategy FULL_SHARD,
// mixed_precision DEFAULT, activation_checkpointing and activation_cpu_offload off, cpu_offload
// off). OmegaConf's whole-value interpolations (`${variables.max_seq_len}`) are resolved against
// the file. Without fsdp_config Composer runs DDP over the GPUs it has.
#include <array>
#include <span>
#include <string>
#include <string_view>

#include "config_reader.hpp"

namespace trainplan::request::config {
namespace {

// The value at a dotted path of the file, or nullptr.
const Json* at_path(const Json& root, std::string_view path) {
  const Json* node = &root;
  while (!path.empty()) {
    const std::size_t dot = path.find('.');
    const std::string key(path.substr(0, dot));
    if (!node->is_object() || !node->contains(key)) return nullptr;
    node = &node->at(key);
    path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
  }
  return node;
}

// Strings that are one interpolation, `${a.b}`, replaced by the value they name (a chain of them
// followed a few steps); others are left as written. A file whose interpolations copy more than
// kMaxResolved values (one that names itself inside what it names) is refused.
constexpr int kMaxResolved = 10000;
void resolve_interpolations(Json& node, const Json& root, Reader& r, int& resolved, int depth = 0) {
  if (node.is_object() || node.is_array()) {
    for (auto& child : node) resolve_interpolations(child, root, r, resolved, depth);
    return;
  }
  if (!node.is_string() || depth > 8) return;
  const std::string s = node.get<std::string>();
  if (s.size() < 4 || !s.starts_with("${") || !s.ends_with("}") || s.find('}') != s.size() - 1) return;
  if (const Json* v = at_path(root, std::string_view(s).substr(2, s.size() - 3))) {
    if (++resolved > kMaxResolved)
      r.fail(s, Json(s), "interpolations that expand past " + std::to_string(kMaxResolved) + " values");
    node = *v;
    resolve_interpolations(node, root, r, resolved, depth + 1);
  }
}

// The catalogue's MPT models by their shape (d_model, n_layers, n_heads, expansion_ratio).
struct MptShape {
  std::int64_t d_model, layers, heads, expansion;
  std::string_view model;
};
constexpr std::array kMptShapes{MptShape{4096, 32, 32, 4, "mpt-7b"}, MptShape{7168, 48, 64, 4, "mpt-30b"}};

void read_model(const Json& m, Reader& r) {
  const std::string name = r.string(m, "name", "model", "model").value_or("");
  if (name == "hf_causal_lm") {
    if (const auto id = r.string(m, "pretrained_model_name_or_path", "model", "model"))
      r.set("model", *id, "model.pretrained_model_name_or_path", m.at("pretrained_model_name_or_path"));
  } else if (name == "mpt_causal_lm") {
    // MPTConfig's defaults where the file is silent (llmfoundry/models/mpt/configuration_mpt.py:
    // d_model 2048, n_heads 16, n_layers 24, expansion_ratio 4).
    const auto d = r.integer(m, "d_model", "model", "model", 1).value_or(2048);
    const auto l = r.integer(m, "n_layers", "model", "model", 1).value_or(24);
    const auto h = r.integer(m, "n_heads", "model", "model", 1).value_or(16);
    const auto e = r.integer(m, "expansion_ratio", "model", "model", 1).value_or(4);
    bool known = false;
    for (const MptShape& s : kMptShapes)
      if (s.d_model == d && s.layers == l && s.heads == h && s.expansion == e) {
        r.set("model", std::string(s.model), "model.d_model, n_layers, n_heads, expansion_ratio",
              std::to_string(d) + ", " + std::to_string(l) + ", " + std::to_string(h) + ", " + std::to_string(e));
        known = true;
      }
    if (!known)
      r.warn("model: mpt_causal_lm with d_model " + std::to_string(d) + " and " + std::to_string(l) +
             " layers is no catalogue model; the model argument names it (a config.json of its shape)");
  } else if (!name.empty()) {
    r.warn("model.name " + name + ": not a model llm-foundry builds that is read here (hf_causal_lm, mpt_causal_lm)");
  }
  // MPT's attention (model.attn_config.attn_impl); a Hugging Face model's through
  // use_flash_attention_2 (config_overrides' attn_config is MPT's key: other models ignore it).
  const Json attn = name == "mpt_causal_lm" ? section(m, "attn_config") : Json::object();
  const std::string key = "model.attn_config";
  if (const auto impl = r.string(attn, "attn_impl", key, "attention")) {
    const std::string value = *impl == "flash" ? "flash" : *impl == "triton" ? "triton" : *impl == "torch" ? "eager" : "";
    if (value.empty()) r.fail(key + ".attn_impl", attn.at("attn_impl"), "must be flash, triton or torch");
    r.set("attention", value, key + ".attn_impl", attn.at("attn_impl"));
  } else if (name == "hf_causal_lm") {
    const bool fa2 = r.boolean(m, "use_flash_attention_2", "model", "attention").value_or(false);
    r.set("attention", fa2 ? "flash" : "sdpa",
          fa2 ? "model.use_flash_attention_2" : "(no model.use_flash_attention_2: transformers' sdpa)", fa2 ? "true" : "");
  }
  const Json peft = section(m, "peft_config");
  if (peft.empty()) {
    r.set("method", "full", "(no model.peft_config: every weight trains)", "");
    return;
  }
  const std::string type = r.string(peft, "peft_type", "model.peft_config", "method").value_or("");
  if (type != "LORA") r.fail("model.peft_config.peft_type", peft.value("peft_type", Json()), "must be LORA");
  r.set("method", "lora", "model.peft_config.peft_type", type);
  r.set_integer(peft, "r", "model.peft_config", "lora-rank", 1);
  set_lora_alpha_and_dropout(r, peft, "model.peft_config");
  if (const auto t = r.string_list(peft, "target_modules", "model.peft_config", "lora-targets"))
    r.set("lora-targets", *t, "model.peft_config.target_modules", peft.at("target_modules"));
}

// Composer's precision names (composer/core/precision.py): amp_fp8 is Transformer Engine's
// fp8_autocast with its delayed scaling.
void read_precision(const Json& j, Reader& r) {
  const std::string p = r.string(j, "precision", "", "precision").value_or("amp_bf16");
  const std::string from = j.contains("precision") ? "precision" : "(no precision: llm-foundry's amp_bf16)";
  if (p == "amp_bf16") {
    r.set("precision", "bf16-mixed", from, p);
  } else if (p == "amp_fp16") {
    r.set("precision", "fp16-mixed", from, p);
  } else if (p == "fp32") {
    r.set("precision", "fp32", from, p);
  } else if (p == "amp_fp8") {
    r.set("precision", "bf16-mixed", from, p);
    r.set("fp8", "te-delayed", from, p);
  } else {
    r.fail("precision", j.at("precision"), "must be amp_bf16, amp_fp16, amp_fp8 or fp32");
  }
}

// Composer's FSDP (or DDP without an fsdp_config).
void read_fsdp(const Json& j, Reader& r) {
  if (!j.contains("fsdp_config") || j.at("fsdp_config").is_null()) {
    r.set("strategy", "ddp", "(no fsdp_config: Composer's DDP)", "");
    r.set("checkpointing", "none", "(no fsdp_config: no activation checkpointing)", "");
    return;
  }
  const Json f = section(j, "fsdp_config");
  const std::string s = r.string(f, "sharding_strategy", "fsdp_config", "strategy").value_or("FULL_SHARD");
  if (const Named* n = find_named(fsdp_sharding_strategies(), s))
    r.set("strategy", std::string(n->value),
          f.contains("sharding_strategy") ? "fsdp_config.sharding_strategy" : "(no sharding_strategy: FULL_SHARD)", s);
  else
    r.fail("fsdp_config.sharding_strategy", f.at("sharding_strategy"),
           "must be FULL_SHARD, SHARD_GRAD_OP, HYBRID_SHARD or NO_SHARD");
  const std::string mp = r.string(f, "mixed_precision", "fsdp_config", "").value_or("DEFAULT");
  if (mp == "FULL")
    r.warn("fsdp_config.mixed_precision FULL gathers fp32 parameters: priced as DEFAULT (gathered in the compute "
           "dtype)");
  else if (mp != "DEFAULT" && mp != "PURE")
    r.fail("fsdp_config.mixed_precision", f.at("mixed_precision"), "must be DEFAULT, PURE or FULL");
  const bool ac = r.boolean(f, "activation_checkpointing", "fsdp_config", "checkpointing").value_or(false);
  const bool ac_offload = r.boolean(f, "activation_cpu_offload", "fsdp_config", "checkpointing").value_or(false);
  const std::string ac_from = f.contains("activation_checkpointing") ? "fsdp_config.activation_checkpointing"
                                                                     : "(no activation_checkpointing: off)";
  if (ac_offload && !ac)
    r.unmodelled("checkpointing", "fsdp_config.activation_cpu_offload", Json(true),
                 "every activation offloaded to the host without checkpointing is not modelled", "full-offload");
  else
    r.set("checkpointing", ac ? (ac_offload ? "full-offload" : "full") : "none", ac_from, ac ? "true" : "false");
  if (r.boolean(f, "cpu_offload", "fsdp_config", "offload").value_or(false))
    r.set("offload", "optimizer+params", "fsdp_config.cpu_offload", "true");
  // Composer's FSDP2Config (FSDP_VERSION=2: composer/utils/parallelism.py, bool | int, True by
  // default) hands it to fully_shard; FSDP1's FSDPConfig keeps it unused. As torch maps it: False
  // keeps each unit gathered (1), True reshards over the shard group (0, the default).
  if (f.contains("reshard_after_forward")) {
    const Json& v = f.at("reshard_after_forward");
    const std::string key = "fsdp_config.reshard_after_forward";
    if (v.is_boolean())
      r.set("reshard-after-forward", v.get<bool>() ? "0" : "1", key, v);
    else if (v.is_number_integer() && v.get<std::int64_t>() >= 1)
      r.set("reshard-after-forward", std::to_string(v.get<std::int64_t>()), key, v);
    else
      r.fail(key, v, "must be true, false or the size of the group to reshard to (a whole number from 1)");
  }
}

// llm-foundry's optimizer registry (llmfoundry/registry.py optimizers): its decoupled AdamW and
// Lion keep AdamW's and Lion's states.
constexpr std::array<Named, 9> kOptimizers{{{"decoupled_adamw", "adamw"},
                                            {"adamw", "adamw"},
                                            {"adam", "adam"},
                                            {"decoupled_lionw", "lion"},
                                            {"clip_lion", "lion"},
                                            {"adalr_lion", "lion"},
                                            {"decoupled_lionw_8b", "lion-8bit"},
                                            {"sgd", "sgd"},
                                            {"decoupled_sgdw", "sgd"}}};

// TrainConfig's fields, and the top-level names older files interpolate from (v0.3: global_seed,
// data_local, data_remote).
constexpr auto kTrainKeys = std::to_array<std::string_view>(
    {"model", "tokenizer", "optimizer", "scheduler", "train_loader", "device_train_batch_size",
     "device_eval_batch_size", "max_duration", "max_seq_len", "seed", "precision", "code_paths",
     "max_split_size_mb", "expandable_segments", "cuda_load_lazy", "dist_timeout", "fsdp_config", "tp_config",
     "accumulate_train_batch_on_tokens", "eval_interval", "eval_loader", "eval_loaders", "icl_tasks",
     "icl_tasks_str", "eval_gauntlet", "eval_gauntlet_str", "icl_subset_num_batches", "icl_seq_len", "loggers",
     "progress_bar", "log_to_console", "python_log_level", "console_log_interval", "log_config", "callbacks",
     "algorithms", "save_folder", "save_latest_filename", "save_overwrite", "save_weights_only", "save_filename",
     "save_interval", "save_num_checkpoints_to_keep", "load_path", "load_weights_only", "load_strict_model_weights",
     "load_ignore_keys", "save_ignore_keys", "only_hf_checkpoint", "only_composer_checkpoint",
     "train_subset_num_batches", "device_train_microbatch_size", "global_train_batch_size", "spin_dataloaders",
     "eval_subset_num_batches", "eval_first", "compile_config", "metadata", "flatten_metadata", "run_name",
     "autoresume", "profiler", "variables", "global_seed", "data_local", "data_remote"});

}  // namespace

bool is_llmfoundry(const Json& j) {
  if (!j.contains("model") || !j.at("model").is_object() || !j.contains("max_seq_len")) return false;
  const Json& m = j.at("model");
  const bool builder = m.contains("name") && m.at("name").is_string() &&
                       (m.at("name") == "hf_causal_lm" || m.at("name") == "mpt_causal_lm");
  return builder || j.contains("device_train_microbatch_size") || j.contains("global_train_batch_size");
}

void read_llmfoundry(const Json& given, Reader& r) {
  Json j = given;
  int resolved = 0;
  resolve_interpolations(j, given, r, resolved);
  r.set("library", "llm-foundry", "(an llm-foundry train YAML)", "");
  r.set("framework", "pytorch", "(llm-foundry: Composer)", "");
  read_model(section(j, "model"), r);
  r.set_integer(j, "max_seq_len", "", "seq", 1);
  if (j.contains("device_train_microbatch_size") && j.at("device_train_microbatch_size").is_string())
    r.unresolved("micro-batch", "device_train_microbatch_size", j.at("device_train_microbatch_size"),
                 "Composer searches the largest that fits; left to other inputs");
  else if (j.contains("device_train_microbatch_size"))
    r.set_integer(j, "device_train_microbatch_size", "", "micro-batch", 1);
  else
    r.unresolved("micro-batch", "(no device_train_microbatch_size)", Json("auto"),
                 "llm-foundry's default, auto: Composer searches the largest that fits; left to other inputs");
  if (r.set_integer(j, "global_train_batch_size", "", "global-batch", 1))
    r.unresolved("grad-accum", "global_train_batch_size", j.at("global_train_batch_size"),
                 "global batch / (micro-batch x data-parallel ranks): set by the cluster");
  read_precision(j, r);
  read_fsdp(j, r);
  if (const Json tp = section(j, "tp_config"); !tp.empty())
    r.set_integer(tp, "tensor_parallel_degree", "tp_config", "tp", 1);
  const Json o = section(j, "optimizer");
  if (const auto name = r.string(o, "name", "optimizer", "optimizer"))
    set_named(r, "optimizer", kOptimizers, "optimizer.name", o.at("name"), "an optimizer trainplan does not model");
  // TrainConfig.expandable_segments, written into PYTORCH_CUDA_ALLOC_CONF (command_utils/train.py);
  // absent, the library's default (on from v0.10.0).
  if (const auto e = r.boolean(j, "expandable_segments", "", "expandable-segments"))
    r.set("expandable-segments", *e ? "on" : "off", "expandable_segments", j.at("expandable_segments"));
  else
    r.unresolved("expandable-segments", "(no expandable_segments)", Json("TrainConfig's default"),
                 "on from llm-foundry v0.10.0, off before it (--library-version)");
  if (j.contains("compile_config") && !j.at("compile_config").is_null())
    r.set("compile", "true", "compile_config", shown(j.at("compile_config")));
  else
    r.set("compile", "false", "(no compile_config: eager)", "");
  r.check_keys(j, "", {}, std::span<const std::string_view>(kTrainKeys));
}

}  // namespace trainplan::request::config
