#pragma once
// What the replay's parts share (replay.cpp, replay_collectives.cpp): the list of components one
// step is made of, as the evaluator prices them.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "trainplan/model/block_ops.hpp"
#include "trainplan/planner/replay.hpp"

namespace trainplan::planner::replay_detail {

using hardware::Collective;
using model::Role;

[[nodiscard]] inline constexpr double dbl(std::int64_t v) { return static_cast<double>(v); }

// The pieces of compute.cpp and evaluator.cpp that the replay needs at a finer grain than their
// public results. Each is checked against those results by tests/planner/test_replay.cpp (the
// components add up to the evaluator's compute, memory-bound, recompute and communication times).

// The gradient the optimizer step reads: the parameter dtype under PyTorch autocast, fp32 main
// gradients beside a 16-bit model for DeepSpeed and Megatron (optimizer_step.cpp).
[[nodiscard]] inline double step_gradient_bytes(const model::Training& tr) {
  switch (tr.framework) {
    case Framework::pytorch:
      return param_bytes(tr.precision);
    case Framework::deepspeed:
    case Framework::megatron:
      return is_mixed(tr.precision) ? 4.0 : param_bytes(tr.precision);
  }
  return param_bytes(tr.precision);
}

[[nodiscard]] inline Transfer transfer_of(Collective c) {
  switch (c) {
    case Collective::all_reduce:
      return Transfer::all_reduce;
    case Collective::all_gather:
      return Transfer::all_gather;
    case Collective::reduce_scatter:
      return Transfer::reduce_scatter;
    case Collective::all_to_all:
      return Transfer::all_to_all;
    case Collective::broadcast:
    case Collective::send_recv:
      return Transfer::send_recv;
  }
  return Transfer::send_recv;
}

class Components {
 public:
  explicit Components(const StepCost& cost) : cost_(cost) {}

  void add(std::string name, ReplayPhase phase, ReplayWork work, double count, double recomputed,
           Seconds predicted, double exposed = 1.0) {
    if (!(count > 0.0)) return;
    out_.push_back(ReplayComponent{std::move(name), phase, std::move(work), count, recomputed,
                                   predicted, exposed});
  }

  Seconds gemm(std::string name, ReplayPhase phase, const ComputeDevice& d, GemmWork g,
               double count, double recomputed) {
    if (g.m <= 0 || g.n <= 0 || g.k <= 0) return Seconds(0.0);
    g.dtype = d.gemm_dtype;
    const Seconds t = gemm_time(d, g.m, g.n, g.k, dbl(g.batch));
    add(std::move(name), phase, g, count, recomputed, t);
    return t;
  }

  // A collective the evaluator prices as one transfer of `size` taking `time`; messages above the
  // limit run as equal slices.
  void collective(std::string name, ReplayPhase phase, CollectiveWork w, Seconds time, double count,
                  double recomputed, Bytes max_message) {
    if (!(w.size.value() > 0.0) || !(count > 0.0)) return;
    const double slices = std::max(1.0, std::ceil(w.size.value() / max_message.value()));
    w.size = w.size / slices;
    const double exposed = exposed_share(transfer_of(w.collective), w.purpose);
    if (slices > 1.0) name += fmt::format(" ({:.0f} slices)", slices);
    add(std::move(name), phase, w, count * slices, recomputed * slices, time / slices, exposed);
  }

  [[nodiscard]] std::vector<ReplayComponent> take() { return std::move(out_); }

 private:
  // Exposed over total time of the evaluator's term of this kind and purpose.
  [[nodiscard]] double exposed_share(Transfer kind, CommPurpose purpose) const {
    Seconds time;
    Seconds exposed;
    for (std::size_t i = 0; i < cost_.comm_count; ++i) {
      const CommTerm& t = cost_.comm[i];
      if (t.kind != kind || t.purpose != purpose) continue;
      time += t.time;
      exposed += t.exposed;
    }
    return time.value() > 0.0 ? std::clamp(exposed / time, 0.0, 1.0) : 1.0;
  }

  const StepCost& cost_;
  std::vector<ReplayComponent> out_;
};

// ZeRO-3's and FSDP's collectives per unit, as Evaluator::cost prices them: the forward gathers,
// the backward gathers of `regathered` (what the strategy freed after forward: regathered_params),
// the gradient reductions, and the hybrid replicas' all-reduce.
void add_sharded_collectives(Components& out, const model::Training& tr, const Layout& l,
                             const LinkModel& links, const EstimateOptions& estimate_options,
                             double layers, double md, double psi, Bytes grads, Bytes params,
                             Bytes regathered, const Placement& shg, Bytes max_msg);

// A layer's collectives from its op list, averaged over the stacks as the evaluator averages them.
model::LayerCollectives layer_collectives(const model::Architecture& a, const model::Training& tr);

// Tensor-parallel collectives, as Evaluator::cost prices them: `pairs` f/g pairs a layer and pass.
void add_tensor_parallel_collectives(Components& out, const model::Architecture& a,
                                     const model::Training& tr, const Layout& l,
                                     const LinkModel& links, double layers, double md,
                                     Bytes max_msg, double pairs);

// MoE dispatch and combine all-to-alls, as Evaluator::cost prices them.
void add_expert_collectives(Components& out, const model::Architecture& a,
                            const model::Training& tr, const Layout& l, const LinkModel& links,
                            double layers, double md, Bytes max_msg, double per_pass);

// Pipeline send/recv between stages, as Evaluator::cost prices it.
void add_pipeline_collectives(Components& out, const model::Architecture& a,
                              const model::Training& tr, const Layout& l, const LinkModel& links,
                              double md, Bytes max_msg);

// Data-parallel gradient and parameter traffic of each strategy, as Evaluator::cost prices it.
void add_data_parallel_collectives(Components& out, const model::Architecture& a,
                                   const model::Training& tr, const StepCost& cost,
                                   const LinkModel& links, const EstimateOptions& estimate_options,
                                   const TimeConventions& tc, double layers, double md,
                                   Bytes max_msg);

}  // namespace trainplan::planner::replay_detail
