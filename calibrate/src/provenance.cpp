#include "provenance.hpp"

#include <chrono>
#include <ctime>

#include <fmt/format.h>

namespace trainplan::calibrate {

nlohmann::ordered_json to_json(const Provenance& p) {
  nlohmann::ordered_json j;
  j["schema"] = "trainplan.run/1";
  j["tool"] = "trainplan-calibrate";
  j["gpu"] = p.gpu;
  j["gpu_count"] = p.gpu_count;
  j["hosts"] = p.hosts;
  j["nodes"] = p.nodes;
  j["ranks"] = p.ranks;
  j["driver"] = p.driver;
  j["cuda"] = p.cuda;
  j["nccl"] = p.nccl;
  j["cublas"] = p.cublas;
  j["cudnn"] = p.cudnn;
  j["command"] = p.command;
  j["date"] = p.date;
  j["sources"] = p.sources;
  return j;
}

std::string iso8601_utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buf;
}

std::string shell_join(int argc, const char* const* argv) {
  std::string out;
  for (int i = 0; i < argc; ++i) {
    std::string_view a = argv[i];
    if (i > 0) out += ' ';
    const bool plain = !a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP"
                                                         "QRSTUVWXYZ0123456789-_./=,:+@%") ==
                                         std::string_view::npos;
    if (plain) {
      out += a;
      continue;
    }
    out += '\'';
    for (const char c : a) {
      if (c == '\'') {
        out += "'\\''";
      } else {
        out += c;
      }
    }
    out += '\'';
  }
  return out;
}

std::string version_5digit(long long encoded) {
  return fmt::format("{}.{}.{}", encoded / 10000, encoded / 100 % 100, encoded % 100);
}

std::string cuda_version_string(int encoded) {
  return fmt::format("{}.{}", encoded / 1000, encoded % 1000 / 10);
}

}  // namespace trainplan::calibrate
