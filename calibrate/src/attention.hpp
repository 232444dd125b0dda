// Attention forward and backward, bf16, layout [batch, heads, seq, head_dim]:
//  - cudnn: cuDNN's fused flash attention through the backend API. The graphs are the ones
//    cudnn-frontend's sdpa() and sdpa_backward() build (include/cudnn_frontend/node/
//    scaled_dot_product_flash_attention.h): the single SDPA_FWD operation where it can express the
//    mask, otherwise (a causal mask before cuDNN 9.21, and every backward pass) the composite graph
//    of matmul, pointwise and reduction operations that cuDNN fuses into one kernel;
//  - unfused: cuBLASLt batched GEMMs (QK^T, PV and the four backward products) around a softmax
//    kernel, which materialises the s x s scores like eager PyTorch attention.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "device.hpp"
#include "lt_matmul.hpp"
#include "names.hpp"
#include "sweep.hpp"

namespace trainplan::calibrate {

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

  // nullopt when cuDNN builds no plan for this shape and pass; `why_not` then says why. The
  // backward pass runs the forward once first (training mode: it writes the softmax statistics
  // the backward graph reads). Plans are kept per shape, so the backward reuses the forward's.
  [[nodiscard]] std::optional<double> cudnn_us(AttentionPass pass, int warmup, int iters,
                                               std::string& why_not);
  // The cuDNN forward graph of the current shape: "sdpa_fwd" (the single operation) or
  // "composite"; empty before cudnn_us ran.
  [[nodiscard]] std::string cudnn_forward_graph() const;

  // A tensor of the current shape as floats, for correctness checks. O holds the output of the
  // last forward run, dQ, dK and dV those of the last backward run.
  enum class Tensor { kQ, kK, kV, kO, kDO, kDQ, kDK, kDV };
  [[nodiscard]] std::vector<float> to_host(Tensor t);

  struct Buffers;  // device tensors of the current shape (attention.cpp)
  class SdpaPlan;  // an executable cuDNN graph (attention.cpp)

 private:
  LtContext ctx_;
  CudnnPtr cudnn_;
  AttentionShape shape_;
  std::unique_ptr<Buffers> buf_;
  std::unique_ptr<SdpaPlan> cudnn_fwd_;
  std::unique_ptr<SdpaPlan> cudnn_bwd_;
  std::optional<std::string> cudnn_fwd_refused_;  // kept so the backward point need not rebuild
  float scale_ = 1.0f;
};

}  // namespace trainplan::calibrate
