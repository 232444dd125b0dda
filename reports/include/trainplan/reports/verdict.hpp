#pragma once
// One wording and one colour of the memory verdict (planner::judge decides it) for every front end:
// the CLI's sentences and tables, the GUI's banner, charts and tables.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "trainplan/core/units.hpp"
#include "trainplan/planner/memory.hpp"

namespace trainplan::reports {

struct VerdictLook {
  std::string_view word;      // in a table cell or beside a chart: "fits", "tight", "does not fit"
  std::string_view headline;  // opening a sentence: "Fits", "Tight", "Does not fit"
  std::uint32_t rgb = 0;      // mid-tone green, amber, red: readable on light and dark bases
};
[[nodiscard]] VerdictLook verdict_look(planner::Verdict v);

// What a verdict sentence speaks of.
struct VerdictSubject {
  std::string what;   // "llama-2-13b (13.0B params, full)"
  std::string where;  // "4x A100-80GB"
  std::string plan;   // "FSDP full-shard + full checkpointing"
};

// What it says of it.
struct VerdictFacts {
  planner::MemoryVerdict verdict;
  Bytes device_total;
  Bytes usable;
  std::optional<std::int64_t> micro_batch;  // the one given; nullopt: the largest is the answer
  std::int64_t max_micro_batch = 0;         // the largest that fits with room; 0: none does
  double tokens_per_s = 0;                  // > 0: said, as estimated
};

// "Fits — <what> on <where> with <plan>: 66.4 of 79.2 GiB usable per GPU, 12.8 GiB headroom;
// micro-batch up to 1 (~6.6K tokens/s estimated)". Tight and does-not-fit give judge's reason
// after the colon, and the micro-batch that fits with room when one does.
struct VerdictSentence {
  planner::Verdict verdict = planner::Verdict::no;
  std::string headline;  // verdict_look(verdict).headline
  std::string rest;      // what follows " — "
  [[nodiscard]] std::string text() const { return headline + " — " + rest; }
};
[[nodiscard]] VerdictSentence verdict_sentence(const VerdictSubject& s, const VerdictFacts& f);

}  // namespace trainplan::reports
