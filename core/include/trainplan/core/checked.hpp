#pragma once
// Checked arithmetic for sizes and counts that come from input (batch factors, parallel degrees,
// node x GPU counts, tokens): a product that leaves the range of std::int64_t, or the bound the
// caller gives, is an InputError that names what was multiplied, never a wrapped value that later
// divides by zero or answers "fits".

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>

#include "trainplan/core/error.hpp"

namespace trainplan {

// The most GPUs (nodes x GPUs per node) a cluster may have here: past the largest machines built.
inline constexpr std::int64_t kMaxClusterGpus = 1'000'000;

// The product of `factors` in `out`; false when it exceeds `limit` (or std::int64_t) at any step.
[[nodiscard]] inline bool product_within(std::initializer_list<std::int64_t> factors, std::int64_t limit,
                                         std::int64_t& out) {
  std::int64_t p = 1;
  for (const std::int64_t f : factors)
    if (__builtin_mul_overflow(p, f, &p) || p > limit || p < -limit) return false;
  out = p;
  return true;
}

// "a x b x c", for messages.
[[nodiscard]] inline std::string product_text(std::initializer_list<std::int64_t> factors) {
  std::string shown;
  for (const std::int64_t f : factors) shown += (shown.empty() ? "" : " x ") + std::to_string(f);
  return shown;
}

// The product of `factors`; InputError "<what> = a x b x ... is beyond <limit>" when it exceeds
// `limit` (or std::int64_t) at any step. `what` names the factors as the user gave them.
[[nodiscard]] inline std::int64_t checked_product(
    std::initializer_list<std::int64_t> factors, const std::string& what,
    std::int64_t limit = std::numeric_limits<std::int64_t>::max()) {
  std::int64_t p = 0;
  if (product_within(factors, limit, p)) return p;
  throw InputError(what + " = " + product_text(factors) +
                   (limit == std::numeric_limits<std::int64_t>::max()
                        ? std::string(" does not fit a 64-bit count")
                        : " is more than " + std::to_string(limit)));
}

}  // namespace trainplan
