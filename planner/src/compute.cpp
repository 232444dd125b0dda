#include "trainplan/planner/compute.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <string>

#include "trainplan/model/block_ops.hpp"
#include "trainplan/model/flops.hpp"
#include "trainplan/model/fp8.hpp"
#include "trainplan/model/library.hpp"
#include "trainplan/model/model_states.hpp"
#include "trainplan/model/sdpa.hpp"
#include "trainplan/model/partial.hpp"
#include "trainplan/planner/kernel_work.hpp"

namespace trainplan::planner {
namespace {

using model::Role;

[[nodiscard]] constexpr double dbl(std::int64_t v) { return static_cast<double>(v); }

[[nodiscard]] std::string_view gemm_dtype_of(Precision p) {
  switch (p) {
    case Precision::fp32:
      return "tf32";
    case Precision::fp16_mixed:
    case Precision::fp16_true:
      return "fp16";
    case Precision::bf16_mixed:
    case Precision::bf16_true:
      return "bf16";
  }
  return "bf16";
}

constexpr int kMinTile = 16;
[[nodiscard]] int narrow_tile(std::int64_t dim, int tile) {
  int t = kMinTile;
  while (t < tile && t < dim) t *= 2;
  return std::min(t, tile);
}

}  // namespace

bool fused_kernels(Framework f) {
  switch (f) {
    case Framework::megatron:
      return true;
    case Framework::pytorch:
    case Framework::deepspeed:
      return false;
  }
  return false;
}

double block_parameters_per_gpu(const BlockShape& shape, int tp) {
  double n = 0.0;
  for (const model::Linear& l : shape.linears)
    n += dbl(l.parameters()) /
         (l.role == Role::router || l.role == Role::q_a || l.role == Role::kv_a ? 1.0 : static_cast<double>(tp));
  return n;
}

double mamf_efficiency(const hardware::GpuSpec& g, const TimeConventions& tc) {
  const std::string& arch = g.architecture;
  if (arch == "Ampere") return g.form_factor == "PCIe" ? tc.mamf_ampere_pcie : tc.mamf_ampere_sxm;
  if (arch == "Hopper") return tc.mamf_hopper;
  if (arch == "Blackwell") return tc.mamf_blackwell;
  if (arch == "CDNA3") return tc.mamf_cdna3;
  return tc.mamf_unlisted;
}

int cuda_sm(const hardware::GpuSpec& g) {
  // "9.0" -> 90, read digit by digit: the evaluator asks for every configuration.
  const std::string& cc = g.capabilities.compute_capability;
  if (g.vendor != "NVIDIA") return 0;
  int major = 0;
  int minor = 0;
  std::size_t i = 0;
  for (; i < cc.size() && cc[i] >= '0' && cc[i] <= '9' && major < 100; ++i) major = major * 10 + (cc[i] - '0');
  if (i == 0 || i >= cc.size() || cc[i] != '.') return 0;
  const std::size_t first_minor = ++i;
  for (; i < cc.size() && cc[i] >= '0' && cc[i] <= '9' && minor < 100; ++i) minor = minor * 10 + (cc[i] - '0');
  if (i == first_minor || i != cc.size()) return 0;
  return major * 10 + minor;
}

bool datacenter_blackwell(int sm) { return sm >= 100 && sm < 120; }

ComputeDevice compute_device(const hardware::GpuSpec& g, Precision p, bool tf32,
                             const hardware::HardwareProfile* profile, const TimeConventions& tc) {
  ComputeDevice d;
  d.peak = hardware::peak_flops(g, p, tf32);
  d.gemm_efficiency_max = mamf_efficiency(g, tc) * tc.training_gemm_fraction;
  if (hardware::emulated_bf16(g, p)) d.gemm_efficiency_max *= tc.emulated_bf16_vs_fp32;
  d.sm_count = g.sm_count;
  d.tile_m = tc.gemm_tile_m;
  d.tile_n = tc.gemm_tile_n;
  d.k0 = tc.gemm_k0;
  d.hbm = g.hbm_bandwidth * tc.hbm_efficiency;
  d.kernel_floor = tc.kernel_floor;
  if (profile != nullptr) {
    if (const auto hbm = profile->hbm_bandwidth()) d.hbm = *hbm;
  }
  // The eager efficiency and kernel floor were fitted against the streaming copy rate (the
  // profile's HBM copy when measured); the profile's contiguous elementwise rate and empty-kernel
  // launch interval are reported by calibrate, not substituted: the eager kernels' shortfall from
  // them is what the fitted constants describe.
  d.elementwise = d.hbm;
  d.element_bytes = compute_bytes(p);
  d.unaligned_efficiency = tc.unaligned_gemm_efficiency;
  d.cuda_sm = cuda_sm(g);
  d.flash = datacenter_blackwell(d.cuda_sm)
                ? tc.blackwell_flash
                : AttentionCurve{tc.flash_fwd_efficiency, tc.flash_bwd_efficiency, tc.flash_seq_half, tc.flash_seq_half};
  d.profile = profile != nullptr && !profile->empty() ? profile : nullptr;
  d.gemm_dtype = gemm_dtype_of(p);
  d.fp32_peak = tflops(g.peak.fp32);
  d.fp8_peak = tflops(g.peak.fp8);
  return d;
}

ComputeDevice fp8_device(const ComputeDevice& d, const TimeConventions& tc, Fp8Recipe recipe) {
  ComputeDevice d8 = d;
  const bool mx_kernels =
      recipe == Fp8Recipe::te_mxfp8 || (recipe == Fp8Recipe::te_blockwise && datacenter_blackwell(d.cuda_sm));
  d8.peak = d.fp8_peak * (mx_kernels ? tc.mxfp8_vs_fp8_gemm : 1.0);
  d8.gemm_dtype = "fp8";
  d8.element_bytes = 1.0;
  d8.gemm_efficiency_max *= tc.fp8_vs_bf16_gemm_efficiency;  // the datasheet path (no profile)
  // The fixed cost of a K step (loading the next tiles) is as long as at 16 bits while the math of
  // each K step takes half the time: the reduction length that hides it doubles (the profiles'
  // fitted k0: 208 vs 99 on the H100, 297 vs 120 on the H200).
  d8.k0 = 2.0 * d.k0;
  return d8;
}

double gemm_efficiency(const ComputeDevice& d, std::int64_t m, std::int64_t n, std::int64_t k,
                       double count) {
  // Tensor-core kernels want every dimension a multiple of 16 bytes (8 16-bit elements); cuBLAS
  // runs others with narrow loads (NVIDIA Matrix Multiplication Background User's Guide, 4.1).
  const std::int64_t per_16_bytes =
      std::max<std::int64_t>(1, 16 / static_cast<std::int64_t>(d.element_bytes));
  const bool aligned = ((m | n | k) & (per_16_bytes - 1)) == 0;  // a power of two elements
  const double alignment = aligned ? 1.0 : d.unaligned_efficiency;
  if (d.profile != nullptr) {
    // Calibrated on aligned shapes: an unaligned one keeps the same share of it.
    if (const auto e = d.profile->gemm_efficiency(m, n, k, d.gemm_dtype, d.sm_count, count))
      return *e * alignment;
  }
  // Back-to-back products (batched matmuls, experts) fill waves together: stack them along M.
  const std::int64_t stacked =
      m * std::max<std::int64_t>(1, static_cast<std::int64_t>(count + 0.5));
  // cuBLAS heuristics pick narrower tiles for thin operands: no wider than the operand rounded up
  // to a power of two, at least kMinTile (a LoRA rank-16 product does not pay for 128 columns).
  const int tm = narrow_tile(m, d.tile_m);
  const int tn = narrow_tile(n, d.tile_n);
  return d.gemm_efficiency_max * alignment * hardware::tile_efficiency(m, n, tm, tn) *
         hardware::wave_efficiency(stacked, n, tm, tn, d.sm_count) *
         hardware::small_k_efficiency(dbl(k), d.k0);
}

Seconds gemm_time(const ComputeDevice& d, std::int64_t m, std::int64_t n, std::int64_t k,
                  double count) {
  if (m <= 0 || n <= 0 || k <= 0 || count <= 0.0) return Seconds(0.0);
  const Flops f(2.0 * dbl(m) * dbl(n) * dbl(k) * count);
  const double eta = std::max(gemm_efficiency(d, m, n, k, count), 1e-6);
  const Seconds compute = f / (d.peak * eta);
  const Bytes traffic((dbl(m) * dbl(k) + dbl(k) * dbl(n) + dbl(m) * dbl(n)) * count *
                      d.element_bytes);
  return std::max(compute, traffic / d.hbm);
}

Seconds memory_bound_time(const ComputeDevice& d, Bytes traffic) { return traffic / d.hbm; }

LossBytes loss_bytes(const model::Architecture& a, const model::Training& tr, const TimeConventions& tc) {
  const model::OpListVariant v = model::op_variant(a, tr);
  if (!v.fused_loss) return {tc.loss_bytes_per_logit, tc.loss_backward_bytes_per_logit};
  const double c = compute_bytes(tr.precision);
  constexpr double kFp32 = 4.0;  // compiled: the loss writes, then reads, the fp32 copy it keeps
  if (v.compiled && !v.loss_in_model_dtype) return {c + kFp32, kFp32 + c};
  return {c, 2.0 * c};
}

double attention_efficiency(const ComputeDevice& d, bool backward, std::int64_t seq, bool causal,
                            std::int64_t head_dim) {
  if (d.profile != nullptr) {
    if (const auto e = d.profile->attention_efficiency(backward, seq, causal, head_dim)) return *e;
  }
  return backward ? hardware::saturating_efficiency(d.flash.bwd_efficiency, dbl(seq), d.flash.bwd_seq_half)
                  : hardware::saturating_efficiency(d.flash.fwd_efficiency, dbl(seq), d.flash.fwd_seq_half);
}

// A fused attention kernel built on Ampere's warp-level mma.sync, on a GPU whose native kernels
// (cuDNN, FlashAttention-3) use Hopper's or datacenter Blackwell's wider tensor instructions
// (compute capability 9.0 to 11.x; 12.x, the RTX Blackwells, have neither): its share of the
// native rate (TimeConventions::warp_mma_attention_vs_native); 1 elsewhere. Such kernels: the
// Triton FlashAttention, PyTorch's SDPA flash and efficient kernels, and the flash-attn 2.x
// package that `flash` means outside Megatron. Megatron's Transformer Engine picks cuDNN's fused
// attention over flash-attn "on Hopper+ for performance reasons" (transformer_engine/pytorch/
// attention/dot_product_attention/utils.py get_attention_backend).
double warp_mma_attention_share(const model::AttentionRun& run, Framework framework, int cuda_sm, const TimeConventions& tc) {
  const bool wider_instructions = cuda_sm >= 90 && cuda_sm < 120;
  if (!wider_instructions || !run.fused) return 1.0;
  const bool warp_mma = run.runs == Attention::triton || model::flash_attention_2_kind(run, framework);
  if (!warp_mma) return 1.0;
  return datacenter_blackwell(cuda_sm) ? tc.blackwell_warp_mma_attention_vs_native : tc.warp_mma_attention_vs_native;
}

BlockShape block_shape(const model::Architecture& a, model::Stack stack,
                       const model::LoraConfig* lora) {
  BlockShape s;
  s.stack = stack;
  s.linears = model::block_linears(a, stack);
  s.adapted.assign(s.linears.size(), false);
  if (lora != nullptr) {
    for (std::size_t i = 0; i < s.linears.size(); ++i)
      s.adapted[i] =
          s.linears[i].role != Role::router && model::lora_adapts(a, *lora, s.linears[i].role);
  }
  s.causal = !(a.encoder_decoder && stack == model::Stack::encoder);
  s.cross_attention = a.encoder_decoder && stack == model::Stack::decoder;
  return s;
}

namespace {

// The linears of one block: forward and backward GEMMs (LoRA's thin products included), the
// quantized weights QLoRA dequantizes, and (for the fused path) the adapters' elementwise bytes.
struct LinearTimes {
  Seconds forward;
  Seconds backward;
  Seconds op_sac_saved_forward;  // of forward: the GEMMs whose outputs torchtitan's per-op policy saves
  double dequant_bytes = 0.0;     // one pass over the quantized base weights
  double lora_elementwise = 0.0;  // adapter dropout, scaling and add (fused-kernel accounting)
};

// Two linears whose GEMMs take the same time: k and v under grouped-query attention, gate and up.
bool same_products(const model::GemmShape& x, const model::GemmShape& y) {
  return x.m == y.m && x.n == y.n && x.k == y.k && x.count == y.count && x.weight_grad == y.weight_grad &&
         x.input_grad == y.input_grad &&
         x.adapted == y.adapted && x.rank == y.rank;
}

LinearTimes linear_times(const model::BlockOps& ops, const model::Training& tr, const ComputeDevice& d,
                         const TimeConventions& tc) {
  const double Td = dbl(tr.tokens_per_micro_batch());
  const double c = compute_bytes(tr.precision);
  const ComputeDevice d8 = fp8_device(d, tc, tr.fp8);  // the FP8 recipe's GEMMs
  const bool wgrad_fp8 = model::fp8_traits(tr.fp8).wgrad_fp8;
  LinearTimes out;
  const model::GemmShape* last = nullptr;  // the previous linear, priced once for its twins
  Seconds last_forward;
  Seconds last_backward;
  const std::vector<bool> sac_saved = model::op_sac_saved(ops, tr);
  for (std::size_t i = 0; i < ops.ops.size(); ++i) {
    const model::Op& op = ops.ops[i];
    if (op.kind != model::OpKind::gemm) continue;
    const model::GemmShape& g = op.gemm;
    out.dequant_bytes += g.dequant_bytes;
    const double tokens = g.expert() ? dbl(g.m) * dbl(g.count) : Td;
    if (g.adapted) {
      const double drop = tr.lora.dropout > 0.0 ? tokens * dbl(g.k) * (tc.dropout_passes * c + 1.0) : 0.0;
      out.lora_elementwise += drop + tokens * dbl(g.n) * c * (tc.eager_residual_passes + tc.dropout_passes);
    }
    if (last == nullptr || !same_products(*last, g)) {
      last = &g;
      const std::int64_t m = g.m;
      const double count = dbl(g.count);
      const bool fp8 = model::fp8_linear(tr, g.role, g.expert());
      const ComputeDevice& dl = fp8 ? d8 : d;
      last_forward = gemm_time(dl, m, g.n, g.k, count);
      last_backward = g.input_grad ? gemm_time(dl, m, g.k, g.n, count) : Seconds(0.0);  // activation gradient
      if (g.weight_grad) last_backward += gemm_time(fp8 && wgrad_fp8 ? d8 : d, g.k, g.n, m, count);  // weight gradient
      if (g.adapted) {
        // x A^T (rank r), then (.) B^T; both are thin and mostly memory-bound.
        const std::int64_t rank = g.rank;
        last_forward += gemm_time(d, m, rank, g.k, count) + gemm_time(d, m, g.n, rank, count);
        // dX through B and A, and both weight gradients.
        last_backward += gemm_time(d, m, rank, g.n, count) + gemm_time(d, m, g.k, rank, count) +
                         gemm_time(d, rank, g.n, m, count) + gemm_time(d, g.k, rank, m, count);
      }
    }
    out.forward += last_forward;
    out.backward += last_backward;
    if (sac_saved[i]) out.op_sac_saved_forward += last_forward;
  }
  return out;
}

// The attention core per GPU (a/t query heads): a fused kernel by its FLOPs and efficiency, or
// the two batched matmuls of the unfused path (and, for Megatron's fused softmax, its bytes).
struct CoreTimes {
  Seconds forward;
  Seconds backward;
  double fused_softmax_bytes = 0.0;
};

CoreTimes core_times(const model::BlockOps& ops, const model::Training& tr, const ComputeDevice& d,
                     const TimeConventions& tc) {
  const model::AttentionRun& run = ops.run;
  const model::SdpaChoice& sdpa = run.sdpa;
  // SDPA's math fallback upcasts 16-bit q, k, v and multiplies in fp32 on the SIMT units
  // (attention.cpp _scaled_dot_product_attention_math; Falcon-7B on the H200 ran
  // sm80_xmma_gemm_f32f32 ffma kernels), then takes the softmax of the fp32 scores.
  ComputeDevice dm = d;
  // The Triton FlashAttention runs at its share of FlashAttention-2's rate (TimeConventions), an
  // Ampere-instruction kernel at its share of the native kernel's.
  const bool triton = run.runs == Attention::triton;
  const double share = warp_mma_attention_share(run, tr.framework, d.cuda_sm, tc);
  const double fwd_rate = (triton ? tc.triton_fwd_vs_flash : 1.0) * share;
  const double bwd_rate = (triton ? tc.triton_bwd_vs_flash : 1.0) * share;
  if (run.gpu_sdpa && sdpa.fp32_math) {
    dm.peak = d.fp32_peak;
    dm.element_bytes = 4.0;
    dm.profile = nullptr;  // the profile measured tensor-core GEMMs
  }
  CoreTimes out;
  for (const model::Op& op : ops.ops) {
    if (op.kind != model::OpKind::attention_core) continue;
    const model::AttentionShape& at = op.attention;
    const std::int64_t s = at.seq;
    const std::int64_t q = at.query_seq;  // s, or s / cp under context parallelism
    const double sd = dbl(s);
    const double qd = dbl(q);
    const std::int64_t hd = at.head_dim;
    const std::int64_t hv = at.v_head_dim;
    const double b = dbl(at.batch);
    const double bw = at.backward ? 1.0 : 0.0;  // partial fine-tuning's entry layer may run none
    if (run.fused) {
      // A rank's queries against the whole sequence's keys: the load-balanced causal split gives
      // each of the cp ranks 1/cp of the masked work; the kernel runs at the size of its blocks.
      // A materialised mask: the whole s x s work at the unmasked kernel's rate, slowed by the
      // mask's reads (TimeConventions::explicit_mask_attention_slowdown).
      const bool skips = at.causal && !at.explicit_mask;
      const double causal = skips ? model::causal_fraction(s) : 1.0;
      const double slowdown = at.explicit_mask ? tc.explicit_mask_attention_slowdown : 1.0;
      const Flops f(2.0 * b * qd * sd * at.heads_per_gpu * dbl(hd + hv) * causal * slowdown);
      out.forward += f / (d.peak * attention_efficiency(d, false, q, skips, hd) * fwd_rate);
      out.backward += (f * model::kFusedAttentionBackwardRatio * bw) /
                      (d.peak * attention_efficiency(d, true, q, skips, hd) * bwd_rate);
      continue;
    }
    const double batch = b * at.heads_per_gpu;
    // Scores Q K^T (q x d by d x s) and P V (q x s by s x d); backward: dP (like the scores), dQ,
    // dK and dV (like P V).
    const Seconds qk = gemm_time(dm, q, s, hd, batch);
    const Seconds pv = gemm_time(dm, q, hv, s, batch);
    out.forward += qk + pv;
    // dP = dO V^T (q x d_v by d_v x s), dV = P^T dO, dQ = dS K and dK = dS^T Q (q x s by s x d).
    out.backward += (hv == hd ? qk + 3.0 * pv
                              : gemm_time(dm, q, s, hv, batch) + pv + 2.0 * gemm_time(dm, q, hd, s, batch)) * bw;
    if (run.gpu_sdpa && !sdpa.fused()) {
      // The math kernel's own passes over the scores, which eager attention's kernel work counts
      // for the model's code: forward writes the scores, adds the mask in place (read, write) and
      // takes the softmax (read, write); backward writes dP and the softmax backward reads P and
      // dP and writes dS. With dropout, forward writes the mask and the dropped probabilities,
      // backward reads them.
      constexpr double kForwardPasses = 5.0;
      constexpr double kBackwardPasses = 4.0;
      const double drop = sdpa.dropout > 0.0 ? 2.0 : 0.0;
      const double scores = batch * qd * sd * dm.element_bytes;
      out.forward += memory_bound_time(d, Bytes(scores * (kForwardPasses + drop)));
      out.backward += memory_bound_time(d, Bytes(scores * (kBackwardPasses + drop))) * bw;
    }
    if (fused_kernels(tr.framework)) {
      // Megatron's scaled masked softmax and attention dropout, 16-bit in and out.
      const double c = compute_bytes(tr.precision);
      out.fused_softmax_bytes += batch * qd * sd * (tc.fused_softmax_passes * c + tc.dropout_passes * c + 1.0);
    }
  }
  return out;
}

// Megatron's fused elementwise kernels outside the attention core (apex fused LayerNorm, fused
// bias-GeLU, bias-dropout-add, fused rotary, MoE permutation), forward bytes: each kernel's passes
// over its elements (the rotary kernel priced at the norm's passes).
double fused_elementwise_bytes(const model::BlockOps& ops, const TimeConventions& tc) {
  double ew = 0.0;
  for (const model::Op& op : ops.ops) {
    if (op.kind != model::OpKind::fused) continue;
    double passes = 0.0;
    switch (op.pass) {
      case model::FusedPass::norm:
      case model::FusedPass::rotary: passes = tc.fused_norm_passes; break;
      case model::FusedPass::residual: passes = tc.fused_residual_passes; break;
      case model::FusedPass::activation: passes = tc.fused_activation_passes; break;
      case model::FusedPass::permute: passes = tc.eager_residual_passes; break;
    }
    ew += op.elements * (passes * op.element_bytes + op.mask_bytes);
  }
  return ew;
}

// Eager elementwise kernels: their bytes at the bandwidth they reach, each at least the floor.
Seconds eager_elementwise_time(const ComputeDevice& d, const KernelWork& w,
                               const TimeConventions& tc) {
  return Bytes(w.bytes) / (d.elementwise * tc.eager_elementwise_efficiency) +
         d.kernel_floor * w.kernels;
}

}  // namespace

BlockCompute block_compute(const model::Architecture& a, const BlockShape& shape,
                           const model::Training& tr, const ComputeDevice& d,
                           const TimeConventions& tc) {
  model::Training on_gpu = tr;
  on_gpu.cuda_sm = d.cuda_sm;  // one choice of attention for time and kernel work
  return block_compute(shape, model::stack_ops(a, on_gpu, shape.stack), tr, d, tc);
}

namespace {

// The weights of a block's GEMMs on one GPU (every expert's); `trained`: only those whose weight
// gradient the block computes.
double gemm_weights(const model::BlockOps& ops, bool trained = false) {
  double n = 0.0;
  for (const model::Op& op : ops.ops)
    if (op.kind == model::OpKind::gemm && (!trained || op.gemm.weight_grad))
      n += dbl(op.gemm.n) * dbl(op.gemm.k) * dbl(op.gemm.count);
  return n;
}

// The parameters autocast casts in a block: all of them, but under partial fine-tuning only the
// trained ones (fp32; the frozen ones are loaded in the compute dtype).
double cast_parameters(const model::BlockOps& ops, double params, const model::Training& tr) {
  if (!model::trains_subset(tr)) return params;
  const double all = gemm_weights(ops);
  return all > 0.0 ? params * gemm_weights(ops, true) / all : 0.0;
}

// One kind of layer; `params`: the block's parameters on this GPU (what autocast casts).
BlockCompute kind_compute(const model::BlockOps& block, double params, const model::Training& tr,
                          const ComputeDevice& d, const TimeConventions& tc) {
  const LinearTimes lin = linear_times(block, tr, d, tc);
  const CoreTimes core = core_times(block, tr, d, tc);
  const Seconds dequant = memory_bound_time(d, Bytes(lin.dequant_bytes));
  const model::EagerWork casts = model::fp8_cast_work(block, tr, d.cuda_sm);  // an FP8 recipe's quantizations
  BlockCompute out;
  out.gemm_forward = lin.forward;
  out.gemm_backward = lin.backward;
  if (fused_kernels(tr.framework)) {
    const Seconds ew_fwd =
        memory_bound_time(d, Bytes(fused_elementwise_bytes(block, tc) + lin.lora_elementwise));
    const Seconds softmax = memory_bound_time(d, Bytes(core.fused_softmax_bytes));
    out.elementwise_forward = ew_fwd + dequant + memory_bound_time(d, Bytes(casts.forward.bytes));
    out.elementwise_backward = (ew_fwd + softmax) * tc.elementwise_backward_ratio + dequant +
                               memory_bound_time(d, Bytes(casts.backward.bytes));
    out.attention_forward = core.forward + softmax;
    const double gemms = block.gemm_count();
    out.launches_forward = gemms + tc.fused_block_kernels + casts.forward.kernels;
    out.launches_backward = 2.0 * gemms + tc.fused_block_kernels + casts.backward.kernels;
  } else {
    const KernelWork cast_f = autocast_weight_cast(params, tr, false);
    const KernelWork cast_b = autocast_weight_cast(params, tr, true);
    const model::EagerWork w = block.eager_work();
    // Transformer Engine's casts are its own vectorised cast(-transpose) kernels, at the streaming
    // rate; torchao's are eager PyTorch ops like the rest of the block. Under torch.compile every
    // memory-bound kernel is Inductor's, fused and contiguous: the streaming rate too (compiled
    // Llama-3.2-1B on an H200, bf16 and torchao float8: the Triton kernels' time by the profile,
    // data/measurements/h200-2026-11-30-compile-fp8/profile.json).
    const bool inductor = tr.runs_compiled();
    const bool streamed_casts = model::fp8_traits(tr.fp8).transformer_engine || inductor;
    KernelWork eager_f = w.forward + cast_f + (streamed_casts ? KernelWork{} : casts.forward);
    KernelWork eager_b = w.backward + cast_b + (streamed_casts ? KernelWork{} : casts.backward);
    KernelWork stream_f = streamed_casts ? casts.forward : KernelWork{};
    KernelWork stream_b = streamed_casts ? casts.backward : KernelWork{};
    if (inductor) {
      stream_f += eager_f;
      stream_b += eager_b;
      eager_f = eager_b = KernelWork{};
    }
    out.elementwise_forward = eager_elementwise_time(d, eager_f, tc) + dequant + memory_bound_time(d, Bytes(stream_f.bytes)) +
                              d.kernel_floor * stream_f.kernels;
    out.elementwise_backward = eager_elementwise_time(d, eager_b, tc) + dequant +
                               memory_bound_time(d, Bytes(stream_b.bytes)) + d.kernel_floor * stream_b.kernels;
    out.attention_forward = core.forward;
    out.launches_forward = w.forward_launches + casts.forward.kernels;
    out.launches_backward = w.backward_launches + casts.backward.kernels;
  }
  out.forward = lin.forward + out.elementwise_forward + out.attention_forward;
  out.backward = lin.backward + core.backward + out.elementwise_backward;
  out.replayed_forward = out.forward;
  out.replayed_attention = out.attention_forward;
  out.replayed_op_sac = out.forward - lin.op_sac_saved_forward -
                        (model::flash_attention_2_kind(block.run, tr.framework) ? out.attention_forward : Seconds(0.0));
  out.launches_replayed = out.launches_forward;
  if (!block.checkpointed || !block.runs_backward) {  // left alone, or below every layer that needs a gradient
    out.replayed_forward = out.replayed_attention = out.replayed_op_sac = Seconds(0.0);
    out.launches_replayed = 0.0;
  }
  if (!block.runs_backward) {  // forward only
    out.backward = out.gemm_backward = out.elementwise_backward = Seconds(0.0);
    out.launches_backward = 0.0;
  }
  const model::LayerCollectives n = block.collectives();
  out.tensor_parallel_pairs = n.tensor_parallel;
  out.expert_all_to_alls = n.expert_all_to_all;
  return out;
}

}  // namespace

namespace {

// The parameters on one GPU of each kind of layer of a stack: the shape's for its main block, and
// for another kind as much more as its GEMMs' weights differ.
struct KindParameters {
  double main = 0.0;
  double main_gemms = 0.0;
  const model::BlockOps* block = nullptr;
  KindParameters(const BlockShape& shape, const model::StackOps& ops, int tp)
      : main(block_parameters_per_gpu(shape, tp)),
        main_gemms(ops.variants.empty() ? 0.0 : gemm_weights(ops.block)),
        block(&ops.block) {}
  [[nodiscard]] double of(const model::BlockOps& kind) const {
    return &kind == block ? main : main + gemm_weights(kind) - main_gemms;
  }
};

}  // namespace

double stack_parameters_per_gpu(const BlockShape& shape, const model::StackOps& ops, int tp) {
  const KindParameters p(shape, ops, tp);
  if (ops.variants.empty()) return p.main;
  return ops.average<double>([&](const model::BlockOps& b) { return p.of(b); });
}

BlockCompute block_compute(const BlockShape& shape, const model::StackOps& ops, const model::Training& tr,
                           const ComputeDevice& d, const TimeConventions& tc) {
  const bool eager = !fused_kernels(tr.framework);  // the weights' casts are eager PyTorch's
  if (ops.variants.empty())
    return kind_compute(ops.block, eager ? cast_parameters(ops.block, block_parameters_per_gpu(shape, tr.tp), tr) : 0.0,
                        tr, d, tc);
  // Several kinds of layer: the average layer, each kind with its own weights' casts.
  const KindParameters p(shape, ops, tr.tp);
  return ops.average<BlockCompute>(
      [&](const model::BlockOps& b) { return kind_compute(b, eager ? cast_parameters(b, p.of(b), tr) : 0.0, tr, d, tc); });
}

namespace {

// A product with too few output tiles to fill the GPU and a long K: cuBLAS splits K over more
// thread blocks and sums their fp32 partial outputs (the input gradient of a chunk of rows,
// rows x h over the vocabulary). Priced as `splits` stacked products of K / splits and the
// partials' read in the reduction; splits fill one wave, each keeping at least 1024 of K.
Seconds split_k_gemm_time(const ComputeDevice& d, std::int64_t m, std::int64_t n, std::int64_t k) {
  const std::int64_t tiles = ((m + d.tile_m - 1) / d.tile_m) * ((n + d.tile_n - 1) / d.tile_n);
  const std::int64_t splits =
      std::clamp<std::int64_t>(static_cast<std::int64_t>(d.sm_count) / std::max<std::int64_t>(1, tiles), 1,
                               std::max<std::int64_t>(1, k / 1024));
  if (splits == 1) return gemm_time(d, m, n, k);
  return gemm_time(d, m, n, (k + splits - 1) / splits, dbl(splits)) +
         memory_bound_time(d, Bytes(dbl(splits) * dbl(m) * dbl(n) * 4.0));
}

// The head's products and the loss as eager PyTorch (or a fused cross-entropy kernel) runs them.
void eager_head_time(const model::Architecture& a, const model::Training& tr, const ComputeDevice& d,
                     const TimeConventions& tc, EdgeCompute& e) {
  const std::int64_t T = tr.tokens_per_micro_batch();
  const std::int64_t v = std::max<std::int64_t>(1, a.vocab / tr.tp);
  const double c = compute_bytes(tr.precision);
  const bool trainable_head = tr.method == Method::full;
  e.head_forward = gemm_time(d, T, v, a.hidden);
  e.head_backward =
      gemm_time(d, T, a.hidden, v) + (trainable_head ? gemm_time(d, a.hidden, v, T) : Seconds(0.0));
  const LossBytes lb = loss_bytes(a, tr, tc);
  const Bytes loss(dbl(T) * dbl(v) * lb.forward);
  const Bytes loss_backward(dbl(T) * dbl(v) * lb.backward);
  // Gemma 2's logit soft-capping, cap * tanh(logits / cap) in the logits' dtype: three
  // elementwise kernels forward (each reads and writes the logits), and backward the two scalings
  // (read, write) and tanh's gradient (reads the gradient and the output, writes one).
  const Bytes softcap(a.logit_softcap > 0.0 ? dbl(T) * dbl(v) * c : 0.0);
  e.head_forward += memory_bound_time(d, loss + softcap * 6.0);
  e.head_backward += memory_bound_time(d, loss_backward + softcap * 7.0);
  e.head_memory_bound = memory_bound_time(d, loss + loss_backward + softcap * 13.0);
}

// Liger's fused linear cross-entropy (model::OpListVariant::fused_linear_loss), all in forward: per
// chunk of rows the logits' product, the loss kernel reading the chunk's logits and writing their
// gradient over them, the input gradient's product and, for a trained head, the weight gradient's
// addmm into the accumulator (the weight's dtype: fp32 under *-mixed). That addmm's K is one chunk
// of rows, so each tile reads and writes its slice of the accumulator after a short loop: its
// read-modify-write is added to the product's time rather than hidden under it. Before the chunks
// the two gradient buffers are zeroed; backward scales them by the loss's gradient (the Trainer's
// sum over its items: one read and write of each).
void fused_linear_loss_time(const model::Architecture& a, const model::Training& tr, const ComputeDevice& d,
                            const TimeConventions& tc, EdgeCompute& e) {
  const model::LossChunks ch = model::fused_linear_loss_chunks(a, tr);
  const double n = dbl(ch.count);
  const std::int64_t v = std::max<std::int64_t>(1, a.vocab / tr.tp);
  const std::int64_t h = a.hidden;
  const double T = dbl(tr.tokens_per_micro_batch());
  const double c = compute_bytes(tr.precision);
  const double s = is_mixed(tr.precision) ? 4.0 : param_bytes(tr.precision);  // the hidden states
  const bool trainable_head = tr.method == Method::full;
  const double acc = trainable_head ? param_bytes(tr.precision) * dbl(v) * dbl(h) : 0.0;
  // Each chunk's products are launches of their own (no stacking across chunks).
  Seconds gemms = (gemm_time(d, ch.rows, v, h) + split_k_gemm_time(d, ch.rows, h, v)) * n;
  if (trainable_head) gemms += gemm_time(d, v, h, ch.rows) * n + memory_bound_time(d, Bytes(2.0 * acc * n));
  const Bytes loss(T * dbl(v) * 2.0 * c);
  const Bytes zero(T * dbl(h) * s + acc);
  e.head_forward = gemms + memory_bound_time(d, loss + zero);
  e.head_backward = memory_bound_time(d, zero * 2.0);
  e.head_memory_bound = memory_bound_time(d, loss + zero * 3.0);
  e.head_host_synchronized = tc.liger_host_per_chunk * n;
}

}  // namespace

EdgeCompute edge_compute(const model::Architecture& a, const model::Training& tr,
                         const ComputeDevice& d, const TimeConventions& tc) {
  return edge_compute(a, tr, d, tc, model::edge_ops(a, tr, model::Edge::embedding),
                      model::edge_ops(a, tr, model::Edge::head));
}

EdgeCompute edge_compute(const model::Architecture& a, const model::Training& tr,
                         const ComputeDevice& d, const TimeConventions& tc,
                         const model::BlockOps& embedding, const model::BlockOps& head) {
  EdgeCompute e;
  const int t = tr.tp;
  const std::int64_t T = tr.tokens_per_micro_batch();
  const double c = compute_bytes(tr.precision);
  const bool trainable_head = tr.method == Method::full;
  if (model::op_variant(a, tr).fused_linear_loss)
    fused_linear_loss_time(a, tr, d, tc, e);
  else
    eager_head_time(a, tr, d, tc, e);
  const Bytes lookup(dbl(T) * dbl(a.hidden) * c * tc.dropout_passes);
  e.embedding_forward = memory_bound_time(d, lookup);
  e.embedding_backward =
      trainable_head ? memory_bound_time(d, lookup * tc.elementwise_backward_ratio) : Seconds(0.0);
  e.embedding_memory_bound = e.embedding_forward + e.embedding_backward;
  const model::EagerWork hw = head.eager_work();
  const model::EagerWork ew = embedding.eager_work();
  e.head_launches_forward = hw.forward_launches;
  e.head_launches_backward = hw.backward_launches;
  e.embedding_launches_forward = ew.forward_launches;
  e.embedding_launches_backward = ew.backward_launches;
  if (a.mtp_layers > 0) {
    // Multi-token prediction: each module runs the head and its loss again, after its projection
    // 2h -> h (column-parallel under TP); its block is one more layer of the last stage
    // (planner::Evaluator).
    const double n = dbl(a.mtp_layers);
    const std::int64_t h = a.hidden;
    const std::int64_t h_tp = std::max<std::int64_t>(1, h / t);
    const Seconds proj_f = gemm_time(d, T, h_tp, 2 * h);
    const Seconds proj_b = gemm_time(d, T, 2 * h, h_tp) + (trainable_head ? gemm_time(d, 2 * h, h_tp, T) : Seconds(0.0));
    e.head_forward = e.head_forward * (1.0 + n) + proj_f * n;
    e.head_backward = e.head_backward * (1.0 + n) + proj_b * n;
    e.head_memory_bound = e.head_memory_bound * (1.0 + n);
    e.head_launches_forward *= 1.0 + n;
    e.head_launches_backward *= 1.0 + n;
  }
  return e;
}

}  // namespace trainplan::planner
