// Fails when a function body in the given files or folders (searched recursively for .cpp, .hpp
// and .h) is longer than the limit: the house rule that planner/, model/ and io/ hold no function
// over 120 lines, kept true by ctest without Python.
//
//   function_length LIMIT PATH...
//
// Comments, string and character literals (raw strings included) and preprocessor lines are
// blanked first; then braces are matched. A block counts as a function body when every block
// around it is a namespace, extern "C" or class body and its header (the text since the previous
// ';', '{' or '}') has a parameter list and is not an initializer; the bodies of member functions
// defined inside classes count too. Data tables (`constexpr std::array k = ...({ ... })`) do not.
#include <algorithm>
#include <cctype>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

struct Offender {
  std::string file;
  std::size_t line = 0;
  std::size_t length = 0;
  std::string header;
};

bool is_word(char ch) { return std::isalnum(static_cast<unsigned char>(ch)) != 0 || ch == '_'; }

// The text with comments, literals and preprocessor lines replaced by spaces; newlines kept, so
// line numbers stay those of the file.
std::string blank_non_code(const std::string& in) {
  std::string out = in;
  std::size_t i = 0;
  bool line_start = true;
  const auto blank = [&](std::size_t from, std::size_t to) {
    for (std::size_t k = from; k < to && k < out.size(); ++k)
      if (out[k] != '\n') out[k] = ' ';
  };
  while (i < in.size()) {
    const char ch = in[i];
    if (ch == '\n') {
      line_start = true;
      ++i;
      continue;
    }
    if (line_start && ch == '#') {  // a directive, with its continuation lines
      std::size_t end = i;
      while (end < in.size() && !(in[end] == '\n' && in[end - 1] != '\\')) ++end;
      blank(i, end);
      i = end;
      continue;
    }
    if (!std::isspace(static_cast<unsigned char>(ch))) line_start = false;
    if (ch == '/' && i + 1 < in.size() && in[i + 1] == '/') {
      const std::size_t end = in.find('\n', i);
      blank(i, end == std::string::npos ? in.size() : end);
      i = end == std::string::npos ? in.size() : end;
    } else if (ch == '/' && i + 1 < in.size() && in[i + 1] == '*') {
      const std::size_t end = in.find("*/", i + 2);
      const std::size_t stop = end == std::string::npos ? in.size() : end + 2;
      blank(i, stop);
      i = stop;
    } else if (ch == 'R' && i + 1 < in.size() && in[i + 1] == '"' && (i == 0 || !is_word(in[i - 1]) ||
                                                                      in[i - 1] == 'u' ||
                                                                      in[i - 1] == '8' ||
                                                                      in[i - 1] == 'L' ||
                                                                      in[i - 1] == 'U')) {
      const std::size_t open = in.find('(', i + 2);
      if (open == std::string::npos) {
        ++i;
        continue;
      }
      const std::string close = ")" + in.substr(i + 2, open - i - 2) + "\"";
      const std::size_t end = in.find(close, open);
      const std::size_t stop = end == std::string::npos ? in.size() : end + close.size();
      blank(i + 1, stop);
      i = stop;
    } else if (ch == '"' || (ch == '\'' && (i == 0 || !is_word(in[i - 1])))) {
      // A string or character literal; a quote after a digit or letter is a digit separator.
      std::size_t k = i + 1;
      while (k < in.size() && in[k] != ch && in[k] != '\n') k += in[k] == '\\' ? 2 : 1;
      blank(i + 1, k);
      i = k + 1;
    } else {
      ++i;
    }
  }
  return out;
}

std::string trim(const std::string& s) {
  const std::size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return {};
  const std::size_t b = s.find_last_not_of(" \t\r\n");
  return s.substr(a, b - a + 1);
}

// Text outside parentheses and brackets: where an '=' makes the header an initializer.
std::string outside_parentheses(const std::string& s) {
  std::string out;
  int depth = 0;
  for (const char ch : s) {
    if (ch == '(' || ch == '[') ++depth;
    if (depth == 0) out += ch;
    if ((ch == ')' || ch == ']') && depth > 0) --depth;
  }
  return out;
}

enum class Block { scope, function, other };

Block classify(const std::string& raw_header) {
  static const std::regex access(R"(^\s*(public|private|protected)\s*:)");
  static const std::regex scope(
      R"(^\s*((template\s*<[^{]*>\s*)?(struct|class|union)\b|(inline\s+)?namespace\b|extern\s*""\s*$))");
  static const std::regex enumeration(R"(^\s*enum\b)");
  const std::string header = trim(std::regex_replace(raw_header, access, ""));
  if (std::regex_search(header, enumeration)) return Block::other;
  if (std::regex_search(header, scope)) return Block::scope;
  if (header.find('(') == std::string::npos) return Block::other;
  const char last = header.back();
  if (last == '(' || last == ',' || last == '=' || last == '[' || last == '{') return Block::other;
  const std::string flat = outside_parentheses(header);
  const bool assigns = flat.find('=') != std::string::npos &&
                       flat.find("operator") == std::string::npos;
  const bool lambda = header.find("](") != std::string::npos || header.find("] (") != std::string::npos;
  if (assigns && !lambda) return Block::other;
  return Block::function;
}

void scan(const fs::path& file, std::size_t limit, std::vector<Offender>& offenders,
          std::size_t& functions) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = blank_non_code(ss.str());
  struct Open {
    Block kind;
    std::size_t line;
    std::size_t header_from;
    std::size_t brace;
  };
  std::vector<Open> stack;
  std::size_t line = 1;
  std::size_t header_from = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (ch == '\n') ++line;
    if (ch == ';') header_from = i + 1;
    if (ch == '{') {
      const bool at_scope = std::all_of(stack.begin(), stack.end(),
                                        [](const Open& o) { return o.kind == Block::scope; });
      const Block kind =
          at_scope ? classify(text.substr(header_from, i - header_from)) : Block::other;
      stack.push_back({kind, line, header_from, i});
      header_from = i + 1;
    }
    if (ch == '}') {
      if (stack.empty()) {
        std::cerr << file.string() << ":" << line << ": unbalanced '}'\n";
        offenders.push_back({file.string(), line, 0, "unbalanced braces"});
        return;
      }
      const Open open = stack.back();
      stack.pop_back();
      const std::size_t next = text.find_first_not_of(" \t\r\n", i + 1);
      const char after = next == std::string::npos ? ';' : text[next];
      if (open.kind == Block::function && (after == ',' || after == '{')) {
        // A member's braced initializer in a constructor's init list: the body follows.
        header_from = open.header_from;
        continue;
      }
      header_from = i + 1;
      if (open.kind != Block::function) continue;
      ++functions;
      const std::size_t length = line - open.line + 1;
      if (length > limit) {
        std::string header = trim(text.substr(open.header_from, open.brace - open.header_from));
        header = header.substr(0, header.find('\n'));
        offenders.push_back({file.string(), open.line, length, header});
      }
    }
  }
  if (!stack.empty()) offenders.push_back({file.string(), line, 0, "unbalanced braces"});
}

bool is_source(const fs::path& p) {
  const std::string e = p.extension().string();
  return e == ".cpp" || e == ".hpp" || e == ".h";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: function_length LIMIT PATH...\n";
    return 2;
  }
  const std::size_t limit = std::stoul(argv[1]);
  std::vector<fs::path> files;
  for (int k = 2; k < argc; ++k) {
    const fs::path p(argv[k]);
    if (fs::is_regular_file(p)) {
      files.push_back(p);
    } else if (fs::is_directory(p)) {
      for (const auto& e : fs::recursive_directory_iterator(p))
        if (e.is_regular_file() && is_source(e.path())) files.push_back(e.path());
    } else {
      std::cerr << "function_length: no such file or folder: " << p.string() << "\n";
      return 2;
    }
  }
  std::sort(files.begin(), files.end());
  std::vector<Offender> offenders;
  std::size_t functions = 0;
  for (const fs::path& f : files) scan(f, limit, offenders, functions);
  for (const Offender& o : offenders) {
    if (o.length == 0) {
      std::cout << o.file << ":" << o.line << ": " << o.header << "\n";
    } else {
      std::cout << o.file << ":" << o.line << ": function of " << o.length << " lines (limit "
                << limit << "): " << o.header << "\n";
    }
  }
  std::cout << files.size() << " files, " << functions << " functions, " << offenders.size()
            << " over " << limit << " lines\n";
  if (functions == 0) {
    std::cout << "no function found: nothing was checked\n";
    return 1;
  }
  return offenders.empty() ? 0 : 1;
}
