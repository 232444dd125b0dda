#include "trainplan/calibration/gemm_fit.hpp"

#include <Eigen/Dense>
#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>

#include "levenberg_marquardt.hpp"
#include "trainplan/calibration/fit.hpp"
#include "trainplan/core/error.hpp"

namespace trainplan::calibration {
namespace {

// Unknowns, all in log space so that each stays positive: per dtype log eta_max and log K0, then
// the shared log read and write bandwidth (TB/s), log overhead (us) and log(p - 1).
constexpr int kPerDtype = 2;
constexpr int kShared = 4;
constexpr double kTera = 1e12;
constexpr double kMicro = 1e-6;

struct Sample {
  std::size_t dtype = 0;  // index into the fitted dtypes
  std::size_t point = 0;  // index into that dtype's points
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  double time = 0.0;  // seconds
};

struct Problem {
  std::vector<hardware::GemmModel> templates;  // dtype, peak, tiles, SMs, element sizes, points
  std::vector<Sample> samples;
  Eigen::VectorXd prior;
  double prior_weight = 0.0;
};

[[nodiscard]] std::vector<hardware::GemmModel> models_at(const Problem& p,
                                                         const Eigen::VectorXd& x) {
  std::vector<hardware::GemmModel> models = p.templates;
  const auto shared = static_cast<Eigen::Index>(kPerDtype * models.size());
  for (std::size_t d = 0; d < models.size(); ++d) {
    const auto at = static_cast<Eigen::Index>(kPerDtype * d);
    models[d].peak_efficiency = std::exp(x(at));
    models[d].k0 = std::exp(x(at + 1));
    models[d].read_bandwidth = BytesPerSecond(std::exp(x(shared)) * kTera);
    models[d].write_bandwidth = BytesPerSecond(std::exp(x(shared + 1)) * kTera);
    models[d].overhead = Seconds(std::exp(x(shared + 2)) * kMicro);
    models[d].smoothness = 1.0 + std::exp(x(shared + 3));
  }
  return models;
}

// log(model / measured) for each sample in use, then the prior terms.
[[nodiscard]] Eigen::VectorXd residuals(const Problem& p, const Eigen::VectorXd& x,
                                        std::span<const char> use) {
  const std::vector<hardware::GemmModel> models = models_at(p, x);
  const auto used = static_cast<Eigen::Index>(std::count(use.begin(), use.end(), char{1}));
  Eigen::VectorXd r(used + x.size());
  Eigen::Index row = 0;
  for (std::size_t i = 0; i < p.samples.size(); ++i) {
    if (!use[i]) continue;
    const Sample& s = p.samples[i];
    const double t = hardware::gemm_model_time(models[s.dtype], s.m, s.n, s.k, 0).value();
    r(row++) = std::log(t / s.time);
  }
  r.tail(x.size()) = p.prior_weight * (x - p.prior);
  return r;
}

// The unknowns that fit the samples in use, from x: Levenberg-Marquardt with a forward-difference
// Jacobian (levenberg_marquardt.hpp).
[[nodiscard]] Eigen::VectorXd solve(const Problem& p, const Eigen::VectorXd& x,
                                    std::span<const char> use) {
  constexpr double kStep = 1e-6;
  constexpr LmRules kRules{.max_iterations = 200, .min_step = 1e-10};
  const auto r = [&](const Eigen::VectorXd& at) { return residuals(p, at, use); };
  const auto jacobian = [&](const Eigen::VectorXd& at, const Eigen::VectorXd& r_at) {
    return forward_difference_jacobian<Eigen::Dynamic>(r, at, r_at, kStep);
  };
  return levenberg_marquardt<Eigen::Dynamic>(x, r, jacobian, kRules);
}

[[nodiscard]] double measured_time(const hardware::GemmPoint& p) {
  return 2.0 * static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k) /
         p.rate.value();
}

// A model of the dtype without fitted values: what the options and the dtype fix, and the
// dtype's measurements as its points.
[[nodiscard]] hardware::GemmModel template_of(const GemmDtypeSetup& setup,
                                              std::span<const GemmMeasurement> points,
                                              const GemmRooflineOptions& options) {
  hardware::GemmModel g;
  g.dtype = setup.dtype;
  g.peak = setup.peak;
  g.tile_m = options.tile_m;
  g.tile_n = options.tile_n;
  g.sm_count = options.sm_count;
  g.a_bytes = gemm_input_bytes(setup.dtype);
  g.c_bytes = gemm_output_bytes(setup.dtype);
  g.interpolation_octaves = options.interpolation_octaves;
  g.interpolation_prior = options.interpolation_prior;
  for (const GemmMeasurement& m : points) {
    if (m.dtype != setup.dtype) continue;
    if (m.m <= 0 || m.n <= 0 || m.k <= 0 || !(m.rate.value() > 0.0) ||
        !std::isfinite(m.rate.value())) {
      throw InputError("GEMM " + std::string(to_string(m.dtype)) +
                       ": a measurement needs positive M, N, K and rate");
    }
    g.points.push_back({m.m, m.n, m.k, m.rate});
  }
  return g;
}

// Throws unless the dtype's peak is physical, no point beats it and there are enough points.
void check_against_peak(const hardware::GemmModel& g, const GemmDtypeSetup& setup) {
  const std::string name = "GEMM " + std::string(to_string(setup.dtype));
  if (!(setup.peak.value() > 0.0)) {
    throw InputError(name + ": no peak throughput of the GPU to measure efficiency against");
  }
  if (!(setup.peak >= kMinGpuPeak && setup.peak <= kMaxGpuPeak))
    throw InputError(name + ": a peak of " + fmt::format("{:g}", to_tflops(setup.peak)) +
                     " TFLOP/s is outside what a GPU has (" + fmt::format("{:g}", to_tflops(kMinGpuPeak)) +
                     " to " + fmt::format("{:g}", to_tflops(kMaxGpuPeak)) + " TFLOP/s)");
  for (const hardware::GemmPoint& q : g.points)
    if (q.rate.value() > kMaxMeasuredOverPeak * setup.peak.value())
      throw InputError(fmt::format("{}: measured {:.0f} TFLOP/s at M={} N={} K={}, above the stated peak "
                                   "{:g} TFLOP/s: the peak is wrong (TFLOP/s, dense, for this GPU?)",
                                   name, to_tflops(q.rate), q.m, q.n, q.k,
                                   to_tflops(setup.peak)));
  if (static_cast<int>(g.points.size()) < kMinSaturationPoints) {
    throw InputError(name + " has " + std::to_string(g.points.size()) +
                     " measurement(s); its fit needs at least " +
                     std::to_string(kMinSaturationPoints));
  }
}

// One template per dtype with measurements, in the order of options.dtypes, and their samples.
[[nodiscard]] Problem problem_of(std::span<const GemmMeasurement> points,
                                 const GemmRooflineOptions& options) {
  Problem p;
  p.prior_weight = options.prior_weight;
  for (const GemmDtypeSetup& setup : options.dtypes) {
    hardware::GemmModel g = template_of(setup, points, options);
    if (g.points.empty()) continue;
    check_against_peak(g, setup);
    for (std::size_t i = 0; i < g.points.size(); ++i) {
      const hardware::GemmPoint& q = g.points[i];
      p.samples.push_back({p.templates.size(), i, q.m, q.n, q.k, measured_time(q)});
    }
    p.templates.push_back(std::move(g));
  }
  for (const GemmMeasurement& m : points) {
    const bool known = std::any_of(options.dtypes.begin(), options.dtypes.end(),
                                   [&](const GemmDtypeSetup& s) { return s.dtype == m.dtype; });
    if (!known) {
      throw InputError("GEMM " + std::string(to_string(m.dtype)) +
                       ": measurements but no peak throughput of the GPU to measure efficiency "
                       "against");
    }
  }
  return p;
}

// The priors of the unknowns, laid out as models_at reads them.
[[nodiscard]] Eigen::VectorXd prior_of(const GemmRooflineOptions& options, std::size_t dtypes) {
  Eigen::VectorXd prior(static_cast<Eigen::Index>(kPerDtype * dtypes + kShared));
  for (std::size_t d = 0; d < dtypes; ++d) {
    prior(static_cast<Eigen::Index>(kPerDtype * d)) = std::log(options.efficiency_prior);
    prior(static_cast<Eigen::Index>(kPerDtype * d + 1)) = std::log(options.k0_prior);
  }
  const auto shared = static_cast<Eigen::Index>(kPerDtype * dtypes);
  prior(shared) = std::log(options.bandwidth_prior.value() / kTera);
  prior(shared + 1) = std::log(options.bandwidth_prior.value() / kTera);
  prior(shared + 2) = std::log(options.overhead_prior.value() / kMicro);
  prior(shared + 3) = std::log(options.smoothness_prior - 1.0);
  return prior;
}

// Relative time errors of the models fitted at x: the compact model, the profile (interpolation
// included) and, with leave_one_out, each point predicted from a fit to the others.
void add_qualities(const Problem& p, const Eigen::VectorXd& x, bool leave_one_out,
                   std::vector<hardware::GemmModel>& models) {
  const std::size_t dtypes = models.size();
  std::vector<std::vector<double>> model_err(dtypes);
  std::vector<std::vector<double>> profile_err(dtypes);
  std::vector<std::vector<double>> held_out_err(dtypes);
  const std::vector<char> all(p.samples.size(), 1);
  for (std::size_t i = 0; i < p.samples.size(); ++i) {
    const Sample& s = p.samples[i];
    const hardware::GemmModel& g = models[s.dtype];
    const double model = hardware::gemm_model_time(g, s.m, s.n, s.k, 0).value();
    const double profile = hardware::gemm_predicted_time(g, s.m, s.n, s.k, 0).value();
    model_err[s.dtype].push_back((model - s.time) / s.time);
    profile_err[s.dtype].push_back((profile - s.time) / s.time);
    if (!leave_one_out) continue;
    std::vector<char> others = all;
    others[i] = 0;
    const std::vector<hardware::GemmModel> refit = models_at(p, solve(p, x, others));
    const double held_out =
        hardware::gemm_predicted_time(refit[s.dtype], s.m, s.n, s.k, 0, static_cast<int>(s.point))
            .value();
    held_out_err[s.dtype].push_back((held_out - s.time) / s.time);
  }
  for (std::size_t d = 0; d < dtypes; ++d) {
    models[d].model_fit = fit_quality(model_err[d]);
    models[d].fit = fit_quality(profile_err[d]);
    if (leave_one_out) models[d].leave_one_out = fit_quality(held_out_err[d]);
  }
}

}  // namespace

double gemm_input_bytes(hardware::GemmDtype dtype) {
  switch (dtype) {
    case hardware::GemmDtype::bf16:
    case hardware::GemmDtype::fp16:
      return 2.0;
    case hardware::GemmDtype::tf32:
      return 4.0;
    case hardware::GemmDtype::fp8:
      return 1.0;
  }
  return 2.0;
}

double gemm_output_bytes(hardware::GemmDtype dtype) {
  switch (dtype) {
    case hardware::GemmDtype::bf16:
    case hardware::GemmDtype::fp16:
    case hardware::GemmDtype::fp8:
      return 2.0;
    case hardware::GemmDtype::tf32:
      return 4.0;
  }
  return 2.0;
}

std::vector<hardware::GemmModel> fit_gemm_roofline(std::span<const GemmMeasurement> points,
                                                   const GemmRooflineOptions& options) {
  Problem p = problem_of(points, options);
  if (p.templates.empty()) return {};
  p.prior = prior_of(options, p.templates.size());
  const std::vector<char> all(p.samples.size(), 1);
  const Eigen::VectorXd x = solve(p, p.prior, all);
  std::vector<hardware::GemmModel> models = models_at(p, x);
  add_qualities(p, x, options.leave_one_out, models);
  return models;
}

}  // namespace trainplan::calibration
