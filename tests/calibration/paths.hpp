#pragma once
// Where the calibration tests find their logs, all committed under tests/calibration/data: the real
// published logs in real/ (sources in data/README.md) and the synthetic ones beside them.

#include <filesystem>
#include <string>

namespace trainplan::test {

inline std::filesystem::path fixture(const std::string& name) {
  return std::filesystem::path(TRAINPLAN_CALIBRATE_DATA_DIR) / "real" / name;
}

inline std::filesystem::path synthetic(const std::string& name) {
  return std::filesystem::path(TRAINPLAN_CALIBRATE_DATA_DIR) / name;
}

// A fresh empty folder under the system temporary directory, removed by the destructor.
class TempDir {
 public:
  explicit TempDir(const std::string& tag);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace trainplan::test
