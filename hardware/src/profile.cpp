#include "trainplan/hardware/profile.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace trainplan::hardware {
namespace {

[[nodiscard]] std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// The analytic model of a curve: its regimes, or its single line when it has none.
[[nodiscard]] Seconds model_time(const CollectiveCurve& curve, double factor, Bytes bytes,
                                 double latency_scale) {
  if (!curve.regimes.empty()) return regimes_time(curve.regimes, factor, bytes, latency_scale);
  if (!(curve.busbw.value() > 0.0)) return curve.alpha * latency_scale;
  return alpha_beta_time(curve.alpha * latency_scale, factor, bytes, curve.busbw);
}

[[nodiscard]] bool has_model(const CollectiveCurve& curve) {
  return !curve.regimes.empty() || curve.busbw.value() > 0.0;
}

// Measured points inside their range; outside it the model's slope, continued from the end point,
// so that time stays continuous and increasing in size across the boundary.
[[nodiscard]] Seconds measured_curve_time(const CollectiveCurve& curve, double factor,
                                          Bytes bytes) {
  const auto& pts = curve.points;
  if (pts.empty()) return model_time(curve, factor, bytes, 1.0);
  if (bytes >= pts.front().bytes && bytes <= pts.back().bytes) {
    return interpolate_log_log(pts, bytes);
  }
  if (!has_model(curve)) return bytes < pts.front().bytes ? pts.front().time : pts.back().time;
  if (bytes > pts.back().bytes) {
    const Seconds extra =
        model_time(curve, factor, bytes, 1.0) - model_time(curve, factor, pts.back().bytes, 1.0);
    return pts.back().time + std::max(Seconds(0.0), extra);
  }
  const Seconds less =
      model_time(curve, factor, pts.front().bytes, 1.0) - model_time(curve, factor, bytes, 1.0);
  return std::max(Seconds(0.0), pts.front().time - std::max(Seconds(0.0), less));
}

}  // namespace

Seconds interpolate_log_log(std::span<const TimedSize> points, Bytes bytes) {
  if (points.empty()) return Seconds(0.0);
  const auto it = std::lower_bound(points.begin(), points.end(), bytes,
                                   [](const TimedSize& p, Bytes b) { return p.bytes < b; });
  if (it == points.end()) return points.back().time;
  if (it->bytes == bytes || it == points.begin()) return it->time;
  const TimedSize& lo = *(it - 1);
  const TimedSize& hi = *it;
  const double x0 = std::log(lo.bytes.value());
  const double x1 = std::log(hi.bytes.value());
  const double y0 = std::log(lo.time.value());
  const double y1 = std::log(hi.time.value());
  const double x = std::log(bytes.value());
  return Seconds(std::exp(y0 + (y1 - y0) * (x - x0) / (x1 - x0)));
}

Seconds regimes_time(std::span<const Regime> regimes, double factor, Bytes bytes,
                     double latency_scale) {
  Seconds best(std::numeric_limits<double>::infinity());
  for (const Regime& r : regimes) {
    if (!(r.busbw.value() > 0.0)) continue;
    best = std::min(best, alpha_beta_time(r.alpha * latency_scale, factor, bytes, r.busbw));
  }
  return best;
}

double tile_efficiency(std::int64_t m, std::int64_t n, int tile_m, int tile_n) {
  if (m <= 0 || n <= 0 || tile_m <= 0 || tile_n <= 0) return 1.0;
  const double padded = static_cast<double>(ceil_div(m, tile_m) * tile_m) *
                        static_cast<double>(ceil_div(n, tile_n) * tile_n);
  return static_cast<double>(m) * static_cast<double>(n) / padded;
}

double wave_efficiency(std::int64_t m, std::int64_t n, int tile_m, int tile_n, int sm_count) {
  if (m <= 0 || n <= 0 || tile_m <= 0 || tile_n <= 0 || sm_count <= 0) return 1.0;
  const std::int64_t tiles = ceil_div(m, tile_m) * ceil_div(n, tile_n);
  const std::int64_t waves = ceil_div(tiles, sm_count);
  return static_cast<double>(tiles) / static_cast<double>(waves * sm_count);
}

double gemm_model_efficiency(const GemmModel& g, std::int64_t m, std::int64_t n, std::int64_t k,
                             int sm_count) {
  const int sms = sm_count > 0 ? sm_count : g.sm_count;
  return g.peak_efficiency * tile_efficiency(m, n, g.tile_m, g.tile_n) *
         wave_efficiency(m, n, g.tile_m, g.tile_n, sms) *
         small_k_efficiency(static_cast<double>(k), g.k0);
}

const CollectiveCurve* HardwareProfile::find_curve(Collective c, int ranks, int nodes) const {
  for (const CollectiveCurve& curve : collectives) {
    if (curve.collective == c && curve.ranks == ranks && curve.nodes == nodes) return &curve;
  }
  return nullptr;
}

std::optional<Seconds> HardwareProfile::collective_time(Collective c, int ranks, int nodes,
                                                        Bytes bytes) const {
  if (ranks <= 1) return Seconds(0.0);
  nodes = std::max(nodes, 1);
  const double factor = bus_factor(c, ranks);
  if (const CollectiveCurve* exact = find_curve(c, ranks, nodes)) {
    if (!exact->points.empty() || has_model(*exact))
      return measured_curve_time(*exact, factor, bytes);
  }

  // Nearest measured curve on the same side of the node boundary: node count first, then
  // ranks per node.
  const CollectiveCurve* nearest = nullptr;
  double nearest_distance = std::numeric_limits<double>::infinity();
  const double ppn = static_cast<double>(ranks) / nodes;
  for (const CollectiveCurve& curve : collectives) {
    if (curve.collective != c || curve.ranks < 2 || curve.nodes < 1 || !has_model(curve)) continue;
    if ((curve.nodes == 1) != (nodes == 1)) continue;
    const double curve_ppn = static_cast<double>(curve.ranks) / curve.nodes;
    const double distance = 2.0 * std::abs(std::log2(static_cast<double>(nodes) / curve.nodes)) +
                            std::abs(std::log2(ppn / curve_ppn));
    if (distance < nearest_distance) {
      nearest_distance = distance;
      nearest = &curve;
    }
  }
  if (nearest == nullptr) return std::nullopt;
  const double latency_scale =
      hardware::ring_latency(latency_weights, c, ranks, nodes) /
      hardware::ring_latency(latency_weights, c, nearest->ranks, nearest->nodes);
  return model_time(*nearest, factor, bytes, latency_scale);
}

std::optional<double> HardwareProfile::gemm_efficiency(std::int64_t m, std::int64_t n,
                                                       std::int64_t k, std::string_view dtype,
                                                       int sm_count) const {
  const std::optional<GemmDtype> d = try_parse<GemmDtype>(dtype);
  if (!d) return std::nullopt;
  for (const GemmModel& g : gemm) {
    if (g.dtype == *d) return gemm_model_efficiency(g, m, n, k, sm_count);
  }
  return std::nullopt;
}

std::optional<double> HardwareProfile::attention_efficiency(bool backward, std::int64_t seq) const {
  const std::optional<AttentionModel>& a = backward ? attention_bwd : attention_fwd;
  if (!a) return std::nullopt;
  return saturating_efficiency(a->efficiency, static_cast<double>(seq), a->seq_half);
}

bool HardwareProfile::empty() const {
  return collectives.empty() && gemm.empty() && !attention_fwd && !attention_bwd && !memory.hbm &&
         !memory.h2d && !memory.d2h && !cpu_adam_params_per_s;
}

}  // namespace trainplan::hardware
