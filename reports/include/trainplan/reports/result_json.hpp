#pragma once
// JSON renderings of results, schema-versioned ("trainplan.fit/1"): keys may be added, never
// renamed. Every quantity carries its unit in its name (_bytes: integer bytes, _s: seconds,
// _per_s: rates); counts (parameters, GPUs, micro-batches) are plain integers.

#include <string>

#include "trainplan/hardware/gpu.hpp"
#include "trainplan/request/json_util.hpp"
#include "trainplan/model/architecture.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/planner/fit.hpp"

namespace trainplan::reports {

using request::Json;

[[nodiscard]] Json model_json(const model::Architecture& a, const model::ParameterCounts& n,
                              std::int64_t trainable);
[[nodiscard]] Json cluster_json(const hardware::Cluster& c);
[[nodiscard]] Json memory_json(const planner::MemoryBreakdown& m);
[[nodiscard]] Json candidate_json(const planner::Candidate& c);
[[nodiscard]] Json fit_json(const model::Architecture& a, const model::ParameterCounts& n,
                            const hardware::Cluster& c, const planner::FitResult& r,
                            const std::string& summary);

}  // namespace trainplan::reports
