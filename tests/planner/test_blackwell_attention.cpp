// Attention on datacenter Blackwell against NVIDIA's published training SDPA benchmark
// (cudnn-frontend benchmark/sdpa_benchmark_training; the rows and their commits are in
// tests/planner/data/cudnn-sdpa-training-blackwell.json). TimeConventions::blackwell_flash and
// blackwell_warp_mma_attention_vs_native were fitted on the GB200 cuDNN 9.17 run; the other runs
// are held out.
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../common/catalog.hpp"
#include "trainplan/model/flops.hpp"
#include "trainplan/planner/compute.hpp"

namespace trainplan::planner {
namespace {

nlohmann::json runs() {
  std::ifstream in(std::string(TRAINPLAN_PLANNER_TEST_DATA) + "/cudnn-sdpa-training-blackwell.json");
  return nlohmann::json::parse(in).at("runs");
}

const nlohmann::json& run(const nlohmann::json& all, const std::string& name) {
  for (const auto& r : all)
    if (r.at("name") == name) return r;
  ADD_FAILURE() << "no run " << name;
  return all.at(0);
}

// One benchmark row as the planner prices it: a block of the run's model at batch 1 and the row's
// length, bf16, its attention core alone. "cudnn": Megatron's Transformer Engine (cuDNN fused
// attention); "flash2": the flash-attn 2.x package under the Hugging Face stack.
struct Priced {
  double forward_ms = 0.0;
  double backward_tflops = 0.0;  // the kernel's predicted rate, the benchmark's FLOP convention
};

Priced priced(const nlohmann::json& r, const nlohmann::json& row) {
  const model::Architecture a = test::catalog().resolve_model(r.at("model").get<std::string>()).arch;
  EXPECT_EQ(a.heads, r.at("q_heads").get<std::int64_t>());
  EXPECT_EQ(a.kv_heads, r.at("kv_heads").get<std::int64_t>());
  EXPECT_EQ(a.head_dim, r.at("head_dim").get<std::int64_t>());
  const hardware::GpuSpec g = test::catalog().resolve_gpu(r.at("gpu").get<std::string>()).spec;
  model::Training tr;
  tr.micro_batch = 1;
  tr.seq = row.at("seq").get<std::int64_t>();
  tr.attention = Attention::flash;
  if (row.at("kernel") == "cudnn") {
    tr.framework = Framework::megatron;
    tr.library = Library::megatron;
    tr.hidden_dropout = 0.0;
    tr.attention_dropout = 0.0;
  }
  const TimeConventions tc;
  const ComputeDevice d = compute_device(g, tr.precision, false, nullptr, tc);
  const model::AttentionRun at = model::attention_run(a, tr, d.cuda_sm);
  const BlockCompute b = block_compute(a, block_shape(a, model::Stack::decoder, nullptr), tr, d, tc);
  const double share = warp_mma_attention_share(at, tr.framework, d.cuda_sm, tc);
  return {b.attention_forward.value() * 1e3,
          d.peak.value() * attention_efficiency(d, true, tr.seq, true, a.head_dim) * share / 1e12};
}

// The benchmark's backward rate: 2.5 x the forward's 4 s^2 d heads, halved by the causal mask.
double measured_backward_tflops(const nlohmann::json& r, const nlohmann::json& row) {
  const double s = row.at("seq").get<double>();
  const double flops = model::kFusedAttentionBackwardRatio * 4.0 * s * s * r.at("head_dim").get<double>() *
                       r.at("q_heads").get<double>() * model::causal_fraction(row.at("seq").get<std::int64_t>());
  return flops / (row.at("bwd_ms").get<double>() * 1e-3) / 1e12;
}

// Every row of a run within `fwd_pct` (forward time) and `bwd_pct` (backward rate).
void expect_run_within(const std::string& name, double fwd_pct, double bwd_pct) {
  const nlohmann::json all = runs();
  const nlohmann::json& r = run(all, name);
  for (const auto& row : r.at("rows")) {
    SCOPED_TRACE(name + " " + row.at("kernel").get<std::string>() + " s=" + std::to_string(row.at("seq").get<int>()));
    const Priced p = priced(r, row);
    EXPECT_NEAR(p.forward_ms / row.at("fwd_ms").get<double>(), 1.0, fwd_pct / 100.0);
    EXPECT_NEAR(p.backward_tflops / measured_backward_tflops(r, row), 1.0, bwd_pct / 100.0);
  }
}

// The fitted run: cuDNN within the fit's residuals (forward 2.7 %, backward 9.7 %), FlashAttention-2
// at its mean share of cuDNN.
TEST(BlackwellAttention, FittedGb200Cudnn917) { expect_run_within("gb200-cudnn-9.17", 5.0, 11.0); }

// Held out: a newer cuDNN (9.19) on the same GPU at half the query heads: the forward within 5 %;
// the newer release's backward runs 5-17 % faster than the fitted release's curve (most at 2k-4k).
TEST(BlackwellAttention, HeldOutGb200Cudnn919) { expect_run_within("gb200-cudnn-9.19-llama3.1", 7.0, 18.0); }

// Held out: a GB300 with cuDNN 9.13 and flash-attn 2.7.4 at 8k-32k tokens (below 8k that older
// cuDNN ran far under the curve): forward within 7 %, backward within 12 %.
TEST(BlackwellAttention, HeldOutGb300) { expect_run_within("gb300-cudnn-9.13", 8.0, 13.0); }

// Held out: the flash-attn 2.7.4 package on a B200: forward within 8 %, backward within 12.1 %.
TEST(BlackwellAttention, HeldOutB200FlashAttention2) { expect_run_within("b200-flash-attn-2.7.4", 10.0, 15.0); }

// Hopper keeps its own figures: the Blackwell fit does not leak onto an H100.
TEST(BlackwellAttention, HopperKeepsItsFigures) {
  const TimeConventions tc;
  const ComputeDevice h = compute_device(test::catalog().resolve_gpu("H100-80GB").spec, Precision::bf16_mixed,
                                         false, nullptr, tc);
  EXPECT_DOUBLE_EQ(h.flash.fwd_efficiency, tc.flash_fwd_efficiency);
  EXPECT_DOUBLE_EQ(h.flash.bwd_seq_half, tc.flash_seq_half);
  const ComputeDevice rtx = compute_device(test::catalog().resolve_gpu("RTX-5090").spec, Precision::bf16_mixed,
                                           false, nullptr, tc);
  EXPECT_FALSE(datacenter_blackwell(rtx.cuda_sm));
  EXPECT_TRUE(datacenter_blackwell(compute_device(test::catalog().resolve_gpu("GB300").spec, Precision::bf16_mixed,
                                                  false, nullptr, tc).cuda_sm));
}

}  // namespace
}  // namespace trainplan::planner
