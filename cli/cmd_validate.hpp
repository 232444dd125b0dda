#pragma once
#include <CLI/CLI.hpp>

#include "trainplan/request/catalog.hpp"

namespace trainplan::cli {
// `trainplan validate PATH... [--json | --markdown]`: predictions against measured runs and the
// oracle, per case and metric, with a summary. A report: large errors still exit 0; only bad input
// does not.
void setup_validate(CLI::App& app, const request::Catalog& catalog);
}  // namespace trainplan::cli
