#pragma once
// "Will it fit?": every strategy that makes sense for the cluster, with and without checkpointing and
// optimizer offload (unless pinned), and for a mixture of experts without and with the widest expert
// parallelism, each with its memory and the largest micro-batch that fits.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainplan/hardware/gpu.hpp"
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
};

struct Candidate {
  model::Training training;
  Layout layout;
  MemoryBreakdown memory;
  bool fits = false;
  std::int64_t max_micro_batch = 0;  // 0: not even one sequence fits
  double tokens_per_s = 0;           // estimated, at the largest micro-batch that fits (0 if none)
};

struct FitResult {
  std::vector<Candidate> candidates;
  std::optional<std::size_t> recommended;  // index into candidates: the fastest that fits
  Bytes usable;                            // usable memory per GPU
};

// Expert-parallel degrees a layout allows: those dividing both the experts and `ranks` (the
// data-parallel or shard group), ascending; {1} for a dense model.
[[nodiscard]] std::vector<int> expert_parallel_degrees(const model::Architecture& a, int ranks);

// The strategies worth trying for this framework and cluster, simplest first.
[[nodiscard]] std::vector<Strategy> candidate_strategies(Framework f, const hardware::Cluster& c);

// The largest micro-batch (up to `limit`) that fits (planner::fits); 0 when none does.
[[nodiscard]] std::int64_t max_micro_batch(const model::Architecture& a, const model::ParameterCounts& n,
                                           model::Training tr, const Layout& l, const hardware::Cluster& c,
                                           const MemoryConventions& mc, std::int64_t limit = 4096);

// Throws InputError when a pinned option is impossible on this cluster (e.g. --tp not dividing it).
[[nodiscard]] FitResult fit(const model::Architecture& a, const model::ParameterCounts& n,
                            const FitRequest& req, const hardware::Cluster& c,
                            const MemoryConventions& mc = {});

}  // namespace trainplan::planner
