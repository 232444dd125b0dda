// cuBLASLt GEMM sweep: the heuristic's first algorithm, 32 MiB workspace, TN layout for every
// dtype (row-major C = A * W^T with W stored N x K, as nn.Linear; the layout FP8 needs on Hopper).
#pragma once

#include "device.hpp"
#include "lt_matmul.hpp"
#include "names.hpp"
#include "sweep.hpp"

namespace trainplan::calibrate {

class GemmBench {
 public:
  explicit GemmBench(int device);

  // FP8 (e4m3) tensor cores exist from compute capability 8.9 (Ada, Hopper) on.
  [[nodiscard]] bool supports(GemmDtype t) const;
  // Mean time of one GEMM in microseconds, hot L2, back-to-back calls on one stream.
  [[nodiscard]] double time_us(const GemmShape& g, GemmDtype t, int warmup, int iters);

 private:
  LtContext ctx_;
  int cc_ = 0;  // major * 10 + minor
};

}  // namespace trainplan::calibrate
