#pragma once
// The options' longer explanations (option_details.cpp), set on the schema's options by name.

#include <vector>

#include "trainplan/request/request.hpp"

namespace trainplan::request {

void add_option_details(std::vector<Option>& all);

}  // namespace trainplan::request
