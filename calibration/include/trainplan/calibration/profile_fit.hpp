#pragma once
// Measurements of one or more runs -> a hardware profile: group, check, fit every curve and
// summarise. Pure; throws trainplan::InputError naming the run, curve and count that is wrong.

#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "trainplan/calibration/fit.hpp"
#include "trainplan/calibration/gemm_fit.hpp"
#include "trainplan/calibration/measurement.hpp"
#include "trainplan/hardware/profile.hpp"

namespace trainplan::calibration {

struct PeakThroughput {
  hardware::GemmDtype dtype = hardware::GemmDtype::bf16;
  FlopsPerSecond peak;
};

// Elementwise points smaller than this are served by the L2 cache (50 MiB on an H100/H200) more
// than by HBM; a margin of 5x keeps them out of the bandwidth.
inline constexpr double kElementwiseMinBytes = 256.0 * 1024 * 1024;

struct ProfileFitOptions {
  std::string name;
  std::optional<std::string> gpu;     // replaces the GPU the runs name
  std::vector<PeakThroughput> peaks;  // dense datasheet peaks, needed for GEMM and attention
  int sm_count = 0;                   // of the GPU measured; 0: no wave quantization
  // Datasheet HBM bandwidth: the GEMM fit's bandwidth prior when the runs measured no device
  // copy (with one, the measured rate).
  std::optional<BytesPerSecond> hbm;
  // GPUs in one NVLink domain that spans nodes (GB200/GB300 NVL72: 72); 0: the node. NCCL fuses
  // such a domain into one node (MNNVL: src/graph/topo.cc takes the clique's ranks as the local
  // ones), so curves are keyed by the domains they span, as the planner asks.
  int nvlink_domain_gpus = 0;
  PiecewiseOptions piecewise;
  GemmRooflineOptions gemm;  // dtypes, sm_count and bandwidth_prior are filled in by fit_profile
  Bytes elementwise_min_bytes = Bytes(kElementwiseMinBytes);
};

// An (algorithm, protocol) the collective model takes, "tree/LL", up to a measured size.
struct ChoiceSpan {
  std::string choice;
  Bytes up_to;
};

// What the summary table shows for one collective curve.
struct CurveReport {
  hardware::Collective collective = hardware::Collective::all_reduce;
  hardware::LinkScope scope = hardware::LinkScope::intra_node;
  int ranks = 0;
  int nodes = 0;                   // as NCCL counts them: NVLink domains where one spans nodes
  int hosts = 0;                   // the nodes the benchmark ran on
  std::string dtype;               // nccl-tests' data type
  int points = 0;                  // distinct sizes fitted
  int invalid = 0;                 // measurements the benchmark flagged wrong, left out
  int outliers = 0;                // dropped by the single line's outlier pass
  hardware::FitQuality line;       // one alpha-beta line
  hardware::FitQuality piecewise;  // the regimes the profile keeps
  int regimes = 0;
  hardware::FitQuality profile;  // what the profile answers at the measured sizes
  // The scope's collective model alone (no measured departure) at the measured sizes, and the
  // (algorithm, protocol) it takes over them; nullopt and empty without a model.
  std::optional<hardware::FitQuality> model;
  std::vector<ChoiceSpan> choices;
  // The curve's points predicted by the profile without it (the scope's model refitted to the
  // other curves, with their departure from it carried to this rank and node count:
  // HardwareProfile::collective_time); nullopt when no other curve is on that side.
  std::optional<hardware::FitQuality> held_out_scale;
  std::vector<double> held_out_errors;  // (predicted - measured) / measured, per measured size
};

// The collective model of one (collective, scope), predicting each measured rank and node count
// from the others: every curve's held-out errors pooled.
struct ScopeReport {
  hardware::Collective collective = hardware::Collective::all_reduce;
  hardware::LinkScope scope = hardware::LinkScope::intra_node;
  std::string dtype;
  int curves = 0;  // measured (ranks, nodes) counts
  std::optional<hardware::FitQuality> held_out_scale;
};

// How well one family of measurements (a GEMM dtype, an attention pass and mask, a kernel) is
// reproduced: relative errors of the predicted time, |predicted - measured| / measured.
struct FamilyReport {
  std::string family;  // "GEMM bf16", "attention bwd causal", "optimizer fp32 states", ...
  std::string source;  // what was fitted: "cuDNN", "unfused proxy", "sizes >= 256 MiB", ...
  bool used = true;    // false: kept in the profile for reference, never used for predictions
  int points = 0;
  hardware::FitQuality model;                   // the compact model (line, roofline, median)
  std::optional<hardware::FitQuality> profile;  // what the profile answers, interpolation included
  std::optional<hardware::FitQuality> leave_one_out;  // each point from a fit to the others
};

// Points a run logged as skipped, grouped by family and reason. Never fitted.
struct SkippedReport {
  std::string run;
  std::string family;  // "attention bwd cudnn causal", or the point's kind
  int count = 0;
  std::string reason;
  std::string fallback;  // the kind (and implementation) measured instead, or empty
};

struct ProfileFit {
  hardware::HardwareProfile profile;
  std::vector<CurveReport> curves;
  std::vector<ScopeReport> scopes;  // one per collective model of the profile
  std::vector<FamilyReport> families;
  std::vector<SkippedReport> skipped;
  std::vector<std::string> notes;  // choices made that the user should know about
};

[[nodiscard]] ProfileFit fit_profile(std::span<const Run> runs, const ProfileFitOptions& options);

// Provenance of several runs: counts are the largest, hosts and sources the union, strings that
// differ are joined.
[[nodiscard]] hardware::RunProvenance merge_provenance(
    std::span<const hardware::RunProvenance> runs);

}  // namespace trainplan::calibration
