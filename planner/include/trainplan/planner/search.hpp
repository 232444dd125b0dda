#pragma once
// The strategy search behind `trainplan plan`: tensor, pipeline and data-parallel degrees that
// divide the cluster and the model (tensor parallelism inside a node unless allowed across),
// ZeRO/FSDP variant, interleaving, sequence parallelism, expert parallelism (MoE), checkpointing,
// offload, micro-batch and gradient accumulation for a target global batch. Memory-infeasible configurations are pruned
// before their time is priced; the outer loop over (TP, PP) runs on several threads and the result
// does not depend on how many.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "trainplan/core/enum_table.hpp"
#include "trainplan/hardware/gpu.hpp"
#include "trainplan/hardware/profile.hpp"
#include "trainplan/model/architecture.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/model/training.hpp"
#include "trainplan/planner/estimate.hpp"
#include "trainplan/planner/evaluator.hpp"
#include "trainplan/planner/memory.hpp"
#include "trainplan/planner/search_request.hpp"
#include "trainplan/planner/time_conventions.hpp"

namespace trainplan::planner {

// Why a configuration is not among the plans, for scripts: the code, and the numbers behind the
// message, each named with its unit.
enum class RejectionCode {
  slower,        // fits, but a faster plan of another shape was ranked above it
  gpu_memory,    // does not fit in GPU memory at the smallest micro-batch tried
  host_memory,   // fits the GPUs, but its offload does not fit the host memory
  batch_split,   // the global batch cannot be split over this data-parallel degree
  invalid,       // the layout is impossible for the model or the strategy
};

struct Rejection {
  std::string plan;    // "ZeRO-3, TP 1, PP 1, selective checkpointing"
  std::string reason;  // "31 % slower: 1.2 s/step of exposed inter-node all-gather"
  RejectionCode code = RejectionCode::invalid;
  std::vector<std::pair<std::string, double>> values;  // {"needed_bytes", 8.6e10}, ...
};

struct PlanResult {
  std::vector<Estimate> plans;          // fastest first (one per distinct strategy shape)
  std::vector<std::string> why_slower;  // per plan: why it loses to the first ("" for the first)
  std::vector<Rejection> rejected;      // runners-up beyond the top K, and what could not run
  std::int64_t evaluated = 0;           // configurations priced or pruned
  std::int64_t fitting = 0;             // of which fit in memory
  bool cancelled = false;               // stopped by SearchRequest::progress: a partial answer
};

// Throws InputError when a pinned option is impossible for every layout (e.g. --tp not dividing
// the model's heads) or the global batch cannot be split at all.
[[nodiscard]] PlanResult search(const model::Architecture& a, const model::ParameterCounts& n,
                                const hardware::Cluster& c, const SearchRequest& req,
                                const hardware::HardwareProfile* profile = nullptr,
                                const MemoryConventions& mc = {}, const TimeConventions& tc = {});

// The gradient accumulation that makes micro-batch x grad-accum x dp equal the global batch.
// Throws InputError naming --global-batch when it is not divisible by micro-batch x dp, or when a
// pinned --grad-accum disagrees.
[[nodiscard]] std::int64_t grad_accum_for(std::int64_t global_batch, std::int64_t micro_batch,
                                          int dp, std::optional<std::int64_t> pinned_grad_accum);

// "ZeRO-3 across 2 nodes, TP 2, selective checkpointing": the plan in words.
[[nodiscard]] std::string plan_label(const model::Training& tr, const Layout& l);

// The plans no other plan beats on both device memory and throughput (Pareto front): flags in the
// order given.
[[nodiscard]] std::vector<bool> pareto_front(const std::vector<Estimate>& plans);

// Why `other` processes tokens more slowly than `best`: the slowdown and the part of the step
// that grew most ("31 % slower, 1.2 s/step of exposed inter-node all-gather").
[[nodiscard]] std::string why_slower(const StepCost& best, const StepCost& other);

}  // namespace trainplan::planner

namespace trainplan {
template <>
struct EnumTable<planner::RejectionCode> {
  static constexpr std::string_view kWhat = "rejection code";
  static constexpr std::array kEntries{
      std::pair{planner::RejectionCode::slower, std::string_view{"slower"}},
      std::pair{planner::RejectionCode::gpu_memory, std::string_view{"gpu_memory"}},
      std::pair{planner::RejectionCode::host_memory, std::string_view{"host_memory"}},
      std::pair{planner::RejectionCode::batch_split, std::string_view{"batch_split"}},
      std::pair{planner::RejectionCode::invalid, std::string_view{"invalid"}}};
};
}  // namespace trainplan
