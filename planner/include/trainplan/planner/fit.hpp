#pragma once
// "Will it fit?": every strategy that makes sense for the cluster, with and without checkpointing and
// optimizer offload (unless pinned), and for a mixture of experts without and with the widest expert
// parallelism, each with its memory and the largest micro-batch that fits.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainplan/hardware/gpu.hpp"
#include "trainplan/hardware/profile.hpp"
#include "trainplan/planner/memory.hpp"

namespace trainplan::planner {

// The user's options: `base` holds defaults and pinned values; an unset optional is searched.
struct FitRequest {
  model::Training base;
  std::optional<Strategy> strategy;
  std::optional<Checkpointing> checkpointing;
  std::optional<Offload> offload;
  std::optional<int> expert_parallel;
  bool micro_batch_pinned = false;
  // Fraction of the usable GPU memory a recommended plan leaves free beyond its expected footprint
  // (reserved + context + NCCL); plans inside the margin are "tight" (planner::judge).
  double margin = 0.0;
};

struct Candidate {
  model::Training training;
  Layout layout;
  MemoryBreakdown memory;
  MemoryVerdict verdict;             // at the candidate's micro-batch, with the request's margin
  bool fits = false;                 // verdict != no (tight counts)
  std::int64_t max_micro_batch = 0;  // the largest micro-batch whose verdict is "fits"; 0: none
  double tokens_per_s = 0;           // estimated, at the largest micro-batch that fits (0 if none)
};

struct FitResult {
  std::vector<Candidate> candidates;
  // Index into candidates: the fastest whose verdict is "fits"; when none is, the fastest "tight".
  std::optional<std::size_t> recommended;
  Bytes usable;                            // usable memory per GPU
};

// Expert-parallel degrees a layout allows: those dividing both the experts and `ranks` (the
// data-parallel or shard group), ascending; {1} for a dense model.
[[nodiscard]] std::vector<int> expert_parallel_degrees(const model::Architecture& a, int ranks);

// The strategies worth trying for this framework and cluster, simplest first.
[[nodiscard]] std::vector<Strategy> candidate_strategies(Framework f, const hardware::Cluster& c);

// The largest micro-batch (up to `limit`) whose verdict is "fits" with `margin` (planner::judge);
// 0 when none is.
[[nodiscard]] std::int64_t max_micro_batch(const model::Architecture& a, const model::ParameterCounts& n,
                                           model::Training tr, const Layout& l, const hardware::Cluster& c,
                                           const MemoryConventions& mc, std::int64_t limit = 4096,
                                           double margin = 0.0);

// Throws InputError when a pinned option is impossible on this cluster (e.g. --tp not dividing it).
// The throughput of each candidate that fits is priced with the profile when one is given.
[[nodiscard]] FitResult fit(const model::Architecture& a, const model::ParameterCounts& n,
                            const FitRequest& req, const hardware::Cluster& c,
                            const MemoryConventions& mc = {},
                            const hardware::HardwareProfile* profile = nullptr);

}  // namespace trainplan::planner
