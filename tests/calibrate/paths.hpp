#pragma once
// Where the calibration tests find their logs: the shared real fixtures (beside the repository)
// and the synthetic logs committed under tests/calibrate/data.

#include <filesystem>
#include <string>

namespace trainplan::test {

inline std::filesystem::path fixture(const std::string& name) {
  return std::filesystem::path(TRAINPLAN_FIXTURES_DIR) / "nccl-tests" / name;
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
