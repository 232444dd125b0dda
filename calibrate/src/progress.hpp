// Progress on stderr, one line per point: "[ 37/120] all_reduce intra_node 8 ranks 64 MiB ...".
#pragma once

#include <cstddef>
#include <string_view>

namespace trainplan::calibrate {

class Progress {
 public:
  // Disabled instances (ranks other than 0) print nothing.
  Progress(std::size_t total, bool enabled) : total_(total), enabled_(enabled) {}

  // Counts one point and prints its line.
  void step(std::string_view text);
  // Counts points taken from an earlier run (--resume) without a line each.
  void skip(std::size_t count) { done_ += count; }
  // An uncounted line (a skipped suite, a reduced size range).
  void note(std::string_view text) const;

  [[nodiscard]] std::size_t done() const { return done_; }

 private:
  std::size_t total_;
  bool enabled_;
  std::size_t done_ = 0;
};

}  // namespace trainplan::calibrate
