// The collective model's five quantities per (collective, scope), fitted to every measured curve of
// that scope at once: NCCL's structure (hardware/nccl_model.hpp) carries the fit across rank and
// node counts. Method: docs/calibration.md ("The collective model").

#include <Eigen/Dense>
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "levenberg_marquardt.hpp"
#include "trainplan/calibration/fit.hpp"

namespace trainplan::calibration {
namespace {

using hardware::CollectiveCurve;
using hardware::CollectiveModel;

// Unknowns, as natural logarithms: latency scale, network latency scale, ring Simple bus
// bandwidth (GB/s), tree bandwidth, LL bandwidth cap (GB/s).
using Unknowns = LmVector<5>;

// Weight of the pull of each dimensionless unknown towards NCCL's own value (1): one such
// unknown off by a factor e costs what one point off by 30 % does. It decides only what the
// points leave open (the network latency of a single-node scope, the tree of a ring-only
// collective, latency scales confounded at a single node count).
constexpr double kPriorWeight = 0.3;

struct Point {
  int ranks;
  int nodes;
  Bytes bytes;
  double time;
};

[[nodiscard]] CollectiveModel model_of(const CollectiveModel& shape, const Unknowns& x) {
  CollectiveModel m = shape;
  m.latency_scale = std::exp(x(0));
  m.network_latency_scale = std::exp(x(1));
  m.busbw = BytesPerSecond(std::exp(x(2)) * 1e9);
  m.tree_bandwidth = std::exp(x(3));
  m.ll_bandwidth = BytesPerSecond(std::exp(x(4)) * 1e9);
  return m;
}

[[nodiscard]] CollectiveModel fit_one(const CollectiveModel& shape, const std::vector<Point>& points) {
  const auto residuals = [&](const Unknowns& x) {
    const CollectiveModel m = model_of(shape, x);
    Eigen::VectorXd r(static_cast<Eigen::Index>(points.size()) + 3);
    for (std::size_t i = 0; i < points.size(); ++i) {
      const Point& p = points[i];
      r(static_cast<Eigen::Index>(i)) =
          std::log(hardware::nccl_choice(m, p.ranks, p.nodes, p.bytes).time.value() / p.time);
    }
    const auto n = static_cast<Eigen::Index>(points.size());
    r(n) = kPriorWeight * x(0);
    r(n + 1) = kPriorWeight * x(1);
    r(n + 2) = kPriorWeight * x(3);
    return r;
  };
  const auto jacobian = [&](const Unknowns& x, const Eigen::VectorXd& r) {
    return forward_difference_jacobian<5>(residuals, x, r, 1e-4);
  };
  // Start from the highest bus bandwidth measured (the ring's plateau) and a few latency guesses;
  // NCCL's choice makes the cost piecewise, so the best of several solves is kept.
  double busbw = 0.0;
  for (const Point& p : points) {
    busbw = std::max(busbw, hardware::bus_factor(shape.collective, p.ranks) * p.bytes.value() / p.time);
  }
  const double gb = std::log(std::max(busbw, 1e6) / 1e9);
  const std::array<Unknowns, 3> starts{
      (Unknowns() << 0.0, 0.0, gb, 0.0, gb - std::log(4.0)).finished(),
      (Unknowns() << std::log(2.0), std::log(2.0), gb - std::log(2.0), 0.0, gb - std::log(8.0))
          .finished(),
      (Unknowns() << 0.0, std::log(3.0), gb, std::log(0.5), gb - std::log(2.0)).finished()};
  LmBounds<5> bounds;
  bounds.lower << std::log(0.02), std::log(0.02), std::log(1e-3), std::log(0.01), std::log(1e-4);
  bounds.upper << std::log(50.0), std::log(50.0), std::log(1e4), std::log(10.0), std::log(1e4);
  constexpr LmRules kRules{.max_iterations = 300, .min_step = 1e-8};
  Unknowns best = starts.front();
  double best_cost = std::numeric_limits<double>::infinity();
  for (const Unknowns& start : starts) {
    const Unknowns x = levenberg_marquardt<5>(start, residuals, jacobian, kRules, bounds);
    const double cost = residuals(x).squaredNorm();
    if (cost < best_cost) {
      best_cost = cost;
      best = x;
    }
  }
  CollectiveModel m = model_of(shape, best);
  std::vector<double> rel;
  for (const Point& p : points) {
    rel.push_back(hardware::nccl_choice(m, p.ranks, p.nodes, p.bytes).time.value() / p.time - 1.0);
  }
  m.fit = fit_quality(rel);
  return m;
}

}  // namespace

std::vector<CollectiveModel> fit_collective_models(std::span<const CollectiveCurve> curves) {
  std::map<std::tuple<hardware::Collective, hardware::LinkScope, std::string>, std::vector<Point>> groups;
  for (const CollectiveCurve& c : curves) {
    if (c.ranks < 2 || c.nodes < 1 || c.ranks < c.nodes) continue;
    std::vector<Point>& g = groups[{c.collective, hardware::scope_of(c.nodes), c.dtype}];
    for (const hardware::TimedSize& p : c.points) {
      if (p.bytes.value() > 0.0 && p.time.value() > 0.0)
        g.push_back({c.ranks, c.nodes, p.bytes, p.time.value()});
    }
  }
  std::vector<CollectiveModel> out;
  for (const auto& [key, points] : groups) {
    if (static_cast<int>(points.size()) < kMinCollectiveModelPoints) continue;
    CollectiveModel shape;
    shape.collective = std::get<0>(key);
    shape.scope = std::get<1>(key);
    shape.dtype = std::get<2>(key);
    out.push_back(fit_one(shape, points));
  }
  return out;
}

}  // namespace trainplan::calibration
