#pragma once
#include <CLI/CLI.hpp>

#include "trainplan/request/catalog.hpp"

namespace trainplan::cli {
// `trainplan fit MODEL CLUSTER [options]`: the memory verdict over strategies.
void setup_fit(CLI::App& app, const request::Catalog& catalog);
}  // namespace trainplan::cli
