#pragma once
// trainplan estimate: one fully specified configuration, its memory, step time and communication.

#include <CLI/CLI.hpp>

#include "options.hpp"
#include "trainplan/request/catalog.hpp"
#include "trainplan/request/request.hpp"
#include "trainplan/planner/estimate.hpp"

namespace trainplan::cli {

void setup_estimate(CLI::App& app, const request::Catalog& catalog);

[[nodiscard]] std::string duration_text(Seconds s);
// Prints the --emit text of the best of the plans the format can express to stdout, and its notes
// to stderr.
void print_emitted(const request::Request& q, const request::Resolved& r, const std::vector<planner::Estimate>& plans);

}  // namespace trainplan::cli
