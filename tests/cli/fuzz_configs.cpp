// Mutated real training configs into --from: every reader (DeepSpeed, accelerate, PEFT,
// TrainingArguments, litgpt, torchtune, axolotl, torchtitan TOML, Megatron and torchrun command lines) must answer
// each file with exit 0, 1 or 2 and a message, never a signal, a hang, an internal error (exit 3),
// more than 2 s or more than 1 GiB of memory.
//
//   cli_fuzz_configs TRAINPLAN CONFIG_DIR [RUNS] [SEED]
//
// CONFIG_DIR holds the real files (tests/request/configs, sources in its SOURCES.md). Each run takes one
// at random and either replaces one value by a hostile token or applies one to four mutations: a
// byte changed, a range deleted or repeated, lines
// swapped, the file cut short, or a hostile token inserted (huge and negative numbers, "auto",
// null, brackets, YAML anchors and aliases, a second document, NUL bytes, long strings). The seed
// is fixed, so a failure reproduces; each failure prints its file, kept under WORK.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "process.hpp"

namespace {

namespace fs = std::filesystem;
using Rng = std::mt19937_64;

constexpr auto kTimeLimit = std::chrono::seconds(2);
constexpr long kMemoryLimitKib = 1L << 20;  // 1 GiB

std::size_t below(Rng& rng, std::size_t n) {
  return n == 0 ? 0 : std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
}

const std::vector<std::string>& hostile_tokens() {
  static const std::vector<std::string> v{
      "99999999999999999999", "9223372036854775807", "4294967297", "-1", "0", "1e400", "-1e400",
      "nan", "\"auto\"", "auto", "null", "~", "true", "\"yes\"", "[", "]", "{", "}", "[[[[[[[[",
      "&a [*a]", "*a", "&x", "\n---\n", "\n...\n", ": :", "\"", "'", "\\", std::string("\0", 1),
      "\xff\xfe", "\t", "\n  - ", ",", std::string(5000, 'x'), std::string(3000, '9'), "$((1<<62))",
      "${X:-8}", "`id`", " --tensor-model-parallel-size 0", " --micro-batch-size 4294967296",
      "\"train_micro_batch_size_per_gpu\": 0,", "stage: 7", "num_processes: 0"};
  return v;
}

// A value of the file (what follows a ':', a TOML '=' or a flag, up to the end of its line, a ',' or a space)
// replaced by a hostile token: the file still parses, and the reader's checks meet the token.
std::string replace_value(Rng& rng, std::string s) {
  std::vector<std::size_t> starts;
  for (std::size_t i = 0; i + 1 < s.size(); ++i)
    if ((s[i] == ':' || s[i] == '=' || (s[i] == ' ' && i > 0 && s[i - 1] != ' ')) && s[i + 1] == ' ')
      starts.push_back(i + 2);
  if (starts.empty()) return s;
  const std::size_t at = starts[below(rng, starts.size())];
  std::size_t end = at;
  while (end < s.size() && s[end] != '\n' && s[end] != ',' && s[end] != ' ') ++end;
  const auto& t = hostile_tokens();
  s.replace(at, end - at, t[below(rng, t.size())]);
  return s;
}

std::string mutate(Rng& rng, std::string s) {
  // Half the runs change one value only, so most files still parse and reach the checks.
  if (below(rng, 2) == 0) return replace_value(rng, std::move(s));
  const int n = 1 + static_cast<int>(below(rng, 4));
  for (int i = 0; i < n; ++i) {
    const std::size_t at = below(rng, s.size() + 1);
    switch (below(rng, 6)) {
      case 0:  // one byte changed
        if (!s.empty()) s[below(rng, s.size())] = static_cast<char>(below(rng, 256));
        break;
      case 1:  // a range deleted
        s.erase(at, below(rng, 64));
        break;
      case 2: {  // a range repeated
        const std::string piece = s.substr(at, below(rng, 200));
        const std::size_t times = 1 + below(rng, 8);
        for (std::size_t k = 0; k < times; ++k) s.insert(at, piece);
        break;
      }
      case 3: {  // two lines swapped
        std::vector<std::string> lines;
        std::size_t start = 0;
        for (std::size_t nl = s.find('\n'); nl != std::string::npos; nl = s.find('\n', start)) {
          lines.push_back(s.substr(start, nl - start));
          start = nl + 1;
        }
        lines.push_back(s.substr(start));
        if (lines.size() > 1) std::swap(lines[below(rng, lines.size())], lines[below(rng, lines.size())]);
        s.clear();
        for (std::size_t k = 0; k < lines.size(); ++k) s += (k ? "\n" : "") + lines[k];
        break;
      }
      case 4:  // cut short
        s.resize(at);
        break;
      default: {  // a hostile token
        const auto& t = hostile_tokens();
        s.insert(at, t[below(rng, t.size())]);
        break;
      }
    }
  }
  return s;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: cli_fuzz_configs TRAINPLAN CONFIG_DIR [RUNS] [SEED]\n";
    return 2;
  }
  const std::string trainplan = argv[1];
  std::vector<fs::path> originals;
  for (const auto& e : fs::directory_iterator(argv[2]))
    if (e.is_regular_file() && e.path().filename() != "SOURCES.md") originals.push_back(e.path());
  std::sort(originals.begin(), originals.end());
  if (originals.empty()) {
    std::cerr << "no config files in " << argv[2] << "\n";
    return 2;
  }
  const int runs = argc > 3 ? std::stoi(argv[3]) : 2000;
  Rng rng(argc > 4 ? std::stoull(argv[4]) : 20);
  // A safety net for this machine: the limit the test asserts is checked from each run's peak
  // resident memory below; this cap only keeps a runaway from taking the machine down.
  const rlimit cap{rlim_t{4} << 30, rlim_t{4} << 30};
  setrlimit(RLIMIT_AS, &cap);
  const fs::path work = fs::temp_directory_path() / ("trainplan-fuzz-configs-" + std::to_string(getpid()));
  fs::create_directories(work);
  const std::vector<std::vector<std::string>> commands{
      {"fit", "7b", "8xA100"}, {"estimate", "7b", "8xA100"}, {"explain", "7b", "8xA100"},
      {"plan", "llama-2-7b", "2x8xH100-80GB", "--top", "1"}, {"fit", "mixtral-8x7b", "A100"}};
  int failures = 0;
  int by_code[3] = {0, 0, 0};
  long peak_kib = 0;
  double slowest = 0.0;
  for (int run = 0; run < runs; ++run) {
    const fs::path& original = originals[below(rng, originals.size())];
    const fs::path file = work / ("run" + std::to_string(run) + original.extension().string());
    std::ofstream(file, std::ios::binary) << mutate(rng, read(original));
    std::vector<std::string> args = commands[below(rng, commands.size())];
    args.push_back("--from");
    args.push_back(file.string());
    const auto start = std::chrono::steady_clock::now();
    const auto r = trainplan::test::run_process(trainplan, args, kTimeLimit);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    slowest = std::max(slowest, seconds);
    peak_kib = std::max(peak_kib, r.max_rss_kib);
    std::string problem = trainplan::test::answer_problem(r, "2 s");
    if (problem.empty() && r.max_rss_kib > kMemoryLimitKib)
      problem = "used " + std::to_string(r.max_rss_kib >> 10) + " MiB";
    if (problem.empty()) {
      ++by_code[r.exit_code];
      fs::remove(file);
      continue;
    }
    ++failures;
    std::cout << "FAIL run " << run << " (" << original.filename().string() << " mutated, kept as "
              << file.string() << "): " << problem << "\n  trainplan";
    for (const auto& a : args) std::cout << " " << a;
    std::cout << "\n  stderr: " << r.err.substr(0, 400) << "\n";
  }
  if (failures == 0) fs::remove_all(work);
  std::cout << runs << " runs over " << originals.size() << " files: exit 0 " << by_code[0] << ", exit 1 "
            << by_code[1] << ", exit 2 " << by_code[2] << "; slowest " << slowest << " s, peak "
            << (peak_kib >> 10) << " MiB; " << failures << " failed\n";
  return failures == 0 ? 0 : 1;
}
