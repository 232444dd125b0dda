#pragma once
// Raw measurements of one calibration run, as plain values: one struct per line kind of
// RUN_DIR/measurements.jsonl (docs/calibration.md); trainplan/io/measurements.hpp reads and
// writes them.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trainplan/core/enum_table.hpp"
#include "trainplan/core/units.hpp"
#include "trainplan/hardware/collective.hpp"
#include "trainplan/hardware/profile.hpp"

namespace trainplan::calibrate {

enum class AttentionPass { fwd, bwd };
enum class AttentionImpl { cudnn, unfused };
enum class CopyDirection { d2d, h2d, d2h };

struct CollectiveMeasurement {
  hardware::Collective collective = hardware::Collective::all_reduce;
  hardware::LinkScope scope = hardware::LinkScope::intra_node;
  int ranks = 0;
  int nodes = 0;
  std::string dtype;  // as the benchmark names it: float, bfloat16, int8, ...
  Bytes bytes;        // nccl-tests `size` column
  Seconds time;
  BytesPerSecond algbw;
  BytesPerSecond busbw;
  bool in_place = false;
  bool valid = true;  // false when the benchmark found wrong results
  friend bool operator==(const CollectiveMeasurement&, const CollectiveMeasurement&) = default;
};

struct GemmMeasurement {
  hardware::GemmDtype dtype = hardware::GemmDtype::bf16;
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  Seconds time;
  FlopsPerSecond rate;
  std::string label;  // qkv, out, mlp_up, mlp_down, lm_head, square, skinny
  friend bool operator==(const GemmMeasurement&, const GemmMeasurement&) = default;
};

struct AttentionMeasurement {
  AttentionPass pass = AttentionPass::fwd;
  AttentionImpl impl = AttentionImpl::cudnn;
  std::string dtype;
  std::int64_t batch = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t seq = 0;
  bool causal = false;
  Seconds time;
  FlopsPerSecond rate;
  friend bool operator==(const AttentionMeasurement&, const AttentionMeasurement&) = default;
};

struct BandwidthMeasurement {
  CopyDirection direction = CopyDirection::d2d;
  Bytes bytes;
  Seconds time;
  BytesPerSecond rate;
  friend bool operator==(const BandwidthMeasurement&, const BandwidthMeasurement&) = default;
};

struct CpuAdamMeasurement {
  std::int64_t params = 0;
  Seconds time;
  double params_per_s = 0.0;
  friend bool operator==(const CpuAdamMeasurement&, const CpuAdamMeasurement&) = default;
};

struct Measurements {
  std::vector<CollectiveMeasurement> collectives;
  std::vector<GemmMeasurement> gemms;
  std::vector<AttentionMeasurement> attention;
  std::vector<BandwidthMeasurement> bandwidth;
  std::vector<CpuAdamMeasurement> cpu_adam;
  [[nodiscard]] std::size_t size() const {
    return collectives.size() + gemms.size() + attention.size() + bandwidth.size() +
           cpu_adam.size();
  }
  [[nodiscard]] bool empty() const { return size() == 0; }
  friend bool operator==(const Measurements&, const Measurements&) = default;
};

// One run directory: where it was read from (for messages), its provenance and its measurements.
struct Run {
  std::string name;
  hardware::RunProvenance provenance;
  Measurements measurements;
  friend bool operator==(const Run&, const Run&) = default;
};

}  // namespace trainplan::calibrate

namespace trainplan {
template <>
struct EnumTable<calibrate::AttentionPass> {
  static constexpr std::string_view kWhat = "attention pass";
  static constexpr std::array kEntries{
      std::pair{calibrate::AttentionPass::fwd, std::string_view{"fwd"}},
      std::pair{calibrate::AttentionPass::bwd, std::string_view{"bwd"}}};
};
template <>
struct EnumTable<calibrate::AttentionImpl> {
  static constexpr std::string_view kWhat = "attention implementation";
  static constexpr std::array kEntries{
      std::pair{calibrate::AttentionImpl::cudnn, std::string_view{"cudnn"}},
      std::pair{calibrate::AttentionImpl::unfused, std::string_view{"unfused"}}};
};
template <>
struct EnumTable<calibrate::CopyDirection> {
  static constexpr std::string_view kWhat = "copy direction";
  static constexpr std::array kEntries{
      std::pair{calibrate::CopyDirection::d2d, std::string_view{"d2d"}},
      std::pair{calibrate::CopyDirection::h2d, std::string_view{"h2d"}},
      std::pair{calibrate::CopyDirection::d2h, std::string_view{"d2h"}}};
};
}  // namespace trainplan
