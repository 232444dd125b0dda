#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <span>
#include <string>
#include <tuple>

#include "log_text.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/request/files.hpp"
#include "trainplan/request/json_util.hpp"
#include "trainplan/request/measurements.hpp"

namespace trainplan::request {
namespace {

using calibration::AttentionMeasurement;
using calibration::BandwidthMeasurement;
using calibration::CollectiveMeasurement;
using calibration::CpuAdamMeasurement;
using calibration::ElementwiseMeasurement;
using calibration::GemmMeasurement;
using calibration::LaunchMeasurement;
using calibration::OptimizerMeasurement;
using calibration::SkippedPoint;
using OJson = nlohmann::ordered_json;

constexpr std::string_view kKinds =
    "collective, gemm, attention, memory_bandwidth, cpu_adam, optimizer, elementwise, launch, "
    "skipped";

// The keys each line kind may carry (calibrate/src/measurement.cpp writes them).
constexpr std::array<std::string_view, 12> kCollectiveKeys{
    "kind",  "collective", "scope",      "ranks",      "nodes",    "dtype",
    "bytes", "time_us",    "algbw_GBps", "busbw_GBps", "in_place", "valid"};
constexpr std::array<std::string_view, 8> kGemmKeys{"kind", "dtype",   "m",      "n",
                                                    "k",    "time_us", "tflops", "label"};
constexpr std::array<std::string_view, 12> kAttentionKeys{"kind",  "pass",   "impl",     "dtype",
                                                          "batch", "heads",  "kv_heads", "head_dim",
                                                          "seq",   "causal", "time_us",  "tflops"};
constexpr std::array<std::string_view, 5> kBandwidthKeys{"kind", "direction", "bytes", "time_us",
                                                         "GBps"};
constexpr std::array<std::string_view, 4> kCpuAdamKeys{"kind", "params", "time_us", "params_per_s"};
constexpr std::array<std::string_view, 11> kOptimizerKeys{
    "kind",    "optimizer", "param_dtype", "grad_dtype", "state_dtype", "params",
    "tensors", "bytes",     "time_us",     "GBps",       "params_per_s"};
constexpr std::array<std::string_view, 9> kElementwiseKeys{
    "kind", "op", "in_dtype", "out_dtype", "elements", "row", "bytes", "time_us", "GBps"};
constexpr std::array<std::string_view, 8> kLaunchKeys{"kind", "op", "dtype",    "m",
                                                      "n",    "k",  "launches", "time_us"};
constexpr std::array<std::string_view, 4> kSkippedKeys{"kind", "point", "reason", "fallback"};

// The allowed keys of a measured kind, or an empty span for a kind that is not one.
[[nodiscard]] std::span<const std::string_view> keys_of(std::string_view kind) {
  if (kind == "collective") return kCollectiveKeys;
  if (kind == "gemm") return kGemmKeys;
  if (kind == "attention") return kAttentionKeys;
  if (kind == "memory_bandwidth") return kBandwidthKeys;
  if (kind == "cpu_adam") return kCpuAdamKeys;
  if (kind == "optimizer") return kOptimizerKeys;
  if (kind == "elementwise") return kElementwiseKeys;
  if (kind == "launch") return kLaunchKeys;
  return {};
}

[[nodiscard]] double us(Seconds t) { return round_significant(t.value() * 1e6); }
[[nodiscard]] Seconds from_us(double v) { return Seconds(v * 1e-6); }
[[nodiscard]] double gbps_value(BytesPerSecond r) { return round_significant(to_gbps(r)); }
[[nodiscard]] double tflops_value(FlopsPerSecond r) { return round_significant(to_tflops(r)); }

OJson collective_line(const CollectiveMeasurement& m) {
  return OJson{{"kind", "collective"},
               {"collective", to_string(m.collective)},
               {"scope", to_string(m.scope)},
               {"ranks", m.ranks},
               {"nodes", m.nodes},
               {"dtype", m.dtype},
               {"bytes", static_cast<std::int64_t>(std::llround(m.bytes.value()))},
               {"time_us", us(m.time)},
               {"algbw_GBps", gbps_value(m.algbw)},
               {"busbw_GBps", gbps_value(m.busbw)},
               {"in_place", m.in_place},
               {"valid", m.valid}};
}

OJson gemm_line(const GemmMeasurement& g) {
  OJson j{
      {"kind", "gemm"},        {"dtype", to_string(g.dtype)},   {"m", g.m}, {"n", g.n}, {"k", g.k},
      {"time_us", us(g.time)}, {"tflops", tflops_value(g.rate)}};
  if (!g.label.empty()) j["label"] = g.label;
  return j;
}

OJson attention_line(const AttentionMeasurement& a) {
  return OJson{
      {"kind", "attention"},    {"pass", to_string(a.pass)}, {"impl", to_string(a.impl)},
      {"dtype", a.dtype},       {"batch", a.batch},          {"heads", a.heads},
      {"kv_heads", a.kv_heads}, {"head_dim", a.head_dim},    {"seq", a.seq},
      {"causal", a.causal},     {"time_us", us(a.time)},     {"tflops", tflops_value(a.rate)}};
}

OJson bandwidth_line(const BandwidthMeasurement& b) {
  return OJson{{"kind", "memory_bandwidth"},
               {"direction", to_string(b.direction)},
               {"bytes", static_cast<std::int64_t>(std::llround(b.bytes.value()))},
               {"time_us", us(b.time)},
               {"GBps", gbps_value(b.rate)}};
}

OJson cpu_adam_line(const CpuAdamMeasurement& c) {
  return OJson{{"kind", "cpu_adam"},
               {"params", c.params},
               {"time_us", us(c.time)},
               {"params_per_s", round_significant(c.params_per_s)}};
}

[[nodiscard]] Seconds positive_time(ObjectReader& r, bool allow_zero) {
  const double t = r.number("time_us");
  if (t < 0.0 || (!allow_zero && t == 0.0)) {
    throw InputError(r.what() + ": key 'time_us' must be positive (got " + fmt::format("{}", t) +
                     ")");
  }
  return from_us(t);
}

CollectiveMeasurement read_collective(ObjectReader& r) {
  CollectiveMeasurement m;
  m.collective = r.enumeration<hardware::Collective>("collective");
  m.scope = r.enumeration<hardware::LinkScope>("scope");
  m.ranks = static_cast<int>(r.integer("ranks", 1, std::numeric_limits<int>::max()));
  m.nodes = static_cast<int>(r.integer("nodes", 1, std::numeric_limits<int>::max()));
  m.dtype = r.optional_string("dtype").value_or("");
  m.bytes = Bytes(static_cast<double>(r.integer("bytes", 0)));
  m.in_place = r.optional_boolean("in_place").value_or(false);
  m.valid = r.optional_boolean("valid").value_or(true);
  m.time = positive_time(r, !m.valid);
  const double factor = hardware::bus_factor(m.collective, m.ranks);
  const BytesPerSecond derived = m.time.value() > 0.0 ? m.bytes / m.time : BytesPerSecond(0.0);
  m.algbw = r.has("algbw_GBps") ? gbps(r.number("algbw_GBps")) : derived;
  m.busbw = r.has("busbw_GBps") ? gbps(r.number("busbw_GBps")) : m.algbw * factor;
  r.ignore({"algbw_GBps", "busbw_GBps"});
  if (m.ranks < m.nodes) {
    throw InputError(r.what() + ": " + std::to_string(m.ranks) + " ranks on " +
                     std::to_string(m.nodes) + " nodes is not a possible job");
  }
  if (m.scope == hardware::LinkScope::intra_node && m.nodes != 1) {
    throw InputError(r.what() + ": scope 'intra_node' with " + std::to_string(m.nodes) + " nodes");
  }
  return m;
}

GemmMeasurement read_gemm(ObjectReader& r) {
  GemmMeasurement g;
  g.dtype = r.enumeration<hardware::GemmDtype>("dtype");
  g.m = r.integer("m", 1);
  g.n = r.integer("n", 1);
  g.k = r.integer("k", 1);
  g.time = positive_time(r, false);
  const Flops work(2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) *
                   static_cast<double>(g.k));
  g.rate = r.has("tflops") ? tflops(r.number("tflops")) : work / g.time;
  r.ignore({"tflops"});
  g.label = r.optional_string("label").value_or("");
  return g;
}

// FLOPs of one attention call: fwd 4 b h s^2 d, half of it when causal, bwd 2.5x fwd (the
// FlashAttention benchmark convention; Dao 2023, arXiv:2307.08691, benchmarks/).
[[nodiscard]] Flops attention_flops(const AttentionMeasurement& a) {
  const double s = static_cast<double>(a.seq);
  double f = 4.0 * static_cast<double>(a.batch) * static_cast<double>(a.heads) * s * s *
             static_cast<double>(a.head_dim);
  if (a.causal) f *= 0.5;
  if (a.pass == calibration::AttentionPass::bwd) f *= 2.5;
  return Flops(f);
}

// The parameters of an attention point, without its timing (a skipped point has none).
AttentionMeasurement read_attention_shape(ObjectReader& r) {
  AttentionMeasurement a;
  a.pass = r.enumeration<calibration::AttentionPass>("pass");
  a.impl = r.enumeration<calibration::AttentionImpl>("impl");
  a.dtype = r.string("dtype");
  a.batch = r.integer("batch", 1);
  a.heads = r.integer("heads", 1);
  a.kv_heads = r.optional_integer("kv_heads", 1).value_or(a.heads);
  a.head_dim = r.integer("head_dim", 1);
  a.seq = r.integer("seq", 1);
  a.causal = r.boolean("causal");
  if (a.heads % a.kv_heads != 0) {
    throw InputError(r.what() + ": " + std::to_string(a.heads) + " heads do not share " +
                     std::to_string(a.kv_heads) + " KV heads evenly");
  }
  return a;
}

AttentionMeasurement read_attention(ObjectReader& r) {
  AttentionMeasurement a = read_attention_shape(r);
  a.time = positive_time(r, false);
  a.rate = r.has("tflops") ? tflops(r.number("tflops")) : attention_flops(a) / a.time;
  r.ignore({"tflops"});
  return a;
}

BandwidthMeasurement read_bandwidth(ObjectReader& r) {
  BandwidthMeasurement b;
  b.direction = r.enumeration<calibration::CopyDirection>("direction");
  b.bytes = Bytes(static_cast<double>(r.integer("bytes", 1)));
  b.time = positive_time(r, false);
  b.rate = r.has("GBps") ? gbps(r.number("GBps")) : b.bytes / b.time;
  r.ignore({"GBps"});
  return b;
}

CpuAdamMeasurement read_cpu_adam(ObjectReader& r) {
  CpuAdamMeasurement c;
  c.params = r.integer("params", 1);
  c.time = positive_time(r, false);
  c.params_per_s = r.has("params_per_s") ? r.number("params_per_s")
                                         : static_cast<double>(c.params) / c.time.value();
  r.ignore({"params_per_s"});
  return c;
}

OJson optimizer_line(const OptimizerMeasurement& o) {
  return OJson{{"kind", "optimizer"},
               {"optimizer", to_string(o.optimizer)},
               {"param_dtype", to_string(o.param_dtype)},
               {"grad_dtype", to_string(o.grad_dtype)},
               {"state_dtype", to_string(o.state_dtype)},
               {"params", o.params},
               {"tensors", o.tensors},
               {"bytes", static_cast<std::int64_t>(std::llround(o.bytes.value()))},
               {"time_us", us(o.time)},
               {"GBps", gbps_value(o.rate)},
               {"params_per_s", round_significant(o.params_per_s)}};
}

OJson elementwise_line(const ElementwiseMeasurement& e) {
  OJson j{{"kind", "elementwise"},
          {"op", to_string(e.op)},
          {"in_dtype", to_string(e.in_dtype)},
          {"out_dtype", to_string(e.out_dtype)},
          {"elements", e.elements}};
  if (e.row > 0) j["row"] = e.row;
  j["bytes"] = static_cast<std::int64_t>(std::llround(e.bytes.value()));
  j["time_us"] = us(e.time);
  j["GBps"] = gbps_value(e.rate);
  return j;
}

OJson launch_line(const LaunchMeasurement& l) {
  OJson j{{"kind", "launch"}, {"op", to_string(l.op)}};
  if (l.op == calibration::LaunchOp::gemm) {
    j["dtype"] = to_string(l.dtype.value_or(hardware::GemmDtype::bf16));
    j["m"] = l.m;
    j["n"] = l.n;
    j["k"] = l.k;
  }
  j["launches"] = l.launches;
  j["time_us"] = us(l.time);
  return j;
}

OJson skipped_line(const SkippedPoint& s) {
  OJson j{{"kind", "skipped"}, {"point", OJson::parse(s.point)}, {"reason", s.reason}};
  if (!s.fallback.empty()) j["fallback"] = OJson::parse(s.fallback);
  return j;
}

[[nodiscard]] Bytes positive_bytes(ObjectReader& r) {
  return Bytes(static_cast<double>(r.integer("bytes", 1)));
}

[[nodiscard]] BytesPerSecond rate_of(ObjectReader& r, Bytes bytes, Seconds time) {
  const BytesPerSecond rate = r.has("GBps") ? gbps(r.number("GBps")) : bytes / time;
  r.ignore({"GBps"});
  if (!(rate.value() > 0.0)) throw InputError(r.what() + ": key 'GBps' must be positive");
  return rate;
}

OptimizerMeasurement read_optimizer(ObjectReader& r) {
  OptimizerMeasurement o;
  o.optimizer = r.enumeration<calibration::StepOptimizer>("optimizer");
  o.param_dtype = r.enumeration<calibration::ElementDtype>("param_dtype");
  o.grad_dtype = r.enumeration<calibration::ElementDtype>("grad_dtype");
  o.state_dtype = r.enumeration<calibration::ElementDtype>("state_dtype");
  o.params = r.integer("params", 1);
  o.tensors = r.integer("tensors", 1);
  if (o.tensors > o.params) {
    throw InputError(r.what() + ": " + std::to_string(o.tensors) + " tensors cannot hold " +
                     std::to_string(o.params) + " parameters");
  }
  o.bytes = positive_bytes(r);
  o.time = positive_time(r, false);
  o.rate = rate_of(r, o.bytes, o.time);
  o.params_per_s = r.has("params_per_s") ? r.number("params_per_s")
                                         : static_cast<double>(o.params) / o.time.value();
  r.ignore({"params_per_s"});
  if (!(o.params_per_s > 0.0)) {
    throw InputError(r.what() + ": key 'params_per_s' must be positive");
  }
  return o;
}

ElementwiseMeasurement read_elementwise(ObjectReader& r) {
  ElementwiseMeasurement e;
  e.op = r.enumeration<calibration::ElementwiseOp>("op");
  e.in_dtype = r.enumeration<calibration::ElementDtype>("in_dtype");
  e.out_dtype = r.enumeration<calibration::ElementDtype>("out_dtype");
  e.elements = r.integer("elements", 1);
  // Only RMSNorm normalises over rows; a row on another op is a line of some other tool.
  if (e.op == calibration::ElementwiseOp::rmsnorm) {
    e.row = r.integer("row", 1);
    if (e.elements % e.row != 0) {
      throw InputError(r.what() + ": " + std::to_string(e.elements) +
                       " elements are not whole rows of " + std::to_string(e.row));
    }
  } else if (r.has("row")) {
    throw InputError(r.what() + ": key 'row' belongs to op 'rmsnorm' only (op is '" +
                     std::string(to_string(e.op)) + "')");
  } else {
    r.ignore({"row"});
  }
  e.bytes = positive_bytes(r);
  e.time = positive_time(r, false);
  e.rate = rate_of(r, e.bytes, e.time);
  return e;
}

LaunchMeasurement read_launch(ObjectReader& r) {
  LaunchMeasurement l;
  l.op = r.enumeration<calibration::LaunchOp>("op");
  switch (l.op) {
    case calibration::LaunchOp::gemm:
      l.dtype = r.enumeration<hardware::GemmDtype>("dtype");
      l.m = r.integer("m", 1);
      l.n = r.integer("n", 1);
      l.k = r.integer("k", 1);
      break;
    case calibration::LaunchOp::empty_kernel:
      for (const char* key : {"dtype", "m", "n", "k"}) {
        if (r.has(key)) {
          throw InputError(r.what() + ": key '" + key +
                           "' belongs to op 'gemm' only (op is 'empty_kernel')");
        }
      }
      r.ignore({"dtype", "m", "n", "k"});
      break;
  }
  l.launches = r.integer("launches", 1);
  l.time = positive_time(r, false);
  return l;
}

// The point of a skipped line (or its fallback): an object of a measured kind with that kind's
// keys. Returns its kind; an attention point is read into `attention`.
std::string check_point(const nlohmann::json& point, const std::string& what,
                        std::optional<AttentionMeasurement>* attention) {
  if (!point.is_object()) throw InputError(what + ": expected a JSON object");
  if (!point.contains("kind") || !point.at("kind").is_string()) {
    throw InputError(what + ": key 'kind' is missing or not a string");
  }
  const std::string kind = point.at("kind").get<std::string>();
  const std::span<const std::string_view> keys = keys_of(kind);
  if (keys.empty()) {
    throw InputError(what + ": unknown measurement kind '" + kind +
                     "' (expected a measured kind: collective, gemm, attention, memory_bandwidth, "
                     "cpu_adam, optimizer, elementwise, launch)");
  }
  ObjectReader(point, what).reject_unknown(keys);
  if (kind == "attention") {
    ObjectReader r(point, what);
    *attention = read_attention_shape(r);
  }
  return kind;
}

SkippedPoint read_skipped(ObjectReader& r) {
  SkippedPoint s;
  const nlohmann::json& point = r.raw("point");
  s.kind = check_point(point, r.what() + " key 'point'", &s.attention);
  s.point = point.dump();
  s.reason = r.string("reason");
  if (s.reason.empty()) throw InputError(r.what() + ": key 'reason' must say why");
  if (r.has("fallback")) {
    const nlohmann::json& fallback = r.raw("fallback");
    s.fallback_kind = check_point(fallback, r.what() + " key 'fallback'", &s.fallback_attention);
    s.fallback = fallback.dump();
  } else {
    r.ignore({"fallback"});
  }
  return s;
}

OJson nullable(const std::optional<std::string>& s) { return s ? OJson(*s) : OJson(nullptr); }
OJson nullable(const std::optional<int>& v) { return v ? OJson(*v) : OJson(nullptr); }

std::vector<std::string> string_list(ObjectReader& r, const std::string& key) {
  std::vector<std::string> out;
  if (!r.has(key)) {
    r.ignore({key});
    return out;
  }
  const nlohmann::json& v = r.raw(key);
  if (!v.is_array()) throw InputError(r.what() + ": key '" + key + "' must be a list of strings");
  for (const auto& e : v) {
    if (!e.is_string())
      throw InputError(r.what() + ": key '" + key + "' must be a list of strings");
    out.push_back(e.get<std::string>());
  }
  return out;
}

std::optional<int> optional_count(ObjectReader& r, const std::string& key) {
  const std::optional<std::int64_t> v = r.optional_integer(key, 1);
  if (!v) return std::nullopt;
  return static_cast<int>(*v);
}

}  // namespace

double round_significant(double x) {
  if (x == 0.0 || !std::isfinite(x)) return x;
  return std::stod(fmt::format("{:.12g}", x));
}

std::string measurements_to_jsonl(const calibration::Measurements& m) {
  std::string out;
  auto line = [&](const OJson& j) { out += j.dump() + "\n"; };
  for (const auto& x : m.collectives) line(collective_line(x));
  for (const auto& x : m.gemms) line(gemm_line(x));
  for (const auto& x : m.attention) line(attention_line(x));
  for (const auto& x : m.bandwidth) line(bandwidth_line(x));
  for (const auto& x : m.cpu_adam) line(cpu_adam_line(x));
  for (const auto& x : m.optimizer) line(optimizer_line(x));
  for (const auto& x : m.elementwise) line(elementwise_line(x));
  for (const auto& x : m.launch) line(launch_line(x));
  for (const auto& x : m.skipped) line(skipped_line(x));
  return out;
}

calibration::Measurements parse_measurements_jsonl(std::string_view text, std::string_view source) {
  calibration::Measurements m;
  int number = 0;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = log_text::trim(text.substr(start, end - start));
    start = end + 1;
    ++number;
    if (line.empty() || line == "\r") continue;
    const std::string what = std::string(source) + " line " + std::to_string(number);
    const nlohmann::json j = parse_json(line, what);
    ObjectReader r(j, what);
    const std::string kind = r.string("kind");
    if (kind == "skipped") {
      r.reject_unknown(kSkippedKeys);
      m.skipped.push_back(read_skipped(r));
      r.reject_unknown();
      continue;
    }
    const std::span<const std::string_view> keys = keys_of(kind);
    if (keys.empty()) {
      throw InputError(what + ": unknown measurement kind '" + kind +
                       "' (expected one of: " + std::string(kKinds) + ")");
    }
    r.reject_unknown(keys);
    if (kind == "collective") {
      m.collectives.push_back(read_collective(r));
    } else if (kind == "gemm") {
      m.gemms.push_back(read_gemm(r));
    } else if (kind == "attention") {
      m.attention.push_back(read_attention(r));
    } else if (kind == "memory_bandwidth") {
      m.bandwidth.push_back(read_bandwidth(r));
    } else if (kind == "cpu_adam") {
      m.cpu_adam.push_back(read_cpu_adam(r));
    } else if (kind == "optimizer") {
      m.optimizer.push_back(read_optimizer(r));
    } else if (kind == "elementwise") {
      m.elementwise.push_back(read_elementwise(r));
    } else {
      m.launch.push_back(read_launch(r));
    }
    r.reject_unknown();
  }
  return m;
}

nlohmann::ordered_json provenance_object(const hardware::RunProvenance& p) {
  return OJson{{"tool", nullable(p.tool)},           {"gpu", nullable(p.gpu)},
               {"gpu_count", nullable(p.gpu_count)}, {"hosts", p.hosts},
               {"nodes", nullable(p.nodes)},         {"ranks", nullable(p.ranks)},
               {"driver", nullable(p.driver)},       {"cuda", nullable(p.cuda)},
               {"nccl", nullable(p.nccl)},           {"cublas", nullable(p.cublas)},
               {"cudnn", nullable(p.cudnn)},         {"command", nullable(p.command)},
               {"date", nullable(p.date)},           {"sources", p.sources}};
}

hardware::RunProvenance provenance_from_object(const nlohmann::json& j, const std::string& what) {
  ObjectReader r(j, what);
  r.reject_unknown({"schema", "tool", "gpu", "gpu_count", "hosts", "nodes", "ranks", "driver", "cuda",
                    "nccl", "cublas", "cudnn", "command", "date", "sources"});
  hardware::RunProvenance p;
  p.tool = r.optional_string("tool");
  p.gpu = r.optional_string("gpu");
  p.gpu_count = optional_count(r, "gpu_count");
  p.hosts = string_list(r, "hosts");
  p.nodes = optional_count(r, "nodes");
  p.ranks = optional_count(r, "ranks");
  p.driver = r.optional_string("driver");
  p.cuda = r.optional_string("cuda");
  p.nccl = r.optional_string("nccl");
  p.cublas = r.optional_string("cublas");
  p.cudnn = r.optional_string("cudnn");
  p.command = r.optional_string("command");
  p.date = r.optional_string("date");
  p.sources = string_list(r, "sources");
  r.ignore({"schema"});
  r.reject_unknown();
  return p;
}

std::string provenance_to_json(const hardware::RunProvenance& p) {
  const OJson fields = provenance_object(p);
  OJson j = OJson::object();
  j["schema"] = kRunSchema;
  for (auto it = fields.begin(); it != fields.end(); ++it) j[it.key()] = it.value();
  return j.dump(2) + "\n";
}

hardware::RunProvenance parse_provenance_json(std::string_view text, std::string_view source) {
  const std::string what(source);
  const nlohmann::json j = parse_json(text, what);
  if (!j.is_object()) throw InputError(what + ": expected a JSON object");
  if (!j.contains("schema") || !j.at("schema").is_string() || j.at("schema") != kRunSchema) {
    throw InputError(what + ": key 'schema' must be \"" + std::string(kRunSchema) + "\"");
  }
  return provenance_from_object(j, what);
}

calibration::Run read_run_dir(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  const std::string name = dir.string();
  std::error_code ec;
  if (!fs::exists(dir, ec)) throw InputError("run directory '" + name + "' does not exist");
  if (!fs::is_directory(dir, ec)) throw InputError("run directory '" + name + "' is not a folder");
  calibration::Run run;
  run.name = name;
  const fs::path provenance = dir / kProvenanceFile;
  if (!fs::exists(provenance, ec)) {
    throw InputError("run directory '" + name + "' has no " + std::string(kProvenanceFile));
  }
  run.provenance =
      parse_provenance_json(read_text_file(provenance.string(), "provenance"), provenance.string());
  const fs::path measurements = dir / kMeasurementsFile;
  if (!fs::exists(measurements, ec)) {
    throw InputError("run directory '" + name + "' has no " + std::string(kMeasurementsFile));
  }
  // An empty measurements file is a run that measured nothing; fitting says so.
  if (!fs::is_regular_file(measurements, ec))
    throw InputError("cannot read measurements '" + measurements.string() +
                     "': not a regular file (a pipe, device or socket)");
  if (fs::file_size(measurements, ec) > 0 && !ec)
    run.measurements = parse_measurements_jsonl(read_text_file(measurements.string(), "measurements"),
                                                measurements.string());
  return run;
}

void write_run_dir(const std::filesystem::path& dir, const calibration::Run& run) {
  namespace fs = std::filesystem;
  if (dir.empty()) throw InputError("cannot write a run directory: the output path is empty");
  const std::string measurements = measurements_to_jsonl(run.measurements);
  const std::string provenance = provenance_to_json(run.provenance);
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    if (!fs::is_directory(dir, ec)) {
      throw InputError("cannot write run directory '" + dir.string() + "': it is not a folder");
    }
    write_file_atomically((dir / kMeasurementsFile).string(), measurements);
    write_file_atomically((dir / kProvenanceFile).string(), provenance);
    return;
  }
  // A new directory: fill a sibling, then rename it into place.
  if (!dir.parent_path().empty()) {
    fs::create_directories(dir.parent_path(), ec);
    if (ec) {
      throw InputError("cannot create run directory '" + dir.string() + "': " + ec.message());
    }
  }
  fs::path staging = dir;
  staging += ".partial";
  fs::remove_all(staging, ec);
  fs::create_directory(staging, ec);
  if (ec) throw InputError("cannot create run directory '" + dir.string() + "': " + ec.message());
  try {
    write_file_atomically((staging / kMeasurementsFile).string(), measurements);
    write_file_atomically((staging / kProvenanceFile).string(), provenance);
    fs::rename(staging, dir, ec);
    if (ec) throw InputError("cannot create run directory '" + dir.string() + "': " + ec.message());
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(staging, ignored);
    throw;
  }
}

std::string imported_logs_json(std::span<const CollectiveLog> logs) {
  OJson curves = OJson::array();
  for (const CollectiveLog& log : logs) {
    for (const LogBlock& block : log.blocks) {
      // One entry per (dtype, in-place) in the order the log shows them.
      std::vector<std::pair<std::string, bool>> keys;
      std::map<std::pair<std::string, bool>, OJson> points;
      for (const LogRow& row : block.rows) {
        for (const bool in_place : {false, true}) {
          const std::optional<TimingColumns>& t = in_place ? row.in_place : row.out_of_place;
          if (!t) continue;
          const auto key = std::pair{row.dtype, in_place};
          if (!points.contains(key)) {
            keys.push_back(key);
            points[key] = OJson::array();
          }
          points[key].push_back(OJson{{"bytes", row.bytes},
                                      {"time_us", round_significant(t->time_us)},
                                      {"algbw_GBps", t->algbw_GBps},
                                      {"busbw_GBps", t->busbw_GBps},
                                      {"valid", t->valid()}});
        }
      }
      for (const auto& key : keys) {
        curves.push_back(
            OJson{{"source", log.source},
                  {"tool", to_string(log.tool)},
                  {"collective", to_string(block.collective)},
                  {"scope", to_string(block.nodes == 1 ? hardware::LinkScope::intra_node
                                                       : hardware::LinkScope::inter_node)},
                  {"ranks", block.ranks},
                  {"nodes", block.nodes},
                  {"nodes_assumed", block.nodes_assumed},
                  {"gpu", block.gpu.empty() ? OJson(nullptr) : OJson(block.gpu)},
                  {"dtype", key.first},
                  {"in_place", key.second},
                  {"points", points[key]}});
      }
    }
  }
  return OJson{{"schema", kMeasurementsSchema}, {"collectives", curves}}.dump(2) + "\n";
}

}  // namespace trainplan::request
