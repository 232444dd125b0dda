// RUN_DIR/provenance.json: where and with what software the measurements were taken.
// Schema trainplan.run/1; the reader rejects unknown keys, so topology goes to topology.txt.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace trainplan::calibrate {

struct Provenance {
  std::string gpu;
  int gpu_count = 0;
  std::vector<std::string> hosts;
  int nodes = 1;
  int ranks = 1;
  std::string driver;
  std::string cuda;
  std::string nccl;
  std::string cublas;
  std::string cudnn;
  std::string command;
  std::string date;
  std::vector<std::string> sources;
};

[[nodiscard]] nlohmann::ordered_json to_json(const Provenance& p);

// This host's name, as gethostname gives it.
[[nodiscard]] std::string local_hostname();

// 2025-01-31T12:34:56Z
[[nodiscard]] std::string iso8601_utc_now();

// argv joined with POSIX shell quoting where needed.
[[nodiscard]] std::string shell_join(int argc, const char* const* argv);

// Libraries encode versions as major*10000 + minor*100 + patch (cuBLAS, cuDNN 9, NCCL >= 2.9).
[[nodiscard]] std::string version_5digit(long long encoded);
// The CUDA runtime and driver API encode major*1000 + minor*10.
[[nodiscard]] std::string cuda_version_string(int encoded);

}  // namespace trainplan::calibrate
