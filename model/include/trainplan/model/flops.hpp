#pragma once
// Floating-point operations of one training step, counted as matmul multiply-adds x 2 (the
// convention of Narayanan et al. 2021, arXiv:2104.04473, Appendix, and torch.utils.flop_counter).

#include "trainplan/core/units.hpp"
#include "trainplan/model/architecture.hpp"
#include "trainplan/model/training.hpp"

namespace trainplan::model {

struct StepFlops {
  Flops forward;    // one forward pass of one micro-batch
  Flops backward;   // its backward (activation and weight gradients of trainable weights)
  Flops recompute;  // forward work repeated by activation checkpointing
  Flops attention_forward;  // of forward: the score and value matmuls (s^2 terms)
  [[nodiscard]] Flops total() const { return forward + backward + recompute; }
};

// Per micro-batch on the whole model (not divided by any parallelism). Attention is counted
// without the causal saving (Korthikanti et al. 2022, Eq. 7 convention), LoRA frozen weights get
// no weight-gradient GEMM.
[[nodiscard]] StepFlops micro_batch_flops(const Architecture& a, const Training& tr);

// Model FLOPs per token for MFU: 6N + 12 L h s style, i.e. forward+backward without recompute of
// a full fine-tune (Chowdhery et al. 2022, PaLM, Appendix B).
[[nodiscard]] Flops model_flops_per_token(const Architecture& a, std::int64_t seq);

}  // namespace trainplan::model
