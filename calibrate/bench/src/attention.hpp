// Attention forward and backward, bf16, layout [batch, heads, seq, head_dim]:
//  - cudnn: cuDNN's fused SDPA through the backend API (CUDNN_BACKEND_OPERATION_SDPA_FWD/BWD);
//  - unfused: cuBLASLt batched GEMMs (QK^T, PV and the four backward products) around a softmax
//    kernel, which materialises the s x s scores like eager PyTorch attention.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "device.hpp"
#include "names.hpp"
#include "sweep.hpp"

namespace trainplan::calibrate::bench {

class AttentionBench {
 public:
  explicit AttentionBench(int device);
  ~AttentionBench();
  AttentionBench(const AttentionBench&) = delete;
  AttentionBench& operator=(const AttentionBench&) = delete;

  // Allocates and fills Q, K, V, dO and the outputs for one shape.
  void set_shape(const AttentionShape& shape);

  // The unfused path needs two b*h*s^2 score buffers; false when they would not fit.
  [[nodiscard]] bool unfused_fits() const;
  [[nodiscard]] double unfused_us(AttentionPass pass, int warmup, int iters);

  // nullopt when cuDNN offers no engine for this shape and pass; `why_not` then says why.
  [[nodiscard]] std::optional<double> cudnn_us(AttentionPass pass, int warmup, int iters,
                                               std::string& why_not);

  // A tensor of the current shape as floats, for correctness checks; O holds the output of the
  // last forward run.
  enum class Tensor { kQ, kK, kV, kO };
  [[nodiscard]] std::vector<float> to_host(Tensor t);

  struct Buffers;  // device tensors of the current shape (attention.cpp)

 private:
  int device_;
  StreamPtr stream_;
  CublasLtPtr lt_;
  CudnnPtr cudnn_;
  DeviceBuffer workspace_;
  AttentionShape shape_;
  std::unique_ptr<Buffers> buf_;
};

}  // namespace trainplan::calibrate::bench
