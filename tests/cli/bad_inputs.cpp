// Runs the table of bad inputs (bad_inputs.tsv) against the trainplan binary: each row's exit code,
// and a message that names the input.
//
//   cli_bad_inputs TRAINPLAN TABLE DATA WORK
//
// Table lines, tab-separated ('#' starts a comment line):
//   file  NAME  CONTENT              writes WORK/NAME (escapes \n, \t, \\, \xNN)
//   fifo  NAME                       makes WORK/NAME a named pipe that nobody writes to
//   NAME  EXIT  STREAM  TEXT  ARG... runs TRAINPLAN ARG...; STREAM (err or out) must contain
//                                    every '|'-separated TEXT
// In ARGs and CONTENT, @DATA@ and @WORK@ are the folders, @ROOT@ the repository (DATA/../../..),
// @X40K@ 40,000 'x', @D40K@ 40,000 '9', and @{N*TEXT}@ TEXT repeated N times.
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "process.hpp"

namespace {

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t at = line.find(sep, start);
    out.push_back(line.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return out;
    start = at + 1;
  }
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

std::string unescape(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    const char c = s[++i];
    if (c == 'n')
      out += '\n';
    else if (c == 't')
      out += '\t';
    else if (c == 'x' && i + 2 < s.size()) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else
      out += c;
  }
  return out;
}

// @{N*TEXT}@ -> TEXT repeated N times.
std::string expand_repeats(std::string s) {
  for (std::size_t at = s.find("@{"); at != std::string::npos; at = s.find("@{", at)) {
    const std::size_t star = s.find('*', at);
    const std::size_t end = s.find("}@", at);
    if (star == std::string::npos || end == std::string::npos || star > end) break;
    const std::size_t n = std::stoul(s.substr(at + 2, star - at - 2));
    const std::string unit = s.substr(star + 1, end - star - 1);
    std::string repeated;
    repeated.reserve(n * unit.size());
    for (std::size_t i = 0; i < n; ++i) repeated += unit;
    s.replace(at, end + 2 - at, repeated);
    at += repeated.size();
  }
  return s;
}

// Shortens what a failure report prints of a long argument or output.
std::string brief(const std::string& s, std::size_t n = 300) {
  return s.size() <= n ? s : s.substr(0, n) + "... (" + std::to_string(s.size()) + " characters)";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: cli_bad_inputs TRAINPLAN TABLE DATA WORK\n";
    return 2;
  }
  const std::string trainplan = argv[1];
  const std::string data = argv[3];
  const std::string work = argv[4];
  std::filesystem::create_directories(work);
  std::ifstream table(argv[2]);
  if (!table) {
    std::cerr << "cannot read " << argv[2] << "\n";
    return 2;
  }
  auto expand = [&](std::string s) {
    s = replace_all(std::move(s), "@DATA@", data);
    s = replace_all(std::move(s), "@WORK@", work);
    s = replace_all(std::move(s), "@ROOT@", data + "/../../..");
    s = replace_all(std::move(s), "@X40K@", std::string(40000, 'x'));
    return expand_repeats(replace_all(std::move(s), "@D40K@", std::string(40000, '9')));
  };
  int rows = 0;
  int failures = 0;
  std::string line;
  int line_no = 0;
  while (std::getline(table, line)) {
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    const std::vector<std::string> f = split(line, '\t');
    if (f[0] == "fifo") {
      const std::filesystem::path fifo = std::filesystem::path(work) / f.at(1);
      std::filesystem::remove(fifo);
      if (mkfifo(fifo.c_str(), 0600) != 0) {
        std::cerr << argv[2] << ":" << line_no << ": cannot make the pipe " << fifo << "\n";
        return 2;
      }
      continue;
    }
    if (f[0] == "file") {
      if (f.size() != 3) {
        std::cerr << argv[2] << ":" << line_no << ": a file line has NAME and CONTENT\n";
        return 2;
      }
      const std::filesystem::path file = std::filesystem::path(work) / f[1];
      std::filesystem::create_directories(file.parent_path());
      std::ofstream(file, std::ios::binary | std::ios::trunc) << unescape(expand(f[2]));
      continue;
    }
    if (f.size() < 4 || (f[2] != "err" && f[2] != "out")) {
      std::cerr << argv[2] << ":" << line_no << ": expected NAME EXIT STREAM TEXT ARG...\n";
      return 2;
    }
    ++rows;
    std::vector<std::string> args;
    for (std::size_t i = 4; i < f.size(); ++i) args.push_back(expand(f[i]));
    const int expect = std::stoi(f[1]);
    const auto r = trainplan::test::run_process(trainplan, args, std::chrono::seconds(20));
    const std::string& stream = f[2] == "err" ? r.err : r.out;
    std::vector<std::string> missing;
    for (const std::string& text : split(expand(f[3]), '|'))
      if (stream.find(text) == std::string::npos) missing.push_back(text);
    const bool ok = !r.timed_out && r.signal == 0 && r.exit_code == expect && missing.empty();
    if (ok) {
      std::cout << "ok   " << f[0] << "\n";
      continue;
    }
    ++failures;
    std::ostringstream cmd;
    for (const auto& a : args) cmd << " " << brief(a, 80);
    std::cout << "FAIL " << f[0] << " (line " << line_no << "): trainplan" << cmd.str() << "\n";
    if (r.timed_out)
      std::cout << "     timed out\n";
    else if (r.signal)
      std::cout << "     killed by signal " << r.signal << "\n";
    else
      std::cout << "     exit " << r.exit_code << ", expected " << expect << "\n";
    for (const auto& m : missing) std::cout << "     std" << f[2] << " lacks: " << m << "\n";
    std::cout << "     stderr: " << brief(r.err) << "\n";
  }
  std::cout << rows << " rows, " << failures << " failed\n";
  return failures == 0 ? 0 : 1;
}
