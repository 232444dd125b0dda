#pragma once

namespace trainplan::hardware {

// How well a fitted model reproduces the points it was fitted to: relative errors |pred - t| / t.
struct FitQuality {
  double median_rel_err = 0.0;
  double max_rel_err = 0.0;
  int points = 0;
  friend bool operator==(const FitQuality&, const FitQuality&) = default;
};

}  // namespace trainplan::hardware
