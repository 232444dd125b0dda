#include "options.hpp"

#include <algorithm>

#include "trainplan/core/error.hpp"
#include "trainplan/model/lora.hpp"

namespace trainplan::cli {
namespace {

template <class E>
E option_enum(const std::string& flag, const std::string& value) {
  try {
    return parse_enum<E>(value);
  } catch (const InputError& e) {
    throw InputError(flag + ": " + e.what());
  }
}

}  // namespace

void add_training_options(CLI::App& cmd, TrainingOptions& o) {
  cmd.add_option("model", o.model, "catalogue name, Hugging Face id, size alias (13b) or config.json path")->required();
  cmd.add_option("cluster", o.cluster, "4xA100-80GB, A100-80GB, 2x8xH100-80GB, a family (A100) or a cluster JSON")
      ->required();
  auto g = [&](const char* name, auto& field, const char* help) { return cmd.add_option(name, field, help); };
  g("--method", o.method, "full | lora | qlora (default full)");
  g("--precision", o.precision,
    "fp32 | fp16-mixed | bf16-mixed | fp16-true | bf16-true (default bf16-mixed where the GPU "
    "has bf16 tensor cores, else fp16-mixed)");
  g("--optimizer", o.optimizer, "adamw | adam | sgd | sgd-momentum | adamw-8bit | paged-adamw-8bit | adafactor");
  g("--optimizer-impl", o.optimizer_impl,
    "default | foreach | fused | for-loop | deepspeed-fused | deepspeed-cpu: how the step runs "
    "(default: the framework's own, torch foreach on CUDA)");
  g("--strategy", o.strategy, "single | ddp | zero1 | zero2 | zero3 | fsdp-full | fsdp-grad-op | fsdp-hybrid");
  g("--tp", o.tp, "tensor-parallel degree (default 1)");
  g("--pp", o.pp, "pipeline-parallel degree (default 1)");
  g("--pp-virtual", o.pp_virtual, "interleaved pipeline chunks per stage (default 1)");
  cmd.add_flag("--sequence-parallel", o.sequence_parallel, "shard norms and dropout along the sequence (with --tp)");
  g("--expert-parallel", o.expert_parallel, "MoE: spread the experts over this many data-parallel ranks (default 1)");
  g("--micro-batch", o.micro_batch, "sequences per GPU per step (default 1)");
  g("--grad-accum", o.grad_accum, "micro-batches per optimizer step (default 1)");
  g("--seq", o.seq, "sequence length in tokens (default min(2048, model maximum))");
  g("--checkpointing", o.checkpointing, "none | selective | full | full-offload");
  g("--attention", o.attention,
    "flash | sdpa | eager (default flash where the GPU runs FlashAttention-2, else sdpa)");
  g("--offload", o.offload, "none | optimizer | optimizer+params");
  g("--lora-rank", o.lora_rank, "LoRA rank r (default 16)");
  g("--lora-alpha", o.lora_alpha, "LoRA alpha (default 32)");
  g("--lora-dropout", o.lora_dropout, "LoRA dropout (default 0.05)");
  g("--lora-targets", o.lora_targets, "q,v | all-linear | module names (default q,v)");
  cmd.add_flag("--frozen-base-fp32", o.frozen_base_fp32,
               "adapters under *-mixed: the frozen base stays fp32 (litgpt; from_pretrained without "
               "torch_dtype) instead of 16-bit");
  g("--quant", o.quant, "QLoRA base quantization: nf4 | nf4-dq | fp4 | int8 (default nf4)");
  g("--quant-block", o.quant_block, "QLoRA 4-bit blocksize: weights per absmax constant (default 64)");
  g("--fsdp-wrap", o.fsdp_wrap, "block (one unit per transformer block) | none (whole model, default block)");
  g("--framework", o.framework, "pytorch | deepspeed | megatron accounting conventions (default pytorch)");
  g("--inter-node", o.inter_node, "NICs per node x rate, e.g. 8x200Gbps");
  g("--host-memory", o.host_memory_gib,
    "CPU memory per node in GiB for offloaded states and checkpoints (default: not checked)");
  cmd.add_flag("--json", o.json, "print JSON instead of tables");
}

void add_time_options(CLI::App& cmd, TrainingOptions& o, bool plan) {
  cmd.add_option("--global-batch", o.global_batch, "sequences per optimizer step (micro-batch x grad-accum x DP)");
  cmd.add_option("--global-batch-tokens", o.global_batch_tokens, "tokens per optimizer step (a multiple of --seq)");
  cmd.add_option("--profile", o.profile, "hardware profile JSON from trainplan calibrate fit");
  cmd.add_option("--tokens", o.tokens, "time to train this many tokens: 300B, 1T, 2.5e12 (K/M/B/T suffixes)");
  cmd.add_option("--emit", o.emit, "print the launch config of the plan: deepspeed | accelerate | torchrun");
  cmd.add_flag("--zero-plus-plus", o.zero_plus_plus, "DeepSpeed ZeRO++ (quantized gathers, hpZ, qgZ) with zero3");
  if (plan) {
    cmd.add_option("--top", o.top, "plans to show (default 5)");
    cmd.add_flag("--tp-across-nodes", o.tp_across_nodes, "also try tensor parallelism wider than a node");
  }
}

Resolved resolve(const io::Catalog& catalog, const TrainingOptions& o) {
  Resolved r{catalog.resolve_model(o.model), catalog.resolve_cluster(o.cluster, o.inter_node), {}};
  if (o.host_memory_gib) {
    if (!(*o.host_memory_gib > 0.0))
      throw InputError("--host-memory must be a positive number of GiB per node (got " +
                       std::to_string(*o.host_memory_gib) + ")");
    r.cluster.cluster.host_memory = gib(*o.host_memory_gib);
  }
  const model::Architecture& a = r.model.arch;
  model::Training& t = r.request.base;
  if (o.method) t.method = option_enum<Method>("--method", *o.method);
  // Left out, the precision and attention kernel follow the GPU; named, the GPU must run them.
  const hardware::GpuSpec& gpu = r.cluster.cluster.gpu;
  t.precision = o.precision ? option_enum<Precision>("--precision", *o.precision)
                            : hardware::default_precision(gpu);
  if (o.optimizer) t.optimizer = option_enum<Optimizer>("--optimizer", *o.optimizer);
  t.attention = o.attention ? option_enum<Attention>("--attention", *o.attention)
                            : hardware::default_attention(gpu);
  hardware::require_supported(gpu, t.precision, t.attention);
  if (!o.precision && !gpu.capabilities.bf16)
    r.cluster.notes.push_back("precision " + std::string(to_string(t.precision)) + ": " + gpu.name +
                              " has no bf16 tensor cores (--precision to choose)");
  if (!o.attention && t.attention != Attention::flash)
    r.cluster.notes.push_back("attention " + std::string(to_string(t.attention)) + ": " + gpu.name +
                              " cannot run FlashAttention-2 (--attention to choose)");
  if (o.quant) t.quant = option_enum<Quant>("--quant", *o.quant);
  if (o.fsdp_wrap) t.fsdp_wrap = option_enum<FsdpWrap>("--fsdp-wrap", *o.fsdp_wrap);
  if (o.framework) t.framework = option_enum<Framework>("--framework", *o.framework);
  if (o.optimizer_impl)
    t.optimizer_impl = option_enum<OptimizerImpl>("--optimizer-impl", *o.optimizer_impl);
  if (o.strategy) r.request.strategy = option_enum<Strategy>("--strategy", *o.strategy);
  if (o.checkpointing) r.request.checkpointing = option_enum<Checkpointing>("--checkpointing", *o.checkpointing);
  if (o.offload) r.request.offload = option_enum<Offload>("--offload", *o.offload);
  if (o.quant && t.method != Method::qlora) throw InputError("--quant applies to --method qlora only");
  if (o.quant_block && t.method != Method::qlora)
    throw InputError("--quant-block applies to --method qlora only");
  if (o.quant_block) t.quant_block = *o.quant_block;
  t.tp = o.tp.value_or(1);
  t.pp = o.pp.value_or(1);
  t.pp_virtual = o.pp_virtual.value_or(1);
  t.sequence_parallel = o.sequence_parallel;
  t.ep = o.expert_parallel.value_or(1);
  t.frozen_base_fp32 = o.frozen_base_fp32;
  if (t.frozen_base_fp32 && (t.method == Method::full || !is_mixed(t.precision)))
    throw InputError("--frozen-base-fp32 applies to --method lora or qlora with a *-mixed precision");
  t.micro_batch = o.micro_batch.value_or(1);
  r.request.micro_batch_pinned = o.micro_batch.has_value();
  r.request.expert_parallel = o.expert_parallel;
  t.grad_accum = o.grad_accum.value_or(1);
  t.seq = o.seq.value_or(std::min<std::int64_t>(2048, a.max_seq));
  if (o.lora_rank) t.lora.rank = *o.lora_rank;
  if (o.lora_alpha) t.lora.alpha = *o.lora_alpha;
  if (o.lora_dropout) {
    if (*o.lora_dropout < 0 || *o.lora_dropout >= 1) throw InputError("--lora-dropout must be in [0, 1)");
    t.lora.dropout = *o.lora_dropout;
  }
  if (o.lora_targets) t.lora.targets = model::split_targets(*o.lora_targets);
  if ((o.lora_rank || o.lora_alpha || o.lora_targets) && t.method == Method::full)
    throw InputError("--lora-rank/--lora-alpha/--lora-targets need --method lora or qlora");
  if (t.lora.rank < 1) throw InputError("--lora-rank must be at least 1 (got " + std::to_string(t.lora.rank) + ")");
  if (t.method != Method::full) (void)model::lora_parameters(a, t.lora);  // validates the targets
  if (t.method == Method::qlora && is_mixed(t.precision) == false && t.precision == Precision::fp32)
    throw InputError("--method qlora computes in 16-bit: use a bf16 or fp16 precision");
  return r;
}

}  // namespace trainplan::cli
