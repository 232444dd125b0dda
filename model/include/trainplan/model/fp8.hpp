#pragma once
// FP8 training recipes as data: for each, which GEMMs of a block's linear layers run in FP8, what
// it keeps (FP8 weight copies, FP8 saved inputs, scales) and the cast kernels it runs, read from
// Transformer Engine, torchao and Megatron-Core (docs/fp8-and-cp-sources.md gives repository,
// commit and line for each field; docs/formulas.md, "FP8 training", the accounting).
//
// Common to every recipe: the linears of the transformer blocks run in FP8 (forward, input
// gradient and, unless the recipe keeps it in high precision, weight gradient); attention, norms,
// the embedding, the LM head and MoE routers stay in the 16-bit dtype (TE's fp8_dpa off by
// default; Megatron wraps only the transformer layers; torchtitan filters the output layer and the
// router); master weights, gradients and optimizer states are unchanged.

#include <array>
#include <string_view>

#include "trainplan/core/modes.hpp"
#include "trainplan/model/block_ops.hpp"

namespace trainplan::model {

struct Training;

struct Fp8Traits {
  Fp8Recipe recipe = Fp8Recipe::none;
  std::string_view name;              // as its library calls it
  bool transformer_engine = false;    // TE modules; else torchao's Float8Linear
  bool wgrad_fp8 = true;              // the weight-gradient GEMM runs in FP8
  // Scale bytes per FP8 element: 0 for one scale per tensor, 1/32 for MXFP8's E8M0 per 32
  // elements, 4/128 for blockwise fp32 scales per 128.
  double scale_overhead = 0.0;
  // The linear keeps its input for the weight gradient as an FP8 (columnwise) copy instead of the
  // 16-bit tensor (TE); torchao's autograd function keeps the 16-bit input and weight.
  bool saves_fp8_input = false;
  // Rowwise and columnwise FP8 copies are separate tensors on every GPU (block scales do not
  // transpose); with one scale per tensor they are only where the GPU cannot read FP8 transposed
  // (before Blackwell: TE's is_non_tn_fp8_gemm_supported).
  bool separate_columnwise = false;
  // A persistent FP8 copy of every weight (TE's weight workspace, quantized once per step under
  // Megatron's is_first_microbatch, and saved for the input gradient).
  bool weight_cache = false;
  // The cast of a 16-bit tensor: bytes moved per element besides the FP8 writes (reads for the
  // amax and the cast, and any fp32 intermediates), and the kernels it launches.
  double cast_bytes = 0.0;
  double cast_kernels = 0.0;
  // Casts per linear and micro-batch of each operand: the input, the weight and the output
  // gradient (torchao casts each again along the other axis for the backward GEMMs).
  double input_casts = 1.0;
  double weight_casts = 1.0;
  double grad_casts = 1.0;
  std::string_view source;
};

[[nodiscard]] const Fp8Traits& fp8_traits(Fp8Recipe r);

// Megatron-Core's names of Transformer Engine's recipes (--fp8-recipe, transformer_config.py
// fp8_recipe, mapped by fp8_utils.py get_fp8_recipe: 'tensorwise' is TE's current scaling) and the
// --fp8-format each is run with (HYBRID for per-tensor scales; the block-scaled recipes are E4M3).
struct MegatronFp8Recipe {
  Fp8Recipe recipe;
  std::string_view name;
  std::string_view format;
};
inline constexpr std::array<MegatronFp8Recipe, 4> kMegatronFp8Recipes{{{Fp8Recipe::te_delayed, "delayed", "hybrid"},
                                                                      {Fp8Recipe::te_current, "tensorwise", "hybrid"},
                                                                      {Fp8Recipe::te_mxfp8, "mxfp8", "e4m3"},
                                                                      {Fp8Recipe::te_blockwise, "blockwise", "e4m3"}}};

// What a library means by FP8 when no recipe is named (`--precision fp8`): Megatron-Core's default
// fp8_recipe 'delayed', torchtitan's and torchtune's torchao float8 (tensorwise), Transformer
// Engine's DelayedScaling for the libraries that reach FP8 through it (Accelerate, Composer,
// lightning, DeepSpeed).
[[nodiscard]] Fp8Recipe default_fp8_recipe(Library l);

// Whether a block linear of this role runs in FP8 under tr's recipe: not the MoE router, and under
// torchao only nn.Linear modules (not the experts' fused 3-D weights).
[[nodiscard]] bool fp8_linear(const Training& tr, Role role, bool expert);

// FP8 copies of each quantized tensor kept at once: 2 where rowwise and columnwise are separate.
[[nodiscard]] double fp8_copies(const Fp8Traits& t, int cuda_sm);

// Bytes per element a linear keeps of its input for the weight gradient (the 16-bit dtype's
// without a TE recipe).
[[nodiscard]] double fp8_saved_input_bytes(const Training& tr);

// Bytes per weight element of the FP8 copies a recipe keeps of the block linears (0: none).
[[nodiscard]] double fp8_weight_copy_bytes(const Training& tr, int cuda_sm);
// Where those copies live: under Megatron, TE's weight workspace is cached across the micro-batches
// of a step (is_first_microbatch), a persistent buffer beside the parameters; elsewhere each forward
// quantizes the weight again and saves the copy for backward, a tensor of the block like its
// activations (dropped by full checkpointing, one per micro-batch in flight).
[[nodiscard]] bool fp8_weights_cached(const Training& tr);
// torchao's float8 linears under torch.compile: AOTAutograd's partitioner saves none of their
// inputs, 16-bit or FP8, nor any weight cast: it recomputes them in backward from what is kept
// anyway (the fp32 residual the norm saves, the MLP's gate and up outputs, the attention output,
// the fp32 parameters). Measured on an H200 (data/measurements/h200-2026-11-30-compile-fp8:
// Llama-3.2-1B, torchao 0.18 tensorwise, torch 2.11: no float8 tensor saved, 2 of compiled bf16's
// 3 MLP intermediates, no hidden-size 16-bit input, no weight copy).
[[nodiscard]] bool compile_recomputes_fp8_inputs(const Training& tr);

// Whether tr gathers its block linears in FP8 (Training::fp8_param_gather): an FP8 recipe, full
// training, and a strategy that gathers parameters: Megatron's distributed optimizer (zero1) or
// FSDP, or ZeRO-3/FSDP elsewhere (Megatron's arguments.py; torchao's FSDP2 all-gather). Under a
// strategy that gathers nothing the option changes nothing.
[[nodiscard]] bool fp8_gathers(const Training& tr);

// The cast kernels of one block's FP8 linears for one micro-batch, forward and backward.
[[nodiscard]] EagerWork fp8_cast_work(const BlockOps& ops, const Training& tr, int cuda_sm);

}  // namespace trainplan::model
