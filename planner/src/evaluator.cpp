#include "trainplan/planner/evaluator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "trainplan/model/model_states.hpp"
#include "trainplan/planner/memory.hpp"
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

// What every communication term reads: the links, the model, the training, its layout.
struct TermInputs {
  const LinkModel& links;
  const model::Architecture& a;
  const model::Training& tr;
  const Layout& l;
  const TimeConventions& tc;
  double md;  // micro-batches per step
  double c;   // compute dtype bytes
};

// A layer's collectives for one micro-batch: time in forward, backward and recomputation, the
// edges' (TP: vocabulary-parallel embedding and head), and bytes per layer and of the edges.
struct LayerComm {
  Seconds forward;
  Seconds backward;
  Seconds recompute;
  Seconds edge;
  Bytes bytes;
  Bytes edge_bytes;
  Placement group;
};

// Megatron's f/g operators (Shoeybi et al. 2019; with sequence parallelism each all-reduce becomes
// an all-gather and a reduce-scatter, Korthikanti et al. 2022 Sec. 4.2.2).
// `pairs`: the layer's f/g pairs a pass, from its op list (BlockCompute::tensor_parallel_pairs).
LayerComm tensor_parallel_comm(const TermInputs& in, double pairs) {
  LayerComm out;
  const model::Training& tr = in.tr;
  if (in.l.tp <= 1) return out;
  out.group = tensor_parallel_group(in.l);
  const Bytes x = tensor_parallel_message(tr.micro_batch, tr.seq, in.a.hidden, in.c);
  const TensorParallelCollectives all =
      tensor_parallel_collectives(pairs, tr.sequence_parallel, tr.checkpointing);
  const Seconds one =
      tr.sequence_parallel
          ? collective_time(in.links, Collective::all_gather, out.group, x) +
                collective_time(in.links, Collective::reduce_scatter, out.group, x)
          : collective_time(in.links, Collective::all_reduce, out.group, x);
  out.forward = one * pairs;
  out.backward = one * pairs;
  out.recompute = one * ((all.all_reduce + all.all_gather) - 2.0 * pairs);
  out.bytes = tensor_parallel_bytes_per_layer(tr.micro_batch, tr.seq, in.a.hidden, in.l.tp, in.c, pairs,
                                              tr.sequence_parallel, tr.checkpointing);
  // Vocabulary-parallel embedding (forward) and LM-head input gradient (backward): one each.
  const int edges = in.l.pp == 1 ? 2 : 1;
  out.edge = one * edges;
  out.edge_bytes =
      tensor_parallel_bytes(tr.micro_batch, tr.seq, in.a.hidden, in.l.tp, in.c, tr.sequence_parallel, edges);
  return out;
}

// MoE dispatch and combine all-to-alls among the expert-parallel ranks, half in each direction;
// `per_pass`: the layer's all-to-alls a pass, from its op list (BlockCompute::expert_all_to_alls).
LayerComm expert_comm(const TermInputs& in, double per_pass) {
  LayerComm out;
  const Layout& l = in.l;
  if (!in.a.is_moe() || l.ep <= 1 || per_pass <= 0.0) return out;
  out.group.ranks = l.ep;
  out.group.per_node = std::clamp(l.gpus_per_node / l.tp, 1, out.group.ranks);
  out.group.nodes = (out.group.ranks + out.group.per_node - 1) / out.group.per_node;
  const Bytes msg = expert_all_to_all_message(in.a, in.tr);
  const double per_layer = 2.0 * per_pass;  // forward and backward
  const Seconds t = collective_time(in.links, Collective::all_to_all, out.group, msg) * per_layer;
  out.forward = t * 0.5;
  out.backward = t * 0.5;
  out.bytes = bytes_sent(Collective::all_to_all, out.group.ranks, msg) * per_layer;
  return out;
}

// The tensor-parallel and expert collectives of a stage's layers over the step, exposed unless
// overlapped (tp_overlap).
Seconds record_layer_comm(TermSink& sink, const TermInputs& in, const LayerComm& tp,
                          const LayerComm& moe, double layers) {
  const double expose = 1.0 - in.tc.tp_overlap;
  Seconds exposed;
  if (in.l.tp > 1) {
    const LinkTier tier = tier_of(in.links, tp.group);
    const Seconds t = ((tp.forward + tp.backward + tp.recompute) * layers + tp.edge) * in.md;
    const Bytes bytes = (tp.bytes * layers + tp.edge_bytes) * in.md;
    if (in.tr.sequence_parallel) {
      sink.add(Transfer::all_gather, CommPurpose::tensor_parallel, tier, in.l.tp, bytes * 0.5,
               t * 0.5, t * (0.5 * expose));
      sink.add(Transfer::reduce_scatter, CommPurpose::tensor_parallel, tier, in.l.tp, bytes * 0.5,
               t * 0.5, t * (0.5 * expose));
    } else {
      sink.add(Transfer::all_reduce, CommPurpose::tensor_parallel, tier, in.l.tp, bytes, t,
               t * expose);
    }
    exposed += t * expose;
  }
  const Seconds moe_layer = moe.forward + moe.backward;
  if (moe_layer.value() > 0.0) {
    const Seconds t = moe_layer * (layers * in.md);
    sink.add(Transfer::all_to_all, CommPurpose::expert_all_to_all, tier_of(in.links, moe.group),
             moe.group.ranks, moe.bytes * (layers * in.md), t, t * expose);
    exposed += t * expose;
  }
  return exposed;
}

// Pipeline: the bubble (Narayanan et al. 2021 Sec. 2.2) and the stage-to-stage transfers: each
// micro-batch crosses each of the stage's v boundaries forward and backward; the fill and drain
// add p - 1 crossings each way. The 1F1B schedule blocks on them.
Seconds pipeline_term(TermSink& sink, const TermInputs& in, Seconds stage_micro_batch,
                      Seconds& bubble) {
  const Layout& l = in.l;
  const model::Training& tr = in.tr;
  if (l.pp <= 1) return Seconds(0.0);
  const int v = tr.pp_virtual;
  bubble = stage_micro_batch * (bubble_fraction(l.pp, v, tr.grad_accum) * in.md);
  const bool split = tr.framework == Framework::megatron || tr.sequence_parallel;
  const Bytes msg = pipeline_message(tr.micro_batch, tr.seq, in.a.hidden, in.c, l.tp, split);
  const Placement pair = pipeline_pair(l);
  const Seconds one = collective_time(in.links, Collective::send_recv, pair, msg);
  const double sends = 2.0 * (dbl(v) * in.md + (l.pp - 1));
  const Seconds t = one * sends;
  sink.add(Transfer::send_recv, CommPurpose::pipeline, tier_of(in.links, pair), 2,
           msg * (2.0 * dbl(v) * in.md), t, t);
  return t;
}

// What data parallelism moves per step: gradients (reduced) and parameters (gathered), with the
// experts' share among the dp / ep ranks holding the same experts, counted as their share of the
// data-parallel ring's traffic, ((dp/ep - 1)/(dp/ep)) / ((dp - 1)/dp).
struct DataParallelBytes {
  double psi = 0;    // trainable parameters, experts weighted by their share
  double local = 0;  // parameters held, likewise
  Bytes grads;
  Bytes params;
};

DataParallelBytes data_parallel_bytes(const TermInputs& in, const ModelStates& ms) {
  const Layout& l = in.l;
  const model::Training& tr = in.tr;
  const double expert_share =
      l.dp > 1 ? hardware::bus_factor(Collective::reduce_scatter, l.dp / l.ep) /
                     hardware::bus_factor(Collective::reduce_scatter, l.dp)
               : 1.0;
  DataParallelBytes out;
  out.psi = dbl(ms.trainable) - ms.trainable_experts * (1.0 - expert_share);
  out.local = dbl(ms.local_params) - ms.experts * (1.0 - expert_share);
  out.grads = Bytes(out.psi * gradient_comm_bytes(tr));
  // Gathered parameters: trainable in the compute dtype; a frozen base in its stored dtype.
  const double frozen_bytes =
      tr.method == Method::qlora
          ? model::quantized_bytes_per_param(tr.quant, tr.quant_block, in.a.hidden)
          : in.c;
  out.params = Bytes(out.psi * in.c + std::max(0.0, out.local - out.psi) * frozen_bytes);
  return out;
}

// DDP: one all-reduce of the gradients, bucketed and overlapped with the last micro-batch's
// backward (PyTorch DDP, 25 MB buckets), or after backward.
Seconds ddp_term(TermSink& sink, const TermInputs& in, const DataParallelBytes& b,
                 Seconds bwd_last) {
  const Placement dpg = data_parallel_group(in.l);
  const DataParallelVolume v =
      data_parallel_volume(Strategy::ddp, b.grads, b.params, dpg.ranks, in.tr.grad_accum);
  const Seconds t = collective_time(in.links, Collective::all_reduce, dpg, b.grads);
  const Seconds bucket = collective_time(
      in.links, Collective::all_reduce, dpg,
      std::min(b.grads, in.tr.framework == Framework::pytorch ? in.tc.ddp_bucket : b.grads));
  const Seconds ex = overlaps_gradient_reduce(in.tr, in.tc) ? std::max(bucket, t - bwd_last) : t;
  sink.add(Transfer::all_reduce, CommPurpose::data_parallel_gradients, tier_of(in.links, dpg),
           dpg.ranks, v.all_reduce, t, ex);
  return ex;
}

// ZeRO-1/2: gradients reduce-scattered (every micro-batch under ZeRO-2), overlapped with backward
// (DeepSpeed overlap_comm), and the updated parameters all-gathered after the step, exposed.
Seconds zero12_term(TermSink& sink, const TermInputs& in, const DataParallelBytes& b,
                    Seconds bwd_last) {
  const Strategy st = in.tr.strategy;
  const Placement dpg = data_parallel_group(in.l);
  const DataParallelVolume v =
      data_parallel_volume(st, b.grads, b.params, dpg.ranks, in.tr.grad_accum);
  const double reductions = st == Strategy::zero1 ? 1.0 : in.md;
  const Seconds rs = collective_time(in.links, Collective::reduce_scatter, dpg, b.grads);
  const Seconds bucket = collective_time(in.links, Collective::reduce_scatter, dpg,
                                         std::min(b.grads, in.tc.deepspeed_bucket));
  const Seconds rs_ex = overlaps_gradient_reduce(in.tr, in.tc) ? std::max(bucket, rs - bwd_last) : rs;
  const Seconds ag = collective_time(in.links, Collective::all_gather, dpg, b.params);
  const LinkTier tier = tier_of(in.links, dpg);
  sink.add(Transfer::reduce_scatter, CommPurpose::gradient_reduce_scatter, tier, dpg.ranks,
           v.reduce_scatter, rs * reductions, rs_ex * reductions);
  sink.add(Transfer::all_gather, CommPurpose::parameter_gather_step, tier, dpg.ranks, v.all_gather,
           ag, ag);
  return rs_ex * reductions + ag;
}

// One FSDP unit's collectives (per micro-batch): forward and backward gathers, the gradient
// reduction, the hybrid replicas' all-reduce, with their bytes per step and groups.
struct UnitComm {
  Seconds ag_f, ag_b, rs, ar;
  Bytes ag_f_bytes, ag_b_bytes, rs_bytes, ar_bytes;
  Placement shard, node, replica;
};

UnitComm unit_comm(const TermInputs& in, const DataParallelBytes& b, double units, bool zpp) {
  const Strategy st = in.tr.strategy;
  UnitComm u;
  u.shard = shard_group(in.l);
  u.node = u.shard;
  const bool regather = st != Strategy::fsdp_grad_op;
  if (zpp) {  // ZeRO++ (Wang et al. 2023): quantized gathers, hpZ within the node, qgZ all-to-all
    u.node.ranks = std::max(1, u.shard.per_node);
    u.node.nodes = 1;
    const ZeroPlusPlusVolume v =
        zero_plus_plus_volume(b.psi, u.shard.ranks, u.node.ranks, in.c, in.tr.grad_accum);
    u.ag_f = collective_time(in.links, Collective::all_gather, u.shard,
                             Bytes(b.psi * kQwzBytes / units));
    u.ag_b = collective_time(in.links, Collective::all_gather, u.node, b.params / units);
    u.rs = collective_time(in.links, Collective::all_to_all, u.shard,
                           Bytes(b.psi * kQgzBytes / units));
    u.ag_f_bytes = v.forward_gather;
    u.ag_b_bytes = v.backward_gather;
    u.rs_bytes = v.gradient_all_to_all;
  } else {
    const DataParallelVolume v =
        data_parallel_volume(st, b.grads, b.params, u.shard.ranks, in.tr.grad_accum);
    u.ag_f = collective_time(in.links, Collective::all_gather, u.shard, b.params / units);
    u.ag_b = regather ? u.ag_f : Seconds(0.0);
    u.rs = collective_time(in.links, Collective::reduce_scatter, u.shard, b.grads / units);
    u.ag_f_bytes = regather ? v.all_gather * 0.5 : v.all_gather;
    u.ag_b_bytes = regather ? v.all_gather * 0.5 : Bytes(0.0);
    u.rs_bytes = v.reduce_scatter;
  }
  if (st == Strategy::fsdp_hybrid) {
    u.replica = replica_group(in.l);
    const Bytes shard_grads = b.grads / static_cast<double>(std::max(1, in.l.shard));
    u.ar = collective_time(in.links, Collective::all_reduce, u.replica, shard_grads / units);
    u.ar_bytes = bytes_sent(Collective::all_reduce, u.replica.ranks, shard_grads) * in.md;
  }
  return u;
}

// ZeRO-3 / FSDP: units gathered one at a time (one per block, or the whole stage without a wrap
// policy), the next prefetched while the current computes. Forward: the first unit's gather is
// waited for, later ones hide behind the previous unit's compute. Backward: gathers, reductions
// (and replica all-reduces) of each unit overlap the next unit's backward; the last reduction is
// waited for (Zhao et al. 2023, arXiv:2304.11277, Sec. 3.4).
Seconds sharded_term(TermSink& sink, const TermInputs& in, const DataParallelBytes& b,
                     Seconds stage_fwd, Seconds stage_bwd, double layers, bool zero_plus_plus) {
  const Strategy st = in.tr.strategy;
  const double units = in.tr.fsdp_wrap == FsdpWrap::none ? 1.0 : layers;
  const bool zpp = zero_plus_plus && st == Strategy::zero3;
  const UnitComm u = unit_comm(in, b, units, zpp);
  const double md = in.md;
  const Seconds fwd_ex = u.ag_f + pos(u.ag_f - stage_fwd / units) * (units - 1.0);
  const Seconds bwd_ex = u.rs + u.ar + pos(u.ag_b + u.rs + u.ar - stage_bwd / units) * (units - 1.0);
  // Split the backward exposure between the kinds in proportion to their time.
  const Seconds ag_f_t = u.ag_f * (units * md);
  const Seconds ag_b_t = u.ag_b * (units * md);
  const Seconds rs_t = u.rs * (units * md);
  const Seconds ar_t = u.ar * (units * md);
  const Seconds bwd_t = ag_b_t + rs_t + ar_t;
  auto share = [&](Seconds part) {
    return bwd_t.value() > 0.0 ? bwd_ex * md * (part / bwd_t) : Seconds(0.0);
  };
  const LinkTier tier = tier_of(in.links, u.shard);
  sink.add(Transfer::all_gather, CommPurpose::parameter_gather_forward, tier, u.shard.ranks,
           u.ag_f_bytes, ag_f_t, fwd_ex * md);
  sink.add(Transfer::all_gather, CommPurpose::parameter_gather_backward,
           zpp ? tier_of(in.links, u.node) : tier, u.node.ranks, u.ag_b_bytes, ag_b_t,
           share(ag_b_t));
  sink.add(zpp ? Transfer::all_to_all : Transfer::reduce_scatter,
           CommPurpose::gradient_reduce_scatter, tier, u.shard.ranks, u.rs_bytes, rs_t,
           share(rs_t));
  if (st == Strategy::fsdp_hybrid)
    sink.add(Transfer::all_reduce, CommPurpose::replica_gradients, tier_of(in.links, u.replica),
             u.replica.ranks, u.ar_bytes, ar_t, share(ar_t));
  return (fwd_ex + bwd_ex) * md;
}

Seconds data_parallel_term(TermSink& sink, const TermInputs& in, const DataParallelBytes& b,
                           Seconds stage_fwd, Seconds stage_bwd, double layers,
                           bool zero_plus_plus) {
  if (in.l.dp <= 1) return Seconds(0.0);
  switch (in.tr.strategy) {
    case Strategy::single:
      return Seconds(0.0);
    case Strategy::ddp:
      return ddp_term(sink, in, b, stage_bwd);
    case Strategy::zero1:
    case Strategy::zero2:
      return zero12_term(sink, in, b, stage_bwd);
    case Strategy::fsdp_grad_op:
    case Strategy::zero3:
    case Strategy::fsdp_full:
    case Strategy::fsdp_hybrid:
      return sharded_term(sink, in, b, stage_fwd, stage_bwd, layers, zero_plus_plus);
  }
  return Seconds(0.0);
}

// Optimizer offload (ZeRO-Offload, Ren et al. 2021): gradient partitions to the host every
// micro-batch (hidden behind that backward where possible), updated 16-bit parameters back after
// the step; parameter offload adds the shard's fetch for forward and backward of every
// micro-batch, partly prefetched.
Seconds optimizer_offload_term(TermSink& sink, const TermInputs& in, double opt_params,
                               double local, Seconds stage_fwd, Seconds stage_bwd) {
  const double md = in.md;
  const Bytes d2h(opt_params * in.c);
  const Seconds d2h_t = host_copy_time(in.links, d2h);
  const Seconds d2h_ex = pos(d2h_t - stage_bwd) * md;
  const Bytes h2d(opt_params * in.c);
  const Seconds h2d_t = host_copy_time(in.links, h2d);
  sink.add(Transfer::device_to_host, CommPurpose::offload_gradients, LinkTier::pcie, 1, d2h * md,
           d2h_t * md, d2h_ex);
  Seconds h2d_ex = h2d_t;
  Bytes h2d_bytes = h2d;
  Seconds h2d_total = h2d_t;
  if (in.tr.offload == Offload::optimizer_params) {
    const double shard = shards_parameters(in.tr.strategy) ? std::max(1, in.l.shard) : 1.0;
    const Bytes fetch(local / shard * in.c);
    const Seconds f = host_copy_time(in.links, fetch);
    const double ov = in.tc.offload_prefetch_overlap;
    h2d_ex += (f * (2.0 * (1.0 - ov)) + pos(f * ov - stage_fwd) + pos(f * ov - stage_bwd)) * md;
    h2d_bytes += fetch * (2.0 * md);
    h2d_total += f * (2.0 * md);
  }
  sink.add(Transfer::host_to_device, CommPurpose::offload_parameters, LinkTier::pcie, 1, h2d_bytes,
           h2d_total, h2d_ex);
  return d2h_ex + h2d_ex;
}

// Checkpoints to the host as forward passes each block and back before its backward, each copy
// behind that block's compute (ZeRO-R, Rajbhandari et al. 2019, Sec. 6.1).
Seconds checkpoint_offload_term(TermSink& sink, const TermInputs& in, Seconds layer_fwd,
                                Seconds layer_bwd_and_replay, double layers) {
  const double copies = layers * in.md;  // each way
  const Bytes ckpt = model::checkpoint_bytes(in.a, in.tr);
  const Seconds copy = host_copy_time(in.links, ckpt);
  const Seconds out_ex = pos(copy - layer_fwd) * copies;
  const Seconds back_ex = pos(copy - layer_bwd_and_replay) * copies;
  sink.add(Transfer::device_to_host, CommPurpose::offload_activations, LinkTier::pcie, 1,
           ckpt * copies, copy * copies, out_ex);
  sink.add(Transfer::host_to_device, CommPurpose::offload_activations, LinkTier::pcie, 1,
           ckpt * copies, copy * copies, back_ex);
  return out_ex + back_ex;
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
  compute_cache_.clear();  // the cached layers used the old adapters
  blocks_cache_.clear();
  ops_cache_.clear();
  return shapes_;
}

LayerComputeKey LayerComputeKey::of(const model::Training& tr) {
  const bool adapters = tr.method != Method::full;
  return {tr.micro_batch,
          tr.seq,
          tr.tp,
          tr.precision,
          tr.method,
          tr.attention,
          tr.framework,
          tr.quant,
          tr.quant_block,
          tr.sequence_parallel,
          adapters ? tr.lora.rank : 0,
          adapters ? tr.lora.dropout : 0.0,
          tr.frozen_base_fp32,
          tr.qlora_stack,
          tr.transformers,
          tr.moe_capacity_factor,
          tr.moe_pad_to_capacity};
}

void LayerComputeKey::write_to(model::Training& t, const std::vector<std::string>& targets) const {
  t.tp = tp;
  t.micro_batch = micro_batch;
  t.seq = seq;
  t.precision = precision;
  t.method = method;
  t.attention = attention;
  t.framework = framework;
  t.quant = quant;
  t.quant_block = quant_block;
  t.sequence_parallel = sequence_parallel;
  t.lora.rank = lora_rank;
  t.lora.dropout = lora_dropout;
  t.lora.targets = targets;
  t.frozen_base_fp32 = frozen_base_fp32;
  t.qlora_stack = qlora_stack;
  t.transformers = transformers;
  t.moe_capacity_factor = moe_capacity_factor;
  t.moe_pad_to_capacity = moe_pad_to_capacity;
}

const LayerCompute& Evaluator::layer_compute(const model::Training& given, const Shapes& sh) const {
  const LayerComputeKey key = LayerComputeKey::of(given);
  if (const LayerCompute* kept = compute_cache_.find(key)) return *kept;
  const ShapeOps& so = shape_ops(given);
  const model::Training& tr = so.training;
  const ComputeDevice& d = device(tr.precision);
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
    const OptimizerStepTime step = optimizer_step_time(tr, device(tr.precision).hbm / tc_.hbm_efficiency,
                                                       c_.gpu.peak.fp32, opt_params, tensors, tc_, measured);
    return step.kernels + step.host;
  }
  double rate = tc_.cpu_adam_params_per_s_per_node;
  if (profile_ != nullptr) {
    if (const auto r = profile_->cpu_adam_rate()) rate = *r;
  }
  return Seconds(opt_params * std::min(l.gpus_per_node, l.world) / rate);
}

StepCost Evaluator::cost(const model::Training& tr, bool time_if_infeasible) const {
  StepCost out;
  out.layout = make_layout(a_, tr, c_, cuda_sm_);
  const Layout& l = out.layout;
  const Shapes& sh = shapes(tr);
  out.memory = memory(a_, n_, tr, l, resolved_blocks(tr), mc_);
  out.fits = verdict_of(out.memory, c_, 0.0, mc_) == Verdict::fits;  // the search keeps a margin: no tight plans
  const std::int64_t m = tr.grad_accum;
  const double md = dbl(m);
  out.global_batch = tr.micro_batch * m * l.dp;
  if (!out.fits && !time_if_infeasible) return out;

  const ComputeDevice& d = device(tr.precision);
  const TermInputs in{links_, a_, tr, l, tc_, md, compute_bytes(tr.precision)};
  TermSink sink{out};

  // One layer and the edges, one micro-batch; the layer's own collectives.
  const LayerCompute& lc = layer_compute(tr, sh);
  const BlockCompute& blk = lc.block;
  const EdgeCompute& edge = lc.edge;
  const LayerComm tp = tensor_parallel_comm(in, blk.tensor_parallel_pairs);
  const LayerComm moe = expert_comm(in, blk.expert_all_to_alls);
  const double tp_expose = 1.0 - tc_.tp_overlap;

  // The slowest pipeline stage, one micro-batch: GPU work, host work, each phase the longer. The
  // last stage also runs the multi-token prediction modules' blocks (Architecture::mtp_layers).
  const double layers_stage = std::ceil(dbl(a_.total_layers()) / l.pp) + dbl(a_.mtp_layers);
  const Seconds recompute_layer = blk.recompute(tr.checkpointing);
  const Seconds layer_fwd = blk.forward + (tp.forward + moe.forward) * tp_expose;
  const Seconds layer_bwd = blk.backward + (tp.backward + moe.backward) * tp_expose;
  const Seconds layer_rec = recompute_layer + tp.recompute * tp_expose;
  Seconds edges_mb = edge.head_forward + edge.head_backward;
  if (l.pp == 1) edges_mb += edge.embedding_forward + edge.embedding_backward;
  const StageHost host = stage_host(blk, edge, tr, layers_stage, l.pp == 1, tc_);
  const Seconds gpu_fwd_mb = layer_fwd * layers_stage + edge.head_forward;
  const Seconds gpu_bwd_mb = (layer_bwd + layer_rec) * layers_stage + edge.head_backward;
  const Seconds host_fwd_ex = pos(host.forward - gpu_fwd_mb);
  const Seconds host_bwd_ex = pos(host.backward - gpu_bwd_mb);
  const Seconds stage_fwd_mb = gpu_fwd_mb + host_fwd_ex;
  const Seconds stage_bwd_mb = gpu_bwd_mb + host_bwd_ex;
  out.stage_micro_batch = (layer_fwd + layer_bwd + layer_rec) * layers_stage + edges_mb +
                          tp.edge * tp_expose + host_fwd_ex + host_bwd_ex;
  const Seconds memory_bound_mb =
      (blk.elementwise_forward + blk.elementwise_backward) * layers_stage +
      edge.head_memory_bound + (l.pp == 1 ? edge.embedding_memory_bound : Seconds(0.0));

  // Communication, each term adding its transfers and returning what it exposes.
  Seconds exposed = record_layer_comm(sink, in, tp, moe, layers_stage);
  Seconds bubble;
  exposed += pipeline_term(sink, in, out.stage_micro_batch, bubble);
  const DataParallelBytes dpb = data_parallel_bytes(in, out.memory.states);
  exposed += data_parallel_term(sink, in, dpb, stage_fwd_mb, stage_bwd_mb, layers_stage,
                                options_.zero_plus_plus);

  // Optimizer step and offload.
  const double opt_params = out.memory.states.optimizer_params;
  const Seconds optimizer = optimizer_step(tr, l, sh, layers_stage, opt_params);
  Seconds offload;
  if (tr.offload != Offload::none)
    offload = optimizer_offload_term(sink, in, opt_params, dpb.local, stage_fwd_mb, stage_bwd_mb);
  if (tr.checkpointing == Checkpointing::full_offload)
    offload += checkpoint_offload_term(sink, in, layer_fwd, layer_bwd + layer_rec, layers_stage);

  // The step.
  TimeBreakdown& tb = out.time;
  tb.compute = ((blk.forward + blk.backward) * layers_stage + edges_mb - memory_bound_mb) * md;
  tb.memory_bound = memory_bound_mb * md;
  tb.host = (host_fwd_ex + host_bwd_ex) * md;
  tb.recompute = recompute_layer * (layers_stage * md);
  tb.communication_exposed = exposed;
  tb.bubble = bubble;
  tb.optimizer = optimizer;
  tb.offload = offload;
  tb.forward_phase = stage_fwd_mb * md;
  tb.backward_phase = stage_bwd_mb * md;
  tb.kernels_forward = host.kernels_forward * md;
  tb.kernels_backward = host.kernels_backward * md;
  tb.step = tb.compute + tb.memory_bound + tb.host + tb.recompute + exposed + bubble + optimizer +
            offload;
  throughput(out, tr, sh.flops, d.peak);
  return out;
}

void Evaluator::throughput(StepCost& out, const model::Training& tr,
                           const model::FlopCoefficients& flops, FlopsPerSecond peak) const {
  const double step = out.time.step.value();
  const double tokens = dbl(out.global_batch) * dbl(tr.seq);
  out.tokens_per_s = tokens / step;
  out.samples_per_s = dbl(out.global_batch) / step;
  // MFU: Korthikanti et al. 2022 Eq. 7 (no recomputation); HFU adds the replayed forward (Eq. 8).
  const double replicas = dbl(tr.grad_accum) * out.layout.dp;
  out.model_flops = model::model_flops(flops, tr) * replicas;
  out.hardware_flops = out.model_flops + model::micro_batch_flops(flops, tr).recompute * replicas;
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
