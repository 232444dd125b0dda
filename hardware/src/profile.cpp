#include "trainplan/hardware/profile.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <vector>

namespace trainplan::hardware {
namespace {

[[nodiscard]] std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

constexpr int kMinTile = 16;
// Points further than this many sigmas weigh less than exp(-12.5) of a neighbour: left out.
constexpr double kWindowSigmas = 5.0;
// Squared log2 distance below which a point is at the query's shape.
constexpr double kSameShape = 1e-12;

// Wave quantization of `products` back-to-back products in one batched kernel: their tiles
// share the waves.
[[nodiscard]] double batched_wave_efficiency(std::int64_t m, std::int64_t n, int tile_m, int tile_n,
                                             int sm_count, double products) {
  if (m <= 0 || n <= 0 || tile_m <= 0 || tile_n <= 0 || sm_count <= 0) return 1.0;
  const auto copies = static_cast<std::int64_t>(std::max(1.0, std::round(products)));
  const std::int64_t tiles = ceil_div(m, tile_m) * ceil_div(n, tile_n) * copies;
  const std::int64_t waves = ceil_div(tiles, sm_count);
  return static_cast<double>(tiles) / static_cast<double>(waves * sm_count);
}

// (a^p + b^p)^(1/p) for a, b >= 0, computed without overflow; p <= 0 means max(a, b).
[[nodiscard]] double soft_max(double a, double b, double p) {
  const double hi = std::max(a, b);
  const double lo = std::min(a, b);
  if (!(p > 0.0) || !(hi > 0.0)) return hi;
  return hi * std::pow(1.0 + std::pow(lo / hi, p), 1.0 / p);
}

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

[[nodiscard]] const CollectiveCurve* curve_of(std::span<const CollectiveCurve> curves, Collective c,
                                              int ranks, int nodes, std::string_view dtype) {
  for (const CollectiveCurve& curve : curves) {
    if (curve.collective == c && curve.ranks == ranks && curve.nodes == nodes && curve.dtype == dtype)
      return &curve;
  }
  return nullptr;
}

[[nodiscard]] const CollectiveModel* model_of(std::span<const CollectiveModel> models, Collective c,
                                              LinkScope scope, std::string_view dtype) {
  for (const CollectiveModel& m : models) {
    if (m.collective == c && m.scope == scope && m.dtype == dtype) return &m;
  }
  return nullptr;
}

// log(measured / model) of a measured curve at `bytes`, the size held inside the measured range
// (beyond it, the departure at the nearest measured size).
[[nodiscard]] double curve_departure(const CollectiveCurve& curve, const CollectiveModel& model,
                                     Bytes bytes) {
  const Bytes at = std::clamp(bytes, curve.points.front().bytes, curve.points.back().bytes);
  const Seconds measured = interpolate_log_log(curve.points, at);
  const Seconds modelled = nccl_choice(model, curve.ranks, curve.nodes, at).time;
  if (!(measured.value() > 0.0) || !(modelled.value() > 0.0)) return 0.0;
  return std::log(measured / modelled);
}

// The measured curves' departure from the model at `bytes`, carried to (ranks, nodes): among the
// curves of the model's collective, scope and dtype with the nearest ranks per node, linear in log2 of
// the node count (one node: of the rank count) between the nearest counts on either side; beyond
// them, the nearest one's; 0 without curves.
[[nodiscard]] double scale_departure(std::span<const CollectiveCurve> curves,
                                     const CollectiveModel& model, int ranks, int nodes,
                                     Bytes bytes) {
  const bool one_node = nodes == 1;
  const auto coordinate = [&](int r, int n) { return std::log2(static_cast<double>(one_node ? r : n)); };
  const auto per_node_distance = [&](const CollectiveCurve& k) {
    return one_node ? 0.0
                    : std::abs(std::log2(static_cast<double>(ranks) / nodes * k.nodes / k.ranks));
  };
  const auto of_model = [&](const CollectiveCurve& k) {
    return k.collective == model.collective && scope_of(k.nodes) == model.scope &&
           k.dtype == model.dtype && !k.points.empty() && k.ranks >= 2;
  };
  double nearest = std::numeric_limits<double>::infinity();
  for (const CollectiveCurve& k : curves) {
    if (of_model(k)) nearest = std::min(nearest, per_node_distance(k));
  }
  const double x = coordinate(ranks, nodes);
  const CollectiveCurve* below = nullptr;
  const CollectiveCurve* above = nullptr;
  for (const CollectiveCurve& k : curves) {
    if (!of_model(k) || per_node_distance(k) > nearest + 1e-9) continue;
    const double xk = coordinate(k.ranks, k.nodes);
    if (xk <= x && (below == nullptr || xk > coordinate(below->ranks, below->nodes))) below = &k;
    if (xk >= x && (above == nullptr || xk < coordinate(above->ranks, above->nodes))) above = &k;
  }
  if (below == nullptr && above == nullptr) return 0.0;
  if (below == nullptr) return curve_departure(*above, model, bytes);
  if (above == nullptr || above == below) return curve_departure(*below, model, bytes);
  const double x0 = coordinate(below->ranks, below->nodes);
  const double x1 = coordinate(above->ranks, above->nodes);
  const double w = x1 > x0 ? (x - x0) / (x1 - x0) : 0.0;
  return (1.0 - w) * curve_departure(*below, model, bytes) + w * curve_departure(*above, model, bytes);
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

int narrow_tile(std::int64_t dim, int tile) {
  int t = kMinTile;
  while (t < tile && t < dim) t *= 2;
  return std::min(t, tile);
}

Seconds gemm_model_time(const GemmModel& g, std::int64_t m, std::int64_t n, std::int64_t k,
                        int sm_count, double count) {
  const double products = std::max(1.0, count);
  const double flops =
      2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * products;
  if (!g.roofline()) {
    return Seconds(flops / (g.peak.value() * gemm_model_efficiency(g, m, n, k, sm_count, count)));
  }
  const int sms = sm_count > 0 ? sm_count : g.sm_count;
  const int tm = narrow_tile(m, g.tile_m);
  const int tn = narrow_tile(n, g.tile_n);
  const double eta = g.peak_efficiency * tile_efficiency(m, n, tm, tn) *
                     batched_wave_efficiency(m, n, tm, tn, sms, products) *
                     small_k_efficiency(static_cast<double>(k), g.k0);
  const double compute = flops / (g.peak.value() * eta);
  const double md = static_cast<double>(m);
  const double nd = static_cast<double>(n);
  const double kd = static_cast<double>(k);
  const double memory = products * ((md * kd + kd * nd) * g.a_bytes / g.read_bandwidth.value() +
                                    md * nd * g.c_bytes / g.write_bandwidth.value());
  return g.overhead + Seconds(soft_max(compute, memory, g.smoothness));
}

double gemm_model_efficiency(const GemmModel& g, std::int64_t m, std::int64_t n, std::int64_t k,
                             int sm_count, double count) {
  const double products = std::max(1.0, count);
  if (g.roofline()) {
    const double flops =
        2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * products;
    return flops / (g.peak.value() * gemm_model_time(g, m, n, k, sm_count, count).value());
  }
  const int sms = sm_count > 0 ? sm_count : g.sm_count;
  return g.peak_efficiency * tile_efficiency(m, n, g.tile_m, g.tile_n) *
         batched_wave_efficiency(m, n, g.tile_m, g.tile_n, sms, products) *
         small_k_efficiency(static_cast<double>(k), g.k0);
}

Seconds gemm_predicted_time(const GemmModel& g, std::int64_t m, std::int64_t n, std::int64_t k,
                            int sm_count, int skip, double count) {
  const Seconds model = gemm_model_time(g, m, n, k, sm_count, count);
  if (!(g.interpolation_octaves > 0.0) || g.points.empty() || !(g.peak.value() > 0.0)) {
    return model;
  }
  const double qm = std::log2(static_cast<double>(m));
  const double qn = std::log2(static_cast<double>(n));
  const double qk = std::log2(static_cast<double>(k));
  const double two_sigma2 = 2.0 * g.interpolation_octaves * g.interpolation_octaves;
  const double cutoff2 =
      kWindowSigmas * kWindowSigmas * g.interpolation_octaves * g.interpolation_octaves;
  double exact_sum = 0.0;
  int exact = 0;
  double num = 0.0;
  double den = g.interpolation_prior;
  for (std::size_t i = 0; i < g.points.size(); ++i) {
    if (static_cast<int>(i) == skip) continue;
    const GemmPoint& p = g.points[i];
    if (p.m <= 0 || p.n <= 0 || p.k <= 0 || !(p.rate.value() > 0.0)) continue;
    const double dm = std::log2(static_cast<double>(p.m)) - qm;
    const double dn = std::log2(static_cast<double>(p.n)) - qn;
    const double dk = std::log2(static_cast<double>(p.k)) - qk;
    const double d2 = dm * dm + dn * dn + dk * dk;
    if (d2 > cutoff2) continue;
    const double measured = 2.0 * static_cast<double>(p.m) * static_cast<double>(p.n) *
                            static_cast<double>(p.k) / p.rate.value();
    const double r =
        std::log(measured / gemm_model_time(g, p.m, p.n, p.k, g.sm_count, 1.0).value());
    if (d2 < kSameShape) {
      exact_sum += r;
      ++exact;
      continue;
    }
    const double w = std::exp(-d2 / two_sigma2) / d2;
    num += w * r;
    den += w;
  }
  if (exact > 0) return model * std::exp(exact_sum / exact);
  if (!(den > 0.0)) return model;
  return model * std::exp(num / den);
}

double attention_model_efficiency(const AttentionModel& a, std::int64_t seq,
                                  std::int64_t head_dim) {
  const double s = static_cast<double>(seq);
  const double model = saturating_efficiency(a.efficiency, s, a.seq_half);
  if (head_dim <= 0 || !(a.peak.value() > 0.0)) return model;
  // The points of the nearest head dim, one median rate per sequence length.
  std::int64_t nearest = 0;
  double nearest_distance = std::numeric_limits<double>::infinity();
  for (const SeqRate& p : a.points) {
    if (p.head_dim <= 0 || p.seq <= 0 || !(p.rate.value() > 0.0)) continue;
    const double d =
        std::abs(std::log2(static_cast<double>(p.head_dim) / static_cast<double>(head_dim)));
    if (d < nearest_distance) {
      nearest_distance = d;
      nearest = p.head_dim;
    }
  }
  if (nearest == 0) return model;
  std::map<std::int64_t, std::vector<double>> by_seq;
  for (const SeqRate& p : a.points) {
    if (p.head_dim == nearest && p.seq > 0 && p.rate.value() > 0.0) {
      by_seq[p.seq].push_back(p.rate.value() / a.peak.value());
    }
  }
  std::vector<std::pair<double, double>> curve;  // (seq, eta), ascending
  for (auto& [q, etas] : by_seq) {
    std::sort(etas.begin(), etas.end());
    const std::size_t mid = etas.size() / 2;
    const double med = etas.size() % 2 == 1 ? etas[mid] : 0.5 * (etas[mid - 1] + etas[mid]);
    curve.emplace_back(static_cast<double>(q), med);
  }
  const auto at_model = [&](double x) {
    return saturating_efficiency(a.efficiency, x, a.seq_half);
  };
  if (s <= curve.front().first) {
    const double base = at_model(curve.front().first);
    return base > 0.0 ? curve.front().second * model / base : curve.front().second;
  }
  if (s >= curve.back().first) {
    const double base = at_model(curve.back().first);
    return base > 0.0 ? curve.back().second * model / base : curve.back().second;
  }
  const auto hi = std::lower_bound(curve.begin(), curve.end(), s,
                                   [](const auto& p, double x) { return p.first < x; });
  if (hi->first == s) return hi->second;
  const auto lo = hi - 1;
  const double t = std::log(s / lo->first) / std::log(hi->first / lo->first);
  return std::exp(std::log(lo->second) + t * (std::log(hi->second) - std::log(lo->second)));
}

std::string HardwareProfile::answering_dtype(Collective c, std::string_view wanted) const {
  // The common case without allocating: the dtype asked for is there, or there is only one.
  const std::string* only = nullptr;
  bool several = false;
  const auto see = [&](const std::string& d) {
    if (only == nullptr) only = &d;
    else if (*only != d) several = true;
  };
  for (const CollectiveCurve& curve : collectives) {
    if (curve.collective != c) continue;
    if (curve.dtype == wanted) return curve.dtype;
    see(curve.dtype);
  }
  for (const CollectiveModel& m : collective_models) {
    if (m.collective != c) continue;
    if (m.dtype == wanted) return m.dtype;
    see(m.dtype);
  }
  if (!several) return only != nullptr ? *only : std::string();
  std::map<std::string, std::size_t, std::less<>> points;
  for (const CollectiveCurve& curve : collectives) {
    if (curve.collective == c) points[curve.dtype] += curve.points.size();
  }
  for (const CollectiveModel& m : collective_models) {
    if (m.collective == c) points.try_emplace(m.dtype, 0);
  }
  const auto most = std::max_element(points.begin(), points.end(), [](const auto& a, const auto& b) {
    return a.second < b.second;
  });
  return most->first;
}

const CollectiveCurve* HardwareProfile::find_curve(Collective c, int ranks, int nodes,
                                                   std::string_view dtype) const {
  return curve_of(collectives, c, ranks, nodes, answering_dtype(c, dtype));
}

const CollectiveModel* HardwareProfile::find_model(Collective c, LinkScope scope,
                                                   std::string_view dtype) const {
  return model_of(collective_models, c, scope, answering_dtype(c, dtype));
}

std::optional<Seconds> HardwareProfile::collective_time(Collective c, int ranks, int nodes,
                                                        Bytes bytes, std::string_view dtype) const {
  if (ranks <= 1) return Seconds(0.0);
  nodes = std::max(nodes, 1);
  const std::string d = answering_dtype(c, dtype);
  if (const CollectiveCurve* exact = curve_of(collectives, c, ranks, nodes, d)) {
    if (!exact->points.empty() || has_model(*exact))
      return measured_curve_time(*exact, bus_factor(c, ranks), bytes);
  }
  const CollectiveModel* model = model_of(collective_models, c, scope_of(nodes), d);
  if (model == nullptr) return std::nullopt;
  return nccl_choice(*model, ranks, nodes, bytes).time *
         std::exp(scale_departure(collectives, *model, ranks, nodes, bytes));
}

std::optional<double> HardwareProfile::gemm_efficiency(std::int64_t m, std::int64_t n,
                                                       std::int64_t k, std::string_view dtype,
                                                       int sm_count) const {
  return gemm_efficiency(m, n, k, dtype, sm_count, 1.0);
}

std::optional<double> HardwareProfile::gemm_efficiency(std::int64_t m, std::int64_t n,
                                                       std::int64_t k, std::string_view dtype,
                                                       int sm_count, double count) const {
  const std::optional<GemmDtype> d = try_parse<GemmDtype>(dtype);
  if (!d) return std::nullopt;
  for (const GemmModel& g : gemm) {
    if (g.dtype != *d) continue;
    if (m <= 0 || n <= 0 || k <= 0 || !(g.peak.value() > 0.0)) {
      return gemm_model_efficiency(g, m, n, k, sm_count, count);
    }
    const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) *
                         static_cast<double>(k) * std::max(1.0, count);
    return flops / (g.peak.value() * gemm_predicted_time(g, m, n, k, sm_count, -1, count).value());
  }
  return std::nullopt;
}

std::optional<double> HardwareProfile::attention_efficiency(bool backward, std::int64_t seq) const {
  return attention_efficiency(backward, seq, false, 0);
}

std::optional<double> HardwareProfile::attention_efficiency(bool backward, std::int64_t seq,
                                                            bool causal,
                                                            std::int64_t head_dim) const {
  const std::optional<AttentionModel>& plain = backward ? attention_bwd : attention_fwd;
  const std::optional<AttentionModel>& masked =
      backward ? attention_bwd_causal : attention_fwd_causal;
  for (const std::optional<AttentionModel>* a : {causal ? &masked : &plain, &plain}) {
    if (*a && (*a)->kernel == AttentionKernel::fused) {
      return attention_model_efficiency(**a, seq, head_dim);
    }
  }
  return std::nullopt;
}

bool HardwareProfile::empty() const {
  return collectives.empty() && gemm.empty() && !attention_fwd && !attention_bwd &&
         !attention_fwd_causal && !attention_bwd_causal && !memory.hbm && !memory.h2d &&
         !memory.d2h && !cpu_adam_params_per_s && !kernels.optimizer_fp32_states &&
         !kernels.optimizer_bf16_states && !kernels.elementwise && !launch.empty_kernel &&
         !launch.small_gemm;
}

std::string gpu_model(std::string_view name) {
  const auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  for (std::size_t i = 0; i < name.size();) {
    while (i < name.size() && !alnum(name[i])) ++i;
    std::size_t end = i;
    while (end < name.size() && alnum(name[end])) ++end;
    const std::string_view word = name.substr(i, end - i);
    if (std::any_of(word.begin(), word.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      std::string out(word);
      std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
      return out;
    }
    i = end;
  }
  return {};
}

bool profile_applies(const HardwareProfile& p, const GpuSpec& g) {
  const std::string named = !p.gpu.empty() ? p.gpu : p.provenance.gpu.value_or("");
  if (named.empty()) return true;
  const std::string model = gpu_model(named);
  return !model.empty() && model == gpu_model(g.name);
}

}  // namespace trainplan::hardware
