#pragma once
// Where the tests find the reference data and their own fixtures, the cases read once and
// validated once, and the helpers the validation tests share.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <utility>
#include <string>
#include <vector>

#include "../common/catalog.hpp"
#include "trainplan/planner/validate.hpp"
#include "trainplan/request/reference.hpp"

namespace trainplan::test {

inline const std::string kReferenceDir = TRAINPLAN_REFERENCE_DIR;    // data/reference
inline const std::string kFixtureDir = TRAINPLAN_VALIDATE_FIXTURES;  // tests/validate/data

// Every case under data/reference (measured runs and the oracle), read once.
inline const std::vector<planner::ReferenceCase>& reference_cases() {
  static const std::vector<planner::ReferenceCase> cases =
      request::read_reference_paths({kReferenceDir}, catalog());
  return cases;
}

// Every case validated, once.
inline const planner::ValidationReport& validation_report() {
  static const planner::ValidationReport r = planner::validate(reference_cases());
  return r;
}

// A case's measured (or predicted) value of one metric.
inline double metric_value(const planner::CaseResult& r, planner::Metric m, bool predicted) {
  for (const auto& c : r.comparisons)
    if (c.metric == m) return predicted ? c.predicted : c.measured;
  ADD_FAILURE() << r.name << " has no " << to_string(m);
  return 0.0;
}

// The GPU of a tools/measure file's runs (the same run names recur on the H100 and the H200).
inline std::string measured_gpu(const planner::CaseResult& r) {
  return r.file.find("measured-h100") != std::string::npos ? "h100" : "h200";
}

// A measured run with a kernel stack or mode (its name ends with a suffix: "-liger", "-compile")
// and its eager twin: the same name without the suffix, measured on the same GPU.
struct Twins {
  const planner::CaseResult* variant = nullptr;
  const planner::CaseResult* eager = nullptr;
};
template <class Keep>
std::vector<Twins> eager_twins(const std::string& suffix, Keep keep) {
  std::map<std::pair<std::string, std::string>, const planner::CaseResult*> by_name;
  for (const planner::CaseResult& r : validation_report().cases) by_name[{measured_gpu(r), r.name}] = &r;
  std::vector<Twins> out;
  for (const planner::CaseResult& r : validation_report().cases) {
    if (r.kind != planner::CaseKind::measured || !r.name.ends_with(suffix) || !keep(r)) continue;
    const auto twin = by_name.find({measured_gpu(r), r.name.substr(0, r.name.size() - suffix.size())});
    EXPECT_NE(twin, by_name.end()) << r.name << " has no eager twin";
    if (twin != by_name.end()) out.push_back({&r, twin->second});
  }
  return out;
}

// The median (of an even count, the mean of the middle two), as validate's summary takes it.
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace trainplan::test
