#pragma once
// `trainplan calibrate import FILE... [-o RUN_DIR] [--json]`: benchmark logs -> measurements.
// `trainplan calibrate fit RUN_DIR... -o PROFILE.json [--gpu NAME]`: measurements -> profile.

#include <CLI/CLI.hpp>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace trainplan::cli {

struct CalibrateImportOptions {
  std::vector<std::string> files;
  std::optional<std::string> out_dir;  // absent: print only
  bool json = false;
  std::string collective;    // empty: what the log says
  std::optional<int> ranks;  // absent: what the log says
  std::optional<int> nodes;  // absent: what the log says
  int gpus_per_node = 8;   // for logs that do not say how many nodes ran
};

struct CalibrateFitOptions {
  std::vector<std::string> run_dirs;
  std::string out;
  std::string gpu;                       // catalogue name or device string; empty: the runs'
  std::string name;                      // empty: the output file's stem
  std::vector<std::string> peak_tflops;  // "bf16=989": dense peaks when the catalogue lacks the GPU
  int sm_count = 0;                      // 0: from the catalogue
  bool json = false;
};

// Both throw trainplan::InputError naming the bad input; `out` gets the result, `err` notes.
void run_calibrate_import(const CalibrateImportOptions& options, std::ostream& out,
                          std::ostream& err);
void run_calibrate_fit(const CalibrateFitOptions& options, std::ostream& out, std::ostream& err);

// Registers `calibrate` with its subcommands `import` and `fit` under `parent`.
CLI::App* setup_calibrate(CLI::App& parent);

}  // namespace trainplan::cli
