#pragma once
// Checks shared by the benchmark-log parsers (private to trainplan_io).

#include <optional>

#include "trainplan/hardware/collective.hpp"
#include "trainplan/io/collective_log.hpp"

namespace trainplan::io::detail {

// Median of busbw / algbw over valid rows whose algbw has 3 significant digits or more.
[[nodiscard]] std::optional<double> bandwidth_ratio(const LogBlock& block);

// Ranks n implied by busbw / algbw = bus_factor(c, n); nullopt where the factor ignores n.
[[nodiscard]] std::optional<int> ranks_from_ratio(hardware::Collective c, double ratio);

// Throws InputError naming `source` when the printed busbw / algbw contradicts the bus factor of
// the block's collective and rank count (wrong collective, wrong ranks, NCCL_TESTS_SPLIT groups).
void check_bus_factor(const LogBlock& block, std::optional<double> ratio, std::string_view source);

}  // namespace trainplan::io::detail
