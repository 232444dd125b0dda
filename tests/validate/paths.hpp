#pragma once
// Where the tests find the reference data and their own fixtures, and the cases read once.
#include <string>
#include <vector>

#include "../common/catalog.hpp"
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

}  // namespace trainplan::test
