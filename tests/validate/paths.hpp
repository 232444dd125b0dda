#pragma once
// Where the tests find the reference data and their own fixtures, the cases read once and
// validated once, and the helpers the validation tests share.
#include <gtest/gtest.h>

#include <algorithm>
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

// The median (of an even count, the mean of the middle two), as validate's summary takes it.
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace trainplan::test
