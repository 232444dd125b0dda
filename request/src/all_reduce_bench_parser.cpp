// Output of ml-engineering's network/benchmarks/all_reduce_bench.py (torch.distributed, fp32,
// in-place all_reduce, blocking per call): a markdown table
//   | payload |    busbw   |    algbw   |
//   |   32KiB |   0.92GBps |   0.48GBps |
// with payloads in powers of two (KiB..GiB; older versions wrote KB/MB/GB for the same), GBps =
// 10^9 B/s, and since 2024 "Environment" lines and "over N ranks". Its first version printed one
// payload: "The average bandwidth of all_reduce with a 4.0GB payload (5 trials, 16 ranks):" then
// "algbw: X GBps (...)" and "busbw: Y GBps (...)". The time is not printed: t = size / algbw.

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "collective_log_detail.hpp"
#include "log_text.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/request/collective_log.hpp"

namespace trainplan::request {
namespace {

using namespace log_text;

// "32KiB", "4.0GB", "16GiB", "512B" -> bytes (binary prefixes, as the script formats them).
std::optional<std::int64_t> parse_payload(std::string_view s) {
  s = trim(s);
  std::size_t end = 0;
  while (end < s.size() && (is_digit(s[end]) || s[end] == '.')) ++end;
  const std::optional<double> number = to_double(s.substr(0, end));
  if (!number) return std::nullopt;
  const std::string unit = lower(trim(s.substr(end)));
  double scale = 0.0;
  if (unit.empty() || unit == "b" || unit == "ib") {
    scale = 1.0;
  } else {
    const std::string rest = unit.substr(1);
    if (rest != "" && rest != "b" && rest != "ib") return std::nullopt;
    switch (unit.front()) {
      case 'k': scale = 1024.0; break;
      case 'm': scale = 1024.0 * 1024.0; break;
      case 'g': scale = 1024.0 * 1024.0 * 1024.0; break;
      case 't': scale = 1024.0 * 1024.0 * 1024.0 * 1024.0; break;
      default: return std::nullopt;
    }
  }
  return static_cast<std::int64_t>(std::llround(*number * scale));
}

// "0.92GBps" or "0.92 GBps" -> 0.92.
std::optional<double> parse_gbps(std::string_view s) {
  s = trim(s);
  const std::size_t unit = s.find("GBps");
  if (unit == std::string_view::npos) return std::nullopt;
  return to_double(trim(s.substr(0, unit)));
}

std::vector<std::string_view> table_cells(std::string_view line) {
  std::vector<std::string_view> cells;
  std::size_t start = line.find('|');
  while (start != std::string_view::npos) {
    const std::size_t next = line.find('|', start + 1);
    if (next == std::string_view::npos) break;
    cells.push_back(trim(line.substr(start + 1, next - start - 1)));
    start = next;
  }
  return cells;
}

// The integer right after `key` ("--nnodes 4", "--nnodes=4"); nullopt if absent or not a number.
std::optional<int> flag_value(const std::vector<std::string_view>& toks, std::string_view key,
                              bool& present) {
  for (std::size_t i = 0; i < toks.size(); ++i) {
    if (toks[i] == key && i + 1 < toks.size()) {
      present = true;
      if (const auto v = to_int(toks[i + 1])) return static_cast<int>(*v);
      return std::nullopt;
    }
    if (toks[i].starts_with(key) && toks[i].size() > key.size() && toks[i][key.size()] == '=') {
      present = true;
      if (const auto v = to_int(toks[i].substr(key.size() + 1))) return static_cast<int>(*v);
      return std::nullopt;
    }
  }
  return std::nullopt;
}

// "2.27.7" from "(2, 27, 7)", "2.27.7" or a version code.
std::string nccl_from_torch(std::string_view s) {
  s = trim(s);
  if (!s.empty() && s.front() == '(') {
    std::string out;
    for (const std::string_view part : split_ws(s.substr(1, s.find(')') - 1))) {
      std::string_view p = part;
      if (!p.empty() && p.back() == ',') p.remove_suffix(1);
      if (!out.empty()) out += '.';
      out.append(p);
    }
    return out;
  }
  if (const auto code = to_int(s)) return nccl_version_string(static_cast<long>(*code));
  return std::string(s);
}

std::string value_after(std::string_view line, std::string_view key) {
  const std::size_t at = line.find(key);
  if (at == std::string_view::npos) return {};
  std::string_view rest = line.substr(at + key.size());
  if (!rest.empty() && rest.front() == '(') return std::string(rest.substr(0, rest.find(')') + 1));
  return std::string(trim(rest.substr(0, rest.find(','))));
}

// What the lines of one all_reduce_bench log have said so far.
struct BenchState {
  LogBlock block;
  std::optional<int> ranks_said;
  std::optional<int> nproc;
  std::optional<int> nnodes;
  bool nnodes_flag = false;
  bool launcher = false;
  int payload_col = -1;
  int busbw_col = -1;
  int algbw_col = -1;
  std::optional<std::int64_t> single_bytes;
  std::optional<double> single_algbw;
  std::optional<double> single_busbw;
};

void add_row(LogBlock& block, std::int64_t bytes, double busbw, double algbw) {
  LogRow row;
  row.bytes = bytes;
  row.count = bytes / 4;
  row.dtype = "float";  // the script all-reduces an fp32 tensor
  row.redop = "sum";
  TimingColumns t;
  t.algbw_GBps = algbw;
  t.busbw_GBps = busbw;
  t.time_us = algbw > 0.0 ? static_cast<double>(bytes) / (algbw * 1e3) : 0.0;
  row.in_place = t;  // torch.distributed.all_reduce works in place
  block.rows.push_back(std::move(row));
}

// A header row names the payload, busbw and algbw columns; returns whether it was one.
bool read_table_header(const std::vector<std::string_view>& cells, BenchState& st) {
  bool header = false;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const std::string c = lower(cells[i]);
    if (c == "payload" || c == "busbw" || c == "algbw") header = true;
  }
  if (!header) return false;
  st.payload_col = st.busbw_col = st.algbw_col = -1;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const std::string c = lower(cells[i]);
    if (c == "payload") st.payload_col = static_cast<int>(i);
    if (c == "busbw") st.busbw_col = static_cast<int>(i);
    if (c == "algbw") st.algbw_col = static_cast<int>(i);
  }
  return true;
}

// One line of a "| payload | busbw | algbw |" table.
void read_table_line(std::string_view t, BenchState& st, CollectiveLog& log) {
  const std::vector<std::string_view> cells = table_cells(t);
  if (read_table_header(cells, st)) return;
  bool separator = true;
  for (const std::string_view c : cells) {
    separator = separator && c.find_first_not_of("-: ") == std::string_view::npos;
  }
  if (separator) return;
  // Rows of a --profile_stability table have no payload column: one size, per iteration.
  if (st.payload_col >= 0 && st.busbw_col >= 0 && st.algbw_col >= 0 &&
      static_cast<int>(cells.size()) > std::max({st.payload_col, st.busbw_col, st.algbw_col})) {
    const auto bytes = parse_payload(cells[static_cast<std::size_t>(st.payload_col)]);
    const auto busbw = parse_gbps(cells[static_cast<std::size_t>(st.busbw_col)]);
    const auto algbw = parse_gbps(cells[static_cast<std::size_t>(st.algbw_col)]);
    if (bytes && busbw && algbw) {
      add_row(st.block, *bytes, *busbw, *algbw);
      return;
    }
  }
  if (st.payload_col < 0) return;
  ++log.skipped_lines;
}

// "The average bandwidth of all_reduce with a 4GiB payload (5 trials, 16 ranks):".
void read_average_line(std::string_view t, const std::string& l, BenchState& st) {
  const std::vector<std::string_view> toks = split_ws(t);
  for (std::size_t i = 1; i < toks.size(); ++i) {
    std::string_view word = toks[i];
    while (!word.empty() && (word.back() == ')' || word.back() == ':' || word.back() == ',')) {
      word.remove_suffix(1);
    }
    if (word == "ranks") {
      std::string_view n = toks[i - 1];
      if (!n.empty() && n.front() == '(') n.remove_prefix(1);
      if (const auto v = to_int(n)) st.ranks_said = static_cast<int>(*v);
    }
    if (word == "payload" && toks[i - 1] != "a" && l.find("with a ") != std::string::npos) {
      st.single_bytes = parse_payload(toks[i - 1]);
    }
  }
}

// The command line that started the benchmark, directly or through torchrun.
void read_launch_line(std::string_view t, const std::string& l, BenchState& st,
                      CollectiveLog& log) {
  const std::vector<std::string_view> toks = split_ws(t);
  st.launcher = st.launcher || l.find("torch.distributed.run") != std::string::npos ||
                l.find("torchrun") != std::string::npos;
  bool present = false;
  if (auto v = flag_value(toks, "--nproc_per_node", present)) st.nproc = v;
  if (auto v = flag_value(toks, "--nproc-per-node", present)) st.nproc = v;
  if (auto v = flag_value(toks, "--nnodes", st.nnodes_flag)) st.nnodes = v;
  if (!log.command) log.command = std::string(t.starts_with("$ ") ? t.substr(2) : t);
}

// Lines that carry nothing to read: banners, legends and "  32KiB: 3" progress lines.
bool is_noise_line(std::string_view t, const std::string& l) {
  if (l.starts_with("environment:") || l.starts_with("legend:") || l.starts_with("1gbps") ||
      l.starts_with("elapsed time") || l.starts_with("***") || l.starts_with("!!!")) {
    return true;
  }
  const std::size_t colon = t.find(':');
  return colon != std::string_view::npos && parse_payload(t.substr(0, colon)) &&
         to_int(trim(t.substr(colon + 1)));
}

// One line outside the payload table.
void read_text_line(std::string_view t, BenchState& st, CollectiveLog& log) {
  const std::string l = lower(t);
  if (l.starts_with("the average bandwidth of all_reduce") ||
      l.find("payload bandwidth of all_reduce") != std::string::npos) {
    read_average_line(t, l, st);
    return;
  }
  if (l.starts_with("algbw:") || l.starts_with("busbw:")) {
    const std::optional<double> v = parse_gbps(t.substr(
        6, t.find('(') == std::string_view::npos ? std::string_view::npos : t.find('(') - 6));
    (l.starts_with("algbw:") ? st.single_algbw : st.single_busbw) = v;
    return;
  }
  if (l.starts_with("- software:")) {
    const std::string cuda = value_after(t, "cuda=");
    const std::string nccl = value_after(t, "nccl=");
    if (!cuda.empty() && cuda != "None") log.cuda = cuda;
    if (!nccl.empty()) log.nccl = nccl_from_torch(nccl);
    return;
  }
  if (l.starts_with("- hardware:")) {
    const std::size_t at = t.find("name='");
    if (at != std::string_view::npos) {
      const std::size_t end = t.find('\'', at + 6);
      st.block.gpu = std::string(t.substr(at + 6, end - at - 6));
    }
    return;
  }
  if (l.find("all_reduce_bench") != std::string::npos ||
      l.find("torch.distributed.run") != std::string::npos ||
      l.find("torchrun") != std::string::npos) {
    read_launch_line(t, l, st, log);
    return;
  }
  if (is_noise_line(t, l)) return;
  ++log.skipped_lines;
}

// Ranks from the hints, the log's own words, the launcher's flags, or the busbw/algbw ratio.
void settle_ranks(BenchState& st, const std::optional<double>& ratio, const ImportHints& hints,
                  const std::string& src) {
  LogBlock& block = st.block;
  if (hints.ranks) {
    block.ranks = *hints.ranks;
  } else if (st.ranks_said) {
    block.ranks = *st.ranks_said;
  } else if (st.nproc && (st.nnodes || (st.launcher && !st.nnodes_flag))) {
    block.ranks = *st.nproc * st.nnodes.value_or(1);
  } else if (const auto n =
                 ratio ? detail::ranks_from_ratio(block.collective, *ratio) : std::nullopt) {
    block.ranks = *n;
  } else {
    throw InputError(src + ": cannot tell how many ranks ran; pass --ranks");
  }
}

}  // namespace

CollectiveLog parse_all_reduce_bench_log(std::string_view text, std::string_view source,
                                         const ImportHints& hints) {
  const std::string src(source);
  CollectiveLog log;
  log.source = src;
  log.tool = LogTool::all_reduce_bench;
  BenchState st;
  st.block.collective = hardware::Collective::all_reduce;
  st.block.test = "all_reduce_bench";

  for (const std::string_view raw : split_lines(text)) {
    const std::string_view t = trim(strip_launcher_prefix(raw));
    if (t.empty()) continue;
    if (t.front() == '|') {
      read_table_line(t, st, log);
    } else {
      read_text_line(t, st, log);
    }
  }
  if (st.single_bytes && st.single_algbw && st.single_busbw)
    add_row(st.block, *st.single_bytes, *st.single_busbw, *st.single_algbw);
  if (st.block.rows.empty()) {
    throw InputError(src + ": all_reduce_bench output without a payload table");
  }

  const std::optional<double> ratio = detail::bandwidth_ratio(st.block);
  settle_ranks(st, ratio, hints, src);
  std::optional<int> known_nodes = hints.nodes;
  if (!known_nodes && st.nnodes) known_nodes = *st.nnodes;
  if (!known_nodes && st.launcher && st.nproc && !st.nnodes_flag) {
    known_nodes = 1;  // torchrun's --nnodes defaults to 1
  }
  detail::settle_nodes(st.block, known_nodes, hints, ratio, source);
  log.blocks.push_back(std::move(st.block));
  return log;
}

}  // namespace trainplan::request
