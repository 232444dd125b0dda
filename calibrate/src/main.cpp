// trainplan-calibrate: GPU microbenchmarks feeding `trainplan calibrate fit`.
#include <cstdio>
#include <exception>
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "bootstrap.hpp"
#include "launch_env.hpp"
#include "options.hpp"
#include "provenance.hpp"
#include "replay_run.hpp"
#include "runner.hpp"
#include "trainplan/core/error.hpp"

namespace tb = trainplan::calibrate;

int main(int argc, char** argv) {
  CLI::App app{"trainplan-calibrate", "trainplan-calibrate"};
  tb::Options options;
  tb::setup_options(app, options);
  try {
    app.parse(argc, argv);
    tb::finalize_options(app, options);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 2;
  }

  // --replay --dry-run prices the plan's components and runs nothing: no GPU needed.
  const bool replay = !options.replay_file.empty();
  if (replay && options.dry_run) {
    try {
      tb::run_replay_dry(options);
      return 0;
    } catch (const trainplan::InputError& e) {
      fmt::print(stderr, "error: {}\n", e.what());
      return 2;
    } catch (const std::exception& e) {
      fmt::print(stderr, "error: {}\n", e.what());
      return 1;
    }
  }

  std::unique_ptr<tb::Bootstrap> boot;
  try {
    // Before anything is written: without a GPU there is nothing to measure.
    const int devices = tb::require_cuda_device();
    boot = std::make_unique<tb::Bootstrap>(
        tb::detect_launch(tb::process_environment(), tb::built_with_mpi()), devices);
    if (replay) {
      tb::run_replay(options, *boot, tb::shell_join(argc, argv));
    } else {
      tb::run_calibrate(options, *boot, tb::shell_join(argc, argv));
    }
    return 0;
  } catch (const tb::NoCudaDevice& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  } catch (const trainplan::InputError& e) {  // a bad replay input
    fmt::print(stderr, "error: {}\n", e.what());
    std::fflush(stderr);
    if (boot) boot->abort_job();
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    std::fflush(stderr);
    if (boot) boot->abort_job();
    return 1;
  }
}
