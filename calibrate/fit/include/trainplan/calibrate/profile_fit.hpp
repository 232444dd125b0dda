#pragma once
// Measurements of one or more runs -> a hardware profile: group, check, fit every curve and
// summarise. Pure; throws trainplan::InputError naming the run, curve and count that is wrong.

#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "trainplan/calibrate/fit.hpp"
#include "trainplan/calibrate/measurement.hpp"
#include "trainplan/hardware/profile.hpp"

namespace trainplan::calibrate {

struct PeakThroughput {
  hardware::GemmDtype dtype = hardware::GemmDtype::bf16;
  FlopsPerSecond peak;
};

struct ProfileFitOptions {
  std::string name;
  std::optional<std::string> gpu;     // replaces the GPU the runs name
  std::vector<PeakThroughput> peaks;  // dense datasheet peaks, needed for GEMM and attention
  int sm_count = 0;                   // of the GPU measured; 0: no wave quantization
  PiecewiseOptions piecewise;
};

// What the summary table shows for one collective curve.
struct CurveReport {
  hardware::Collective collective = hardware::Collective::all_reduce;
  hardware::LinkScope scope = hardware::LinkScope::intra_node;
  int ranks = 0;
  int nodes = 0;
  int points = 0;                  // distinct sizes fitted
  int invalid = 0;                 // measurements the benchmark flagged wrong, left out
  int outliers = 0;                // dropped by the single line's outlier pass
  hardware::FitQuality line;       // one alpha-beta line
  hardware::FitQuality piecewise;  // the regimes the profile keeps
  int regimes = 0;
};

struct ProfileFit {
  hardware::HardwareProfile profile;
  std::vector<CurveReport> curves;
  std::vector<std::string> notes;  // choices made that the user should know about
};

[[nodiscard]] ProfileFit fit_profile(std::span<const Run> runs, const ProfileFitOptions& options);

// Provenance of several runs: counts are the largest, hosts and sources the union, strings that
// differ are joined.
[[nodiscard]] hardware::RunProvenance merge_provenance(
    std::span<const hardware::RunProvenance> runs);

}  // namespace trainplan::calibrate
