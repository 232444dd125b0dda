#pragma once
// Readers of collective benchmark logs: nccl-tests stdout (all four format generations since 2017)
// and its JSON report, and the markdown tables of ml-engineering's all_reduce_bench.py. The parsers are pure functions
// of the text; read_collective_log() reads the file. Formats and rules: docs/calibration.md.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trainplan/calibration/measurement.hpp"
#include "trainplan/core/enum_table.hpp"
#include "trainplan/hardware/collective.hpp"
#include "trainplan/hardware/profile.hpp"

namespace trainplan::request {

enum class LogTool { nccl_tests, all_reduce_bench };

// What the user knows that a log may not say. Given values replace what the log says.
struct ImportHints {
  std::optional<hardware::Collective> collective;
  std::optional<int> ranks;
  std::optional<int> nodes;
  // When neither the log nor the user says how many nodes ran: ranks / this, rounded up
  // (8 GPUs per node, as in DGX/HGX systems). The block is then marked nodes_assumed.
  int gpus_per_node_if_unknown = 8;
};

// One out-of-place or in-place group of a row, in the log's units (time converted to us).
struct TimingColumns {
  double time_us = 0.0;
  double algbw_GBps = 0.0;
  double busbw_GBps = 0.0;
  std::optional<double> wrong;      // #wrong (2022 on); nullopt when absent or N/A
  std::optional<double> max_error;  // error / res (before 2022); nullopt when absent or N/A
  [[nodiscard]] bool valid() const { return !wrong || *wrong == 0.0; }
};

struct LogRow {
  std::int64_t bytes = 0;  // the `size` column: see trainplan/hardware/collective.hpp
  std::int64_t count = 0;
  std::string dtype;
  std::string redop;
  std::optional<int> root;
  std::optional<TimingColumns> out_of_place;
  std::optional<TimingColumns> in_place;
  std::string timestamp;  // -S, "YYYY-MM-DD HH:MM:SS"
};

// The rows under one column header, with the run they belong to.
struct LogBlock {
  hardware::Collective collective = hardware::Collective::all_reduce;
  std::string test;           // all_reduce_perf, ..., or all_reduce_bench
  int format_generation = 0;  // nccl-tests 1 (2017), 2 (2019), 3 (2022), 4 (2025); 0 otherwise
  int ranks = 0;
  int nodes = 0;
  bool nodes_assumed = false;  // see ImportHints::gpus_per_node_if_unknown
  std::string gpu;             // device names, comma-separated if several
  std::vector<std::string> hosts;
  std::vector<LogRow> rows;
  bool footer = false;  // "Out of bounds values" / "Avg bus bandwidth" seen
  std::vector<std::string> warnings;  // where the log contradicts itself and what was read instead
};

struct CollectiveLog {
  std::string source;  // file name, for messages and provenance
  LogTool tool = LogTool::nccl_tests;
  std::vector<LogBlock> blocks;
  int skipped_lines = 0;  // lines that were neither comments, headers nor data rows
  std::optional<std::string> tool_version;
  std::optional<std::string> nccl;
  std::optional<std::string> cuda;
  std::optional<std::string> command;
  std::optional<std::string> date;  // ISO-8601, from -S timestamps
  int spliced_lines = 0;  // lines a launcher's tag interrupted, read whole (log_text.hpp)
};

// Detects the tool; throws InputError naming `source` when the text is empty, comes from no known
// tool, or says nothing usable.
[[nodiscard]] CollectiveLog parse_collective_log(std::string_view text, std::string_view source,
                                                 const ImportHints& hints = {});
[[nodiscard]] CollectiveLog parse_nccl_tests_log(std::string_view text, std::string_view source,
                                                 const ImportHints& hints = {});
// nccl-tests' JSON report (-J FILE, nccl-tests 2.17 on; src/util.cu, "version": 2): the same rows
// as its stdout, with the command line, NCCL version and devices.
[[nodiscard]] CollectiveLog parse_nccl_tests_json(std::string_view text, std::string_view source,
                                                  const ImportHints& hints = {});
[[nodiscard]] CollectiveLog parse_all_reduce_bench_log(std::string_view text,
                                                       std::string_view source,
                                                       const ImportHints& hints = {});
// Reads and parses a file; the source named in messages is the path as given.
[[nodiscard]] CollectiveLog read_collective_log(const std::filesystem::path& path,
                                                const ImportHints& hints = {});

// One measurement per timing group of every row. Rows with #wrong > 0 are kept, valid = false.
[[nodiscard]] std::vector<calibration::CollectiveMeasurement> to_measurements(
    const CollectiveLog& log);
[[nodiscard]] hardware::RunProvenance provenance_of(const CollectiveLog& log);
// The run that `trainplan calibrate import` writes: every log's measurements, merged provenance.
[[nodiscard]] calibration::Run imported_run(std::span<const CollectiveLog> logs, std::string name);

// "2.28.9" from an NCCL_VERSION_CODE such as 22809 (or 2708 before NCCL 2.9).
[[nodiscard]] std::string nccl_version_string(long code);

}  // namespace trainplan::request

namespace trainplan {
template <>
struct EnumTable<request::LogTool> {
  static constexpr std::string_view kWhat = "log tool";
  static constexpr std::array kEntries{
      std::pair{request::LogTool::nccl_tests, std::string_view{"nccl-tests"}},
      std::pair{request::LogTool::all_reduce_bench, std::string_view{"all_reduce_bench"}}};
};
}  // namespace trainplan
