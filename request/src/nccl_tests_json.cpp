// nccl-tests' JSON report (-J FILE, nccl-tests 2.17 on; src/util.cu, "version": 2): the rows of its
// stdout with the command line, the NCCL version, the start time and the devices of each process
// (docs/calibration.md, "nccl-tests output").

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "collective_log_detail.hpp"
#include "log_text.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/request/collective_log.hpp"
#include "trainplan/request/json_util.hpp"

namespace trainplan::request {
namespace {

using namespace log_text;

void check_report(ObjectReader& top, const std::string& src) {
  const std::int64_t version = top.integer("version", 1);
  if (version != 2)
    throw InputError(src + ": nccl-tests JSON version " + std::to_string(version) +
                     " (this reader knows version 2, nccl-tests src/util.cu)");
  if (!top.has("results") || !top.raw("results").is_array())
    throw InputError(src + ": no 'results' list: the run ended before its first size, or this is "
                           "not an nccl-tests -J report");
}

// The command line from args, and the test from its program.
void read_program(ObjectReader& top, CollectiveLog& log, detail::RunContext& ctx) {
  if (!top.has("args") || !top.raw("args").is_array() || top.raw("args").empty()) return;
  std::string command;
  for (const Json& a : top.raw("args")) {
    if (!a.is_string()) continue;
    command += (command.empty() ? "" : " ") + a.get<std::string>();
  }
  log.command = command;
  const Json& program = top.raw("args").front();
  if (program.is_string()) {
    const std::optional<std::string_view> name = detail::nccl_tests_binary(program.get<std::string>());
    if (name) ctx.test = std::string(*name);
  }
}

// The devices list holds one line per process (its first rank); each process drives
// nthreads x ngpus ranks, numbered from that rank, on its host.
void read_devices(ObjectReader& top, const std::string& src, detail::RunContext& ctx) {
  if (!top.has("config")) return;
  ObjectReader config(top.raw("config"), src + ": config");
  const std::int64_t per_process = config.integer("nthreads", 1) * config.integer("ngpus", 1);
  if (!config.has("devices") || !config.raw("devices").is_array()) return;
  for (const Json& d : config.raw("devices")) {
    ObjectReader dev(d, src + ": config.devices");
    const std::int64_t first = dev.integer("rank", 0);
    detail::RankInfo info;
    info.host = dev.optional_string("hostname").value_or("");
    info.gpu = dev.optional_string("device_info").value_or("");
    for (std::int64_t i = 0; i < per_process; ++i) ctx.ranks[static_cast<int>(first + i)] = info;
  }
}

// A timing group: time (or cpu_time) in us, algbw and busbw in GB/s, nwrong (null: not checked).
// The writer prints "nan" as a string; such a group is dropped.
[[nodiscard]] std::optional<TimingColumns> timing_group(const Json& g, const std::string& where) {
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
}

[[nodiscard]] LogRow result_row(const Json& item, const std::string& where) {
  ObjectReader r(item, where);
  LogRow row;
  row.bytes = r.integer("size", 0);
  row.count = r.integer("count", 0);
  row.dtype = r.optional_string("type").value_or("");
  row.redop = r.optional_string("redop").value_or("");
  if (const auto root = r.optional_string("root")) {
    if (const auto v = to_int(trim(*root)); v && *v >= 0) row.root = static_cast<int>(*v);
  }
  if (r.has("out_of_place")) row.out_of_place = timing_group(r.raw("out_of_place"), where + ".out_of_place");
  if (r.has("in_place")) row.in_place = timing_group(r.raw("in_place"), where + ".in_place");
  return row;
}

}  // namespace

CollectiveLog parse_nccl_tests_json(std::string_view text, std::string_view source,
                                    const ImportHints& hints) {
  const std::string src(source);
  const Json doc = parse_json(text, src);
  ObjectReader top(doc, src);
  check_report(top, src);

  CollectiveLog log;
  log.source = src;
  log.tool = LogTool::nccl_tests;
  detail::RunContext ctx;
  ctx.generation = 4;
  read_program(top, log, ctx);
  if (const auto code = top.optional_integer("nccl_version", 0); code && *code > 0)
    log.nccl = nccl_version_string(static_cast<long>(*code));
  if (const auto start = top.optional_string("start_time"); start && start->size() == 19)
    log.date = start->substr(0, 10) + "T" + start->substr(11);
  read_devices(top, src, ctx);

  LogBlock block;
  block.format_generation = 4;
  block.footer = top.has("average_bus_bandwidth");
  std::size_t index = 0;
  for (const Json& item : top.raw("results")) {
    LogRow row = result_row(item, src + ": results[" + std::to_string(index++) + "]");
    if (row.out_of_place || row.in_place) block.rows.push_back(std::move(row));
  }
  if (block.rows.empty()) throw InputError(src + ": the nccl-tests JSON report has no timed results");
  detail::resolve_nccl_tests_block(block, ctx, source, hints);
  log.blocks.push_back(std::move(block));
  return log;
}

}  // namespace trainplan::request
