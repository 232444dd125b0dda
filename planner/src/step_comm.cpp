#include "step_comm.hpp"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "trainplan/model/model_states.hpp"
#include "trainplan/model/partial.hpp"

namespace trainplan::planner {
namespace {

using hardware::Collective;

[[nodiscard]] constexpr double dbl(std::int64_t v) { return static_cast<double>(v); }
[[nodiscard]] Seconds pos(Seconds s) { return std::max(s, Seconds(0.0)); }

// Whether the framework overlaps the data-parallel gradient reduction with backward.
[[nodiscard]] bool overlaps_gradient_reduce(const model::Training& tr, const TimeConventions& tc) {
  switch (tr.framework) {
    case Framework::pytorch:
      return true;  // DDP buckets, FSDP post-backward hooks
    case Framework::deepspeed:
      return tr.strategy != Strategy::ddp && !tr.no_overlap_comm;  // overlap_comm for ZeRO
    case Framework::megatron:
      return tc.megatron_overlap_grad_reduce;
  }
  return false;
}

// DDP: the gradients all-reduced in buckets (gradient_buckets), overlapped with the last
// micro-batch's backward, or after backward; after every micro-batch's with sync_each_batch.
Seconds ddp_term(TermSink& sink, const TermInputs& in, const DataParallelBytes& b,
                 Seconds bwd_last) {
  const Placement dpg = data_parallel_group(in.l);
  const DataParallelVolume v =
      data_parallel_volume(Strategy::ddp, b.grads, b.params, dpg.ranks, in.tr.grad_accum);
  const GradientBuckets k = gradient_buckets(in.tr, in.tc, b.grads, b.local, dpg.ranks);
  const std::string_view dtype = gradient_comm_dtype(in.tr);
  const Seconds bucket = collective_time(in.links, Collective::all_reduce, dpg, k.bucket, dtype);
  const Seconds t =
      bucket * k.full + collective_time(in.links, Collective::all_reduce, dpg, k.rest, dtype);
  const Seconds ex = overlaps_gradient_reduce(in.tr, in.tc) ? std::max(bucket, t - bwd_last) : t;
  // Under no_sync only the last micro-batch reduces; with sync_each_batch every one does.
  const double reductions = in.tr.sync_each_batch ? in.md : 1.0;
  sink.add(Transfer::all_reduce, CommPurpose::data_parallel_gradients, tier_of(in.links, dpg),
           dpg.ranks, v.all_reduce * reductions, t * reductions, ex * reductions);
  return ex * reductions;
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
  const GradientBuckets k = gradient_buckets(in.tr, in.tc, b.grads, b.local, dpg.ranks);
  const std::string_view dtype = gradient_comm_dtype(in.tr);
  const Seconds bucket = collective_time(in.links, Collective::reduce_scatter, dpg, k.bucket, dtype);
  const Seconds rs =
      bucket * k.full + collective_time(in.links, Collective::reduce_scatter, dpg, k.rest, dtype);
  const Seconds rs_ex = overlaps_gradient_reduce(in.tr, in.tc) ? std::max(bucket, rs - bwd_last) : rs;
  const Seconds ag = collective_time(in.links, Collective::all_gather, dpg, b.params);
  const LinkTier tier = tier_of(in.links, dpg);
  sink.add(Transfer::reduce_scatter, CommPurpose::gradient_reduce_scatter, tier, dpg.ranks,
           v.reduce_scatter, rs * reductions, rs_ex * reductions);
  sink.add(Transfer::all_gather, CommPurpose::parameter_gather_step, tier, dpg.ranks, v.all_gather,
           ag, ag);
  return rs_ex * reductions + ag;
}

// Micro-batches per step whose backward reduces the gradients: one under FSDP's no_sync
// accumulation (Training::accumulates_unsharded_gradients), every one otherwise.
double gradient_reductions(const TermInputs& in) {
  return in.tr.accumulates_unsharded_gradients() ? 1.0 : in.md;
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
  // FSDP2's reshard_after_forward=N: backward gathers over the N ranks of the post-forward copy;
  // =1 keeps every unit gathered, as SHARD_GRAD_OP does.
  const int post_forward = post_forward_ranks(in.tr, in.l);
  const bool regather = st != Strategy::fsdp_grad_op && post_forward != 1;
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
    u.rs = collective_time(in.links, Collective::reduce_scatter, u.shard, b.grads / units,
                           gradient_comm_dtype(in.tr));
    // The volume counts two gathers a micro-batch for a strategy that reshards.
    u.ag_f_bytes = regather || post_forward == 1 ? v.all_gather * 0.5 : v.all_gather;
    // Backward gathers again what was freed after forward: under PyTorch's FSDP not the root unit
    // (regathered_params), over the post-forward copy's ranks where FSDP2 keeps one.
    const Bytes again = regathered_params(in.tr, b);
    if (post_forward > 1) u.node = post_forward_group(in.l, post_forward);
    if (regather && again.value() > 0.0) {
      u.ag_b = collective_time(in.links, Collective::all_gather, u.node, again / units);
      u.ag_b_bytes = bytes_sent(Collective::all_gather, u.node.ranks, again) * static_cast<double>(in.tr.grad_accum);
    }
    u.rs_bytes = v.reduce_scatter * (gradient_reductions(in) / in.md);
  }
  if (st == Strategy::fsdp_hybrid) {
    u.replica = replica_group(in.l);
    const Bytes shard_grads = b.grads / static_cast<double>(std::max(1, in.l.shard));
    u.ar = collective_time(in.links, Collective::all_reduce, u.replica, shard_grads / units,
                           gradient_comm_dtype(in.tr));
    u.ar_bytes = bytes_sent(Collective::all_reduce, u.replica.ranks, shard_grads) * gradient_reductions(in);
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
  // DeepSpeed without overlap_comm reduces each unit's gradients on the compute stream: waited for.
  const bool hidden_rs = in.tr.framework != Framework::deepspeed || !in.tr.no_overlap_comm;
  const Seconds bwd_ex = hidden_rs ? u.rs + u.ar + pos(u.ag_b + u.rs + u.ar - stage_bwd / units) * (units - 1.0)
                                   : u.rs * units + u.ar + pos(u.ag_b + u.ar - stage_bwd / units) * (units - 1.0);
  // A micro-batch that reduces nothing (no_sync) waits only for gathers the compute does not hide.
  const double reductions = gradient_reductions(in);
  const Seconds bwd_ex_gather_only = pos(u.ag_b - stage_bwd / units) * (units - 1.0);
  const Seconds bwd_total = bwd_ex * reductions + bwd_ex_gather_only * (md - reductions);
  // Split the backward exposure between the kinds in proportion to their time.
  const Seconds ag_f_t = u.ag_f * (units * md);
  const Seconds ag_b_t = u.ag_b * (units * md);
  const Seconds rs_t = u.rs * (units * reductions);
  const Seconds ar_t = u.ar * (units * reductions);
  const Seconds bwd_t = ag_b_t + rs_t + ar_t;
  auto share = [&](Seconds part) {
    return bwd_t.value() > 0.0 ? bwd_total * (part / bwd_t) : Seconds(0.0);
  };
  const LinkTier tier = tier_of(in.links, u.shard);
  sink.add(Transfer::all_gather, CommPurpose::parameter_gather_forward, tier, u.shard.ranks,
           u.ag_f_bytes, ag_f_t, fwd_ex * md);
  sink.add(Transfer::all_gather, CommPurpose::parameter_gather_backward, tier_of(in.links, u.node),
           u.node.ranks, u.ag_b_bytes, ag_b_t, share(ag_b_t));
  sink.add(zpp ? Transfer::all_to_all : Transfer::reduce_scatter,
           CommPurpose::gradient_reduce_scatter, tier, u.shard.ranks, u.rs_bytes, rs_t,
           share(rs_t));
  if (st == Strategy::fsdp_hybrid)
    sink.add(Transfer::all_reduce, CommPurpose::replica_gradients, tier_of(in.links, u.replica),
             u.replica.ranks, u.ar_bytes, ar_t, share(ar_t));
  return fwd_ex * md + bwd_total;
}

}  // namespace

// Declared, with what each term counts and its source, in step_comm.hpp.

LayerComm tensor_parallel_comm(const TermInputs& in, double pairs) {
  LayerComm out;
  const model::Training& tr = in.tr;
  if (in.l.tp <= 1) return out;
  out.group = tensor_parallel_group(in.l);
  const Bytes x = tensor_parallel_message(tr.sequences(), tr.local_seq(), in.a.hidden, in.c);
  const double replayed = model::checkpoint_picked_share(in.a, tr);
  const TensorParallelCollectives all =
      tensor_parallel_collectives(pairs, tr.sequence_parallel, tr.checkpointing, replayed);
  const Seconds one =
      tr.sequence_parallel
          ? collective_time(in.links, Collective::all_gather, out.group, x) +
                collective_time(in.links, Collective::reduce_scatter, out.group, x)
          : collective_time(in.links, Collective::all_reduce, out.group, x);
  out.forward = one * pairs;
  out.backward = one * pairs;
  out.recompute = one * ((all.all_reduce + all.all_gather) - 2.0 * pairs);
  out.bytes = tensor_parallel_bytes_per_layer(tr.sequences(), tr.local_seq(), in.a.hidden, in.l.tp, in.c, pairs,
                                              tr.sequence_parallel, tr.checkpointing, replayed);
  // Vocabulary-parallel embedding (forward) and LM-head input gradient (backward): one each.
  const int edges = in.l.pp == 1 ? 2 : 1;
  out.edge = one * edges;
  out.edge_bytes =
      tensor_parallel_bytes(tr.sequences(), tr.local_seq(), in.a.hidden, in.l.tp, in.c, tr.sequence_parallel, edges);
  return out;
}

LayerComm expert_comm(const TermInputs& in, double per_pass) {
  LayerComm out;
  const Layout& l = in.l;
  if (!in.a.is_moe() || l.ep <= 1 || per_pass <= 0.0) return out;
  out.group = expert_parallel_group(l);
  const Bytes msg = expert_all_to_all_message(in.a, in.tr);
  const double per_layer = 2.0 * per_pass;  // forward and backward
  const Seconds t = collective_time(in.links, Collective::all_to_all, out.group, msg) * per_layer;
  out.forward = t * 0.5;
  out.backward = t * 0.5;
  out.bytes = bytes_sent(Collective::all_to_all, out.group.ranks, msg) * per_layer;
  return out;
}

ContextParallelComm context_parallel_comm(const TermInputs& in, Seconds attention_forward) {
  ContextParallelComm out;
  const Layout& l = in.l;
  const model::Training& tr = in.tr;
  if (l.cp <= 1) return out;
  out.group = context_parallel_group(l);
  const model::Architecture& a = in.a;
  const double tokens = dbl(tr.tokens_per_micro_batch());
  const double k_width = dbl(std::max(a.kv_dim() / l.tp, a.head_dim));
  const double v_width = dbl(std::max<std::int64_t>(1, a.kv_heads / l.tp) * a.value_head_dim());
  const Bytes chunk(tokens * (k_width + v_width) * in.c);
  // Replayed attention exchanges again: in the blocks checkpointing wraps (Training::checkpoint_every).
  const double passes = tr.checkpointing == Checkpointing::none ? 0.0
                        : recomputes_blocks(tr.checkpointing) ? model::checkpoint_picked_share(a, tr)
                                                               : 1.0;
  const double steps = dbl(l.cp - 1);
  switch (tr.cp_comm) {
    case CpComm::ring: {
      // Neighbours on the ring: a hop leaves the domain only where the group does.
      const Placement pair{2, out.group.nodes > 1 ? 1 : 2, out.group.nodes > 1 ? 2 : 1};
      const Seconds send = collective_time(in.links, Collective::send_recv, pair, chunk);
      out.forward = send * steps;
      out.backward = send * (2.0 * steps);
      const Seconds attention_backward = attention_forward * model::kFusedAttentionBackwardRatio;
      out.forward_exposed = pos(out.forward - attention_forward);
      out.backward_exposed = pos(out.backward - attention_backward);
      out.bytes = chunk * (steps * (3.0 + passes));
      break;
    }
    case CpComm::all_gather: {
      const Bytes gathered = chunk * dbl(l.cp);
      const Seconds gather = collective_time(in.links, Collective::all_gather, out.group, gathered);
      const Seconds scatter = collective_time(in.links, Collective::reduce_scatter, out.group, gathered);
      out.forward = gather;
      out.backward = gather + scatter;
      out.forward_exposed = out.forward;
      out.backward_exposed = out.backward;
      const Bytes one = bytes_sent(Collective::all_gather, l.cp, gathered);
      out.bytes = one * (3.0 + passes);
      break;
    }
    case CpComm::all_to_all: {
      const double q_width = dbl(a.q_dim()) / l.tp;
      const double o_width = dbl(a.attention_out_dim()) / l.tp;
      const Bytes each(tokens * (q_width + k_width + v_width + o_width) * in.c);
      const Seconds t = collective_time(in.links, Collective::all_to_all, out.group, each);
      out.forward = t;
      out.backward = t;
      out.forward_exposed = t;
      out.backward_exposed = t;
      out.bytes = bytes_sent(Collective::all_to_all, l.cp, each) * (2.0 + passes);
      break;
    }
  }
  out.recompute = out.forward * passes;
  out.recompute_exposed = out.forward_exposed * passes;
  return out;
}

Seconds record_context_parallel(TermSink& sink, const TermInputs& in, const ContextParallelComm& cp,
                                double layers) {
  if (in.l.cp <= 1) return Seconds(0.0);
  const double n = layers * in.md;
  const Seconds t = (cp.forward + cp.backward + cp.recompute) * n;
  const Seconds exposed = (cp.forward_exposed + cp.backward_exposed + cp.recompute_exposed) * n;
  const Transfer kind = in.tr.cp_comm == CpComm::ring         ? Transfer::send_recv
                        : in.tr.cp_comm == CpComm::all_gather ? Transfer::all_gather
                                                              : Transfer::all_to_all;
  sink.add(kind, CommPurpose::context_parallel, tier_of(in.links, cp.group), in.l.cp, cp.bytes * n, t,
           exposed);
  return exposed;
}

double tp_exposed_share(const model::Training& tr, const LayerComm& tp, Seconds gemm_forward,
                        Seconds gemm_backward, double tp_overlap) {
  const double fixed = 1.0 - tp_overlap;
  if (!tr.tp_comm_overlap || tr.tp <= 1) return fixed;
  // Each collective split into tp chunks, chunk i+1 in flight while the GEMM runs on chunk i: the
  // first chunk waits, the rest hides behind the layer's GEMMs of the same pass.
  const double first = 1.0 / static_cast<double>(tr.tp);
  const auto exposed = [&](Seconds comm, Seconds gemm) {
    return comm * first + pos(comm * (1.0 - first) - gemm);
  };
  const Seconds total = tp.forward + tp.backward;
  if (total.value() <= 0.0) return fixed;
  return (exposed(tp.forward, gemm_forward) + exposed(tp.backward, gemm_backward)) / total;
}

Seconds record_layer_comm(TermSink& sink, const TermInputs& in, double tp_expose, const LayerComm& tp,
                          const LayerComm& moe, double layers) {
  const double expose = tp_expose;
  const double moe_expose = 1.0 - in.tc.tp_overlap;
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
             moe.group.ranks, moe.bytes * (layers * in.md), t, t * moe_expose);
    exposed += t * moe_expose;
  }
  return exposed;
}

Seconds pipeline_term(TermSink& sink, const TermInputs& in, Seconds stage_micro_batch,
                      Seconds& bubble) {
  const Layout& l = in.l;
  const model::Training& tr = in.tr;
  if (l.pp <= 1) return Seconds(0.0);
  const int v = tr.pp_virtual;
  bubble = stage_micro_batch * (bubble_fraction(l.pp, v, tr.grad_accum) * in.md);
  const bool split = tr.framework == Framework::megatron || tr.sequence_parallel;
  const Bytes msg = pipeline_message(tr.sequences(), tr.local_seq(), in.a.hidden, in.c, l.tp, split);
  const Placement pair = pipeline_pair(l);
  const Seconds one = collective_time(in.links, Collective::send_recv, pair, msg);
  const double sends = 2.0 * (dbl(v) * in.md + (l.pp - 1));
  const Seconds t = one * sends;
  sink.add(Transfer::send_recv, CommPurpose::pipeline, tier_of(in.links, pair), 2,
           msg * (2.0 * dbl(v) * in.md), t, t);
  return t;
}

// FSDP1 keeps its root unit (the embeddings, head and final norm; the whole model without a wrap
// policy) gathered from forward to backward: _post_forward_reshard frees only `not state._is_root`
// (torch/distributed/fsdp/_runtime_utils.py). FSDP2 did too until torch 2.8, which reshards a root
// given reshard_after_forward=True (PRs #154704, #155319; _fully_shard/_fsdp_state.py _lazy_init
// clears only an unspecified root's post_forward_mesh_info): accelerate's fsdp2_prepare_model and
// torchtune's shard_model pass it, torchtitan wraps the embeddings and the output as units of their
// own that stay gathered by default (distributed/fsdp.py: reshard_after_forward_policy ==
// "always"). DeepSpeed's ZeRO-3 and Megatron FSDP fetch every module's parameters again.
Bytes regathered_params(const model::Training& tr, const DataParallelBytes& b) {
  const bool keeps_root = tr.gathers_parameters() && (!tr.runs_fsdp2() || tr.library == Library::torchtitan);
  return keeps_root ? b.params - b.root : b.params;
}

DataParallelBytes data_parallel_bytes(const TermInputs& in, const ModelStates& ms) {
  const Layout& l = in.l;
  const model::Training& tr = in.tr;
  const double expert_share =
      l.replicas() > 1 ? hardware::bus_factor(Collective::reduce_scatter, l.replicas() / l.ep) /
                             hardware::bus_factor(Collective::reduce_scatter, l.replicas())
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
  // Block linears gathered in FP8: one byte each (torchao fsdp_utils.py fsdp_pre_all_gather; MLM
  // uint8 param buffers), their scales negligible.
  out.params -= Bytes(std::min(ms.fp8_gathered, out.psi) * (in.c - 1.0));
  out.root = std::min(out.params, Bytes(ms.root_params * in.c));
  return out;
}

Fsdp2Copies fsdp2_copies(const TermInputs& in, const DataParallelBytes& b) {
  if (!in.tr.runs_fsdp2() || in.l.replicas() <= 1) return {};
  const bool regather = in.tr.strategy != Strategy::fsdp_grad_op && in.tr.strategy != Strategy::zero2 &&
                        post_forward_ranks(in.tr, in.l) != 1;
  const Bytes copy_out = b.params * 2.0;
  const Bytes copy_in = b.grads + Bytes(b.psi * in.c);
  return {copy_out, (regather ? regathered_params(in.tr, b) * 2.0 : Bytes(0.0)) +
                        copy_in * (gradient_reductions(in) / in.md)};
}

Seconds data_parallel_term(TermSink& sink, const TermInputs& in, const DataParallelBytes& b,
                           Seconds stage_fwd, Seconds stage_bwd, double layers,
                           bool zero_plus_plus) {
  if (in.l.replicas() <= 1) return Seconds(0.0);
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

Seconds reference_forward_term(TermSink& sink, const TermInputs& in, const DataParallelBytes& b,
                               Seconds stage_fwd, double layers, bool zero_plus_plus) {
  if (!in.tr.runs_reference()) return Seconds(0.0);
  const Seconds forward = stage_fwd * in.md;
  const Strategy st = in.tr.strategy;
  const bool sharded = st == Strategy::zero3 || is_fsdp(st);
  if (!sharded || in.l.replicas() <= 1) return forward;
  const double units = in.tr.fsdp_wrap == FsdpWrap::none ? 1.0 : layers;
  const UnitComm u = unit_comm(in, b, units, zero_plus_plus && st == Strategy::zero3);
  const Seconds exposed = u.ag_f + pos(u.ag_f - stage_fwd / units) * (units - 1.0);
  sink.add(Transfer::all_gather, CommPurpose::reference_gather, tier_of(in.links, u.shard), u.shard.ranks,
           u.ag_f_bytes, u.ag_f * (units * in.md), exposed * in.md);
  return forward + exposed * in.md;
}

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

Seconds activation_offload_term(TermSink& sink, const TermInputs& in, Seconds layer_fwd, Seconds layer_bwd,
                                Seconds layer_replay, double layers, Bytes per_layer) {
  if (in.tr.checkpointing == Checkpointing::full_offload)
    return checkpoint_offload_term(sink, in, layer_fwd, layer_bwd + layer_replay, layers,
                                   model::checkpoint_bytes(in.a, in.tr));
  if (in.tr.offload_activation_layers > 0)
    return checkpoint_offload_term(sink, in, layer_fwd, layer_bwd,
                                   std::min(static_cast<double>(in.tr.offload_activation_layers), layers), per_layer);
  return Seconds(0.0);
}

Seconds checkpoint_offload_term(TermSink& sink, const TermInputs& in, Seconds layer_fwd,
                                Seconds layer_bwd_and_replay, double layers, Bytes ckpt) {
  const double copies = layers * in.md;  // each way
  const Seconds copy = host_copy_time(in.links, ckpt);
  const Seconds out_ex = pos(copy - layer_fwd) * copies;
  const Seconds back_ex = pos(copy - layer_bwd_and_replay) * copies;
  sink.add(Transfer::device_to_host, CommPurpose::offload_activations, LinkTier::pcie, 1,
           ckpt * copies, copy * copies, out_ex);
  sink.add(Transfer::host_to_device, CommPurpose::offload_activations, LinkTier::pcie, 1,
           ckpt * copies, copy * copies, back_ex);
  return out_ex + back_ex;
}

Seconds overlap_slowdown(const StepCost& cost, Seconds busy, double s) {
  Seconds hidden;
  for (std::size_t i = 0; i < cost.comm_count; ++i) {
    const CommTerm& c = cost.comm[i];
    if (c.kind == Transfer::device_to_host || c.kind == Transfer::host_to_device) continue;
    hidden += pos(c.time - c.exposed);
  }
  return std::min(hidden, busy) * (s / (1.0 + s));
}

GradientBuckets gradient_buckets(const model::Training& tr, const TimeConventions& tc, Bytes grads,
                                 double local_params, int dp_ranks) {
  Bytes bucket = grads;
  switch (tr.framework) {
    case Framework::pytorch:
      bucket = tr.strategy == Strategy::ddp ? tc.ddp_bucket : tc.deepspeed_bucket;
      break;
    case Framework::deepspeed:
      bucket = tc.deepspeed_bucket;
      break;
    case Framework::megatron:
      if (tc.megatron_overlap_grad_reduce && local_params > 0.0)
        bucket = grads * (std::max(40e6, 1e6 * dp_ranks) / local_params);
      break;
  }
  if (!(bucket.value() > 0.0) || grads <= bucket) return {grads, 1.0, Bytes(0.0)};
  const double full = std::floor(grads / bucket);
  return {bucket, full, grads - bucket * full};
}

}  // namespace trainplan::planner
