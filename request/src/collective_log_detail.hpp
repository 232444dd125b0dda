#pragma once
// What the benchmark-log parsers share (private to trainplan_request): the checks of a block's
// ranks, nodes and bus factor (collective_log.cpp), and what the two nccl-tests formats, stdout and
// the -J report, both say about a run (nccl_tests_parser.cpp).

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "trainplan/hardware/collective.hpp"
#include "trainplan/request/collective_log.hpp"

namespace trainplan::request::detail {

// Median of busbw / algbw over valid rows whose algbw has 3 significant digits or more.
[[nodiscard]] std::optional<double> bandwidth_ratio(const LogBlock& block);

// Ranks n implied by busbw / algbw = bus_factor(c, n); nullopt where the factor ignores n.
[[nodiscard]] std::optional<int> ranks_from_ratio(hardware::Collective c, double ratio);

// Throws InputError naming `source` when the printed busbw / algbw contradicts the bus factor of
// the block's collective and rank count (wrong collective, wrong ranks, NCCL_TESTS_SPLIT groups).
void check_bus_factor(const LogBlock& block, std::optional<double> ratio, std::string_view source);

// Sets the block's node count: `known` when the log or the user said it, otherwise ranks over
// hints.gpus_per_node_if_unknown (marked nodes_assumed). Then checks that the job is possible and
// that the printed bandwidths agree with the bus factor (check_bus_factor).
void settle_nodes(LogBlock& block, std::optional<int> known, const ImportHints& hints,
                  std::optional<double> ratio, std::string_view source);

// ---- nccl-tests ---------------------------------------------------------------------------------

struct RankInfo {
  std::string host;
  std::string gpu;
  int device = -1;  // the GPU's index on its host ("device 3"), -1 if not printed
};

// What an nccl-tests run said about itself before its rows: the test binary, one entry per rank.
struct RunContext {
  std::string test;
  std::map<int, RankInfo> ranks;
  int generation = 0;  // 4 once a version, starting or unalign line was seen
};

// The nccl-tests binary a command-line token names ("./build/all_reduce_perf", "all_reduce_perf"):
// its name, or nullopt when the token names none.
[[nodiscard]] std::optional<std::string_view> nccl_tests_binary(std::string_view token);

// Whether a line, '#' markers and launcher prefixes taken off, is an nccl-tests column header.
[[nodiscard]] bool is_nccl_tests_header(std::string_view content);

// The block's collective (hints, the run's test, the file name, the bandwidth ratio), test name,
// ranks, hosts, GPU and nodes; throws InputError naming `source` where the log does not say and the
// hints do not either, or where it names a collective trainplan does not model.
void resolve_nccl_tests_block(LogBlock& block, const RunContext& ctx, std::string_view source,
                              const ImportHints& hints);

}  // namespace trainplan::request::detail
