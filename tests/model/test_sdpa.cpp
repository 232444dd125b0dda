// The SDPA kernel PyTorch picks (model/sdpa.hpp): per catalogue family on an H100, and PyTorch's
// dispatch rules one by one.
//
// Sources: pytorch/pytorch aten/src/ATen/native/transformers/cuda/sdp_utils.cpp (main at commit
// 001f694aef6f; the filter named in each row), sdp_utils_cpp.h (check_batch_size_and_num_heads_dense
// at commit 0119c2052192), and the kernels the profiler saw with torch 2.11.0 + cuDNN 9.19 on an H200
// (sm90, like the H100): data/measurements/h200-2026-11-26/sdpa-dispatch.json, the H200
// measurements of 2026-11-26 ("cudnn_generated_fort_native_sdpa_sm90_flash_*" kernels for llama,
// mistral, mixtral, qwen2, gemma, gpt2, phi; fp32 GEMMs and a softmax for falcon; transformers
// refusing sdpa for bloom and mpt).
#include <gtest/gtest.h>

#include "../common/catalog.hpp"
#include "trainplan/io/catalog.hpp"
#include "trainplan/io/hf_config.hpp"
#include "trainplan/model/activations.hpp"
#include "trainplan/model/sdpa.hpp"

namespace trainplan {
namespace {

using model::SdpaKernel;

using test::catalog;

model::Training h100_bf16(std::int64_t seq) {
  model::Training tr;
  tr.precision = Precision::bf16_mixed;
  tr.attention = Attention::sdpa;
  tr.seq = seq;
  tr.cuda_sm = 90;  // H100 SXM: compute capability 9.0
  return tr;
}

struct FamilyRow {
  const char* model;      // catalogue name, or an inline config
  SdpaKernel kernel;      // chosen under --attention sdpa on an H100 in bf16
  const char* reason;     // a phrase of the reason
  const char* source;     // what the family passes (transformers 5.17), and the measurement
};

TEST(Sdpa, EveryCatalogueFamilyOnH100Bf16) {
  const std::vector<FamilyRow> rows{
      // transformers integrations/sdpa_attention.py sdpa_attention_forward: is_causal, no mask,
      // heads equal; sdp_utils.cpp check_prefer_cudnn_attention puts cuDNN first on sm90.
      {"llama-2-7b", SdpaKernel::cudnn, "check_prefer_cudnn_attention",
       "sdpa_attention_forward; H200 profile: cudnn sm90 flash fprop/bprop"},
      // Grouped K/V handed with enable_gqa (use_gqa_in_sdpa: no mask); window 4096 = seq, no mask.
      {"mistral-7b", SdpaKernel::cudnn, "check_prefer_cudnn_attention",
       "sdpa_attention_forward, enable_gqa; H200 profile: cudnn"},
      {"mixtral-8x7b", SdpaKernel::cudnn, "check_prefer_cudnn_attention",
       "sdpa_attention_forward, enable_gqa; H200 profile: cudnn"},
      {"qwen2.5-7b", SdpaKernel::cudnn, "check_prefer_cudnn_attention",
       "sdpa_attention_forward, enable_gqa; H200 profile: cudnn"},
      // Head dim 256 and one K/V head: cuDNN on sm90 (torch 2.11 ran the 64x128x256 cuDNN kernels).
      {"gemma-2b", SdpaKernel::cudnn, "check_prefer_cudnn_attention",
       "sdpa_attention_forward, enable_gqa, head dim 256; H200 profile: cudnn knob 64x128x256"},
      // attn_pdrop 0.1 passed in training; torch 2.11 ran cuDNN with it (philox unpack_cudnn).
      {"gpt2", SdpaKernel::cudnn, "check_prefer_cudnn_attention",
       "sdpa_attention_forward, dropout 0.1; H200 profile (gpt2-xl): cudnn + unpack_cudnn"},
      {"phi-2", SdpaKernel::cudnn, "check_prefer_cudnn_attention",
       "sdpa_attention_forward, partial rotary; H200 profile: cudnn"},
      {R"({"model_type": "gpt_neox", "hidden_size": 2048, "num_attention_heads": 16,
           "num_hidden_layers": 2, "intermediate_size": 8192, "vocab_size": 50304,
           "max_position_embeddings": 2048, "rotary_pct": 0.25})",
       SdpaKernel::cudnn, "check_prefer_cudnn_attention", "sdpa_attention_forward (GPT-NeoX)"},
      // modeling_falcon.py FalconAttention.forward: one K/V head without enable_gqa, so every fused
      // backend refuses (check_batch_size_and_num_heads_dense) and math runs, upcast to fp32.
      {"falcon-7b", SdpaKernel::math, "without enable_gqa",
       "FalconAttention.forward (multi_query); H200 profile: sm80_xmma_gemm_f32f32 + fp32 softmax"},
      // The new decoder broadcasts K/V to all 128 heads; its materialised mask rules out flash,
      // not cuDNN.
      {"falcon-40b", SdpaKernel::cudnn, "check_prefer_cudnn_attention",
       "FalconAttention._split_heads broadcast_to (new_decoder_architecture)"},
      // No SDPA path: transformers refuses attn_implementation="sdpa".
      {"bloom-560m", SdpaKernel::unsupported, "no SDPA path", "sdpa-dispatch: 'transformers refuses'"},
      {"mpt-7b", SdpaKernel::unsupported, "no SDPA path", "sdpa-dispatch: 'transformers refuses'"},
      {"t5-3b", SdpaKernel::unsupported, "no SDPA path", "modeling_t5.py: relative position bias"},
  };
  for (const FamilyRow& row : rows) {
    SCOPED_TRACE(std::string(row.model).substr(0, 40) + " — " + row.source);
    const std::string spec = row.model;
    const model::Architecture a =
        spec.front() == '{' ? io::architecture_from_hf_config(io::Json::parse(spec), "inline", "test")
                            : catalog().resolve_model(spec).arch;
    const model::SdpaChoice c = model::sdpa_choice(a, h100_bf16(4096));
    EXPECT_EQ(to_string(c.kernel), to_string(row.kernel)) << c.reason;
    EXPECT_NE(c.reason.find(row.reason), std::string::npos) << c.reason;
  }
}

struct RuleRow {
  const char* name;
  model::SdpaInputs in;
  SdpaKernel kernel;
  const char* reason;  // a phrase of the reason: the filter that decided
};

model::SdpaInputs base(int sm) {
  model::SdpaInputs in;
  in.cuda_sm = sm;
  return in;
}

TEST(Sdpa, DispatchRulesFromSdpUtils) {
  std::vector<RuleRow> rows;
  auto row = [&](const char* name, SdpaKernel k, const char* why, auto edit, int sm) {
    model::SdpaInputs in = base(sm);
    edit(in);
    rows.push_back({name, in, k, why});
  };
  // check_head_dim_size_flash: at most 256; cuDNN's limit on sm90 is 256 too (check_cudnn_tensor_shapes).
  row("head dim 320 on sm90: neither flash nor cuDNN", SdpaKernel::efficient, "above 256",
      [](auto& in) { in.head_dim = 320; }, 90);
  // check_dtypes_flash_attention / check_dtypes_low_precision: fp16, bf16 only.
  row("fp32 on sm90: no flash, no cuDNN", SdpaKernel::efficient, "fp32 inputs",
      [](auto& in) { in.dtype = model::SdpaDtype::fp32; }, 90);
  // check_flash_attention_hardware_support: [sm80, sm121]; efficient from sm50 in fp16.
  row("fp16 on sm70 (V100): no flash", SdpaKernel::efficient, "outside [sm80, sm121]",
      [](auto& in) { in.dtype = model::SdpaDtype::fp16; }, 70);
  // can_use_mem_efficient_attention: bf16 only from sm80; math is left.
  row("bf16 on sm70: math", SdpaKernel::math, "bf16 below sm80", [](auto&) {}, 70);
  // priority_order: without check_prefer_cudnn_attention (sm80), flash first.
  row("sm80 causal bf16: flash first", SdpaKernel::flash, "default order", [](auto&) {}, 80);
  // check_cudnn_dropout (main after 2.11): dropout on the 1/16 grid only.
  row("dropout 0.1 with torch main: flash", SdpaKernel::flash, "1/16",
      [](auto& in) { in.dropout = 0.1; in.torch_minor = 12; }, 90);
  row("dropout 0.125 with torch main: cuDNN", SdpaKernel::cudnn, "check_prefer_cudnn_attention",
      [](auto& in) { in.dropout = 0.125; in.torch_minor = 12; }, 90);
  // check_for_attn_mask: flash takes no mask; efficient does.
  row("boolean mask on sm80: efficient", SdpaKernel::efficient, "check_for_attn_mask",
      [](auto& in) { in.mask = model::SdpaMask::boolean; }, 80);
  // check_batch_size_and_num_heads_dense: fewer K/V heads need enable_gqa.
  row("8 K/V heads of 32 without enable_gqa: math", SdpaKernel::math, "without enable_gqa",
      [](auto& in) { in.kv_heads = 8; }, 90);
  row("8 K/V heads of 32 with enable_gqa: cuDNN", SdpaKernel::cudnn, "check_prefer_cudnn_attention",
      [](auto& in) { in.kv_heads = 8; in.enable_gqa = true; }, 90);
  // check_requires_grad_and_head_dim_gt192_constraints_on_sm86_89_or_120.
  row("training, head dim 256 with dropout on sm86: efficient", SdpaKernel::efficient, "sm86-89",
      [](auto& in) { in.head_dim = 256; in.dropout = 0.1; }, 86);
  // check_cudnn_tensor_shapes: head dim a multiple of 8.
  row("head dim 100 on sm90: flash", SdpaKernel::flash, "multiple of 8",
      [](auto& in) { in.head_dim = 100; }, 90);
  for (const RuleRow& r : rows) {
    SCOPED_TRACE(r.name);
    const model::SdpaChoice c = model::choose_sdpa_kernel(r.in);
    EXPECT_EQ(to_string(c.kernel), to_string(r.kernel)) << c.reason;
    EXPECT_NE(c.reason.find(r.reason), std::string::npos) << c.reason;
  }
}

// The math fallback upcasts 16-bit inputs (attention.cpp _scaled_dot_product_attention_math, allow
// fp16/bf16 reduction off by default): Falcon-7B's attention ran as sm80_xmma_gemm_f32f32 GEMMs on
// the H200 (step-profile of 2026-11-26).
TEST(Sdpa, MathFallbackRunsInFp32) {
  model::SdpaInputs in = base(90);
  in.kv_heads = 1;
  const model::SdpaChoice c = model::choose_sdpa_kernel(in);
  EXPECT_EQ(c.kernel, SdpaKernel::math);
  EXPECT_TRUE(c.fp32_math);
  in.dtype = model::SdpaDtype::fp32;
  EXPECT_FALSE(model::choose_sdpa_kernel(in).fp32_math);
}

// Falcon-7B, bf16-true, micro-batch 1 x 1,024 tokens on the H200, the same run under sdpa and eager
// (data/measurements/h200-2026-11-26/step-profile.json, after_forward_allocated_GiB: 51.631 and
// 46.895): weights and optimizer states are the same, so the 4.74 GiB between them is what the two
// attentions keep for backward in 32 blocks. sdpa ran the math fallback in fp32 (fp32 probabilities,
// fp32 q, k, v); eager keeps its bf16 softmax output. Tolerance 15 %: the first-reading band of
// the issue for memory.
TEST(Sdpa, FalconMathFallbackKeepsWhatTheH200Measured) {
  const model::Architecture a = catalog().resolve_model("falcon-7b").arch;
  model::Training sdpa = h100_bf16(1024);
  sdpa.precision = Precision::bf16_true;
  sdpa.cuda_sm = 90;  // H200: compute capability 9.0
  model::Training eager = sdpa;
  eager.attention = Attention::eager;
  auto ms = model::activation_memory(a, sdpa);
  const auto me = model::activation_memory(a, eager);
  model::add_activation_detail(ms, a, sdpa);
  ASSERT_TRUE(ms.sdpa.has_value());
  EXPECT_EQ(ms.sdpa->kernel, SdpaKernel::math);
  const double measured_gib = 51.631 - 46.895;
  const double predicted_gib = (ms.total() - me.total()).value() / 1073741824.0;
  EXPECT_NEAR(predicted_gib / measured_gib, 1.0, 0.15) << "predicted " << predicted_gib << " GiB";
}

}  // namespace
}  // namespace trainplan
