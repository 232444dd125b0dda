#pragma once
// Checks shared by the benchmark-log parsers (private to trainplan_io).

#include <optional>

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

}  // namespace trainplan::request::detail
