// nccl-tests stdout, every format generation (docs/calibration.md, "Log formats"):
//   1 (2017-2019)  "# bytes N type op time algbw busbw res", time in ms, footers without '#'
//   2 (2019-2022)  "size count type [redop] [root] time algbw busbw error", per-test columns
//   3 (2022-2025)  "size count type redop root time algbw busbw #wrong" for every test
//   4 (2025-)      adds "# nccl-tests version", "Collective test starting/concluded", -S timestamps
// Columns are mapped by the names in the header; a line is a data row only if it has exactly the
// header's number of fields and every numeric field parses, so launcher and library noise (also
// lines that begin with a digit) is skipped.

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "collective_log_detail.hpp"
#include "log_text.hpp"
#include "trainplan/calibration/fit.hpp"
#include "trainplan/calibration/profile_fit.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/request/collective_log.hpp"
#include "trainplan/request/files.hpp"
#include "trainplan/request/json_util.hpp"

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

struct RankInfo {
  std::string host;
  std::string gpu;
};

// "Rank  0 Group  0 Pid  54740 on     thanos device  0 [0x07] NVIDIA A100-SXM4-80GB"
// (no Group before 2022, no Pid in 2017).
std::optional<std::pair<int, RankInfo>> parse_rank_line(std::string_view content) {
  const std::vector<std::string_view> toks = split_ws(content);
  if (toks.size() < 6 || toks[0] != "Rank") return std::nullopt;
  const std::optional<std::int64_t> rank = to_int(toks[1]);
  const auto on = std::find(toks.begin(), toks.end(), "on");
  if (!rank || on == toks.end() || on + 1 == toks.end()) return std::nullopt;
  RankInfo info;
  info.host = std::string(*(on + 1));
  const std::size_t device = content.find(" device ");
  if (device == std::string_view::npos) return std::nullopt;
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

struct Context {
  std::string test;
  std::map<int, RankInfo> ranks;
  int generation = 0;  // 4 once a version, starting or unalign line was seen
};

void resolve_block(LogBlock& block, const Context& ctx, std::string_view source,
                   const ImportHints& hints) {
  const std::string src(source);
  const std::optional<double> ratio = detail::bandwidth_ratio(block);

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

  if (hints.ranks) {
    block.ranks = *hints.ranks;
  } else if (!ctx.ranks.empty()) {
    block.ranks = static_cast<int>(ctx.ranks.size());
  } else if (const std::optional<int> n =
                 ratio ? detail::ranks_from_ratio(*collective, *ratio) : std::nullopt) {
    block.ranks = *n;
  } else {
    throw InputError(src + ": cannot tell how many ranks ran (no '# Rank' lines); pass --ranks");
  }
  for (const auto& [rank, info] : ctx.ranks) {
    if (std::find(block.hosts.begin(), block.hosts.end(), info.host) == block.hosts.end()) {
      block.hosts.push_back(info.host);
    }
    if (!info.gpu.empty() && block.gpu.find(info.gpu) == std::string::npos) {
      block.gpu += (block.gpu.empty() ? "" : ", ") + info.gpu;
    }
  }
  std::optional<int> known_nodes = hints.nodes;
  if (!known_nodes && !block.hosts.empty()) known_nodes = static_cast<int>(block.hosts.size());
  detail::settle_nodes(block, known_nodes, hints, ratio, source);
}

}  // namespace

namespace detail {

std::optional<double> bandwidth_ratio(const LogBlock& block) {
  std::vector<double> ratios;
  for (const LogRow& row : block.rows) {
    for (const auto& t : {row.out_of_place, row.in_place}) {
      if (t && t->valid() && t->algbw_GBps >= 1.0) ratios.push_back(t->busbw_GBps / t->algbw_GBps);
    }
  }
  if (ratios.empty()) return std::nullopt;
  return calibration::median(std::move(ratios));
}

std::optional<int> ranks_from_ratio(Collective c, double ratio) {
  double n = 0.0;
  switch (c) {
    case Collective::all_reduce:
      if (ratio >= 2.0) return std::nullopt;
      n = 2.0 / (2.0 - ratio);
      break;
    case Collective::all_gather:
    case Collective::reduce_scatter:
    case Collective::all_to_all:
      if (ratio >= 1.0) return std::nullopt;
      n = 1.0 / (1.0 - ratio);
      break;
    case Collective::broadcast:
    case Collective::send_recv: return std::nullopt;
  }
  const long rounded = std::lround(n);
  if (rounded < 2) return std::nullopt;
  return static_cast<int>(rounded);
}

void check_bus_factor(const LogBlock& block, std::optional<double> ratio, std::string_view source) {
  // nccl-tests prints busbw = algbw * factor(n): a different ratio means the collective or the
  // rank count is not what we think (e.g. NCCL_TESTS_SPLIT groups).
  if (!ratio) return;
  const double factor = hardware::bus_factor(block.collective, block.ranks);
  if (factor > 0.0 && std::abs(*ratio / factor - 1.0) > 0.02) {
    throw InputError(std::string(source) + ": busbw/algbw is " + std::to_string(*ratio) +
                     " in this log, but " + std::string(to_string(block.collective)) + " over " +
                     std::to_string(block.ranks) + " ranks has bus factor " +
                     std::to_string(factor) + "; pass --collective or --ranks");
  }
}

void settle_nodes(LogBlock& block, std::optional<int> known, const ImportHints& hints,
                  std::optional<double> ratio, std::string_view source) {
  if (known) {
    block.nodes = *known;
  } else {
    const int per_node = std::max(1, hints.gpus_per_node_if_unknown);
    block.nodes = (block.ranks + per_node - 1) / per_node;
    block.nodes_assumed = true;
  }
  if (block.ranks < 1 || block.nodes < 1 || block.nodes > block.ranks) {
    throw InputError(std::string(source) + ": " + std::to_string(block.ranks) + " ranks on " +
                     std::to_string(block.nodes) + " nodes is not a possible job");
  }
  check_bus_factor(block, ratio, source);
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
  Context ctx;
  Context block_ctx;
  std::optional<Columns> cols;
  LogBlock block;
  bool block_open = false;
  bool in_rows = false;
  bool header_seen = false;
  std::vector<std::pair<LogBlock, Context>> finished;

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
      ctx = Context{};
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

  for (const std::string_view raw : split_lines(text)) {
    const std::string_view t = trim(strip_launcher_prefix(raw));
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
    resolve_block(b, c, source, hints);
    take_date_from_rows(b, log);
    log.blocks.push_back(std::move(b));
  }
  return log;
}

CollectiveLog parse_nccl_tests_json(std::string_view text, std::string_view source,
                                    const ImportHints& hints) {
  const std::string src(source);
  const Json doc = parse_json(text, src);
  ObjectReader top(doc, src);
  const std::int64_t version = top.integer("version", 1);
  if (version != 2)
    throw InputError(src + ": nccl-tests JSON version " + std::to_string(version) +
                     " (this reader knows version 2, nccl-tests src/util.cu)");
  if (!top.has("results") || !top.raw("results").is_array())
    throw InputError(src + ": no 'results' list: the run ended before its first size, or this is "
                           "not an nccl-tests -J report");

  CollectiveLog log;
  log.source = src;
  log.tool = LogTool::nccl_tests;
  Context ctx;
  ctx.generation = 4;
  if (top.has("args") && top.raw("args").is_array() && !top.raw("args").empty()) {
    std::string command;
    for (const Json& a : top.raw("args")) {
      if (!a.is_string()) continue;
      command += (command.empty() ? "" : " ") + a.get<std::string>();
    }
    log.command = command;
    const Json& program = top.raw("args").front();
    if (program.is_string()) {
      if (const TestBinary* b = binary_named(program.get<std::string>())) ctx.test = std::string(b->name);
    }
  }
  if (const auto code = top.optional_integer("nccl_version", 0); code && *code > 0)
    log.nccl = nccl_version_string(static_cast<long>(*code));
  if (const auto start = top.optional_string("start_time"); start && start->size() == 19)
    log.date = start->substr(0, 10) + "T" + start->substr(11);

  // The devices list holds one line per process (its first rank); each process drives
  // nthreads x ngpus ranks, numbered from that rank, on its host.
  if (top.has("config")) {
    ObjectReader config(top.raw("config"), src + ": config");
    const std::int64_t per_process =
        config.integer("nthreads", 1) * config.integer("ngpus", 1);
    if (config.has("devices") && config.raw("devices").is_array()) {
      for (const Json& d : config.raw("devices")) {
        ObjectReader dev(d, src + ": config.devices");
        const std::int64_t first = dev.integer("rank", 0);
        RankInfo info;
        info.host = dev.optional_string("hostname").value_or("");
        info.gpu = dev.optional_string("device_info").value_or("");
        for (std::int64_t i = 0; i < per_process; ++i) ctx.ranks[static_cast<int>(first + i)] = info;
      }
    }
  }

  LogBlock block;
  block.format_generation = 4;
  block.footer = top.has("average_bus_bandwidth");
  // A timing group: time (or cpu_time) in us, algbw and busbw in GB/s, nwrong (null: not checked).
  // The writer prints "nan" as a string; such a group is dropped.
  auto timing = [&](const Json& g, const std::string& where) -> std::optional<TimingColumns> {
    if (g.is_null()) return std::nullopt;
    ObjectReader r(g, where);
    const char* time_key = r.has("cpu_time") ? "cpu_time" : "time";
    const Json& time = r.raw(time_key);
    const Json& alg = r.raw("alg_bw");
    const Json& bus = r.raw("bus_bw");
    if (!time.is_number() || !alg.is_number() || !bus.is_number()) return std::nullopt;
    TimingColumns t;
    t.time_us = time.get<double>();
    t.algbw_GBps = alg.get<double>();
    t.busbw_GBps = bus.get<double>();
    t.wrong = r.optional_number("nwrong");
    return t;
  };
  std::size_t index = 0;
  for (const Json& item : top.raw("results")) {
    const std::string where = src + ": results[" + std::to_string(index++) + "]";
    ObjectReader r(item, where);
    LogRow row;
    row.bytes = r.integer("size", 0);
    row.count = r.integer("count", 0);
    row.dtype = r.optional_string("type").value_or("");
    row.redop = r.optional_string("redop").value_or("");
    if (const auto root = r.optional_string("root")) {
      if (const auto v = to_int(trim(*root)); v && *v >= 0) row.root = static_cast<int>(*v);
    }
    if (r.has("out_of_place")) row.out_of_place = timing(r.raw("out_of_place"), where + ".out_of_place");
    if (r.has("in_place")) row.in_place = timing(r.raw("in_place"), where + ".in_place");
    if (row.out_of_place || row.in_place) block.rows.push_back(std::move(row));
  }
  if (block.rows.empty()) throw InputError(src + ": the nccl-tests JSON report has no timed results");
  resolve_block(block, ctx, source, hints);
  log.blocks.push_back(std::move(block));
  return log;
}

CollectiveLog parse_collective_log(std::string_view text, std::string_view source,
                                   const ImportHints& hints) {
  if (trim(text).empty() || text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    throw InputError(std::string(source) + ": the file is empty");
  }
  if (const std::size_t first = text.find_first_not_of(" \t\r\n\xEF\xBB\xBF");
      first != std::string_view::npos && text[first] == '{')
    return parse_nccl_tests_json(text.substr(first), source, hints);
  bool nccl_tests = false;
  bool all_reduce_bench = false;
  for (const std::string_view raw : split_lines(text)) {
    std::string_view content = trim(strip_launcher_prefix(raw));
    while (!content.empty() && content.front() == '#') content.remove_prefix(1);
    if (parse_header(content)) nccl_tests = true;
    const std::string l = lower(content);
    if ((l.starts_with("|") && l.find("payload") != std::string::npos &&
         l.find("busbw") != std::string::npos) ||
        l.find("the average bandwidth of all_reduce") != std::string::npos) {
      all_reduce_bench = true;
    }
  }
  if (nccl_tests) return parse_nccl_tests_log(text, source, hints);
  if (all_reduce_bench) return parse_all_reduce_bench_log(text, source, hints);
  throw InputError(std::string(source) +
                   ": not a log of a known tool (expected nccl-tests output with a 'size count "
                   "type ... time algbw busbw' header, or an all_reduce_bench.py table)");
}

CollectiveLog read_collective_log(const std::filesystem::path& path, const ImportHints& hints) {
  const std::string text = read_text_file(path.string(), "benchmark log");
  return parse_collective_log(text, path.string(), hints);
}

std::vector<calibration::CollectiveMeasurement> to_measurements(const CollectiveLog& log) {
  std::vector<calibration::CollectiveMeasurement> out;
  for (const LogBlock& block : log.blocks) {
    for (const LogRow& row : block.rows) {
      for (const bool in_place : {false, true}) {
        const std::optional<TimingColumns>& t = in_place ? row.in_place : row.out_of_place;
        if (!t) continue;
        calibration::CollectiveMeasurement m;
        m.collective = block.collective;
        m.scope =
            block.nodes == 1 ? hardware::LinkScope::intra_node : hardware::LinkScope::inter_node;
        m.ranks = block.ranks;
        m.nodes = block.nodes;
        m.dtype = row.dtype;
        m.bytes = Bytes(static_cast<double>(row.bytes));
        m.time = Seconds(t->time_us * 1e-6);
        m.algbw = gbps(t->algbw_GBps);
        m.busbw = gbps(t->busbw_GBps);
        m.in_place = in_place;
        m.valid = t->valid() && t->time_us > 0.0;
        out.push_back(std::move(m));
      }
    }
  }
  return out;
}

hardware::RunProvenance provenance_of(const CollectiveLog& log) {
  hardware::RunProvenance p;
  p.tool = std::string(to_string(log.tool));
  bool nodes_known = true;
  for (const LogBlock& b : log.blocks) {
    if (!b.gpu.empty() && (!p.gpu || p.gpu->find(b.gpu) == std::string::npos)) {
      p.gpu = p.gpu ? *p.gpu + ", " + b.gpu : b.gpu;
    }
    p.ranks = std::max(p.ranks.value_or(0), b.ranks);
    if (b.nodes_assumed) nodes_known = false;
    p.nodes = std::max(p.nodes.value_or(0), b.nodes);
    for (const std::string& h : b.hosts) {
      if (std::find(p.hosts.begin(), p.hosts.end(), h) == p.hosts.end()) p.hosts.push_back(h);
    }
  }
  if (!nodes_known) p.nodes.reset();
  p.gpu_count = p.ranks;
  p.nccl = log.nccl;
  p.cuda = log.cuda;
  p.command = log.command;
  p.date = log.date;
  p.sources.push_back(std::filesystem::path(log.source).filename().string());
  return p;
}

calibration::Run imported_run(std::span<const CollectiveLog> logs, std::string name) {
  calibration::Run run;
  run.name = std::move(name);
  std::vector<hardware::RunProvenance> provenances;
  for (const CollectiveLog& log : logs) {
    provenances.push_back(provenance_of(log));
    std::vector<calibration::CollectiveMeasurement> m = to_measurements(log);
    run.measurements.collectives.insert(run.measurements.collectives.end(),
                                        std::make_move_iterator(m.begin()),
                                        std::make_move_iterator(m.end()));
  }
  run.provenance = calibration::merge_provenance(provenances);
  return run;
}

}  // namespace trainplan::request
