#include "trainplan/planner/evaluator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "trainplan/model/fp8.hpp"
#include "trainplan/model/model_states.hpp"
#include "trainplan/planner/memory.hpp"
#include "trainplan/planner/optimizer_step.hpp"
#include "trainplan/model/partial.hpp"
#include "step_comm.hpp"

namespace trainplan::planner {
namespace {

using hardware::Collective;

[[nodiscard]] constexpr double dbl(std::int64_t v) { return static_cast<double>(v); }
[[nodiscard]] Seconds pos(Seconds s) { return std::max(s, Seconds(0.0)); }

// One compute device per precision, and fp32 twice: on the CUDA cores and with TF32 (index 5).
[[nodiscard]] std::size_t precision_index(Precision p, bool tf32) {
  switch (p) {
    case Precision::fp32:
      return tf32 ? 5 : 0;
    case Precision::fp16_mixed:
      return 1;
    case Precision::bf16_mixed:
      return 2;
    case Precision::fp16_true:
      return 3;
    case Precision::bf16_true:
      return 4;
  }
  return 0;
}

// Host time to issue one micro-batch's kernels on one pipeline stage: forward (Python module code)
// and backward (the autograd engine), with checkpointed blocks replayed from Python in backward.
struct StageHost {
  Seconds forward;
  Seconds backward;
  double kernels_forward = 0;
  double kernels_backward = 0;
};
StageHost stage_host(const BlockCompute& blk, const EdgeCompute& edge, const model::Training& tr,
                     double layers, bool first_stage, const TimeConventions& tc) {
  const double emb_f = first_stage ? edge.embedding_launches_forward : 0.0;
  const double emb_b = first_stage ? edge.embedding_launches_backward : 0.0;
  // The kernels of the blocks checkpointing wraps, issued again in backward (BlockCompute::launches_replayed).
  const double replay = recomputes_blocks(tr.checkpointing) ? blk.launches_replayed * layers : 0.0;
  const Seconds replay_rate =
      tr.framework != Framework::megatron ? tc.host_per_checkpointed_kernel : tc.host_per_forward_kernel;
  const double blocks_f = blk.launches_forward * layers;
  const double edges_f = edge.head_launches_forward + emb_f;
  const double bwd = blk.launches_backward * layers + edge.head_launches_backward + emb_b;
  return {replay_rate * replay + tc.host_per_forward_kernel * (blocks_f - replay + edges_f),
          tc.host_per_backward_kernel * bwd + replay_rate * replay, blocks_f + edges_f, bwd + replay};
}

// A layer's forward, backward and recompute on the stage's path, one micro-batch: its kernels and
// the collectives they wait on (tensor-parallel and MoE exposed unless overlapped, context
// parallel where attention does not hide it).
struct LayerPath {
  Seconds forward, backward, recompute;
};
LayerPath layer_path(const BlockCompute& blk, Seconds recompute, const LayerComm& tp, const LayerComm& moe,
                     const ContextParallelComm& cp, double tp_expose, double moe_expose) {
  return {blk.forward + tp.forward * tp_expose + moe.forward * moe_expose + cp.forward_exposed,
          blk.backward + tp.backward * tp_expose + moe.backward * moe_expose + cp.backward_exposed,
          recompute + tp.recompute * tp_expose + cp.recompute_exposed};
}

// FSDP2's copy kernels of one micro-batch, forward and backward, at the HBM rate (fsdp2_copies).
std::pair<Seconds, Seconds> fsdp2_copy_time(const TermInputs& in, const DataParallelBytes& b, const ComputeDevice& d) {
  const Fsdp2Copies copies = fsdp2_copies(in, b);
  return {memory_bound_time(d, copies.forward), memory_bound_time(d, copies.backward)};
}

}  // namespace

Evaluator::Evaluator(model::Architecture a, model::ParameterCounts n, hardware::Cluster c,
                     const hardware::HardwareProfile* profile, MemoryConventions mc,
                     TimeConventions tc, EstimateOptions options)
    : a_(std::move(a)),
      n_(n),
      c_(std::move(c)),
      profile_(profile),
      mc_(mc),
      tc_(tc),
      options_(options),
      links_(link_model(c_, profile, tc_)),
      cuda_sm_(cuda_sm(c_.gpu)) {
  for (Precision p : {Precision::fp32, Precision::fp16_mixed, Precision::bf16_mixed,
                      Precision::fp16_true, Precision::bf16_true})
    devices_[precision_index(p, false)] = compute_device(c_.gpu, p, false, profile_, tc_);
  devices_[precision_index(Precision::fp32, true)] = compute_device(c_.gpu, Precision::fp32, true, profile_, tc_);
}

const ComputeDevice& Evaluator::device(const model::Training& tr) const {
  return devices_[precision_index(tr.precision, tr.tf32)];
}

const Evaluator::Shapes& Evaluator::shapes(const model::Training& tr) const {
  const bool adapters = tr.method != Method::full;
  if (shapes_.valid && shapes_.method == tr.method && shapes_.partial == tr.partial &&
      shapes_.checkpoint_trained_only == tr.checkpoint_trained_only &&
      (!model::trains_subset(tr) || shapes_.checkpointing == tr.checkpointing) &&
      (!adapters || (shapes_.lora.rank == tr.lora.rank && shapes_.lora.targets == tr.lora.targets)))
    return shapes_;
  shapes_.valid = true;
  shapes_.method = tr.method;
  shapes_.partial = tr.partial;
  shapes_.checkpoint_trained_only = tr.checkpoint_trained_only;
  shapes_.checkpointing = tr.checkpointing;
  shapes_.lora = tr.lora;
  const model::LoraConfig* lora = adapters ? &tr.lora : nullptr;
  const model::Stack main = a_.encoder_decoder ? model::Stack::encoder : model::Stack::decoder;
  shapes_.main = block_shape(a_, main, lora);
  if (a_.encoder_decoder) shapes_.decoder = block_shape(a_, model::Stack::decoder, lora);
  shapes_.flops = model::flop_coefficients(a_, tr);
  compute_cache_.clear();  // the cached layers used the old adapters
  blocks_cache_.clear();
  ops_cache_.clear();
  return shapes_;
}

LayerComputeKey LayerComputeKey::of(const model::Training& tr) {
  const bool adapters = tr.method != Method::full;
  const bool picks = model::picks_some_blocks(tr);
  return {tr.sequences(),
          tr.seq,
          tr.tp,
          tr.precision,
          tr.method,
          tr.attention,
          tr.framework,
          tr.library,
          tr.tf32,
          tr.liger,
          tr.compile,
          tr.chunked_loss,
          tr.quant,
          tr.quant_block,
          tr.sequence_parallel,
          adapters ? tr.lora.rank : 0,
          adapters ? tr.lora.dropout : 0.0,
          tr.frozen_base_fp32,
          tr.computes_in_gathered_16bit(),
          tr.qlora_stack,
          tr.bitsandbytes,
          tr.library_version,
          tr.transformers,
          tr.hidden_dropout,
          tr.attention_dropout,
          tr.moe_capacity_factor,
          tr.moe_pad_to_capacity,
          tr.cp,
          tr.cp_comm,
          tr.fp8,
          model::fp8_weights_cached(tr) ? tr.grad_accum : 1,
          tr.method == Method::full ? tr.partial : model::TrainedSubset{},
          tr.checkpoint_trained_only,
          model::trains_subset(tr) && recomputes_blocks(tr.checkpointing),
          picks ? tr.checkpoint_every : 1,
          picks ? tr.checkpoint_layers : 0,
          picks ? tr.pp : 1,
          picks ? tr.pp_virtual : 1};
}

void LayerComputeKey::write_to(model::Training& t, const std::vector<std::string>& targets) const {
  t.tp = tp;
  t.cp = cp;
  t.cp_comm = cp_comm;
  t.fp8 = fp8;
  t.grad_accum = fp8_weight_batches;
  t.micro_batch = sequences;
  t.seq = seq;
  t.precision = precision;
  t.method = method;
  t.attention = attention;
  t.framework = framework;
  t.library = library;
  t.tf32 = tf32;
  t.liger = liger;
  t.compile = compile;
  t.chunked_loss = chunked_loss;
  t.quant = quant;
  t.quant_block = quant_block;
  t.sequence_parallel = sequence_parallel;
  t.lora.rank = lora_rank;
  t.lora.dropout = lora_dropout;
  t.lora.targets = targets;
  t.frozen_base_fp32 = frozen_base_fp32;
  if (gathered_16bit) t.strategy = Strategy::fsdp_full;
  t.qlora_stack = qlora_stack;
  t.bitsandbytes = bitsandbytes;
  t.library_version = library_version;
  t.transformers = transformers;
  t.hidden_dropout = hidden_dropout;
  t.attention_dropout = attention_dropout;
  t.moe_capacity_factor = moe_capacity_factor;
  t.moe_pad_to_capacity = moe_pad_to_capacity;
  t.partial = partial;
  t.checkpoint_trained_only = checkpoint_trained_only;
  const bool picks = checkpoint_every > 1 || checkpoint_layers > 0;
  t.checkpointing = partial_replayed || picks ? Checkpointing::full : Checkpointing::none;
  t.checkpoint_every = checkpoint_every;
  t.checkpoint_layers = checkpoint_layers;
  t.pp = checkpoint_pp;
  t.pp_virtual = checkpoint_pp_virtual;
}

const LayerCompute& Evaluator::layer_compute(const model::Training& given, const Shapes& sh) const {
  const LayerComputeKey key = LayerComputeKey::of(given);
  if (const LayerCompute* kept = compute_cache_.find(key)) return *kept;
  const ShapeOps& so = shape_ops(given);
  const model::Training& tr = so.training;
  const ComputeDevice& d = device(tr);
  LayerCompute lc;
  lc.block = block_compute(sh.main, so.ops.of(sh.main.stack), tr, d, tc_);
  if (a_.encoder_decoder) {
    // Stages hold both stacks in proportion: price the average layer.
    const BlockCompute dec = block_compute(sh.decoder, so.ops.decoder, tr, d, tc_);
    const double we = dbl(a_.layers) / dbl(a_.total_layers());
    lc.block = lc.block * we + dec * (1.0 - we);
  }
  lc.edge = edge_compute(a_, tr, d, tc_, so.ops.embedding, so.ops.head);
  return compute_cache_.insert(key, lc);
}

const model::ResolvedBlocks& Evaluator::resolved_blocks(const model::Training& given) const {
  const LayerComputeKey key = LayerComputeKey::of(given);
  if (const model::ResolvedBlocks* kept = blocks_cache_.find(key)) return *kept;
  const ShapeOps& so = shape_ops(given);
  return blocks_cache_.insert(key, model::resolve_blocks(a_, so.training, so.ops));
}

const ShapeOps& Evaluator::shape_ops(const model::Training& given) const {
  const LayerComputeKey key = LayerComputeKey::of(given);
  if (const ShapeOps* kept = ops_cache_.find(key)) return *kept;
  const Shapes& sh = shapes(given);  // before taking a slot: a change of adapters clears the caches
  model::StackLinears linears;
  if (a_.encoder_decoder) {
    linears.encoder = &sh.main.linears;
    linears.decoder = &sh.decoder.linears;
  } else {
    linears.decoder = &sh.main.linears;
  }
  // The slot's training has only ever been written here: its other fields keep their defaults, and
  // its storage (the lists', the targets') is reused.
  ShapeOps& slot = ops_cache_.replace(key);
  key.write_to(slot.training, given.lora.targets);
  slot.training.cuda_sm = cuda_sm_;
  try {
    model::build_model_ops(a_, slot.training, slot.ops, linears);
  } catch (...) {
    ops_cache_.clear();  // no half-built lists under the key
    throw;
  }
  return slot;
}

Seconds Evaluator::optimizer_step(const model::Training& tr, const Layout& l, const Shapes& sh,
                                  double layers_stage, double opt_params) const {
  if (tr.offload == Offload::none) {
    // Sharded or not, each rank steps a slice of every tensor it trains. A measured streaming
    // bandwidth (profile) scales the datasheet's.
    const double tensors = trainable_tensors(a_, sh.main, tr, layers_stage);
    std::optional<BytesPerSecond> measured;
    if (profile_ != nullptr) measured = profile_->optimizer_bandwidth(optimizer_states_fp32(tr));
    const OptimizerStepTime step = optimizer_step_time(tr, device(tr).hbm / tc_.hbm_efficiency,
                                                       c_.gpu.peak.fp32, opt_params, tensors, tc_, measured);
    return step.kernels + step.host;
  }
  double rate = tc_.cpu_adam_params_per_s_per_node;
  if (profile_ != nullptr) {
    if (const auto r = profile_->cpu_adam_rate()) rate = *r;
  }
  return Seconds(opt_params * std::min(l.gpus_per_node, l.world) / rate);
}

namespace {
// The layout, with ZeRO++'s hpZ secondary partition (a node's ranks) where the options ask for it.
Layout layout_with(const model::Architecture& a, const model::Training& tr, const hardware::Cluster& c, int cuda_sm,
                   const EstimateOptions& o) {
  Layout l = make_layout(a, tr, c, cuda_sm);
  if (o.zero_plus_plus && tr.strategy == Strategy::zero3 && tr.framework == Framework::deepspeed)
    l.secondary_partition = std::max(1, shard_group(l).per_node);
  return l;
}
}  // namespace

StepCost Evaluator::cost(const model::Training& tr, bool time_if_infeasible) const {
  StepCost out;
  out.layout = layout_with(a_, tr, c_, cuda_sm_, options_);
  const Layout& l = out.layout;
  const Shapes& sh = shapes(tr);
  out.memory = memory(a_, n_, tr, l, resolved_blocks(tr), mc_);
  out.fits = verdict_of(out.memory, c_, 0.0, mc_) == Verdict::fits;  // the search keeps a margin: no tight plans
  const double md = dbl(tr.grad_accum);
  out.global_batch = tr.micro_batch * tr.grad_accum * l.dp;
  if (!out.fits && !time_if_infeasible) return out;

  const TermInputs in{links_, a_, tr, l, tc_, md, compute_bytes(tr.precision)};
  TermSink sink{out};

  // One layer and the edges, one micro-batch; the layer's own collectives.
  const LayerCompute& lc = layer_compute(tr, sh);
  const BlockCompute& blk = lc.block;
  const EdgeCompute& edge = lc.edge;
  const LayerComm tp = tensor_parallel_comm(in, blk.tensor_parallel_pairs);
  const LayerComm moe = expert_comm(in, blk.expert_all_to_alls);
  const ContextParallelComm cpc = context_parallel_comm(in, blk.attention_forward);
  const double tp_expose = tp_exposed_share(tr, tp, blk.gemm_forward, blk.gemm_backward, tc_.tp_overlap);

  // The slowest pipeline stage, one micro-batch, GPU or host work the longer (the last runs Architecture::mtp_layers).
  const double layers_stage = std::ceil(dbl(a_.total_layers()) / l.pp) + dbl(a_.mtp_layers);
  const Seconds recompute_layer = blk.recompute(tr.checkpointing);
  const auto [layer_fwd, layer_bwd, layer_rec] = layer_path(blk, recompute_layer, tp, moe, cpc, tp_expose, 1.0 - tc_.tp_overlap);
  const DataParallelBytes dpb = data_parallel_bytes(in, out.memory.states);
  const auto [copies_fwd, copies_bwd] = fsdp2_copy_time(in, dpb, device(tr));
  Seconds edges_mb = edge.head_forward + edge.head_backward + copies_fwd + copies_bwd;
  if (l.pp == 1) edges_mb += edge.embedding_forward + edge.embedding_backward;
  const StageHost host = stage_host(blk, edge, tr, layers_stage, l.pp == 1, tc_);
  const Seconds gpu_fwd_mb = layer_fwd * layers_stage + edge.head_forward + copies_fwd;
  const Seconds gpu_bwd_mb = (layer_bwd + layer_rec) * layers_stage + edge.head_backward + copies_bwd;
  const Seconds host_fwd_ex = pos(host.forward - gpu_fwd_mb) + pos(edge.head_host_synchronized - edge.head_forward);
  const Seconds host_bwd_ex = pos(host.backward - gpu_bwd_mb);
  const Seconds stage_fwd_mb = gpu_fwd_mb + host_fwd_ex;
  const Seconds stage_bwd_mb = gpu_bwd_mb + host_bwd_ex;
  out.stage_micro_batch = (layer_fwd + layer_bwd + layer_rec) * layers_stage + edges_mb +
                          tp.edge * tp_expose + host_fwd_ex + host_bwd_ex;
  const Seconds memory_bound_mb =
      (blk.elementwise_forward + blk.elementwise_backward) * layers_stage + edge.head_memory_bound +
      (l.pp == 1 ? edge.embedding_memory_bound : Seconds(0.0)) + copies_fwd + copies_bwd;

  // Communication, each term adding its transfers and returning what it exposes.
  Seconds exposed = record_layer_comm(sink, in, tp_expose, tp, moe, layers_stage);
  exposed += record_context_parallel(sink, in, cpc, layers_stage);
  Seconds bubble;
  exposed += pipeline_term(sink, in, out.stage_micro_batch, bubble);
  exposed += data_parallel_term(sink, in, dpb, stage_fwd_mb, stage_bwd_mb, layers_stage, options_.zero_plus_plus);
  // Optimizer step and offload.
  const double opt_params = out.memory.states.optimizer_params;
  const Seconds optimizer = optimizer_step(tr, l, sh, layers_stage, opt_params);
  Seconds offload;
  if (tr.offload != Offload::none)
    offload = optimizer_offload_term(sink, in, opt_params, dpb.local, stage_fwd_mb, stage_bwd_mb);
  offload += activation_offload_term(sink, in, layer_fwd, layer_bwd, layer_rec, layers_stage,
                                     out.memory.activation_detail.per_block);

  // The step, with DPO's reference forward.
  TimeBreakdown& tb = out.time;
  tb.reference = reference_forward_term(sink, in, dpb, stage_fwd_mb, layers_stage, options_.zero_plus_plus);
  tb.compute = ((blk.forward + blk.backward) * layers_stage + edges_mb - memory_bound_mb) * md;
  tb.memory_bound = memory_bound_mb * md;
  tb.host = (host_fwd_ex + host_bwd_ex) * md;
  tb.recompute = recompute_layer * (layers_stage * md);
  tb.communication_exposed = exposed;
  tb.overlap_slowdown = overlap_slowdown(out, tb.compute + tb.memory_bound + tb.recompute, tc_.overlap_compute_slowdown);
  tb.bubble = bubble;
  tb.optimizer = optimizer;
  tb.offload = offload;
  tb.forward_phase = stage_fwd_mb * md + tb.reference;
  tb.backward_phase = stage_bwd_mb * md;
  tb.kernels_forward = host.kernels_forward * md * (tr.runs_reference() ? 2.0 : 1.0);
  tb.kernels_backward = host.kernels_backward * md;
  tb.step = tb.compute + tb.memory_bound + tb.host + tb.recompute + exposed + tb.overlap_slowdown + bubble +
            optimizer + offload + tb.reference;
  throughput(out, tr, sh.flops, device(tr).peak);
  return out;
}

void Evaluator::throughput(StepCost& out, const model::Training& tr,
                           const model::FlopCoefficients& flops, FlopsPerSecond peak) const {
  const double step = out.time.step.value();
  // Tokens through the model: both sequences of a preference pair (samples count pairs).
  const double tokens = dbl(out.global_batch) * sequences_per_sample(tr.objective) * dbl(tr.seq);
  out.tokens_per_s = tokens / step;
  out.samples_per_s = dbl(out.global_batch) / step;
  // MFU: Korthikanti et al. 2022 Eq. 7 (no recomputation); HFU adds the replayed forward (Eq. 8).
  // A micro-batch's FLOPs are of one rank's tokens: its cp ranks do the rest of each sequence.
  const double replicas = dbl(tr.grad_accum) * out.layout.dp * out.layout.cp;
  out.model_flops = model::model_flops(flops, tr) * replicas;
  // HFU also counts what runs beside the training: the recomputed forward, and DPO's reference
  // forward of every micro-batch.
  const model::StepFlops mb = model::micro_batch_flops(flops, tr);
  out.hardware_flops = out.model_flops + (mb.recompute + (tr.runs_reference() ? mb.forward : Flops(0.0))) * replicas;
  out.peak = peak;
  const double capacity = step * out.layout.world * peak.value();
  out.mfu = out.model_flops.value() / capacity;
  out.hfu = out.hardware_flops.value() / capacity;
}

Estimate Evaluator::to_estimate(const model::Training& tr, const StepCost& s,
                                bool with_max_micro_batch) const {
  Estimate e;
  e.training = tr;
  e.layout = s.layout;
  e.memory = s.memory;
  model::Training on_gpu = tr;
  on_gpu.cuda_sm = s.layout.cuda_sm;
  model::add_activation_detail(e.memory.activation_detail, a_, on_gpu);
  e.verdict = judge(s.memory, c_, 0.0, mc_);
  e.fits = e.verdict.verdict != Verdict::no;
  e.max_micro_batch =
      with_max_micro_batch ? max_micro_batch(a_, n_, tr, s.layout, c_, mc_) : 0;
  e.global_batch = s.global_batch;
  e.time = s.time;
  e.throughput.tokens_per_s = s.tokens_per_s;
  e.throughput.samples_per_s = s.samples_per_s;
  e.throughput.mfu = s.mfu;
  e.throughput.hfu = s.hfu;
  e.throughput.peak = s.peak;
  e.throughput.mfu_formula = mfu_formula(c_.gpu, tr.precision, tr.tf32);
  e.communication.reserve(s.comm_count);
  for (std::size_t i = 0; i < s.comm_count; ++i) {
    const CommTerm& t = s.comm[i];
    e.communication.push_back(CommunicationItem{std::string(to_string(t.kind)),
                                                std::string(to_string(t.purpose)),
                                                std::string(to_string(t.tier)), t.bytes, t.time,
                                                t.exposed, measured_by_profile(t) ? "profile" : "datasheet"});
  }
  return e;
}

// Whether the profile answered this term's time (communication.cpp collective_time and link_model:
// a measured curve or the collective model of that collective on the same side of the node
// boundary; pinned host copies).
bool Evaluator::measured_by_profile(const CommTerm& t) const {
  if (profile_ == nullptr || profile_->empty()) return false;
  const auto collective = [&]() -> std::optional<Collective> {
    switch (t.kind) {
      case Transfer::all_reduce: return Collective::all_reduce;
      case Transfer::all_gather: return Collective::all_gather;
      case Transfer::reduce_scatter: return Collective::reduce_scatter;
      case Transfer::all_to_all: return Collective::all_to_all;
      case Transfer::send_recv: return Collective::send_recv;
      case Transfer::device_to_host:
      case Transfer::host_to_device: return std::nullopt;
    }
    return std::nullopt;
  }();
  if (!collective) return profile_->h2d_bandwidth() || profile_->d2h_bandwidth();
  const int nodes = t.tier == LinkTier::network ? 2 : 1;
  return profile_->collective_time(*collective, std::max(2, t.ranks), nodes, mib(1.0)).has_value();
}

Estimate Evaluator::estimate(const model::Training& tr) const { return to_estimate(tr, cost(tr)); }

Seconds time_to_train(const Estimate& e, double tokens) {
  if (!(e.throughput.tokens_per_s > 0.0)) return Seconds(0.0);
  return Seconds(tokens / e.throughput.tokens_per_s);
}

std::string mfu_formula(const hardware::GpuSpec& g, Precision p, bool tf32) {
  return fmt::format(
      "MFU = model FLOPs per step / (step time x GPUs x peak); model FLOPs = forward + backward "
      "matmul "
      "FLOPs (2 per multiply-add) of the trained weights, attention counted without the causal "
      "saving, "
      "no recomputation (Korthikanti et al. 2022, Eq. 7: 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) "
      "for GPT); "
      "HFU adds the recomputed forward work and a DPO reference forward; a preference pair counts "
      "its two sequences. Peak: {} dense {} = {:.1f} TFLOP/s per GPU.",
      g.name, hardware::matmul_dtype(g, p, tf32), to_tflops(hardware::peak_flops(g, p, tf32)));
}

}  // namespace trainplan::planner
