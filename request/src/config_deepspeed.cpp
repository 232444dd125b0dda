// DeepSpeed config JSON. Key meanings and defaults: deepspeedai/DeepSpeed v0.19.5,
// deepspeed/runtime/config.py (batch keys, fp16/bf16, optimizer), deepspeed/runtime/zero/config.py
// (DeepSpeedZeroConfig: stage, offload_*, mics_shard_size, ZeRO++ keys zero_hpz_partition_size,
// zero_quantized_weights, zero_quantized_gradients), deepspeed/runtime/zero/offload_config.py
// (device none|cpu|nvme), deepspeed/runtime/activation_checkpointing/config.py, and
// deepspeed/runtime/engine.py _configure_basic_optimizer (Adam/AdamW: torch_adam, adam_w_mode).

#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <string_view>
#include <utility>

#include "config_reader.hpp"
#include "trainplan/core/checked.hpp"

namespace trainplan::request::config {
namespace {

// DeepSpeedZeroConfig's other fields: read without a warning, though they change nothing
// trainplan prices.
constexpr std::array kZeroOtherKeys = std::to_array<std::string_view>({
    "contiguous_gradients", "reduce_scatter", "reduce_bucket_size", "use_multi_rank_bucket_allreduce",
    "allgather_partitions", "allgather_bucket_size", "overlap_comm", "load_from_fp32_weights",
    "elastic_checkpoint", "sub_group_size", "cpu_offload_param", "cpu_offload_use_pin_memory",
    "cpu_offload", "stage3_prefetch_bucket_size", "stage3_param_persistence_threshold",
    "stage3_model_persistence_threshold", "stage3_max_live_parameters", "stage3_max_reuse_distance",
    "stage3_gather_16bit_weights_on_model_save", "stage3_module_granularity_threshold",
    "stage3_use_all_reduce_for_fetch_params", "stage3_allgather_sequential",
    "stage3_gather_fp16_weights_on_model_save", "ignore_unused_parameters", "legacy_stage1",
    "round_robin_gradients", "zero_quantized_nontrainable_weights", "zeropp_loco_param",
    "mics_hierarchical_params_gather", "memory_efficient_linear", "pipeline_loading_checkpoint",
    "override_module_apply", "log_trace_cache_warnings", "enable_sanity_checks",
    "save_muon_momentum_buffer_in_memory", "leaf_module", "prefetch_bucket_size",
    "param_persistence_threshold", "model_persistence_threshold", "max_live_parameters",
    "max_reuse_distance", "gather_16bit_weights_on_model_save"});

// The config's other sections and keys (runtime/config.py), likewise.
constexpr std::array kOtherKeys = std::to_array<std::string_view>({
    "scheduler", "gradient_clipping", "steps_per_print", "wall_clock_breakdown",
    "zero_allow_untested_optimizer", "zero_force_ds_cpu_optimizer", "prescale_gradients",
    "gradient_predivide_factor", "communication_data_type", "seq_parallel_communication_data_type",
    "sparse_gradients", "dump_state", "memory_breakdown", "tensorboard", "wandb", "csv_monitor",
    "comet", "flops_profiler", "comms_logger", "checkpoint", "data_types", "aio", "elasticity",
    "autotuning", "compression_training", "data_efficiency", "curriculum_learning", "sparse_attention",
    "pipeline", "eigenvalue", "progressive_layer_drop", "quantize_training", "nebula",
    "dataloader_drop_last", "torch_autocast", "gradient_allreduce_op", "disable_allgather",
    "managed_gradient_accumulation", "check_overflow", "use_data_before_expert_parallelism",
    "hybrid_engine", "weight_quantization", "compile", "timers", "monitor_config", "graph_harvesting",
    "use_node_local_storage", "load_universal_checkpoint", "zenflow", "tensor_parallel",
    "sequence_parallel_size", "log_level"});

// "cpu" or "nvme" moves the state off the GPU; "none" keeps it.
std::optional<bool> offload_device(const Json& zero, const std::string& key, Reader& r) {
  if (!zero.contains(key) || zero.at(key).is_null()) return std::nullopt;
  const Json& o = zero.at(key);
  const std::string path = "zero_optimization." + key;
  if (!o.is_object()) r.fail(path, o, "must be an object with a \"device\"");
  r.check_keys(
      o, path, {"device"},
      {"pin_memory", "buffer_count", "buffer_size", "max_in_cpu", "nvme_path", "pipeline_read",
       "pipeline_write", "fast_init", "ratio", "pipeline", "super_offload", "cpuadam_cores_perc"});
  const std::optional<std::string> device = r.string(o, "device", path, "offload");
  if (!device) return std::nullopt;
  if (*device == "none") return false;
  if (*device == "cpu") return true;
  if (*device == "nvme") {
    r.warn(path +
           ".device = \"nvme\": estimated as host-memory offload (NVMe bandwidth is not "
           "modelled)");
    return true;
  }
  r.fail(path + ".device", o.at("device"), "must be none, cpu or nvme");
}

void read_batch(const Json& j, Reader& r) {
  const auto mb = r.set_integer(j, "train_micro_batch_size_per_gpu", "", "micro-batch", 1);
  const auto ga = r.set_integer(j, "gradient_accumulation_steps", "", "grad-accum", 1);
  const auto tb = r.set_integer(j, "train_batch_size", "", "global-batch", 1);
  // config.py _batch_assertion: train_batch_size = micro-batch x accumulation x data-parallel size.
  if (mb && ga && tb) {
    const std::int64_t per_rank = checked_product(
        {*mb, *ga}, r.read().path + ": train_micro_batch_size_per_gpu x gradient_accumulation_steps");
    if (*tb % per_rank != 0)
      r.fail("train_batch_size", j.at("train_batch_size"),
             "is not a multiple of train_micro_batch_size_per_gpu x gradient_accumulation_steps = " +
                 std::to_string(per_rank));
  }
}

void read_precision(const Json& j, Reader& r) {
  for (const char* key : {"fp16", "bf16", "bfloat16"}) {
    if (!j.contains(key)) continue;
    const Json& o = j.at(key);
    if (!o.is_object()) r.fail(key, o, "must be an object with \"enabled\"");
    r.check_keys(o, key, {"enabled"},
                 {"auto_cast", "loss_scale", "initial_scale_power", "loss_scale_window",
                  "hysteresis", "consecutive_hysteresis", "min_loss_scale",
                  "fp16_master_weights_and_grads", "immediate_grad_update", "check_grad_overflow",
                  "bf16_master_weights_and_grads", "bf16_optimizer_states"});
    const std::string option = "precision";
    const std::optional<bool> on = r.boolean(o, "enabled", key, option);
    // DeepSpeed 0.18's bf16 optimizer (runtime/config.py, BFLOAT16_MASTER_WEIGHTS_AND_GRADS and
    // BFLOAT16_OPTIMIZER_STATES, both false by default).
    if (std::string(key) != "fp16")
      for (const auto& [field, flag] : {std::pair{"bf16_master_weights_and_grads", "bf16-master-weights"},
                                        std::pair{"bf16_optimizer_states", "bf16-optimizer-states"}})
        if (r.boolean(o, field, key, flag).value_or(false))
          r.set(flag, "true", std::string(key) + "." + field, o.at(field));
    if (r.boolean(o, "fp16_master_weights_and_grads", key, "").value_or(false))
      r.warn(std::string(key) + ".fp16_master_weights_and_grads = true: fp16 master weights and gradients are not "
             "modelled; estimated with DeepSpeed's fp32 master weights");
    if (!on || !*on) continue;
    // DeepSpeed keeps fp32 master weights in the optimizer for fp16 and bf16 alike.
    r.set(option, std::string(key) == "fp16" ? "fp16-mixed" : "bf16-mixed",
          std::string(key) + ".enabled", o.at("enabled"));
  }
}

void read_zero_plus_plus(const Json& z, int stage, Reader& r) {
  const std::optional<bool> qw =
      r.boolean(z, "zero_quantized_weights", "zero_optimization", "zero-plus-plus");
  const std::optional<bool> qg =
      r.boolean(z, "zero_quantized_gradients", "zero_optimization", "zero-plus-plus");
  const std::optional<std::int64_t> hpz =
      r.integer(z, "zero_hpz_partition_size", "zero_optimization", "zero-plus-plus", 0);
  const bool any = (qw && *qw) || (qg && *qg) || (hpz && *hpz > 1);
  if (!any) return;
  if (stage != 3)
    r.fail("zero_optimization.stage = " + std::to_string(stage) +
           " with ZeRO++ keys (zero_quantized_weights, zero_quantized_gradients, "
           "zero_hpz_partition_size): ZeRO++ needs stage 3");
  const char* key = (qw && *qw)   ? "zero_quantized_weights"
                    : (qg && *qg) ? "zero_quantized_gradients"
                                  : "zero_hpz_partition_size";
  r.set("zero-plus-plus", "true", std::string("zero_optimization.") + key, z.at(key));
  if (!(qw && *qw) || !(qg && *qg) || !(hpz && *hpz > 1))
    r.warn(
        "zero_optimization: only part of ZeRO++ is on (zero_quantized_weights, "
        "zero_quantized_gradients, zero_hpz_partition_size); trainplan's --zero-plus-plus "
        "estimates all three");
}

// What DeepSpeed does with a key left out (deepspeed/runtime/zero/config.py DeepSpeedZeroConfig:
// stage 0, no offload_optimizer or offload_param), so that fit does not search what the file
// decides. "auto" is not left out: it goes to the readers' unresolved list.
void set_zero_defaults(const Json& j, Reader& r) {
  const bool zero = j.contains("zero_optimization") && j.at("zero_optimization").is_object();
  const Json& z = zero ? j.at("zero_optimization") : j;
  if (!r.read().find("strategy") && !(zero && z.contains("stage")))
    r.set("strategy", "ddp",
          zero ? "(no zero_optimization.stage: DeepSpeed's default, stage 0)"
               : "(no zero_optimization: DeepSpeed's default, stage 0)",
          "");
  if (!r.read().find("offload") && !(zero && (z.contains("offload_optimizer") || z.contains("offload_param"))))
    r.set("offload", "none", "(no offload_optimizer or offload_param: DeepSpeed's default)", "");
}

// AutoTP training (deepspeed/runtime/tensor_parallel/config.py, TPTrainingConfig.autotp_size, 0 by
// default: off) splits each replica's linears over that many GPUs: tensor parallelism. Ulysses
// sequence parallelism (sequence_parallel_size) splits the sequence, which is not modelled yet.
void read_parallelism(const Json& j, Reader& r) {
  if (j.contains("tensor_parallel") && j.at("tensor_parallel").is_object()) {
    const Json& t = j.at("tensor_parallel");
    if (const auto tp = r.integer(t, "autotp_size", "tensor_parallel", "tp", 0); tp && *tp > 0)
      r.set("tp", std::to_string(*tp), "tensor_parallel.autotp_size", t.at("autotp_size"));
  }
  if (const auto sp = r.integer(j, "sequence_parallel_size", "", "", 1); sp && *sp > 1)
    r.warn("sequence_parallel_size = " + std::to_string(*sp) +
           ": DeepSpeed-Ulysses sequence parallelism is not modelled; estimated without it");
}

// offload_optimizer and offload_param: the optimizer on the host, or the parameters too (stage 3 only).
void read_zero_offload(const Json& z, int stage, Reader& r) {
  const std::optional<bool> opt = offload_device(z, "offload_optimizer", r);
  const std::optional<bool> par = offload_device(z, "offload_param", r);
  if (par && *par && stage != 3)
    r.fail("zero_optimization.offload_param with stage " + std::to_string(stage) +
           ": DeepSpeed offloads parameters with stage 3 only");
  if (par && *par) {
    if (!(opt && *opt))
      r.warn(
          "zero_optimization.offload_param without offload_optimizer: trainplan offloads "
          "parameters together with the optimizer");
    r.set("offload", "optimizer+params", "zero_optimization.offload_param.device",
          z.at("offload_param").at("device"));
  } else if (opt) {
    r.set("offload", *opt ? "optimizer" : "none", "zero_optimization.offload_optimizer.device",
          z.at("offload_optimizer").at("device"));
  }
}

int read_zero(const Json& j, Reader& r) {
  if (!j.contains("zero_optimization")) return -1;
  const Json& z = j.at("zero_optimization");
  if (!z.is_object()) r.fail("zero_optimization", z, "must be an object");
  const std::optional<std::int64_t> st = r.integer(z, "stage", "zero_optimization", "strategy", 0);
  const int stage = st ? static_cast<int>(*st) : 0;  // DeepSpeedZeroConfig.stage defaults to 0
  if (st && *st > 3) r.fail("zero_optimization.stage", z.at("stage"), "must be 0, 1, 2 or 3");
  // MiCS (mics_shard_size > 0 with stage 3) shards within groups of that size and replicates
  // across them: hybrid sharding.
  const auto mics = r.integer(z, "mics_shard_size", "zero_optimization", "strategy", -1);
  if (mics && *mics > 0 && stage == 3) {
    r.set("strategy", "fsdp-hybrid", "zero_optimization.mics_shard_size", z.at("mics_shard_size"));
    r.set("hybrid-shard", std::to_string(*mics), "zero_optimization.mics_shard_size", z.at("mics_shard_size"));
  }
  else if (st)
    r.set("strategy", zero_stage_strategy(stage), "zero_optimization.stage",
          z.at("stage"));
  read_zero_offload(z, stage, r);
  if (z.contains("zenflow") && !z.at("zenflow").is_null())
    r.warn(
        "zero_optimization.zenflow: ZenFlow's selective GPU updates are not modelled; "
        "estimated as a plain optimizer offload");
  read_zero_plus_plus(z, stage, r);
  // runtime/zero/config.py overlap_comm_valid: left out, it is on at stage 3 only.
  const auto overlap = r.boolean(z, "overlap_comm", "zero_optimization", "no-overlap-comm");
  if (overlap && !*overlap && stage >= 1)  // stage 0 reduces as DDP does: nothing to overlap
    r.set("no-overlap-comm", "true", "zero_optimization.overlap_comm", z.at("overlap_comm"));
  else if (!overlap && stage >= 1 && stage <= 2)
    r.set("no-overlap-comm", "true", "(no overlap_comm: DeepSpeed's default below stage 3, off)", "");
  r.check_keys(z, "zero_optimization",
               {"stage", "mics_shard_size", "offload_optimizer", "offload_param", "zenflow", "overlap_comm",
                "zero_quantized_weights", "zero_quantized_gradients", "zero_hpz_partition_size"},
               kZeroOtherKeys);
  return stage;
}

void read_optimizer(const Json& j, bool offloaded, Reader& r) {
  if (!j.contains("optimizer")) return;
  const Json& o = j.at("optimizer");
  if (!o.is_object()) r.fail("optimizer", o, "must be an object with a \"type\"");
  r.check_keys(o, "optimizer", {"type", "params"}, {"legacy_fusion"});
  const std::optional<std::string> type = r.string(o, "type", "optimizer", "optimizer");
  if (!type) return;
  std::string t = *type;
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  if (t != "adam" && t != "adamw") {
    set_optimizer_name(r, "optimizer.type", o.at("type"), true);
    return;
  }
  const Json params = section(o, "params");
  const std::optional<bool> w_mode =
      r.boolean(params, "adam_w_mode", "optimizer.params", "optimizer");
  // engine.py: type AdamW forces decoupled weight decay; Adam uses adam_w_mode (default true).
  const bool adamw = t == "adamw" || !w_mode || *w_mode;
  r.set("optimizer", adamw ? "adamw" : "adam", "optimizer.type", o.at("type"));
  const std::optional<bool> torch_adam =
      r.boolean(params, "torch_adam", "optimizer.params", "optimizer-impl");
  if (!torch_adam) return;
  // torch_adam builds torch.optim.AdamW with its defaults (foreach on CUDA); otherwise DeepSpeed's
  // FusedAdam, or DeepSpeedCPUAdam when the optimizer is offloaded.
  r.set("optimizer-impl",
        *torch_adam ? "foreach" : (offloaded ? "deepspeed-cpu" : "deepspeed-fused"),
        "optimizer.params.torch_adam", params.at("torch_adam"));
}

void read_activation_checkpointing(const Json& j, Reader& r) {
  if (!j.contains("activation_checkpointing")) return;
  const Json& a = j.at("activation_checkpointing");
  if (!a.is_object()) r.fail("activation_checkpointing", a, "must be an object");
  r.check_keys(a, "activation_checkpointing", {"cpu_checkpointing"},
               {"partition_activations", "contiguous_memory_optimization", "number_checkpoints",
                "synchronize_checkpoint_boundary", "profile"});
  const std::optional<bool> cpu =
      r.boolean(a, "cpu_checkpointing", "activation_checkpointing", "checkpointing");
  if (cpu && *cpu) {
    r.set("checkpointing", "full-offload", "activation_checkpointing.cpu_checkpointing",
          a.at("cpu_checkpointing"));
    return;
  }
  // The section configures deepspeed.checkpointing; whether blocks are checkpointed is the model's.
  r.unresolved("checkpointing", "activation_checkpointing", a,
               "takes effect only where the model calls deepspeed.checkpointing.checkpoint");
}

}  // namespace

void read_deepspeed(const Json& j, Reader& r) {
  r.set("framework", "deepspeed", "(a DeepSpeed config)", "");
  read_batch(j, r);
  read_precision(j, r);
  const auto& open = r.read().unresolved_options;
  // Without an enabled fp16 or bf16 section DeepSpeed trains in fp32 (runtime/config.py).
  if (!r.read().find("precision") && std::find(open.begin(), open.end(), "precision") == open.end())
    r.set("precision", "fp32", "(no fp16 or bf16 enabled: DeepSpeed's default, fp32)", "");
  const int stage = read_zero(j, r);
  (void)stage;
  set_zero_defaults(j, r);
  read_parallelism(j, r);
  const Setting* off = r.read().find("offload");
  read_optimizer(j, off && off->value != "none", r);
  read_activation_checkpointing(j, r);
  if (j.contains("amp") && j.at("amp").is_object()) {
    const std::optional<bool> amp = r.boolean(j.at("amp"), "enabled", "amp", "precision");
    if (amp && *amp)
      r.unresolved("precision", "amp.enabled", j.at("amp").at("enabled"), "NVIDIA Apex AMP is not modelled");
  }
  r.check_keys(
      j, "",
      {"train_micro_batch_size_per_gpu", "gradient_accumulation_steps", "train_batch_size", "fp16",
       "bf16", "bfloat16", "zero_optimization", "optimizer", "activation_checkpointing", "amp"},
      kOtherKeys);
}

}  // namespace trainplan::request::config
