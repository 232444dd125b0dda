#pragma once
// The options' longer explanations (option_details.cpp), set on the schema's options by name, and
// the help text each command prints (option_help, when_omitted: request.hpp).

#include <vector>

#include "trainplan/request/request.hpp"

namespace trainplan::request {

void add_option_details(std::vector<Option>& all);

// --trainable (trainable_option.cpp): partial fine-tuning's subset (model/partial.hpp), and its
// match:PATTERN terms kept in Request::trainable_patterns; empty: every weight trains.
[[nodiscard]] Option trainable_option(Option o);

}  // namespace trainplan::request
