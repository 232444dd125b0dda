#include "trainplan/planner/emit.hpp"

#include <fmt/format.h>

namespace trainplan::planner {
namespace {

// DeepSpeed's ZeRO stage closest to each strategy (FSDP FULL_SHARD = stage 3, SHARD_GRAD_OP = 2).
int zero_stage(Strategy s) {
  switch (s) {
    case Strategy::single:
    case Strategy::ddp:
      return 0;
    case Strategy::zero1:
      return 1;
    case Strategy::zero2:
    case Strategy::fsdp_grad_op:
      return 2;
    case Strategy::zero3:
    case Strategy::fsdp_full:
    case Strategy::fsdp_hybrid:
      return 3;
  }
  return 0;
}

std::string fsdp_sharding(Strategy s) {
  switch (s) {
    case Strategy::fsdp_full:
    case Strategy::zero3:
      return "FULL_SHARD";
    case Strategy::fsdp_grad_op:
    case Strategy::zero2:
    case Strategy::zero1:
      return "SHARD_GRAD_OP";
    case Strategy::fsdp_hybrid:
      return "HYBRID_SHARD";
    case Strategy::single:
    case Strategy::ddp:
      return "NO_SHARD";
  }
  return "NO_SHARD";
}

std::string mixed_precision(Precision p) {
  switch (p) {
    case Precision::fp32:
      return "no";
    case Precision::fp16_mixed:
    case Precision::fp16_true:
      return "fp16";
    case Precision::bf16_mixed:
    case Precision::bf16_true:
      return "bf16";
  }
  return "no";
}

// The Hugging Face attn_implementation for the attention kernel (transformers'
// ALL_ATTENTION_FUNCTIONS keys); sdpa is what V100-class GPUs without FlashAttention-2 run.
std::string hf_attention(Attention a) {
  switch (a) {
    case Attention::flash:
      return "flash_attention_2";
    case Attention::sdpa:
      return "sdpa";
    case Attention::eager:
      return "eager";
  }
  return "sdpa";
}

bool is_fp16(Precision p) { return p == Precision::fp16_mixed || p == Precision::fp16_true; }

// fp16 overflows without loss scaling; accelerate and the Trainer create a torch.amp.GradScaler
// for mixed_precision fp16 (DeepSpeed's "loss_scale": 0 and Megatron's default are dynamic too).
void note_loss_scaling(const model::Training& t, std::vector<std::string>& notes) {
  if (t.precision == Precision::fp16_mixed)
    notes.push_back("fp16-mixed: the loss is scaled dynamically (torch.amp.GradScaler)");
}

bool uses_deepspeed(const model::Training& t) {
  return t.framework == Framework::deepspeed || t.strategy == Strategy::zero1 ||
         t.strategy == Strategy::zero2 || t.strategy == Strategy::zero3;
}

// What the training script itself must do, beyond the launcher's configuration.
void note_script_changes(const model::Training& t, std::vector<std::string>& notes) {
  if (t.checkpointing == Checkpointing::full_offload)
    notes.push_back(
        "checkpoints on the host: DeepSpeed activation checkpointing with cpu_checkpointing, or "
        "the checkpointed blocks run under torch.autograd.graph.save_on_cpu(pin_memory=True) "
        "(all they save is their inputs; keep the head outside it)");
  if (t.method != Method::full)
    notes.push_back(fmt::format("LoRA rank {} on {}: configure PEFT in the training script",
                                t.lora.rank, fmt::join(t.lora.targets, ",")));
  if (t.method == Method::qlora)
    notes.push_back(
        fmt::format("QLoRA: load the base model with BitsAndBytesConfig(load_in_4bit=True, "
                    "bnb_4bit_quant_type='{}')",
                    t.quant == Quant::fp4 ? "fp4" : "nf4"));
}

void note_expert_parallel(const model::Training& t, const std::string& format,
                          std::vector<std::string>& notes) {
  if (t.ep > 1)
    notes.push_back(fmt::format(
        "{} cannot express expert parallelism {}: the model's MoE layers set it (DeepSpeed-MoE "
        "ep_size={}), or launch Megatron-LM with --expert-model-parallel-size",
        format, t.ep, t.ep));
}

void note_parallelism(const model::Training& t, const std::string& format,
                      std::vector<std::string>& notes) {
  if (t.tp > 1 || t.pp > 1)
    notes.push_back(
        fmt::format("{} cannot express TP {} / PP {}: launch Megatron-LM (--emit torchrun with "
                    "--framework megatron) or a TP/PP-capable trainer",
                    format, t.tp, t.pp));
  note_expert_parallel(t, format, notes);
  note_script_changes(t, notes);
}

// The Hugging Face Trainer's --optim for the optimizer and its implementation
// (transformers.training_args.OptimizerNames); empty when the Trainer has none.
std::string trainer_optim(const model::Training& t) {
  switch (t.optimizer) {
    case Optimizer::adam:
    case Optimizer::adamw:
      switch (t.optimizer_implementation()) {
        case OptimizerImpl::fused:
          return "adamw_torch_fused";
        case OptimizerImpl::for_loop:
          return "adamw_torch --optim_args foreach=False";
        case OptimizerImpl::foreach:
        case OptimizerImpl::framework_default:
          return "adamw_torch";
        case OptimizerImpl::deepspeed_fused:
        case OptimizerImpl::deepspeed_cpu:
          return "";  // the DeepSpeed config's optimizer
      }
      return "adamw_torch";
    case Optimizer::adamw_8bit:
      return "adamw_bnb_8bit";
    case Optimizer::paged_adamw_8bit:
      return "paged_adamw_8bit";
    case Optimizer::sgd:
    case Optimizer::sgd_momentum:
      return "sgd";
    case Optimizer::adafactor:
      return "adafactor";
  }
  return "";
}

}  // namespace

Emitted emit_deepspeed(const Estimate& e) {
  const model::Training& t = e.training;
  Emitted out;
  const int stage = zero_stage(t.strategy);
  std::string precision;
  switch (t.precision) {
    case Precision::fp16_mixed:
    case Precision::fp16_true:
      precision =
          "  \"fp16\": {\"enabled\": true, \"loss_scale\": 0, \"initial_scale_power\": 16},\n";
      break;
    case Precision::bf16_mixed:
    case Precision::bf16_true:
      precision = "  \"bf16\": {\"enabled\": true},\n";
      break;
    case Precision::fp32:
      break;
  }
  std::string zero = fmt::format(
      "    \"stage\": {},\n    \"overlap_comm\": true,\n    \"contiguous_gradients\": true", stage);
  if (t.offload != Offload::none)
    zero += ",\n    \"offload_optimizer\": {\"device\": \"cpu\", \"pin_memory\": true}";
  if (t.offload == Offload::optimizer_params)
    zero += ",\n    \"offload_param\": {\"device\": \"cpu\", \"pin_memory\": true}";
  if (stage == 3) zero += ",\n    \"stage3_gather_16bit_weights_on_model_save\": true";
  if (t.strategy == Strategy::fsdp_hybrid)
    zero += fmt::format(",\n    \"zero_hpz_partition_size\": {}", e.layout.shard);
  // DeepSpeed steps Adam with its FusedAdam (DeepSpeedCPUAdam when offloaded) unless torch_adam
  // asks for torch's (foreach by default).
  std::string optimizer;
  const OptimizerImpl impl = t.optimizer_implementation();
  if ((t.optimizer == Optimizer::adam || t.optimizer == Optimizer::adamw) &&
      t.optimizer_impl != OptimizerImpl::framework_default)
    optimizer = fmt::format(
        "  \"optimizer\": {{\"type\": \"AdamW\", \"params\": {{\"torch_adam\": {}}}}},\n",
        impl == OptimizerImpl::deepspeed_fused || impl == OptimizerImpl::deepspeed_cpu ? "false"
                                                                                    : "true");
  if (impl == OptimizerImpl::fused || impl == OptimizerImpl::for_loop)
    out.notes.push_back(fmt::format(
        "DeepSpeed's torch_adam builds torch.optim.AdamW with its defaults (foreach): for {} "
        "pass the optimizer to deepspeed.initialize instead",
        to_string(impl)));
  out.text = fmt::format(
      "{{\n"
      "  \"train_batch_size\": {},\n"
      "  \"train_micro_batch_size_per_gpu\": {},\n"
      "  \"gradient_accumulation_steps\": {},\n"
      "{}{}"
      "  \"gradient_clipping\": 1.0,\n"
      "  \"zero_optimization\": {{\n{}\n  }},\n"
      "  \"wall_clock_breakdown\": false\n"
      "}}\n",
      e.global_batch, t.micro_batch, t.grad_accum, precision, optimizer, zero);
  if (is_fsdp(t.strategy))
    out.notes.push_back(fmt::format("{} mapped to ZeRO stage {}", to_string(t.strategy), stage));
  if (t.checkpointing != Checkpointing::none)
    out.notes.push_back(
        "activation checkpointing is the model's: model.gradient_checkpointing_enable()");
  note_parallelism(t, "a DeepSpeed config", out.notes);
  return out;
}

Emitted emit_accelerate(const Estimate& e, const hardware::Cluster& c) {
  const model::Training& t = e.training;
  Emitted out;
  std::string head = fmt::format(
      "compute_environment: LOCAL_MACHINE\n"
      "mixed_precision: {}\n"
      "num_machines: {}\n"
      "num_processes: {}\n"
      "machine_rank: 0\n"
      "main_training_function: main\n"
      "rdzv_backend: static\n"
      "same_network: true\n",
      mixed_precision(t.precision), c.nodes, c.world());
  const bool ckpt = t.checkpointing != Checkpointing::none;
  if (t.tp > 1 || t.pp > 1) {
    out.text =
        head + fmt::format(
                   "distributed_type: MEGATRON_LM\n"
                   "megatron_lm_config:\n"
                   "  megatron_lm_tp_degree: {}\n"
                   "  megatron_lm_pp_degree: {}\n"
                   "  megatron_lm_num_micro_batches: {}\n"
                   "  megatron_lm_sequence_parallelism: {}\n"
                   "  megatron_lm_recompute_activations: {}\n"
                   "  megatron_lm_use_distributed_optimizer: {}\n"
                   "  megatron_lm_gradient_clipping: 1.0\n",
                   t.tp, t.pp, t.grad_accum, t.sequence_parallel ? "true" : "false",
                   ckpt ? "true" : "false", t.strategy == Strategy::zero1 ? "true" : "false");
    if (t.pp_virtual > 1)
      out.notes.push_back("accelerate's Megatron-LM plugin has no interleaved schedule: v = 1");
  } else if (uses_deepspeed(t)) {
    out.text = head + fmt::format(
                          "distributed_type: DEEPSPEED\n"
                          "deepspeed_config:\n"
                          "  zero_stage: {}\n"
                          "  gradient_accumulation_steps: {}\n"
                          "  gradient_clipping: 1.0\n"
                          "  offload_optimizer_device: {}\n"
                          "  offload_param_device: {}\n"
                          "  zero3_init_flag: {}\n",
                          zero_stage(t.strategy), t.grad_accum,
                          t.offload != Offload::none ? "cpu" : "none",
                          t.offload == Offload::optimizer_params ? "cpu" : "none",
                          zero_stage(t.strategy) == 3 ? "true" : "false");
  } else if (is_fsdp(t.strategy)) {
    out.text = head + fmt::format(
                          "distributed_type: FSDP\n"
                          "fsdp_config:\n"
                          "  fsdp_version: 1\n"
                          "  fsdp_sharding_strategy: {}\n"
                          "  fsdp_auto_wrap_policy: {}\n"
                          "  fsdp_backward_prefetch: BACKWARD_PRE\n"
                          "  fsdp_forward_prefetch: false\n"
                          "  fsdp_offload_params: {}\n"
                          "  fsdp_state_dict_type: SHARDED_STATE_DICT\n"
                          "  fsdp_use_orig_params: true\n"
                          "  fsdp_cpu_ram_efficient_loading: true\n"
                          "  fsdp_sync_module_states: true\n"
                          "  fsdp_activation_checkpointing: {}\n",
                          fsdp_sharding(t.strategy),
                          t.fsdp_wrap == FsdpWrap::block ? "TRANSFORMER_BASED_WRAP" : "NO_WRAP",
                          t.offload != Offload::none ? "true" : "false", ckpt ? "true" : "false");
    if (t.offload == Offload::optimizer)
      out.notes.push_back(
          "FSDP offloads parameters with the optimizer (fsdp_offload_params): more PCIe traffic "
          "than the optimizer-only offload estimated");
  } else {
    out.text =
        head + (c.world() > 1 ? "distributed_type: MULTI_GPU\n" : "distributed_type: 'NO'\n");
    if (ckpt)
      out.notes.push_back("activation checkpointing: model.gradient_checkpointing_enable()");
  }
  out.notes.push_back(
      fmt::format("per-device batch {} with gradient accumulation {} (global batch {})",
                  t.micro_batch, t.grad_accum, e.global_batch));
  note_loss_scaling(t, out.notes);
  note_expert_parallel(t, "an accelerate config", out.notes);
  note_script_changes(t, out.notes);
  return out;
}

Emitted emit_torchrun(const Estimate& e, const hardware::Cluster& c, const model::Architecture& a) {
  const model::Training& t = e.training;
  Emitted out;
  const std::string launcher = fmt::format(
      "torchrun --nnodes={} --nproc_per_node={} --rdzv_backend=c10d "
      "--rdzv_endpoint=$MASTER_ADDR:29500",
      c.nodes, c.gpus_per_node);
  if (t.framework == Framework::megatron) {
    std::string args = fmt::format(
        " pretrain_gpt.py --tensor-model-parallel-size {} --pipeline-model-parallel-size {} "
        "--micro-batch-size {} --global-batch-size {} --seq-length {}",
        t.tp, t.pp, t.micro_batch, e.global_batch, t.seq);
    if (t.pp_virtual > 1)
      args += fmt::format(" --num-layers-per-virtual-pipeline-stage {}",
                          a.total_layers() / (static_cast<std::int64_t>(t.pp) * t.pp_virtual));
    if (t.sequence_parallel) args += " --sequence-parallel";
    if (t.ep > 1) args += fmt::format(" --expert-model-parallel-size {}", t.ep);
    switch (t.checkpointing) {
      case Checkpointing::none:
        break;
      case Checkpointing::selective:
        args += " --recompute-granularity selective";
        break;
      case Checkpointing::full:
      case Checkpointing::full_offload:  // refused for megatron by make_layout
        args += " --recompute-granularity full --recompute-method uniform";
        break;
    }
    if (t.strategy == Strategy::zero1) args += " --use-distributed-optimizer";
    if (t.precision == Precision::bf16_mixed || t.precision == Precision::bf16_true)
      args += " --bf16";
    if (is_fp16(t.precision)) args += " --fp16";
    if (t.attention == Attention::flash) args += " --use-flash-attn";
    out.text = launcher + args + "\n";
    return out;
  }
  std::string args = fmt::format(
      " train.py --model_name_or_path {} --per_device_train_batch_size {} "
      "--gradient_accumulation_steps {}",
      a.name, t.micro_batch, t.grad_accum);
  if (t.precision == Precision::bf16_mixed || t.precision == Precision::bf16_true)
    args += " --bf16";
  if (is_fp16(t.precision)) args += " --fp16";
  if (t.checkpointing != Checkpointing::none) args += " --gradient_checkpointing";
  const std::string optim = trainer_optim(t);
  if (!optim.empty() && !uses_deepspeed(t)) args += " --optim " + optim;
  if (uses_deepspeed(t)) {
    args += " --deepspeed ds_config.json";
    out.notes.push_back("write ds_config.json with --emit deepspeed");
  } else if (is_fsdp(t.strategy)) {
    std::string fsdp = t.strategy == Strategy::fsdp_full      ? "full_shard"
                       : t.strategy == Strategy::fsdp_grad_op ? "shard_grad_op"
                                                              : "hybrid_shard";
    if (t.fsdp_wrap == FsdpWrap::block) fsdp += " auto_wrap";
    if (t.offload != Offload::none) fsdp += " offload";
    args += fmt::format(" --fsdp \"{}\"", fsdp);
  }
  args += " --attn_implementation " + hf_attention(t.attention);
  out.text = launcher + args + "\n";
  note_loss_scaling(t, out.notes);
  note_parallelism(t, "a Hugging Face Trainer launch", out.notes);
  return out;
}

Emitted emit(EmitFormat f, const Estimate& e, const hardware::Cluster& c,
             const model::Architecture& a) {
  // Never write a config the GPU cannot run (bf16 or FlashAttention-2 on a V100).
  hardware::require_supported(c.gpu, e.training.precision, e.training.attention);
  switch (f) {
    case EmitFormat::deepspeed:
      return emit_deepspeed(e);
    case EmitFormat::accelerate:
      return emit_accelerate(e, c);
    case EmitFormat::torchrun:
      return emit_torchrun(e, c, a);
  }
  return {};
}

}  // namespace trainplan::planner
