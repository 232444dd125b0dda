#include "trainplan/model/sdpa.hpp"

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
  // check_head_dim_size_flash (:195-254; 256 at :203)
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
  if (in.head_dim % align != 0)
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

HfSdpaCall hf_sdpa_call(const Architecture& a) {
  // transformers v5.17.0, src/transformers/integrations/sdpa_attention.py:79-170
  // sdpa_attention_forward: is_causal when no mask is given (:124; masking_utils.py:497-500 gives
  // None without padding, :269-270, unless a sliding window reaches the sequence, :263); K/V grouped
  // with enable_gqa when the mask is None and the head dim <= 256 (use_gqa_in_sdpa :27-36, used at
  // :97-102), else expanded by repeat_kv (:15-24); dropout = the module's attention_dropout in
  // training (e.g. models/llama/modeling_llama.py:274). The same at 00c238bd242b: :40, :107-112.
  // Not modelled: the head-dim <= 256 condition for enable_gqa (no catalogue family exceeds it).
  static const HfSdpaCall kShared{.source = "integrations/sdpa_attention.py sdpa_attention_forward"};
  // No SDPA path: ALiBi (bloom, mpt) and T5's relative position bias; transformers refuses
  // attn_implementation="sdpa" (_supports_sdpa left False, modeling_utils.py:1131; raised at
  // :1669-1674). T5 and mT5 have one in v5.17.0 (models/t5/modeling_t5.py:542,
  // models/mt5/modeling_mt5.py:553: position bias as an additive mask), not in v4.57.1
  // (modeling_t5.py:774-783 without _supports_sdpa); their rows keep the v4.57.1 rule.
  auto refused = [](const char* source, bool softmax_in_model_dtype) {
    return HfSdpaCall{.supported = false,
                      .dropout = false,
                      .eager_softmax_in_model_dtype = softmax_in_model_dtype,
                      .source = source};
  };
  static const std::map<std::string, HfSdpaCall, std::less<>> kTable{
      {"llama", kShared},
      {"mistral", kShared},
      {"mixtral", kShared},
      {"qwen2", kShared},
      {"gemma", kShared},
      {"gpt2", kShared},
      {"gpt_neox", kShared},
      {"phi", kShared},
      // v5.17.0 models/falcon/modeling_falcon.py:350-357 FalconAttention.forward: its own SDPA
      // call with the causal mask the model builds (:763-770, allow_is_causal_skip=False),
      // dropout_p = 0.0 on the rotary path (:355); K/V of the multi-query model passed with one
      // head and no enable_gqa (_split_heads :280-283, :331-332), the new decoder's broadcast_to
      // every query head and flattened, a copy (:265-275). Its eager softmax is bf16 in and out
      // (:363; softmax_warp_forward<BFloat16, BFloat16, float> in the H200 profile).
      {"falcon",
       {.own_attention = true,
        .always_mask = true,
        .kv_as_is = true,
        .kv_broadcast = true,
        .dropout = false,
        .eager_softmax_in_model_dtype = true,
        .source = "models/falcon/modeling_falcon.py FalconAttention.forward"}},
      // v5.17.0 models/bloom/modeling_bloom.py:406-412 and models/mpt/modeling_mpt.py:216-220:
      // PreTrainedModel subclasses without _supports_sdpa.
      {"bloom", refused("models/bloom/modeling_bloom.py (no _supports_sdpa)", false)},
      {"mpt", refused("models/mpt/modeling_mpt.py (no _supports_sdpa)", false)},
      {"t5", refused("models/t5/modeling_t5.py (no _supports_sdpa)", true)},
      // v5.24.0: Gemma 2 soft-caps its scores, gpt-oss adds a sink to every row; neither has an
      // SDPA path (_supports_sdpa = False, modeling_gemma2.py, modeling_gpt_oss.py). Gemma 2's
      // eager softmax is fp32 cast back, gpt-oss's in the model dtype.
      {"gemma2", refused("models/gemma2/modeling_gemma2.py (_supports_sdpa = False: softcapping)", false)},
      {"gpt_oss", refused("models/gpt_oss/modeling_gpt_oss.py (_supports_sdpa = False: attention sinks)", true)},
      {"mt5", refused("models/mt5/modeling_mt5.py (no _supports_sdpa)", true)},
  };
  const auto it = kTable.find(a.family);
  return it == kTable.end() ? kShared : it->second;
}

SdpaChoice sdpa_choice(const Architecture& a, const Training& tr) {
  const HfSdpaCall call = hf_sdpa_call(a);
  if (!call.supported) {
    SdpaChoice c;
    c.kernel = SdpaKernel::unsupported;
    c.mask = SdpaMask::additive;
    c.reason = std::string("transformers has no SDPA path for ") + a.family + " (" + call.source +
               "): its eager attention runs";
    return c;
  }
  SdpaInputs in;
  in.cuda_sm = tr.cuda_sm;
  in.dtype = compute_bytes(tr.precision) >= 4.0 ? SdpaDtype::fp32
             : tr.precision == Precision::fp16_mixed || tr.precision == Precision::fp16_true
                 ? SdpaDtype::fp16
                 : SdpaDtype::bf16;
  in.head_dim = a.head_dim;
  in.q_heads = a.heads;
  const bool masked = call.always_mask || sliding_window_masked(a, tr);
  in.mask = masked ? SdpaMask::boolean : (a.encoder_decoder ? SdpaMask::none : SdpaMask::causal_flag);
  in.dropout = call.dropout ? a.attention_dropout : 0.0;
  const bool grouped = a.kv_heads != a.heads;
  bool expanded = false;
  if (grouped && call.kv_as_is) {
    expanded = call.kv_broadcast && a.kv_heads > 1;
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

}  // namespace trainplan::model
