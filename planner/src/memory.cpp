#include "trainplan/planner/memory.hpp"

#include "trainplan/planner/compute.hpp"
#include "trainplan/planner/optimizer_step.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "trainplan/core/checked.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/model/lora.hpp"
#include "trainplan/model/fp8.hpp"
#include "trainplan/model/library.hpp"
#include "trainplan/model/model_states.hpp"
#include "trainplan/model/partial.hpp"
#include "memory_checks.hpp"

namespace trainplan::planner {
namespace {

using model::Architecture;
using model::Training;

std::string str(std::int64_t v) { return std::to_string(v); }

bool framework_supports(Framework f, Strategy s) {
  switch (f) {
    case Framework::pytorch:
    case Framework::deepspeed: return true;
    case Framework::megatron:
      switch (s) {
        case Strategy::single:
        case Strategy::ddp:
        case Strategy::zero1: return true;  // zero1 = Megatron's distributed optimizer
        // Megatron-FSDP (--use-megatron-fsdp, megatron/core/distributed/fsdp): its
        // --data-parallel-sharding-strategy optim_grads (zero2) and optim_grads_params (zero3, the
        // default); and PyTorch's FSDP2 under Megatron (--use-torch-fsdp2: fsdp-full).
        case Strategy::zero2:
        case Strategy::zero3:
        case Strategy::fsdp_full: return true;
        case Strategy::fsdp_grad_op:
        case Strategy::fsdp_hybrid: return false;
      }
  }
  return false;
}

// Parameters on a pipeline stage of one tensor-parallel rank: the first stage holds the embedding
// and its share of blocks, the last its share of blocks, the final norm, the output layer and the
// multi-token prediction modules (one stage holds everything). Linear and embedding weights split
// over TP; norms are replicated; a MoE's experts split over EP.
struct StageParams {
  double all = 0;          // every parameter on this rank
  double block_linear = 0; // of which linear weights inside blocks (quantizable)
  double experts = 0;      // of which routed experts (this rank's 1/ep of them)
  double head = 0;         // the output layer on this rank (untied head, or the tied copy of the last stage)
  double largest_unit = 0; // one block (the FSDP wrap unit)
  double root = 0;         // what is outside the blocks: embeddings, final norm, head
  double embedding = 0;    // of which the input embedding (the first stage)
  bool holds_head = false; // the last stage (or the only one)
  bool holds_embedding = false;  // the first stage (or the only one)
};

StageParams stage_params(const Architecture& a, const model::ParameterCounts& n, const Layout& l,
                         model::PipelineStage stage = model::PipelineStage::first) {
  const double tp = l.tp;
  const bool first = stage == model::PipelineStage::first || l.pp == 1;
  const bool last = stage == model::PipelineStage::last || l.pp == 1;
  const double total_layers = static_cast<double>(a.total_layers());
  const double share = std::ceil(total_layers / l.pp) / total_layers;
  // The experts other EP ranks hold, out of every block.
  const double elsewhere = static_cast<double>(n.experts) * (1.0 - 1.0 / l.ep);
  const double block_linear = static_cast<double>(n.block_linears) - elsewhere;
  const double block_other = static_cast<double>(n.blocks - n.block_linears);
  StageParams s;
  s.holds_head = last;
  s.holds_embedding = first;
  s.experts = static_cast<double>(n.experts) / l.ep * share / tp;
  s.block_linear = block_linear * share / tp;
  // Tied embeddings split over stages: the last stage keeps its own copy of the word embedding as
  // the output layer (Megatron-LM's shared_embedding_or_output_weight, kept equal to the first
  // stage's by an all-reduce of their gradients).
  const double output = a.tie_embeddings && l.pp > 1 ? static_cast<double>(a.vocab * a.hidden)
                                                     : static_cast<double>(n.lm_head);
  s.head = last ? output / tp : 0.0;
  // Final norms, and the multi-token prediction modules (last stage), split over TP like blocks,
  // their experts over EP.
  const double finals = static_cast<double>(n.total - n.blocks - n.embedding - n.lm_head - n.mtp);
  const double mtp = (static_cast<double>(n.mtp) - static_cast<double>(n.mtp_experts) * (1.0 - 1.0 / l.ep)) / tp;
  s.embedding = first ? static_cast<double>(n.embedding) / tp : 0.0;
  s.root = s.embedding + s.head + (last ? finals + mtp : 0.0);
  s.all = s.block_linear + block_other * share + s.root;
  s.largest_unit = (static_cast<double>(n.blocks) - elsewhere) / total_layers / tp;
  return s;
}

// Trainable parameters on this rank (LoRA adapters split with their host layers).
// Under partial fine-tuning: the trained parameters of the stage's layers (the first stage's
// first layers, any other stage's as the last one's), linears split over TP, experts over EP.
model::SubsetParameters stage_subset(const Architecture& a, const model::ParameterCounts& n, const Training& tr,
                                     const Layout& l, const StageParams& s) {
  const std::int64_t per = (a.layers + l.pp - 1) / l.pp;
  const std::int64_t from = l.pp == 1 || s.holds_embedding ? 0 : a.layers - per;
  model::SubsetParameters sub =
      model::subset_parameters(a, n, tr, from, l.pp == 1 ? a.layers : from + per, s.holds_embedding, s.holds_head);
  sub.experts /= static_cast<double>(l.ep);
  sub.all = (sub.all - sub.experts * (l.ep - 1)) / l.tp;
  sub.experts /= l.tp;
  return sub;
}

// `sub`: the stage's subset under partial fine-tuning (stage_subset), else null.
double stage_trainable(const Architecture& a, const Training& tr, const Layout& l, const StageParams& s,
                       const model::SubsetParameters* sub) {
  if (sub != nullptr) return sub->all;
  if (tr.method == Method::full) return s.all;
  const double total_layers = static_cast<double>(a.total_layers());
  const double share = std::ceil(total_layers / l.pp) / total_layers;
  model::LoraConfig no_head = tr.lora;
  std::erase(no_head.targets, std::string("lm_head"));
  double adapters = static_cast<double>(model::lora_parameters(a, no_head)) * share / l.tp;
  if (s.holds_head && model::lora_targets_lm_head(a, tr.lora))
    adapters += static_cast<double>(tr.lora.rank * (a.hidden + a.vocab)) / l.tp;
  return adapters;
}

// Transformer Engine's cached FP8 weight workspace under Megatron (with its transpose before
// Blackwell), for every layer of the stage at the tensor-parallel shard: the recipe quantizes the
// gathered weight, so sharding the parameters does not shard it (elsewhere the copies are saved
// tensors of each block, model::fp8_weights_cached). With FP8 parameters (fp8_param_gather) the
// copies are the parameters themselves, sharded as they are (`kept`: this rank's share): Megatron
// FSDP keeps its shard and gathers a unit's FP8 weights when it runs (ModelStates::fp8_gathered).
void add_fp8_weights(const Training& tr, const Layout& l, const StageParams& sp, double weight_bytes, double kept,
                     bool offload_params, ModelStates& ms) {
  if (model::fp8_weights_cached(tr))
    ms.fp8_weights = Bytes(model::fp8_weight_copy_bytes(tr, l.cuda_sm) * sp.block_linear *
                           (model::fp8_gathers(tr) ? kept : 1.0));
  ms.weights += ms.fp8_weights;
  if (!model::fp8_gathers(tr)) return;
  ms.fp8_gathered = sp.block_linear;
  // Megatron's fp8_param: the block linears' parameters are the FP8 tensors themselves, their
  // 16-bit copy gone (MLM param_and_grad_buffer.py: uint8 param buffers).
  if (tr.framework == Framework::megatron && !offload_params) ms.weights -= Bytes(weight_bytes * sp.block_linear * kept);
}

// Autocast's 16-bit copies of a frozen fp32 head alive at once: one per chunk where the library
// runs the head on chunks of positions (LibraryTraits::adapter_head_chunk_positions), else one.
double head_cast_copies(const Training& tr) {
  const int positions = model::library_traits(tr.library).adapter_head_chunk_positions;
  if (positions <= 0 || !is_adapter(tr.method)) return 1.0;
  return std::ceil(static_cast<double>(tr.seq) / static_cast<double>(positions));
}

// The first block's linears whose input needs no gradient under adapters (the frozen embedding
// feeds it): nothing of their matmuls is saved, so neither is autocast's cast of their frozen fp32
// weights. Its attention's input projections read its first norm's output; under a parallel
// residual its MLP reads the block input too (lit-gpt's LoRA step replayed on an H200,
// data/measurements/h200-2026-11-29-litgpt: 15 of StableLM's 16 q/k/v casts kept, and 3 weight
// casts fewer of its parallel MLP and output projection's). Parameters on this rank.
double first_block_uncast_linears(const Architecture& a, const Training& tr, const Layout& l, const StageParams& sp) {
  if (!is_adapter(tr.method) || tr.partial.active || !sp.holds_embedding || a.encoder_decoder) return 0.0;
  double p = 0.0;
  for (const model::Linear& lin : model::block_linears(a, model::Stack::decoder)) {
    const bool attention_input = lin.role == model::Role::q || lin.role == model::Role::k || lin.role == model::Role::v ||
                                 lin.role == model::Role::q_a || lin.role == model::Role::kv_a || lin.role == model::Role::kv_b;
    const bool mlp = a.parallel_residual && (lin.role == model::Role::gate || lin.role == model::Role::up || lin.role == model::Role::down);
    if ((attention_input || mlp) && lin.copies == 1) p += static_cast<double>(lin.in * lin.out);
  }
  return p / l.tp;
}

// Bytes per frozen base parameter of an adapter method (block linears aside under QLoRA).
double frozen_base_bytes(const Training& tr) {
  if (is_mixed(tr.precision) && !tr.frozen_base_fp32) return compute_bytes(tr.precision);
  return param_bytes(tr.precision);
}

}  // namespace

Layout make_layout(const Architecture& a, const Training& tr, const hardware::Cluster& c) {
  return make_layout(a, tr, c, cuda_sm(c.gpu));
}

Layout make_layout(const Architecture& a, const Training& tr, const hardware::Cluster& c, int cuda_sm) {
  validate_training(a, tr);
  Layout l;
  l.world = c.world();
  l.nodes = c.nodes;
  l.gpus_per_node = c.gpus_per_node;
  l.gpus_per_domain = c.gpus_per_domain();
  l.cuda_sm = cuda_sm;
  l.tp = tr.tp;
  l.pp = tr.pp;
  l.cp = tr.cp;
  if (l.world % (tr.tp * tr.cp * tr.pp) != 0)
    throw InputError((tr.cp > 1 ? "tensor x context x pipeline parallel degree " + str(tr.tp) + "x" + str(tr.cp)
                                : "tensor x pipeline parallel degree " + str(tr.tp)) +
                     "x" + str(tr.pp) + " does not divide the " + str(l.world) + " GPUs of " + c.description);
  if (!framework_supports(tr.framework, tr.strategy))
    throw InputError("strategy '" + std::string(to_string(tr.strategy)) +
                     "' does not exist in the megatron framework (use ddp, zero1 for the distributed optimizer, "
                     "zero2/zero3 for Megatron FSDP or fsdp-full for PyTorch's FSDP2)");
  if (tr.bf16_master && !is_zero(tr.strategy))
    throw FieldError("{bf16-master-weights} runs with ZeRO stage 1-3 only, as DeepSpeed asserts (got strategy " +
                     std::string(to_string(tr.strategy)) + ")");
  l.dp = l.world / (tr.tp * tr.cp * tr.pp);
  std::int64_t step_tokens = 0;
  if (!product_within({tr.sequences(), tr.seq, tr.grad_accum, l.dp}, kMaxTokensPerStep, step_tokens))
    throw FieldError(sequences_words(tr) + " x {seq} x {grad-accum} x data-parallel size = " +
                     product_text({tr.sequences(), tr.seq, tr.grad_accum, l.dp}) +
                     " tokens in one optimizer step, beyond " + str(kMaxTokensPerStep) +
                     " (2^50, more than any training run's whole data)");
  if (tr.strategy == Strategy::single && l.world > 1 && l.replicas() > 1)
    throw InputError("strategy 'single' on " + str(l.world) + " GPUs: choose a data-parallel strategy (ddp, zero1-3, fsdp-*)" +
                     (tr.cp > 1 ? ": the context-parallel ranks reduce their gradients" : " or --tp/--pp"));
  l.shard = l.replicas();
  if (tr.strategy == Strategy::fsdp_hybrid) {
    if (tr.hybrid_shard > 0 && l.replicas() % tr.hybrid_shard != 0)
      throw FieldError("{hybrid-shard} " + str(tr.hybrid_shard) + " does not divide the " + str(l.replicas()) +
                       " data-parallel ranks of " + c.description + " (each shard group is replicated whole)");
    l.shard = tr.hybrid_shard > 0 ? tr.hybrid_shard : node_hybrid_shard(l);
  }
  if (tr.reshards_to_group()) {
    if (tr.tp > 1)
      throw FieldError("{reshard-after-forward} " + str(tr.fsdp_reshard_to) + " with tensor parallelism (tp " +
                       str(tr.tp) + "): torch's fully_shard does not reshard to a smaller mesh with TP "
                       "(NotImplementedError); leave it out or use tp 1");
    if (l.shard % tr.fsdp_reshard_to != 0)
      throw FieldError("{reshard-after-forward} " + str(tr.fsdp_reshard_to) + " does not divide the " +
                       str(l.shard) + " ranks of the shard group on " + c.description +
                       " (torch's fully_shard: it must be a factor of the shard mesh's size)");
  }
  l.ep = tr.ep;
  if (l.shard % l.ep != 0)
    throw FieldError("{expert-parallel} " + str(tr.ep) + " does not divide the " + str(l.shard) +
                     (l.shard == l.replicas() ? (tr.cp > 1 ? " data- and context-parallel ranks" : " data-parallel ranks")
                                               : " ranks a hybrid shard spans") +
                     " of " + c.description);
  return l;
}

namespace {

// Bytes per trainable parameter of each model state (model::state_bytes) for this optimizer.
model::StateBytes stage_state_bytes(const Architecture& a, const model::ParameterCounts& n, const Training& tr) {
  const double trainable = std::max(1.0, static_cast<double>(model::trainable_parameters(a, n, tr)));
  const double ada_elements =
      tr.optimizer == Optimizer::adafactor      ? static_cast<double>(model::adafactor_state_elements(a, tr)) / trainable
      : tr.optimizer == Optimizer::galore_adamw ? static_cast<double>(model::galore_state_elements(a, tr)) / trainable
                                                : 0.0;
  // DeepSpeed's bf16_optimizer_states: the moments in bf16, as torch keeps them for bf16 parameters.
  const Precision states = tr.bf16_optimizer_states ? Precision::bf16_true : tr.precision;
  const double opt_bytes = model::optimizer_state_bytes(tr.optimizer, states, ada_elements);
  model::StateBytes sb = model::state_bytes(tr.framework, tr.precision, opt_bytes);
  // bf16_master_weights_and_grads: the master weights and the gradient partition the optimizer
  // steps from are bf16 (2 + 2 bytes instead of 4 + 4).
  if (tr.bf16_master) sb.opt_grads = sb.master = 2.0;
  // DeepSpeed ZeRO-3 reduce-scatters each layer's 16-bit gradients straight into the fp32
  // partition: they live only in the per-layer gather buffer (stage3.py estimator, 18/N).
  if (tr.framework == Framework::deepspeed && shards_parameters(tr.strategy) && is_mixed(tr.precision))
    sb.grads = 0.0;
  return sb;
}

// Frozen base of an adapter method, in bytes on this stage: {all parameters, the experts' part}.
// Block linears are quantized under QLoRA; otherwise 16-bit under mixed precision (Hugging Face
// practice: from_pretrained(torch_dtype=bfloat16), PEFT keeps the adapters in fp32) unless the
// whole model is kept fp32 (litgpt's bf16-mixed). Zero for full fine-tuning.
std::pair<double, double> frozen_base(const Architecture& a, const Training& tr, const StageParams& sp,
                                      const model::SubsetParameters* sub) {
  // Partial fine-tuning: what does not train, in the frozen base's dtype (LLaMA-Factory loads the
  // model in 16 bits and upcasts only the trained parameters: _setup_freeze_tuning).
  if (sub != nullptr) {
    const double base = frozen_base_bytes(tr);
    return {(sp.all - sub->all) * base, (sp.experts - sub->experts) * base};
  }
  if (tr.method == Method::full) return {0.0, 0.0};
  const double base = frozen_base_bytes(tr);
  const bool qlora = tr.method == Method::qlora;
  const double linear_bytes = qlora ? model::quantized_bytes_per_param(tr.quant, tr.quant_block, a.hidden) : base;
  // Which linears are 4-bit: the blocks', and the head's under a stack that converts every Linear.
  const double quantized =
      sp.block_linear + (qlora && model::qlora_stack_traits(tr).quantizes_head ? sp.head : 0.0);
  return {quantized * linear_bytes + (sp.all - quantized) * base, sp.experts * linear_bytes};
}

// The share of this stage's parameters that train: all under full fine-tuning, the subset's under
// partial fine-tuning, none of the base under an adapter method.
double trained_share(const Training& tr, const ModelStates& ms, const StageParams& sp) {
  if (tr.method != Method::full) return 0.0;
  return model::trains_subset(tr) && sp.all > 0.0 ? std::min(1.0, static_cast<double>(ms.trainable) / sp.all) : 1.0;
}

// DeepSpeed's estimator also charges the host for materialising the model at load time: the host
// memory per GPU (stage3.py and stage_1_and_2.py estimate_zero*_model_states_mem_needs).
Bytes deepspeed_host_per_gpu(const model::ParameterCounts& n, const Training& tr, const Layout& l,
                             const MemoryConventions& mc) {
  const bool offload_params = tr.offload == Offload::optimizer_params;
  const bool offload_opt = tr.offload != Offload::none;
  const double P = static_cast<double>(n.total);
  const double f = mc.deepspeed_host_buffer_factor;
  const double gpn = l.gpus_per_node;
  const double per_node_factor = 1.0 / l.nodes;
  double host_node = 0.0;
  if (tr.strategy == Strategy::zero3) {
    if (offload_params)
      host_node = tr.zero_init ? P * 18.0 * per_node_factor * f : P * std::max(4.0 * gpn, 18.0 * per_node_factor) * f;
    else if (offload_opt)
      host_node = tr.zero_init ? P * 16.0 * per_node_factor * f : P * std::max(4.0 * gpn, 16.0 * per_node_factor) * f;
    else
      host_node = tr.zero_init ? static_cast<double>(n.largest_module) * 4.0 * gpn * f : P * 4.0 * gpn * f;
  } else if (offload_opt) {
    host_node = P * std::max(4.0 * l.world, 16.0) * f;
  } else {
    host_node = P * 4.0 * gpn * f;
  }
  return Bytes(host_node / gpn);
}

// DeepSpeed's parameters and gradients in flight (the stage3.py estimator: 4 x the largest layer,
// its 16-bit params and gradients, for ZeRO-3) and its ZeRO-1/2 reduce bucket of reduce_bucket_size
// 16-bit elements. FSDP's gathered units are phase buffers instead (memory()).
void deepspeed_buffers(const model::ParameterCounts& n, const Training& tr, double trainable,
                       const MemoryConventions& mc, ModelStates& ms) {
  if (tr.framework != Framework::deepspeed) return;
  const Strategy st = tr.strategy;
  if (st == Strategy::zero3 || st == Strategy::fsdp_full || st == Strategy::fsdp_hybrid)
    ms.gather_buffers = Bytes(4.0 * static_cast<double>(n.largest_module));
  else if ((st == Strategy::zero1 || st == Strategy::zero2) && tr.offload == Offload::none)
    ms.buckets = Bytes(2.0 * std::min(mc.deepspeed_reduce_bucket_elements, trainable));
}

// Bytes per parameter of an FSDP unit gathered, and of its unsharded gradient: the compute dtype,
// or fp32 where the library's FSDP gathers fp32 under mixed precision (Lightning Fabric:
// Training::computes_in_gathered_16bit). FSDP's no_sync leaves the gradient in that dtype
// (_post_backward_hook returns before any cast).
double unsharded_gradient_bytes(const Training& tr) {
  return is_mixed(tr.precision) && !tr.computes_in_gathered_16bit() ? 4.0 : compute_bytes(tr.precision);
}

// model_states() of a stage whose parameters are counted already (memory() reads them too). Under
// FSDP's no_sync accumulation every trained parameter's gradient is held unsharded.
ModelStates stage_states(const Architecture& a, const model::ParameterCounts& n, const Training& tr,
                         const Layout& l, const StageParams& sp, const MemoryConventions& mc) {
  const std::optional<model::SubsetParameters> subset =
      model::trains_subset(tr) ? std::optional(stage_subset(a, n, tr, l, sp)) : std::nullopt;
  const model::SubsetParameters* sub = subset ? &*subset : nullptr;
  const double trainable = stage_trainable(a, tr, l, sp, sub);
  const double N = l.shard;
  const Strategy st = tr.strategy;
  // Under PyTorch FSDP every variant keeps parameters sharded at rest (SHARD_GRAD_OP only gathers
  // them from forward to backward); the gathered copies are phase buffers (memory()).
  const bool fsdp_rest = tr.framework == Framework::pytorch &&
                         (is_fsdp(st) || st == Strategy::zero2 || st == Strategy::zero3);
  // The fraction of each part this rank keeps (ZeRO's sharding rules, model::shard); experts shard
  // over the N / ep ranks that hold the same ones.
  const model::ShardedBytes keep = model::shard({1.0, 1.0, 0.0, 0.0, 1.0}, st, N, fsdp_rest);
  const model::ShardedBytes keep_e = model::shard({1.0, 1.0, 0.0, 0.0, 1.0}, st, N / l.ep, fsdp_rest);

  const model::StateBytes sb = stage_state_bytes(a, n, tr);

  // Expert parts: trainable (full fine-tuning) or frozen (adapters, which stay with the rest).
  const auto [frozen, frozen_e] = frozen_base(a, tr, sp, sub);
  const double trainable_e = sub != nullptr ? sub->experts : tr.method == Method::full ? sp.experts : 0.0;
  // Bytes this rank keeps of a part: the dense share sharded over N, the experts' over N / ep.
  auto held = [&](double dense, double experts, double model::ShardedBytes::*part) {
    return Bytes(dense * (keep.*part) + experts * (keep_e.*part));
  };

  ModelStates ms;
  ms.trainable = static_cast<std::int64_t>(trainable);
  ms.local_params = static_cast<std::int64_t>(sp.all);
  ms.root_params = tr.fsdp_wrap == FsdpWrap::none ? sp.all : sp.root;
  ms.experts = sp.experts;
  ms.trainable_experts = trainable_e;
  const bool offload_params = tr.offload == Offload::optimizer_params;
  const bool offload_opt = tr.offload != Offload::none;
  const bool paged = model::is_paged(tr.optimizer);

  using SB = model::ShardedBytes;
  const double td = trainable - trainable_e;
  const Bytes weights = held(sb.weights * td + frozen - frozen_e, sb.weights * trainable_e + frozen_e, &SB::weights);
  const Bytes grads = held(sb.grads * td, sb.grads * trainable_e, &SB::grads);
  ms.optimizer_params = held(td, trainable_e, &SB::optimizer).value();
  const Bytes opt_side((sb.opt_grads + sb.master) * ms.optimizer_params);
  const Bytes moments(sb.optimizer * ms.optimizer_params);
  ms.grad_bytes_per_param = offload_opt ? 0.0 : sb.grads;

  // Offloading runs the optimizer where its states live: gradients stream to the host too
  // (DeepSpeed ZeRO-Offload, arXiv:2101.06840; torch FSDP CPUOffload).
  ms.weights = offload_params ? Bytes(0.0) : weights;
  // DPO's frozen reference model under full training: loaded with the policy's arguments and
  // prepared by the same engine (TRL dpo_trainer.py: create_model_from_path with the model's init
  // kwargs, then prepare_deepspeed - ZeRO-3 as the policy, stage 0 below it, in DeepSpeed's 16-bit
  // dtype - or prepare_fsdp, or a plain copy beside DDP): the policy's working weights, sharded and
  // offloaded as they are.
  if (tr.holds_reference()) {
    ms.reference = offload_params ? Bytes(0.0) : weights;
    ms.weights += ms.reference;
  }
  add_fp8_weights(tr, l, sp, sb.weights, keep.weights, offload_params, ms);
  ms.gradients = ms.step_gradients = offload_opt ? Bytes(0.0) : grads;
  if (tr.accumulates_unsharded_gradients() && !offload_opt)
    ms.gradients = Bytes(unsharded_gradient_bytes(tr) * trainable);
  ms.optimizer = (offload_opt ? Bytes(0.0) : opt_side) + (offload_opt || paged ? Bytes(0.0) : moments);
  ms.host = (offload_params ? weights : Bytes(0.0)) + (offload_opt ? grads + opt_side + moments : Bytes(0.0)) +
            (paged && !offload_opt ? moments : Bytes(0.0));
  deepspeed_buffers(n, tr, trainable, mc, ms);
  if (tr.framework == Framework::deepspeed) ms.host = deepspeed_host_per_gpu(n, tr, l, mc);
  if (offload_params && tr.holds_reference()) ms.host += weights;
  return ms;
}

}  // namespace

ModelStates model_states(const Architecture& a, const model::ParameterCounts& n, const Training& tr,
                         const Layout& l, const MemoryConventions& mc) {
  return stage_states(a, n, tr, l, stage_params(a, n, l), mc);
}

MemoryBreakdown memory(const Architecture& a, const model::ParameterCounts& n, const Training& tr,
                       const Layout& l, const MemoryConventions& mc) {
  // The activations as PyTorch keeps them on this GPU (the SDPA kernel it picks, autocast's ops).
  model::Training on_gpu = tr;
  on_gpu.cuda_sm = l.cuda_sm;
  return memory(a, n, tr, l, model::resolve_blocks(a, on_gpu), mc);
}

namespace {

// A framework's buffers of one stage.
struct StageBuffers {
  Bytes fwd_bwd;     // alive through forward and backward
  Bytes persistent;  // alive all step
  // Reserved by another stream's pool and free at the peak: the compute stream cannot use it.
  Bytes other_stream_cache;
  // Of fwd_bwd: a 4-bit weight's 16-bit copy, alive while its matmul runs (none as forward returns).
  Bytes dequantized;
  // FSDP's root unit (add_fsdp_root_gradients): the head's gradient held from the start of backward,
  // and the end of backward's gathered root, its gradients and their flat copy.
  Bytes root_head_gradient;
  Bytes root_end_buffers;
  Bytes root_end_gradients;
};

// FSDP2 beside FSDP1 (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py, _fsdp_param_group.py,
// PyTorch 2.4-2.11): each unit is gathered into one flat all-gather output allocated on the
// copy-in stream and copied out into the parameters on the compute stream; in forward that output
// is held until the next unit's all-gather is issued (AllGatherState), so one unit's gathered bytes
// more are alive. Each unit's gradients are copied (chunk_cat) into one flat reduce-scatter input
// in the reduce dtype before they are freed, and that input is held until the next unit's
// reduce-scatter (ReduceScatterState): the unit's gradients in both dtypes. The copy-in stream's
// pool keeps the largest all-gather output it served, the root's (embeddings, head) where that is
// the largest unit; at the peak only a block's is in use.
void add_fsdp2_buffers(const Training& tr, double unit_gathered, double root_gathered, double unit_grads,
                       StageBuffers& b) {
  b.fwd_bwd += Bytes(unit_gathered + tr.fsdp_reduce_bytes() * unit_grads);
  b.other_stream_cache = Bytes(std::max(0.0, root_gathered - unit_gathered));
}

// PyTorch FSDP forms each unit's gradient as one flat tensor once the unit's backward is done:
// FSDP1 concatenates the gradients of the views its flat parameter hands to the modules (their
// split_with_sizes backward waits for every view's gradient; torch/distributed/fsdp/_flat_param.py
// _get_unflat_views), FSDP2 copies its parameters' gradients into the reduce-scatter input
// (chunk_cat in foreach_reduce, in the reduce dtype). The root unit - what the block wrap leaves:
// embeddings, final norm, head; the whole model without a wrap - ends its backward last, yet the
// head's gradient is formed first: it is held through backward beside any accumulated gradients,
// and at the end of backward the root's gathered parameters, its gradients and their flat copy
// are alive together (the stage's gradients accumulated or reduced so far beside them).
void add_fsdp_root_gradients(const Architecture& a, const Training& tr, const Layout& l, const StageParams& sp,
                             const ModelStates& ms, double g, double gathered, StageBuffers& b) {
  if (tr.method != Method::full) return;
  const bool one_unit = tr.fsdp_wrap == FsdpWrap::none;
  if (!one_unit && !(sp.holds_embedding && sp.holds_head)) return;  // a root whose backward is over at once
  const bool embedding_trains = !tr.partial.active || tr.partial.embedding;
  const bool head_trains = a.tie_embeddings ? embedding_trains : !tr.partial.active || tr.partial.head;
  // The vocabulary matrix as the head uses it: its own, or the tied embedding.
  const double head = a.tie_embeddings ? static_cast<double>(a.vocab * a.hidden) / l.tp : sp.head;
  double root = one_unit ? static_cast<double>(ms.trainable) : sp.root;
  if (!one_unit && tr.partial.active)
    root = (embedding_trains ? sp.embedding : 0.0) + (head_trains && !a.tie_embeddings ? sp.head : 0.0);
  const double flat = tr.runs_fsdp2() ? tr.fsdp_reduce_bytes() : g;
  b.root_head_gradient = Bytes(head_trains ? g * head : 0.0);
  b.root_end_gradients = Bytes(g * root);
  b.root_end_buffers = Bytes((one_unit ? gathered : g * sp.root) + flat * root);
}

// PyTorch's buffers of one stage.
StageBuffers pytorch_buffers(const Architecture& a, const Training& tr, const Layout& l, const StageParams& sp,
                             const ModelStates& ms) {
  const double c = compute_bytes(tr.precision);
  StageBuffers out;
  Bytes& fwd_bwd = out.fwd_bwd;
  if (tr.gathers_parameters()) {
    // FSDP gathers each unit in the compute dtype; the root (embeddings, head) is not resharded
    // after forward, and the next unit is prefetched. Without a wrap policy, or with
    // SHARD_GRAD_OP, every unit stays gathered from forward to backward (torch FSDP _post_forward).
    // FSDP2's reshard_after_forward=1 keeps them too; =N keeps each rank's 1/N of every block unit
    // (a copy in the gathered dtype, _fsdp_param.py to_sharded_post_forward) until its backward.
    const int post_forward = post_forward_ranks(tr, l);
    const bool all_gathered = tr.fsdp_wrap == FsdpWrap::none || tr.strategy == Strategy::fsdp_grad_op ||
                              tr.strategy == Strategy::zero2 || post_forward == 1;
    const double blocks = all_gathered ? sp.all - sp.root : 2.0 * sp.largest_unit;
    // torchao's FSDP2 float8 all-gather: the blocks' linears arrive as FP8 tensors, one byte each,
    // which the float8 linears use as they are (torchao float8/fsdp_utils.py
    // WeightWithDynamicFloat8CastTensor.fsdp_post_all_gather); norms and the root stay 16-bit.
    const double g = unsharded_gradient_bytes(tr);
    const double fp8_share = model::fp8_gathers(tr) && sp.all > sp.root ? sp.block_linear / (sp.all - sp.root) : 0.0;
    const double per_param = fp8_share * 1.0 + (1.0 - fp8_share) * g;
    const double gathered = blocks * per_param + g * sp.root;
    // Unsharded gradients of the unit being reduced.
    const double unit_grads = (tr.fsdp_wrap == FsdpWrap::none ? sp.all : sp.largest_unit) * trained_share(tr, ms, sp);
    const double post_forward_copies =
        post_forward > 1 && !all_gathered ? (sp.all - sp.root) * per_param / post_forward : 0.0;
    fwd_bwd = Bytes(gathered + post_forward_copies + g * unit_grads);
    add_fsdp_root_gradients(a, tr, l, sp, ms, g, gathered, out);
    if (tr.runs_fsdp2()) {
      const bool one_unit = tr.fsdp_wrap == FsdpWrap::none;
      add_fsdp2_buffers(tr, one_unit ? gathered : sp.largest_unit * per_param, one_unit ? 0.0 : g * sp.root,
                        unit_grads, out);
    }
  } else if (is_mixed(tr.precision)) {
    // Autocast keeps a 16-bit copy of every fp32 linear weight it casts, saved for backward (of a
    // frozen head run in chunks, one per chunk). Partial fine-tuning: only the trained (fp32)
    // share of them.
    const bool fp32_linears = tr.method == Method::full || frozen_base_bytes(tr) > c;
    const double cast_share = model::trains_subset(tr) && frozen_base_bytes(tr) <= c ? trained_share(tr, ms, sp) : 1.0;
    // Compiled torchao float8 recasts the block linears' fp32 weights in backward instead.
    const bool block_casts = tr.method != Method::qlora && !model::compile_recomputes_fp8_inputs(tr);
    if (fp32_linears)
      fwd_bwd = Bytes(c *
                      ((block_casts ? sp.block_linear - first_block_uncast_linears(a, tr, l, sp) : 0.0) +
                       sp.head * head_cast_copies(tr)) *
                      cast_share);
  }
  // bitsandbytes dequantizes a 4-bit weight to the compute dtype for every training-size matmul,
  // forward (dequantize + F.linear fallback) and backward (dequantize_4bit then matmul): the
  // 16-bit copies of the largest quantized linear, the MLP's (or the head's when it is 4-bit),
  // are alive at a time (bitsandbytes 0.50.1 backends/cuda/ops.py _dequant_linear_fallback,
  // autograd/_functions.py MatMul4Bit).
  if (tr.method == Method::qlora) {
    const bool head = model::qlora_stack_traits(tr).quantizes_head && sp.holds_head;
    const double largest = static_cast<double>(std::max(a.hidden * a.intermediate, head ? a.vocab * a.hidden : 0));
    out.dequantized = Bytes(model::dequantized_bytes_per_weight(tr) * largest / l.tp);
    fwd_bwd += out.dequantized;
  }
  if (tr.strategy == Strategy::ddp && l.replicas() > 1)  // DDP buckets: gradient_as_bucket_view=False
    out.persistent = ms.gradients;
  return out;
}

// ZeRO++'s hpZ keeps a secondary partition of every parameter (in its dtype) over the node's ranks:
// made at the first forward's gather, reused by every backward gather, freed only after the
// optimizer step (deepspeed/runtime/zero/partition_parameters.py _partition_param_sec,
// ds_secondary_tensor; stage3.py _post_step invalidate_secondary_tensor): alive at both peaks.
Bytes hpz_secondary_partition(const Training& tr, const Layout& l, const StageParams& sp) {
  if (l.secondary_partition <= 1) return Bytes(0.0);
  return Bytes(sp.all * compute_bytes(tr.precision) / static_cast<double>(l.secondary_partition));
}

// Megatron FSDP's buffers alive through forward and backward under zero3 (optim_grads_params): the
// layer being computed and the next, prefetched, gathered in 16 bits, and the layer's unsharded
// fp32 main gradients before their reduce-scatter (megatron/core/distributed/fsdp: one FSDP unit
// per transformer layer).
Bytes megatron_fsdp_buffers(const Training& tr, const StageParams& sp) {
  if (tr.framework != Framework::megatron || !shards_parameters(tr.strategy)) return Bytes(0.0);
  return Bytes(2.0 * 2.0 * sp.largest_unit + (tr.method == Method::full ? 4.0 * sp.largest_unit : 0.0));
}

// The largest moment of forward and backward, beside the weights, optimizer states and persistent
// buffers: the start of backward (every activation, the first gradients, the buffers of the pass);
// where it holds more, the end of forward (ActivationMemory::forward_end: the accumulated
// gradients only, no 4-bit weight dequantized) or the end of backward (FSDP's root unit forming
// its gradient: StageBuffers::root_end_*).
struct PassPeak {
  Bytes buffers;
  Bytes gradients;
  Bytes activations;
  std::string_view phase;
};

PassPeak pass_peak(const StageBuffers& b, Bytes A, const model::ActivationMemory& act, Bytes G, Bytes g_start,
                   bool grads_persist) {
  // The first gradients of backward, and under FSDP the head's, held until the root's are formed.
  const Bytes first = std::max(g_start, b.root_head_gradient);
  const PassPeak bwd{b.fwd_bwd, grads_persist ? G + b.root_head_gradient : (A + first > G ? first : G),
                     grads_persist ? A : (A + first > G ? A : Bytes(0.0)), "backward"};
  // Without a forward_end the end of forward holds no more than the start of backward.
  const PassPeak fwd{b.fwd_bwd - b.dequantized + act.forward_end_weight, grads_persist ? G : Bytes(0.0),
                     act.forward_end, "end of forward"};
  const PassPeak end{b.root_end_buffers, G + b.root_end_gradients, Bytes(0.0), "end of backward"};
  auto sum = [](const PassPeak& p) { return p.buffers + p.gradients + p.activations; };
  const PassPeak& start = sum(fwd) > sum(bwd) ? fwd : bwd;
  return sum(end) > sum(start) ? end : start;
}

// The memory of one pipeline stage.
MemoryBreakdown stage_memory(const Architecture& a, const model::ParameterCounts& n, const Training& tr,
                             const Layout& l, model::ActivationMemory activations, const MemoryConventions& mc) {
  MemoryBreakdown m;
  const StageParams sp = stage_params(a, n, l, activations.stage);
  m.states = stage_states(a, n, tr, l, sp, mc);
  const ModelStates& ms = m.states;
  m.activation_detail = std::move(activations);
  const Bytes A = m.activation_detail.total();
  const double grad_bytes = ms.grad_bytes_per_param;

  // Buffers alive through forward and backward, and all step.
  StageBuffers buffers;
  if (tr.framework == Framework::pytorch)
    buffers = pytorch_buffers(a, tr, l, sp, ms);
  else
    buffers.fwd_bwd = megatron_fsdp_buffers(tr, sp);
  Bytes& fwd_bwd = buffers.fwd_bwd;
  Bytes& persistent = buffers.persistent;
  persistent += ms.gather_buffers + ms.buckets + hpz_secondary_partition(tr, l, sp);
  // The reference forward runs after the policy's, whose activations and logits are alive: its
  // logits (one row of the vocabulary shard per token, in the compute dtype) add to them until
  // the loss has read them (TRL dpo_trainer.py _compute_loss).
  if (tr.runs_reference() && sp.holds_head)
    fwd_bwd += Bytes(compute_bytes(tr.precision) * static_cast<double>(tr.tokens_per_micro_batch()) *
                     static_cast<double>(a.vocab) / static_cast<double>(l.tp));
  // First gradients of backward: the LM head's (when trainable and on this stage).
  const bool head_trains = tr.method == Method::full && (!tr.partial.active || tr.partial.head);
  const Bytes g_start(head_trains ? grad_bytes * sp.head : 0.0);
  // Gradients persist across micro-batches under accumulation, and in Megatron's contiguous buffer.
  const bool grads_persist = tr.grad_accum > 1 || tr.framework == Framework::megatron;
  // The largest parameter on this rank (the tied or untied vocabulary matrix, or an MLP matrix).
  const double largest = static_cast<double>(std::max(a.vocab * a.hidden, a.hidden * a.intermediate)) /
                         static_cast<double>(tr.tp);
  // The optimizer in backward frees each gradient as it is stepped: one parameter's at a time (the
  // largest, as this rank holds it), and the step's temporaries are one parameter's too.
  const double in_flight = tr.optimizer_in_backward && ms.trainable > 0
                               ? std::min(1.0, largest / static_cast<double>(ms.trainable))
                               : 1.0;
  const Bytes G = ms.gradients * in_flight;
  const Bytes G_step = ms.step_gradients * in_flight;
  const Bytes base = ms.weights + ms.optimizer;

  const PassPeak pass = pass_peak(buffers, A, m.activation_detail, G, g_start, grads_persist);
  const Bytes peak_pass = base + pass.buffers + persistent + pass.gradients + pass.activations;

  // The step's own allocations (foreach Adam's sqrt(v) for every parameter, optimizer_step.hpp).
  const Bytes step_tmp = optimizer_step_transient(tr, ms.optimizer_params * in_flight, largest);
  const Bytes peak_step = base + G_step + step_tmp + persistent;

  m.weights = ms.weights;
  m.optimizer = ms.optimizer;
  const bool pass_peaks = peak_pass >= peak_step;  // forward and backward, or the step
  if (pass_peaks) {
    m.peak_phase = pass.phase;
    m.gradients = pass.gradients;
    m.activations = pass.activations;
    m.buffers = pass.buffers + persistent;
  } else {
    m.peak_phase = "optimizer step";
    m.gradients = G_step;
    m.activations = Bytes(0.0);
    m.buffers = step_tmp + persistent;
  }
  m.peak_allocated = m.weights + m.gradients + m.optimizer + m.activations + m.buffers;
  // What each phase allocates and frees within the step: backward's activations, gathered units and
  // autocast copies; the step's temporaries and the gradients zero_grad(set_to_none) frees.
  const Bytes transient_bwd = pass.activations + pass.buffers + (grads_persist ? Bytes(0.0) : pass.gradients);
  const Bytes transient_step = step_tmp + (grads_persist ? Bytes(0.0) : G_step);
  m.transient = pass_peaks ? transient_bwd : transient_step;
  // Recomputation churns during backward only.
  const bool recompute = tr.checkpointing != Checkpointing::none && pass_peaks;
  m.expandable_segments = tr.expandable_segments;
  m.allocator_cache =
      allocator_cache(m.peak_allocated, m.transient, recompute, tr.expandable_segments, mc) + buffers.other_stream_cache;
  m.reserved = m.peak_allocated + m.allocator_cache;
  m.outside_torch = mc.cuda_context + (l.world > 1 ? mc.nccl : Bytes(0.0));
  m.overhead = m.outside_torch + m.allocator_cache;
  m.device_total = m.reserved + m.outside_torch;
  m.host = (ms.host + m.activation_detail.host) * static_cast<double>(std::min(l.gpus_per_node, l.world));
  return m;
}

}  // namespace

MemoryBreakdown memory(const Architecture& a, const model::ParameterCounts& n, const Training& tr,
                       const Layout& l, const model::ResolvedBlocks& blocks, const MemoryConventions& mc) {
  MemoryBreakdown m =
      stage_memory(a, n, tr, l, model::activation_memory(a, tr, blocks, model::PipelineStage::first), mc);
  if (l.pp == 1) return m;
  m.peak_stage = "first";
  MemoryBreakdown end =
      stage_memory(a, n, tr, l, model::activation_memory(a, tr, blocks, model::PipelineStage::last), mc);
  end.peak_stage = "last";
  if (end.peak_allocated > m.peak_allocated) return end;
  return m;
}

}  // namespace trainplan::planner
