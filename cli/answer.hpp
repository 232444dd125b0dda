#pragma once
// The command answered "no" (a check failed, nothing fits): main() prints the message and exits 1.
#include <stdexcept>

namespace trainplan::cli {

class AnsweredNo : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace trainplan::cli
