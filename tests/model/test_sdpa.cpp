// The SDPA kernel PyTorch picks (model/sdpa.hpp): per catalogue family on an H100, and PyTorch's
// dispatch rules one by one.
//
// Sources, cited as file:line:
// - transformers v5.17.0, the release the H200 runs used (data/measurements/h200-2026-11-26/):
//   paths under src/transformers/ of that tag (lines read from the release's own files). The same
//   rule stands at huggingface/transformers 00c238bd242b: integrations/sdpa_attention.py:40
//   use_gqa_in_sdpa, :107-112 enable_gqa, :127 is_causal, :148-157 the SDPA call.
// - pytorch/pytorch aten/src/ATen/native/transformers/cuda/sdp_utils.cpp at 001f694aef6f (main),
//   abbreviated "sdp_utils.cpp"; aten/src/ATen/native/transformers/sdp_utils_cpp.h at 0119c2052192,
//   abbreviated "sdp_utils_cpp.h".
// - The kernels the profiler saw with torch 2.11.0 + cuDNN 9.19 on an H200 (sm90, like the H100):
//   data/measurements/h200-2026-11-26/sdpa-dispatch.json ("cudnn_generated_fort_native_sdpa_sm90_
//   flash_*" kernels for llama, mistral, mixtral, qwen2, gemma, gpt2, phi; fp32 GEMMs and a softmax
//   for falcon; transformers refusing sdpa for bloom and mpt).
// cuDNN comes first on sm90 with cuDNN > 9.15: sdp_utils.cpp:93-120 check_prefer_cudnn_attention,
// :123-135 priority_order.
#include <gtest/gtest.h>

#include "../common/catalog.hpp"
#include "trainplan/request/catalog.hpp"
#include "trainplan/request/hf_config.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/model/activations.hpp"
#include "trainplan/model/sdpa.hpp"
#include "trainplan/model/training.hpp"

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
  const char* source;     // where the family's call is (v5.17.0 file:line), and the measurement
};

TEST(Sdpa, EveryCatalogueFamilyOnH100Bf16) {
  const std::vector<FamilyRow> rows{
      // models/llama/modeling_llama.py:268-276 calls integrations/sdpa_attention.py:79
      // sdpa_attention_forward with no mask: masking_utils.py:497-500 drops it without padding
      // (:269-270), so is_causal (sdpa_attention.py:124); heads equal, no enable_gqa.
      {"llama-2-7b", SdpaKernel::cudnn, "check_prefer_cudnn_attention",
       "modeling_llama.py:268-276, sdpa_attention.py:124; H200 profile: cudnn sm90 flash fprop/bprop"},
      // Grouped K/V handed with enable_gqa (sdpa_attention.py:97-102; use_gqa_in_sdpa :27-36: no
      // mask, head dim <= 256). Window 4096 at seq 4096: v5.17.0 materialises the mask when the
      // sequence reaches the window (masking_utils.py:263, kv_length >= local size), so K/V go
      // through repeat_kv (:99-100) there; sdpa.cpp masks only below the window (the H200 ran seq
      // 2048). cuDNN takes the mask either way (check_attn_mask_shape, sdp_utils.cpp:993).
      {"mistral-7b", SdpaKernel::cudnn, "check_prefer_cudnn_attention",
       "modeling_mistral.py:164-174, sdpa_attention.py:97-102 enable_gqa; H200 profile: cudnn"},
      // No window (sliding_window null, modeling_mixtral.py:454 create_causal_mask).
      {"mixtral-8x7b", SdpaKernel::cudnn, "check_prefer_cudnn_attention",
       "modeling_mixtral.py:324-334, sdpa_attention.py:97-102 enable_gqa; H200 profile: cudnn"},
      // use_sliding_window false clears the window (configuration_qwen2.py:84).
      {"qwen2.5-7b", SdpaKernel::cudnn, "check_prefer_cudnn_attention",
       "modeling_qwen2.py:220-230, sdpa_attention.py:97-102 enable_gqa; H200 profile: cudnn"},
      // Head dim 256 and one K/V head: enable_gqa (sdpa_attention.py:36 admits 256). cuDNN on sm90:
      // torch 2.11 + cuDNN 9.19 ran the 64x128x256 kernels; main admits 256 only with cuDNN above
      // 9.22 (sdp_utils.cpp:662-677 check_cudnn_tensor_shapes).
      {"gemma-2b", SdpaKernel::cudnn, "check_prefer_cudnn_attention",
       "modeling_gemma.py:279-287, enable_gqa, head dim 256; H200 profile: cudnn knob 64x128x256"},
      // attn_pdrop 0.1 passed in training (modeling_gpt2.py:217); torch 2.11 ran cuDNN with it
      // (philox unpack_cudnn). Main refuses it (check_cudnn_dropout, sdp_utils.cpp:619-629, :995).
      {"gpt2", SdpaKernel::cudnn, "check_prefer_cudnn_attention",
       "modeling_gpt2.py:211-220, dropout 0.1; H200 profile (gpt2-xl): cudnn + unpack_cudnn"},
      {"phi-2", SdpaKernel::cudnn, "check_prefer_cudnn_attention",
       "modeling_phi.py:232-240, partial rotary; H200 profile: cudnn"},
      {R"({"model_type": "gpt_neox", "hidden_size": 2048, "num_attention_heads": 16,
           "num_hidden_layers": 2, "intermediate_size": 8192, "vocab_size": 50304,
           "max_position_embeddings": 2048, "rotary_pct": 0.25})",
       SdpaKernel::cudnn, "check_prefer_cudnn_attention", "modeling_gpt_neox.py:221-230 (GPT-NeoX)"},
      // models/falcon/modeling_falcon.py:350-357: its own SDPA call, no enable_gqa, K/V of the
      // multi-query model with one head (:252, :280-283 _split_heads, :331-332), the mask always
      // materialised (:763-770). sdp_utils_cpp.h:379-432 check_batch_size_and_num_heads_dense
      // refuses unequal heads without enable_gqa (:412-428) in every fused backend, so math runs,
      // upcast to fp32. Torch main passes a supports_mqa flag to that check (sdp_utils.cpp:1006,
      // :1079, :1149) whose header is not the one read here: the rule is torch 2.11's, as measured.
      {"falcon-7b", SdpaKernel::math, "without enable_gqa",
       "modeling_falcon.py:350-357 (multi_query); H200 profile: sm80_xmma_gemm_f32f32 + fp32 softmax"},
      // The new decoder broadcasts K/V to all 128 heads and flattens them (modeling_falcon.py:265-275);
      // its materialised mask rules out flash (check_for_attn_mask, sdp_utils.cpp:1053,
      // sdp_utils_cpp.h:261-269), not cuDNN.
      {"falcon-40b", SdpaKernel::cudnn, "check_prefer_cudnn_attention",
       "modeling_falcon.py:271-274 broadcast_to + flatten (new_decoder_architecture), mask :763-770"},
      // No SDPA path: BloomPreTrainedModel and MptPreTrainedModel leave _supports_sdpa at its False
      // default (modeling_utils.py:1131), and _sdpa_can_dispatch raises (modeling_utils.py:1669-1674).
      {"bloom-560m", SdpaKernel::unsupported, "no SDPA path",
       "modeling_bloom.py:406-412 (no _supports_sdpa); sdpa-dispatch: 'transformers refuses'"},
      {"mpt-7b", SdpaKernel::unsupported, "no SDPA path",
       "modeling_mpt.py:216-220 (no _supports_sdpa); sdpa-dispatch: 'transformers refuses'"},
      // The transformers 4.x rule (v4.57.1 models/t5/modeling_t5.py:774-783, T5PreTrainedModel
      // without _supports_sdpa). v5.17.0 has an SDPA path for T5: modeling_t5.py:542
      // _supports_sdpa = True, the relative position bias passed to sdpa_attention_forward
      // (:354-364), which folds it into an additive float mask (sdpa_attention.py:154-156). Not
      // modelled yet, and no H200 run to check it against.
      {"t5-3b", SdpaKernel::unsupported, "no SDPA path",
       "v4.57.1 modeling_t5.py:774-783 (no _supports_sdpa; v5.17.0 :542 has one)"},
  };
  for (const FamilyRow& row : rows) {
    SCOPED_TRACE(std::string(row.model).substr(0, 40) + " — " + row.source);
    const std::string spec = row.model;
    const model::Architecture a =
        spec.front() == '{' ? request::architecture_from_hf_config(request::Json::parse(spec), "inline", "test")
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
  // check_head_dim_size_flash (sdp_utils.cpp:195-254): at most 256 (:203); cuDNN's sm90 limit is 256
  // too as torch 2.11 ran it (main: cuDNN above 9.22, check_cudnn_tensor_shapes :662-677).
  row("head dim 320 on sm90: neither flash nor cuDNN", SdpaKernel::efficient, "above 256",
      [](auto& in) { in.head_dim = 320; }, 90);
  // check_dtypes_flash_attention (sdp_utils.cpp:924-933) / check_dtypes_low_precision (:912-922):
  // fp16, bf16 only.
  row("fp32 on sm90: no flash, no cuDNN", SdpaKernel::efficient, "fp32 inputs",
      [](auto& in) { in.dtype = model::SdpaDtype::fp32; }, 90);
  // check_flash_attention_hardware_support (sdp_utils.cpp:426-481): [sm80, sm121] (:468); efficient
  // from sm50 (check_mem_efficient_hardware_support :483-541) in fp16.
  row("fp16 on sm70 (V100): no flash", SdpaKernel::efficient, "outside [sm80, sm121]",
      [](auto& in) { in.dtype = model::SdpaDtype::fp16; }, 70);
  // can_use_mem_efficient_attention (sdp_utils.cpp:1092-1177): bf16 only from sm80 (:1098-1099,
  // :1171-1175); math is left.
  row("bf16 on sm70: math", SdpaKernel::math, "bf16 below sm80", [](auto&) {}, 70);
  // priority_order (sdp_utils.cpp:123-135): without check_prefer_cudnn_attention (:93-120, sm9x and
  // sm10x only), the context's default order, flash first.
  row("sm80 causal bf16: flash first", SdpaKernel::flash, "default order", [](auto&) {}, 80);
  // check_cudnn_dropout (sdp_utils.cpp:619-629, listed at :995; main after 2.11): dropout on the
  // 1/16 grid only.
  row("dropout 0.1 with torch main: flash", SdpaKernel::flash, "1/16",
      [](auto& in) { in.dropout = 0.1; in.torch_minor = 12; }, 90);
  row("dropout 0.125 with torch main: cuDNN", SdpaKernel::cudnn, "check_prefer_cudnn_attention",
      [](auto& in) { in.dropout = 0.125; in.torch_minor = 12; }, 90);
  // check_for_attn_mask (sdp_utils_cpp.h:261-269, in flash's filters at sdp_utils.cpp:1053): flash
  // takes no mask; efficient has no such filter (:1111-1118).
  row("boolean mask on sm80: efficient", SdpaKernel::efficient, "check_for_attn_mask",
      [](auto& in) { in.mask = model::SdpaMask::boolean; }, 80);
  // check_batch_size_and_num_heads_dense (sdp_utils_cpp.h:379-432): fewer K/V heads need enable_gqa
  // (:412-414), else the head counts must match (:416-428).
  row("8 K/V heads of 32 without enable_gqa: math", SdpaKernel::math, "without enable_gqa",
      [](auto& in) { in.kv_heads = 8; }, 90);
  row("8 K/V heads of 32 with enable_gqa: cuDNN", SdpaKernel::cudnn, "check_prefer_cudnn_attention",
      [](auto& in) { in.kv_heads = 8; in.enable_gqa = true; }, 90);
  // check_requires_grad_and_head_dim_gt192_constraints_on_sm86_89_or_120 (sdp_utils.cpp:543-577).
  row("training, head dim 256 with dropout on sm86: efficient", SdpaKernel::efficient, "sm86-89",
      [](auto& in) { in.head_dim = 256; in.dropout = 0.1; }, 86);
  // check_cudnn_tensor_shapes (sdp_utils.cpp:631-729): head dim a multiple of 8 (:685-691).
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

// Gemma 2's SDPA path existed up to transformers v5.20.0 (models/gemma2/modeling_gemma2.py:360 at
// v5.17.0, _supports_sdpa = True) and was dropped in v5.21.0 (_supports_sdpa = False, "sdpa does not
// support softcapping", :353 at v5.24.0). The H200 runs of 2026-11-27 (transformers 5.17.0,
// data/reference/measured-h200-families.json) ran gemma-2-2b and gemma-2-9b with
// attn_implementation="sdpa" and measured the memory of the SDPA path: gemma-2-2b LoRA s2048 b2,
// 31.85 GiB peak, predicted 31.79 GiB with the release's path and 45.19 GiB with eager attention
// (that file's bands in test_validate.cpp hold the numbers).
TEST(Sdpa, Gemma2SdpaPathFollowsTheTransformersRelease) {
  const model::Architecture a = catalog().resolve_model("gemma-2-2b").arch;
  model::Training tr = h100_bf16(2048);
  tr.cuda_sm = 90;
  tr.transformers = 517;
  const model::AttentionRun v517 = model::attention_run(a, tr, 90);
  EXPECT_EQ(v517.runs, Attention::sdpa);
  EXPECT_TRUE(v517.fused);
  tr.transformers = 520;
  EXPECT_EQ(model::attention_run(a, tr, 90).runs, Attention::sdpa);
  tr.transformers = 521;
  const model::AttentionRun v521 = model::attention_run(a, tr, 90);
  EXPECT_EQ(v521.runs, Attention::eager);
  EXPECT_FALSE(v521.fused);
  EXPECT_EQ(model::sdpa_choice(a, tr).kernel, SdpaKernel::unsupported);
}

TEST(Sdpa, TransformersReleaseParsing) {
  EXPECT_EQ(model::parse_transformers_release("5.17", "x"), 517);
  EXPECT_EQ(model::parse_transformers_release("5.17.0", "x"), 517);
  EXPECT_EQ(model::parse_transformers_release("4.57.1", "x"), 457);
  EXPECT_EQ(model::parse_transformers_release("5.0", "x"), 500);
  for (const char* bad : {"", "5", "5.", "five", "5.x", "3.9", "5.17.", "5.17.0rc1", "5.100", "-5.1", "5.17 "}) {
    try {
      (void)model::parse_transformers_release(bad, "training key 'transformers'");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("training key 'transformers'"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace trainplan
