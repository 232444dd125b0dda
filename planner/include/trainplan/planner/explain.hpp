#pragma once
// "It does not fit: what should I change?" For one fully specified configuration, the smallest
// changes that make it fit, each priced with planner::evaluate: a smaller micro-batch with more
// accumulation (the global batch kept), activation checkpointing, more sharding, offload, a smaller
// LoRA rank, QLoRA instead of LoRA. Strategies, checkpointing and offload take the values of the
// candidate space fit and search walk (planner/src/candidate_space.hpp), every one the framework
// runs. Single changes, and pairs of changes of two kinds: every pair that fits when no single
// change does, else the pairs faster than every single change.
// Pure: front ends print the result.

#include <cstdint>
#include <string>
#include <vector>

#include "trainplan/hardware/gpu.hpp"
#include "trainplan/model/architecture.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/model/training.hpp"
#include "trainplan/planner/estimate.hpp"
#include "trainplan/planner/memory.hpp"

namespace trainplan::hardware {
struct HardwareProfile;
}

namespace trainplan::planner {

// One option changed, in the CLI's spelling: option "micro-batch", from "8", to "2".
struct OptionChange {
  std::string option;
  std::string from;
  std::string to;
};

struct Suggestion {
  std::vector<OptionChange> changes;  // the options one change sets (micro-batch with accumulation, ...)
  Estimate estimate;                  // the changed configuration, evaluated
  // tokens/s of the change over tokens/s the configuration as given would run at (had it fit).
  double throughput_kept = 0;
  bool pair = false;  // two changes of different kinds, neither of which fits alone
};

struct Explanation {
  Estimate given;                       // the configuration as given
  std::vector<Suggestion> suggestions;  // all fit; highest tokens/s first; empty when nothing does
  bool pairs = false;                   // true when no single change fits and these are pairs
};

// Throws InputError when the configuration as given is impossible (make_layout). When it fits,
// suggestions is empty.
[[nodiscard]] Explanation suggest_changes(const model::Architecture& a,
                                          const model::ParameterCounts& n, const model::Training& t,
                                          const hardware::Cluster& c,
                                          const hardware::HardwareProfile* profile = nullptr,
                                          const MemoryConventions& mc = {});

}  // namespace trainplan::planner
