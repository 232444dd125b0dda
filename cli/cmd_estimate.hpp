#pragma once
// trainplan estimate: one fully specified configuration, its memory, step time and communication.

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>

#include "options.hpp"
#include "trainplan/hardware/profile.hpp"
#include "trainplan/io/catalog.hpp"
#include "trainplan/planner/evaluator.hpp"

namespace trainplan::cli {

void setup_estimate(CLI::App& app, const io::Catalog& catalog);

// Shared with plan: the --profile file (InputError naming the file when it does not parse), the
// --tokens count, the options beyond model::Training, and the global batch in sequences.
[[nodiscard]] std::optional<hardware::HardwareProfile> load_profile(const TrainingOptions& o);
[[nodiscard]] std::optional<double> token_count(const TrainingOptions& o);
[[nodiscard]] planner::EstimateOptions estimate_options(const TrainingOptions& o);
[[nodiscard]] std::optional<std::int64_t> global_batch_sequences(const TrainingOptions& o,
                                                                 std::int64_t seq);
[[nodiscard]] std::string duration_text(Seconds s);
// Prints the --emit text of the plan to stdout and its notes to stderr.
void print_emitted(const TrainingOptions& o, const planner::Estimate& e, const hardware::Cluster& c,
                   const model::Architecture& a);

}  // namespace trainplan::cli
