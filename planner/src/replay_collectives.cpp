#include "replay_components.hpp"

#include <string_view>

#include "step_comm.hpp"
#include "trainplan/model/model_states.hpp"
#include "trainplan/planner/compute.hpp"
#include "trainplan/planner/optimizer_step.hpp"

namespace trainplan::planner::replay_detail {

void add_sharded_collectives(Components& out, const model::Training& tr, const Layout& l,
                             const LinkModel& links, const EstimateOptions& estimate_options,
                             double layers, double md, double psi, Bytes grads, Bytes params,
                             Bytes regathered, const Placement& shg, Bytes max_msg) {
  const auto work = [&](Collective k, CommPurpose p, Bytes size, const Placement& g, int stride) {
    return CollectiveWork{k, p, size, g, stride, tier_of(links, g)};
  };
  const auto bwd = ReplayPhase::backward;
  // Units gathered one at a time: one per block, or the whole stage without a wrap policy.
  const double units = tr.fsdp_wrap == FsdpWrap::none ? 1.0 : layers;
  const double per_step = units * md;
  // Under FSDP's no_sync accumulation only the last micro-batch reduces (the evaluator's
  // gradient_reductions).
  const double reduced_per_step = units * (tr.accumulates_unsharded_gradients() ? 1.0 : md);
  const bool zpp = estimate_options.zero_plus_plus && tr.strategy == Strategy::zero3;
  const bool regather = tr.strategy != Strategy::fsdp_grad_op;
  if (zpp) {
    // ZeRO++ (Wang et al. 2023): int8 forward gathers, node-local 16-bit backward gathers
    // from the secondary shard, int4 gradients by all-to-all.
    Placement node = shg;
    node.ranks = std::max(1, shg.per_node);
    node.nodes = 1;
    const Bytes fwd_size(psi * kQwzBytes / units);
    const Bytes grad_size(psi * kQgzBytes / units);
    out.collective("forward parameter all_gather (int8, per unit)", ReplayPhase::forward,
                   work(Collective::all_gather, CommPurpose::parameter_gather_forward,
                        fwd_size, shg, l.tp),
                   collective_time(links, Collective::all_gather, shg, fwd_size), per_step,
                   0.0, max_msg);
    out.collective("backward parameter all_gather (node, per unit)", bwd,
                   work(Collective::all_gather, CommPurpose::parameter_gather_backward,
                        params / units, node, l.tp),
                   collective_time(links, Collective::all_gather, node, params / units),
                   per_step, 0.0, max_msg);
    out.collective("gradient all_to_all (int4, per unit)", bwd,
                   work(Collective::all_to_all, CommPurpose::gradient_reduce_scatter,
                        grad_size, shg, l.tp),
                   collective_time(links, Collective::all_to_all, shg, grad_size), per_step,
                   0.0, max_msg);
  } else {
    const Bytes unit_params = params / units;
    const Seconds ag = collective_time(links, Collective::all_gather, shg, unit_params);
    out.collective("forward parameter all_gather (per unit)", ReplayPhase::forward,
                   work(Collective::all_gather, CommPurpose::parameter_gather_forward,
                        unit_params, shg, l.tp),
                   ag, per_step, 0.0, max_msg);
    if (regather && regathered.value() > 0.0) {
      const Bytes unit_regathered = regathered / units;
      out.collective("backward parameter all_gather (per unit)", bwd,
                     work(Collective::all_gather, CommPurpose::parameter_gather_backward,
                          unit_regathered, shg, l.tp),
                     collective_time(links, Collective::all_gather, shg, unit_regathered), per_step, 0.0,
                     max_msg);
    }
    out.collective("gradient reduce_scatter (per unit)", bwd,
                   work(Collective::reduce_scatter, CommPurpose::gradient_reduce_scatter,
                        grads / units, shg, l.tp),
                   collective_time(links, Collective::reduce_scatter, shg, grads / units),
                   reduced_per_step, 0.0, max_msg);
  }
  if (tr.strategy == Strategy::fsdp_hybrid) {
    const Placement rg = replica_group(l);
    const Bytes shard_grads = grads / static_cast<double>(std::max(1, l.shard)) / units;
    out.collective("replica gradient all_reduce (per unit)", bwd,
                   work(Collective::all_reduce, CommPurpose::replica_gradients, shard_grads,
                        rg, l.tp * std::max(1, l.shard)),
                   collective_time(links, Collective::all_reduce, rg, shard_grads), reduced_per_step,
                   0.0, max_msg);
  }
}

// A layer's collectives from its op list, averaged over the stacks as the evaluator averages them.
model::LayerCollectives layer_collectives(const model::Architecture& a, const model::Training& tr) {
  const model::Stack main = a.encoder_decoder ? model::Stack::encoder : model::Stack::decoder;
  model::LayerCollectives n = model::stack_ops(a, tr, main).collectives();
  if (a.encoder_decoder) {
    const model::LayerCollectives dec = model::stack_ops(a, tr, model::Stack::decoder).collectives();
    const double we = dbl(a.layers) / dbl(a.total_layers());
    n = n * we + dec * (1.0 - we);
  }
  return n;
}

// Tensor-parallel collectives, as Evaluator::cost prices them: `pairs` f/g pairs a layer and pass.
void add_tensor_parallel_collectives(Components& out, const model::Architecture& a,
                                     const model::Training& tr, const Layout& l,
                                     const LinkModel& links, double layers, double md,
                                     Bytes max_msg, double pairs) {
  const double c_bytes = compute_bytes(tr.precision);
  const Placement g = tensor_parallel_group(l);
  const Bytes x = tensor_parallel_message(tr.sequences(), tr.local_seq(), a.hidden, c_bytes);
  const TensorParallelCollectives all =
      tensor_parallel_collectives(pairs, tr.sequence_parallel, tr.checkpointing);
  const double replays = (all.all_reduce + all.all_gather) - 2.0 * pairs;
  const double edges = l.pp == 1 ? 2.0 : 1.0;  // vocabulary-parallel embedding, head input grad
  const double count = ((2.0 * pairs + replays) * layers + edges) * md;
  const double recomputed = replays * layers * md;
  const CollectiveWork w{Collective::all_reduce, CommPurpose::tensor_parallel, x, g, 1,
                         tier_of(links, g)};
  if (tr.sequence_parallel) {
    for (const Collective k : {Collective::all_gather, Collective::reduce_scatter}) {
      CollectiveWork wk = w;
      wk.collective = k;
      out.collective(fmt::format("tensor-parallel {} (forward and backward)", to_string(k)),
                     ReplayPhase::forward, wk, collective_time(links, k, g, x), count, recomputed,
                     max_msg);
    }
  } else {
    out.collective("tensor-parallel all_reduce (forward and backward)", ReplayPhase::forward, w,
                   collective_time(links, Collective::all_reduce, g, x), count, recomputed,
                   max_msg);
  }
}

// MoE dispatch and combine all-to-alls, as Evaluator::cost prices them.
void add_expert_collectives(Components& out, const model::Architecture& a,
                            const model::Training& tr, const Layout& l, const LinkModel& links,
                            double layers, double md, Bytes max_msg, double per_pass) {
  const Placement g = expert_parallel_group(l);
  const Bytes msg = expert_all_to_all_message(a, tr);
  const CollectiveWork w{Collective::all_to_all, CommPurpose::expert_all_to_all, msg, g, l.tp,
                         tier_of(links, g)};
  out.collective("MoE all_to_all (dispatch and combine, forward and backward)",
                 ReplayPhase::forward, w, collective_time(links, Collective::all_to_all, g, msg),
                 2.0 * per_pass * layers * md, 0.0, max_msg);
}

// Pipeline send/recv between stages, as Evaluator::cost prices it.
void add_pipeline_collectives(Components& out, const model::Architecture& a,
                              const model::Training& tr, const Layout& l, const LinkModel& links,
                              double md, Bytes max_msg) {
  const double c_bytes = compute_bytes(tr.precision);
  const bool split = tr.framework == Framework::megatron || tr.sequence_parallel;
  const Bytes msg = pipeline_message(tr.sequences(), tr.local_seq(), a.hidden, c_bytes, l.tp, split);
  const Placement pair = pipeline_pair(l);
  const CollectiveWork w{Collective::send_recv, CommPurpose::pipeline, msg, pair,
                         l.tp * l.cp * l.dp,    tier_of(links, pair)};
  // Each micro-batch crosses each of the stage's v boundaries both ways; fill and drain add p - 1
  // crossings each way.
  const double sends = 2.0 * (dbl(tr.pp_virtual) * md + (l.pp - 1));
  out.collective("pipeline send/recv (both directions)", ReplayPhase::forward, w,
                 collective_time(links, Collective::send_recv, pair, msg), sends, 0.0, max_msg);
}

// Data-parallel gradient and parameter traffic of each strategy, as Evaluator::cost prices it.
void add_data_parallel_collectives(Components& out, const model::Architecture& a,
                                   const model::Training& tr, const StepCost& cost,
                                   const LinkModel& links, const EstimateOptions& estimate_options,
                                   const TimeConventions& tc, double layers, double md,
                                   Bytes max_msg) {
  const Layout& l = cost.layout;
  const double c_bytes = compute_bytes(tr.precision);
  const ModelStates& ms = cost.memory.states;
  if (l.replicas() > 1 && tr.strategy != Strategy::single) {
    // The data-parallel bytes as the evaluator counts them (experts' at their share of the ring).
    const DataParallelBytes dpb = data_parallel_bytes(TermInputs{links, a, tr, l, tc, md, c_bytes}, ms);
    const double psi = dpb.psi;
    const double local = dpb.local;
    const Bytes grads = dpb.grads;
    const Bytes params = dpb.params;
    const Placement dpg = data_parallel_group(l);
    const Placement shg = shard_group(l);
    const auto work = [&](Collective k, CommPurpose p, Bytes size, const Placement& g, int stride) {
      return CollectiveWork{k, p, size, g, stride, tier_of(links, g)};
    };
    const auto step = ReplayPhase::step;
    const auto bwd = ReplayPhase::backward;
    // The gradients reduced in the framework's buckets (gradient_buckets), as the evaluator prices
    // them: the full buckets, then the rest.
    const auto bucketed = [&](Collective k, CommPurpose purpose, const std::string& name,
                              double times) {
      const GradientBuckets b = gradient_buckets(tr, tc, grads, local, dpg.ranks);
      const std::string_view dtype = gradient_comm_dtype(tr);
      out.collective(name, bwd, work(k, purpose, b.bucket, dpg, l.tp),
                     collective_time(links, k, dpg, b.bucket, dtype), b.full * times, 0.0, max_msg);
      if (b.rest.value() > 0.0)
        out.collective(name + " (last bucket)", bwd, work(k, purpose, b.rest, dpg, l.tp),
                       collective_time(links, k, dpg, b.rest, dtype), times, 0.0, max_msg);
    };
    switch (tr.strategy) {
      case Strategy::single:
        break;
      case Strategy::ddp:
        bucketed(Collective::all_reduce, CommPurpose::data_parallel_gradients,
                 "data-parallel gradient all_reduce", tr.sync_each_batch ? md : 1.0);
        break;
      case Strategy::zero1:
      case Strategy::zero2: {
        const double reductions = tr.strategy == Strategy::zero1 ? 1.0 : md;
        bucketed(Collective::reduce_scatter, CommPurpose::gradient_reduce_scatter,
                 "gradient reduce_scatter", reductions);
        out.collective(
            "parameter all_gather after the step", step,
            work(Collective::all_gather, CommPurpose::parameter_gather_step, params, dpg, l.tp),
            collective_time(links, Collective::all_gather, dpg, params), 1.0, 0.0, max_msg);
        break;
      }
      case Strategy::fsdp_grad_op:
      case Strategy::zero3:
      case Strategy::fsdp_full:
      case Strategy::fsdp_hybrid: {
        add_sharded_collectives(out, tr, l, links, estimate_options, layers, md, psi, grads, params,
                                regathered_params(tr, dpb), shg, max_msg);
        break;
      }
    }
  }
}

// The optimizer step's kernels and host work, and the step's model-only terms.

}  // namespace trainplan::planner::replay_detail
