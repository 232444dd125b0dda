#pragma once
#include <CLI/CLI.hpp>

#include "trainplan/io/catalog.hpp"

namespace trainplan::cli {
// `trainplan fit MODEL CLUSTER [options]`: the memory verdict over strategies.
void setup_fit(CLI::App& app, const io::Catalog& catalog);
}  // namespace trainplan::cli
