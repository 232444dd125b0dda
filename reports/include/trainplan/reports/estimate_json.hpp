#pragma once
// JSON renderings of estimates and plan searches:
//   estimate: {"schema":"trainplan.estimate/1", "model", "cluster", "plan":PLAN}
//   plan:     {"schema":"trainplan.plan/1", "model", "cluster", "plans":[PLAN...],
//              "rejected":[{"plan", "code", "message", "values":{...}}]}
//   explain:  {"schema":"trainplan.explain/1", "model", "cluster", "given":PLAN, "fits",
//              "suggestions":[{"changes":[{"option", "from", "to"}], "pair", "throughput_kept",
//                              "plan":PLAN}]}
//   PLAN = CANDIDATE + {"grad_accum", "global_batch", "time":{..._s}, "throughput":{...},
//          "communication":{"bytes_per_gpu_per_step", "bytes_by_collective":{...}, ...}}
// Keys may be added, never renamed. Units are in the names: _bytes integer bytes, _s seconds,
// _per_s rates.

#include <optional>
#include <string>

#include "trainplan/hardware/gpu.hpp"
#include "trainplan/hardware/profile.hpp"
#include "trainplan/request/json_util.hpp"
#include "trainplan/model/architecture.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/planner/estimate.hpp"
#include "trainplan/planner/explain.hpp"
#include "trainplan/planner/search.hpp"

namespace trainplan::reports {

using request::Json;

inline constexpr std::string_view kEstimateSchema = "trainplan.estimate/1";
inline constexpr std::string_view kPlanSchema = "trainplan.plan/1";
inline constexpr std::string_view kExplainSchema = "trainplan.explain/1";

// PLAN; with `tokens`, also "time_to_train_s" for that many training tokens.
[[nodiscard]] Json plan_json(const planner::Estimate& e,
                             std::optional<double> tokens = std::nullopt);

[[nodiscard]] Json estimate_json(const model::Architecture& a, const model::ParameterCounts& n,
                                 const hardware::Cluster& c, const planner::Estimate& e,
                                 std::optional<double> tokens = std::nullopt);

[[nodiscard]] Json plan_result_json(const model::Architecture& a, const model::ParameterCounts& n,
                                    const hardware::Cluster& c, const planner::PlanResult& r,
                                    std::optional<double> tokens = std::nullopt);

[[nodiscard]] Json explain_json(const model::Architecture& a, const model::ParameterCounts& n,
                                const hardware::Cluster& c, const planner::Explanation& x);

}  // namespace trainplan::reports
