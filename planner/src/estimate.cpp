#include "trainplan/planner/estimate.hpp"

#include <algorithm>

#include "trainplan/hardware/collective.hpp"
#include "trainplan/model/flops.hpp"
#include "trainplan/planner/fit.hpp"

namespace trainplan::planner {

// First cut: compute at a fixed fraction of peak, data-parallel gradient all-reduce on the ring.
// Refined by the time model proper (compute.hpp, communication.hpp).
Estimate evaluate(const model::Architecture& a, const model::ParameterCounts& n,
                  const model::Training& tr, const hardware::Cluster& c,
                  const hardware::HardwareProfile* profile, const MemoryConventions& mc) {
  (void)profile;
  Estimate e;
  e.training = tr;
  e.layout = make_layout(a, tr, c);
  e.memory = memory(a, n, tr, e.layout, mc);
  e.fits = e.memory.device_total <= c.gpu.usable_memory;
  e.max_micro_batch = max_micro_batch(a, n, tr, e.layout, c.gpu.usable_memory, mc);
  e.global_batch = tr.micro_batch * tr.grad_accum * e.layout.dp;

  const model::StepFlops f = model::micro_batch_flops(a, tr);
  const double per_gpu = 1.0 / (e.layout.tp * e.layout.pp);
  const double m = static_cast<double>(tr.grad_accum);
  const FlopsPerSecond peak = hardware::peak_flops(c.gpu, tr.precision);
  const FlopsPerSecond rate = peak * 0.6;
  e.time.compute = (f.forward + f.backward) * (m * per_gpu) / rate;
  e.time.recompute = f.recompute * (m * per_gpu) / rate;
  if (e.layout.pp > 1)
    e.time.bubble = (e.time.compute + e.time.recompute) *
                    (static_cast<double>(e.layout.pp - 1) / (tr.pp_virtual * m));
  if (e.layout.dp > 1) {
    const Bytes grads(2.0 * static_cast<double>(n.total) * per_gpu);
    const auto coll = hardware::Collective::all_reduce;
    const BytesPerSecond bw = c.nodes > 1 ? c.inter_node.per_node() / c.gpus_per_node
                                          : c.gpu.intra_node.bandwidth;
    const Seconds t = hardware::ring_time(coll, e.layout.dp, grads, Seconds(10e-6), bw);
    CommunicationItem item{"all_reduce", "data-parallel gradients", c.nodes > 1 ? "network" : "nvlink",
                           grads * hardware::bus_factor(coll, e.layout.dp), t, t * 0.2};
    e.time.communication_exposed = item.exposed;
    e.communication.push_back(item);
  }
  e.time.step = e.time.compute + e.time.recompute + e.time.bubble + e.time.communication_exposed +
                e.time.optimizer + e.time.offload;
  const double tokens = static_cast<double>(e.global_batch * tr.seq);
  e.throughput.tokens_per_s = tokens / e.time.step.value();
  e.throughput.samples_per_s = static_cast<double>(e.global_batch) / e.time.step.value();
  e.throughput.peak = peak;
  const double model_flops = model::model_flops_per_token(a, tr.seq).value() * tokens;
  const double denom = e.time.step.value() * c.world() * peak.value();
  e.throughput.mfu = model_flops / denom;
  e.throughput.hfu = ((f.total()).value() * m * e.layout.dp) / denom;
  e.throughput.mfu_formula = "model FLOPs per token x tokens per step / (step time x GPUs x peak)";
  return e;
}

}  // namespace trainplan::planner
