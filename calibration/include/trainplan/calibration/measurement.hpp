#pragma once
// Raw measurements of one calibration run, as plain values: one struct per line kind of
// RUN_DIR/measurements.jsonl (docs/calibration.md); trainplan/request/measurements.hpp reads and
// writes them.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trainplan/core/enum_table.hpp"
#include "trainplan/core/units.hpp"
#include "trainplan/hardware/collective.hpp"
#include "trainplan/hardware/profile.hpp"

namespace trainplan::calibration {

enum class AttentionPass { fwd, bwd };
enum class AttentionImpl { cudnn, unfused };
enum class CopyDirection { d2d, h2d, d2h };
// Element types of the optimizer and elementwise kernels, as trainplan-calibrate names them.
enum class ElementDtype { fp32, bf16, fp16 };
enum class StepOptimizer { adamw };
enum class ElementwiseOp { copy, cast, add, rmsnorm };
enum class LaunchOp { empty_kernel, gemm };

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

// One optimizer step on the GPU over `params` parameters in `tensors` tensors, one multi-tensor
// launch; `bytes` is the traffic of the step (read parameter, gradient and moments, write
// parameter and moments).
struct OptimizerMeasurement {
  StepOptimizer optimizer = StepOptimizer::adamw;
  ElementDtype param_dtype = ElementDtype::fp32;
  ElementDtype grad_dtype = ElementDtype::bf16;
  ElementDtype state_dtype = ElementDtype::fp32;
  std::int64_t params = 0;
  std::int64_t tensors = 0;
  Bytes bytes;
  Seconds time;
  BytesPerSecond rate;
  double params_per_s = 0.0;
  friend bool operator==(const OptimizerMeasurement&, const OptimizerMeasurement&) = default;
};

// One memory-bound kernel over `elements` elements; `bytes` counts each element read and written
// once (and RMSNorm's weight row).
struct ElementwiseMeasurement {
  ElementwiseOp op = ElementwiseOp::copy;
  ElementDtype in_dtype = ElementDtype::bf16;
  ElementDtype out_dtype = ElementDtype::bf16;
  std::int64_t elements = 0;
  std::int64_t row = 0;  // RMSNorm's row width; 0 for the other ops
  Bytes bytes;
  Seconds time;
  BytesPerSecond rate;
  friend bool operator==(const ElementwiseMeasurement&, const ElementwiseMeasurement&) = default;
};

// Host wall-clock time per launch over `launches` back-to-back launches and one synchronisation.
struct LaunchMeasurement {
  LaunchOp op = LaunchOp::empty_kernel;
  std::optional<hardware::GemmDtype> dtype;  // gemm only, as are m, n, k
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  std::int64_t launches = 0;
  Seconds time;  // per launch
  friend bool operator==(const LaunchMeasurement&, const LaunchMeasurement&) = default;
};

// A point the benchmark did not measure, with why. `point` and `fallback` are the JSON objects
// as written (the fallback names the point measured in its place, if any); attention points are
// also read into `attention` and `fallback_attention` (time and rate zero), so that the fit can
// say which family lost them.
struct SkippedPoint {
  std::string kind;  // the skipped point's kind
  std::string point;
  std::string reason;
  std::string fallback;       // empty: none
  std::string fallback_kind;  // empty: none
  std::optional<AttentionMeasurement> attention;
  std::optional<AttentionMeasurement> fallback_attention;
  friend bool operator==(const SkippedPoint&, const SkippedPoint&) = default;
};

struct Measurements {
  std::vector<CollectiveMeasurement> collectives;
  std::vector<GemmMeasurement> gemms;
  std::vector<AttentionMeasurement> attention;
  std::vector<BandwidthMeasurement> bandwidth;
  std::vector<CpuAdamMeasurement> cpu_adam;
  std::vector<OptimizerMeasurement> optimizer;
  std::vector<ElementwiseMeasurement> elementwise;
  std::vector<LaunchMeasurement> launch;
  std::vector<SkippedPoint> skipped;  // not measurements: size() leaves them out
  [[nodiscard]] std::size_t size() const {
    return collectives.size() + gemms.size() + attention.size() + bandwidth.size() +
           cpu_adam.size() + optimizer.size() + elementwise.size() + launch.size();
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

}  // namespace trainplan::calibration

namespace trainplan {
template <>
struct EnumTable<calibration::AttentionPass> {
  static constexpr std::string_view kWhat = "attention pass";
  static constexpr std::array kEntries{
      std::pair{calibration::AttentionPass::fwd, std::string_view{"fwd"}},
      std::pair{calibration::AttentionPass::bwd, std::string_view{"bwd"}}};
};
template <>
struct EnumTable<calibration::AttentionImpl> {
  static constexpr std::string_view kWhat = "attention implementation";
  static constexpr std::array kEntries{
      std::pair{calibration::AttentionImpl::cudnn, std::string_view{"cudnn"}},
      std::pair{calibration::AttentionImpl::unfused, std::string_view{"unfused"}}};
};
template <>
struct EnumTable<calibration::CopyDirection> {
  static constexpr std::string_view kWhat = "copy direction";
  static constexpr std::array kEntries{
      std::pair{calibration::CopyDirection::d2d, std::string_view{"d2d"}},
      std::pair{calibration::CopyDirection::h2d, std::string_view{"h2d"}},
      std::pair{calibration::CopyDirection::d2h, std::string_view{"d2h"}}};
};
template <>
struct EnumTable<calibration::ElementDtype> {
  static constexpr std::string_view kWhat = "element dtype";
  static constexpr std::array kEntries{
      std::pair{calibration::ElementDtype::fp32, std::string_view{"fp32"}},
      std::pair{calibration::ElementDtype::bf16, std::string_view{"bf16"}},
      std::pair{calibration::ElementDtype::fp16, std::string_view{"fp16"}}};
};
template <>
struct EnumTable<calibration::StepOptimizer> {
  static constexpr std::string_view kWhat = "optimizer";
  static constexpr std::array kEntries{
      std::pair{calibration::StepOptimizer::adamw, std::string_view{"adamw"}}};
};
template <>
struct EnumTable<calibration::ElementwiseOp> {
  static constexpr std::string_view kWhat = "elementwise op";
  static constexpr std::array kEntries{
      std::pair{calibration::ElementwiseOp::copy, std::string_view{"copy"}},
      std::pair{calibration::ElementwiseOp::cast, std::string_view{"cast"}},
      std::pair{calibration::ElementwiseOp::add, std::string_view{"add"}},
      std::pair{calibration::ElementwiseOp::rmsnorm, std::string_view{"rmsnorm"}}};
};
template <>
struct EnumTable<calibration::LaunchOp> {
  static constexpr std::string_view kWhat = "launch op";
  static constexpr std::array kEntries{
      std::pair{calibration::LaunchOp::empty_kernel, std::string_view{"empty_kernel"}},
      std::pair{calibration::LaunchOp::gemm, std::string_view{"gemm"}}};
};
}  // namespace trainplan
