// request/files.hpp: the one atomic writer every output uses (trainplan's files, the GUI's saves,
// trainplan-calibrate's run directory).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "trainplan/core/error.hpp"
#include "trainplan/request/files.hpp"

namespace trainplan::request {
namespace {

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(Files, WriteReplacesAtomicallyAndLeavesNoTemporary) {
  const auto dir = std::filesystem::temp_directory_path() / "trainplan-test-files";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto file = dir / "p.json";
  write_file_atomically(file.string(), "{}\n");
  write_file_atomically(file.string(), "{\"a\":1}\n");
  EXPECT_EQ(slurp(file), "{\"a\":1}\n");
  EXPECT_FALSE(std::filesystem::exists(dir / "p.json.tmp"));
  std::filesystem::remove_all(dir);
}

TEST(Files, WriteIntoAMissingFolderNamesThePathAndWritesNothing) {
  const auto dir = std::filesystem::temp_directory_path() / "trainplan-test-files-missing";
  std::filesystem::remove_all(dir);
  const std::string file = (dir / "p.json").string();
  try {
    write_file_atomically(file, "{}\n");
    FAIL() << "wrote into a folder that does not exist";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir));
}

}  // namespace
}  // namespace trainplan::request
