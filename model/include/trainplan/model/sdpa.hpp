#pragma once
// torch.nn.functional.scaled_dot_product_attention picks its kernel at run time. This is that choice
// on CUDA, from PyTorch's own filters, and what a Hugging Face model hands it, per family; the
// activation and time models follow the kernel it picks (docs/formulas.md, "SDPA dispatch").
//
// Sources: pytorch/pytorch aten/src/ATen/native/transformers/cuda/sdp_utils.cpp (main at commit
// 001f694aef6f, read 2026-11-26: select_sdp_backend :1179-1242; file:line at each rule in
// sdpa.cpp) and aten/src/ATen/native/transformers/sdp_utils_cpp.h (at commit 0119c2052192),
// aten/src/ATen/native/transformers/attention.cpp (_scaled_dot_product_attention_math), and the
// kernels the profiler saw with torch 2.11.0 + cuDNN 9.19 on an H200
// (data/measurements/h200-2026-11-26/sdpa-dispatch.json) where 2.11 differs from main.
// What each family passes: huggingface/transformers v5.17.0 (the release of the H200 runs),
// src/transformers/ paths, lines at each entry of sdpa.cpp's table.

#include <cstdint>
#include <string>

#include "trainplan/core/enum_table.hpp"
#include "trainplan/model/architecture.hpp"
#include "trainplan/model/training.hpp"

namespace trainplan::model {

// `unsupported`: the model has no SDPA path (transformers refuses attn_implementation="sdpa"); the
// model's eager attention is what can run.
enum class SdpaKernel { flash, efficient, cudnn, math, cpu, unsupported };
// How the mask reaches SDPA: none (bidirectional), the is_causal flag, or a materialised
// b x 1 x s x s tensor, boolean or additive float.
enum class SdpaMask { none, causal_flag, boolean, additive };
enum class SdpaDtype { fp16, bf16, fp32 };

struct SdpaInputs {
  int cuda_sm = 0;          // compute capability major*10+minor; 0: not a CUDA GPU (the CPU oracle)
  int torch_minor = 11;     // torch 2.x
  int cudnn_version = 91900;  // cudnnGetVersion(): 9.19.0
  SdpaMask mask = SdpaMask::causal_flag;
  SdpaDtype dtype = SdpaDtype::bf16;      // query, key, value
  SdpaDtype mask_dtype = SdpaDtype::bf16;  // an additive mask
  std::int64_t head_dim = 128;   // of queries and keys
  std::int64_t v_head_dim = 0;   // of values; 0: head_dim
  std::int64_t q_heads = 32;
  std::int64_t kv_heads = 32;  // as passed: after any repeat_kv expansion
  bool enable_gqa = false;
  double dropout = 0.0;
  bool requires_grad = true;
};

struct SdpaChoice {
  SdpaKernel kernel = SdpaKernel::cpu;
  std::string reason;
  // math only: q, k, v and the probabilities upcast to fp32 (fp16/bf16 reductions not allowed,
  // torch.backends.cuda.allow_fp16_bf16_reduction_math_sdp() false by default).
  bool fp32_math = false;
  // The K/V heads the kernel reads: grouped (enable_gqa or a broadcast single head) or expanded
  // to every query head (repeat_kv, integrations/sdpa_attention.py:15-24 and :97-100; Falcon's
  // broadcast_to + flatten, models/falcon/modeling_falcon.py:271-274; transformers v5.17.0).
  bool kv_expanded = false;
  SdpaMask mask = SdpaMask::causal_flag;
  double dropout = 0.0;
  // Fused kernels keep output and log-sum-exp; math keeps the probabilities (and dropout mask).
  [[nodiscard]] bool fused() const;
};

// PyTorch's select_sdp_backend (sdp_utils.cpp:1179-1242 at 001f694aef6f) for dense inputs (no
// nested tensors, no user-disabled backends).
[[nodiscard]] SdpaChoice choose_sdpa_kernel(const SdpaInputs& in);

// What a family's Hugging Face implementation (transformers 5.17) passes to SDPA in training,
// one table keyed by model_type (sdpa.cpp), never `if family == ...` elsewhere.
struct HfSdpaCall {
  bool supported = true;       // transformers has an SDPA path for the family
  bool own_attention = false;  // its own SDPA call, not transformers' sdpa_attention_forward
  bool always_mask = false;    // materialises its causal mask even without padding
  bool kv_as_is = false;       // passes K/V with fewer heads without enable_gqa (Falcon MQA)
  bool kv_broadcast = false;   // expands K/V to every head itself (Falcon's new decoder)
  bool dropout = true;         // passes attention dropout in training
  // Its eager attention takes the softmax in the model dtype, not fp32 plus a cast copy: Falcon's
  // F.softmax(..., dtype=hidden_states.dtype) (v5.17.0 modeling_falcon.py:363); T5's
  // softmax(scores.float()).type_as(scores) (v4.57.1 modeling_t5.py:561; v5.17.0 :167 takes
  // nn.functional.softmax(attn_weights) in the model dtype).
  bool eager_softmax_in_model_dtype = false;
  // The transformers release (major*100+minor) that dropped the SDPA path; 0: never. From that
  // release on the family runs as if `supported` were false.
  int sdpa_removed_in = 0;
  const char* source = "";     // the implementation read, file:line and function
};
// A sliding window (Mistral) the sequence reaches: transformers then builds an explicit mask
// (v5.17.0 masking_utils.py:263, `kv_length >= local_attention_size`) instead of passing is_causal.
[[nodiscard]] bool sliding_window_masked(const Architecture& a, const Training& tr);
// The family's call in the transformers release tr.transformers.
[[nodiscard]] HfSdpaCall hf_sdpa_call(const Architecture& a, const Training& tr);

// The kernel PyTorch picks for one block's self-attention of this model in this training setup,
// on the GPU of compute capability tr.cuda_sm (0: the CPU kernels of the oracle).
[[nodiscard]] SdpaChoice sdpa_choice(const Architecture& a, const Training& tr);

// The attention a block runs on a device of CUDA compute capability cuda_sm: the one choice that
// the activation model, the attention time, the memory-bound work and the replay follow. A family
// transformers has no SDPA path for runs its eager attention; SDPA on a CUDA GPU runs the kernel
// PyTorch's dispatch picks; elsewhere the request decides: flash is fused, SDPA is fused in 16 bits
// (in fp32 it falls back to the math kernel, which materialises the scores like eager attention),
// eager is not.
struct AttentionRun {
  Attention runs = Attention::flash;  // what the model executes (eager where SDPA has no path)
  bool fused = false;
  bool gpu_sdpa = false;  // `sdpa` below is PyTorch's dispatch
  SdpaChoice sdpa;        // when gpu_sdpa
  // The scores are the model's own ops (eager attention, or SDPA where no dispatch is modelled):
  // their kernels are counted with the block's memory-bound work; the dispatch's math kernel is
  // priced with the attention core instead.
  [[nodiscard]] bool model_code_core() const { return !fused && !gpu_sdpa; }
};
[[nodiscard]] AttentionRun attention_run(const Architecture& a, const Training& tr, int cuda_sm);
// The run is a kernel of FlashAttention-2's kind: PyTorch's SDPA flash or efficient kernel, or the
// flash-attn 2.x package that `flash` means outside Megatron (whose Transformer Engine runs cuDNN's
// fused attention on Hopper and later). Built on Ampere's warp-level instructions; what
// torchtitan's per-op checkpointing saves (block_ops.hpp op_sac_saved).
[[nodiscard]] bool flash_attention_2_kind(const AttentionRun& run, Framework framework);
// AttentionRun::runs alone, without the dispatch; the second form for a caller that resolved the
// family's SDPA path already (hf_sdpa_call(a, tr).supported).
[[nodiscard]] Attention attention_executed(const Architecture& a, const Training& tr, int cuda_sm);
[[nodiscard]] Attention attention_executed(bool sdpa_path, Attention requested, int cuda_sm);

}  // namespace trainplan::model

namespace trainplan {
template <>
struct EnumTable<model::SdpaKernel> {
  static constexpr std::string_view kWhat = "SDPA kernel";
  static constexpr std::array kEntries{
      std::pair{model::SdpaKernel::flash, std::string_view{"flash"}},
      std::pair{model::SdpaKernel::efficient, std::string_view{"efficient"}},
      std::pair{model::SdpaKernel::cudnn, std::string_view{"cudnn"}},
      std::pair{model::SdpaKernel::math, std::string_view{"math"}},
      std::pair{model::SdpaKernel::cpu, std::string_view{"cpu"}},
      std::pair{model::SdpaKernel::unsupported, std::string_view{"unsupported"}}};
};
}  // namespace trainplan
