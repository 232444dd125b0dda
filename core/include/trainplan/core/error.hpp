#pragma once
#include <stdexcept>
#include <string>

namespace trainplan {

// Bad input from a user or a file. The message names the input; only main() picks the exit code.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace trainplan
