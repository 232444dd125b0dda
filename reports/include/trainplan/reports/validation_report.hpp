#pragma once
// The validation report (`trainplan validate`): every comparison of a prediction with a measured run
// or the oracle, and their summary, as text tables, JSON (schema trainplan.validate/1) or the
// markdown kept in docs/accuracy.md.

#include <string>
#include <vector>

#include "trainplan/planner/validate.hpp"
#include "trainplan/request/json_util.hpp"

namespace trainplan::reports {

using request::Json;

[[nodiscard]] Json validation_json(const planner::ValidationReport& rep);
[[nodiscard]] std::string validation_text(const planner::ValidationReport& rep);
// `paths`: the command's arguments, named in the report's first line.
[[nodiscard]] std::string validation_markdown(const planner::ValidationReport& rep,
                                              const std::vector<std::string>& paths);
// "outside tolerance: CASE METRIC: +E % (tolerance T %)", for --check.
[[nodiscard]] std::string outside_tolerance_text(const planner::CaseResult& r, const planner::Comparison& c);
// A value within its tolerance that still carries an open gap: the line validate --check prints.
[[nodiscard]] std::string stale_open_text(const planner::CaseResult& r, const planner::Comparison& c);

}  // namespace trainplan::reports
