#include "trainplan/model/sdpa.hpp"

#include "trainplan/model/family.hpp"
#include "trainplan/model/library.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string_view>

namespace trainplan::model {
namespace {

bool half(SdpaDtype d) { return d != SdpaDtype::fp32; }
bool in_range(int sm, int lo, int hi) { return sm >= lo && sm <= hi; }
std::string num(std::int64_t v) { return std::to_string(v); }

// A refusal: the first filter of a backend that fails, or nothing.
using Refusal = std::optional<std::string>;

// sdp_utils_cpp.h at 0119c2052192: check_batch_size_and_num_heads_dense (:379-432) and
// check_grouped_query_attention (:339-376): fewer K/V heads pass only with enable_gqa and a backend
// that supports it (:412-414), and must divide the query heads (:361). Main's sdp_utils.cpp passes a
// supports_mqa flag to that check (:1006, :1079, :1149), not read nor modelled: the one-K/V-head
// fallback to math is torch 2.11's, as the H200 measured for Falcon-7B.
Refusal heads_refusal(const SdpaInputs& in, bool supports_gqa) {
  if (in.q_heads == in.kv_heads) return std::nullopt;
  if (!in.enable_gqa || !supports_gqa)
    return num(in.kv_heads) + " K/V heads for " + num(in.q_heads) +
           " query heads without enable_gqa (check_batch_size_and_num_heads_dense)";
  if (in.q_heads % in.kv_heads != 0)
    return "K/V heads do not divide the query heads (check_grouped_query_attention)";
  return std::nullopt;
}

// sdp_utils.cpp:962-1031 can_use_cudnn_attention (at 001f694aef6f, as every sdp_utils.cpp line here).
Refusal cudnn_refusal(const SdpaInputs& in) {
  // check_dtypes_low_precision (:912-922, listed at :992): fp16/bf16 from sm80, fp16 below
  if (!half(in.dtype)) return std::string("fp32 inputs (check_dtypes_low_precision: fp16/bf16 only)");
  if (in.dtype == SdpaDtype::bf16 && in.cuda_sm < 80) return std::string("bf16 below sm80");
  // check_cudnn_hardware_support (:869-891): [sm80, sm121] (:879)
  if (!in_range(in.cuda_sm, 80, 121)) return "sm" + std::to_string(in.cuda_sm) + " outside [sm80, sm121] (check_cudnn_hardware_support)";
  // can_use_cudnn_attention: no dropout with cuDNN 9.11-9.13 (:977).
  if (in.dropout > 0.0 && in.cudnn_version > 91100 && in.cudnn_version < 91400)
    return std::string("dropout with cuDNN 9.11-9.13 (can_use_cudnn_attention)");
  // check_cudnn_dropout (:619-629, listed at :995): a probability on the 1/16 grid; in main after
  // 2.11 (torch 2.11 on the H200 ran cuDNN with GPT-2's p = 0.1).
  if (in.torch_minor > 11 && in.dropout * 16.0 != std::floor(in.dropout * 16.0))
    return std::string("dropout not a multiple of 1/16 (check_cudnn_dropout)");
  if (auto r = heads_refusal(in, true)) return r;
  // check_cudnn_tensor_shapes (:631-729): head dim a multiple of 8 (:685-691), at most 128; 256 on
  // sm90/sm10x (:662-677; main: cuDNN above 9.22; torch 2.11 ran Gemma's 256 with cuDNN 9.19 on the
  // H200).
  const bool sm90_or_10x = in.cuda_sm == 90 || in.cuda_sm / 10 == 10;
  const bool d256 = sm90_or_10x && (in.torch_minor <= 11 || in.cudnn_version > 92200);
  const std::int64_t limit = d256 ? 256 : 128;
  if (in.head_dim > limit)
    return "head dim " + num(in.head_dim) + " above " + num(limit) + " (check_cudnn_tensor_shapes)";
  if (in.head_dim % 8 != 0) return "head dim not a multiple of 8 (check_cudnn_tensor_shapes)";
  // check_cudnn_d256_bprop_head_dim (:761-800): backward only for d <= 128 or d == 256 on sm90/sm10x.
  if (in.requires_grad && d256 && in.head_dim > 128 && in.head_dim != 256)
    return "backward with head dim " + num(in.head_dim) + " (check_cudnn_d256_bprop_head_dim)";
  return std::nullopt;
}

// sdp_utils.cpp:1041-1090 can_use_flash_attention (filters listed at :1049-1058).
Refusal flash_refusal(const SdpaInputs& in) {
  // check_for_attn_mask (sdp_utils_cpp.h:261-269)
  if (in.mask == SdpaMask::boolean || in.mask == SdpaMask::additive)
    return std::string("an explicit attn_mask (check_for_attn_mask)");
  // check_head_dim_size_flash (:195-254; 256 at :203): one head dim for q, k and v
  if (in.v_head_dim > 0 && in.v_head_dim != in.head_dim)
    return "value head dim " + num(in.v_head_dim) + " unlike query/key head dim " + num(in.head_dim) +
           " (check_head_dim_size_flash)";
  if (in.head_dim > 256) return "head dim " + num(in.head_dim) + " above 256 (check_head_dim_size_flash)";
  // check_flash_attention_hardware_support (:426-481): [sm80, sm121] (:468)
  if (!in_range(in.cuda_sm, 80, 121))
    return "sm" + std::to_string(in.cuda_sm) + " outside [sm80, sm121] (check_flash_attention_hardware_support)";
  // check_requires_grad_and_head_dim_gt192_constraints_on_sm86_89_or_120 (:543-577)
  const bool sm86_89_120 = in_range(in.cuda_sm, 86, 89) || in_range(in.cuda_sm, 120, 121);
  if (in.requires_grad && sm86_89_120 && in.head_dim > 192 && !(in.dropout == 0.0 && in.head_dim > 224))
    return "training with head dim " + num(in.head_dim) + " on sm86-89/sm120 (check_requires_grad_and_head_dim_gt192_constraints_on_sm86_89_or_120)";
  // check_dtypes_flash_attention (:924-933)
  if (!half(in.dtype)) return std::string("fp32 inputs (check_dtypes_flash_attention: fp16/bf16 only)");
  if (auto r = heads_refusal(in, true)) return r;
  return std::nullopt;
}

// sdp_utils.cpp:1092-1177 can_use_mem_efficient_attention.
Refusal efficient_refusal(const SdpaInputs& in) {
  // check_mem_efficient_hardware_support (:483-541): [sm50, sm121] (:528)
  if (!in_range(in.cuda_sm, 50, 121))
    return "sm" + std::to_string(in.cuda_sm) + " outside [sm50, sm121] (check_mem_efficient_hardware_support)";
  // check_head_dim_size_mem_efficient (:287-348) with minimum_gemm_alignment (:146-160): 8 elements
  // for 16-bit inputs on tensor cores (sm70 fp16, sm80+), 4 for fp32 on sm80+, else 1.
  const bool tensor_cores = in.cuda_sm >= 80 || (in.cuda_sm >= 70 && in.dtype == SdpaDtype::fp16);
  std::int64_t align = in.cuda_sm >= 80 ? 4 : 1;
  if (tensor_cores) align = std::max<std::int64_t>(align, half(in.dtype) ? 8 : 4);
  if (in.head_dim % align != 0 || (in.v_head_dim > 0 && in.v_head_dim % align != 0))
    return "head dim not a multiple of " + num(align) + " (check_head_dim_size_mem_efficient)";
  if (auto r = heads_refusal(in, true)) return r;
  // dtypes: fp16, fp32, and bf16 from sm80 (:1098-1099, :1106-1107, :1171-1175)
  if (in.dtype == SdpaDtype::bf16 && in.cuda_sm < 80)
    return std::string("bf16 below sm80 (can_use_mem_efficient_attention dtypes)");
  return std::nullopt;
}

// priority_order (sdp_utils.cpp:123-135): cuDNN first on sm90/sm10x with cuDNN newer than 9.15
// (check_prefer_cudnn_attention :93-120; :109 on CUDA 13 wheels, :107 below CUDA 13 with minor 0
// or 3 only), else the context's default order flash, efficient, math, cuDNN
// (aten/src/ATen/Context.h sdp_priority_order).
bool prefers_cudnn(const SdpaInputs& in) {
  return in.cudnn_version > 91500 && (in.cuda_sm / 10 == 9 || in.cuda_sm / 10 == 10);
}

}  // namespace

bool SdpaChoice::fused() const {
  switch (kernel) {
    case SdpaKernel::flash:
    case SdpaKernel::efficient:
    case SdpaKernel::cudnn:
    case SdpaKernel::cpu: return true;
    case SdpaKernel::math:
    case SdpaKernel::unsupported: return false;
  }
  return false;
}

SdpaChoice choose_sdpa_kernel(const SdpaInputs& in) {
  SdpaChoice c;
  c.mask = in.mask;
  c.dropout = in.dropout;
  if (in.cuda_sm <= 0) {
    // sdp_utils_cpp.h check_head_dim_size_cpp: the CPU flash kernel takes one head dim for q, k
    // and v; otherwise the math fallback.
    if (in.v_head_dim > 0 && in.v_head_dim != in.head_dim) {
      c.fp32_math = half(in.dtype);
      c.kernel = SdpaKernel::math;
      c.reason = "not a CUDA GPU: value heads narrower than query/key heads take the CPU math fallback" +
                 std::string(c.fp32_math ? " in fp32" : "");
      return c;
    }
    c.kernel = SdpaKernel::cpu;
    c.reason = "not a CUDA GPU: PyTorch's CPU kernels (the oracle's), output and log-sum-exp kept";
    return c;
  }
  const Refusal cudnn = cudnn_refusal(in);
  const Refusal flash = flash_refusal(in);
  const Refusal efficient = efficient_refusal(in);
  const std::string sm = "sm" + std::to_string(in.cuda_sm);
  auto pick = [&](SdpaKernel k, const std::string& why) {
    c.kernel = k;
    c.reason = why;
  };
  if (prefers_cudnn(in) && !cudnn) {
    pick(SdpaKernel::cudnn, "cuDNN attention, first on " + sm + " with cuDNN > 9.15 (check_prefer_cudnn_attention)");
  } else if (!flash) {
    pick(SdpaKernel::flash, prefers_cudnn(in) ? "FlashAttention-2; cuDNN refused: " + *cudnn
                                              : "FlashAttention-2, first in the default order on " + sm);
  } else if (!efficient) {
    pick(SdpaKernel::efficient, "memory-efficient attention; flash refused: " + *flash);
  } else {
    // The math fallback: q, k, v cast to fp32 unless fp16/bf16 reductions are allowed
    // (attention.cpp _scaled_dot_product_attention_math), the probabilities materialised.
    c.fp32_math = half(in.dtype);
    pick(SdpaKernel::math, "math fallback" + std::string(c.fp32_math ? " in fp32" : "") +
                               "; flash refused: " + *flash + "; efficient refused: " + *efficient +
                               (cudnn ? "; cuDNN refused: " + *cudnn : std::string()));
  }
  return c;
}

bool sliding_window_masked(const Architecture& a, const Training& tr) {
  return a.sliding_window > 0 && tr.seq >= a.sliding_window;
}

HfSdpaCall hf_sdpa_call(const Architecture& a, const Training& tr) {
  if (const HfSdpaCall* own = library_traits(tr.library).sdpa_call) return *own;
  HfSdpaCall call = family_of(a).sdpa;
  if (call.sdpa_removed_in > 0 && tr.transformers >= call.sdpa_removed_in) {
    call.supported = false;
    call.dropout = false;
  }
  // Under torch.compile transformers never leaves the causal mask to is_causal: its check that
  // would skip the mask returns false while dynamo traces (masking_utils.py
  // _ignore_causal_mask_sdpa, `is_tracing = ... or is_torchdynamo_compiling()`; v5.17.0), so SDPA
  // gets the b x 1 x s x s mask (the compiled H200 runs ran cuDNN attention at 2.7-3x the eager
  // kernel time: data/measurements/h200-2026-11-28-compile).
  if (tr.compile && runs_transformers_models(tr.library)) call.always_mask = true;
  return call;
}

Attention attention_executed(bool sdpa_path, Attention requested, int cuda_sm) {
  return requested == Attention::sdpa && cuda_sm > 0 && !sdpa_path ? Attention::eager : requested;
}

Attention attention_executed(const Architecture& a, const Training& tr, int cuda_sm) {
  if (tr.attention != Attention::sdpa) return tr.attention;
  return attention_executed(hf_sdpa_call(a, tr).supported, tr.attention, cuda_sm);
}

AttentionRun attention_run(const Architecture& a, const Training& tr, int cuda_sm) {
  AttentionRun r;
  r.runs = attention_executed(a, tr, cuda_sm);
  switch (r.runs) {
    case Attention::flash:
    case Attention::triton:
      r.fused = true;
      break;
    case Attention::sdpa:
      // The dispatch is followed on a GPU, and on the CPU where its flash kernel refuses the
      // shapes (value heads narrower than query/key heads: the math fallback).
      r.gpu_sdpa = cuda_sm > 0 || a.value_head_dim() != a.head_dim;
      if (r.gpu_sdpa) {
        Training on_gpu = tr;
        on_gpu.cuda_sm = cuda_sm;
        r.sdpa = sdpa_choice(a, on_gpu);
        r.fused = r.sdpa.fused();
      } else {
        r.fused = compute_bytes(tr.precision) < 4.0;
      }
      break;
    case Attention::eager:
      break;
  }
  return r;
}

SdpaChoice sdpa_choice(const Architecture& a, const Training& tr) {
  const HfSdpaCall call = hf_sdpa_call(a, tr);
  if (!call.supported) {
    SdpaChoice c;
    c.kernel = SdpaKernel::unsupported;
    c.mask = SdpaMask::additive;
    c.reason = "transformers " + transformers_release_text(tr.transformers) + " has no SDPA path for " + a.family +
               " (" + call.source + "): its eager attention runs";
    return c;
  }
  SdpaInputs in;
  in.cuda_sm = tr.cuda_sm;
  in.dtype = compute_bytes(tr.precision) >= 4.0 ? SdpaDtype::fp32
             : tr.precision == Precision::fp16_mixed || tr.precision == Precision::fp16_true
                 ? SdpaDtype::fp16
                 : SdpaDtype::bf16;
  in.head_dim = a.head_dim;
  in.v_head_dim = a.value_head_dim();
  in.q_heads = a.heads;
  const bool masked = call.always_mask || sliding_window_masked(a, tr);
  in.mask = masked ? SdpaMask::boolean : (a.encoder_decoder ? SdpaMask::none : SdpaMask::causal_flag);
  in.dropout = call.dropout ? attention_dropout(a, tr) : 0.0;
  const bool grouped = a.kv_heads != a.heads;
  bool expanded = false;
  if (grouped && call.kv_as_is) {
    expanded = call.kv_broadcast && (a.kv_heads > 1 || library_traits(tr.library).kv_expanded);
    in.kv_heads = expanded ? a.heads : a.kv_heads;
    in.enable_gqa = false;
  } else if (grouped) {
    expanded = masked;  // repeat_kv when a mask is passed, enable_gqa otherwise
    in.kv_heads = expanded ? a.heads : a.kv_heads;
    in.enable_gqa = !expanded;
  } else {
    in.kv_heads = a.kv_heads;
  }
  SdpaChoice c = choose_sdpa_kernel(in);
  c.kv_expanded = expanded;
  if (c.kernel == SdpaKernel::cpu) return c;
  c.reason += std::string(" [") + a.family + ": " + call.source + "]";
  return c;
}

bool flash_attention_2_kind(const AttentionRun& run, Framework framework) {
  if (!run.fused) return false;
  if (run.gpu_sdpa) return run.sdpa.kernel == SdpaKernel::flash || run.sdpa.kernel == SdpaKernel::efficient;
  return run.runs == Attention::flash && framework != Framework::megatron;
}

}  // namespace trainplan::model
