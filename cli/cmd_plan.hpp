#pragma once
// trainplan plan: search the strategies that fit and rank them by throughput.

#include <CLI/CLI.hpp>

#include "trainplan/io/catalog.hpp"

namespace trainplan::cli {

void setup_plan(CLI::App& app, const io::Catalog& catalog);

}  // namespace trainplan::cli
