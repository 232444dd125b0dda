#include "measurement.hpp"

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string_view>

namespace trainplan::calibrate {
namespace {

constexpr std::array<std::string_view, 7> kMeasuredFields{
    "time_us", "algbw_GBps", "busbw_GBps", "valid", "tflops", "GBps", "params_per_s"};

// Rates are reported in units of 1e9 (GB/s) and 1e12 (TFLOP/s) per second.
constexpr double kGiga = 1e9;
constexpr double kTera = 1e12;

[[nodiscard]] double per_second(double amount, double time_us) {
  return time_us > 0 ? amount / (time_us * 1e-6) : 0.0;
}

}  // namespace

Json collective_params(Collective c, Scope scope, int ranks, int nodes, CollDtype dtype,
                       std::int64_t bytes) {
  Json j;
  j["kind"] = "collective";
  j["collective"] = to_string(c);
  j["scope"] = to_string(scope);
  j["ranks"] = ranks;
  j["nodes"] = nodes;
  j["dtype"] = to_string(dtype);
  j["bytes"] = bytes;
  j["in_place"] = false;
  return j;
}

Json with_collective_result(Json params, double time_us, double busbw_factor, bool valid) {
  const double algbw = per_second(params.at("bytes").get<double>(), time_us) / kGiga;
  params["time_us"] = time_us;
  params["algbw_GBps"] = algbw;
  params["busbw_GBps"] = algbw * busbw_factor;
  params["valid"] = valid;
  return params;
}

Json gemm_params(GemmDtype dtype, const GemmShape& g) {
  Json j;
  j["kind"] = "gemm";
  j["dtype"] = to_string(dtype);
  j["m"] = g.m;
  j["n"] = g.n;
  j["k"] = g.k;
  j["label"] = to_string(g.label);
  return j;
}

Json with_gemm_result(Json params, const GemmShape& g, double time_us) {
  params["time_us"] = time_us;
  params["tflops"] = per_second(gemm_flops(g), time_us) / kTera;
  return params;
}

Json attention_params(AttentionPass pass, AttentionImpl impl, const AttentionShape& a) {
  Json j;
  j["kind"] = "attention";
  j["pass"] = to_string(pass);
  j["impl"] = to_string(impl);
  j["dtype"] = "bf16";
  j["batch"] = a.batch;
  j["heads"] = a.heads;
  j["kv_heads"] = a.kv_heads;
  j["head_dim"] = a.head_dim;
  j["seq"] = a.seq;
  j["causal"] = a.causal;
  return j;
}

Json with_attention_result(Json params, const AttentionShape& a, AttentionPass pass,
                           double time_us) {
  params["time_us"] = time_us;
  params["tflops"] = per_second(attention_flops(a, pass), time_us) / kTera;
  return params;
}

Json memory_params(MemDirection dir, std::int64_t bytes) {
  Json j;
  j["kind"] = "memory_bandwidth";
  j["direction"] = to_string(dir);
  j["bytes"] = bytes;
  return j;
}

Json with_memory_result(Json params, double traffic_bytes, double time_us) {
  params["time_us"] = time_us;
  params["GBps"] = per_second(traffic_bytes, time_us) / kGiga;
  return params;
}

Json cpu_adam_params(std::int64_t params) {
  Json j;
  j["kind"] = "cpu_adam";
  j["params"] = params;
  return j;
}

Json with_cpu_adam_result(Json params, std::int64_t n, double time_us) {
  params["time_us"] = time_us;
  params["params_per_s"] = per_second(static_cast<double>(n), time_us);
  return params;
}

Json optimizer_params(OptimizerPrecision precision, std::int64_t params, std::int64_t tensors) {
  const OptimizerDtypes dt = optimizer_dtypes(precision);
  Json j;
  j["kind"] = "optimizer";
  j["optimizer"] = "adamw";
  j["param_dtype"] = dt.param;
  j["grad_dtype"] = dt.grad;
  j["state_dtype"] = dt.state;
  j["params"] = params;
  j["tensors"] = tensors;
  j["bytes"] = params * adamw_bytes_per_param(precision);
  return j;
}

Json with_optimizer_result(Json params, double time_us) {
  params["time_us"] = time_us;
  params["GBps"] = per_second(params.at("bytes").get<double>(), time_us) / kGiga;
  params["params_per_s"] = per_second(params.at("params").get<double>(), time_us);
  return params;
}

Json elementwise_params(ElementwiseOp op, std::int64_t elements) {
  const ElementwiseDtypes dt = elementwise_dtypes(op);
  Json j;
  j["kind"] = "elementwise";
  j["op"] = to_string(op);
  j["in_dtype"] = dt.in;
  j["out_dtype"] = dt.out;
  j["elements"] = elements;
  if (op == ElementwiseOp::kRmsNorm) j["row"] = kRmsNormWidth;
  j["bytes"] = elementwise_bytes(op, elements);
  return j;
}

Json with_elementwise_result(Json params, double time_us) {
  params["time_us"] = time_us;
  params["GBps"] = per_second(params.at("bytes").get<double>(), time_us) / kGiga;
  return params;
}

Json launch_params(LaunchOp op, std::int64_t size, int launches) {
  Json j;
  j["kind"] = "launch";
  j["op"] = to_string(op);
  switch (op) {
    case LaunchOp::kEmptyKernel:
      break;
    case LaunchOp::kGemm:
      j["dtype"] = "bf16";
      j["m"] = size;
      j["n"] = size;
      j["k"] = size;
      break;
  }
  j["launches"] = launches;
  return j;
}

Json with_launch_result(Json params, double time_us) {
  params["time_us"] = time_us;
  return params;
}

Json skipped_line(const Json& params, const std::string& reason,
                  const std::optional<Json>& fallback) {
  Json j;
  j["kind"] = "skipped";
  j["point"] = params;
  j["reason"] = reason;
  if (fallback) j["fallback"] = *fallback;
  return j;
}

std::string resume_key(const Json& line) {
  nlohmann::json sorted = nlohmann::json::parse(line.dump());
  for (const auto field : kMeasuredFields) sorted.erase(std::string(field));
  return sorted.dump();
}

MeasurementLog::MeasurementLog(const std::filesystem::path& file, bool resume) : path_(file) {
  bool needs_newline = false;
  if (resume && std::filesystem::exists(file)) {
    std::ifstream in(file, std::ios::binary);
    std::string text;
    std::string line;
    while (std::getline(in, line)) {
      text = line;
      if (line.empty()) continue;
      const nlohmann::json parsed = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      // A line cut short by an interrupted run does not parse: it is measured again.
      if (parsed.is_discarded() || !parsed.is_object()) continue;
      if (parsed.contains("valid") && parsed["valid"] == false) continue;
      done_.insert(resume_key(Json::parse(line)));
    }
    in.clear();
    in.seekg(0, std::ios::end);
    if (in.tellg() > 0) {
      in.seekg(-1, std::ios::end);
      needs_newline = in.get() != '\n';
    }
  }
  file_.reset(std::fopen(file.c_str(), resume ? "ab" : "wb"));
  if (!file_) {
    throw std::runtime_error("cannot open " + file.string() + ": " + std::strerror(errno));
  }
  if (needs_newline) std::fputc('\n', file_.get());
}

bool MeasurementLog::contains(const Json& params) const {
  return done_.count(resume_key(params)) != 0;
}

void MeasurementLog::append(const Json& line) {
  const std::string text = line.dump() + "\n";
  if (std::fwrite(text.data(), 1, text.size(), file_.get()) != text.size() ||
      std::fflush(file_.get()) != 0) {
    throw std::runtime_error("cannot write " + path_.string() + ": " + std::strerror(errno));
  }
  done_.insert(resume_key(line));
}

}  // namespace trainplan::calibrate
