// Replay planning: the components one GPU runs in a plan, at shapes worked out by hand from the
// models' config.json (dense, GQA, MoE, LoRA, tensor parallel, FSDP), and their predictions adding
// up to the evaluator's step terms.
#include <gtest/gtest.h>

#include <string_view>

#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "../common/catalog.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/request/catalog.hpp"
#include "trainplan/request/profile_json.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/planner/compute.hpp"
#include "trainplan/planner/replay.hpp"
#include "trainplan/model/partial.hpp"

namespace trainplan::planner {
namespace {

using test::catalog;

struct Subject {
  model::Architecture a;
  model::ParameterCounts n;
  hardware::Cluster c;
};

Subject subject(const std::string& model, const std::string& cluster) {
  const model::Architecture a = catalog().resolve_model(model).arch;
  return {a, model::count_parameters(a), catalog().resolve_cluster(cluster, std::nullopt).cluster};
}

ReplayPlan plan_of(const Subject& s, const model::Training& tr, const ReplayOptions& o = {}) {
  return replay_plan(s.a, s.n, tr, s.c, nullptr, o);
}

const ReplayComponent* find(const ReplayPlan& p, const std::string& name) {
  for (const auto& c : p.components)
    if (c.name == name) return &c;
  return nullptr;
}

const GemmWork& gemm(const ReplayPlan& p, const std::string& name) {
  const ReplayComponent* c = find(p, name);
  if (c == nullptr) throw std::runtime_error("no component '" + name + "'");
  return std::get<GemmWork>(c->work);
}

struct Shape {
  std::int64_t m, n, k, batch;
};
void expect_shape(const ReplayPlan& p, const std::string& name, Shape want) {
  SCOPED_TRACE(name);
  const GemmWork& g = gemm(p, name);
  EXPECT_EQ(g.m, want.m);
  EXPECT_EQ(g.n, want.n);
  EXPECT_EQ(g.k, want.k);
  EXPECT_EQ(g.batch, want.batch);
}

// Sum of count x FLOPs over the GEMMs of the linears and the head (attention core excluded).
double linear_flops(const ReplayPlan& p) {
  double f = 0.0;
  for (const auto& c : p.components) {
    if (const auto* g = std::get_if<GemmWork>(&c.work)) {
      if (c.name.find("attention") != std::string::npos) continue;
      f += g->flops().value() * c.count;
    }
  }
  return f;
}

bool is_kernel(const ReplayComponent& c) {
  return std::holds_alternative<GemmWork>(c.work) ||
         std::holds_alternative<AttentionWork>(c.work) ||
         std::holds_alternative<StreamWork>(c.work);
}

// Llama-2-7B (meta-llama/Llama-2-7b-hf config.json): h 4096, 32 heads of 128, MLP 11008, vocab
// 32000, 32 layers.
constexpr std::int64_t kH = 4096;
constexpr std::int64_t kI = 11008;
constexpr std::int64_t kV = 32000;
constexpr double kLlama2BlockLinears = 4.0 * kH * kH + 3.0 * kH * kI;  // 202,375,168

// The attention kernel is chosen in one place (attention_run): the replay runs the fused kernel
// exactly where the evaluator prices one, for every family, precision and attention request on an
// H100, including fp32 SDPA (PyTorch's dispatch sends it to the efficient kernel for most
// families) and the families whose SDPA call the dispatch sends to the math kernel.
TEST(Replay, AttentionKernelIsTheOneTheEvaluatorPrices) {
  int fused_seen = 0;
  int unfused_seen = 0;
  for (const char* name : {"llama-2-7b", "falcon-7b", "gpt2", "bloom-560m", "mpt-7b", "phi-2", "t5-3b"}) {
    const Subject s = subject(name, "1xH100-80GB");
    for (const Precision p : {Precision::fp32, Precision::bf16_mixed}) {
      for (const Attention at : {Attention::sdpa, Attention::eager}) {
        model::Training tr;
        tr.strategy = Strategy::single;
        tr.precision = p;
        tr.attention = at;
        tr.micro_batch = 1;
        tr.seq = 256;
        SCOPED_TRACE(std::string(name) + " " + std::string(to_string(p)) + " " + std::string(to_string(at)));
        const AttentionRun run = attention_run(s.a, tr, cuda_sm(s.c.gpu));
        const ReplayPlan plan = plan_of(s, tr);
        bool fused_kernel = false;
        bool score_gemms = false;
        for (const ReplayComponent& c : plan.components) {
          fused_kernel = fused_kernel || c.name.ends_with("attention forward");
          score_gemms = score_gemms || c.name.find("scores QK^T forward") != std::string::npos;
        }
        EXPECT_EQ(fused_kernel, run.fused);
        EXPECT_EQ(score_gemms, !run.fused);
        (run.fused ? fused_seen : unfused_seen) += 1;
      }
    }
  }
  EXPECT_GT(fused_seen, 0);
  EXPECT_GT(unfused_seen, 0);
}

TEST(Replay, DenseShapesCountsAndSixNFlops) {
  const Subject s = subject("llama-2-7b", "1xH200");
  model::Training tr;
  tr.seq = 2048;
  tr.micro_batch = 1;
  tr.grad_accum = 2;
  const ReplayPlan p = plan_of(s, tr);
  const std::int64_t T = 2048;
  expect_shape(p, "q forward", {T, kH, kH, 1});
  expect_shape(p, "gate forward", {T, kI, kH, 1});
  expect_shape(p, "down forward", {T, kH, kI, 1});
  expect_shape(p, "down backward dX", {T, kI, kH, 1});
  expect_shape(p, "down backward dW", {kI, kH, T, 1});
  expect_shape(p, "lm_head forward", {T, kV, kH, 1});
  // Forward Y = X W^T reads the weight transposed; the weight gradient reads X transposed.
  EXPECT_TRUE(gemm(p, "q forward").b_transposed);
  EXPECT_FALSE(gemm(p, "q backward dX").b_transposed);
  EXPECT_TRUE(gemm(p, "q backward dW").a_transposed);
  EXPECT_EQ(gemm(p, "q forward").dtype, "bf16");
  // 32 blocks x 2 micro-batches; the head once per micro-batch.
  EXPECT_DOUBLE_EQ(find(p, "q forward")->count, 64.0);
  EXPECT_DOUBLE_EQ(find(p, "lm_head forward")->count, 2.0);
  EXPECT_DOUBLE_EQ(find(p, "q forward")->recomputed, 0.0);
  // A full fine-tune multiplies every weight three times (forward, dX, dW): 6 N T per micro-batch.
  const double N = 32.0 * kLlama2BlockLinears + double(kV) * kH;
  EXPECT_NEAR(linear_flops(p), 6.0 * N * T * 2.0, 1e-9 * 6.0 * N * T * 2.0);
  // Causal fused attention: 4 b s^2 h_q d x (s + 1) / 2s forward, 2.5x that backward.
  const auto& att = std::get<AttentionWork>(find(p, "attention forward")->work);
  EXPECT_EQ(att.heads, 32);
  EXPECT_EQ(att.kv_heads, 32);
  EXPECT_EQ(att.seq, 2048);
  EXPECT_EQ(att.head_dim, 128);
  EXPECT_TRUE(att.causal);
  EXPECT_NEAR(att.flops.value(), 4.0 * 2048.0 * 2048.0 * 32.0 * 128.0 * 2049.0 / 4096.0, 1.0);
  const auto& att_b = std::get<AttentionWork>(find(p, "attention backward")->work);
  EXPECT_NEAR(att_b.flops.value(), 2.5 * att.flops.value(), 1.0);
  // One GPU: nothing to communicate; the optimizer steps 6.74 B parameters in slices of <= 1e9.
  for (const auto& c : p.components)
    EXPECT_FALSE(std::holds_alternative<CollectiveWork>(c.work)) << c.name;
  const ReplayComponent* opt = find(p, "optimizer step (7 slices)");
  ASSERT_NE(opt, nullptr);
  const auto& ow = std::get<OptimizerWork>(opt->work);
  EXPECT_NEAR(ow.params * opt->count, double(s.n.total), 1.0);
  EXPECT_EQ(ow.implementation,
            OptimizerImpl::fused);        // the Trainer's adamw_torch_fused (transformers 4.54 on)
  EXPECT_DOUBLE_EQ(ow.state_bytes, 4.0);  // autocast: an fp32 model
}

TEST(Replay, GroupedQueryAttentionNarrowsKeysAndValues) {
  // Llama-3.1-8B: 32 query heads, 8 K/V heads of 128, MLP 14336, vocab 128256.
  const Subject s = subject("llama-3.1-8b", "4xH100-80GB");
  model::Training tr;
  tr.seq = 4096;
  tr.strategy = Strategy::ddp;
  for (const int t : {1, 4}) {
    SCOPED_TRACE("tp " + std::to_string(t));
    tr.tp = t;
    const ReplayPlan p = plan_of(s, tr);
    expect_shape(p, "q forward", {4096, 4096 / t, 4096, 1});
    expect_shape(p, "k forward", {4096, 1024 / t, 4096, 1});
    expect_shape(p, "v backward dX", {4096, 4096, 1024 / t, 1});
    expect_shape(p, "o forward", {4096, 4096, 4096 / t, 1});
    expect_shape(p, "lm_head forward", {4096, 128256 / t, 4096, 1});
    const auto& att = std::get<AttentionWork>(find(p, "attention forward")->work);
    EXPECT_EQ(att.heads, 32 / t);
    EXPECT_EQ(att.kv_heads, 8 / t);
  }
}

TEST(Replay, TensorParallelSplitsColumnsAndRowsAndAllReducesTwicePerPass) {
  const Subject s = subject("llama-2-7b", "4xH100-80GB");
  model::Training tr;
  tr.seq = 4096;
  tr.micro_batch = 2;
  tr.grad_accum = 3;
  tr.strategy = Strategy::ddp;
  const std::int64_t T = 8192;
  for (const int t : {2, 4}) {
    SCOPED_TRACE("tp " + std::to_string(t));
    tr.tp = t;
    const ReplayPlan p = plan_of(s, tr);
    // Column-parallel q/k/v/gate/up halve (quarter) N; row-parallel o/down their K.
    expect_shape(p, "q forward", {T, kH / t, kH, 1});
    expect_shape(p, "up forward", {T, kI / t, kH, 1});
    expect_shape(p, "o forward", {T, kH, kH / t, 1});
    expect_shape(p, "down forward", {T, kH, kI / t, 1});
    expect_shape(p, "down backward dW", {kI / t, kH, T, 1});
    // Every GPU does 1/t of the linears' work.
    const double N = 32.0 * kLlama2BlockLinears + double(kV) * kH;
    EXPECT_NEAR(linear_flops(p), 6.0 * N * T * 3.0 / t, 1e-9 * 6.0 * N * T * 3.0);
    // Megatron f/g: 2 all-reduces of b s h 16-bit activations forward and 2 backward per layer,
    // plus the embedding's and the head's input gradient; per micro-batch.
    const ReplayComponent* ar = find(p, "tensor-parallel all_reduce (forward and backward)");
    ASSERT_NE(ar, nullptr);
    const auto& w = std::get<CollectiveWork>(ar->work);
    EXPECT_DOUBLE_EQ(w.size.value(), 2.0 * 4096 * kH * 2.0);
    EXPECT_EQ(w.group.ranks, t);
    EXPECT_EQ(w.stride, 1);
    EXPECT_DOUBLE_EQ(ar->count, (4.0 * 32 + 2.0) * 3.0);
    // The other 4 / t GPUs form the data-parallel group, t ranks apart.
    if (t == 4) continue;
    const ReplayComponent* dp = nullptr;
    for (const auto& c : p.components)
      if (c.name.rfind("data-parallel gradient all_reduce", 0) == 0) dp = &c;
    ASSERT_NE(dp, nullptr);
    EXPECT_EQ(std::get<CollectiveWork>(dp->work).group.ranks, 4 / t);
    EXPECT_EQ(std::get<CollectiveWork>(dp->work).stride, t);
  }
  // Full checkpointing replays each block's forward: two more all-reduces per layer, and every
  // forward kernel twice.
  tr.tp = 2;
  tr.checkpointing = Checkpointing::full;
  const ReplayPlan p = plan_of(s, tr);
  EXPECT_DOUBLE_EQ(find(p, "tensor-parallel all_reduce (forward and backward)")->count,
                   (6.0 * 32 + 2.0) * 3.0);
  EXPECT_DOUBLE_EQ(find(p, "q forward")->count, 2.0 * 32 * 3);
  EXPECT_DOUBLE_EQ(find(p, "q forward")->recomputed, 32.0 * 3);
  EXPECT_DOUBLE_EQ(find(p, "q backward dX")->count, 32.0 * 3);
}

TEST(Replay, SequenceParallelGathersAndScattersInsteadOfAllReducing) {
  const Subject s = subject("llama-2-7b", "4xH100-80GB");
  model::Training tr;
  tr.tp = 4;
  tr.sequence_parallel = true;
  tr.strategy = Strategy::single;
  tr.seq = 2048;
  const ReplayPlan p = plan_of(s, tr);
  EXPECT_EQ(find(p, "tensor-parallel all_reduce (forward and backward)"), nullptr);
  for (const char* name : {"tensor-parallel all_gather (forward and backward)",
                           "tensor-parallel reduce_scatter (forward and backward)"}) {
    SCOPED_TRACE(name);
    const ReplayComponent* c = find(p, name);
    ASSERT_NE(c, nullptr);
    EXPECT_DOUBLE_EQ(c->count, 4.0 * 32 + 2.0);
    EXPECT_DOUBLE_EQ(std::get<CollectiveWork>(c->work).size.value(), 2048.0 * kH * 2.0);
  }
}

TEST(Replay, LoraAddsThinRankRGemmsAndDropsFrozenWeightGradients) {
  const Subject s = subject("llama-2-7b", "1xH200");
  model::Training tr;
  tr.method = Method::lora;
  tr.precision = Precision::bf16_true;
  tr.lora.rank = 16;
  tr.lora.targets = {"q", "v"};
  tr.seq = 2048;
  const ReplayPlan p = plan_of(s, tr);
  const std::int64_t T = 2048;
  const std::int64_t r = 16;
  expect_shape(p, "q lora A forward", {T, r, kH, 1});
  expect_shape(p, "q lora B forward", {T, kH, r, 1});
  expect_shape(p, "v lora B backward dX", {T, r, kH, 1});
  expect_shape(p, "v lora A backward dX", {T, kH, r, 1});
  expect_shape(p, "v lora B backward dW", {r, kH, T, 1});
  expect_shape(p, "v lora A backward dW", {kH, r, T, 1});
  EXPECT_EQ(find(p, "k lora A forward"), nullptr);  // k is not a target
  EXPECT_EQ(find(p, "q backward dW"), nullptr);     // frozen base
  EXPECT_EQ(find(p, "lm_head backward dW"), nullptr);
  int lora_gemms = 0;
  for (const auto& c : p.components)
    if (c.name.find(" lora ") != std::string::npos) ++lora_gemms;
  EXPECT_EQ(lora_gemms, 2 * 6);
  // Frozen base: forward and dX only (4 N T); each adapter of r (in + out) parameters 6 x that x T.
  const double base = 32.0 * kLlama2BlockLinears + double(kV) * kH;
  const double adapters = 32.0 * 2.0 * r * (kH + kH);
  const double want = 4.0 * base * T + 6.0 * adapters * T;
  EXPECT_NEAR(linear_flops(p), want, 1e-9 * want);
  // The optimizer steps the 8,388,608 adapter parameters (32 x 2 x 16 x 8192) in one slice, all
  // 16-bit under bf16-true.
  const auto& ow = std::get<OptimizerWork>(find(p, "optimizer step")->work);
  EXPECT_DOUBLE_EQ(ow.params, 8388608.0);
  EXPECT_DOUBLE_EQ(ow.tensors, 128.0);
  EXPECT_DOUBLE_EQ(ow.state_bytes, 2.0);
}

TEST(Replay, MixtureOfExpertsBatchesExpertsOverTheirShareOfTokens) {
  // Mixtral-8x7B: 8 experts of MLP 14336, top-2; 8 K/V heads; router 4096 -> 8.
  const Subject s = subject("mixtral-8x7b", "8xH100-80GB");
  model::Training tr;
  tr.seq = 4096;
  tr.strategy = Strategy::zero3;
  tr.ep = 8;
  tr.checkpointing = Checkpointing::full;
  const ReplayPlan p = plan_of(s, tr);
  const std::int64_t per_expert = 4096 * 2 / 8;
  expect_shape(p, "gate experts forward", {per_expert, 14336, kH, 8});
  expect_shape(p, "down experts backward dW", {14336, kH, per_expert, 8});
  expect_shape(p, "router forward", {4096, 8, kH, 1});
  expect_shape(p, "k forward", {4096, 1024, kH, 1});
  // Expert GEMM FLOPs are those of the k active experts over all tokens.
  const GemmWork& g = gemm(p, "up experts forward");
  EXPECT_DOUBLE_EQ(g.flops().value(), 2.0 * 4096 * 2 * 14336 * kH);
  // Dispatch and combine, forward and backward: 4 all-to-alls of k b s h 16-bit per layer.
  const ReplayComponent* a2a =
      find(p, "MoE all_to_all (dispatch and combine, forward and backward)");
  ASSERT_NE(a2a, nullptr);
  EXPECT_DOUBLE_EQ(a2a->count, 4.0 * 32);
  EXPECT_DOUBLE_EQ(std::get<CollectiveWork>(a2a->work).size.value(), 2.0 * 4096 * kH * 2.0);
  EXPECT_EQ(std::get<CollectiveWork>(a2a->work).group.ranks, 8);
}

TEST(Replay, FsdpGathersEachUnitsParametersForwardAndBackward) {
  const Subject s = subject("llama-2-7b", "8xA100-80GB");
  model::Training tr;
  tr.strategy = Strategy::fsdp_full;
  tr.seq = 2048;
  tr.grad_accum = 2;
  const ReplayPlan p = plan_of(s, tr);
  // One unit per block: the gathered model (16-bit) over 32 units, gathered each micro-batch and
  // reduced once a step (transformers' Trainer accumulates under FSDP's no_sync). Backward gathers
  // the blocks only: FSDP keeps its root unit (embedding and head 32000 x 4096 each, the final norm
  // 4096) gathered from forward to backward (torch FSDP1 _post_forward_reshard: not state._is_root).
  const double unit = 6738415616.0 * 2.0 / 32.0;
  const double block = (6738415616.0 - 2.0 * 32000 * 4096 - 4096) * 2.0 / 32.0;
  for (const char* name :
       {"forward parameter all_gather (per unit)", "backward parameter all_gather (per unit)",
        "gradient reduce_scatter (per unit)"}) {
    SCOPED_TRACE(name);
    const ReplayComponent* c = find(p, name);
    ASSERT_NE(c, nullptr);
    const auto& w = std::get<CollectiveWork>(c->work);
    EXPECT_NEAR(w.size.value(), std::string_view(name).starts_with("backward") ? block : unit,
                1.0);  // FSDP reduces bf16 gradients: the same bytes
    EXPECT_EQ(w.group.ranks, 8);
    EXPECT_DOUBLE_EQ(c->count, std::string_view(name).starts_with("gradient") ? 32.0 : 32.0 * 2);
  }
  // Each rank steps its eighth of the fp32 model.
  const ReplayComponent* opt = find(p, "optimizer step");
  ASSERT_NE(opt, nullptr);
  EXPECT_NEAR(std::get<OptimizerWork>(opt->work).params, 6738415616.0 / 8, 1.0);

  // SHARD_GRAD_OP keeps the gathered parameters to backward; no wrap policy gathers the whole model
  // at once.
  tr.strategy = Strategy::fsdp_grad_op;
  EXPECT_EQ(find(plan_of(s, tr), "backward parameter all_gather (per unit)"), nullptr);
  tr.strategy = Strategy::fsdp_full;
  tr.fsdp_wrap = FsdpWrap::none;
  const ReplayPlan whole = plan_of(s, tr);
  const ReplayComponent* g = nullptr;
  for (const auto& c : whole.components)
    if (c.name.rfind("forward parameter all_gather (per unit)", 0) == 0) g = &c;
  ASSERT_NE(g, nullptr);
  EXPECT_NEAR(std::get<CollectiveWork>(g->work).size.value() * g->count, 6738415616.0 * 2.0 * 2,
              16.0);
  // The one unit is the root: kept gathered to backward, never gathered again.
  EXPECT_EQ(find(whole, "backward parameter all_gather (per unit)"), nullptr);
}

TEST(Replay, LargeTransfersRunAsSlices) {
  // Megatron's DDP without overlap_grad_reduce all-reduces llama-2-7b's fp32 gradients in one
  // bucket: 26.95 GB, 26 slices of at most 1 GiB.
  const Subject s = subject("llama-2-7b", "8xA100-80GB");
  model::Training tr;
  tr.strategy = Strategy::ddp;
  tr.framework = Framework::megatron;
  const ReplayPlan p = plan_of(s, tr);
  const ReplayComponent* ar = find(p, "data-parallel gradient all_reduce (26 slices)");
  ASSERT_NE(ar, nullptr);
  const auto& w = std::get<CollectiveWork>(ar->work);
  EXPECT_NEAR(w.size.value() * ar->count, 6738415616.0 * 4.0, 64.0);
  EXPECT_LE(w.size.value(), gib(1.0).value());
  ReplayOptions o;
  o.max_message = gib(64.0);
  EXPECT_NE(find(plan_of(s, tr, o), "data-parallel gradient all_reduce"), nullptr);
  // PyTorch DDP reduces them in 25 MB buckets (bucket_cap_mb): 1,078 full ones and the rest.
  tr.framework = Framework::pytorch;
  const ReplayPlan buckets = plan_of(s, tr);
  const ReplayComponent* full = find(buckets, "data-parallel gradient all_reduce");
  const ReplayComponent* last = find(buckets, "data-parallel gradient all_reduce (last bucket)");
  ASSERT_TRUE(full != nullptr && last != nullptr);
  EXPECT_DOUBLE_EQ(std::get<CollectiveWork>(full->work).size.value(), 25e6);
  EXPECT_DOUBLE_EQ(full->count, 1078.0);
  EXPECT_NEAR(std::get<CollectiveWork>(last->work).size.value(), 6738415616.0 * 4.0 - 1078 * 25e6, 64.0);
}

// The components add up to the evaluator's terms: kernels to compute + memory-bound + recompute,
// each collective to its communication term's time, the optimizer to the optimizer term.
struct SumCase {
  std::string name;
  std::string model;
  std::string cluster;
  model::Training tr;
  std::int64_t mtp_layers = 0;  // multi-token prediction modules trained with the model
};

std::vector<SumCase> sum_cases() {
  std::vector<SumCase> cases;
  auto add = [&](std::string name, std::string model, std::string cluster, auto&& edit) {
    model::Training tr;
    tr.seq = 2048;
    edit(tr);
    cases.push_back({std::move(name), std::move(model), std::move(cluster), tr});
  };
  add("dense single", "llama-2-7b", "1xH200", [](model::Training&) {});
  add("dense bf16-true eager", "llama-2-7b", "1xH200", [](model::Training& t) {
    t.precision = Precision::bf16_true;
    t.attention = Attention::eager;
  });
  add("gqa ddp selective", "llama-3.1-8b", "8xH100-80GB", [](model::Training& t) {
    t.strategy = Strategy::ddp;
    t.checkpointing = Checkpointing::selective;
    t.grad_accum = 4;
  });
  add("lora all-linear full ckpt", "mistral-7b", "1xH200", [](model::Training& t) {
    t.method = Method::lora;
    t.lora.targets = {"all-linear"};
    t.seq = 4096;
    t.checkpointing = Checkpointing::full;
  });
  add("qlora", "llama-2-7b", "1xH100-80GB", [](model::Training& t) {
    t.method = Method::qlora;
    t.checkpointing = Checkpointing::full;
  });
  add("tp sp pp", "llama-2-7b", "2x8xH100-80GB", [](model::Training& t) {
    t.tp = 4;
    t.pp = 2;
    t.sequence_parallel = true;
    t.strategy = Strategy::zero1;
    t.grad_accum = 8;
  });
  add("fsdp full", "llama-2-7b", "8xA100-80GB", [](model::Training& t) {
    t.strategy = Strategy::fsdp_full;
    t.grad_accum = 2;
  });
  add("fsdp hybrid", "llama-2-13b", "2x8xA100-80GB",
      [](model::Training& t) { t.strategy = Strategy::fsdp_hybrid; });
  add("zero2", "llama-2-7b", "8xA100-80GB", [](model::Training& t) {
    t.strategy = Strategy::zero2;
    t.framework = Framework::deepspeed;
    t.grad_accum = 2;
  });
  add("moe zero3 ep", "mixtral-8x7b", "2x8xH100-80GB", [](model::Training& t) {
    t.strategy = Strategy::zero3;
    t.ep = 8;
    t.checkpointing = Checkpointing::full;
  });
  add("megatron tp unfused", "llama-2-7b", "8xH100-80GB", [](model::Training& t) {
    t.framework = Framework::megatron;
    t.tp = 8;
    t.attention = Attention::eager;
    t.strategy = Strategy::single;
  });
  add("encoder-decoder", "t5-3b", "1xH100-80GB", [](model::Training& t) { t.seq = 512; });
  // Layers of two kinds (a dense first layer, expert layers) and latent attention.
  add("deepseek lora", "deepseek-v2-lite", "1xH100-80GB", [](model::Training& t) {
    t.method = Method::lora;
    t.lora.targets = {"all-linear"};
    t.attention = Attention::sdpa;
  });
  add("deepseek megatron mtp", "deepseek-v2-lite", "8xH100-80GB", [](model::Training& t) {
    t.framework = Framework::megatron;
    t.tp = 2;
    t.ep = 4;
    t.strategy = Strategy::zero1;
    t.checkpointing = Checkpointing::selective;
    t.grad_accum = 2;
  });
  cases.back().mtp_layers = 1;
  add("offload", "llama-2-7b", "1xH100-80GB", [](model::Training& t) {
    t.strategy = Strategy::zero3;
    t.offload = Offload::optimizer;
  });
  return cases;
}

// With a calibrated profile (data/profiles/h200.json) the same must hold.
const hardware::HardwareProfile* h200_profile() {
  static const hardware::HardwareProfile p = request::read_profile(
      std::string(TRAINPLAN_PLANNER_TEST_DATA) + "/../../../data/profiles/h200.json");
  return &p;
}

TEST(Replay, PredictionsAddUpToTheEvaluatorsTerms) {
  for (const bool with_profile : {false, true})
    for (const SumCase& k : sum_cases()) {
      SCOPED_TRACE(k.name + (with_profile ? " with the H200 profile" : ""));
      Subject s = subject(k.model, k.cluster);
      s.a.mtp_layers = k.mtp_layers;
      s.n = model::count_parameters(s.a);
      const hardware::HardwareProfile* profile = with_profile ? h200_profile() : nullptr;
      const ReplayPlan p = replay_plan(s.a, s.n, k.tr, s.c, profile);
      const Evaluator ev(s.a, s.n, s.c, profile);
      const StepCost cost = ev.cost(k.tr);
      Seconds kernels;
      Seconds optimizer;
      std::map<std::pair<std::string, std::string>, Seconds> comm;
      for (const auto& c : p.components) {
        EXPECT_GT(c.count, 0.0) << c.name;
        EXPECT_GE(c.predicted.value(), 0.0) << c.name;
        EXPECT_LE(c.recomputed, c.count) << c.name;
        if (is_kernel(c)) kernels += c.predicted_total();
        if (std::holds_alternative<OptimizerWork>(c.work) || c.name.rfind("optimizer", 0) == 0)
          optimizer += c.predicted_total();
        if (const auto* w = std::get_if<CollectiveWork>(&c.work)) {
          const std::string kind(to_string(w->collective));
          comm[{kind == "send_recv" ? "send_recv" : kind, std::string(to_string(w->purpose))}] +=
              c.predicted_total();
        }
      }
      const TimeBreakdown& t = cost.time;
      const double want = (t.compute + t.memory_bound + t.recompute).value();
      EXPECT_NEAR(kernels.value(), want, 1e-9 * want);
      EXPECT_NEAR(optimizer.value(), t.optimizer.value(), 1e-9 * t.optimizer.value() + 1e-15);
      std::map<std::pair<std::string, std::string>, Seconds> terms;
      for (std::size_t i = 0; i < cost.comm_count; ++i) {
        const CommTerm& c = cost.comm[i];
        if (c.kind == Transfer::device_to_host || c.kind == Transfer::host_to_device) continue;
        terms[{std::string(to_string(c.kind)), std::string(to_string(c.purpose))}] += c.time;
      }
      ASSERT_EQ(comm.size(), terms.size());
      for (const auto& [key, time] : terms) {
        SCOPED_TRACE(key.first + " " + key.second);
        ASSERT_TRUE(comm.contains(key));
        EXPECT_NEAR(comm[key].value(), time.value(), 1e-9 * time.value());
      }
      // With every component measured at its prediction, the projection is the prediction.
      std::vector<std::optional<Seconds>> measured;
      for (const auto& c : p.components)
        measured.push_back(c.runs_on_gpu() ? std::optional<Seconds>(c.predicted) : std::nullopt);
      const ReplayProjection pr = project(p, measured);
      EXPECT_NEAR(pr.projected_step.value(), t.step.value(), 1e-9 * t.step.value());
      EXPECT_NEAR(pr.measured_serial.value(), pr.predicted_serial.value(),
                  1e-9 * pr.predicted_serial.value());
      EXPECT_EQ(pr.unmeasured, 0u);
    }
}

TEST(Replay, ProjectionReplacesPredictionsByMeasurements) {
  const Subject s = subject("llama-2-7b", "1xH200");
  model::Training tr;
  tr.grad_accum = 2;
  const ReplayPlan p = plan_of(s, tr);
  std::vector<std::optional<Seconds>> measured(p.components.size());
  std::size_t q = 0;
  for (std::size_t i = 0; i < p.components.size(); ++i)
    if (p.components[i].name == "q forward") q = i;
  const ReplayComponent& c = p.components[q];
  measured[q] = c.predicted * 2.0;  // twice as slow as predicted: 64 more occurrences' worth
  const ReplayProjection pr = project(p, measured);
  EXPECT_EQ(pr.measured, 1u);
  EXPECT_NEAR((pr.projected_step - p.time.step).value(), (c.predicted * 64.0).value(), 1e-12);
  EXPECT_NEAR((pr.measured_serial - pr.predicted_serial).value(), (c.predicted * 64.0).value(),
              1e-12);
  EXPECT_GT(pr.unmeasured, 0u);
  EXPECT_THROW((void)project(p, {}), std::invalid_argument);
}

TEST(Replay, ImpossibleLayoutsAreInputErrors) {
  const Subject s = subject("llama-2-7b", "4xH100-80GB");
  model::Training tr;
  tr.tp = 3;
  EXPECT_THROW((void)plan_of(s, tr), InputError);
}

// The replay runs the eager ops and the head unchunked: Liger's kernels are refused by name, not
// replayed as something else.
TEST(Replay, LigerIsRefusedByName) {
  const Subject s = subject("llama-3.2-1b", "H100-80GB");
  model::Training tr;
  tr.strategy = Strategy::single;
  tr.liger = true;
  try {
    (void)plan_of(s, tr);
    ADD_FAILURE() << "Liger's kernels replayed";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("Liger's kernels (liger) are not replayed"), std::string::npos) << e.what();
  }
}

// Partial fine-tuning: the replay trains every weight of the block it runs, so a partly frozen
// model is refused by name.
TEST(Replay, PartialFineTuningIsRefusedByName) {
  const Subject s = subject("llama-3.2-1b", "H100-80GB");
  model::Training tr;
  tr.strategy = Strategy::single;
  tr.partial = model::parse_trained_subset("12-15", "trainable");
  try {
    (void)plan_of(s, tr);
    ADD_FAILURE() << "a partly frozen model replayed";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("partial fine-tuning (trainable 12-15) is not replayed"), std::string::npos)
        << e.what();
  }
}

}  // namespace
// torchtitan's per-op checkpointing keeps some ops' outputs inside a block; the replay checkpoints
// whole blocks, so it is refused by name, not replayed as full or selective.
TEST(Replay, PerOpCheckpointingIsRefusedByName) {
  const Subject s = subject("llama-3.2-1b", "H100-80GB");
  model::Training tr;
  tr.strategy = Strategy::single;
  tr.checkpointing = Checkpointing::selective_op;
  try {
    (void)plan_of(s, tr);
    ADD_FAILURE() << "per-op checkpointing replayed";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("selective-op"), std::string::npos) << e.what();
  }
}

// FSDP2 gathers through a flat buffer and copies out on the compute stream; the replay runs FSDP1's
// collectives on flat units, so fully_shard is refused by name, not replayed as FSDP1.
TEST(Replay, Fsdp2IsRefusedByName) {
  const Subject s = subject("llama-3.2-1b", "8xH100-80GB");
  model::Training tr;
  tr.strategy = Strategy::fsdp_full;
  tr.fsdp_version = 2;
  try {
    (void)plan_of(s, tr);
    ADD_FAILURE() << "FSDP2 replayed";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("FSDP2 (fsdp_version 2) is not replayed"), std::string::npos) << e.what();
  }
}

}  // namespace trainplan::planner
