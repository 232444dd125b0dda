#pragma once
// Fits of compact models to measured points (Eigen, no I/O). Each throws trainplan::InputError when
// the points cannot determine the model. Method and sources: docs/calibration.md.

#include <cstdint>
#include <span>
#include <vector>

#include "trainplan/calibration/measurement.hpp"
#include "trainplan/core/units.hpp"
#include "trainplan/hardware/profile.hpp"

namespace trainplan::calibration {

// Points an alpha-beta line needs: two unknowns, plus one so that the error says something.
inline constexpr int kMinAlphaBetaPoints = 3;
// Points a two-parameter saturation fit (GEMM, attention) needs, for the same reason.
inline constexpr int kMinSaturationPoints = 3;

struct AlphaBetaFit {
  Seconds alpha;
  BytesPerSecond busbw;
  std::vector<double> residuals;  // (predicted - measured) / measured, in input order
  std::vector<bool> dropped;      // left out of the final solve as outliers
  hardware::FitQuality quality;   // over all points, dropped ones included
};

// t(S) = alpha + f S / B minimising sum(((alpha + f S / B - t) / t)^2), alpha >= 0, B > 0: a linear
// least-squares problem in (alpha, 1/B) (Hockney 1994; weighting by 1/t makes every size count
// alike), then one pass that drops points further than 3 robust sigmas (1.4826 MAD, Rousseeuw &
// Croux 1993) from the median residual and solves again. Needs 2 distinct sizes.
[[nodiscard]] AlphaBetaFit fit_alpha_beta(std::span<const hardware::TimedSize> points,
                                          double bus_factor);

struct PiecewiseOptions {
  int max_regimes = 3;
  int min_points_per_regime = 3;
  double min_relative_gain = 0.25;   // a regime more must cut the RMS relative error by this share
  double min_absolute_gain = 0.005;  // ... and by this much
};

struct PiecewiseFit {
  std::vector<hardware::Regime> regimes;  // ascending in size, alpha and busbw
  std::vector<double> residuals;          // of the min over regimes, in input order
  hardware::FitQuality quality;
};

// 1-3 alpha-beta regimes over contiguous size ranges, breakpoints scanned at the sample sizes,
// predicting with the minimum over regimes, as NCCL takes the (algorithm, protocol) of least
// predicted time (NVIDIA/nccl src/graph/tuning.cc, ncclTopoGetAlgoTime). Regimes must grow in alpha
// and busbw so that the minimum hands over from one to the next in size order.
[[nodiscard]] PiecewiseFit fit_piecewise(std::span<const hardware::TimedSize> points,
                                         double bus_factor, const PiecewiseOptions& options = {});

// Points a collective model needs over all curves of its scope: five unknowns, plus one.
inline constexpr int kMinCollectiveModelPoints = 6;

// One NCCL-structured model (hardware/nccl_model.hpp) per (collective, scope, dtype) with at least
// kMinCollectiveModelPoints measured points, fitted to all curves of that scope at once:
// Levenberg-Marquardt on log(predicted / measured time) from three starts, the best kept, the
// dimensionless unknowns pulled weakly towards NCCL's own values. Curves of one rank are skipped.
[[nodiscard]] std::vector<hardware::CollectiveModel> fit_collective_models(
    std::span<const hardware::CollectiveCurve> curves);

// Median and maximum of |residual|.
[[nodiscard]] hardware::FitQuality fit_quality(std::span<const double> residuals);

[[nodiscard]] double median(std::vector<double> values);

struct GemmFitOptions {
  FlopsPerSecond peak;  // dense datasheet peak of the dtype
  int sm_count = 0;     // 0: no wave quantization
  int tile_m = 128;
  int tile_n = 128;
};

struct GemmFit {
  double peak_efficiency = 0.0;
  double k0 = 0.0;
  hardware::FitQuality quality;
};

// eta_max and K0 of eta = eta_max tile(M,N) wave(M,N) K / (K + K0) (calibration reference 2.4) by
// Levenberg-Marquardt on log(eta) (Levenberg 1944, Marquardt 1963). Needs 2 distinct K.
[[nodiscard]] GemmFit fit_gemm(std::span<const hardware::GemmPoint> points,
                               const GemmFitOptions& options);

struct SaturationFit {
  double efficiency = 0.0;  // eta_max
  double half = 0.0;        // x at which eta = eta_max / 2
  hardware::FitQuality quality;
};

// eta(x) = eta_max x / (x + x_half) for attention efficiency against sequence length (calibration
// reference 2.5), same solver as fit_gemm.
[[nodiscard]] SaturationFit fit_saturation(std::span<const double> x,
                                           std::span<const double> efficiency);

// Sustained bandwidth of a copy sweep: the median rate over the sizes at least 1/8 of the largest.
[[nodiscard]] BytesPerSecond plateau_bandwidth(std::span<const BandwidthMeasurement> points);

}  // namespace trainplan::calibration
