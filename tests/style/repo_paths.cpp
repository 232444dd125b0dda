// Fails when a build file, a test or a script names a path outside the repository: a user's clone
// has nothing beside it, so whatever the build and the tests read must be committed.
//
//   repo_paths ROOT [PATH...]
//
// Scans ROOT's CMakeLists.txt and *.cmake files, the sources under tests/, scripts/*.sh and .ci/
// (or the PATHs given, for the checker's own test). Two kinds of reference are resolved:
//   - a folder variable followed by a relative path: ${PROJECT_SOURCE_DIR}, ${CMAKE_SOURCE_DIR}
//     (the root), ${CMAKE_CURRENT_SOURCE_DIR}, ${CMAKE_CURRENT_LIST_DIR}, $(dirname "$0") and
//     $(dirname "${BASH_SOURCE[0]}") (the file's folder); the path is normalised lexically and must
//     stay inside ROOT;
//   - any mention of the team's folder beside the repository (its name after "../" or ")/", or
//     followed by one of its sub-folders: fixtures, measurements, reference, model-configs).
// The patterns are assembled at run time, so this file does not name them itself.
// Prints each offender as FILE:LINE and exits 1 when there is one.
#include <array>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace fs = std::filesystem;

struct Base {
  std::string_view token;
  bool root;  // the repository root; otherwise the scanned file's folder
};

constexpr std::array kBases = {
    Base{"${PROJECT_SOURCE_DIR}", true},       Base{"${CMAKE_SOURCE_DIR}", true},
    Base{"${CMAKE_CURRENT_SOURCE_DIR}", false}, Base{"${CMAKE_CURRENT_LIST_DIR}", false},
    Base{"$(dirname \"$0\")", false},          Base{"$(dirname \"${BASH_SOURCE[0]}\")", false},
};

std::vector<std::string> outside_patterns() {
  const std::string team = std::string("sha") + "red";
  return {"../" + team, ")/" + team, "/" + team + "/fixtures", "/" + team + "/measurements",
          "/" + team + "/reference", "/" + team + "/model-configs"};
}

bool is_path_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '/' || c == '.' || c == '_' || c == '-';
}

bool inside(const fs::path& root, const fs::path& p) {
  const fs::path rel = p.lexically_normal().lexically_relative(root.lexically_normal());
  return !rel.empty() && *rel.begin() != "..";
}

// The offenders of one line, as messages.
std::vector<std::string> check_line(const fs::path& root, const fs::path& folder, const std::string& line) {
  std::vector<std::string> out;
  for (const Base& b : kBases) {
    for (std::size_t at = line.find(b.token); at != std::string::npos; at = line.find(b.token, at + 1)) {
      std::size_t end = at + b.token.size();
      while (end < line.size() && is_path_char(line[end])) ++end;
      const std::string rel = line.substr(at + b.token.size(), end - at - b.token.size());
      const fs::path base = b.root ? root : folder;
      const fs::path target = rel.empty() ? base : base / fs::path(rel).relative_path();
      if (!inside(root, target) && target.lexically_normal() != root.lexically_normal())
        out.push_back(std::string(b.token) + rel + " leaves the repository");
    }
  }
  static const std::vector<std::string> kOutside = outside_patterns();
  for (const std::string& s : kOutside)
    if (line.find(s) != std::string::npos) out.push_back("names '" + std::string(s) + "' beside the repository");
  return out;
}

bool scanned(const fs::path& p) {
  const std::string name = p.filename().string();
  const std::string ext = p.extension().string();
  return name == "CMakeLists.txt" || name == "run" || ext == ".cmake" || ext == ".cpp" || ext == ".hpp" ||
         ext == ".h" || ext == ".sh" || ext == ".tsv" || ext == ".py";
}

void collect(const fs::path& p, std::vector<fs::path>& files) {
  if (fs::is_regular_file(p)) {
    files.push_back(p);
    return;
  }
  if (!fs::is_directory(p)) return;
  for (auto it = fs::recursive_directory_iterator(p); it != fs::recursive_directory_iterator(); ++it) {
    const std::string name = it->path().filename().string();
    if (it->is_directory() && (name.rfind("build", 0) == 0 || name == ".git")) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file() && scanned(it->path())) files.push_back(it->path());
  }
}

// The build files everywhere, and every file under tests/, scripts/ and .ci/.
std::vector<fs::path> default_files(const fs::path& root) {
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    const std::string name = it->path().filename().string();
    if (it->is_directory() && (name.rfind("build", 0) == 0 || name == ".git" || name == "tests" ||
                               name == "scripts" || name == ".ci")) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file() && (name == "CMakeLists.txt" || it->path().extension() == ".cmake"))
      files.push_back(it->path());
  }
  for (const char* sub : {"tests", "scripts", ".ci"}) collect(root / sub, files);
  return files;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: repo_paths ROOT [PATH...]\n";
    return 2;
  }
  const fs::path root = fs::absolute(argv[1]).lexically_normal();
  std::vector<fs::path> files;
  if (argc == 2) {
    files = default_files(root);
  } else {
    for (int i = 2; i < argc; ++i) collect(fs::absolute(argv[i]), files);
  }
  std::size_t offenders = 0;
  for (const fs::path& f : files) {
    std::ifstream in(f);
    std::string line;
    for (std::size_t n = 1; std::getline(in, line); ++n)
      for (const std::string& m : check_line(root, f.parent_path(), line)) {
        std::cout << f.string() << ":" << n << ": " << m << "\n";
        ++offenders;
      }
  }
  std::cout << files.size() << " files, " << offenders << " paths outside the repository\n";
  return offenders == 0 ? 0 : 1;
}
