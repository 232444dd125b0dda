#pragma once
// trainplan plan: search the strategies that fit and rank them by throughput.

#include <CLI/CLI.hpp>

#include "trainplan/request/catalog.hpp"

namespace trainplan::cli {

void setup_plan(CLI::App& app, const request::Catalog& catalog);

}  // namespace trainplan::cli
