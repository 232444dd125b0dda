#pragma once
// GEMM measurements -> the roofline form of hardware::GemmModel, one model per dtype, fitted
// jointly: the memory system and the fixed time of a kernel are the GPU's, not the dtype's.
// Pure (Eigen, no I/O); throws trainplan::InputError naming the dtype that cannot be fitted.
// Method and sources: docs/calibration.md, "GEMM".

#include <span>
#include <vector>

#include "trainplan/calibration/measurement.hpp"
#include "trainplan/core/units.hpp"
#include "trainplan/hardware/profile.hpp"

namespace trainplan::calibration {

struct GemmDtypeSetup {
  hardware::GemmDtype dtype = hardware::GemmDtype::bf16;
  FlopsPerSecond peak;  // dense datasheet peak
};

// The physical range of a GPU's dense peak: from the smallest card anyone trains on (a T4 has 65
// TFLOP/s in fp16) with room below, to above the largest dense low-precision peak announced
// (B300's FP4, 15 PFLOP/s). A peak outside it was typed in other units (PFLOP/s for TFLOP/s).
inline constexpr FlopsPerSecond kMinGpuPeak = tflops(1.0);
inline constexpr FlopsPerSecond kMaxGpuPeak = tflops(20'000.0);
// A measured GEMM may beat the datasheet's dense peak only by measurement noise and boost clocks.
inline constexpr double kMaxMeasuredOverPeak = 1.05;

// Element sizes of A and B, and of C, as trainplan-calibrate runs each dtype (cuBLASLt; fp8 e4m3
// inputs write bf16).
[[nodiscard]] double gemm_input_bytes(hardware::GemmDtype dtype);
[[nodiscard]] double gemm_output_bytes(hardware::GemmDtype dtype);

struct GemmRooflineOptions {
  std::vector<GemmDtypeSetup> dtypes;  // peaks of every dtype measured
  int sm_count = 0;                    // 0: no wave quantization
  int tile_m = 128;
  int tile_n = 128;
  // Priors of the regularised fit (log-space, weight prior_weight per unknown): they decide only
  // what a few points leave open (a run with 7 GEMMs), not what a sweep measures.
  BytesPerSecond bandwidth_prior = gbps(2000.0);  // the measured device copy rate, if any
  double efficiency_prior = 0.8;
  double k0_prior = 128.0;
  Seconds overhead_prior = Seconds(2e-6);
  double smoothness_prior = 3.0;
  double prior_weight = 0.1;
  double interpolation_octaves = 1.0;  // sigma of the window, in octaves of M, N and K
  double interpolation_prior = 0.1;    // weight of the model against the points' corrections
  bool leave_one_out = true;
};

// One model per dtype with measurements, in the order of `options.dtypes`; each carries its
// points and its three qualities (GemmModel::fit, model_fit, leave_one_out), relative errors of
// the time.
[[nodiscard]] std::vector<hardware::GemmModel> fit_gemm_roofline(
    std::span<const GemmMeasurement> points, const GemmRooflineOptions& options);

}  // namespace trainplan::calibration
