#include "trainplan/model/fp8.hpp"

#include <array>

#include "trainplan/model/training.hpp"

namespace trainplan::model {
namespace {

// Cast traffic per element of a 16-bit tensor, besides the FP8 writes (docs/fp8-and-cp-sources.md):
//  * TE delayed scaling: one fused cast(-transpose) kernel reads the tensor once and records its
//    amax as it goes (TE csrc/quantizer.cpp nvte_quantize_v2; cast_transpose.cu): 2 bytes, 1 kernel.
//  * TE current scaling: nvte_compute_amax reads it, nvte_compute_scale_from_amax, then
//    nvte_quantize_v2 reads it again (quantizer.cpp L980-1033): 4 bytes, 3 kernels.
//  * TE MXFP8 and blockwise: one kernel quantizes rowwise and columnwise from the 16-bit input
//    (both usages from high precision, mxfp8.rst L80-96, fp8_blockwise_scaling.rst L120-133).
//  * torchao eager (float8_utils.py tensor_to_amax, float8_scaling_utils.py
//    hp_tensor_to_float8_dynamic, float8_tensor.py _ToFloat8ConstrFunc): amax = max(abs(x)) (abs
//    reads 2 and writes 2, max reads 2), the scale from the amax (four one-element kernels), then
//    x.to(float32) (reads 2, writes 4), * scale (reads 4, writes 4), clamp (reads 4, writes 4) and
//    .to(float8) (reads 4): 32 bytes, 10 kernels; rowwise rounds its scales to powers of two (one
//    kernel more).
//  * torchao under torch.compile (--compile): Inductor fuses the chain into the amax reduction
//    (reads 2) and one scale-clamp-cast kernel (reads 2, writes the FP8 copy): 4 bytes, 2 kernels;
//    the casts of one input that several linears read are one (the same tensor, the same scale).
constexpr double kTeOneRead = 2.0;
constexpr double kTeTwoReads = 4.0;
constexpr double kTorchaoEagerBytes = 32.0;
constexpr double kTorchaoEagerKernels = 10.0;
constexpr double kTorchaoCompiledBytes = 4.0;
constexpr double kTorchaoCompiledKernels = 2.0;

constexpr std::array<Fp8Traits, 8> kRecipes{{
    {Fp8Recipe::none, "none", false, false, 0.0, false, false, false, 0.0, 0.0, 0.0, 0.0, 0.0, ""},
    {Fp8Recipe::te_delayed, "Transformer Engine DelayedScaling (HYBRID: E4M3 forward, E5M2 gradients)", true,
     true, 0.0, true, false, true, kTeOneRead, 1.0, 1.0, 1.0, 1.0,
     "TransformerEngine d0067d0 transformer_engine/common/recipe/__init__.py L173-265; pytorch/module/linear.py "
     "L425-433, L597-621, L1887-1899, L1958"},
    {Fp8Recipe::te_current, "Transformer Engine Float8CurrentScaling (Megatron 'tensorwise')", true, true, 0.0,
     true, false, true, kTeTwoReads, 3.0, 1.0, 1.0, 1.0,
     "TransformerEngine d0067d0 recipe/__init__.py L286-315; csrc/quantizer.cpp L980-1033"},
    {Fp8Recipe::te_mxfp8, "Transformer Engine MXFP8BlockScaling (E4M3, an E8M0 scale per 32)", true, true,
     1.0 / 32.0, true, true, true, kTeOneRead, 1.0, 1.0, 1.0, 1.0,
     "TransformerEngine d0067d0 recipe/__init__.py L337-389; pytorch/constants.py L175; "
     "docs/features/low_precision_training/mxfp8/mxfp8.rst L80-96"},
    {Fp8Recipe::te_blockwise, "Transformer Engine Float8BlockScaling (1x128 activations, 128x128 weights)", true,
     true, 4.0 / 128.0, true, true, true, kTeOneRead, 1.0, 1.0, 1.0, 1.0,
     "TransformerEngine d0067d0 recipe/__init__.py L392-470; pytorch/tensor/float8_blockwise_tensor.py L55, "
     "L194-213; DeepSeek-V3 (arXiv 2412.19437) Sec. 3.3"},
    {Fp8Recipe::torchao_tensorwise, "torchao float8 tensorwise (dynamic per-tensor scales)", false, true, 0.0,
     false, false, false, kTorchaoEagerBytes, kTorchaoEagerKernels, 2.0, 2.0, 2.0,
     "pytorch/ao 36027d8 torchao/float8/config.py L141-176, L296-308; float8_linear.py L38-47, L93-204"},
    {Fp8Recipe::torchao_rowwise, "torchao float8 rowwise (per-row scales, powers of two)", false, true, 0.0, false,
     false, false, kTorchaoEagerBytes, kTorchaoEagerKernels + 1.0, 2.0, 2.0, 2.0,
     "pytorch/ao 36027d8 torchao/float8/config.py L317-372; float8_linear.py L38-47, L93-204"},
    {Fp8Recipe::torchao_rowwise_gw_hp, "torchao float8 rowwise, weight gradient in high precision", false, false,
     0.0, false, false, false, kTorchaoEagerBytes, kTorchaoEagerKernels + 1.0, 1.0, 2.0, 1.0,
     "pytorch/ao 36027d8 torchao/float8/config.py L317-372 (ROWWISE_WITH_GW_HP: grad_weight ScalingType.DISABLED)"},
}};

// The 128x128 weight blocks of the blockwise recipe carry one fp32 scale each.
constexpr double kBlockwiseWeightScale = 4.0 / (128.0 * 128.0);

double weight_scale_overhead(const Fp8Traits& t) {
  return t.recipe == Fp8Recipe::te_blockwise ? kBlockwiseWeightScale : t.scale_overhead;
}

// torchao's casts compiled by Inductor (the torchao entry of the comment above).
bool compiled_torchao(const Training& tr, const Fp8Traits& t) {
  return tr.runs_compiled() && !t.transformer_engine;
}

// Megatron's fused linear_qkv and linear_fc1 cast their input once; in Megatron's op list q, k, v
// and gate, up are separate linears that share it, as the compiled graph's one cast does.
bool shares_previous_input(const Training& tr, const Fp8Traits& t, Role role) {
  if (tr.framework != Framework::megatron && !compiled_torchao(tr, t)) return false;
  return role == Role::k || role == Role::v || role == Role::up;
}

// Whether tr runs an FP8 recipe at all: QLoRA's 4-bit layers are not nn.Linear, so neither library
// converts them.
bool active(const Training& tr) { return tr.fp8 != Fp8Recipe::none && tr.method != Method::qlora; }

}  // namespace

const Fp8Traits& fp8_traits(Fp8Recipe r) { return kRecipes.at(static_cast<std::size_t>(r)); }

Fp8Recipe default_fp8_recipe(Library l) {
  switch (l) {
    case Library::torchtitan:
    case Library::torchtune: return Fp8Recipe::torchao_tensorwise;
    case Library::hf_trainer:
    case Library::accelerate:
    case Library::trl:
    case Library::litgpt:
    case Library::axolotl:
    case Library::megatron:
    case Library::megatron_deepspeed:
    case Library::deepspeed:
    case Library::llm_foundry: return Fp8Recipe::te_delayed;
  }
  return Fp8Recipe::te_delayed;
}

bool fp8_linear(const Training& tr, Role role, bool expert) {
  if (!active(tr) || role == Role::router) return false;
  return fp8_traits(tr.fp8).transformer_engine || !expert;
}

double fp8_copies(const Fp8Traits& t, int cuda_sm) {
  if (t.separate_columnwise) return 2.0;
  // Blackwell (SM 10.x and later) reads a per-tensor FP8 operand transposed; Hopper, Ada and the
  // ROCm GPUs keep a transposed copy.
  return cuda_sm >= 100 ? 1.0 : 2.0;
}

double fp8_saved_input_bytes(const Training& tr) {
  const Fp8Traits& t = fp8_traits(tr.fp8);
  if (!t.saves_fp8_input || !active(tr)) return compute_bytes(tr.precision);
  return 1.0 + t.scale_overhead;  // the columnwise copy only (linear.py L597-621)
}

double fp8_weight_copy_bytes(const Training& tr, int cuda_sm) {
  const Fp8Traits& t = fp8_traits(tr.fp8);
  if (!t.weight_cache || !active(tr)) return 0.0;
  return fp8_copies(t, cuda_sm) * (1.0 + weight_scale_overhead(t));
}

bool compile_recomputes_fp8_inputs(const Training& tr) {
  return active(tr) && compiled_torchao(tr, fp8_traits(tr.fp8));
}

bool fp8_weights_cached(const Training& tr) {
  return fp8_traits(tr.fp8).weight_cache && tr.framework == Framework::megatron;
}

bool fp8_gathers(const Training& tr) {
  if (!tr.fp8_param_gather || !active(tr) || tr.method != Method::full) return false;
  return shards_parameters(tr.strategy) || (tr.framework == Framework::megatron && tr.strategy == Strategy::zero1);
}

EagerWork fp8_cast_work(const BlockOps& ops, const Training& tr, int cuda_sm) {
  EagerWork w;
  if (!active(tr)) return w;
  const Fp8Traits& t = fp8_traits(tr.fp8);
  const double c = compute_bytes(tr.precision);
  const bool compiled = compiled_torchao(tr, t);
  const double cast_kernels = compiled ? kTorchaoCompiledKernels : t.cast_kernels;
  const double read = (compiled ? kTorchaoCompiledBytes : t.cast_bytes) * c / 2.0;  // per 16-bit tensor
  const double copies = fp8_copies(t, cuda_sm);
  const double act = read + copies * (1.0 + t.scale_overhead);
  const double wgt = read + copies * (1.0 + weight_scale_overhead(t));
  // TE under Megatron quantizes each weight on the first micro-batch of a step only.
  const double weight_share =
      fp8_weights_cached(tr) && tr.grad_accum > 1
          ? 1.0 / static_cast<double>(tr.grad_accum)
          : 1.0;
  // A tensor cast again along the other axis for a backward GEMM: compiled with one scale per
  // tensor, the scale of the first cast serves (the amax is not taken again): one read, one kernel.
  const bool same_scale = compiled && tr.fp8 == Fp8Recipe::torchao_tensorwise;
  const double act_again = same_scale ? c + copies : act;
  const double wgt_again = same_scale ? c + copies : wgt;
  const double kernels_again = same_scale ? 1.0 : cast_kernels;
  for (const Op& op : ops.ops) {
    if (op.kind != OpKind::gemm) continue;
    const GemmShape& g = op.gemm;
    if (!fp8_linear(tr, g.role, g.expert())) continue;
    const double n = static_cast<double>(g.count);
    const double in = static_cast<double>(g.m) * static_cast<double>(g.k) * n;
    const double out = static_cast<double>(g.m) * static_cast<double>(g.n) * n;
    const double weights = static_cast<double>(g.n) * static_cast<double>(g.k) * n;
    // Without a weight gradient the backward needs neither operand along the other axis.
    const double second = g.weight_grad ? 1.0 : 0.0;
    const double input_casts = shares_previous_input(tr, t, g.role) ? 0.0 : 1.0;
    const double input_back = (t.input_casts - 1.0) * second * (compiled ? input_casts : 1.0);
    const double grad_again = (t.grad_casts - 1.0) * second;
    const double weight_back = t.weight_casts - 1.0;
    w.forward += KernelWork{in * act * input_casts + weights * wgt * weight_share,
                            cast_kernels * (input_casts + weight_share)};
    w.backward += KernelWork{out * act + (in * input_back + out * grad_again) * act_again +
                                 weights * wgt_again * weight_back,
                             cast_kernels + kernels_again * (input_back + grad_again + weight_back)};
  }
  return w;
}

}  // namespace trainplan::model
