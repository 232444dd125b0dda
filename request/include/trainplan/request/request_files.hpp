#pragma once
// A request from what the user gave: training options read from the config files people already
// have (config_file.hpp), each key as its value's source, then options given one by one (the
// command line, the GUI), which override the files.

#include <string>
#include <vector>

#include "trainplan/request/request.hpp"

namespace trainplan::request {

struct GivenValue {
  std::string option;  // the schema's name: "micro-batch"
  std::string value;
  std::string source;  // "--micro-batch"
};

// Starting from `base`, reads the files in order (a later file overrides an earlier one), then
// applies `values`. What a file leaves to other inputs (DeepSpeed's "auto") that no other file or
// value gives is left out with a note naming the file and key; a value trainplan does not model
// (an optimizer it cannot price) is refused, naming the nearest modelled one, unless another input
// gives the option. Throws InputError.
[[nodiscard]] Request make_request(const std::vector<std::string>& files, const std::vector<GivenValue>& values,
                                   unsigned cmd, Request base = {});

}  // namespace trainplan::request
