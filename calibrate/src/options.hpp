// Command line of trainplan-calibrate: one options struct, setup_options() registers it with CLI11,
// finalize_options() resolves the defaults that depend on other flags (--quick, suite selection).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "names.hpp"
#include "sweep.hpp"

namespace trainplan::calibrate {

struct Options {
  std::string run_dir;
  bool quick = false;
  bool resume = false;
  // Suites; none given means all (with --quick: all but cpu_adam).
  bool comm = false;
  bool gemm = false;
  bool attention = false;
  bool membw = false;
  bool cpu_adam = false;
  bool optimizer = false;
  bool elementwise = false;
  bool launch = false;

  int iters = 20;
  int warmup = 5;
  double timeout_s = 300;

  std::string min_bytes_text = "8";
  std::string max_bytes_text = "4G";
  double step_factor = 2.0;
  std::vector<std::string> dtype_texts{"float"};
  std::vector<std::string> collective_texts;
  std::vector<std::string> gemm_dtype_texts;
  std::string model_shapes_text;
  int tp = 1;
  std::vector<std::string> optimizer_params_texts;
  int launches = 1000;

  // --replay: run one GPU's share of a plan (replay.hpp) instead of the sweeps.
  std::string replay_file;
  std::size_t plan_index = 0;
  std::vector<std::string> plan_settings;  // KEY=VALUE, request::replay_training_keys()
  std::string profile_file;                // the hardware profile of the predictions
  bool dry_run = false;                    // print the components and predictions only

  // Resolved by finalize_options.
  std::int64_t min_bytes = 8;
  std::int64_t max_bytes = 4 * kGiB;
  std::vector<CollDtype> dtypes;
  std::vector<Collective> collectives;
  std::vector<GemmDtype> gemm_dtypes;
  ModelShapes model;
  std::vector<std::int64_t> optimizer_params;
};

void setup_options(CLI::App& app, Options& o);

// Throws std::invalid_argument naming the bad flag.
void finalize_options(const CLI::App& app, Options& o);

}  // namespace trainplan::calibrate
