// What the collective-log readers share: which tool wrote a log, the checks of a block's ranks,
// nodes and bus factor, and the measurements and provenance of parsed logs. The formats are read
// in nccl_tests_parser.cpp (stdout), nccl_tests_json.cpp (-J reports) and
// all_reduce_bench_parser.cpp.

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "collective_log_detail.hpp"
#include "log_text.hpp"
#include "trainplan/calibration/fit.hpp"
#include "trainplan/calibration/profile_fit.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/request/collective_log.hpp"
#include "trainplan/request/files.hpp"

namespace trainplan::request {
namespace {

using hardware::Collective;
using namespace log_text;

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
    if (detail::is_nccl_tests_header(content)) nccl_tests = true;
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
