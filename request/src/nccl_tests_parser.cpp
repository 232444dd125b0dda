// nccl-tests stdout, every format generation (docs/calibration.md, "Log formats"):
//   1 (2017-2019)  "# bytes N type op time algbw busbw res", time in ms, footers without '#'
//   2 (2019-2022)  "size count type [redop] [root] time algbw busbw error", per-test columns
//   3 (2022-2025)  "size count type redop root time algbw busbw #wrong" for every test
//   4 (2025-)      adds "# nccl-tests version", "Collective test starting/concluded", -S timestamps
// Columns are mapped by the names in the header; a line is a data row only if it has exactly the
// header's number of fields and every numeric field parses, so launcher and library noise (also
// lines that begin with a digit) is skipped. The table of nccl-tests binaries and the resolution
// of a block's collective and ranks serve the -J JSON report too (nccl_tests_json.cpp).

#include <algorithm>
#include <array>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "collective_log_detail.hpp"
#include "log_text.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/request/collective_log.hpp"

namespace trainplan::request {
namespace {

using hardware::Collective;
using namespace log_text;

struct TestBinary {
  std::string_view name;
  std::optional<Collective> collective;  // nullopt: a test trainplan does not model
};

// nccl-tests src/Makefile BIN_FILES_LIST; compound names first so that a search by substring
// finds reduce_scatter before scatter and all_reduce before reduce.
constexpr std::array<TestBinary, 11> kTestBinaries{{
    {"reduce_scatter_perf", Collective::reduce_scatter},
    {"all_reduce_perf", Collective::all_reduce},
    {"all_gather_perf", Collective::all_gather},
    {"alltoallv_perf", std::nullopt},
    {"alltoall_perf", Collective::all_to_all},
    {"broadcast_perf", Collective::broadcast},
    {"sendrecv_perf", Collective::send_recv},
    {"hypercube_perf", std::nullopt},
    {"reduce_perf", std::nullopt},
    {"gather_perf", std::nullopt},
    {"scatter_perf", std::nullopt},
}};

// Collective names as they appear in file names, compound names first.
constexpr std::array<std::pair<std::string_view, Collective>, 8> kFileNameHints{{
    {"reduce_scatter", Collective::reduce_scatter},
    {"all_reduce", Collective::all_reduce},
    {"allreduce", Collective::all_reduce},
    {"all_gather", Collective::all_gather},
    {"all_to_all", Collective::all_to_all},
    {"alltoall", Collective::all_to_all},
    {"broadcast", Collective::broadcast},
    {"sendrecv", Collective::send_recv},
}};

[[nodiscard]] const TestBinary* binary_named(std::string_view token) {
  const std::size_t slash = token.rfind('/');
  if (slash != std::string_view::npos) token.remove_prefix(slash + 1);
  for (const TestBinary& b : kTestBinaries) {
    if (token.starts_with(b.name)) return &b;
  }
  return nullptr;
}

[[nodiscard]] std::string_view binary_of(Collective c) {
  for (const TestBinary& b : kTestBinaries) {
    if (b.collective == c) return b.name;
  }
  return "";
}

[[nodiscard]] std::string supported_tests() {
  std::string out;
  for (const TestBinary& b : kTestBinaries) {
    if (!b.collective) continue;
    if (!out.empty()) out += ", ";
    out += b.name;
  }
  return out;
}

struct Columns {
  std::vector<std::string> lead;                 // size count type [redop] [root]
  std::vector<std::vector<std::string>> groups;  // time algbw busbw #wrong|error|res [i_* ...]
  bool timestamp = false;
  bool millis = false;
  int generation = 3;
  std::size_t expected_tokens = 0;
};

[[nodiscard]] bool is_time_name(std::string_view s) { return s == "time" || s == "cputime"; }

std::optional<Columns> parse_header(std::string_view content) {
  const std::vector<std::string_view> toks = split_ws(content);
  bool size = false;
  bool count = false;
  bool bytes = false;
  bool n = false;
  std::size_t first_time = toks.size();
  for (std::size_t i = 0; i < toks.size(); ++i) {
    size = size || toks[i] == "size";
    count = count || toks[i] == "count";
    bytes = bytes || toks[i] == "bytes";
    n = n || toks[i] == "N";
    if (is_time_name(toks[i]) && first_time == toks.size()) first_time = i;
  }
  if (first_time == toks.size() || !((size && count) || (bytes && n))) return std::nullopt;
  Columns c;
  for (std::size_t i = 0; i < first_time; ++i) c.lead.emplace_back(toks[i]);
  for (std::size_t i = first_time; i < toks.size(); ++i) {
    if (is_time_name(toks[i])) c.groups.emplace_back();
    c.groups.back().emplace_back(toks[i]);
  }
  if (c.groups.back().back() == "timestamp") {
    c.groups.back().pop_back();
    c.timestamp = true;
  }
  c.millis = bytes && n;
  c.generation = c.millis ? 1 : 3;
  for (const auto& g : c.groups) {
    if (std::find(g.begin(), g.end(), "error") != g.end()) c.generation = 2;
  }
  c.expected_tokens = c.lead.size() + (c.timestamp ? 2 : 0);
  for (const auto& g : c.groups) c.expected_tokens += g.size();
  return c;
}

[[nodiscard]] bool is_date(std::string_view s) {  // YYYY-MM-DD
  return s.size() == 10 && s[4] == '-' && s[7] == '-' && all_of(s.substr(0, 4), is_digit) &&
         all_of(s.substr(5, 2), is_digit) && all_of(s.substr(8, 2), is_digit);
}
[[nodiscard]] bool is_clock(std::string_view s) {  // HH:MM:SS
  return s.size() == 8 && s[2] == ':' && s[5] == ':' && all_of(s.substr(0, 2), is_digit) &&
         all_of(s.substr(3, 2), is_digit) && all_of(s.substr(6, 2), is_digit);
}

std::optional<LogRow> parse_row(std::string_view content, const Columns& c) {
  const std::vector<std::string_view> toks = split_ws(content);
  if (toks.size() != c.expected_tokens) return std::nullopt;
  LogRow row;
  std::size_t i = 0;
  for (const std::string& name : c.lead) {
    const std::string_view tok = toks[i++];
    if (name == "size" || name == "bytes" || name == "count" || name == "N") {
      const std::optional<std::int64_t> v = all_of(tok, is_digit) ? to_int(tok) : std::nullopt;
      if (!v) return std::nullopt;
      (name == "size" || name == "bytes" ? row.bytes : row.count) = *v;
    } else if (name == "type" || name == "redop" || name == "op") {
      if (!is_alpha(tok.front())) return std::nullopt;
      (name == "type" ? row.dtype : row.redop) = std::string(tok);
    } else if (name == "root") {
      const std::optional<std::int64_t> v = to_int(tok);
      if (!v) return std::nullopt;
      row.root = static_cast<int>(*v);
    }
  }
  for (std::size_t g = 0; g < c.groups.size(); ++g) {
    TimingColumns t;
    for (const std::string& name : c.groups[g]) {
      const std::string_view tok = toks[i++];
      const std::optional<double> v = to_double(tok);
      if (is_time_name(name)) {
        if (!v || *v < 0.0) return std::nullopt;
        t.time_us = c.millis ? *v * 1e3 : *v;
      } else if (name == "algbw" || name == "busbw") {
        if (!v || *v < 0.0) return std::nullopt;
        (name == "algbw" ? t.algbw_GBps : t.busbw_GBps) = *v;
      } else if (name == "#wrong" || name == "error" || name == "res") {
        if (tok == "N/A") continue;
        if (!v || *v < 0.0) return std::nullopt;
        (name == "#wrong" ? t.wrong : t.max_error) = *v;
      }
      // Other columns (-I per-iteration statistics, RCCL's algo/proto/nchannels) are not used.
    }
    (g == 0 ? row.out_of_place : row.in_place) = t;
  }
  if (c.timestamp) {
    if (!is_date(toks[i]) || !is_clock(toks[i + 1])) return std::nullopt;
    row.timestamp = std::string(toks[i]) + " " + std::string(toks[i + 1]);
  }
  return row;
}

// "Rank  0 Group  0 Pid  54740 on     thanos device  0 [0x07] NVIDIA A100-SXM4-80GB"
// (no Group before 2022, no Pid in 2017).
std::optional<std::pair<int, detail::RankInfo>> parse_rank_line(std::string_view content) {
  const std::vector<std::string_view> toks = split_ws(content);
  if (toks.size() < 6 || toks[0] != "Rank") return std::nullopt;
  const std::optional<std::int64_t> rank = to_int(toks[1]);
  const auto on = std::find(toks.begin(), toks.end(), "on");
  if (!rank || on == toks.end() || on + 1 == toks.end()) return std::nullopt;
  detail::RankInfo info;
  info.host = std::string(*(on + 1));
  const std::size_t device = content.find(" device ");
  if (device == std::string_view::npos) return std::nullopt;
  const auto dev_token = std::find(toks.begin(), toks.end(), "device");
  if (dev_token != toks.end() && dev_token + 1 != toks.end()) {
    if (const std::optional<std::int64_t> d = to_int(*(dev_token + 1))) info.device = static_cast<int>(*d);
  }
  const std::size_t close = content.find(']', device);
  if (close != std::string_view::npos) {
    info.gpu = std::string(trim(content.substr(close + 1)));
  } else {
    const auto dev = std::find(toks.begin(), toks.end(), "device");
    for (auto it = dev + std::min<std::ptrdiff_t>(2, toks.end() - dev); it != toks.end(); ++it) {
      if (!info.gpu.empty()) info.gpu += " ";
      info.gpu += *it;
    }
  }
  return std::pair{static_cast<int>(*rank), info};
}

// The hosts the '# Rank' lines name, in order of appearance. A host named on one rank line, where
// the others run up to n ranks and as many of them miss one as there are such names, is a line
// garbled by interleaved output, not a node: it is left out, and the block says so.
std::vector<std::string> consistent_hosts(const detail::RunContext& ctx, LogBlock& block) {
  std::vector<std::string> hosts;
  std::map<std::string, int> ranks_on;
  for (const auto& [rank, info] : ctx.ranks) {
    if (ranks_on[info.host]++ == 0) hosts.push_back(info.host);
  }
  int most = 0;
  for (const auto& [host, n] : ranks_on) most = std::max(most, n);
  std::size_t once = 0;
  int missing = 0;
  for (const auto& [host, n] : ranks_on) {
    if (n == 1)
      ++once;
    else
      missing += most - n;
  }
  if (most < 2 || once == 0 || once >= hosts.size() || static_cast<std::size_t>(missing) != once) return hosts;
  std::vector<std::string> kept;
  for (const std::string& h : hosts) {
    if (ranks_on[h] > 1) {
      kept.push_back(h);
      continue;
    }
    block.warnings.push_back("host '" + h + "' is named on one '# Rank' line only, where the others run up to " +
                             std::to_string(most) + " ranks and as many ranks are missing from them: a garbled line, " +
                             "not counted as a node");
  }
  return kept;
}

}  // namespace

namespace detail {

std::optional<std::string_view> nccl_tests_binary(std::string_view token) {
  if (const TestBinary* b = binary_named(token)) return b->name;
  return std::nullopt;
}

bool is_nccl_tests_header(std::string_view content) { return parse_header(content).has_value(); }

void resolve_nccl_tests_block(LogBlock& block, const RunContext& ctx, std::string_view source,
                              const ImportHints& hints) {
  const std::string src(source);
  const std::optional<double> ratio = bandwidth_ratio(block);

  std::optional<Collective> collective = hints.collective;
  if (!collective && !ctx.test.empty()) {
    const TestBinary* b = binary_named(ctx.test);
    if (b != nullptr && !b->collective) {
      throw InputError(src + ": " + std::string(b->name) +
                       " measures a collective trainplan does not model (it reads " +
                       supported_tests() + ")");
    }
    if (b != nullptr) collective = b->collective;
  }
  if (!collective) {
    const std::string name = lower(std::filesystem::path(src).filename().string());
    for (const TestBinary& b : kTestBinaries) {
      if (name.find(b.name) != std::string::npos) {
        if (!b.collective) {
          throw InputError(src + ": " + std::string(b.name) +
                           " measures a collective trainplan does not model (it reads " +
                           supported_tests() + ")");
        }
        collective = b.collective;
        break;
      }
    }
    for (const auto& [hint, c] : kFileNameHints) {
      if (collective) break;
      if (name.find(hint) != std::string::npos) collective = c;
    }
  }
  // Only all_reduce has busbw above algbw.
  if (!collective && ratio && *ratio > 1.02) collective = Collective::all_reduce;
  if (!collective) {
    throw InputError(src +
                     ": cannot tell which collective this log measured (no 'Collective test "
                     "starting' line, no *_perf command line, no collective in the file name); "
                     "pass --collective");
  }
  block.collective = *collective;
  block.test = ctx.test.empty() ? std::string(binary_of(*collective)) : ctx.test;

  // A device list shortened by hand ("Rank 0, 1, ..., 126, 127"): the highest rank says how many ran.
  const int listed = static_cast<int>(ctx.ranks.size());
  const int highest = ctx.ranks.empty() ? 0 : ctx.ranks.rbegin()->first + 1;
  const bool elided = highest > listed;
  if (hints.ranks) {
    block.ranks = *hints.ranks;
  } else if (!ctx.ranks.empty()) {
    block.ranks = highest;
    if (elided)
      block.warnings.push_back("the device list names " + std::to_string(listed) + " of ranks 0 to " +
                               std::to_string(highest - 1) + " (the others left out): " + std::to_string(highest) +
                               " ranks");
  } else if (const std::optional<int> n =
                 ratio ? ranks_from_ratio(*collective, *ratio) : std::nullopt) {
    block.ranks = *n;
  } else {
    throw InputError(src + ": cannot tell how many ranks ran (no '# Rank' lines); pass --ranks");
  }
  for (const auto& [rank, info] : ctx.ranks) {
    if (!info.gpu.empty() && block.gpu.find(info.gpu) == std::string::npos) {
      block.gpu += (block.gpu.empty() ? "" : ", ") + info.gpu;
    }
  }
  block.hosts = consistent_hosts(ctx, block);
  std::optional<int> known_nodes = hints.nodes;
  int per_host = 0;  // GPUs a host drives, from the device indices
  for (const auto& [rank, info] : ctx.ranks) per_host = std::max(per_host, info.device + 1);
  if (!known_nodes && elided && per_host > 0 && !hints.ranks) {
    known_nodes = (block.ranks + per_host - 1) / per_host;
    block.warnings.push_back("nodes from the device indices, the hosts being left out too: " +
                             std::to_string(per_host) + " GPUs a host, " + std::to_string(*known_nodes) + " nodes");
  }
  if (!known_nodes && !block.hosts.empty()) known_nodes = static_cast<int>(block.hosts.size());
  settle_nodes(block, known_nodes, hints, ratio, source);
}

}  // namespace detail

std::string nccl_version_string(long code) {
  const long major = code >= 10000 ? code / 10000 : code / 1000;
  const long minor = code >= 10000 ? (code / 100) % 100 : (code / 100) % 10;
  const long patch = code % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

namespace {

// What the lines of one nccl-tests log have said so far: the run's context, the open block and
// the blocks already complete.
struct NcclTestsParse {
  explicit NcclTestsParse(CollectiveLog& into) : log(into) {}

  CollectiveLog& log;
  detail::RunContext ctx;
  detail::RunContext block_ctx;
  std::optional<Columns> cols;
  LogBlock block;
  bool block_open = false;
  bool in_rows = false;
  bool header_seen = false;
  std::vector<std::pair<LogBlock, detail::RunContext>> finished;

  void finish_block() {
    if (block_open && !block.rows.empty()) finished.emplace_back(std::move(block), block_ctx);
    block = LogBlock{};
    block_open = false;
    in_rows = false;
  }
  // A new run's preamble after rows: the previous block is complete and its devices are not ours.
  void new_run() {
    if (block_open && !block.rows.empty()) {
      finish_block();
      ctx = detail::RunContext{};
    }
  }
};

// The preamble of a run: version banner, test name, thread line, one line per rank.
bool read_preamble_line(std::string_view content, NcclTestsParse& p) {
  if (content.starts_with("nccl-tests version")) {
    p.new_run();
    const std::vector<std::string_view> toks = split_ws(content);
    if (toks.size() > 2) p.log.tool_version = std::string(toks[2]);
    for (const std::string_view tok : toks) {
      if (tok.starts_with("nccl-library=")) {
        if (const auto code = to_int(tok.substr(13)))
          p.log.nccl = nccl_version_string(static_cast<long>(*code));
      }
    }
    p.ctx.generation = 4;
    return true;
  }
  if (content.starts_with("Collective test starting:")) {
    p.new_run();
    p.ctx.test = std::string(trim(content.substr(25)));
    p.ctx.generation = 4;
    return true;
  }
  if (content.starts_with("nThread ")) {
    p.new_run();
    if (content.find("unalign:") != std::string_view::npos) p.ctx.generation = 4;
    return true;
  }
  if (content.starts_with("Using devices")) return true;
  if (content.starts_with("Rank ")) {
    if (auto rank = parse_rank_line(content)) {
      p.new_run();
      p.ctx.ranks[rank->first] = rank->second;
      return true;
    }
  }
  return false;
}

// The frame of a results table: footers, the column header and its unit lines.
bool read_table_frame_line(std::string_view content, NcclTestsParse& p) {
  if (content.starts_with("Out of bounds values") || content.starts_with("Avg bus bandwidth")) {
    if (p.block_open) p.block.footer = true;
    p.in_rows = false;
    return true;
  }
  if (content.starts_with("Collective test concluded")) {
    p.in_rows = false;
    return true;
  }
  if (std::optional<Columns> header = parse_header(content)) {
    p.finish_block();
    p.cols = std::move(header);
    p.block_ctx = p.ctx;
    p.block_open = true;
    p.in_rows = true;
    p.header_seen = true;
    p.block.format_generation =
        std::max(p.cols->generation, p.cols->generation == 3 ? p.ctx.generation : 0);
    return true;
  }
  if (content.find("out-of-place") != std::string_view::npos) return true;
  if (content.starts_with("(B)") || content.find("(elements)") != std::string_view::npos) {
    if (p.cols && content.find("(ms)") != std::string_view::npos) p.cols->millis = true;
    return true;
  }
  return false;
}

// "host:pid:tid [0] NCCL INFO NCCL version 2.18.3+cuda12.2"
void read_nccl_info_version(std::string_view content, CollectiveLog& log) {
  const std::size_t at = content.find("NCCL version ");
  if (at == std::string_view::npos) return;
  const std::vector<std::string_view> toks = split_ws(content.substr(at + 13));
  if (!toks.empty() && !log.nccl) {
    const std::string_view v = toks[0];
    const std::size_t plus = v.find("+cuda");
    log.nccl = std::string(v.substr(0, plus));
    if (plus != std::string_view::npos && !log.cuda) log.cuda = std::string(v.substr(plus + 5));
  }
}

// The command line that ran an nccl-tests binary; returns whether the line was one.
bool read_command_line(std::string_view content, NcclTestsParse& p) {
  bool command = false;
  for (const std::string_view tok : split_ws(content)) {
    if (binary_named(tok) != nullptr) {
      command = true;
      p.new_run();
      if (p.ctx.test.empty()) {
        std::string_view name =
            tok.substr(tok.rfind('/') == std::string_view::npos ? 0 : tok.rfind('/') + 1);
        p.ctx.test = std::string(name);
      }
      break;
    }
  }
  if (command && !p.log.command) {
    p.log.command = std::string(content.starts_with("$ ") ? content.substr(2) : content);
  }
  return command;
}

// One line of the log, '#' markers and launcher prefixes already taken off.
void read_nccl_tests_line(std::string_view content, bool comment, NcclTestsParse& p) {
  if (read_preamble_line(content, p) || read_table_frame_line(content, p)) return;
  if (comment) return;  // other nccl-tests remarks: "Reducing maxBytes", "GPU memory usage"
  if (p.cols && p.in_rows) {
    if (std::optional<LogRow> row = parse_row(content, *p.cols)) {
      p.block.rows.push_back(std::move(*row));
      return;
    }
  }
  read_nccl_info_version(content, p.log);
  if (read_command_line(content, p)) return;
  ++p.log.skipped_lines;
}

// The log's date: the first row timestamp, as ISO 8601.
void take_date_from_rows(const LogBlock& b, CollectiveLog& log) {
  if (log.date) return;
  for (const LogRow& row : b.rows) {
    if (!row.timestamp.empty()) {
      log.date = row.timestamp.substr(0, 10) + "T" + row.timestamp.substr(11);
      return;
    }
  }
}

}  // namespace

CollectiveLog parse_nccl_tests_log(std::string_view text, std::string_view source,
                                   const ImportHints& hints) {
  CollectiveLog log;
  log.source = std::string(source);
  log.tool = LogTool::nccl_tests;
  NcclTestsParse p{log};

  std::string whole;
  for (const std::string_view raw : split_lines(text)) {
    std::string_view t = trim(strip_launcher_prefix(raw));
    if (splice_launcher_tags(t, whole)) {
      t = trim(whole);
      ++log.spliced_lines;
    }
    if (t.empty()) continue;
    const bool comment = t.front() == '#';
    std::string_view content = t;
    while (!content.empty() && content.front() == '#') content.remove_prefix(1);
    content = trim(content);
    if (content.empty()) continue;
    read_nccl_tests_line(content, comment, p);
  }
  p.finish_block();

  if (p.finished.empty()) {
    throw InputError(std::string(source) +
                     (p.header_seen ? ": an nccl-tests column header but no data rows"
                                    : ": no nccl-tests column header ('size count type ... time "
                                      "algbw busbw') found"));
  }
  for (auto& [b, c] : p.finished) {
    if (log.spliced_lines > 0)
      b.warnings.push_back(std::to_string(log.spliced_lines) +
                           " line(s) carried a launcher's tag in the middle (one rank's output "
                           "forwarded in pieces): read whole without it");
    detail::resolve_nccl_tests_block(b, c, source, hints);
    take_date_from_rows(b, log);
    log.blocks.push_back(std::move(b));
  }
  return log;
}

}  // namespace trainplan::request
