#pragma once
// Reading reference cases for `trainplan validate`: measured runs (schema trainplan.reference/1,
// data/reference/*.json; the format is described in data/reference/README.md) and the PyTorch
// oracle's outputs (schema trainplan.oracle/1, data/reference/oracle/*.json,
// tools/oracle/README.md). Unknown keys, a configuration key left out and a value without its unit
// are errors that name the file, the case and the key.

#include <string>
#include <vector>

#include "trainplan/request/catalog.hpp"
#include "trainplan/request/json_util.hpp"
#include "trainplan/planner/validate.hpp"

namespace trainplan::request {

inline constexpr std::string_view kReferenceSchema = "trainplan.reference/1";
inline constexpr std::string_view kOracleSchema = "trainplan.oracle/1";

// One parsed file; `file` names it in messages and is recorded in each case.
[[nodiscard]] std::vector<planner::ReferenceCase> parse_reference(const Json& j,
                                                                  const std::string& file,
                                                                  const Catalog& catalog);

[[nodiscard]] std::vector<planner::ReferenceCase> read_reference_file(const std::string& path,
                                                                      const Catalog& catalog);

// Files and folders; a folder contributes every *.json below it, recursively, in path order.
// InputError for a path that does not exist or cannot be read, and for a folder without JSON files.
[[nodiscard]] std::vector<planner::ReferenceCase> read_reference_paths(
    const std::vector<std::string>& paths, const Catalog& catalog);

}  // namespace trainplan::request
