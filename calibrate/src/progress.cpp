#include "progress.hpp"

#include <cstdio>
#include <string>

#include <fmt/format.h>

namespace trainplan::calibrate {

void Progress::step(std::string_view text) {
  ++done_;
  if (!enabled_) return;
  const int width = static_cast<int>(std::to_string(total_).size());
  fmt::print(stderr, "[{:>{}}/{}] {}\n", done_, width, total_, text);
  std::fflush(stderr);
}

void Progress::note(std::string_view text) const {
  if (!enabled_) return;
  fmt::print(stderr, "note: {}\n", text);
  std::fflush(stderr);
}

}  // namespace trainplan::calibrate
