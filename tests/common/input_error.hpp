#pragma once
// The message of the InputError a call throws, or "" where it throws none: what the refusal tests
// read.

#include <string>
#include <utility>

#include "trainplan/core/error.hpp"

namespace trainplan::test {

template <class F>
std::string input_error_of(F&& call) {
  try {
    std::forward<F>(call)();
  } catch (const InputError& e) {
    return e.what();
  }
  return {};
}

}  // namespace trainplan::test
