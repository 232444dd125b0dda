#pragma once
// The memory-bound kernels of one transformer block as PyTorch runs a Hugging Face implementation:
// every elementwise op, cast, copy and reduction of forward and of its autograd backward, with the
// bytes it moves through HBM and the kernels it launches. Matmuls and the attention kernel are
// priced elsewhere (compute.hpp); here they count only as launches. Derivations: docs/formulas.md,
// "Memory-bound work and host overhead".

#include "trainplan/model/architecture.hpp"
#include "trainplan/model/sdpa.hpp"
#include "trainplan/model/training.hpp"

namespace trainplan::planner {

struct BlockShape;

// HBM traffic and kernel launches of a piece of work.
struct KernelWork {
  double bytes = 0.0;
  double kernels = 0.0;
  KernelWork& operator+=(const KernelWork& o) {
    bytes += o.bytes;
    kernels += o.kernels;
    return *this;
  }
  [[nodiscard]] KernelWork operator*(double k) const { return {bytes * k, kernels * k}; }
  [[nodiscard]] KernelWork operator+(const KernelWork& o) const {
    return {bytes + o.bytes, kernels + o.kernels};
  }
};

struct BlockKernelWork {
  KernelWork forward;   // memory-bound ops of forward
  KernelWork backward;  // their autograd backward
  double forward_launches = 0.0;   // every kernel of forward: memory-bound, GEMMs, attention
  double backward_launches = 0.0;  // every kernel of backward
};

// One block of a Hugging Face model in eager PyTorch (the `pytorch` and `deepspeed` frameworks):
// RMSNorm or LayerNorm, autocast's input casts per linear, rotary embeddings, the attention
// wrapper's copies (or the eager score path), activations, residual adds, dropout and LoRA, each op
// followed through its autograd backward (grad formulas of torch's derivatives.yaml).
// The score path's ops are counted when the attention the block runs is the model's own code
// (AttentionRun::model_code_core).
[[nodiscard]] BlockKernelWork hf_block_kernel_work(const model::Architecture& a,
                                                   const BlockShape& shape,
                                                   const model::Training& tr, const model::AttentionRun& run);

// Launches outside the blocks, one micro-batch: the embedding lookup (first stage), the final norm,
// LM head and the loss (last stage: logits.float(), log_softmax, nll_loss and the labels' shift),
// forward and backward.
[[nodiscard]] BlockKernelWork hf_edge_kernel_work(const model::Architecture& a,
                                                  const model::Training& tr, bool first,
                                                  bool last);

// Weight casts of autocast (fp32 parameters to the compute dtype in forward, their gradients back
// to fp32 in backward), per parameter of the block: forward and backward bytes.
[[nodiscard]] KernelWork autocast_weight_cast(double params, const model::Training& tr,
                                              bool backward);

}  // namespace trainplan::planner
