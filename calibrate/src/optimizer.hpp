// The AdamW step on the GPU: every parameter tensor updated by one multi-tensor kernel launch, the
// way torch.optim.AdamW(fused=True) and Apex's FusedAdam run it. Memory-bound: its time is the
// bytes it moves (adamw_bytes_per_param) over the HBM bandwidth it reaches.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cpu_adam.hpp"
#include "device.hpp"
#include "kernels.hpp"
#include "names.hpp"

namespace trainplan::calibrate {

// Every tensor cut into chunks of at most kAdamWChunk elements, as multi_tensor_apply does.
[[nodiscard]] std::vector<TensorChunk> chunk_table(const std::vector<std::int64_t>& tensor_sizes);

// The kernel's constants of step `step` (>= 1) of `cfg` (adamw_step_scalars).
[[nodiscard]] AdamWScalars adamw_kernel_scalars(const AdamWConfig& cfg, int step);

class OptimizerBench {
 public:
  explicit OptimizerBench(int device);

  // Allocates parameters, gradients and moments for tensors of `tensor_sizes` elements, laid out
  // one after the other, and the chunk table of the launch. nullopt when they fit; otherwise why
  // not, and nothing is allocated.
  [[nodiscard]] std::optional<std::string> prepare(OptimizerPrecision precision,
                                                   const std::vector<std::int64_t>& tensor_sizes);
  // Mean time of one step in microseconds (the step count advances with every call).
  [[nodiscard]] double step_us(int warmup, int iters);

  // For correctness checks: `steps` steps of `cfg` from the given fp32 values (converted to the
  // precision of prepare()) and zero moments; returns the parameters afterwards as floats.
  [[nodiscard]] std::vector<float> run_steps(const std::vector<float>& param,
                                             const std::vector<float>& grad, int steps,
                                             const AdamWConfig& cfg);

 private:
  void launch_step(const AdamWConfig& cfg);

  int device_;
  StreamPtr stream_;
  OptimizerPrecision precision_ = OptimizerPrecision::kFp32Master;
  std::int64_t params_ = 0;
  std::size_t chunk_count_ = 0;
  int step_ = 0;
  DeviceBuffer param_, grad_, exp_avg_, exp_avg_sq_, chunks_;
};

}  // namespace trainplan::calibrate
