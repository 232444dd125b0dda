#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <tuple>

#include "calibrate_json.hpp"
#include "log_text.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/io/files.hpp"
#include "trainplan/io/json_util.hpp"
#include "trainplan/io/measurements.hpp"

namespace trainplan::io {
namespace {

using calibrate::AttentionMeasurement;
using calibrate::BandwidthMeasurement;
using calibrate::CollectiveMeasurement;
using calibrate::CpuAdamMeasurement;
using calibrate::GemmMeasurement;
using OJson = nlohmann::ordered_json;

constexpr std::string_view kKinds = "collective, gemm, attention, memory_bandwidth, cpu_adam";

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
  m.collective = calibrate_json::enum_field<hardware::Collective>(r, "collective");
  m.scope = calibrate_json::enum_field<hardware::LinkScope>(r, "scope");
  m.ranks = static_cast<int>(r.integer("ranks", 1));
  m.nodes = static_cast<int>(r.integer("nodes", 1));
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
  g.dtype = calibrate_json::enum_field<hardware::GemmDtype>(r, "dtype");
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
  if (a.pass == calibrate::AttentionPass::bwd) f *= 2.5;
  return Flops(f);
}

AttentionMeasurement read_attention(ObjectReader& r) {
  AttentionMeasurement a;
  a.pass = calibrate_json::enum_field<calibrate::AttentionPass>(r, "pass");
  a.impl = calibrate_json::enum_field<calibrate::AttentionImpl>(r, "impl");
  a.dtype = r.string("dtype");
  a.batch = r.integer("batch", 1);
  a.heads = r.integer("heads", 1);
  a.kv_heads = r.optional_integer("kv_heads", 1).value_or(a.heads);
  a.head_dim = r.integer("head_dim", 1);
  a.seq = r.integer("seq", 1);
  a.causal = r.boolean("causal");
  a.time = positive_time(r, false);
  a.rate = r.has("tflops") ? tflops(r.number("tflops")) : attention_flops(a) / a.time;
  r.ignore({"tflops"});
  return a;
}

BandwidthMeasurement read_bandwidth(ObjectReader& r) {
  BandwidthMeasurement b;
  b.direction = calibrate_json::enum_field<calibrate::CopyDirection>(r, "direction");
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

std::string measurements_to_jsonl(const calibrate::Measurements& m) {
  std::string out;
  auto line = [&](const OJson& j) { out += j.dump() + "\n"; };
  for (const auto& x : m.collectives) line(collective_line(x));
  for (const auto& x : m.gemms) line(gemm_line(x));
  for (const auto& x : m.attention) line(attention_line(x));
  for (const auto& x : m.bandwidth) line(bandwidth_line(x));
  for (const auto& x : m.cpu_adam) line(cpu_adam_line(x));
  return out;
}

calibrate::Measurements parse_measurements_jsonl(std::string_view text, std::string_view source) {
  calibrate::Measurements m;
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
    if (kind == "collective") {
      calibrate_json::reject_unknown_keys(
          j,
          {"kind", "collective", "scope", "ranks", "nodes", "dtype", "bytes", "time_us",
           "algbw_GBps", "busbw_GBps", "in_place", "valid"},
          what);
      m.collectives.push_back(read_collective(r));
    } else if (kind == "gemm") {
      calibrate_json::reject_unknown_keys(
          j, {"kind", "dtype", "m", "n", "k", "time_us", "tflops", "label"}, what);
      m.gemms.push_back(read_gemm(r));
    } else if (kind == "attention") {
      calibrate_json::reject_unknown_keys(
          j,
          {"kind", "pass", "impl", "dtype", "batch", "heads", "kv_heads", "head_dim", "seq",
           "causal", "time_us", "tflops"},
          what);
      m.attention.push_back(read_attention(r));
    } else if (kind == "memory_bandwidth") {
      calibrate_json::reject_unknown_keys(j, {"kind", "direction", "bytes", "time_us", "GBps"},
                                          what);
      m.bandwidth.push_back(read_bandwidth(r));
    } else if (kind == "cpu_adam") {
      calibrate_json::reject_unknown_keys(j, {"kind", "params", "time_us", "params_per_s"}, what);
      m.cpu_adam.push_back(read_cpu_adam(r));
    } else {
      throw InputError(what + ": unknown measurement kind '" + kind +
                       "' (expected one of: " + std::string(kKinds) + ")");
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
  calibrate_json::reject_unknown_keys(
      j,
      {"schema", "tool", "gpu", "gpu_count", "hosts", "nodes", "ranks", "driver", "cuda", "nccl",
       "cublas", "cudnn", "command", "date", "sources"},
      what);
  ObjectReader r(j, what);
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

calibrate::Run read_run_dir(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  const std::string name = dir.string();
  std::error_code ec;
  if (!fs::exists(dir, ec)) throw InputError("run directory '" + name + "' does not exist");
  if (!fs::is_directory(dir, ec)) throw InputError("run directory '" + name + "' is not a folder");
  calibrate::Run run;
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
  if (fs::file_size(measurements, ec) > 0 && !ec) {
    std::ifstream in(measurements, std::ios::binary);
    if (!in) {
      throw InputError("cannot read measurements '" + measurements.string() +
                       "': " + std::strerror(errno));
    }
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    run.measurements = parse_measurements_jsonl(text, measurements.string());
  }
  return run;
}

void write_run_dir(const std::filesystem::path& dir, const calibrate::Run& run) {
  namespace fs = std::filesystem;
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

}  // namespace trainplan::io
