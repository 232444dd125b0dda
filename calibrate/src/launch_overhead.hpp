// Kernel launch overhead, timed on the host: what a launch-bound step (small micro-batches, many
// small kernels) pays per kernel. Wall-clock time of `launches` back-to-back launches and one
// synchronisation, per launch.
#pragma once

#include <cstdint>

#include "device.hpp"
#include "lt_matmul.hpp"

namespace trainplan::calibrate {

class LaunchBench {
 public:
  explicit LaunchBench(int device);

  // Microseconds per launch of an empty one-thread kernel: the mean over `rounds` rounds of
  // `launches`, after `warmup` rounds.
  [[nodiscard]] double empty_kernel_us(int launches, int warmup, int rounds);
  // Microseconds per bf16 cuBLASLt GEMM of n x n x n, launched back to back.
  [[nodiscard]] double gemm_us(std::int64_t n, int launches, int warmup, int rounds);

 private:
  LtContext ctx_;
};

}  // namespace trainplan::calibrate
