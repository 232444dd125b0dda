// accelerate config YAML (`accelerate config` / `accelerate launch --config_file`). Key meanings
// and defaults: huggingface/accelerate @16cb6eb8 (2026-07-24), src/accelerate/commands/config/
// config_args.py (ClusterConfig), src/accelerate/commands/config/cluster.py (the fsdp_*,
// deepspeed_config and megatron_lm_* keys it writes) and src/accelerate/utils/dataclasses.py
// (FullyShardedDataParallelPlugin: sharding strategy FULL_SHARD by default, fsdp_version 2's
// reshard_after_forward true by default; MegatronLMPlugin: recompute_activations is "selective
// activation recomputation").

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>
#include <string>
#include <string_view>

#include "config_reader.hpp"

namespace trainplan::request::config {
namespace {

// accelerate's str_to_bool (utils/environment.py), which FSDP2's reshard_after_forward goes through
// when it arrives as text: y, yes, t, true, on, 1 and n, no, f, false, off, 0.
std::optional<bool> accelerate_bool(const Json& v) {
  if (!v.is_string()) return std::nullopt;
  std::string t = v.get<std::string>();
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  for (const char* yes : {"y", "yes", "t", "true", "on", "1"})
    if (t == yes) return true;
  for (const char* no : {"n", "no", "f", "false", "off", "0"})
    if (t == no) return false;
  return std::nullopt;
}

// ClusterConfig's and SageMakerConfig's other fields (config_args.py): read without a warning,
// though they change nothing trainplan prices.
constexpr std::array kOtherKeys = std::to_array<std::string_view>({
    "compute_environment", "debug", "downcast_bf16", "machine_rank", "main_training_function",
    "rdzv_backend", "same_network", "tpu_env", "tpu_use_cluster", "tpu_use_sudo", "tpu_name",
    "tpu_zone", "tpu_vm", "main_process_ip", "main_process_port", "enable_cpu_affinity", "gpu_ids",
    "dynamo_config", "fp8_config", "mpirun_config", "ipex_config", "command_file", "commands",
    "parallelism_config", "additional_args", "base_job_name", "ec2_instance_type", "iam_role_name",
    "image_uri", "profile", "py_version", "pytorch_version", "region", "sagemaker_inputs_file",
    "sagemaker_metrics_file", "transformers_version"});

// FSDP1 ShardingStrategy names (also the older integer spellings 1..5 of accelerate <= 0.20).
void set_sharding(const Json& v, const std::string& key, Reader& r) {
  std::string s = v.is_string() ? v.get<std::string>() : "";
  if (v.is_number_integer()) {
    static constexpr std::array kByIndex{"",         "FULL_SHARD",   "SHARD_GRAD_OP",
                                         "NO_SHARD", "HYBRID_SHARD", "HYBRID_SHARD_ZERO2"};
    const auto i = v.get<std::int64_t>();
    if (i >= 1 && i <= 5) s = kByIndex.at(static_cast<std::size_t>(i));
  }
  if (const Named* n = find_named(fsdp_sharding_strategies(), s))
    r.set("strategy", std::string(n->value), key, v);
  else if (s == "HYBRID_SHARD_ZERO2")
    r.unresolved("strategy", key, v, "HYBRID_SHARD_ZERO2 has no trainplan strategy");
  else
    r.fail(key, v,
           "must be FULL_SHARD, SHARD_GRAD_OP, HYBRID_SHARD, HYBRID_SHARD_ZERO2 or NO_SHARD");
}

// accelerate's ParallelismConfig under FSDP (parallelism_config.py): dp_replicate_size > 1 with
// dp_shard_size > 1 is HSDP, shard groups of dp_shard_size (x cp) replicated dp_replicate_size times;
// replicating without sharding is refused there (pure DP is MULTI_GPU). True where it is HSDP.
bool read_hsdp(const Json& j, Reader& r) {
  if (!j.contains("parallelism_config") || !j.at("parallelism_config").is_object()) return false;
  const Json& pc = j.at("parallelism_config");
  const std::string p = "parallelism_config";
  const std::int64_t replicate =
      r.integer(pc, "parallelism_config_dp_replicate_size", p, "strategy", 1).value_or(1);
  if (replicate <= 1) return false;
  const std::int64_t shard = r.integer(pc, "parallelism_config_dp_shard_size", p, "hybrid-shard", 1).value_or(1);
  if (shard <= 1)
    r.fail(p + ".parallelism_config_dp_replicate_size", pc.at("parallelism_config_dp_replicate_size"),
           "replicates without parallelism_config_dp_shard_size above 1, which accelerate refuses under FSDP "
           "(pure data parallelism is distributed_type MULTI_GPU)");
  r.set("strategy", "fsdp-hybrid", p + ".parallelism_config_dp_replicate_size",
        pc.at("parallelism_config_dp_replicate_size"));
  // FSDP shards over dp_shard and cp flattened (fsdp_dim_names: "dp_shard_cp").
  const std::int64_t cp = r.integer(pc, "parallelism_config_cp_size", p, "cp", 1).value_or(1);
  r.set("hybrid-shard", std::to_string(shard * cp), p + ".parallelism_config_dp_shard_size" +
        (cp > 1 ? " x parallelism_config_cp_size" : ""), pc.at("parallelism_config_dp_shard_size"));
  return true;
}

void read_fsdp(const Json& j, Reader& r) {
  r.set("framework", "pytorch", "distributed_type", j.at("distributed_type"));
  const Json f = section(j, "fsdp_config");
  const std::string p = "fsdp_config";
  // fsdp_version 2 wraps with fully_shard (FSDP2); 1, FullyShardedDataParallel, when absent.
  set_fsdp_version(r, f, "fsdp_version", p);
  if (!f.contains("fsdp_version"))
    r.set("fsdp-version", "1", "(no fsdp_config.fsdp_version: accelerate's FullyShardedDataParallel)", "");
  const bool fully_shard = f.contains("fsdp_version") && f.at("fsdp_version") == 2;
  if (read_hsdp(j, r)) {
    // HSDP's groups come from the device mesh; what happens after forward is reshard_after_forward's.
    if (f.contains("fsdp_reshard_after_forward") && f.at("fsdp_reshard_after_forward") == false)
      r.warn("fsdp_config.fsdp_reshard_after_forward = false under HSDP: priced as resharding after forward "
             "(hybrid sharding that keeps the units gathered is not modelled)");
  } else if (f.contains("fsdp_sharding_strategy")) {
    set_sharding(f.at("fsdp_sharding_strategy"), p + ".fsdp_sharding_strategy", r);
  } else if (f.contains("fsdp_reshard_after_forward")) {
    const Json& v = f.at("fsdp_reshard_after_forward");
    // FSDP2's fully_shard(reshard_after_forward=False) keeps the gathered parameters until
    // backward, as FSDP1's SHARD_GRAD_OP does.
    if (v.is_boolean())
      r.set("strategy", v.get<bool>() ? "fsdp-full" : "fsdp-grad-op",
            p + ".fsdp_reshard_after_forward", v);
    else if (const std::optional<bool> b = fully_shard ? accelerate_bool(v) : std::nullopt)
      r.set("strategy", *b ? "fsdp-full" : "fsdp-grad-op", p + ".fsdp_reshard_after_forward", v);
    else if (fully_shard)
      // FullyShardedDataParallelPlugin: "This is not supported with FSDP2, please set to a `bool`".
      r.fail(p + ".fsdp_reshard_after_forward", v,
             "must be true or false with fsdp_version 2 (accelerate takes a bool; fully_shard's group size "
             "is --reshard-after-forward N)");
    else
      set_sharding(v, p + ".fsdp_reshard_after_forward", r);
  } else {
    r.set("strategy", "fsdp-full", "distributed_type",
          fully_shard ? "FSDP (fsdp_version 2 reshards after forward by default)"
                       : "FSDP (sharding strategy FULL_SHARD by default)");
  }
  if (const auto off = r.boolean(f, "fsdp_offload_params", p, "offload"))
    r.set("offload", *off ? "optimizer+params" : "none", p + ".fsdp_offload_params",
          f.at("fsdp_offload_params"));
  if (const auto wrap = r.string(f, "fsdp_auto_wrap_policy", p, "fsdp-wrap")) {
    const std::string k = p + ".fsdp_auto_wrap_policy";
    if (*wrap == "TRANSFORMER_BASED_WRAP")
      r.set("fsdp-wrap", "block", k, f.at("fsdp_auto_wrap_policy"));
    else if (*wrap == "NO_WRAP")
      r.set("fsdp-wrap", "none", k, f.at("fsdp_auto_wrap_policy"));
    else if (*wrap == "SIZE_BASED_WRAP")
      r.unresolved("fsdp-wrap", k, f.at("fsdp_auto_wrap_policy"),
                   "units by parameter count (fsdp_min_num_params), not by block");
    else
      r.fail(k, f.at("fsdp_auto_wrap_policy"),
             "must be TRANSFORMER_BASED_WRAP, SIZE_BASED_WRAP or NO_WRAP");
  }
  if (const auto ac = r.boolean(f, "fsdp_activation_checkpointing", p, "checkpointing"); ac && *ac)
    r.set("checkpointing", "full", p + ".fsdp_activation_checkpointing",
          f.at("fsdp_activation_checkpointing"));
  r.check_keys(
      f, p,
      {"fsdp_version", "fsdp_sharding_strategy", "fsdp_reshard_after_forward",
       "fsdp_offload_params", "fsdp_auto_wrap_policy", "fsdp_activation_checkpointing"},
      {"fsdp_backward_prefetch", "fsdp_backward_prefetch_policy", "fsdp_cpu_ram_efficient_loading",
       "fsdp_forward_prefetch", "fsdp_state_dict_type", "fsdp_sync_module_states",
       "fsdp_use_orig_params", "fsdp_transformer_layer_cls_to_wrap", "fsdp_min_num_params",
       "fsdp_ignored_modules", "fsdp_limit_all_gathers", "fsdp_cpu_offload_pin_memory"});
}

void read_deepspeed_section(const Json& j, Reader& r) {
  r.set("framework", "deepspeed", "distributed_type", j.at("distributed_type"));
  const Json d = section(j, "deepspeed_config");
  const std::string p = "deepspeed_config";
  if (d.contains("deepspeed_config_file") && !d.at("deepspeed_config_file").is_null()) {
    // accelerate then takes everything from that JSON and refuses the inline keys.
    r.unresolved("strategy", p + ".deepspeed_config_file", d.at("deepspeed_config_file"),
                 "read that DeepSpeed config with another --from");
  }
  if (const auto st = r.integer(d, "zero_stage", p, "strategy", 0)) {
    if (*st > 3) r.fail(p + ".zero_stage", d.at("zero_stage"), "must be 0, 1, 2 or 3");
    r.set("strategy", zero_stage_strategy(*st), p + ".zero_stage",
          d.at("zero_stage"));
    // The DeepSpeed config accelerate builds from these keys (utils/dataclasses.py DeepSpeedPlugin)
    // has no overlap_comm: DeepSpeed's default, off below stage 3.
    if (*st >= 1 && *st <= 2 && !d.contains("deepspeed_config_file"))
      r.set("no-overlap-comm", "true", "(deepspeed_config without overlap_comm: DeepSpeed's default below stage 3, off)",
            "");
  }
  r.set_integer(d, "gradient_accumulation_steps", p, "grad-accum", 1);
  const auto device = [&](const char* key) -> std::optional<bool> {
    const auto v = r.string(d, key, p, "offload");
    if (!v) return std::nullopt;
    if (*v != "none" && *v != "cpu" && *v != "nvme")
      r.fail(p + "." + key, d.at(key), "must be none, cpu or nvme");
    return *v != "none";
  };
  const auto opt = device("offload_optimizer_device");
  const auto par = device("offload_param_device");
  if (par && *par)
    r.set("offload", "optimizer+params", p + ".offload_param_device", d.at("offload_param_device"));
  else if (opt)
    r.set("offload", *opt ? "optimizer" : "none", p + ".offload_optimizer_device",
          d.at("offload_optimizer_device"));
  r.check_keys(d, p,
               {"deepspeed_config_file", "zero_stage", "gradient_accumulation_steps",
                "offload_optimizer_device", "offload_param_device"},
               {"gradient_clipping", "zero3_init_flag", "zero3_save_16bit_model",
                "deepspeed_multinode_launcher", "deepspeed_hostfile", "deepspeed_exclusion_filter",
                "deepspeed_inclusion_filter", "deepspeed_moe_layer_cls_names",
                "offload_optimizer_nvme_path", "offload_param_nvme_path"});
}

void read_megatron_section(const Json& j, Reader& r) {
  r.set("framework", "megatron", "distributed_type", j.at("distributed_type"));
  const Json m = section(j, "megatron_lm_config");
  const std::string p = "megatron_lm_config";
  r.set_integer(m, "megatron_lm_tp_degree", p, "tp", 1);
  r.set_integer(m, "megatron_lm_pp_degree", p, "pp", 1);
  r.set_integer(m, "megatron_lm_num_micro_batches", p, "grad-accum", 1);
  if (const auto sp = r.boolean(m, "megatron_lm_sequence_parallelism", p, "sequence-parallel");
      sp && *sp)
    r.set("sequence-parallel", "true", p + ".megatron_lm_sequence_parallelism",
          m.at("megatron_lm_sequence_parallelism"));
  if (const auto rc = r.boolean(m, "megatron_lm_recompute_activations", p, "checkpointing");
      rc && *rc)
    r.set("checkpointing", "selective", p + ".megatron_lm_recompute_activations",
          m.at("megatron_lm_recompute_activations"));
  if (const auto dopt = r.boolean(m, "megatron_lm_use_distributed_optimizer", p, "strategy"))
    r.set("strategy", *dopt ? "zero1" : "ddp", p + ".megatron_lm_use_distributed_optimizer",
          m.at("megatron_lm_use_distributed_optimizer"));
  r.check_keys(m, p,
               {"megatron_lm_tp_degree", "megatron_lm_pp_degree", "megatron_lm_num_micro_batches",
                "megatron_lm_sequence_parallelism", "megatron_lm_recompute_activations",
                "megatron_lm_use_distributed_optimizer"},
               {"megatron_lm_gradient_clipping"});
}

void read_mixed_precision(const Json& j, Reader& r) {
  if (!j.contains("mixed_precision") || j.at("mixed_precision").is_null()) return;
  const Json& v = j.at("mixed_precision");
  // PyYAML reads an unquoted `no` as false.
  const std::string s =
      v.is_boolean() && !v.get<bool>() ? "no" : (v.is_string() ? v.get<std::string>() : "?");
  // "no" turns autocast off: fp32, or pure 16-bit when the script loads the model in 16 bits.
  if (s == "no")
    r.unresolved("precision", "mixed_precision", v,
                 "fp32, or bf16-true/fp16-true when the script loads the model in 16 bits");
  else if (s == "fp16")
    r.set("precision", "fp16-mixed", "mixed_precision", v);
  else if (s == "bf16")
    r.set("precision", "bf16-mixed", "mixed_precision", v);
  else if (s == "fp8")
    r.unresolved("precision", "mixed_precision", v, "trainplan has no fp8 precision");
  else
    r.fail("mixed_precision", v, "must be no, fp16, bf16 or fp8");
}

// accelerate's ParallelismConfig (accelerate/parallelism_config.py, v1.10): tensor and context
// parallel sizes of the device mesh; context parallelism runs torch's ring attention.
void read_parallelism_config(const Json& j, Reader& r) {
  const Json p = section(j, "parallelism_config");
  if (const auto tp = r.integer(p, "parallelism_config_tp_size", "parallelism_config", "tp", 1))
    r.set("tp", std::to_string(*tp), "parallelism_config.parallelism_config_tp_size", p.at("parallelism_config_tp_size"));
  if (const auto cp = r.integer(p, "parallelism_config_cp_size", "parallelism_config", "cp", 1))
    r.set("cp", std::to_string(*cp), "parallelism_config.parallelism_config_cp_size", p.at("parallelism_config_cp_size"));
  r.check_keys(p, "parallelism_config",
               {"parallelism_config_tp_size", "parallelism_config_cp_size", "parallelism_config_dp_replicate_size",
                "parallelism_config_dp_shard_size"},
               {"parallelism_config_cp_comm_strategy", "parallelism_config_cp_backend"});
}

}  // namespace

// accelerate's dynamo_config (commands/config/cluster.py: dynamo_backend among DYNAMO_BACKENDS,
// "NO" for none; config_args.py reads a top-level dynamo_backend of older files the same way):
// the Accelerator compiles the model with that backend.
void read_dynamo(const Json& j, Reader& r) {
  const bool nested = j.contains("dynamo_config") && j.at("dynamo_config").is_object();
  const Json& d = nested ? j.at("dynamo_config") : j;
  const std::string prefix = nested ? "dynamo_config" : "";
  const auto backend = r.string(d, "dynamo_backend", prefix, "compile");
  if (!backend) return;
  std::string upper = *backend;
  for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  if (upper != "NO" && upper != "INDUCTOR") warn_unpriced_compile(r, join_key(prefix, "dynamo_backend"), *backend, true);
  if (const auto mode = r.string(d, "dynamo_mode", prefix, "compile"); mode && *mode != "default")
    warn_unpriced_compile(r, join_key(prefix, "dynamo_mode"), *mode, false);
  r.set("compile", upper == "NO" ? "false" : "true", join_key(prefix, "dynamo_backend"), d.at("dynamo_backend"));
}

void read_accelerate(const Json& j, Reader& r) {
  if (!j.contains("distributed_type"))
    r.fail("no distributed_type: not an accelerate config trainplan can read");
  const Json& dt = j.at("distributed_type");
  const std::string type =
      dt.is_boolean() && !dt.get<bool>() ? "NO" : (dt.is_string() ? dt.get<std::string>() : "?");
  if (const auto cpu = r.boolean(j, "use_cpu", "", ""); cpu && *cpu)
    r.fail("use_cpu", j.at("use_cpu"), "a CPU run; trainplan plans GPU training");
  r.set_integer(j, "num_machines", "", "nodes", 1);
  r.set_integer(j, "num_processes", "", "gpus", 1);
  read_mixed_precision(j, r);
  if (type == "NO") {
    r.set("strategy", "single", "distributed_type", dt);
  } else if (type == "MULTI_GPU") {
    r.set("strategy", "ddp", "distributed_type", dt);
  } else if (type == "FSDP") {
    read_fsdp(j, r);
  } else if (type == "DEEPSPEED") {
    read_deepspeed_section(j, r);
  } else if (type == "MEGATRON_LM") {
    read_megatron_section(j, r);
  } else {
    r.fail("distributed_type", dt,
           "trainplan plans NO, MULTI_GPU, FSDP, DEEPSPEED or MEGATRON_LM on GPUs");
  }
  read_parallelism_config(j, r);
  read_dynamo(j, r);
  r.check_keys(j, "",
               {"distributed_type", "use_cpu", "num_machines", "num_processes", "mixed_precision",
                "fsdp_config", "deepspeed_config", "megatron_lm_config", "parallelism_config", "dynamo_backend"},
               kOtherKeys);
}

}  // namespace trainplan::request::config
