#pragma once
#include <CLI/CLI.hpp>

#include "trainplan/request/catalog.hpp"

namespace trainplan::cli {
// `trainplan models` and `trainplan gpus`: the built-in catalogue.
void setup_catalog(CLI::App& app, const request::Catalog& catalog);
}  // namespace trainplan::cli
