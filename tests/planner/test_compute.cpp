// GEMM, attention and memory-bound time of the compute model, and the FLOP counts it builds on.
#include <gtest/gtest.h>

#include "../common/catalog.hpp"
#include "megatron_gpt.hpp"
#include "trainplan/request/catalog.hpp"
#include "trainplan/model/flops.hpp"
#include "trainplan/planner/compute.hpp"

namespace trainplan::planner {
namespace {

hardware::GpuSpec a100() { return test::catalog().resolve_gpu("A100-80GB").spec; }

// The best-shape efficiency is the MAMF row (ml-engineering's MAMF table) times the training fraction.
TEST(Compute, DefaultGemmEfficiencyIsMamfTimesTrainingFraction) {
  const TimeConventions tc;
  const ComputeDevice d = compute_device(a100(), Precision::bf16_mixed, false, nullptr, tc);
  EXPECT_DOUBLE_EQ(mamf_efficiency(a100(), tc), 271.2 / 312.0);
  EXPECT_NEAR(d.gemm_efficiency_max, 271.2 / 312.0 * 0.9, 1e-12);
  EXPECT_DOUBLE_EQ(d.peak.value(), 312e12);
  // 1024 x 10240 x 5120 (the MAMF best shape): tiles 8 x 80 = 640 = 5.9 waves of 108 SMs.
  const double e = gemm_efficiency(d, 1024, 10240, 5120, 1.0);
  EXPECT_GT(e, 0.7);
  EXPECT_LE(e, d.gemm_efficiency_max);
}

// NVIDIA Matrix Multiplication Background Guide 3.1: one element past a tile boundary costs a tile.
TEST(Compute, TileAndWaveQuantizationAndShortReductions) {
  const ComputeDevice d = compute_device(a100(), Precision::bf16_mixed, false, nullptr, TimeConventions{});
  EXPECT_GT(gemm_efficiency(d, 8192, 4096, 4096, 1.0), gemm_efficiency(d, 8192, 4097, 4096, 1.0));
  EXPECT_GT(gemm_time(d, 8192, 4097, 4096), gemm_time(d, 8192, 4096, 4096));
  // 108 tiles fill one wave; 109 need two.
  EXPECT_GT(gemm_efficiency(d, 128 * 108, 128, 4096, 1.0),
            1.5 * gemm_efficiency(d, 128 * 109, 128, 4096, 1.0));
  // K = 64 (an attention head) halves the efficiency of K = 4096 or so.
  EXPECT_LT(gemm_efficiency(d, 8192, 8192, 64, 1.0),
            0.6 * gemm_efficiency(d, 8192, 8192, 4096, 1.0));
}

// A LoRA adapter (N = rank 16) is bandwidth-bound: its time follows its bytes, not its FLOPs.
TEST(Compute, ThinGemmsAreMemoryBound) {
  const ComputeDevice d = compute_device(a100(), Precision::bf16_mixed, false, nullptr, TimeConventions{});
  const std::int64_t m = 8192, n = 16, k = 4096;
  const Seconds t = gemm_time(d, m, n, k);
  const double bytes = (m * k + k * n + m * n) * 2.0;
  EXPECT_NEAR(t.value(), bytes / d.hbm.value(), 1e-12);
  EXPECT_DOUBLE_EQ(memory_bound_time(d, Bytes(2039e9 * 0.85)).value(), 1.0);
}

TEST(Compute, FusedAttentionEfficiencyRisesWithSequenceLength) {
  const ComputeDevice d = compute_device(a100(), Precision::bf16_mixed, false, nullptr, TimeConventions{});
  EXPECT_LT(attention_efficiency(d, false, 512), attention_efficiency(d, false, 4096));
  EXPECT_LT(attention_efficiency(d, false, 4096), 0.72);
  EXPECT_LT(attention_efficiency(d, true, 4096), attention_efficiency(d, false, 4096));
  EXPECT_NEAR(attention_efficiency(d, false, 470), 0.36, 1e-9);  // half of 0.72 at s_half
}

// Full checkpointing replays the forward: about a third of forward + backward (8ND vs 6ND,
// Korthikanti et al. 2022, Sec. 5, the recompute overhead of full checkpointing), in FLOPs and in
// the compute model's time.
TEST(Compute, FullCheckpointingAddsAboutOneThird) {
  const model::Architecture a = test::megatron_gpt("gpt-13b", 5120, 40, 40);
  model::Training tr = test::megatron_training(1, 1, 1, 1, 1, 1, Checkpointing::full, false);
  const model::StepFlops f = model::micro_batch_flops(a, tr);
  EXPECT_NEAR(f.recompute.value() / (f.forward + f.backward).value(), 1.0 / 3.0, 0.02);
  const ComputeDevice d = compute_device(a100(), tr.precision, false, nullptr, TimeConventions{});
  const BlockCompute b =
      block_compute(a, block_shape(a, model::Stack::decoder, nullptr), tr, d, TimeConventions{});
  const double ratio = b.recompute(Checkpointing::full).value() / (b.forward + b.backward).value();
  EXPECT_GT(ratio, 0.28);
  EXPECT_LT(ratio, 0.40);
  // Selective recomputes the attention core only: a few per cent (Korthikanti Table 4: +7 %).
  const double selective =
      b.recompute(Checkpointing::selective).value() / (b.forward + b.backward).value();
  EXPECT_GT(selective, 0.01);
  EXPECT_LT(selective, 0.12);
}

// LoRA: frozen weights get no weight-gradient GEMM, so backward is about one forward, not two.
TEST(Compute, LoraBackwardSkipsFrozenWeightGradients) {
  const model::Architecture a = test::catalog().resolve_model("llama-2-7b").arch;
  model::Training full;
  full.seq = 2048;
  model::Training lora = full;
  lora.method = Method::lora;
  const ComputeDevice d = compute_device(a100(), full.precision, false, nullptr, TimeConventions{});
  const BlockCompute bf =
      block_compute(a, block_shape(a, model::Stack::decoder, nullptr), full, d, TimeConventions{});
  const BlockCompute bl = block_compute(a, block_shape(a, model::Stack::decoder, &lora.lora), lora,
                                        d, TimeConventions{});
  EXPECT_LT(bl.backward.value(), 0.75 * bf.backward.value());
  const model::StepFlops ff = model::micro_batch_flops(a, full);
  const model::StepFlops fl = model::micro_batch_flops(a, lora);
  EXPECT_LT(fl.backward.value(), 0.6 * ff.backward.value());
  // QLoRA adds the dequantization of every base weight, forward and backward.
  model::Training q = lora;
  q.method = Method::qlora;
  const BlockCompute bq =
      block_compute(a, block_shape(a, model::Stack::decoder, &q.lora), q, d, TimeConventions{});
  EXPECT_GT(bq.forward, bl.forward);
  EXPECT_GT(bq.elementwise_forward, bl.elementwise_forward);
}

// Causal fused kernels compute (s+1)/(2s) of the scores; the MoE router sends t k / E tokens to
// each expert.
TEST(Compute, CausalFractionAndExpertTokens) {
  EXPECT_DOUBLE_EQ(model::causal_fraction(1), 1.0);
  EXPECT_DOUBLE_EQ(model::causal_fraction(2048), 2049.0 / 4096.0);
  EXPECT_DOUBLE_EQ(model::tokens_per_expert(4096.0, 2, 8), 1024.0);
  EXPECT_DOUBLE_EQ(model::dequant_bytes_per_weight(0.5625, 2.0), 2.5625);
}

}  // namespace
}  // namespace trainplan::planner
