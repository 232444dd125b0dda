#include "trainplan/request/profile_json.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trainplan/calibration/fit.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/request/files.hpp"
#include "trainplan/request/json_util.hpp"
#include "trainplan/request/measurements.hpp"

namespace trainplan::request {
namespace {

using OJson = nlohmann::ordered_json;
using hardware::FitQuality;

[[nodiscard]] double us(Seconds t) { return round_significant(t.value() * 1e6); }
[[nodiscard]] double gbps_value(BytesPerSecond r) { return round_significant(to_gbps(r)); }
[[nodiscard]] double tflops_value(FlopsPerSecond r) { return round_significant(to_tflops(r)); }
[[nodiscard]] std::int64_t whole_bytes(Bytes b) { return std::llround(b.value()); }

OJson quality_json(const FitQuality& q) {
  return OJson{{"median_rel_err", round_significant(q.median_rel_err)},
               {"max_rel_err", round_significant(q.max_rel_err)},
               {"points", q.points}};
}

OJson curve_json(const hardware::CollectiveCurve& c) {
  OJson regimes = OJson::array();
  for (const hardware::Regime& r : c.regimes) {
    regimes.push_back(OJson{{"max_bytes", whole_bytes(r.max_bytes)},
                            {"alpha_us", us(r.alpha)},
                            {"busbw_GBps", gbps_value(r.busbw)}});
  }
  OJson points = OJson::array();
  for (const hardware::TimedSize& p : c.points) {
    points.push_back(OJson::array({whole_bytes(p.bytes), us(p.time)}));
  }
  OJson j{{"collective", to_string(c.collective)},
          {"scope", to_string(c.scope)},
          {"ranks", c.ranks},
          {"nodes", c.nodes},
          {"alpha_us", us(c.alpha)},
          {"busbw_GBps", gbps_value(c.busbw)},
          {"regimes", regimes},
          {"points", points},
          {"fit", quality_json(c.fit)}};
  if (!c.dtype.empty()) j["dtype"] = c.dtype;
  return j;
}

OJson collective_model_json(const hardware::CollectiveModel& m) {
  OJson j{{"collective", to_string(m.collective)},
          {"scope", to_string(m.scope)},
          {"latency_scale", round_significant(m.latency_scale)},
          {"network_latency_scale", round_significant(m.network_latency_scale)},
          {"busbw_GBps", gbps_value(m.busbw)},
          {"tree_bandwidth", round_significant(m.tree_bandwidth)},
          {"ll_GBps", gbps_value(m.ll_bandwidth)},
          {"fit", quality_json(m.fit)}};
  if (!m.dtype.empty()) j["dtype"] = m.dtype;
  return j;
}

OJson gemm_json(const hardware::GemmModel& g) {
  OJson points = OJson::array();
  for (const hardware::GemmPoint& p : g.points) {
    points.push_back(OJson::array({p.m, p.n, p.k, tflops_value(p.rate)}));
  }
  OJson j{{"peak_efficiency", round_significant(g.peak_efficiency)},
          {"k0", round_significant(g.k0)},
          {"tile_m", g.tile_m},
          {"tile_n", g.tile_n},
          {"sm_count", g.sm_count},
          {"peak_TFLOPS", tflops_value(g.peak)}};
  if (g.roofline()) {
    j["overhead_us"] = us(g.overhead);
    j["read_GBps"] = gbps_value(g.read_bandwidth);
    j["write_GBps"] = gbps_value(g.write_bandwidth);
    j["smoothness"] = round_significant(g.smoothness);
    j["a_bytes"] = round_significant(g.a_bytes);
    j["c_bytes"] = round_significant(g.c_bytes);
  }
  if (g.interpolation_octaves > 0.0) {
    j["interpolation"] = OJson{{"octaves", round_significant(g.interpolation_octaves)},
                               {"prior", round_significant(g.interpolation_prior)}};
  }
  j["points"] = points;
  j["fit"] = quality_json(g.fit);
  if (g.model_fit.points > 0) j["model_fit"] = quality_json(g.model_fit);
  if (g.leave_one_out.points > 0) j["leave_one_out"] = quality_json(g.leave_one_out);
  return j;
}

OJson attention_json(const hardware::AttentionModel& a) {
  OJson points = OJson::array();
  for (const hardware::SeqRate& p : a.points) {
    if (p.head_dim > 0) {
      points.push_back(OJson::array({p.seq, tflops_value(p.rate), p.head_dim}));
    } else {
      points.push_back(OJson::array({p.seq, tflops_value(p.rate)}));
    }
  }
  OJson j{{"efficiency", round_significant(a.efficiency)},
          {"seq_half", round_significant(a.seq_half)},
          {"peak_TFLOPS", tflops_value(a.peak)}};
  if (a.kernel != hardware::AttentionKernel::fused) j["kernel"] = to_string(a.kernel);
  j["points"] = points;
  j["fit"] = quality_json(a.fit);
  if (a.interpolated.points > 0) j["interpolated"] = quality_json(a.interpolated);
  return j;
}

OJson kernels_json(const hardware::KernelBandwidths& k) {
  OJson j = OJson::object();
  if (k.optimizer_fp32_states || k.optimizer_bf16_states) {
    OJson o = OJson::object();
    if (k.optimizer_fp32_states) o["fp32_states_GBps"] = gbps_value(*k.optimizer_fp32_states);
    if (k.optimizer_bf16_states) o["bf16_states_GBps"] = gbps_value(*k.optimizer_bf16_states);
    j["optimizer"] = o;
  }
  if (k.elementwise) {
    OJson by_op = OJson::object();
    for (const auto& [op, rate] : k.elementwise_by_op) by_op[op] = gbps_value(rate);
    j["elementwise"] = OJson{{"GBps", gbps_value(*k.elementwise)},
                             {"min_bytes", whole_bytes(k.elementwise_min_bytes)},
                             {"by_op_GBps", by_op}};
  }
  return j;
}

// --- reading ---

[[nodiscard]] const Json& array_field(ObjectReader& r, const std::string& key) {
  const Json& v = r.raw(key);
  if (!v.is_array()) throw InputError(r.what() + ": key '" + key + "' must be a list");
  return v;
}

// A point [a, b, ...]: `n` numbers, the first `integers` of them integers.
[[nodiscard]] std::vector<double> point_numbers(const Json& p, std::size_t n, std::size_t integers,
                                                const std::string& what) {
  if (!p.is_array() || p.size() != n) {
    throw InputError(what + ": each point must be a list of " + std::to_string(n) + " numbers");
  }
  std::vector<double> out;
  for (std::size_t i = 0; i < n; ++i) {
    const Json& v = p[i];
    if (!v.is_number() || (i < integers && !v.is_number_integer())) {
      throw InputError(what + ": point " + p.dump() + " must hold " + std::to_string(n) +
                       " numbers, the first " + std::to_string(integers) + " integers");
    }
    const double d = v.get<double>();
    if (!std::isfinite(d) || d < 0.0) {
      throw InputError(what + ": point " + p.dump() + " has a negative or non-finite number");
    }
    out.push_back(d);
  }
  return out;
}

// An attention point with its head dim: [seq, TFLOPS, head_dim], seq and head_dim integers.
[[nodiscard]] std::vector<double> point_numbers_mixed(const Json& p, const std::string& what) {
  std::vector<double> v = point_numbers(p, 3, 1, what);
  if (!p[2].is_number_integer() || !(v[2] >= 1.0)) {
    throw InputError(what + ": point " + p.dump() + " must end with a positive integer head dim");
  }
  return v;
}

FitQuality read_quality(ObjectReader& parent, const std::string& key) {
  FitQuality q;
  if (!parent.has(key)) {
    parent.ignore({key});
    return q;
  }
  ObjectReader r(parent.raw(key), parent.what() + " '" + key + "'");
  r.reject_unknown({"median_rel_err", "max_rel_err", "points"});
  q.median_rel_err = r.number("median_rel_err");
  q.max_rel_err = r.number("max_rel_err");
  q.points = static_cast<int>(r.integer("points", 0, std::numeric_limits<int>::max()));
  r.reject_unknown();
  return q;
}

[[nodiscard]] double positive(ObjectReader& r, const std::string& key) {
  const double v = r.number(key);
  if (!(v > 0.0)) throw InputError(r.what() + ": key '" + key + "' must be positive");
  return v;
}

[[nodiscard]] double non_negative(ObjectReader& r, const std::string& key) {
  const double v = r.number(key);
  if (v < 0.0) throw InputError(r.what() + ": key '" + key + "' must not be negative");
  return v;
}

hardware::CollectiveCurve read_curve(const Json& j, const std::string& what) {
  ObjectReader r(j, what);
  r.reject_unknown({"collective", "scope", "ranks", "nodes", "dtype", "alpha_us", "busbw_GBps",
                    "regimes", "points", "fit"});
  hardware::CollectiveCurve c;
  c.collective = r.enumeration<hardware::Collective>("collective");
  c.dtype = r.optional_string("dtype").value_or("");
  c.scope = r.enumeration<hardware::LinkScope>("scope");
  c.ranks = static_cast<int>(r.integer("ranks", 1, std::numeric_limits<int>::max()));
  c.nodes = static_cast<int>(r.integer("nodes", 1, std::numeric_limits<int>::max()));
  c.alpha = Seconds(non_negative(r, "alpha_us") * 1e-6);
  c.busbw = gbps(positive(r, "busbw_GBps"));
  if (r.has("regimes")) {
    for (const Json& reg : array_field(r, "regimes")) {
      ObjectReader rr(reg, what + " regime");
      rr.reject_unknown({"max_bytes", "alpha_us", "busbw_GBps"});
      hardware::Regime regime;
      regime.max_bytes = Bytes(static_cast<double>(rr.integer("max_bytes", 0)));
      regime.alpha = Seconds(non_negative(rr, "alpha_us") * 1e-6);
      regime.busbw = gbps(positive(rr, "busbw_GBps"));
      rr.reject_unknown();
      c.regimes.push_back(regime);
    }
  } else {
    r.ignore({"regimes"});
  }
  if (r.has("points")) {
    for (const Json& p : array_field(r, "points")) {
      const std::vector<double> v = point_numbers(p, 2, 1, what + " points");
      if (!(v[0] > 0.0) || !(v[1] > 0.0)) {
        throw InputError(what + ": point " + p.dump() + " needs a positive size and time");
      }
      c.points.push_back({Bytes(v[0]), Seconds(v[1] * 1e-6)});
    }
  } else {
    r.ignore({"points"});
  }
  std::sort(
      c.points.begin(), c.points.end(),
      [](const hardware::TimedSize& a, const hardware::TimedSize& b) { return a.bytes < b.bytes; });
  for (std::size_t i = 1; i < c.points.size(); ++i) {
    if (c.points[i].bytes == c.points[i - 1].bytes) {
      throw InputError(what + ": two points at " + std::to_string(whole_bytes(c.points[i].bytes)) +
                       " bytes");
    }
  }
  c.fit = read_quality(r, "fit");
  r.reject_unknown();
  if (c.ranks < c.nodes) {
    throw InputError(what + ": " + std::to_string(c.ranks) + " ranks on " +
                     std::to_string(c.nodes) + " nodes is not a possible job");
  }
  return c;
}

hardware::GemmModel read_gemm(const Json& j, hardware::GemmDtype dtype, const std::string& what) {
  ObjectReader r(j, what);
  r.reject_unknown({"peak_efficiency", "k0", "tile_m", "tile_n", "sm_count", "peak_TFLOPS", "overhead_us",
                    "read_GBps", "write_GBps", "smoothness", "a_bytes", "c_bytes", "interpolation",
                    "points", "fit", "model_fit", "leave_one_out"});
  hardware::GemmModel g;
  g.dtype = dtype;
  g.peak_efficiency = positive(r, "peak_efficiency");
  g.k0 = non_negative(r, "k0");
  g.tile_m = static_cast<int>(r.optional_integer("tile_m", 1, std::numeric_limits<int>::max()).value_or(128));
  g.tile_n = static_cast<int>(r.optional_integer("tile_n", 1, std::numeric_limits<int>::max()).value_or(128));
  g.sm_count = static_cast<int>(r.optional_integer("sm_count", 0, std::numeric_limits<int>::max()).value_or(0));
  g.peak = tflops(r.optional_number("peak_TFLOPS").value_or(0.0));
  // The roofline form: all of its keys or none.
  if (r.has("read_GBps")) {
    g.overhead = Seconds(non_negative(r, "overhead_us") * 1e-6);
    g.read_bandwidth = gbps(positive(r, "read_GBps"));
    g.write_bandwidth = gbps(positive(r, "write_GBps"));
    g.smoothness = positive(r, "smoothness");
    g.a_bytes = positive(r, "a_bytes");
    g.c_bytes = positive(r, "c_bytes");
    if (!(g.peak.value() > 0.0)) {
      throw InputError(what + ": the roofline form (key 'read_GBps') needs key 'peak_TFLOPS'");
    }
  } else {
    for (const char* key : {"overhead_us", "write_GBps", "smoothness", "a_bytes", "c_bytes"}) {
      if (r.has(key)) {
        throw InputError(what + ": key '" + key +
                         "' belongs to the roofline form, which needs "
                         "key 'read_GBps' too");
      }
    }
    r.ignore({"overhead_us", "read_GBps", "write_GBps", "smoothness", "a_bytes", "c_bytes"});
  }
  if (r.has("interpolation")) {
    const std::string where = what + " interpolation";
    ObjectReader ir(r.raw("interpolation"), where);
    ir.reject_unknown({"octaves", "prior"});
    g.interpolation_octaves = positive(ir, "octaves");
    g.interpolation_prior = non_negative(ir, "prior");
    ir.reject_unknown();
  } else {
    r.ignore({"interpolation"});
  }
  if (r.has("points")) {
    for (const Json& p : array_field(r, "points")) {
      const std::vector<double> v = point_numbers(p, 4, 3, what + " points");
      g.points.push_back({static_cast<std::int64_t>(v[0]), static_cast<std::int64_t>(v[1]),
                          static_cast<std::int64_t>(v[2]), tflops(v[3])});
    }
  } else {
    r.ignore({"points"});
  }
  g.fit = read_quality(r, "fit");
  g.model_fit = read_quality(r, "model_fit");
  g.leave_one_out = read_quality(r, "leave_one_out");
  r.reject_unknown();
  return g;
}

hardware::AttentionModel read_attention(const Json& j, const std::string& what) {
  ObjectReader r(j, what);
  r.reject_unknown({"efficiency", "seq_half", "peak_TFLOPS", "kernel", "points", "fit", "interpolated"});
  hardware::AttentionModel a;
  a.efficiency = positive(r, "efficiency");
  a.seq_half = r.has("seq_half") ? non_negative(r, "seq_half") : 0.0;
  r.ignore({"seq_half"});
  a.peak = tflops(r.optional_number("peak_TFLOPS").value_or(0.0));
  if (r.has("kernel")) {
    a.kernel = r.enumeration<hardware::AttentionKernel>("kernel");
  } else {
    r.ignore({"kernel"});
  }
  if (r.has("points")) {
    for (const Json& p : array_field(r, "points")) {
      // [seq, TFLOPS] or, with the head dim, [seq, TFLOPS, head_dim].
      const bool with_head_dim = p.is_array() && p.size() == 3;
      const std::vector<double> v = with_head_dim ? point_numbers_mixed(p, what + " points")
                                                  : point_numbers(p, 2, 1, what + " points");
      a.points.push_back({static_cast<std::int64_t>(v[0]), tflops(v[1]),
                          with_head_dim ? static_cast<std::int64_t>(v[2]) : 0});
    }
  } else {
    r.ignore({"points"});
  }
  a.fit = read_quality(r, "fit");
  a.interpolated = read_quality(r, "interpolated");
  r.reject_unknown();
  return a;
}

void read_kernels(const Json& j, hardware::KernelBandwidths& k, const std::string& what) {
  ObjectReader r(j, what);
  r.reject_unknown({"optimizer", "elementwise"});
  if (r.has("optimizer")) {
    const std::string where = what + " optimizer";
    ObjectReader o(r.raw("optimizer"), where);
    o.reject_unknown({"fp32_states_GBps", "bf16_states_GBps"});
    if (o.has("fp32_states_GBps")) k.optimizer_fp32_states = gbps(positive(o, "fp32_states_GBps"));
    if (o.has("bf16_states_GBps")) k.optimizer_bf16_states = gbps(positive(o, "bf16_states_GBps"));
    o.ignore({"fp32_states_GBps", "bf16_states_GBps"});
    o.reject_unknown();
  } else {
    r.ignore({"optimizer"});
  }
  if (r.has("elementwise")) {
    const std::string where = what + " elementwise";
    ObjectReader e(r.raw("elementwise"), where);
    e.reject_unknown({"GBps", "min_bytes", "by_op_GBps"});
    k.elementwise = gbps(positive(e, "GBps"));
    k.elementwise_min_bytes =
        Bytes(static_cast<double>(e.optional_integer("min_bytes", 0).value_or(0)));
    if (e.has("by_op_GBps")) {
      const Json& by_op = e.raw("by_op_GBps");
      if (!by_op.is_object()) throw InputError(where + ": key 'by_op_GBps' must be an object");
      for (const auto& [op, value] : by_op.items()) {
        if (!value.is_number() || !(value.get<double>() > 0.0)) {
          throw InputError(where + " by_op_GBps: key '" + op + "' must be a positive number");
        }
        k.elementwise_by_op.emplace_back(op, gbps(value.get<double>()));
      }
    } else {
      e.ignore({"by_op_GBps"});
    }
    e.reject_unknown();
  } else {
    r.ignore({"elementwise"});
  }
  r.reject_unknown();
}

void read_launch(const Json& j, hardware::LaunchOverheads& l, const std::string& what) {
  ObjectReader r(j, what);
  r.reject_unknown({"empty_kernel_us", "small_gemm_us", "small_gemm_size"});
  if (r.has("empty_kernel_us")) l.empty_kernel = Seconds(positive(r, "empty_kernel_us") * 1e-6);
  if (r.has("small_gemm_us")) {
    l.small_gemm = Seconds(positive(r, "small_gemm_us") * 1e-6);
    l.small_gemm_size = r.integer("small_gemm_size", 1);
  } else if (r.has("small_gemm_size")) {
    throw InputError(what + ": key 'small_gemm_size' without key 'small_gemm_us'");
  }
  r.ignore({"empty_kernel_us", "small_gemm_us", "small_gemm_size"});
  r.reject_unknown();
}

// The sections of a profile that hold several models, each read when present and otherwise
// marked as read (r.ignore), so that reject_unknown sees only misspelt keys.
void read_collectives_section(ObjectReader& r, hardware::HardwareProfile& p, const std::string& what) {
  if (!r.has("collectives")) {
    r.ignore({"collectives"});
    return;
  }
  int index = 0;
  for (const Json& c : array_field(r, "collectives")) {
    p.collectives.push_back(read_curve(c, what + " collectives[" + std::to_string(index++) + "]"));
  }
}

hardware::CollectiveModel read_collective_model(const Json& j, const std::string& what) {
  ObjectReader r(j, what);
  hardware::CollectiveModel m;
  m.collective = r.enumeration<hardware::Collective>("collective");
  m.scope = r.enumeration<hardware::LinkScope>("scope");
  m.dtype = r.optional_string("dtype").value_or("");
  if (m.scope == hardware::LinkScope::world) {
    throw InputError(what + ": key 'scope' must be \"intra_node\" or \"inter_node\" for a model");
  }
  m.latency_scale = positive(r, "latency_scale");
  m.network_latency_scale = positive(r, "network_latency_scale");
  m.busbw = gbps(positive(r, "busbw_GBps"));
  m.tree_bandwidth = positive(r, "tree_bandwidth");
  m.ll_bandwidth = gbps(positive(r, "ll_GBps"));
  m.fit = read_quality(r, "fit");
  r.reject_unknown();
  return m;
}

// The collective models as written, or, for a profile written before they existed, fitted to its
// curves (the same fit `calibrate fit` makes).
void read_collective_models_section(ObjectReader& r, hardware::HardwareProfile& p,
                                    const std::string& what) {
  if (!r.has("collective_models")) {
    r.ignore({"collective_models"});
    p.collective_models = calibration::fit_collective_models(p.collectives);
    return;
  }
  int index = 0;
  for (const Json& m : array_field(r, "collective_models")) {
    p.collective_models.push_back(
        read_collective_model(m, what + " collective_models[" + std::to_string(index++) + "]"));
  }
}

void read_gemm_section(ObjectReader& r, hardware::HardwareProfile& p, const std::string& what) {
  if (!r.has("gemm")) {
    r.ignore({"gemm"});
    return;
  }
  ObjectReader gemm(r.raw("gemm"), what + " gemm");
  gemm.reject_unknown({"dtypes"});
  const Json& dtypes = gemm.raw("dtypes");
  if (!dtypes.is_object()) throw InputError(what + " gemm: key 'dtypes' must be an object");
  for (const auto& [name, model] : dtypes.items()) {
    const auto dtype = try_parse<hardware::GemmDtype>(name);
    if (!dtype) {
      throw InputError(what + " gemm dtypes: unknown key '" + name +
                       "' (expected one of: " + enum_choices<hardware::GemmDtype>() + ")");
    }
    p.gemm.push_back(read_gemm(model, *dtype, what + " gemm " + name));
  }
  gemm.reject_unknown();
}

// A section of optional values under fixed keys, each read into its slot where present.
template <class T, class Read>
void read_slots(ObjectReader& r, const std::string& section, const std::string& what,
                const std::vector<std::pair<std::string_view, std::optional<T>*>>& slots,
                Read&& read) {
  if (!r.has(section)) {
    r.ignore({section});
    return;
  }
  const std::string where = what + " " + section;
  ObjectReader s(r.raw(section), where);
  std::vector<std::string_view> keys;
  for (const auto& [key, slot] : slots) keys.push_back(key);
  s.reject_unknown(keys);
  for (const auto& [key, slot] : slots) {
    if (s.has(std::string(key))) *slot = read(s, std::string(key), where);
    s.ignore({key});
  }
  s.reject_unknown();
}

void read_attention_section(ObjectReader& r, hardware::HardwareProfile& p, const std::string& what) {
  read_slots<hardware::AttentionModel>(
      r, "attention", what,
      {{"fwd", &p.attention_fwd},
       {"bwd", &p.attention_bwd},
       {"fwd_causal", &p.attention_fwd_causal},
       {"bwd_causal", &p.attention_bwd_causal}},
      [](ObjectReader& s, const std::string& key, const std::string& where) {
        return read_attention(s.raw(key), where + " " + key);
      });
}

void read_memory_section(ObjectReader& r, hardware::HardwareProfile& p, const std::string& what) {
  read_slots<BytesPerSecond>(
      r, "memory", what,
      {{"hbm_GBps", &p.memory.hbm}, {"h2d_GBps", &p.memory.h2d}, {"d2h_GBps", &p.memory.d2h}},
      [](ObjectReader& s, const std::string& key, const std::string&) {
        return gbps(positive(s, key));
      });
}

}  // namespace

std::string profile_to_json(const hardware::HardwareProfile& p) {
  OJson j{{"schema", kProfileSchema},
          {"name", p.name},
          {"gpu", p.gpu},
          {"provenance", provenance_object(p.provenance)}};
  if (!p.collectives.empty()) {
    OJson curves = OJson::array();
    for (const auto& c : p.collectives) curves.push_back(curve_json(c));
    j["collectives"] = curves;
  }
  if (!p.collective_models.empty()) {
    OJson models = OJson::array();
    for (const auto& m : p.collective_models) models.push_back(collective_model_json(m));
    j["collective_models"] = models;
  }
  if (!p.gemm.empty()) {
    OJson dtypes = OJson::object();
    for (const auto& g : p.gemm) dtypes[std::string(to_string(g.dtype))] = gemm_json(g);
    j["gemm"] = OJson{{"dtypes", dtypes}};
  }
  if (p.attention_fwd || p.attention_bwd || p.attention_fwd_causal || p.attention_bwd_causal) {
    OJson a = OJson::object();
    if (p.attention_fwd) a["fwd"] = attention_json(*p.attention_fwd);
    if (p.attention_bwd) a["bwd"] = attention_json(*p.attention_bwd);
    if (p.attention_fwd_causal) a["fwd_causal"] = attention_json(*p.attention_fwd_causal);
    if (p.attention_bwd_causal) a["bwd_causal"] = attention_json(*p.attention_bwd_causal);
    j["attention"] = a;
  }
  if (p.memory.hbm || p.memory.h2d || p.memory.d2h) {
    OJson m = OJson::object();
    if (p.memory.hbm) m["hbm_GBps"] = gbps_value(*p.memory.hbm);
    if (p.memory.h2d) m["h2d_GBps"] = gbps_value(*p.memory.h2d);
    if (p.memory.d2h) m["d2h_GBps"] = gbps_value(*p.memory.d2h);
    j["memory"] = m;
  }
  if (p.cpu_adam_params_per_s)
    j["cpu_adam_params_per_s"] = round_significant(*p.cpu_adam_params_per_s);
  const OJson kernels = kernels_json(p.kernels);
  if (!kernels.empty()) j["kernels"] = kernels;
  if (p.launch.empty_kernel || p.launch.small_gemm) {
    OJson l = OJson::object();
    if (p.launch.empty_kernel) l["empty_kernel_us"] = us(*p.launch.empty_kernel);
    if (p.launch.small_gemm) {
      l["small_gemm_us"] = us(*p.launch.small_gemm);
      l["small_gemm_size"] = p.launch.small_gemm_size;
    }
    j["launch"] = l;
  }
  return j.dump(2) + "\n";
}

hardware::HardwareProfile parse_profile_json(std::string_view text, std::string_view source) {
  const std::string what = "profile " + std::string(source);
  const Json j = parse_json(text, what);
  ObjectReader r(j, what);
  r.reject_unknown({"schema", "name", "gpu", "provenance", "collectives", "collective_models", "gemm",
                    "attention", "memory", "cpu_adam_params_per_s", "kernels", "launch"});
  if (r.string("schema") != kProfileSchema) {
    throw InputError(what + ": key 'schema' must be \"" + std::string(kProfileSchema) + "\"");
  }
  hardware::HardwareProfile p;
  p.name = r.optional_string("name").value_or("");
  p.gpu = r.optional_string("gpu").value_or("");
  if (r.has("provenance")) {
    p.provenance = provenance_from_object(r.raw("provenance"), what + " provenance");
  } else {
    r.ignore({"provenance"});
  }
  read_collectives_section(r, p, what);
  read_collective_models_section(r, p, what);
  read_gemm_section(r, p, what);
  read_attention_section(r, p, what);
  read_memory_section(r, p, what);
  if (r.has("cpu_adam_params_per_s"))
    p.cpu_adam_params_per_s = positive(r, "cpu_adam_params_per_s");
  r.ignore({"cpu_adam_params_per_s"});
  if (r.has("kernels")) read_kernels(r.raw("kernels"), p.kernels, what + " kernels");
  if (r.has("launch")) read_launch(r.raw("launch"), p.launch, what + " launch");
  r.ignore({"kernels", "launch"});
  r.reject_unknown();
  return p;
}

hardware::HardwareProfile read_profile(const std::filesystem::path& path) {
  return parse_profile_json(read_text_file(path.string(), "profile", kMaxJsonFileBytes), path.string());
}

void write_profile(const std::filesystem::path& path, const hardware::HardwareProfile& p) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw InputError("cannot write profile '" + path.string() + "': it is a folder");
  }
  write_file_atomically(path.string(), profile_to_json(p));
}

hardware::HardwareProfile read_profile_option(const std::string& path, const std::string& label) {
  try {
    return read_profile(path);
  } catch (const InputError& e) {
    throw InputError(label + " '" + path + "' is not a usable hardware profile: " + e.what());
  }
}

}  // namespace trainplan::request
