#include "trainplan/planner/emit.hpp"

#include "emit_optimizer.hpp"
#include "trainplan/model/family.hpp"
#include "trainplan/model/fp8.hpp"
#include "trainplan/model/partial.hpp"
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace trainplan::planner {
namespace {

using namespace emit_detail;

bool uses_deepspeed(const model::Training& t) {
  return t.framework == Framework::deepspeed || t.strategy == Strategy::zero1 ||
         t.strategy == Strategy::zero2 || t.strategy == Strategy::zero3;
}

// micro-batch x accumulation x data-parallel degree, the batch every framework checks
// (DeepSpeed's DeepSpeedConfig._batch_assertion, Megatron's --global-batch-size).
std::int64_t checked_global_batch(const Estimate& e) {
  const std::int64_t b = e.training.micro_batch * e.training.grad_accum * e.layout.dp;
  if (b != e.global_batch)
    throw std::logic_error(fmt::format("estimate's global batch {} != {} x {} x {}", e.global_batch,
                                       e.training.micro_batch, e.training.grad_accum, e.layout.dp));
  return b;
}

// The launchers below express data parallelism with ZeRO/FSDP only: no tensor, pipeline or
// expert parallelism, no Megatron-style selective recomputation, no layer-selective checkpointing.
void require_data_parallel_only(const model::Training& t, const std::string& format,
                                const std::string& what) {
  if (t.tp > 1 || t.pp > 1) {
    const std::string degrees =
        t.tp > 1 && t.pp > 1
            ? fmt::format("tensor parallelism {} / pipeline parallelism {}", t.tp, t.pp)
            : t.tp > 1 ? fmt::format("tensor parallelism {}", t.tp)
                       : fmt::format("pipeline parallelism {}", t.pp);
    refuse(format, fmt::format("{} cannot express {}; use {{emit}} torchrun with {{framework}} "
                               "megatron (Megatron-LM)",
                               what, degrees));
  }
  if (t.ep > 1)
    refuse(format, fmt::format("{} cannot express expert parallelism {} (it is set in the model's "
                               "MoE layers); use {{emit}} torchrun with {{framework}} megatron",
                               what, t.ep));
  if (t.checkpointing == Checkpointing::selective)
    refuse(format, fmt::format("{} cannot express selective recomputation (Megatron-LM's); plan with "
                               "{{checkpointing}} full or none", what));
  // Some blocks, or groups of blocks, checkpointed: torchtitan's job config, Megatron-LM's flags.
  if (t.checkpointing == Checkpointing::full && (model::picks_some_blocks(t) || t.checkpoint_group > 1)) {
    const char* option = t.checkpoint_every > 1    ? "checkpoint-every"
                         : t.checkpoint_layers > 0 ? "checkpoint-layers"
                                                   : "checkpoint-group";
    refuse(format, fmt::format("{} cannot express {} checkpointing (torchtitan's job config, Megatron-LM's "
                               "--recompute-method); plan with {{{}}} {}",
                               what, model::checkpointing_text(t), option, t.checkpoint_layers > 0 ? 0 : 1));
  }
}

// DeepSpeed's ZeRO stage for each strategy (FSDP FULL_SHARD = stage 3, SHARD_GRAD_OP = 2).
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

// The zero_optimization section: stage, offload (ZeRO-Offload) and ZeRO++ (DeepSpeed
// runtime/zero/config.py, v0.19.6; ZeRO++ tutorial, deepspeed.ai/tutorials/zeropp/).
OJson deepspeed_zero(const Estimate& e, const EmitContext& x) {
  const model::Training& t = e.training;
  const int stage = zero_stage(t.strategy);
  OJson z = {{"stage", stage}, {"overlap_comm", !t.no_overlap_comm}, {"contiguous_gradients", true}};
  if (t.offload != Offload::none) {
    if (stage == 0)
      refuse("deepspeed", fmt::format("DeepSpeed offloads the optimizer only with ZeRO stage 1-3, "
                                      "not with {}",
                                      to_string(t.strategy)));
    z["offload_optimizer"] = {{"device", "cpu"}, {"pin_memory", true}};
  }
  if (t.offload == Offload::optimizer_params) {
    if (stage != 3)
      refuse("deepspeed", fmt::format("DeepSpeed offloads parameters only with ZeRO stage 3, not "
                                      "{}",
                                      to_string(t.strategy)));
    z["offload_param"] = {{"device", "cpu"}, {"pin_memory", true}};
  }
  // Hybrid sharding was DeepSpeed's MiCS (mics_shard_size), which DeepSpeed 0.19.8's config
  // rejects as removed (deepspeedai/DeepSpeed issue 8489).
  if (t.strategy == Strategy::fsdp_hybrid)
    refuse("deepspeed", "DeepSpeed has no hybrid sharding (its MiCS is removed); plan with "
                        "{strategy} zero3 ({zero-plus-plus} adds node-local gathers), or {emit} "
                        "accelerate or torchrun for FSDP's HYBRID_SHARD");
  if (stage == 3) z["stage3_gather_16bit_weights_on_model_save"] = true;
  if (x.zero_plus_plus) {
    if (t.strategy != Strategy::zero3)
      refuse("deepspeed", fmt::format("ZeRO++ needs ZeRO stage 3 ({{strategy}} zero3), not {}",
                                      to_string(t.strategy)));
    z["zero_quantized_weights"] = true;
    z["zero_hpz_partition_size"] = e.layout.gpus_per_node;
    z["zero_quantized_gradients"] = true;
  }
  return z;
}

// accelerate's and the Trainer's mixed_precision (no/fp16/bf16); pure 16-bit loads the model in
// that dtype instead (a script change, see note_script_changes).
std::string mixed_precision(Precision p) {
  switch (p) {
    case Precision::fp16_mixed:
      return "fp16";
    case Precision::bf16_mixed:
      return "bf16";
    case Precision::fp32:
    case Precision::fp16_true:
    case Precision::bf16_true:
      return "no";
  }
  return "no";
}

// FSDP shards the optimizer state with the parameters: CPUOffload moves parameters, gradients and
// the optimizer step together, so an optimizer-only offload has no FSDP form.
void require_fsdp_offload(const model::Training& t, const std::string& format) {
  if (is_fsdp(t.strategy) && t.offload == Offload::optimizer)
    refuse(format, "FSDP cannot offload the optimizer alone (its CPU offload moves parameters, "
                   "gradients and the optimizer step together); plan with {offload} "
                   "optimizer+params, or {strategy} zero2/zero3 with the DeepSpeed optimizer "
                   "offload");
}

std::string fsdp_sharding(Strategy s) {
  switch (s) {
    case Strategy::fsdp_grad_op:
      return "SHARD_GRAD_OP";
    case Strategy::fsdp_hybrid:
      return "HYBRID_SHARD";
    case Strategy::fsdp_full:
    case Strategy::zero3:
    case Strategy::zero2:
    case Strategy::zero1:
    case Strategy::single:
    case Strategy::ddp:
      return "FULL_SHARD";
  }
  return "FULL_SHARD";
}

const char* yaml_bool(bool b) { return b ? "true" : "false"; }

// The machine lines of an accelerate config; addresses of a multi-node run are placeholders.
std::string accelerate_machines(const hardware::Cluster& c, std::vector<std::string>& notes) {
  std::string s = fmt::format("num_machines: {}\nnum_processes: {}\n", c.nodes, c.world());
  if (c.nodes == 1) return s + "machine_rank: 0\n";
  notes.push_back(fmt::format(
      "multi-node: fill in main_process_ip (machine 0's address, reachable from all {} machines) "
      "and a free main_process_port; each machine runs accelerate launch with its own "
      "machine_rank (0 to {})",
      c.nodes, c.nodes - 1));
  return s +
         "machine_rank: 0  # FILL IN: this machine's rank, 0 on the main machine\n"
         "main_process_ip: FILL_IN_MAIN_MACHINE_IP  # FILL IN\n"
         "main_process_port: 29500  # FILL IN: a free port on the main machine\n";
}

std::string accelerate_deepspeed(const Estimate& e, const hardware::Cluster& c, const EmitContext& x,
                                 std::vector<std::string>& notes) {
  const model::Training& t = e.training;
  // Validates the plan the way the DeepSpeed config would (stage, offload, ZeRO++).
  const OJson z = deepspeed_zero(e, x);
  std::string s = "distributed_type: DEEPSPEED\ndeepspeed_config:\n";
  if (c.nodes > 1) s += "  deepspeed_multinode_launcher: standard\n";
  // accelerate's generated config leaves overlap_comm to DeepSpeed: on at stage 3 only.
  const bool overlap_as_planned = (z["stage"].get<int>() == 3) != t.no_overlap_comm;
  if (x.zero_plus_plus || t.offload != Offload::none || !is_adam(t.optimizer) || !overlap_as_planned ||
      t.bf16_master) {
    // accelerate's inline keys have no ZeRO++, optimizer, overlap_comm or bf16 master weights
    // (ZeRO-Offload needs DeepSpeed's CPU Adam): the full DeepSpeed config.
    notes.push_back("write ds_config.json with {emit} deepspeed (same plan options)");
    return s + "  deepspeed_config_file: ds_config.json\n  zero3_init_flag: " +
           yaml_bool(z["stage"] == 3) + "\n";
  }
  return s + fmt::format(
                 "  zero_stage: {}\n"
                 "  gradient_accumulation_steps: {}\n"
                 "  gradient_clipping: 1.0\n"
                 "  offload_optimizer_device: {}\n"
                 "  offload_param_device: {}\n"
                 "  zero3_init_flag: {}\n"
                 "  zero3_save_16bit_model: {}\n",
                 z["stage"].get<int>(), t.grad_accum, t.offload != Offload::none ? "cpu" : "none",
                 t.offload == Offload::optimizer_params ? "cpu" : "none", yaml_bool(z["stage"] == 3),
                 yaml_bool(z["stage"] == 3));
}

std::string accelerate_fsdp(const model::Training& t, const Layout& l, const model::Architecture& a,
                            std::vector<std::string>& notes) {
  std::string wrap = "  fsdp_auto_wrap_policy: NO_WRAP\n";
  if (t.fsdp_wrap == FsdpWrap::block) {
    wrap = "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n";
    if (const auto cls = hf_block_class(a.family))
      wrap += "  fsdp_transformer_layer_cls_to_wrap: " + *cls + "\n";
    else
      notes.push_back(fmt::format(
          "no block class known for model_type '{}': accelerate wraps the classes in the model's "
          "_no_split_modules; set fsdp_transformer_layer_cls_to_wrap if it has none",
          a.family));
  }
  if (t.fsdp_version == 2) {
    // accelerate's FSDP2 keys (utils/dataclasses.py FullyShardedDataParallelPlugin): sharding is
    // reshard_after_forward; HSDP is its ParallelismConfig's replicate and shard sizes.
    const std::string hsdp =
        t.strategy == Strategy::fsdp_hybrid
            ? fmt::format("parallelism_config:\n  parallelism_config_dp_replicate_size: {}\n"
                          "  parallelism_config_dp_shard_size: {}\n",
                          l.replicas() / l.shard, l.shard)
            : std::string();
    return hsdp + fmt::format(
        "distributed_type: FSDP\n"
        "fsdp_config:\n"
        "  fsdp_version: 2\n"
        "  fsdp_reshard_after_forward: {}\n"
        "{}"
        "  fsdp_offload_params: {}\n"
        "  fsdp_state_dict_type: SHARDED_STATE_DICT\n"
        "  fsdp_cpu_ram_efficient_loading: true\n"
        "  fsdp_activation_checkpointing: {}\n",
        yaml_bool(t.strategy != Strategy::fsdp_grad_op), wrap, yaml_bool(t.offload == Offload::optimizer_params),
        yaml_bool(t.checkpointing != Checkpointing::none));
  }
  return fmt::format(
      "distributed_type: FSDP\n"
      "fsdp_config:\n"
      "  fsdp_version: 1\n"
      "  fsdp_sharding_strategy: {}\n"
      "{}"
      "  fsdp_backward_prefetch: BACKWARD_PRE\n"
      "  fsdp_forward_prefetch: false\n"
      "  fsdp_offload_params: {}\n"
      "  fsdp_state_dict_type: SHARDED_STATE_DICT\n"
      "  fsdp_use_orig_params: true\n"
      "  fsdp_cpu_ram_efficient_loading: true\n"
      "  fsdp_sync_module_states: true\n"
      "  fsdp_activation_checkpointing: {}\n",
      fsdp_sharding(t.strategy), wrap, yaml_bool(t.offload == Offload::optimizer_params),
      yaml_bool(t.checkpointing != Checkpointing::none));
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
    case Attention::triton:
      break;  // refused by emit() before any emitter runs
  }
  return "sdpa";
}

std::string torchrun_launcher(const hardware::Cluster& c, std::vector<std::string>& notes) {
  if (c.nodes == 1) return fmt::format("torchrun --standalone --nproc_per_node={}", c.gpus_per_node);
  notes.push_back(fmt::format(
      "multi-node: run the command on each of the {} machines with NODE_RANK 0 to {} and "
      "MASTER_ADDR set to machine 0's address (placeholders in the command)",
      c.nodes, c.nodes - 1));
  return fmt::format(
      "torchrun --nnodes={} --nproc_per_node={} --node_rank=$NODE_RANK --rdzv_backend=c10d "
      "--rdzv_endpoint=$MASTER_ADDR:29500",
      c.nodes, c.gpus_per_node);
}

std::string trainer_args(const model::Training& t, const EmitContext& x,
                         std::vector<std::string>& notes) {
  std::string args = " train.py";
  if (x.hf_id) {
    args += " --model_name_or_path " + *x.hf_id;
  } else {
    args += " --model_name_or_path MODEL_NAME_OR_PATH";
    notes.push_back(
        "the model has no Hugging Face Hub id in the catalogue: replace MODEL_NAME_OR_PATH with "
        "its Hub id or a local directory holding config.json and the weights");
  }
  notes.push_back(
      "train.py: your script parsing transformers.TrainingArguments (e.g. transformers' "
      "examples/pytorch/language-modeling/run_clm.py with --dataset_name and --do_train)");
  args += fmt::format(" --per_device_train_batch_size {} --gradient_accumulation_steps {}",
                      t.micro_batch, t.grad_accum);
  if (is_bf16(t.precision) && !is_pure_16bit(t.precision)) args += " --bf16";
  if (is_fp16(t.precision) && !is_pure_16bit(t.precision)) args += " --fp16";
  if (t.checkpointing != Checkpointing::none) args += " --gradient_checkpointing";
  return args;
}

Emitted emit_trainer(const Estimate& e, const hardware::Cluster& c, const EmitContext& x) {
  const model::Training& t = e.training;
  require_data_parallel_only(t, "torchrun", "a Hugging Face Trainer launch");
  require_fsdp_offload(t, "torchrun");
  if (x.zero_plus_plus && !uses_deepspeed(t))
    refuse("torchrun", "ZeRO++ is DeepSpeed's: plan with {strategy} zero3");
  Emitted out;
  const std::string launcher = torchrun_launcher(c, out.notes);
  std::string args = trainer_args(t, x, out.notes);
  const std::string optim = trainer_optim(t);
  const bool ds_has_optimizer = uses_deepspeed(t) && in_deepspeed_section(t.optimizer);
  if (t.optimizer == Optimizer::lamb && !ds_has_optimizer)
    refuse("torchrun", "the Trainer has no --optim for LAMB (DeepSpeed's optimizer section has); plan "
                       "with {framework} deepspeed");
  if (!optim.empty() && !ds_has_optimizer) args += " --optim " + optim;
  if (uses_deepspeed(t)) {
    (void)emit_deepspeed(e, x);  // refuses what the DeepSpeed config cannot express
    args += " --deepspeed ds_config.json";
    out.notes.push_back("write ds_config.json with {emit} deepspeed (same plan options)");
  } else if (is_fsdp(t.strategy)) {
    std::string fsdp = t.strategy == Strategy::fsdp_full      ? "full_shard"
                       : t.strategy == Strategy::fsdp_grad_op ? "shard_grad_op"
                                                              : "hybrid_shard";
    if (t.fsdp_wrap == FsdpWrap::block) fsdp += " auto_wrap";
    if (t.offload == Offload::optimizer_params) fsdp += " offload";
    args += fmt::format(" --fsdp \"{}\"", fsdp);
    // fsdp_config's "version" (transformers training_args.py); its default became 2 with PR #45640.
    if (t.fsdp_version == 2) args += " --fsdp_config '{\"version\": 2}'";
  } else if (t.offload != Offload::none) {
    refuse("torchrun", "DDP cannot offload the optimizer; plan with {strategy} zero1/zero2/zero3 "
                       "(DeepSpeed) or FSDP");
  }
  if (t.sync_each_batch && !uses_deepspeed(t))
    args += " --accelerator_config '{\"gradient_accumulation_kwargs\": {\"sync_each_batch\": true}}'";
  args += " --attn_implementation " + hf_attention(t.attention);
  out.text = launcher + args + "\n";
  if (t.precision == Precision::fp16_mixed)
    out.notes.push_back("fp16-mixed: the loss is scaled dynamically (the Trainer's torch.amp.GradScaler)");
  note_script_changes(t, out.notes);
  return out;
}

// Megatron-LM's pretrain_gpt.py: the model's shape. Flags as defined in megatron/training/
// arguments.py and the TransformerConfig fields it exposes (NVIDIA/Megatron-LM @d98e8a64, core 0.20.0).
std::string megatron_model_args(const model::Architecture& a, const model::Training& t) {
  if (a.encoder_decoder)
    refuse("torchrun", fmt::format("Megatron-LM's pretrain_gpt.py trains decoder-only models; {} "
                                   "is encoder-decoder",
                                   a.name));
  if (a.position == model::PositionKind::alibi || a.position == model::PositionKind::relative)
    refuse("torchrun", fmt::format("Megatron-LM's GPT model has no {} position encoding ({})",
                                   a.position == model::PositionKind::alibi ? "ALiBi" : "relative",
                                   a.name));
  if (a.mlp == model::MlpKind::gated && a.activation != model::Activation::silu)
    refuse("torchrun", fmt::format("Megatron-LM's flags express a gated MLP only as SwiGLU; {} "
                                   "gates with GELU",
                                   a.name));
  std::string s = fmt::format(
      " --num-layers {} --hidden-size {} --num-attention-heads {} --ffn-hidden-size {} "
      "--seq-length {} --max-position-embeddings {}",
      a.layers, a.hidden, a.heads, a.intermediate, t.seq, std::max(a.max_seq, t.seq));
  if (a.kv_heads != a.heads)
    s += fmt::format(" --group-query-attention --num-query-groups {}", a.kv_heads);
  if (a.head_dim * a.heads != a.hidden) s += fmt::format(" --kv-channels {}", a.head_dim);
  if (a.mlp == model::MlpKind::gated) s += " --swiglu";
  if (a.norm == model::NormKind::rmsnorm) s += " --normalization RMSNorm";
  if (a.position == model::PositionKind::rotary) {
    s += " --position-embedding-type rope";
    if (a.rotary_fraction < 1.0) s += fmt::format(" --rotary-percent {}", a.rotary_fraction);
  }
  if (!a.tie_embeddings) s += " --untie-embeddings-and-output-weights";
  if (!a.out_bias && !a.mlp_bias) s += " --disable-bias-linear";
  if (a.qkv_bias && !a.out_bias) s += " --add-qkv-bias";
  if (a.is_moe()) s += fmt::format(" --num-experts {} --moe-router-topk {}", a.experts, a.experts_per_token);
  return s;
}

// Megatron-LM's pretrain_gpt.py: parallelism, batch, precision, recomputation and optimizer.
std::string megatron_training_args(const Estimate& e, const model::Architecture& a) {
  const model::Training& t = e.training;
  std::string s = fmt::format(
      " --tensor-model-parallel-size {} --pipeline-model-parallel-size {} --micro-batch-size {} "
      "--global-batch-size {}",
      t.tp, t.pp, t.micro_batch, checked_global_batch(e));
  if (t.pp_virtual > 1) {
    const std::int64_t chunks = static_cast<std::int64_t>(t.pp) * t.pp_virtual;
    if (a.layers % chunks != 0)
      refuse("torchrun", fmt::format("{} layers do not split into PP {} x {} virtual stages",
                                     a.layers, t.pp, t.pp_virtual));
    s += fmt::format(" --num-layers-per-virtual-pipeline-stage {}", a.layers / chunks);
  }
  if (t.sequence_parallel) s += t.tp_comm_overlap ? " --sequence-parallel --tp-comm-overlap" : " --sequence-parallel";
  if (t.ep > 1) s += fmt::format(" --expert-model-parallel-size {}", t.ep);
  if (t.cp > 1) {
    const auto kind = std::find_if(kMegatronCpCommTypes.begin(), kMegatronCpCommTypes.end(),
                                   [&](const auto& k) { return k.first == t.cp_comm; });
    s += fmt::format(" --context-parallel-size {} --cp-comm-type {}", t.cp, kind->second);
  }
  if (t.moe_capacity_factor > 0.0) s += fmt::format(" --moe-expert-capacity-factor {}", t.moe_capacity_factor);
  if (t.moe_pad_to_capacity) s += " --moe-pad-expert-input-to-capacity";
  if (t.offload_activation_layers > 0) s += fmt::format(" --cpu-offloading --cpu-offloading-num-layers {}", t.offload_activation_layers);
  for (const auto& [flag, p] : {std::pair{"hidden", t.hidden_dropout}, std::pair{"attention", t.attention_dropout}})
    if (p) s += fmt::format(" --{}-dropout {}", flag, *p);
  if (t.precision == Precision::bf16_mixed) s += " --bf16";
  for (const model::MegatronFp8Recipe& m : model::kMegatronFp8Recipes)  // others: require_emittable
    if (m.recipe == t.fp8)
      s += fmt::format(" --fp8-format {} --fp8-recipe {}{}", m.format, m.name, t.fp8_param_gather ? " --fp8-param-gather" : "");
  if (t.precision == Precision::fp16_mixed) s += " --fp16";  // dynamic loss scaling by default
  switch (t.checkpointing) {
    case Checkpointing::none:
      break;
    case Checkpointing::selective:
      s += " --recompute-granularity selective";
      break;
    case Checkpointing::full:
      s += t.checkpoint_layers > 0
               ? fmt::format(" --recompute-granularity full --recompute-method block --recompute-num-layers {}",
                             t.checkpoint_layers)
               : fmt::format(" --recompute-granularity full --recompute-method uniform --recompute-num-layers {}",
                             t.checkpoint_group);
      break;
    case Checkpointing::full_offload:
      refuse("torchrun", "Megatron-LM has no activation offload to the host in pretrain_gpt.py");
    case Checkpointing::selective_op:  // refused for every format by require_emittable
      break;
  }
  if (t.strategy == Strategy::zero1) s += " --use-distributed-optimizer";
  if (t.strategy == Strategy::zero2 || t.strategy == Strategy::zero3)
    s += fmt::format(" --use-megatron-fsdp --data-parallel-sharding-strategy {}",
                     t.strategy == Strategy::zero2 ? "optim_grads" : "optim_grads_params");
  if (t.strategy == Strategy::fsdp_full) s += " --use-torch-fsdp2";
  s += is_adam(t.optimizer) ? " --optimizer adam"
                            : fmt::format(" --optimizer sgd --sgd-momentum {}",
                                          t.optimizer == Optimizer::sgd ? "0" : "0.9");
  // HybridDeviceOptimizer: optimizer states and step on the host (arguments.py requires the
  // precision-aware optimizer with it).
  if (t.offload == Offload::optimizer)
    s += " --optimizer-cpu-offload --use-precision-aware-optimizer --optimizer-offload-fraction 1.0";
  if (t.attention == Attention::flash) s += " --attention-backend flash";
  if (t.attention == Attention::eager) s += " --attention-backend unfused";
  return s;
}

void require_megatron(const model::Training& t) {
  auto no = [](const std::string& what) { refuse("torchrun", "Megatron-LM cannot " + what); };
  if (t.method != Method::full) no(fmt::format("train {} adapters (pretrain_gpt.py trains all weights)", to_string(t.method)));
  if (t.strategy == Strategy::fsdp_grad_op || t.strategy == Strategy::fsdp_hybrid)
    no(fmt::format("run {} from pretrain_gpt.py's flags here (DDP, the distributed optimizer, Megatron FSDP "
                   "as zero2/zero3, or PyTorch's FSDP2 as fsdp-full)",
                   to_string(t.strategy)));
  if (t.offload == Offload::optimizer_params)
    no("offload parameters (only the optimizer: --optimizer-cpu-offload)");
  if (t.offload == Offload::optimizer && !is_adam(t.optimizer))
    no("offload a non-Adam optimizer (its CPU offload is Adam only)");
  if (!is_adam(t.optimizer) && t.optimizer != Optimizer::sgd && t.optimizer != Optimizer::sgd_momentum)
    no(fmt::format("train with {} (its --optimizer takes adam or sgd)", to_string(t.optimizer)));
  if (is_pure_16bit(t.precision))
    no(fmt::format("train in {} (its --bf16/--fp16 keep fp32 main weights)",
                   to_string(t.precision)));
}

Emitted emit_megatron(const Estimate& e, const hardware::Cluster& c, const model::Architecture& a,
                      const EmitContext& x) {
  const model::Training& t = e.training;
  require_megatron(t);
  if (x.zero_plus_plus) refuse("torchrun", "ZeRO++ is DeepSpeed's, not Megatron-LM's");
  Emitted out;
  const std::string launcher = torchrun_launcher(c, out.notes);
  std::string args = " pretrain_gpt.py" + megatron_model_args(a, t) + megatron_training_args(e, a);
  if (x.hf_id) {
    args += " --tokenizer-type HuggingFaceTokenizer --tokenizer-model " + *x.hf_id;
  } else {
    out.notes.push_back(fmt::format("add the tokenizer of {} (--tokenizer-type, --tokenizer-model); "
                                    "its vocabulary is {}",
                                    a.name, a.vocab));
  }
  if (t.attention == Attention::sdpa)
    out.notes.push_back("Megatron-LM picks its attention backend (auto); the plan assumed SDPA");
  out.notes.push_back("add the data and schedule: --data-path (or --mock-data), --train-iters, --lr");
  out.text = launcher + args + "\n";
  return out;
}

}  // namespace

std::optional<std::string> hf_block_class(const std::string& model_type) {
  // The decoder-block class of transformers' modeling_<type>.py (_no_split_modules).
  const model::Family* f = model::find_family(model_type);
  if (f == nullptr || f->block_class.empty()) return std::nullopt;
  return f->block_class;
}

Emitted emit_deepspeed(const Estimate& e, const EmitContext& x) {
  const model::Training& t = e.training;
  require_data_parallel_only(t, "deepspeed", "a DeepSpeed config (DeepSpeed alone; Megatron-DeepSpeed "
                                            "adds TP/PP)");
  if (is_pure_16bit(t.precision))
    refuse("deepspeed", fmt::format("DeepSpeed's bf16/fp16 modes keep fp32 master weights: it "
                                    "cannot train in {}",
                                    to_string(t.precision)));
  Emitted out;
  OJson j;
  // DeepSpeed asserts train_batch_size == micro-batch x accumulation x data-parallel ranks.
  j["train_batch_size"] = checked_global_batch(e);
  j["train_micro_batch_size_per_gpu"] = t.micro_batch;
  j["gradient_accumulation_steps"] = t.grad_accum;
  if (is_bf16(t.precision)) j["bf16"] = {{"enabled", true}};
  if (t.bf16_master) j["bf16"]["bf16_master_weights_and_grads"] = true;
  if (t.bf16_optimizer_states) j["bf16"]["bf16_optimizer_states"] = true;
  // Dynamic loss scaling: loss_scale 0 (DeepSpeed config-json docs, "fp16 training options").
  if (is_fp16(t.precision))
    j["fp16"] = {{"enabled", true},       {"loss_scale", 0},  {"initial_scale_power", 16},
                 {"loss_scale_window", 1000}, {"hysteresis", 2}, {"min_loss_scale", 1}};
  if (auto opt = deepspeed_optimizer(t, out.notes)) j["optimizer"] = *opt;
  j["gradient_clipping"] = 1.0;
  j["zero_optimization"] = deepspeed_zero(e, x);
  if (t.checkpointing != Checkpointing::none) {
    j["activation_checkpointing"] = {{"partition_activations", false},
                                     {"cpu_checkpointing", t.checkpointing == Checkpointing::full_offload},
                                     {"contiguous_memory_optimization", false},
                                     {"synchronize_checkpoint_boundary", false}};
    out.notes.push_back(
        "activation checkpointing: a Hugging Face model checkpoints with "
        "model.gradient_checkpointing_enable() (the Trainer's --gradient_checkpointing); the "
        "activation_checkpointing section applies to deepspeed.checkpointing.checkpoint");
  }
  j["wall_clock_breakdown"] = false;
  if (is_fsdp(t.strategy))
    out.notes.push_back(fmt::format("{} written as ZeRO stage {}", to_string(t.strategy),
                                    zero_stage(t.strategy)));
  note_script_changes(t, out.notes);
  out.text = j.dump(2) + "\n";
  return out;
}

Emitted emit_accelerate(const Estimate& e, const hardware::Cluster& c, const model::Architecture& a,
                        const EmitContext& x) {
  const model::Training& t = e.training;
  require_data_parallel_only(t, "accelerate", "an accelerate config (FSDP, DDP or DeepSpeed)");
  require_fsdp_offload(t, "accelerate");
  Emitted out;
  // 'no' and 'NO' quoted: YAML 1.1 (PyYAML) reads a bare no as false.
  const std::string mp = mixed_precision(t.precision);
  std::string s = fmt::format(
      "compute_environment: LOCAL_MACHINE\n"
      "debug: false\n"
      "mixed_precision: {}\n"
      "use_cpu: false\n",
      mp == "no" ? "'no'" : mp);
  s += accelerate_machines(c, out.notes);
  s += "main_training_function: main\nrdzv_backend: static\nsame_network: true\n";
  // The Accelerator compiles the model (accelerate commands/config/cluster.py dynamo_config).
  if (t.compile) s += "dynamo_config:\n  dynamo_backend: INDUCTOR\n";
  if (uses_deepspeed(t)) {
    s += accelerate_deepspeed(e, c, x, out.notes);
  } else if (x.zero_plus_plus) {
    refuse("accelerate", "ZeRO++ is DeepSpeed's: plan with {strategy} zero3");
  } else if (is_fsdp(t.strategy)) {
    s += accelerate_fsdp(t, e.layout, a, out.notes);
  } else {
    if (t.offload != Offload::none)
      refuse("accelerate", "DDP cannot offload the optimizer; plan with {strategy} "
                           "zero1/zero2/zero3 (DeepSpeed) or FSDP");
    s += c.world() > 1 ? "distributed_type: MULTI_GPU\n" : "distributed_type: 'NO'\n";
    if (t.checkpointing != Checkpointing::none)
      out.notes.push_back("activation checkpointing: model.gradient_checkpointing_enable()");
  }
  out.text = s;
  if (!uses_deepspeed(t))
    out.notes.push_back(fmt::format(
        "per-device batch {} with gradient accumulation {}: Accelerator(gradient_accumulation_steps="
        "{}) in the script (global batch {})",
        t.micro_batch, t.grad_accum, t.grad_accum, checked_global_batch(e)));
  if (t.sync_each_batch)
    out.notes.push_back("sync each batch: Accelerator(gradient_accumulation_plugin=GradientAccumulationPlugin("
                        "num_steps=..., sync_each_batch=True)) in the script");
  if (t.precision == Precision::fp16_mixed)
    out.notes.push_back("fp16-mixed: the loss is scaled dynamically (accelerate's torch.amp.GradScaler)");
  note_script_changes(t, out.notes);
  return out;
}

Emitted emit_torchrun(const Estimate& e, const hardware::Cluster& c, const model::Architecture& a,
                      const EmitContext& x) {
  if (e.training.framework == Framework::megatron) return emit_megatron(e, c, a, x);
  return emit_trainer(e, c, x);
}

Emitted emit(EmitFormat f, const Estimate& e, const hardware::Cluster& c,
             const model::Architecture& a, const EmitContext& x) {
  require_emittable(f, e.training, c.gpu);
  // FSDP1's HYBRID_SHARD builds its groups per node (no device mesh); accelerate's FSDP2 takes the
  // sizes from its parallelism_config.
  const bool mesh = f == EmitFormat::accelerate && e.training.fsdp_version == 2;
  if (e.training.strategy == Strategy::fsdp_hybrid && !mesh && e.layout.shard != node_hybrid_shard(e.layout))
    throw FieldError(fmt::format("{{hybrid-shard}} {}: FSDP1's HYBRID_SHARD shards within a node ({} ranks); "
                                 "accelerate's FSDP2 ({{fsdp-version}} 2, {{emit}} accelerate) takes other sizes",
                                 e.layout.shard, node_hybrid_shard(e.layout)));
  Emitted out;  // built first: what the format cannot express is refused, forced or not
  switch (f) {
    case EmitFormat::deepspeed:
      out = emit_deepspeed(e, x);
      break;
    case EmitFormat::accelerate:
      out = emit_accelerate(e, c, a, x);
      break;
    case EmitFormat::torchrun:
      out = emit_torchrun(e, c, a, x);
      break;
  }
  if (e.training.expandable_segments)
    out.notes.push_back("the environment of every rank: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (the plan's "
                        "memory assumes expandable segments)");
  if (!e.fits) {
    const std::string does_not_fit = fmt::format("this plan does not fit in memory ({:.1f} of {:.1f} GiB per GPU)",
                                                 to_gib(e.memory.device_total), to_gib(c.gpu.usable_memory));
    if (!x.force)
      throw EmitDoesNotFit(fmt::format("{{emit}} {}: {}; no launch config written ({{force}} writes one anyway)",
                                       to_string(f), does_not_fit));
    const std::string warning = "WARNING: written with --force: " + does_not_fit + "; it will run out of memory";
    if (f == EmitFormat::deepspeed) {
      const std::size_t open = out.text.find('{');
      out.text.insert(open + 1, "\n  \"trainplan_warning\": " + nlohmann::json(warning).dump() + ",");
    } else {
      out.text.insert(0, "# " + warning + "\n");
    }
    out.notes.insert(out.notes.begin(), "{force}: " + does_not_fit);
  }
  return out;
}

RankedEmit emit_first_expressible(EmitFormat f, const std::vector<Estimate>& plans,
                                  const hardware::Cluster& c, const model::Architecture& a,
                                  const EmitContext& x) {
  if (plans.empty())
    throw FieldError(fmt::format("{{emit}} {}: no plan fits, nothing to emit", to_string(f)));
  std::optional<EmitRefused> first;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    try {
      RankedEmit r{emit(f, plans[i], c, a, x), i};
      if (i > 0)
        r.emitted.notes.insert(
            r.emitted.notes.begin(),
            fmt::format("plan #{} written: the best-ranked plan {} can express (#1: {})", i + 1,
                        to_string(f), first->message_template()));
      return r;
    } catch (const EmitRefused& e) {
      if (!first) first = e;
    }
  }
  throw *first;
}

}  // namespace trainplan::planner
