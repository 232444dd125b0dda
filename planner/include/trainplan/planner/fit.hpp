#pragma once
// "Will it fit?": every strategy that makes sense for the cluster, with and without checkpointing and
// optimizer offload (unless pinned), and for a mixture of experts without and with the widest expert
// parallelism, each with its memory and the largest micro-batch that fits. The coarse view of the
// candidate space that planner::search walks in full (search_request.hpp).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainplan/hardware/gpu.hpp"
#include "trainplan/hardware/profile.hpp"
#include "trainplan/planner/memory.hpp"
#include "trainplan/planner/search_request.hpp"

namespace trainplan::planner {

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
  // When none is recommended: the candidate that needs the least memory (those within 1 % of it a
  // tie, the first in the enumeration's order: no offload before an offload that frees nothing).
  std::optional<std::size_t> leanest;
  Bytes usable;                            // usable memory per GPU
};

// Throws InputError when a pinned option is impossible on this cluster (e.g. --tp not dividing it).
// The throughput of each candidate that fits is priced with the profile when one is given.
[[nodiscard]] FitResult fit(const model::Architecture& a, const model::ParameterCounts& n,
                            const SearchRequest& req, const hardware::Cluster& c,
                            const MemoryConventions& mc = {},
                            const hardware::HardwareProfile* profile = nullptr);

}  // namespace trainplan::planner
