#pragma once
// One request for both questions over the candidate space: `fit` (every strategy at the given
// layout, with and without checkpointing and optimizer offload) and `search` (the plan search over
// the degrees as well). `base` holds defaults and pinned values; an unset optional is searched.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "trainplan/hardware/gpu.hpp"
#include "trainplan/model/architecture.hpp"
#include "trainplan/model/training.hpp"
#include "trainplan/planner/evaluator.hpp"  // EstimateOptions

namespace trainplan::planner {

struct SearchRequest {
  model::Training base;
  std::optional<Strategy> strategy;
  std::optional<Checkpointing> checkpointing;
  std::optional<Offload> offload;
  std::optional<int> tp;
  std::optional<int> cp;  // context parallelism; searched for long sequences (search.cpp)
  std::optional<int> pp;
  std::optional<int> pp_virtual;
  std::optional<bool> sequence_parallel;
  std::optional<int> expert_parallel;  // searched over the divisors of experts and dp for MoE models
  std::optional<std::int64_t> micro_batch;   // fit: the base micro-batch is priced, not the largest
  std::optional<std::int64_t> grad_accum;
  std::optional<std::int64_t> global_batch;  // sequences per optimizer step
  bool tp_across_nodes = false;
  // Fit: the fraction of the usable GPU memory a recommended plan leaves free beyond its expected
  // footprint (reserved + context + NCCL); plans inside the margin are "tight" (planner::judge).
  double margin = 0.0;
  std::size_t top = 5;
  unsigned threads = 2;  // 0: std::thread::hardware_concurrency()
  EstimateOptions options;
  // Called after each (TP, PP) layout is explored, one call at a time, with how many of them are
  // done; returning false stops the search, which then returns what it found so far, marked
  // cancelled.
  std::function<bool(std::size_t done, std::size_t total)> progress;
};

// Expert-parallel degrees a layout allows: those dividing both the experts and `ranks` (the
// data-parallel or shard group), ascending; {1} for a dense model.
[[nodiscard]] std::vector<int> expert_parallel_degrees(const model::Architecture& a, int ranks);

// The strategies worth trying for this framework and cluster, simplest first.
[[nodiscard]] std::vector<Strategy> candidate_strategies(Framework f, const hardware::Cluster& c);

}  // namespace trainplan::planner
