#include "trainplan/io/profile_json.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "calibrate_json.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/io/files.hpp"
#include "trainplan/io/json_util.hpp"
#include "trainplan/io/measurements.hpp"

namespace trainplan::io {
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
  return OJson{{"collective", to_string(c.collective)},
               {"scope", to_string(c.scope)},
               {"ranks", c.ranks},
               {"nodes", c.nodes},
               {"alpha_us", us(c.alpha)},
               {"busbw_GBps", gbps_value(c.busbw)},
               {"regimes", regimes},
               {"points", points},
               {"fit", quality_json(c.fit)}};
}

OJson gemm_json(const hardware::GemmModel& g) {
  OJson points = OJson::array();
  for (const hardware::GemmPoint& p : g.points) {
    points.push_back(OJson::array({p.m, p.n, p.k, tflops_value(p.rate)}));
  }
  return OJson{{"peak_efficiency", round_significant(g.peak_efficiency)},
               {"k0", round_significant(g.k0)},
               {"tile_m", g.tile_m},
               {"tile_n", g.tile_n},
               {"sm_count", g.sm_count},
               {"peak_TFLOPS", tflops_value(g.peak)},
               {"points", points},
               {"fit", quality_json(g.fit)}};
}

OJson attention_json(const hardware::AttentionModel& a) {
  OJson points = OJson::array();
  for (const hardware::SeqRate& p : a.points) {
    points.push_back(OJson::array({p.seq, tflops_value(p.rate)}));
  }
  return OJson{{"efficiency", round_significant(a.efficiency)},
               {"seq_half", round_significant(a.seq_half)},
               {"peak_TFLOPS", tflops_value(a.peak)},
               {"points", points},
               {"fit", quality_json(a.fit)}};
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

FitQuality read_quality(ObjectReader& parent, const std::string& key) {
  FitQuality q;
  if (!parent.has(key)) {
    parent.ignore({key});
    return q;
  }
  calibrate_json::reject_unknown_keys(parent.raw(key), {"median_rel_err", "max_rel_err", "points"},
                                      parent.what() + " '" + key + "'");
  ObjectReader r(parent.raw(key), parent.what() + " '" + key + "'");
  q.median_rel_err = r.number("median_rel_err");
  q.max_rel_err = r.number("max_rel_err");
  q.points = static_cast<int>(r.integer("points", 0));
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
  calibrate_json::reject_unknown_keys(j,
                                      {"collective", "scope", "ranks", "nodes", "alpha_us",
                                       "busbw_GBps", "regimes", "points", "fit"},
                                      what);
  ObjectReader r(j, what);
  hardware::CollectiveCurve c;
  c.collective = calibrate_json::enum_field<hardware::Collective>(r, "collective");
  c.scope = calibrate_json::enum_field<hardware::LinkScope>(r, "scope");
  c.ranks = static_cast<int>(r.integer("ranks", 1));
  c.nodes = static_cast<int>(r.integer("nodes", 1));
  c.alpha = Seconds(non_negative(r, "alpha_us") * 1e-6);
  c.busbw = gbps(positive(r, "busbw_GBps"));
  if (r.has("regimes")) {
    for (const Json& reg : array_field(r, "regimes")) {
      calibrate_json::reject_unknown_keys(reg, {"max_bytes", "alpha_us", "busbw_GBps"},
                                          what + " regime");
      ObjectReader rr(reg, what + " regime");
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
  calibrate_json::reject_unknown_keys(
      j, {"peak_efficiency", "k0", "tile_m", "tile_n", "sm_count", "peak_TFLOPS", "points", "fit"},
      what);
  ObjectReader r(j, what);
  hardware::GemmModel g;
  g.dtype = dtype;
  g.peak_efficiency = positive(r, "peak_efficiency");
  g.k0 = non_negative(r, "k0");
  g.tile_m = static_cast<int>(r.optional_integer("tile_m", 1).value_or(128));
  g.tile_n = static_cast<int>(r.optional_integer("tile_n", 1).value_or(128));
  g.sm_count = static_cast<int>(r.optional_integer("sm_count", 0).value_or(0));
  g.peak = tflops(r.optional_number("peak_TFLOPS").value_or(0.0));
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
  r.reject_unknown();
  return g;
}

hardware::AttentionModel read_attention(const Json& j, const std::string& what) {
  calibrate_json::reject_unknown_keys(j, {"efficiency", "seq_half", "peak_TFLOPS", "points", "fit"},
                                      what);
  ObjectReader r(j, what);
  hardware::AttentionModel a;
  a.efficiency = positive(r, "efficiency");
  a.seq_half = r.has("seq_half") ? non_negative(r, "seq_half") : 0.0;
  r.ignore({"seq_half"});
  a.peak = tflops(r.optional_number("peak_TFLOPS").value_or(0.0));
  if (r.has("points")) {
    for (const Json& p : array_field(r, "points")) {
      const std::vector<double> v = point_numbers(p, 2, 1, what + " points");
      a.points.push_back({static_cast<std::int64_t>(v[0]), tflops(v[1])});
    }
  } else {
    r.ignore({"points"});
  }
  a.fit = read_quality(r, "fit");
  r.reject_unknown();
  return a;
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
  if (!p.gemm.empty()) {
    OJson dtypes = OJson::object();
    for (const auto& g : p.gemm) dtypes[std::string(to_string(g.dtype))] = gemm_json(g);
    j["gemm"] = OJson{{"dtypes", dtypes}};
  }
  if (p.attention_fwd || p.attention_bwd) {
    OJson a = OJson::object();
    if (p.attention_fwd) a["fwd"] = attention_json(*p.attention_fwd);
    if (p.attention_bwd) a["bwd"] = attention_json(*p.attention_bwd);
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
  return j.dump(2) + "\n";
}

hardware::HardwareProfile parse_profile_json(std::string_view text, std::string_view source) {
  const std::string what = "profile " + std::string(source);
  const Json j = parse_json(text, what);
  calibrate_json::reject_unknown_keys(j,
                                      {"schema", "name", "gpu", "provenance", "collectives", "gemm",
                                       "attention", "memory", "cpu_adam_params_per_s"},
                                      what);
  ObjectReader r(j, what);
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
  if (r.has("collectives")) {
    int index = 0;
    for (const Json& c : array_field(r, "collectives")) {
      p.collectives.push_back(
          read_curve(c, what + " collectives[" + std::to_string(index++) + "]"));
    }
  } else {
    r.ignore({"collectives"});
  }
  if (r.has("gemm")) {
    calibrate_json::reject_unknown_keys(r.raw("gemm"), {"dtypes"}, what + " gemm");
    ObjectReader gemm(r.raw("gemm"), what + " gemm");
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
  } else {
    r.ignore({"gemm"});
  }
  if (r.has("attention")) {
    calibrate_json::reject_unknown_keys(r.raw("attention"), {"fwd", "bwd"}, what + " attention");
    ObjectReader att(r.raw("attention"), what + " attention");
    if (att.has("fwd")) p.attention_fwd = read_attention(att.raw("fwd"), what + " attention fwd");
    if (att.has("bwd")) p.attention_bwd = read_attention(att.raw("bwd"), what + " attention bwd");
    att.ignore({"fwd", "bwd"});
    att.reject_unknown();
  } else {
    r.ignore({"attention"});
  }
  if (r.has("memory")) {
    calibrate_json::reject_unknown_keys(r.raw("memory"), {"hbm_GBps", "h2d_GBps", "d2h_GBps"},
                                        what + " memory");
    ObjectReader mem(r.raw("memory"), what + " memory");
    for (const auto& [key, slot] :
         {std::pair{"hbm_GBps", &p.memory.hbm}, std::pair{"h2d_GBps", &p.memory.h2d},
          std::pair{"d2h_GBps", &p.memory.d2h}}) {
      if (mem.has(key)) *slot = gbps(positive(mem, key));
      mem.ignore({key});
    }
    mem.reject_unknown();
  } else {
    r.ignore({"memory"});
  }
  if (r.has("cpu_adam_params_per_s"))
    p.cpu_adam_params_per_s = positive(r, "cpu_adam_params_per_s");
  r.ignore({"cpu_adam_params_per_s"});
  r.reject_unknown();
  return p;
}

hardware::HardwareProfile read_profile(const std::filesystem::path& path) {
  return parse_profile_json(read_text_file(path.string(), "profile"), path.string());
}

void write_profile(const std::filesystem::path& path, const hardware::HardwareProfile& p) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw InputError("cannot write profile '" + path.string() + "': it is a folder");
  }
  write_file_atomically(path.string(), profile_to_json(p));
}

}  // namespace trainplan::io
