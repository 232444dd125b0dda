#pragma once
// trainplan explain: for a configuration that does not fit, the smallest changes that make it fit.

#include <CLI/CLI.hpp>

#include "trainplan/request/catalog.hpp"

namespace trainplan::cli {

void setup_explain(CLI::App& app, const request::Catalog& catalog);

}  // namespace trainplan::cli
