#include "trainplan/calibration/fit.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <utility>

#include "levenberg_marquardt.hpp"
#include "trainplan/core/error.hpp"

namespace trainplan::calibration {
namespace {

// Working units of the line fits: x = bus_factor * bytes, t in microseconds, so that
// t = alpha + beta x with alpha in us and beta in us per byte.
struct Line {
  double alpha = 0.0;
  double beta = 0.0;
  [[nodiscard]] double at(double x) const { return alpha + beta * x; }
};

constexpr double kRobustSigmaPerMad = 1.4826;  // MAD of a normal sample = 0.6745 sigma
constexpr double kOutlierSigmas = 3.0;

[[nodiscard]] int distinct_count(std::span<const double> sorted_or_not) {
  std::vector<double> v(sorted_or_not.begin(), sorted_or_not.end());
  std::sort(v.begin(), v.end());
  return static_cast<int>(std::unique(v.begin(), v.end()) - v.begin());
}

// Least squares of sum(((alpha + beta x - t) / t)^2) over the rows with use[i], with alpha >= 0
// and beta > 0. Columns are scaled to unit norm before the QR solve: 1/t and x/t differ by ~10
// orders of magnitude.
[[nodiscard]] Line solve_relative(std::span<const double> x, std::span<const double> t,
                                  std::span<const char> use) {
  const auto rows = static_cast<Eigen::Index>(std::count(use.begin(), use.end(), char{1}));
  Eigen::MatrixXd a(rows, 2);
  Eigen::Index r = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!use[i]) continue;
    a(r, 0) = 1.0 / t[i];
    a(r, 1) = x[i] / t[i];
    ++r;
  }
  const Eigen::VectorXd ones = Eigen::VectorXd::Ones(rows);
  const double s0 = a.col(0).norm();
  const double s1 = a.col(1).norm();
  Line line;
  if (s1 > 0.0) {
    Eigen::MatrixXd scaled = a;
    scaled.col(0) /= s0;
    scaled.col(1) /= s1;
    const Eigen::Vector2d z = scaled.colPivHouseholderQr().solve(ones);
    line.alpha = z(0) / s0;
    line.beta = z(1) / s1;
  }
  if (!(line.beta > 0.0) || !std::isfinite(line.beta)) {
    // Times do not grow with size here: take the best bus bandwidth seen as B, then alpha alone.
    double best_rate = 0.0;
    for (Eigen::Index i = 0; i < rows; ++i) best_rate = std::max(best_rate, a(i, 1));
    line.beta = best_rate > 0.0 ? 1.0 / best_rate : 0.0;
    double num = 0.0;
    double den = 0.0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (!use[i]) continue;
      num += (t[i] - line.beta * x[i]) / (t[i] * t[i]);
      den += 1.0 / (t[i] * t[i]);
    }
    line.alpha = std::max(0.0, num / den);
  } else if (line.alpha < 0.0) {
    double num = 0.0;
    double den = 0.0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (!use[i]) continue;
      num += x[i] / t[i];
      den += (x[i] / t[i]) * (x[i] / t[i]);
    }
    line.alpha = 0.0;
    line.beta = num / den;
  }
  return line;
}

[[nodiscard]] std::vector<double> relative_residuals(const Line& line, std::span<const double> x,
                                                     std::span<const double> t) {
  std::vector<double> r(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) r[i] = (line.at(x[i]) - t[i]) / t[i];
  return r;
}

[[nodiscard]] hardware::Regime to_regime(const Line& line, Bytes max_bytes) {
  return {max_bytes, Seconds(line.alpha * 1e-6), BytesPerSecond(1e6 / line.beta)};
}

struct Prepared {
  std::vector<double> x;
  std::vector<double> t;
  std::vector<double> bytes;
};

[[nodiscard]] Prepared prepare(std::span<const hardware::TimedSize> points, double bus_factor) {
  if (!(bus_factor > 0.0)) {
    throw InputError("an alpha-beta fit needs a positive bus factor (got " +
                     std::to_string(bus_factor) + ")");
  }
  Prepared p;
  for (const hardware::TimedSize& pt : points) {
    if (!(pt.bytes.value() >= 0.0) || !(pt.time.value() > 0.0) || !std::isfinite(pt.time.value())) {
      throw InputError("an alpha-beta fit needs sizes >= 0 and times > 0 (got " +
                       std::to_string(pt.bytes.value()) + " bytes in " +
                       std::to_string(pt.time.value()) + " s)");
    }
    p.bytes.push_back(pt.bytes.value());
    p.x.push_back(bus_factor * pt.bytes.value());
    p.t.push_back(pt.time.value() * 1e6);
  }
  if (distinct_count(p.bytes) < 2) {
    throw InputError("an alpha-beta fit needs at least 2 distinct sizes (got " +
                     std::to_string(distinct_count(p.bytes)) + " among " +
                     std::to_string(points.size()) + " points)");
  }
  return p;
}

// The points in ascending size; equal sizes keep their input order.
[[nodiscard]] Prepared sorted_by_size(const Prepared& input) {
  const std::size_t n = input.x.size();
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return input.bytes[a] < input.bytes[b]; });
  Prepared sorted{std::vector<double>(n), std::vector<double>(n), std::vector<double>(n)};
  for (std::size_t i = 0; i < n; ++i) {
    sorted.x[i] = input.x[order[i]];
    sorted.t[i] = input.t[order[i]];
    sorted.bytes[i] = input.bytes[order[i]];
  }
  return sorted;
}

// Lines over contiguous runs of the sorted points, predicting with their minimum.
struct Candidate {
  std::vector<Line> lines;
  std::vector<std::size_t> ends;  // one past the last sorted point of each line
  double score = std::numeric_limits<double>::infinity();
};

// The best candidate of each regime count, breakpoints scanned at the sample sizes with at least
// `min_points` points per regime.
class RegimeSearch {
 public:
  RegimeSearch(Prepared sorted, std::size_t min_points)
      : p_(std::move(sorted)), n_(p_.x.size()), m_(min_points) {}

  [[nodiscard]] const Prepared& points() const { return p_; }

  [[nodiscard]] Candidate one() const {
    const std::optional<Line> all = segment(0, n_);
    return {{*all}, {n_}, score({*all})};
  }

  [[nodiscard]] std::optional<Candidate> two() const {
    if (n_ < 2 * m_) return std::nullopt;
    Candidate best;
    for (std::size_t b = m_; b + m_ <= n_; ++b) {
      const auto l1 = segment(0, b);
      const auto l2 = segment(b, n_);
      if (!l1 || !l2) continue;
      const double s = score({*l1, *l2});
      if (s < best.score) best = {{*l1, *l2}, {b, n_}, s};
    }
    if (best.lines.empty()) return std::nullopt;
    return best;
  }

  [[nodiscard]] std::optional<Candidate> three() const {
    if (n_ < 3 * m_) return std::nullopt;
    Candidate best;
    for (std::size_t b1 = m_; b1 + 2 * m_ <= n_; ++b1) {
      const auto l1 = segment(0, b1);
      if (!l1) continue;
      for (std::size_t b2 = b1 + m_; b2 + m_ <= n_; ++b2) {
        const auto l2 = segment(b1, b2);
        const auto l3 = segment(b2, n_);
        if (!l2 || !l3) continue;
        const double s = score({*l1, *l2, *l3});
        if (s < best.score) best = {{*l1, *l2, *l3}, {b1, b2, n_}, s};
      }
    }
    if (best.lines.empty()) return std::nullopt;
    return best;
  }

 private:
  // A line over the sorted points [lo, hi), if they span 2 distinct sizes.
  [[nodiscard]] std::optional<Line> segment(std::size_t lo, std::size_t hi) const {
    if (p_.bytes[hi - 1] == p_.bytes[lo]) return std::nullopt;
    std::vector<char> use(n_, 0);
    std::fill(use.begin() + static_cast<std::ptrdiff_t>(lo),
              use.begin() + static_cast<std::ptrdiff_t>(hi), char{1});
    return solve_relative(p_.x, p_.t, use);
  }

  // Sum of squared relative errors of the minimum over lines, or infinity if the lines are not
  // ordered (alpha and bandwidth both growing).
  [[nodiscard]] double score(const std::vector<Line>& lines) const {
    for (std::size_t j = 1; j < lines.size(); ++j) {
      if (lines[j].alpha < lines[j - 1].alpha || lines[j].beta > lines[j - 1].beta) {
        return std::numeric_limits<double>::infinity();
      }
    }
    double sum = 0.0;
    for (std::size_t i = 0; i < n_; ++i) {
      double best = std::numeric_limits<double>::infinity();
      for (const Line& l : lines) best = std::min(best, l.at(p_.x[i]));
      const double rel = (best - p_.t[i]) / p_.t[i];
      sum += rel * rel;
    }
    return sum;
  }

  Prepared p_;
  std::size_t n_;
  std::size_t m_;
};

// Fewest regimes unless one more clearly lowers the RMS relative error over the n points.
[[nodiscard]] std::size_t chosen_count(const std::vector<Candidate>& best_by_count, std::size_t n,
                                       const PiecewiseOptions& options) {
  std::size_t chosen = 0;
  const auto rms = [&](const Candidate& c) { return std::sqrt(c.score / static_cast<double>(n)); };
  for (std::size_t k = 1; k < best_by_count.size(); ++k) {
    const double current = rms(best_by_count[chosen]);
    const double next = rms(best_by_count[k]);
    if (next < (1.0 - options.min_relative_gain) * current &&
        current - next > options.min_absolute_gain) {
      chosen = k;
    }
  }
  return chosen;
}

// Parameters of eta_i = a c_i x_i / (x_i + h), solved in (log a, log h).
struct Saturation {
  double a = 0.0;
  double h = 0.0;
  std::vector<double> residuals;  // (predicted - measured) / measured
};

void check_saturation_input(std::span<const double> x, std::span<const double> c,
                            std::span<const double> y, const char* what) {
  const std::size_t n = x.size();
  if (n < static_cast<std::size_t>(kMinSaturationPoints)) {
    throw InputError(std::string(what) + " fit needs at least " +
                     std::to_string(kMinSaturationPoints) + " points (got " + std::to_string(n) +
                     ")");
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (!(x[i] > 0.0) || !(c[i] > 0.0) || !(y[i] > 0.0) || !std::isfinite(y[i])) {
      throw InputError(std::string(what) + " fit needs positive sizes and rates");
    }
  }
  if (distinct_count(x) < 2) {
    throw InputError(std::string(what) + " fit needs at least 2 distinct sizes");
  }
}

// (log a, log h) by Levenberg-Marquardt on log(predicted / measured), log h kept within 12
// decades of the sizes, from h at the median size and the a that fits it on average.
[[nodiscard]] Eigen::Vector2d solve_saturation(std::span<const double> x, std::span<const double> c,
                                               std::span<const double> y) {
  const std::size_t n = x.size();
  // Fixed part of each residual: log c + log x - log y.
  std::vector<double> base(n);
  for (std::size_t i = 0; i < n; ++i) base[i] = std::log(c[i]) + std::log(x[i]) - std::log(y[i]);
  const auto residuals = [&](const Eigen::Vector2d& p) {
    const double h = std::exp(p(1));
    Eigen::VectorXd r(static_cast<Eigen::Index>(n));
    for (std::size_t i = 0; i < n; ++i) {
      r(static_cast<Eigen::Index>(i)) = p(0) + base[i] - std::log(x[i] + h);
    }
    return r;
  };
  const auto jacobian = [&](const Eigen::Vector2d& p, const Eigen::VectorXd&) {
    const double h = std::exp(p(1));
    Eigen::MatrixXd jac(static_cast<Eigen::Index>(n), 2);
    for (std::size_t i = 0; i < n; ++i) {
      jac(static_cast<Eigen::Index>(i), 0) = 1.0;
      jac(static_cast<Eigen::Index>(i), 1) = -h / (x[i] + h);
    }
    return jac;
  };
  const double lh = std::log(median(std::vector<double>(x.begin(), x.end())));
  double la = 0.0;
  for (std::size_t i = 0; i < n; ++i) la -= base[i] - std::log(x[i] + std::exp(lh));
  la /= static_cast<double>(n);

  const auto [min_x, max_x] = std::minmax_element(x.begin(), x.end());
  constexpr double kUnbounded = std::numeric_limits<double>::infinity();
  const LmBounds<2> bounds{{-kUnbounded, std::log(*min_x * 1e-6)},
                           {kUnbounded, std::log(*max_x * 1e6)}};
  constexpr LmRules kRules{.max_iterations = 500, .min_step = 1e-14, .min_cost = 1e-30,
                           .diagonal_floor = 1e-300};
  return levenberg_marquardt<2>(Eigen::Vector2d(la, lh), residuals, jacobian, kRules, bounds);
}

[[nodiscard]] Saturation fit_scaled_saturation(std::span<const double> x, std::span<const double> c,
                                               std::span<const double> y, const char* what) {
  check_saturation_input(x, c, y, what);
  const Eigen::Vector2d p = solve_saturation(x, c, y);
  Saturation s;
  s.a = std::exp(p(0));
  s.h = std::exp(p(1));
  s.residuals.resize(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double predicted = s.a * c[i] * x[i] / (x[i] + s.h);
    s.residuals[i] = (predicted - y[i]) / y[i];
  }
  return s;
}

}  // namespace

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  const std::size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower =
      *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
  return 0.5 * (lower + upper);
}

hardware::FitQuality fit_quality(std::span<const double> residuals) {
  hardware::FitQuality q;
  std::vector<double> abs_r(residuals.size());
  std::transform(residuals.begin(), residuals.end(), abs_r.begin(),
                 [](double v) { return std::abs(v); });
  q.points = static_cast<int>(abs_r.size());
  if (abs_r.empty()) return q;
  q.max_rel_err = *std::max_element(abs_r.begin(), abs_r.end());
  q.median_rel_err = median(std::move(abs_r));
  return q;
}

AlphaBetaFit fit_alpha_beta(std::span<const hardware::TimedSize> points, double bus_factor) {
  const Prepared p = prepare(points, bus_factor);
  const std::size_t n = p.x.size();
  std::vector<char> use(n, 1);
  Line line = solve_relative(p.x, p.t, use);
  std::vector<double> r = relative_residuals(line, p.x, p.t);

  const double m = median(r);
  std::vector<double> deviation(n);
  for (std::size_t i = 0; i < n; ++i) deviation[i] = std::abs(r[i] - m);
  const double sigma = kRobustSigmaPerMad * median(deviation);
  if (sigma > 1e-12) {
    std::vector<char> keep(n, 1);
    std::vector<double> kept_bytes;
    for (std::size_t i = 0; i < n; ++i) {
      keep[i] = deviation[i] <= kOutlierSigmas * sigma ? 1 : 0;
      if (keep[i]) kept_bytes.push_back(p.bytes[i]);
    }
    if (kept_bytes.size() < n && distinct_count(kept_bytes) >= 2) {
      use = keep;
      line = solve_relative(p.x, p.t, use);
      r = relative_residuals(line, p.x, p.t);
    }
  }

  AlphaBetaFit fit;
  fit.alpha = Seconds(line.alpha * 1e-6);
  fit.busbw = BytesPerSecond(1e6 / line.beta);
  fit.residuals = r;
  fit.dropped.resize(n);
  for (std::size_t i = 0; i < n; ++i) fit.dropped[i] = use[i] == 0;
  fit.quality = fit_quality(r);
  return fit;
}

PiecewiseFit fit_piecewise(std::span<const hardware::TimedSize> points, double bus_factor,
                           const PiecewiseOptions& options) {
  const Prepared input = prepare(points, bus_factor);
  const std::size_t n = input.x.size();
  const RegimeSearch search(sorted_by_size(input),
                            static_cast<std::size_t>(std::max(2, options.min_points_per_regime)));
  std::vector<Candidate> best_by_count{search.one()};
  if (options.max_regimes >= 2) {
    if (std::optional<Candidate> two = search.two()) best_by_count.push_back(std::move(*two));
  }
  if (options.max_regimes >= 3 && best_by_count.size() == 2) {
    if (std::optional<Candidate> three = search.three()) best_by_count.push_back(std::move(*three));
  }
  const Candidate& c = best_by_count[chosen_count(best_by_count, n, options)];

  PiecewiseFit fit;
  for (std::size_t j = 0; j < c.lines.size(); ++j) {
    fit.regimes.push_back(to_regime(c.lines[j], Bytes(search.points().bytes[c.ends[j] - 1])));
  }
  fit.residuals.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    double best = std::numeric_limits<double>::infinity();
    for (const Line& l : c.lines) best = std::min(best, l.at(input.x[i]));
    fit.residuals[i] = (best - input.t[i]) / input.t[i];
  }
  fit.quality = fit_quality(fit.residuals);
  return fit;
}

GemmFit fit_gemm(std::span<const hardware::GemmPoint> points, const GemmFitOptions& options) {
  if (!(options.peak.value() > 0.0)) {
    throw InputError("a GEMM efficiency fit needs the dtype's peak throughput");
  }
  std::vector<double> k;
  std::vector<double> c;
  std::vector<double> eta;
  for (const hardware::GemmPoint& p : points) {
    k.push_back(static_cast<double>(p.k));
    c.push_back(
        hardware::tile_efficiency(p.m, p.n, options.tile_m, options.tile_n) *
        hardware::wave_efficiency(p.m, p.n, options.tile_m, options.tile_n, options.sm_count));
    eta.push_back(p.rate / options.peak);
  }
  const Saturation s = fit_scaled_saturation(k, c, eta, "a GEMM efficiency");
  return {s.a, s.h, fit_quality(s.residuals)};
}

SaturationFit fit_saturation(std::span<const double> x, std::span<const double> efficiency) {
  if (x.size() != efficiency.size()) throw InputError("a saturation fit needs one rate per size");
  const std::vector<double> ones(x.size(), 1.0);
  const Saturation s = fit_scaled_saturation(x, ones, efficiency, "a saturation");
  return {s.a, s.h, fit_quality(s.residuals)};
}

BytesPerSecond plateau_bandwidth(std::span<const BandwidthMeasurement> points) {
  if (points.empty()) throw InputError("a bandwidth summary needs at least one measurement");
  Bytes largest(0.0);
  for (const BandwidthMeasurement& p : points) largest = std::max(largest, p.bytes);
  std::vector<double> rates;
  for (const BandwidthMeasurement& p : points) {
    if (p.bytes >= largest / 8.0) rates.push_back(p.rate.value());
  }
  return BytesPerSecond(median(std::move(rates)));
}

}  // namespace trainplan::calibration
