#pragma once
// Physical quantities as types, in the manner of std::chrono: a value is constructed explicitly in
// SI base units (bytes, FLOPs, seconds) and only physically meaningful cross-unit operators exist.
// Prefixes are spelled out at the boundary: GiB = 2^30 bytes, GB = 10^9 bytes.

#include <compare>
#include <cstdint>

namespace trainplan {

template <class Tag>
class Quantity {
 public:
  constexpr Quantity() = default;
  constexpr explicit Quantity(double v) : v_(v) {}
  [[nodiscard]] constexpr double value() const { return v_; }

  constexpr Quantity& operator+=(Quantity o) { v_ += o.v_; return *this; }
  constexpr Quantity& operator-=(Quantity o) { v_ -= o.v_; return *this; }
  constexpr Quantity& operator*=(double k) { v_ *= k; return *this; }
  constexpr Quantity& operator/=(double k) { v_ /= k; return *this; }
  friend constexpr Quantity operator+(Quantity a, Quantity b) { return Quantity(a.v_ + b.v_); }
  friend constexpr Quantity operator-(Quantity a, Quantity b) { return Quantity(a.v_ - b.v_); }
  friend constexpr Quantity operator-(Quantity a) { return Quantity(-a.v_); }
  friend constexpr Quantity operator*(Quantity a, double k) { return Quantity(a.v_ * k); }
  friend constexpr Quantity operator*(double k, Quantity a) { return Quantity(a.v_ * k); }
  friend constexpr Quantity operator/(Quantity a, double k) { return Quantity(a.v_ / k); }
  friend constexpr double operator/(Quantity a, Quantity b) { return a.v_ / b.v_; }
  friend constexpr auto operator<=>(Quantity, Quantity) = default;

 private:
  double v_ = 0.0;
};

struct BytesTag {};
struct FlopsTag {};
struct SecondsTag {};
struct BytesPerSecondTag {};
struct FlopsPerSecondTag {};

using Bytes = Quantity<BytesTag>;
using Flops = Quantity<FlopsTag>;
using Seconds = Quantity<SecondsTag>;
using BytesPerSecond = Quantity<BytesPerSecondTag>;
using FlopsPerSecond = Quantity<FlopsPerSecondTag>;

// The only cross-unit operators: those that are physics.
constexpr Seconds operator/(Bytes b, BytesPerSecond r) { return Seconds(b.value() / r.value()); }
constexpr Seconds operator/(Flops f, FlopsPerSecond r) { return Seconds(f.value() / r.value()); }
constexpr BytesPerSecond operator/(Bytes b, Seconds t) { return BytesPerSecond(b.value() / t.value()); }
constexpr FlopsPerSecond operator/(Flops f, Seconds t) { return FlopsPerSecond(f.value() / t.value()); }
constexpr Bytes operator*(BytesPerSecond r, Seconds t) { return Bytes(r.value() * t.value()); }
constexpr Flops operator*(FlopsPerSecond r, Seconds t) { return Flops(r.value() * t.value()); }

inline constexpr double kKiB = 1024.0;
inline constexpr double kMiB = 1024.0 * 1024.0;
inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
inline constexpr double kGB = 1e9;

constexpr Bytes gib(double v) { return Bytes(v * kGiB); }
constexpr Bytes mib(double v) { return Bytes(v * kMiB); }
constexpr Bytes gb(double v) { return Bytes(v * kGB); }
constexpr double to_gib(Bytes b) { return b.value() / kGiB; }
constexpr double to_mib(Bytes b) { return b.value() / kMiB; }
constexpr double to_gb(Bytes b) { return b.value() / kGB; }

constexpr FlopsPerSecond tflops(double v) { return FlopsPerSecond(v * 1e12); }
constexpr BytesPerSecond gbps(double v) { return BytesPerSecond(v * 1e9); }  // GB/s, decimal
constexpr double to_tflops(FlopsPerSecond r) { return r.value() / 1e12; }
constexpr double to_gbps(BytesPerSecond r) { return r.value() / 1e9; }

}  // namespace trainplan
