// The lines of RUN_DIR/measurements.jsonl (one JSON object per line, the contract that
// `trainplan calibrate fit` reads) and the append-only log that writes them.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

#include "names.hpp"
#include "sweep.hpp"

namespace trainplan::calibrate {

using Json = nlohmann::ordered_json;

// Each point is split in what identifies it (the parameters, also the --resume key) and what was
// measured. `*_params` build the first part; `with_*` add the second.
[[nodiscard]] Json collective_params(Collective c, Scope scope, int ranks, int nodes, CollDtype dtype,
                                     std::int64_t bytes);
[[nodiscard]] Json with_collective_result(Json params, double time_us, double busbw_factor,
                                          bool valid);

[[nodiscard]] Json gemm_params(GemmDtype dtype, const GemmShape& g);
[[nodiscard]] Json with_gemm_result(Json params, const GemmShape& g, double time_us);

[[nodiscard]] Json attention_params(AttentionPass pass, AttentionImpl impl, const AttentionShape& a);
[[nodiscard]] Json with_attention_result(Json params, const AttentionShape& a, AttentionPass pass,
                                         double time_us);

[[nodiscard]] Json memory_params(MemDirection dir, std::int64_t bytes);
// `traffic_bytes` is what moved through memory: 2 * bytes for d2d (read + write), bytes otherwise.
[[nodiscard]] Json with_memory_result(Json params, double traffic_bytes, double time_us);

[[nodiscard]] Json cpu_adam_params(std::int64_t params);
[[nodiscard]] Json with_cpu_adam_result(Json params, std::int64_t n, double time_us);

// One GPU AdamW step over `params` parameters in `tensors` tensors; `bytes` is the traffic of the
// step (adamw_bytes_per_param), from which GBps follows.
[[nodiscard]] Json optimizer_params(OptimizerPrecision precision, std::int64_t params,
                                    std::int64_t tensors);
[[nodiscard]] Json with_optimizer_result(Json params, double time_us);

// One memory-bound kernel over `elements` outputs; RMSNorm lines also carry the row width.
[[nodiscard]] Json elementwise_params(ElementwiseOp op, std::int64_t elements);
[[nodiscard]] Json with_elementwise_result(Json params, double time_us);

// `launches` back-to-back launches timed on the host; time_us is per launch. `size` is m = n = k
// of a bf16 GEMM (ignored for the empty kernel).
[[nodiscard]] Json launch_params(LaunchOp op, std::int64_t size, int launches);
[[nodiscard]] Json with_launch_result(Json params, double time_us);

// A point that was not measured: its parameters under "point", why under "reason" and, where
// another point stands in for it (the unfused attention for a cuDNN refusal), that point's
// parameters under "fallback". A skipped point is measured again by --resume.
[[nodiscard]] Json skipped_line(const Json& params, const std::string& reason,
                                const std::optional<Json>& fallback);

// Identity of a line for --resume: its parameters (measured fields dropped), keys sorted.
[[nodiscard]] std::string resume_key(const Json& line);

// Appends one line per measurement, flushed at once, so an interrupted run keeps what it measured.
class MeasurementLog {
 public:
  // Opens (creating) RUN_DIR/measurements.jsonl. With resume, the keys of the valid lines already
  // there are loaded; without it an existing file is truncated.
  MeasurementLog(const std::filesystem::path& file, bool resume);

  [[nodiscard]] bool contains(const Json& params) const;
  void append(const Json& line);
  [[nodiscard]] std::size_t resumed_count() const { return done_.size(); }

 private:
  struct FileCloser {
    void operator()(std::FILE* f) const noexcept { std::fclose(f); }
  };
  std::filesystem::path path_;
  std::unique_ptr<std::FILE, FileCloser> file_;
  std::set<std::string> done_;
};

}  // namespace trainplan::calibrate
