#pragma once
// What memory.cpp and training_checks.cpp share.

#include <string>

#include "trainplan/model/training.hpp"

namespace trainplan::planner {

// The sequences of a micro-batch as the messages name them: a preference pair runs two.
[[nodiscard]] std::string sequences_words(const model::Training& tr);

}  // namespace trainplan::planner
