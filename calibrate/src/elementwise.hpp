// Memory-bound streaming kernels, the copies, casts and elementwise ops that take 20-40 % of the
// kernel time of Hugging Face models: bf16 copy, fp32 -> bf16 cast, bf16 add and an RMSNorm over
// rows of kRmsNormWidth. Rates count the bytes of elementwise_bytes().
#pragma once

#include <cstdint>
#include <vector>

#include "device.hpp"
#include "names.hpp"

namespace trainplan::calibrate {

class ElementwiseBench {
 public:
  explicit ElementwiseBench(int device);

  // Mean time of one kernel over `elements` outputs in microseconds (a multiple of kRmsNormWidth
  // for RMSNorm), on random data.
  [[nodiscard]] double time_us(ElementwiseOp op, std::int64_t elements, int warmup, int iters);

  // For correctness checks: the op on host values (`b`: the second addend; `weight`: the RMSNorm
  // weight of kRmsNormWidth), converted to the op's input types, output returned as floats.
  [[nodiscard]] std::vector<float> run(ElementwiseOp op, const std::vector<float>& a,
                                       const std::vector<float>& b,
                                       const std::vector<float>& weight);

 private:
  void allocate(ElementwiseOp op, std::int64_t elements);
  void launch(ElementwiseOp op, std::int64_t elements);

  int device_;
  StreamPtr stream_;
  DeviceBuffer a_, b_, out_, weight_;
};

}  // namespace trainplan::calibrate
