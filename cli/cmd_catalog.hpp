#pragma once
#include <CLI/CLI.hpp>

#include "trainplan/io/catalog.hpp"

namespace trainplan::cli {
// `trainplan models` and `trainplan gpus`: the built-in catalogue.
void setup_catalog(CLI::App& app, const io::Catalog& catalog);
}  // namespace trainplan::cli
