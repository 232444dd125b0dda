#pragma once
// Text for people: names, counts and sizes as the tables print them, and fixed-width tables.

#include <cstdint>
#include <string>
#include <vector>

#include "trainplan/core/modes.hpp"
#include "trainplan/core/units.hpp"
#include "trainplan/hardware/gpu.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/model/training.hpp"
#include "trainplan/planner/memory.hpp"

namespace trainplan::reports {

[[nodiscard]] std::string strategy_label(Strategy s);
[[nodiscard]] std::string strategy_label(const model::Training& t);  // with FSDP2 said (model::strategy_name)
[[nodiscard]] std::string gib_text(Bytes b);                  // "52.3"
// A size with its binary unit, for both front ends: "1.25 GiB", "12.4 GiB", "140 GiB", "512.0 MiB",
// "3.0 KiB", "17 B".
[[nodiscard]] std::string bytes_text(Bytes b);
// A rate rounded to the nearest whole one, as every table prints it (never truncated).
[[nodiscard]] std::int64_t whole(double rate);
[[nodiscard]] std::string count_text(std::int64_t n);         // "13.0B", "124.4M"
[[nodiscard]] std::string thousands(std::int64_t n);          // "13,015,864,320"
// What every answer opens with, in one wording for the CLI and the GUI: the model,
// "llama-2-13b (13.0B params, full)", and the cluster, "8x A100-80GB", over several nodes
// "16x H100-80GB (2 nodes x 8)".
[[nodiscard]] std::string model_words(const model::Architecture& a, const model::ParameterCounts& n,
                                      const model::Training& t);
[[nodiscard]] std::string cluster_words(const hardware::Cluster& c);
// "fits", "tight — <reason>", "does not fit — <reason>" (reports::verdict_look's words)
[[nodiscard]] std::string verdict_text(const planner::MemoryVerdict& v);

// Left-aligned first column, right-aligned others, two spaces between columns.
class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  [[nodiscard]] std::string render() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace trainplan::reports
