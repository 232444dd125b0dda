#include "trainplan/planner/evaluator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "trainplan/model/model_states.hpp"
#include "trainplan/planner/fit.hpp"
#include "trainplan/planner/optimizer_step.hpp"

namespace trainplan::planner {
namespace {

using hardware::Collective;

[[nodiscard]] constexpr double dbl(std::int64_t v) { return static_cast<double>(v); }
[[nodiscard]] Seconds pos(Seconds s) { return std::max(s, Seconds(0.0)); }

[[nodiscard]] std::size_t precision_index(Precision p) {
  switch (p) {
    case Precision::fp32:
      return 0;
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

// Bytes per element of reduced gradients: Megatron and PyTorch DDP reduce the fp32 main gradients
// under mixed precision; DeepSpeed (communication_data_type) and FSDP's MixedPrecision reduce in
// the 16-bit compute dtype (accelerate's bf16/fp16 FSDP policy).
[[nodiscard]] double gradient_comm_bytes(const model::Training& tr) {
  switch (tr.framework) {
    case Framework::megatron:
      return is_mixed(tr.precision) ? 4.0 : param_bytes(tr.precision);
    case Framework::deepspeed:
      return compute_bytes(tr.precision);
    case Framework::pytorch:
      if (is_fsdp(tr.strategy) || tr.strategy == Strategy::zero2 || tr.strategy == Strategy::zero3)
        return compute_bytes(tr.precision);
      return param_bytes(tr.precision);
  }
  return compute_bytes(tr.precision);
}

// Whether the framework overlaps the data-parallel gradient reduction with backward.
[[nodiscard]] bool overlaps_gradient_reduce(const model::Training& tr, const TimeConventions& tc) {
  switch (tr.framework) {
    case Framework::pytorch:
      return true;  // DDP buckets, FSDP post-backward hooks
    case Framework::deepspeed:
      return tr.strategy != Strategy::ddp;  // overlap_comm for ZeRO
    case Framework::megatron:
      return tc.megatron_overlap_grad_reduce;
  }
  return false;
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
  const bool replays = recomputes_blocks(tr.checkpointing);
  const Seconds block_rate = replays && tr.framework != Framework::megatron
                                 ? tc.host_per_checkpointed_kernel
                                 : tc.host_per_forward_kernel;
  const double blocks_f = blk.launches_forward * layers;
  const double replay = replays ? blocks_f : 0.0;
  const double edges_f = edge.head_launches_forward + emb_f;
  const double bwd = blk.launches_backward * layers + edge.head_launches_backward + emb_b;
  return {block_rate * blocks_f + tc.host_per_forward_kernel * edges_f,
          tc.host_per_backward_kernel * bwd + block_rate * replay, blocks_f + edges_f,
          bwd + replay};
}

struct TermSink {
  StepCost& out;
  void add(Transfer kind, CommPurpose purpose, LinkTier tier, int ranks, Bytes bytes, Seconds time,
           Seconds exposed) {
    if (!(bytes.value() > 0.0) && !(time.value() > 0.0)) return;
    for (std::size_t i = 0; i < out.comm_count; ++i) {
      CommTerm& c = out.comm[i];
      if (c.kind == kind && c.purpose == purpose && c.tier == tier) {
        c.bytes += bytes;
        c.time += time;
        c.exposed += exposed;
        return;
      }
    }
    if (out.comm_count >= out.comm.size()) return;
    out.comm[out.comm_count++] = CommTerm{kind, purpose, tier, ranks, bytes, time, exposed};
  }
};

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
      links_(link_model(c_, profile, tc_)) {
  for (Precision p : {Precision::fp32, Precision::fp16_mixed, Precision::bf16_mixed,
                      Precision::fp16_true, Precision::bf16_true})
    devices_[precision_index(p)] = compute_device(c_.gpu, p, profile_, tc_);
}

const ComputeDevice& Evaluator::device(Precision p) const { return devices_[precision_index(p)]; }

const Evaluator::Shapes& Evaluator::shapes(const model::Training& tr) const {
  const bool adapters = tr.method != Method::full;
  if (shapes_.valid && shapes_.method == tr.method &&
      (!adapters || (shapes_.lora.rank == tr.lora.rank && shapes_.lora.targets == tr.lora.targets)))
    return shapes_;
  shapes_.valid = true;
  shapes_.method = tr.method;
  shapes_.lora = tr.lora;
  const model::LoraConfig* lora = adapters ? &tr.lora : nullptr;
  const model::Stack main = a_.encoder_decoder ? model::Stack::encoder : model::Stack::decoder;
  shapes_.main = block_shape(a_, main, lora);
  if (a_.encoder_decoder) shapes_.decoder = block_shape(a_, model::Stack::decoder, lora);
  shapes_.flops = model::flop_coefficients(a_, tr);
  compute_cached_ = 0;  // the cached layers used the old adapters
  return shapes_;
}

const LayerCompute& Evaluator::layer_compute(const model::Training& tr, const Shapes& sh) const {
  const LayerComputeKey key{tr.tp,
                            tr.micro_batch,
                            tr.seq,
                            tr.precision,
                            tr.method,
                            tr.attention,
                            tr.framework,
                            tr.quant,
                            tr.quant_block,
                            tr.sequence_parallel,
                            tr.method == Method::full ? 0 : tr.lora.rank,
                            tr.method == Method::full ? 0.0 : tr.lora.dropout,
                            tr.frozen_base_fp32};
  for (std::size_t i = 0; i < compute_cached_; ++i)
    if (compute_cache_[i].first == key) return compute_cache_[i].second;
  const ComputeDevice& d = device(tr.precision);
  LayerCompute lc;
  lc.block = block_compute(a_, sh.main, tr, d, tc_);
  if (a_.encoder_decoder) {
    // Stages hold both stacks in proportion: price the average layer.
    const BlockCompute dec = block_compute(a_, sh.decoder, tr, d, tc_);
    const double we = dbl(a_.layers) / dbl(a_.total_layers());
    const double wd = 1.0 - we;
    BlockCompute& b = lc.block;
    b.forward = b.forward * we + dec.forward * wd;
    b.backward = b.backward * we + dec.backward * wd;
    b.attention_forward = b.attention_forward * we + dec.attention_forward * wd;
    b.gemm_forward = b.gemm_forward * we + dec.gemm_forward * wd;
    b.elementwise_forward = b.elementwise_forward * we + dec.elementwise_forward * wd;
    b.elementwise_backward = b.elementwise_backward * we + dec.elementwise_backward * wd;
    b.launches_forward = b.launches_forward * we + dec.launches_forward * wd;
    b.launches_backward = b.launches_backward * we + dec.launches_backward * wd;
  }
  lc.edge = edge_compute(a_, tr, d, tc_);
  const std::size_t slot = compute_next_;
  compute_next_ = (compute_next_ + 1) % kComputeCache;
  compute_cached_ = std::min(compute_cached_ + 1, kComputeCache);
  compute_cache_[slot] = {key, lc};
  return compute_cache_[slot].second;
}

StepCost Evaluator::cost(const model::Training& tr, bool time_if_infeasible) const {
  StepCost out;
  out.layout = make_layout(a_, tr, c_);
  const Layout& l = out.layout;
  out.memory = memory(a_, n_, tr, l, mc_);
  out.fits = fits(out.memory, c_);
  const std::int64_t m = tr.grad_accum;
  const double md = dbl(m);
  out.global_batch = tr.micro_batch * m * l.dp;
  if (!out.fits && !time_if_infeasible) return out;

  const ComputeDevice& d = device(tr.precision);
  const Shapes& sh = shapes(tr);
  const double c = compute_bytes(tr.precision);
  TermSink sink{out};

  // ---- One layer, one micro-batch ----------------------------------------------------------
  const LayerCompute& lc = layer_compute(tr, sh);
  const BlockCompute& blk = lc.block;
  const EdgeCompute& edge = lc.edge;
  const Seconds recompute_layer = blk.recompute(tr.checkpointing);

  // Tensor parallelism: the layer's collectives, exposed unless overlapped.
  const Placement tpg = tensor_parallel_group(l);
  const LinkTier tp_tier = tier_of(links_, tpg);
  Seconds tp_fwd, tp_bwd, tp_rec;  // per layer per micro-batch
  Bytes tp_bytes_layer;
  Bytes tp_edge_bytes;
  Seconds tp_edge;
  if (l.tp > 1) {
    const Bytes x = tensor_parallel_message(tr.micro_batch, tr.seq, a_.hidden, c);
    const TensorParallelCollectives none =
        tensor_parallel_collectives(tr.sequence_parallel, Checkpointing::none);
    const TensorParallelCollectives all =
        tensor_parallel_collectives(tr.sequence_parallel, tr.checkpointing);
    const Seconds one = tr.sequence_parallel
                            ? collective_time(links_, Collective::all_gather, tpg, x) +
                                  collective_time(links_, Collective::reduce_scatter, tpg, x)
                            : collective_time(links_, Collective::all_reduce, tpg, x);
    const int per_pass = (none.all_reduce + none.all_gather) / 2;  // forward (= backward) count
    tp_fwd = one * per_pass;
    tp_bwd = one * per_pass;
    tp_rec = one * ((all.all_reduce + all.all_gather) - 2 * per_pass);
    tp_bytes_layer = tensor_parallel_bytes_per_layer(tr.micro_batch, tr.seq, a_.hidden, l.tp, c,
                                                     tr.sequence_parallel, tr.checkpointing);
    // Vocabulary-parallel embedding (forward) and LM-head input gradient (backward): one each.
    const int edges = l.pp == 1 ? 2 : 1;
    tp_edge = one * edges;
    tp_edge_bytes = tensor_parallel_bytes_per_layer(tr.micro_batch, tr.seq, a_.hidden, l.tp, c,
                                                    tr.sequence_parallel, Checkpointing::none) *
                    (edges / 4.0);
  }
  const double tp_expose = 1.0 - tc_.tp_overlap;

  // MoE expert-parallel all-to-all.
  Seconds moe_layer;
  Bytes moe_bytes_layer;
  Placement epg;
  if (a_.is_moe() && l.ep > 1) {
    epg.ranks = l.ep;
    epg.per_node = std::clamp(l.gpus_per_node / l.tp, 1, epg.ranks);
    epg.nodes = (epg.ranks + epg.per_node - 1) / epg.per_node;
    const Bytes msg =
        moe_all_to_all_message(a_.experts_per_token, tr.micro_batch, tr.seq, a_.hidden, c) /
        static_cast<double>(l.tp);
    moe_layer = collective_time(links_, Collective::all_to_all, epg, msg) * kMoeAllToAllsPerLayer;
    moe_bytes_layer = bytes_sent(Collective::all_to_all, epg.ranks, msg) * kMoeAllToAllsPerLayer;
  }

  // ---- The slowest pipeline stage, one micro-batch ------------------------------------------
  const double layers_stage = std::ceil(dbl(a_.total_layers()) / l.pp);
  const Seconds layer_fwd = blk.forward + (tp_fwd + moe_layer * 0.5) * tp_expose;
  const Seconds layer_bwd = blk.backward + (tp_bwd + moe_layer * 0.5) * tp_expose;
  const Seconds layer_rec = recompute_layer + tp_rec * tp_expose;
  Seconds edges_mb = edge.head_forward + edge.head_backward;
  if (l.pp == 1) edges_mb += edge.embedding_forward + edge.embedding_backward;
  const StageHost host = stage_host(blk, edge, tr, layers_stage, l.pp == 1, tc_);
  const Seconds gpu_fwd_mb = layer_fwd * layers_stage + edge.head_forward;
  const Seconds gpu_bwd_mb = (layer_bwd + layer_rec) * layers_stage + edge.head_backward;
  // Each phase takes the longer of its GPU work and the host's issuing of its kernels.
  const Seconds host_fwd_ex = pos(host.forward - gpu_fwd_mb);
  const Seconds host_bwd_ex = pos(host.backward - gpu_bwd_mb);
  const Seconds stage_fwd_mb = gpu_fwd_mb + host_fwd_ex;
  const Seconds stage_bwd_mb = gpu_bwd_mb + host_bwd_ex;
  out.stage_micro_batch = (layer_fwd + layer_bwd + layer_rec) * layers_stage + edges_mb +
                          tp_edge * tp_expose + host_fwd_ex + host_bwd_ex;

  const Seconds memory_bound_mb =
      (blk.elementwise_forward + blk.elementwise_backward) * layers_stage +
      edge.head_memory_bound + (l.pp == 1 ? edge.embedding_memory_bound : Seconds(0.0));
  Seconds compute = ((blk.forward + blk.backward) * layers_stage + edges_mb - memory_bound_mb) * md;
  const Seconds memory_bound = memory_bound_mb * md;
  const Seconds host_exposed = (host_fwd_ex + host_bwd_ex) * md;
  Seconds recompute = recompute_layer * (layers_stage * md);
  Seconds exposed;  // communication not hidden

  if (l.tp > 1) {
    const Seconds t = ((tp_fwd + tp_bwd + tp_rec) * layers_stage + tp_edge) * md;
    const Bytes bytes = (tp_bytes_layer * layers_stage + tp_edge_bytes) * md;
    if (tr.sequence_parallel) {  // each all-reduce became an all-gather and a reduce-scatter
      sink.add(Transfer::all_gather, CommPurpose::tensor_parallel, tp_tier, l.tp, bytes * 0.5,
               t * 0.5, t * (0.5 * tp_expose));
      sink.add(Transfer::reduce_scatter, CommPurpose::tensor_parallel, tp_tier, l.tp, bytes * 0.5,
               t * 0.5, t * (0.5 * tp_expose));
    } else {
      sink.add(Transfer::all_reduce, CommPurpose::tensor_parallel, tp_tier, l.tp, bytes, t,
               t * tp_expose);
    }
    exposed += t * tp_expose;
  }
  if (moe_layer.value() > 0.0) {
    const double moe_layers = layers_stage;
    const Seconds t = moe_layer * (moe_layers * md);
    sink.add(Transfer::all_to_all, CommPurpose::expert_all_to_all, tier_of(links_, epg), epg.ranks,
             moe_bytes_layer * (moe_layers * md), t, t * tp_expose);
    exposed += t * tp_expose;
  }

  // ---- Pipeline ---------------------------------------------------------------------------
  Seconds bubble;
  if (l.pp > 1) {
    const int v = tr.pp_virtual;
    bubble = out.stage_micro_batch * (bubble_fraction(l.pp, v, m) * md);
    const bool split = tr.framework == Framework::megatron || tr.sequence_parallel;
    const Bytes msg = pipeline_message(tr.micro_batch, tr.seq, a_.hidden, c, l.tp, split);
    const Placement pair = pipeline_pair(l);
    const Seconds one = collective_time(links_, Collective::send_recv, pair, msg);
    // Each micro-batch crosses each of the stage's v boundaries forward and backward; the fill and
    // drain add p - 1 crossings each way. The 1F1B schedule blocks on them.
    const double sends = 2.0 * (dbl(v) * md + (l.pp - 1));
    const Seconds t = one * sends;
    sink.add(Transfer::send_recv, CommPurpose::pipeline, tier_of(links_, pair), 2,
             msg * (2.0 * dbl(v) * md), t, t);
    exposed += t;
  }

  // ---- Data parallelism: gradients and sharded parameters ------------------------------------
  // Experts' gradients and parameters travel only among the dp / ep ranks holding the same experts:
  // counted as their share of the data-parallel ring's traffic, ((dp/ep - 1)/(dp/ep)) / ((dp - 1)/dp).
  const ModelStates& ms = out.memory.states;
  const double expert_share =
      l.dp > 1 ? hardware::bus_factor(Collective::reduce_scatter, l.dp / l.ep) /
                     hardware::bus_factor(Collective::reduce_scatter, l.dp)
               : 1.0;
  const double psi = dbl(ms.trainable) - ms.trainable_experts * (1.0 - expert_share);
  const double local = dbl(ms.local_params) - ms.experts * (1.0 - expert_share);
  const double g = gradient_comm_bytes(tr);
  const Bytes grads(psi * g);
  // Gathered parameters: trainable in the compute dtype; a frozen base in its stored dtype.
  const double frozen_bytes =
      tr.method == Method::qlora ? model::quantized_bytes_per_param(tr.quant, tr.quant_block, a_.hidden) : c;
  const Bytes params(psi * c + std::max(0.0, local - psi) * frozen_bytes);
  const Seconds bwd_last = stage_bwd_mb;  // backward of one micro-batch on this stage
  const bool overlap = overlaps_gradient_reduce(tr, tc_);
  const Strategy st = tr.strategy;
  const Placement dpg = data_parallel_group(l);
  const Placement shg = shard_group(l);
  if (l.dp > 1) {
    switch (st) {
      case Strategy::single:
        break;
      case Strategy::ddp: {
        const DataParallelVolume v = data_parallel_volume(st, grads, params, dpg.ranks, m);
        const Seconds t = collective_time(links_, Collective::all_reduce, dpg, grads);
        const Seconds bucket = collective_time(
            links_, Collective::all_reduce, dpg,
            std::min(grads, tr.framework == Framework::pytorch ? tc_.ddp_bucket : grads));
        const Seconds ex = overlap ? std::max(bucket, t - bwd_last) : t;
        sink.add(Transfer::all_reduce, CommPurpose::data_parallel_gradients, tier_of(links_, dpg),
                 dpg.ranks, v.all_reduce, t, ex);
        exposed += ex;
        break;
      }
      case Strategy::zero1:
      case Strategy::zero2: {
        const DataParallelVolume v = data_parallel_volume(st, grads, params, dpg.ranks, m);
        const double reductions = st == Strategy::zero1 ? 1.0 : md;
        const Seconds rs = collective_time(links_, Collective::reduce_scatter, dpg, grads);
        const Seconds bucket = collective_time(links_, Collective::reduce_scatter, dpg,
                                               std::min(grads, tc_.deepspeed_bucket));
        const Seconds rs_ex = overlap ? std::max(bucket, rs - bwd_last) : rs;
        const Seconds ag = collective_time(links_, Collective::all_gather, dpg, params);
        const LinkTier tier = tier_of(links_, dpg);
        sink.add(Transfer::reduce_scatter, CommPurpose::gradient_reduce_scatter, tier, dpg.ranks,
                 v.reduce_scatter, rs * reductions, rs_ex * reductions);
        sink.add(Transfer::all_gather, CommPurpose::parameter_gather_step, tier, dpg.ranks,
                 v.all_gather, ag, ag);
        exposed += rs_ex * reductions + ag;
        break;
      }
      case Strategy::fsdp_grad_op:
      case Strategy::zero3:
      case Strategy::fsdp_full:
      case Strategy::fsdp_hybrid: {
        // Units gathered one at a time (one per block, or the whole stage without a wrap policy),
        // the next prefetched while the current computes.
        const double units = tr.fsdp_wrap == FsdpWrap::none ? 1.0 : layers_stage;
        const LinkTier tier = tier_of(links_, shg);
        const Seconds f_u = stage_fwd_mb / units;
        const Seconds b_u = stage_bwd_mb / units;
        const bool zpp = options_.zero_plus_plus && st == Strategy::zero3;
        const bool regather = st != Strategy::fsdp_grad_op;
        Seconds ag_f, ag_b, rs_u, ar_u;
        Bytes ag_f_bytes, ag_b_bytes, rs_bytes, ar_bytes;
        LinkTier ag_b_tier = tier;
        Placement node_group = shg;
        if (zpp) {
          node_group.ranks = std::max(1, shg.per_node);
          node_group.nodes = 1;
          const ZeroPlusPlusVolume v =
              zero_plus_plus_volume(psi, shg.ranks, node_group.ranks, c, m);
          ag_f =
              collective_time(links_, Collective::all_gather, shg, Bytes(psi * kQwzBytes / units));
          ag_b = collective_time(links_, Collective::all_gather, node_group, params / units);
          rs_u =
              collective_time(links_, Collective::all_to_all, shg, Bytes(psi * kQgzBytes / units));
          ag_f_bytes = v.forward_gather;
          ag_b_bytes = v.backward_gather;
          rs_bytes = v.gradient_all_to_all;
          ag_b_tier = tier_of(links_, node_group);
        } else {
          const DataParallelVolume v = data_parallel_volume(st, grads, params, shg.ranks, m);
          ag_f = collective_time(links_, Collective::all_gather, shg, params / units);
          ag_b = regather ? ag_f : Seconds(0.0);
          rs_u = collective_time(links_, Collective::reduce_scatter, shg, grads / units);
          ag_f_bytes = regather ? v.all_gather * 0.5 : v.all_gather;
          ag_b_bytes = regather ? v.all_gather * 0.5 : Bytes(0.0);
          rs_bytes = v.reduce_scatter;
        }
        Placement rg;
        if (st == Strategy::fsdp_hybrid) {
          rg = replica_group(l);
          const Bytes shard_grads = grads / static_cast<double>(std::max(1, l.shard));
          ar_u = collective_time(links_, Collective::all_reduce, rg, shard_grads / units);
          ar_bytes = bytes_sent(Collective::all_reduce, rg.ranks, shard_grads) * md;
        }
        // Forward: the first unit's gather is waited for, later ones hide behind the previous
        // unit's compute. Backward: gathers, reductions (and replica all-reduces) of each unit
        // overlap the next unit's backward; the last reduction is waited for.
        const Seconds fwd_ex = ag_f + pos(ag_f - f_u) * (units - 1.0);
        const Seconds bwd_comm_u = ag_b + rs_u + ar_u;
        const Seconds bwd_ex = rs_u + ar_u + pos(bwd_comm_u - b_u) * (units - 1.0);
        // Split the exposure between the kinds in proportion to their time.
        const Seconds ag_f_t = ag_f * (units * md);
        const Seconds ag_b_t = ag_b * (units * md);
        const Seconds rs_t = rs_u * (units * md);
        const Seconds ar_t = ar_u * (units * md);
        const Seconds bwd_t = ag_b_t + rs_t + ar_t;
        auto share = [&](Seconds part) {
          return bwd_t.value() > 0.0 ? bwd_ex * md * (part / bwd_t) : Seconds(0.0);
        };
        sink.add(Transfer::all_gather, CommPurpose::parameter_gather_forward, tier, shg.ranks,
                 ag_f_bytes, ag_f_t, fwd_ex * md);
        sink.add(Transfer::all_gather, CommPurpose::parameter_gather_backward, ag_b_tier,
                 node_group.ranks, ag_b_bytes, ag_b_t, share(ag_b_t));
        sink.add(zpp ? Transfer::all_to_all : Transfer::reduce_scatter,
                 CommPurpose::gradient_reduce_scatter, tier, shg.ranks, rs_bytes, rs_t,
                 share(rs_t));
        if (st == Strategy::fsdp_hybrid)
          sink.add(Transfer::all_reduce, CommPurpose::replica_gradients, tier_of(links_, rg),
                   rg.ranks, ar_bytes, ar_t, share(ar_t));
        exposed += (fwd_ex + bwd_ex) * md;
        break;
      }
    }
  }

  // ---- Optimizer step and offload -----------------------------------------------------------
  const double opt_params = ms.optimizer_params;
  Seconds optimizer;
  Seconds offload;
  if (tr.offload == Offload::none) {
    // Sharded or not, each rank steps a slice of every tensor it trains.
    const double tensors = trainable_tensors(a_, sh.main, tr, layers_stage);
    // A measured streaming bandwidth (profile) scales the datasheet's.
    const BytesPerSecond hbm = d.hbm / tc_.hbm_efficiency;
    const OptimizerStepTime step =
        optimizer_step_time(tr, hbm, c_.gpu.peak.fp32, opt_params, tensors, tc_);
    optimizer = step.kernels + step.host;
  } else {
    double rate = tc_.cpu_adam_params_per_s_per_node;
    if (profile_ != nullptr) {
      if (const auto r = profile_->cpu_adam_rate()) rate = *r;
    }
    const double ranks_on_node = std::min(l.gpus_per_node, l.world);
    optimizer = Seconds(opt_params * ranks_on_node / rate);
    // Gradient partitions go to the host every micro-batch (hidden behind that backward where
    // possible); updated 16-bit parameters come back after the step.
    const Bytes d2h(opt_params * c);
    const Seconds d2h_t = host_copy_time(links_, d2h);
    const Seconds d2h_ex = pos(d2h_t - bwd_last) * md;
    const Bytes h2d(opt_params * c);
    const Seconds h2d_t = host_copy_time(links_, h2d);
    sink.add(Transfer::device_to_host, CommPurpose::offload_gradients, LinkTier::pcie, 1, d2h * md,
             d2h_t * md, d2h_ex);
    Seconds h2d_ex = h2d_t;
    Bytes h2d_bytes = h2d;
    Seconds h2d_total = h2d_t;
    if (tr.offload == Offload::optimizer_params) {
      // Parameter shards fetched for forward and backward of every micro-batch, prefetched.
      const double shard = shards_parameters(st) ? std::max(1, l.shard) : 1.0;
      const Bytes fetch(local / shard * c);
      const Seconds f = host_copy_time(links_, fetch);
      const double ov = tc_.offload_prefetch_overlap;
      h2d_ex +=
          (f * (2.0 * (1.0 - ov)) + pos(f * ov - stage_fwd_mb) + pos(f * ov - stage_bwd_mb)) * md;
      h2d_bytes += fetch * (2.0 * md);
      h2d_total += f * (2.0 * md);
    }
    sink.add(Transfer::host_to_device, CommPurpose::offload_parameters, LinkTier::pcie, 1,
             h2d_bytes, h2d_total, h2d_ex);
    offload = d2h_ex + h2d_ex;
  }

  // Checkpoints to the host as forward passes each block and back before its backward, each copy
  // behind that block's compute (ZeRO-R Sec. 6.1).
  if (tr.checkpointing == Checkpointing::full_offload) {
    const double copies = layers_stage * md;  // each way
    const Bytes ckpt = model::checkpoint_bytes(a_, tr);
    const Seconds copy = host_copy_time(links_, ckpt);
    const Seconds out_ex = pos(copy - layer_fwd) * copies;
    const Seconds back_ex = pos(copy - (layer_bwd + layer_rec)) * copies;
    sink.add(Transfer::device_to_host, CommPurpose::offload_activations, LinkTier::pcie, 1,
             ckpt * copies, copy * copies, out_ex);
    sink.add(Transfer::host_to_device, CommPurpose::offload_activations, LinkTier::pcie, 1,
             ckpt * copies, copy * copies, back_ex);
    offload += out_ex + back_ex;
  }

  // ---- Step --------------------------------------------------------------------------------
  TimeBreakdown& tb = out.time;
  tb.compute = compute;
  tb.memory_bound = memory_bound;
  tb.forward_phase = stage_fwd_mb * md;
  tb.backward_phase = stage_bwd_mb * md;
  tb.kernels_forward = host.kernels_forward * md;
  tb.kernels_backward = host.kernels_backward * md;
  tb.host = host_exposed;
  tb.recompute = recompute;
  tb.communication_exposed = exposed;
  tb.bubble = bubble;
  tb.optimizer = optimizer;
  tb.offload = offload;
  tb.step = compute + memory_bound + host_exposed + recompute + exposed + bubble + optimizer + offload;

  const double step = tb.step.value();
  const double tokens = dbl(out.global_batch) * dbl(tr.seq);
  out.tokens_per_s = tokens / step;
  out.samples_per_s = dbl(out.global_batch) / step;
  // MFU: Korthikanti et al. 2022 Eq. 7 (no recomputation); HFU adds the replayed forward (Eq. 8).
  const double replicas = md * l.dp;
  out.model_flops = model::model_flops(sh.flops, tr) * replicas;
  out.hardware_flops =
      out.model_flops + model::micro_batch_flops(sh.flops, tr).recompute * replicas;
  out.peak = d.peak;
  const double capacity = step * l.world * d.peak.value();
  out.mfu = out.model_flops.value() / capacity;
  out.hfu = out.hardware_flops.value() / capacity;
  return out;
}

Estimate Evaluator::to_estimate(const model::Training& tr, const StepCost& s,
                                bool with_max_micro_batch) const {
  Estimate e;
  e.training = tr;
  e.layout = s.layout;
  e.memory = s.memory;
  e.fits = s.fits;
  e.max_micro_batch =
      with_max_micro_batch ? max_micro_batch(a_, n_, tr, s.layout, c_, mc_) : 0;
  e.global_batch = s.global_batch;
  e.time = s.time;
  e.throughput.tokens_per_s = s.tokens_per_s;
  e.throughput.samples_per_s = s.samples_per_s;
  e.throughput.mfu = s.mfu;
  e.throughput.hfu = s.hfu;
  e.throughput.peak = s.peak;
  e.throughput.mfu_formula = mfu_formula(c_.gpu, tr.precision);
  e.communication.reserve(s.comm_count);
  for (std::size_t i = 0; i < s.comm_count; ++i) {
    const CommTerm& t = s.comm[i];
    e.communication.push_back(
        CommunicationItem{std::string(to_string(t.kind)), std::string(to_string(t.purpose)),
                          std::string(to_string(t.tier)), t.bytes, t.time, t.exposed});
  }
  return e;
}

Estimate Evaluator::estimate(const model::Training& tr) const { return to_estimate(tr, cost(tr)); }

Seconds time_to_train(const Estimate& e, double tokens) {
  if (!(e.throughput.tokens_per_s > 0.0)) return Seconds(0.0);
  return Seconds(tokens / e.throughput.tokens_per_s);
}

std::string mfu_formula(const hardware::GpuSpec& g, Precision p) {
  return fmt::format(
      "MFU = model FLOPs per step / (step time x GPUs x peak); model FLOPs = forward + backward "
      "matmul "
      "FLOPs (2 per multiply-add) of the trained weights, attention counted without the causal "
      "saving, "
      "no recomputation (Korthikanti et al. 2022, Eq. 7: 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) "
      "for GPT); "
      "HFU adds the recomputed forward work. Peak: {} dense {} = {:.1f} TFLOP/s per GPU.",
      g.name,
      compute_bytes(p) < 4.0
          ? (p == Precision::fp16_mixed || p == Precision::fp16_true ? "fp16" : "bf16")
          : "tf32",
      to_tflops(hardware::peak_flops(g, p)));
}

}  // namespace trainplan::planner
