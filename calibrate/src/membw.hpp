// Memory bandwidth: device-to-device copies (copy engine through cudaMemcpyAsync and SMs through a
// copy kernel) and pinned host<->device transfers.
#pragma once

#include <cstddef>

#include "device.hpp"

namespace trainplan::calibrate {

class MemoryBench {
 public:
  explicit MemoryBench(int device);

  struct DeviceCopy {
    double memcpy_us = 0;  // cudaMemcpyAsync D2D
    double kernel_us = 0;  // copy kernel
  };
  [[nodiscard]] DeviceCopy d2d_us(std::size_t bytes, int warmup, int iters);
  [[nodiscard]] double h2d_us(std::size_t bytes, int warmup, int iters);
  [[nodiscard]] double d2h_us(std::size_t bytes, int warmup, int iters);

 private:
  int device_;
  StreamPtr stream_;
};

}  // namespace trainplan::calibrate
