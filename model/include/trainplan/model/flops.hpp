#pragma once
// Floating-point operations of one training step, counted as matmul multiply-adds x 2 (the
// convention of Narayanan et al. 2021, arXiv:2104.04473, Appendix, and torch.utils.flop_counter).

#include <cstdint>

#include "trainplan/core/units.hpp"
#include "trainplan/model/architecture.hpp"
#include "trainplan/model/training.hpp"

namespace trainplan::model {

struct StepFlops {
  Flops forward;            // one forward pass of one micro-batch
  Flops backward;           // its backward (activation and weight gradients of trainable weights)
  Flops recompute;          // forward work repeated by activation checkpointing
  Flops attention_forward;  // of forward: the score and value matmuls (s^2 terms)
  [[nodiscard]] Flops total() const { return forward + backward + recompute; }
};

// Per-token FLOP coefficients of one architecture under one method (LoRA targets): everything
// micro_batch_flops needs that does not depend on the batch shape. Computing them walks the
// block's linears; evaluating a step from them is a handful of multiplications.
struct FlopCoefficients {
  double linear = 0;     // forward FLOPs per token of all block linears (MoE: top-k experts)
  double attention = 0;  // forward score+value FLOPs per token per token of context (x seq)
  double head = 0;       // forward FLOPs per token of the LM head
  // Under torchtitan's per-op checkpointing (block_ops.hpp op_sac_saved): the forward FLOPs per
  // token of the linears whose outputs it saves, and whether it saves the attention kernel's.
  double op_sac_saved_linear = 0;
  bool op_sac_attention_saved = false;
  double adapters = 0;   // forward FLOPs per token of all LoRA adapters (0 for full)
  bool full = true;      // full fine-tune: every weight gets a weight-gradient GEMM
  // Partial fine-tuning (model/partial.hpp): the forward FLOPs per token of the weights that train
  // (each gets a weight-gradient GEMM), and the share of layers that run a backward at all.
  bool partial = false;
  double trained = 0;
  double backward_share = 1;
  double replay_share = 1;  // of the layers checkpointing replays (Training::checkpoint_trained_only, checkpoint_every)
  // Of those, what the entry layer (partial.hpp entry_layer) skips: the input gradients of its
  // linears no trained weight needs (per token), and its attention's backward (per token per token
  // of context) when its attention trains nothing.
  double entry_input_grads_skipped = 0;
  double entry_attention_skipped = 0;
  // Forward FLOPs per token of each block's last matmul (down projection, and its adapter's B),
  // summed over blocks: what non-reentrant checkpointing does not replay.
  double last_matmul = 0;
  bool dropout_after_last_matmul = false;  // its mask is saved: the last matmul is replayed too
  // LoRA without checkpointing: the first block of each stack reads frozen embeddings, so the
  // projections reading its input skip their input-gradient GEMMs (per token) ...
  double frozen_input_gradients = 0;
  // ... and eager attention skips the gradients of a frozen K and V there (per token per token
  // of context).
  double frozen_kv_gradients = 0;
  // The family has an SDPA path in transformers; without one, SDPA requested on a GPU runs the
  // eager attention (model/sdpa.hpp attention_executed), whose backward is 2x its forward.
  bool sdpa_path = true;
  // Value heads narrower than query/key heads (latent attention): SDPA on the CPU takes its math
  // fallback (model/sdpa.hpp), whose backward is 2x its forward.
  bool sdpa_cpu_math = false;
};

[[nodiscard]] FlopCoefficients flop_coefficients(const Architecture& a, const Training& tr);

// Per micro-batch on the whole model (not divided by any parallelism), as torch.utils.flop_counter
// counts what autograd runs: attention without the causal saving (Korthikanti et al. 2022, Eq. 7
// convention); a fused attention kernel's backward 2.5x its forward (it recomputes the scores), an
// eager one's 2x; LoRA's frozen weights get no weight-gradient GEMM, and with frozen embeddings the
// first block's input needs no gradient; non-reentrant checkpointing (torch.utils.checkpoint,
// use_reentrant=False) stops replaying a block once every saved tensor is rebuilt, so its last
// matmul is not re-run. Checked against the PyTorch oracle (data/reference/oracle).
[[nodiscard]] StepFlops micro_batch_flops(const FlopCoefficients& k, const Training& tr);
[[nodiscard]] StepFlops micro_batch_flops(const Architecture& a, const Training& tr);

// The model FLOPs of MFU (Korthikanti et al. 2022, Eq. 7): forward + backward without
// recomputation, attention backward 2x its forward whatever the kernel.
[[nodiscard]] Flops model_flops(const FlopCoefficients& k, const Training& tr);

// Model FLOPs per token for MFU: 6N + 12 L h s style, i.e. forward+backward without recompute of
// a full fine-tune (Chowdhery et al. 2022, PaLM, Appendix B).
[[nodiscard]] Flops model_flops_per_token(const Architecture& a, std::int64_t seq);

// Fraction of the s x s score matrix a causal kernel computes: (s + 1) / (2 s) for a square
// top-left causal mask (the convention of FlashAttention's and cuDNN's benchmarks: NVIDIA/cudnn-frontend
// benchmark/sdpa_benchmark_training divides the FLOPs by 2 under the causal mask).
[[nodiscard]] constexpr double causal_fraction(std::int64_t seq) {
  const double s = static_cast<double>(seq);
  return (s + 1.0) / (2.0 * s);
}

// Multiply-adds x 2 of a fused attention kernel's backward relative to its forward: dQ, dK, dV,
// dP and the recomputed scores S, five products against the forward's two (Dao 2023,
// FlashAttention-2, arXiv:2307.08691, Sec. 4 FLOP count: backward = 2.5 x forward).
inline constexpr double kFusedAttentionBackwardRatio = 2.5;

// Bytes moved by dequantizing one quantized weight to the compute dtype before a GEMM: read the
// stored bits (with their scales) and write the 16-bit copy the GEMM then reads (QLoRA,
// arXiv:2305.14314, Sec. 3: weights are dequantized per matmul, in forward and in backward).
[[nodiscard]] constexpr double dequant_bytes_per_weight(double stored_bytes, double compute_bytes) {
  return stored_bytes + compute_bytes;
}

// Tokens each expert receives when routing is balanced: t k / E (Fedus et al. 2021, Switch
// Transformer, arXiv:2101.03961, Sec. 2.2 expert capacity with capacity factor 1).
[[nodiscard]] constexpr double tokens_per_expert(double tokens, std::int64_t top_k,
                                                 std::int64_t experts) {
  return tokens * static_cast<double>(top_k) / static_cast<double>(experts);
}

// The tokens each routed expert multiplies, as a share of the t k / E a balanced router sends it:
// 1 where the framework is dropless. Megatron-Core with a capacity factor f caps each expert at
// C = ceil(t_r k / E f) of the t_r tokens each rank routes (moe_utils.py get_capacity called with
// num_tokens x topk; t_r is the micro-batch's tokens, split over the tensor-parallel ranks under
// sequence parallelism): an expert takes min(C, t_r k / E) and drops the rest, or exactly C when
// its input is padded to capacity (token_dispatcher.py drop_and_pad: num_out_tokens = C x E).
// Megatron-LM @ d98e8a6, megatron/core/transformer/moe/.
[[nodiscard]] double expert_token_share(const Architecture& a, const Training& tr);

}  // namespace trainplan::model
