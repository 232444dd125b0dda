// Model states (weights, gradients, optimizer) against the published formulas and tables.
#include <gtest/gtest.h>

#include <cstdio>

#include "../common/catalog.hpp"
#include "trainplan/request/catalog.hpp"
#include "trainplan/request/hf_config.hpp"
#include "trainplan/model/model_states.hpp"
#include "trainplan/planner/memory.hpp"

namespace trainplan {
namespace {

constexpr double kGB = 1e9;

// ZeRO paper, Rajbhandari et al. 2019 (arXiv:1910.02054) Fig. 1 / Table 1: mixed-precision Adam,
// 2 + 2 + K bytes per parameter with K = 12 (fp32 master, momentum, variance); GB = 1e9.
TEST(ModelStates, ZeroPaperTable1) {
  const model::StateBytes paper{2.0, 2.0, 0.0, 4.0, 8.0};
  struct Row {
    double psi, nd, baseline, z1, z2, z3;
    const char* source;
  };
  const Row rows[] = {
      {7.5e9, 64, 120.0, 31.4, 16.6, 1.88, "A8: Fig. 1, 7.5B on 64 GPUs"},
      {7.5e9, 4, 120.0, 52.5, 41.25, 30.0, "A9: Table 1, 7.5B, N_d = 4"},
      {128e9, 64, 2048.0, 536.0, 284.0, 32.0, "A9: Table 1, 128B, N_d = 64"},
      {1e12, 1024, 16000.0, 4011.7, 2013.7, 15.6, "A9: Table 1, 1T, N_d = 1024"},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.source);
    auto gb = [&](Strategy s) { return model::shard(paper, s, r.nd).total() * r.psi / kGB; };
    EXPECT_NEAR(gb(Strategy::ddp), r.baseline, r.baseline * 0.005);
    EXPECT_NEAR(gb(Strategy::zero1), r.z1, r.z1 * 0.005);
    EXPECT_NEAR(gb(Strategy::zero2), r.z2, r.z2 * 0.005);
    EXPECT_NEAR(gb(Strategy::zero3), r.z3, r.z3 * 0.005);
  }
}

// Megatron-LM docs/user-guide/features/dist_optimizer.md (A12): bytes per parameter without and
// with the distributed optimizer (zero1 here) over d data-parallel ranks.
TEST(ModelStates, MegatronBytesPerParameter) {
  const double adam_mixed = model::optimizer_state_bytes(Optimizer::adamw, Precision::bf16_mixed, 0);
  const double adam_fp32 = model::optimizer_state_bytes(Optimizer::adamw, Precision::fp32, 0);
  const auto bf16 = model::state_bytes(Framework::megatron, Precision::bf16_mixed, adam_mixed);
  const auto fp16 = model::state_bytes(Framework::megatron, Precision::fp16_mixed, adam_mixed);
  const auto fp32 = model::state_bytes(Framework::megatron, Precision::fp32, adam_fp32);
  EXPECT_DOUBLE_EQ(bf16.total(), 18.0);
  EXPECT_DOUBLE_EQ(fp16.total(), 20.0);
  EXPECT_DOUBLE_EQ(fp32.total(), 16.0);
  for (double d : {2.0, 8.0, 64.0}) {
    SCOPED_TRACE(d);
    EXPECT_DOUBLE_EQ(model::shard(bf16, Strategy::zero1, d).total(), 6.0 + 12.0 / d);
    EXPECT_DOUBLE_EQ(model::shard(fp16, Strategy::zero1, d).total(), 4.0 + 16.0 / d);
    EXPECT_DOUBLE_EQ(model::shard(fp32, Strategy::zero1, d).total(), 8.0 + 8.0 / d);
  }
}

// Optimizer states per trainable parameter as their sources state them: Lion keeps only the momentum,
// half of AdamW's two fp32 moments (Chen et al. 2023, arXiv:2302.06675, Sec. 2: "more memory-
// efficient than AdamW as it only keeps track of the momentum"); bitsandbytes' 32-bit optimizers
// keep fp32 states even for bf16 parameters (bitsandbytes optim/optimizer.py, Optimizer2State:
// dtype=torch.float32 when optim_bits == 32), paged; its 8-bit Lion one byte and one fp32 absmax
// per 2048-value block (Dettmers et al. 2022, arXiv:2110.02861, Sec. 2); LAMB Adam's two moments
// (You et al. 2019, arXiv:1904.00962, Algorithm 2).
TEST(ModelStates, LionLambAndBitsandbytes32BitStates) {
  EXPECT_DOUBLE_EQ(model::optimizer_state_bytes(Optimizer::lion, Precision::bf16_mixed, 0),
                   model::optimizer_state_bytes(Optimizer::adamw, Precision::bf16_mixed, 0) / 2.0);
  EXPECT_DOUBLE_EQ(model::optimizer_state_bytes(Optimizer::paged_adamw, Precision::bf16_true, 0), 8.0);
  EXPECT_DOUBLE_EQ(model::optimizer_state_bytes(Optimizer::adamw, Precision::bf16_true, 0), 4.0);  // torch: bf16 moments
  EXPECT_TRUE(model::is_paged(Optimizer::paged_adamw));
  EXPECT_NEAR(model::optimizer_state_bytes(Optimizer::lion_8bit, Precision::bf16_mixed, 0), 1.0 + 4.0 / 2048.0, 1e-12);
  EXPECT_DOUBLE_EQ(model::optimizer_state_bytes(Optimizer::lamb, Precision::fp32, 0),
                   model::optimizer_state_bytes(Optimizer::adam, Precision::fp32, 0));
}

// QLoRA (Dettmers et al. 2023, arXiv:2305.14314) Sec. 3 (A15): NF4 with fp32 absmax per 64
// weights = 4.5 bits; double quantization = 4.127 bits ("saves 0.373 bits per parameter").
TEST(ModelStates, QloraConstants) {
  EXPECT_DOUBLE_EQ(model::quantized_bytes_per_param(Quant::nf4, 64, 4096), 4.5 / 8.0);
  EXPECT_NEAR(model::quantized_bytes_per_param(Quant::nf4_dq, 64, 4096) * 8.0, 4.127, 0.0005);
  EXPECT_NEAR((model::quantized_bytes_per_param(Quant::nf4, 64, 4096) -
               model::quantized_bytes_per_param(Quant::nf4_dq, 64, 4096)) * 8.0, 0.373, 0.0005);
  // The same rule at another bitsandbytes blocksize: one fp32 constant per 256 weights = 0.125 bits.
  EXPECT_DOUBLE_EQ(model::quantized_bytes_per_param(Quant::nf4, 256, 4096), 4.125 / 8.0);
}

// --- DeepSpeed's estimators (deepspeed/runtime/zero/stage_1_and_2.py, stage3.py at 38327e07),
// reproduced through the deepspeed convention of the memory model. GiB = 2^30.
struct DsCase {
  Strategy strategy;
  Offload offload;
  bool zero_init;
  double gpu_gib, host_gib;
};

struct DsSetup {
  model::Architecture arch;
  hardware::Cluster cluster;
};

DsSetup setup(const model::Architecture& a, int gpus) {
  const request::Catalog& cat = test::catalog();
  DsSetup s{a, cat.resolve_cluster(std::to_string(gpus) + "xA100-80GB", std::nullopt).cluster};
  return s;
}

void check(const DsSetup& s, const DsCase& c, double tol, double unit) {
  model::Training tr;
  tr.framework = Framework::deepspeed;
  tr.precision = Precision::fp16_mixed;
  tr.strategy = c.strategy;
  tr.offload = c.offload;
  tr.zero_init = c.zero_init;
  const auto n = model::count_parameters(s.arch);
  const auto l = planner::make_layout(s.arch, tr, s.cluster);
  const auto ms = planner::model_states(s.arch, n, tr, l);
  EXPECT_NEAR(ms.device().value() / unit, c.gpu_gib, tol);
  if (c.host_gib >= 0) {
    EXPECT_NEAR(ms.host.value() * l.gpus_per_node / unit, c.host_gib, tol);
  }
}

model::Architecture t5(const char* json) {
  return request::architecture_from_hf_config(request::Json::parse(json), "t5", "test config");
}

// A2: t5-3b (T5Model, 2,851,598,336 params) on 8 GPUs, ZeRO-2 (current code: 2P + 18P/N).
TEST(DeepSpeedEstimator, Zero2OnT5_3b) {
  const auto s = setup(test::catalog().resolve_model("t5-3b").arch, 8);
  SCOPED_TRACE("memory.md A2: stage_1_and_2.py@38327e07");
  check(s, {Strategy::zero2, Offload::none, true, 11.29, 127.48}, 0.01, kGiB);
  check(s, {Strategy::zero2, Offload::optimizer, true, 5.31, 127.48}, 0.01, kGiB);
}

// A5: t5-large (737,668,096 params, largest layer 32,899,072) on 4 GPUs, ZeRO-3, MiB (>>20),
// DeepSpeed docs memory.rst.
TEST(DeepSpeedEstimator, Zero3OnT5LargeMiB) {
  const auto s = setup(t5(R"({"model_type":"t5","d_model":1024,"d_ff":4096,"num_layers":24,"num_heads":16,
                              "d_kv":64,"vocab_size":32128,"feed_forward_proj":"relu","tie_word_embeddings":true})"),
                       4);
  EXPECT_EQ(model::count_parameters(s.arch).total, 737'668'096);
  SCOPED_TRACE("memory.md A5: memory.rst t5-large, 4 GPUs");
  // GPU only (the docs' table lists no host figures for this example): case 1, 3, 2.
  check(s, {Strategy::zero3, Offload::none, true, 3291, -1}, 1.0, kMiB);
  check(s, {Strategy::zero3, Offload::optimizer, true, 477, -1}, 1.0, kMiB);
  check(s, {Strategy::zero3, Offload::optimizer_params, true, 125, -1}, 1.0, kMiB);
}

// A6/A7: bigscience/T0_3B as AutoModel (T5Model: no LM head, 2,783,959,040 params; largest layer
// 65,798,144) on 1 and 2 GPUs, ZeRO-3, from Hugging Face transformers docs/source/en/deepspeed.md.
TEST(DeepSpeedEstimator, Zero3OnT0_3b) {
  // tie_word_embeddings makes the count that of T5Model (the head shares the embedding).
  const auto arch = t5(R"({"model_type":"t5","d_model":2048,"d_ff":5120,"num_layers":24,"num_heads":32,"d_kv":64,
                           "vocab_size":32128,"feed_forward_proj":"gated-gelu","tie_word_embeddings":true})");
  EXPECT_EQ(model::count_parameters(arch).total, 2'783'959'040);
  {
    SCOPED_TRACE("A6: 1 GPU");
    const auto s = setup(arch, 1);
    check(s, {Strategy::zero3, Offload::optimizer_params, true, 0.25, 70.00}, 0.01, kGiB);
    check(s, {Strategy::zero3, Offload::optimizer_params, false, 0.25, 70.00}, 0.01, kGiB);
    check(s, {Strategy::zero3, Offload::optimizer, true, 5.43, 62.23}, 0.01, kGiB);
    check(s, {Strategy::zero3, Offload::optimizer, false, 5.43, 62.23}, 0.01, kGiB);
    check(s, {Strategy::zero3, Offload::none, true, 46.91, 0.37}, 0.01, kGiB);
    check(s, {Strategy::zero3, Offload::none, false, 46.91, 15.56}, 0.01, kGiB);
  }
  {
    SCOPED_TRACE("A7: 2 GPUs");
    const auto s = setup(arch, 2);
    check(s, {Strategy::zero3, Offload::optimizer_params, true, 0.25, 70.00}, 0.01, kGiB);
    check(s, {Strategy::zero3, Offload::optimizer, true, 2.84, 62.23}, 0.01, kGiB);
    check(s, {Strategy::zero3, Offload::none, true, 23.58, 0.74}, 0.01, kGiB);
    check(s, {Strategy::zero3, Offload::none, false, 23.58, 31.11}, 0.01, kGiB);
  }
}

// DeepSpeed 0.18's bf16 optimizer, measured by its authors: DeepSpeedExamples
// training/bf16_master_weight/README.md (commit 516082c6; train.py at ac3800b7): a 6.86B
// transformer (hidden 4096, 32 layers, 32 heads, vocabulary 50,000, an untied head, 512 learned
// positions), batch 1 x 512 tokens, ZeRO-3 on 4 GPUs, activation checkpointing;
// torch.cuda.max_memory_allocated per GPU in GiB. Baseline 31.38, bf16_master_weights_and_grads +
// bf16_optimizer_states 18.93: the peak falls by 12.45 GiB. Nothing here was fitted on it.
TEST(DeepSpeedBf16Optimizer, PeakDropOfTheDeepSpeedExamplesRun) {
  // GPT-2's block has the parameters of train.py's SimpleTransformerBlock (12h^2 + 13h).
  const model::Architecture a = request::architecture_from_hf_config(
      request::Json::parse(R"({"model_type":"gpt2","n_embd":4096,"n_layer":32,"n_head":32,"vocab_size":50000,
                              "n_positions":512,"tie_word_embeddings":false})"),
      "gpt2", "test config");
  const auto n = model::count_parameters(a);
  EXPECT_NEAR(static_cast<double>(n.total), 6.86e9, 0.005e9);
  const hardware::Cluster c = test::catalog().resolve_cluster("4xA100-80GB", std::nullopt).cluster;
  auto peak = [&](bool bf16) {
    model::Training tr;
    tr.framework = Framework::deepspeed;
    tr.precision = Precision::bf16_mixed;
    tr.strategy = Strategy::zero3;
    tr.seq = 512;
    tr.checkpointing = Checkpointing::full;
    tr.bf16_master = tr.bf16_optimizer_states = bf16;
    const planner::MemoryBreakdown m = planner::memory(a, n, tr, planner::make_layout(a, tr, c));
    std::printf("peak %s: %.2f GiB\n", bf16 ? "bf16" : "baseline", m.peak_allocated.value() / kGiB);
    return m.peak_allocated.value() / kGiB;
  };
  const double drop = peak(false) - peak(true);
  EXPECT_NEAR(drop, 12.45, 12.45 * 0.05);
}

// DeepSpeed refuses bf16 master weights outside bf16 with ZeRO stage 1-3 (runtime/engine.py), and
// bf16 moments without bf16 master weights (runtime/config.py): so does the model.
TEST(DeepSpeedBf16Optimizer, OnlyWithBf16AndZero) {
  const model::Architecture a = test::catalog().resolve_model("llama-3.2-1b").arch;
  model::Training tr;
  tr.framework = Framework::deepspeed;
  tr.strategy = Strategy::zero2;
  tr.bf16_optimizer_states = true;
  EXPECT_THROW(planner::validate_training(a, tr), FieldError);
  tr.bf16_master = true;
  EXPECT_NO_THROW(planner::validate_training(a, tr));
  const hardware::Cluster c = test::catalog().resolve_cluster("2xA100-80GB", std::nullopt).cluster;
  EXPECT_NO_THROW((void)planner::make_layout(a, tr, c));
  tr.strategy = Strategy::ddp;
  EXPECT_THROW((void)planner::make_layout(a, tr, c), FieldError);
  tr.strategy = Strategy::zero2;
  tr.precision = Precision::fp16_mixed;
  EXPECT_THROW(planner::validate_training(a, tr), FieldError);
  tr.precision = Precision::bf16_mixed;
  tr.framework = Framework::pytorch;
  EXPECT_THROW(planner::validate_training(a, tr), FieldError);
}

}  // namespace
}  // namespace trainplan
