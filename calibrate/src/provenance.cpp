#include "provenance.hpp"

#include <unistd.h>

#include <array>
#include <chrono>
#include <ctime>

#include <fmt/format.h>

namespace trainplan::calibrate {

nlohmann::ordered_json to_json(const Provenance& p) {
  return {{"schema", "trainplan.run/1"}, {"tool", "trainplan-calibrate"},
          {"gpu", p.gpu},                {"gpu_count", p.gpu_count},
          {"hosts", p.hosts},            {"nodes", p.nodes},
          {"ranks", p.ranks},            {"driver", p.driver},
          {"cuda", p.cuda},              {"nccl", p.nccl},
          {"cublas", p.cublas},          {"cudnn", p.cudnn},
          {"command", p.command},        {"date", p.date},
          {"sources", p.sources}};
}

std::string local_hostname() {
  std::array<char, 256> name{};
  gethostname(name.data(), name.size() - 1);
  return name.data();
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
