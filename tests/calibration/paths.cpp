#include "paths.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>

namespace trainplan::test {

TempDir::TempDir(const std::string& tag) {
  static std::atomic<int> counter{0};
  const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
  path_ = std::filesystem::temp_directory_path() /
          ("trainplan-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(stamp) +
           "-" + std::to_string(counter++));
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace trainplan::test
