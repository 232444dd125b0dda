#pragma once
// One fully specified configuration evaluated end to end: memory, step time with its parts,
// throughput, and communication per collective and link tier.

#include <cstdint>
#include <string>
#include <vector>

#include "trainplan/core/units.hpp"
#include "trainplan/hardware/gpu.hpp"
#include "trainplan/model/architecture.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/model/training.hpp"
#include "trainplan/planner/memory.hpp"

namespace trainplan::hardware {
struct HardwareProfile;  // hardware/profile.hpp: measured constants; absent = datasheet defaults
}

namespace trainplan::planner {

struct TimeBreakdown {
  Seconds step;                     // one optimizer step, all micro-batches
  Seconds compute;                  // forward + backward matmuls and attention kernels
  Seconds memory_bound;             // forward + backward elementwise, cast, copy, norm, loss kernels
  Seconds host;                     // host work (kernel issue) the GPU waits for
  Seconds recompute;                // activation checkpointing (GPU)
  Seconds communication_exposed;    // communication not hidden behind compute
  Seconds overlap_slowdown;         // compute slowed by the collectives it hides (they hold SMs)
  Seconds bubble;                   // pipeline fill and drain
  Seconds optimizer;                // optimizer step: kernels and host work (or CPU when offloaded)
  Seconds offload;                  // exposed PCIe transfers of offloading
  Seconds reference;                // DPO's reference forward of every micro-batch (and its gathers)
  // The same step by phase, as a profiler with synchronisation between phases sees it (slowest
  // pipeline stage, all micro-batches, communication excluded): forward and backward (with its
  // recomputation), each the longer of its GPU work and its host work.
  Seconds forward_phase;
  Seconds backward_phase;
  // Kernels launched per step: forward, and backward with its recomputation.
  double kernels_forward = 0;
  double kernels_backward = 0;
};

// Communication of one kind of collective on one link tier, per GPU per optimizer step.
struct CommunicationItem {
  std::string collective;  // all_reduce, all_gather, reduce_scatter, all_to_all, send_recv
  std::string purpose;     // "data-parallel gradients", "FSDP parameter gather", "tensor parallel", ...
  std::string tier;        // nvlink, pcie, network
  Bytes bytes;             // sent per GPU per step
  Seconds time;            // total time of these collectives
  Seconds exposed;         // of which not overlapped with compute
  // Where the time came from: "profile" (a measured curve of this collective on this side of the
  // node boundary, or the host copies measured) or "datasheet" (the links' rates and NCCL's
  // latencies, TimeConventions).
  std::string source = "datasheet";
};

struct Throughput {
  double tokens_per_s = 0;
  double samples_per_s = 0;
  double mfu = 0;  // model FLOPs / (step time x GPUs x peak); formula stated in mfu_formula
  double hfu = 0;  // hardware FLOPs (with recompute) / same
  FlopsPerSecond peak;  // per GPU, the dtype the matmuls run in
  std::string mfu_formula;
};

struct Estimate {
  model::Training training;
  Layout layout;
  MemoryBreakdown memory;
  MemoryVerdict verdict;  // fits / tight / no, with its reasoning (planner::judge)
  bool fits = false;      // verdict.verdict != Verdict::no
  std::int64_t max_micro_batch = 0;
  std::int64_t global_batch = 0;  // sequences per optimizer step: micro_batch x grad_accum x dp
  TimeBreakdown time;
  Throughput throughput;
  std::vector<CommunicationItem> communication;
  [[nodiscard]] Bytes communication_bytes() const {
    Bytes b;
    for (const auto& c : communication) b += c.bytes;
    return b;
  }
};

// Throws InputError for impossible layouts (make_layout); a configuration that does not fit in
// memory is still evaluated (fits = false).
[[nodiscard]] Estimate evaluate(const model::Architecture& a, const model::ParameterCounts& n,
                                const model::Training& tr, const hardware::Cluster& c,
                                const hardware::HardwareProfile* profile = nullptr,
                                const MemoryConventions& mc = {});

}  // namespace trainplan::planner
