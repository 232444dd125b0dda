// Full checkpointing of some blocks only. One block in N (Training::checkpoint_every), as torchtitan's
// layer-selective checkpointing runs it (torchtitan/distributed/activation_checkpoint.py at
// 238fa995, _apply_layer_sac): a counter from 1 over the blocks each rank builds wraps the N-th,
// 2N-th, ... in checkpoint_wrapper; the others run plain. So of a stage's L blocks floor(L / N) keep
// their input only and replay their forward in backward; the rest keep everything, as without
// checkpointing. The first K blocks of each pipeline chunk (Training::checkpoint_layers), as
// Megatron-LM's --recompute-method block runs it (megatron/core/transformer/transformer_block.py
// _checkpointed_forward: `if l < recompute_num_layers` over the chunk's layers). Worked on
// Llama-3.1-8B (32 blocks) against the same plan with every block and with no block checkpointed.
#include <gtest/gtest.h>

#include "../common/catalog.hpp"
#include "../common/megatron_training.hpp"
#include "trainplan/model/flops.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/model/partial.hpp"
#include "trainplan/planner/evaluator.hpp"

namespace trainplan::planner {
namespace {

struct Subject {
  model::Architecture a;
  model::ParameterCounts n;
  hardware::Cluster c;
};

Subject llama_8b() {
  const model::Architecture a = test::catalog().resolve_model("llama-3.1-8b").arch;
  return {a, model::count_parameters(a), test::catalog().resolve_cluster("8xH100-80GB", std::nullopt).cluster};
}

model::Training torchtitan(Checkpointing c, std::int64_t every) {
  model::Training t;
  t.library = Library::torchtitan;
  t.strategy = Strategy::fsdp_full;
  t.precision = Precision::bf16_mixed;
  t.seq = 8192;
  t.micro_batch = 1;
  t.checkpointing = c;
  t.checkpoint_every = every;
  return t;
}

// Megatron-LM with the distributed optimizer, TP 2 with sequence parallelism, 2 pipeline stages
// (16 blocks each), 4 micro-batches.
model::Training megatron_tp2_pp2(Checkpointing c) {
  model::Training t = test::megatron_tp2();
  t.precision = Precision::bf16_mixed;
  t.pp = 2;
  t.grad_accum = 4;
  t.checkpointing = c;
  return t;
}

// Half the blocks checkpointed: the activations per block halfway between none and full, one
// block's forward rebuilt in backward as under full, half of full's recomputation.
void expect_halfway(const Estimate& none, const Estimate& full, const Estimate& half) {
  const double kept_none = none.memory.activation_detail.per_block.value();
  const double kept_full = full.memory.activation_detail.per_block.value();
  ASSERT_GT(kept_none, 4.0 * kept_full);
  EXPECT_NEAR(half.memory.activation_detail.per_block.value(), 0.5 * (kept_none + kept_full), 1e-9 * kept_none);
  EXPECT_DOUBLE_EQ(half.memory.activation_detail.recompute_peak.value(),
                   full.memory.activation_detail.recompute_peak.value());
  EXPECT_EQ(none.time.recompute.value(), 0.0);
  EXPECT_NEAR(half.time.recompute.value(), 0.5 * full.time.recompute.value(), 1e-12);
}

// Each rank counts the blocks of its own stage: 32 blocks over 4 stages of 8, one in 3 -> blocks 3
// and 6 of each stage, 8 of 32 (not floor(32 / 3) = 10 over the whole model).
TEST(CheckpointEvery, EachStageCountsItsOwnBlocks) {
  const Subject s = llama_8b();
  model::Training t = torchtitan(Checkpointing::full, 3);
  EXPECT_DOUBLE_EQ(model::checkpoint_picked_share(s.a, t), 10.0 / 32.0);
  t.pp = 4;
  EXPECT_DOUBLE_EQ(model::checkpoint_picked_share(s.a, t), 8.0 / 32.0);
  EXPECT_FALSE(model::checkpoint_picks(s.a, t, 0));
  EXPECT_TRUE(model::checkpoint_picks(s.a, t, 2));
  EXPECT_TRUE(model::checkpoint_picks(s.a, t, 5));
  EXPECT_FALSE(model::checkpoint_picks(s.a, t, 8));  // the second stage's first block
  EXPECT_TRUE(model::checkpoint_picks(s.a, t, 10));
  // Every block at 1; under any other policy the count does nothing.
  t.checkpoint_every = 1;
  EXPECT_DOUBLE_EQ(model::checkpoint_picked_share(s.a, t), 1.0);
  t.checkpoint_every = 3;
  t.checkpointing = Checkpointing::selective_op;
  EXPECT_DOUBLE_EQ(model::checkpoint_picked_share(s.a, t), 1.0);
}

// Every second block: 16 blocks keep their input, 16 keep all they save; the recomputation is
// half of full checkpointing's, FLOPs and time alike, and so are the kernels replayed from Python.
TEST(CheckpointEvery, EverySecondBlockIsHalfwayBetweenNoneAndFull) {
  const Subject s = llama_8b();
  const Evaluator ev(s.a, s.n, s.c);
  const Estimate none = ev.estimate(torchtitan(Checkpointing::none, 1));
  const Estimate full = ev.estimate(torchtitan(Checkpointing::full, 1));
  const Estimate half = ev.estimate(torchtitan(Checkpointing::full, 2));
  expect_halfway(none, full, half);
  const model::FlopCoefficients k_full = model::flop_coefficients(s.a, torchtitan(Checkpointing::full, 1));
  const model::FlopCoefficients k_half = model::flop_coefficients(s.a, torchtitan(Checkpointing::full, 2));
  EXPECT_DOUBLE_EQ(k_half.replay_share, 0.5 * k_full.replay_share);
  const double replayed_full = full.time.kernels_backward - none.time.kernels_backward;
  ASSERT_GT(replayed_full, 0.0);
  EXPECT_NEAR(half.time.kernels_backward - none.time.kernels_backward, 0.5 * replayed_full, 1e-9);
  EXPECT_GT(half.throughput.tokens_per_s, full.throughput.tokens_per_s);
  EXPECT_LT(half.throughput.tokens_per_s, none.throughput.tokens_per_s);
}

// Megatron's block method, 8 of the 16 blocks of each of 2 stages: half the blocks keep their input,
// the activations per block halfway between none and full; the replayed forward's tensor-parallel
// collectives half of full's.
TEST(CheckpointLayers, FirstBlocksOfEachChunkUnderMegatron) {
  const Subject s = llama_8b();
  auto megatron = [](Checkpointing c, std::int64_t k) {
    model::Training t = megatron_tp2_pp2(c);
    t.checkpoint_layers = k;
    return t;
  };
  EXPECT_DOUBLE_EQ(model::checkpoint_picked_share(s.a, megatron(Checkpointing::full, 8)), 0.5);
  EXPECT_TRUE(model::checkpoint_picks(s.a, megatron(Checkpointing::full, 8), 7));
  EXPECT_FALSE(model::checkpoint_picks(s.a, megatron(Checkpointing::full, 8), 8));
  EXPECT_TRUE(model::checkpoint_picks(s.a, megatron(Checkpointing::full, 8), 16));  // the second stage's first
  model::Training v = megatron(Checkpointing::full, 2);
  v.pp_virtual = 4;  // chunks of 4 layers: 2 of each
  EXPECT_DOUBLE_EQ(model::checkpoint_picked_share(s.a, v), 0.5);
  EXPECT_FALSE(model::checkpoint_picks(s.a, v, 6));
  const Evaluator ev(s.a, s.n, s.c);
  const Estimate none = ev.estimate(megatron(Checkpointing::none, 0));
  const Estimate full = ev.estimate(megatron(Checkpointing::full, 0));
  const Estimate half = ev.estimate(megatron(Checkpointing::full, 8));
  expect_halfway(none, full, half);
  auto tp_bytes = [](const Estimate& e) {
    double b = 0.0;
    for (const CommunicationItem& x : e.communication)
      if (x.purpose.find("tensor") != std::string::npos) b += x.bytes.value();
    return b;
  };
  ASSERT_GT(tp_bytes(full), tp_bytes(none));
  EXPECT_NEAR(tp_bytes(half) - tp_bytes(none), 0.5 * (tp_bytes(full) - tp_bytes(none)), 1e-6 * tp_bytes(full));
}

// Megatron's uniform method with groups (--recompute-method uniform --recompute-num-layers N,
// --checkpoint-group N): every block is recomputed, as under full, but each group of N consecutive
// blocks of a pipeline chunk keeps only its first block's input and is rebuilt at once. Stages of 16
// blocks: groups of 4 keep 4 inputs (a quarter of full's) and rebuild 4 blocks at a time; groups of
// 3 keep ceil(16 / 3) = 6. Interleaved chunks of 4 blocks: groups of 3 keep 2 of 4 and rebuild 3.
// The recomputation itself (FLOPs, time, the replayed tensor-parallel collectives) is full's.
TEST(CheckpointGroups, UniformGroupsKeepOneInputAGroupAndRebuildAGroup) {
  const Subject s = llama_8b();
  auto megatron = [](std::int64_t group, int virtual_chunks = 1) {
    model::Training t = megatron_tp2_pp2(Checkpointing::full);
    t.pp_virtual = virtual_chunks;
    t.grad_accum = 8;
    t.checkpoint_group = group;
    return t;
  };
  const Evaluator ev(s.a, s.n, s.c);
  auto expect_groups = [&](const model::Training& full_tr, const model::Training& grouped_tr, double kept, double rebuilt) {
    const Estimate full = ev.estimate(full_tr);
    const Estimate grouped = ev.estimate(grouped_tr);
    const model::ActivationMemory& f = full.memory.activation_detail;
    const model::ActivationMemory& g = grouped.memory.activation_detail;
    EXPECT_NEAR(g.per_block.value(), kept * f.per_block.value(), 1e-9 * f.per_block.value());
    EXPECT_NEAR(g.recompute_peak.value(), rebuilt * f.recompute_peak.value(), 1e-9 * f.recompute_peak.value());
    EXPECT_DOUBLE_EQ(grouped.time.recompute.value(), full.time.recompute.value());
    EXPECT_EQ(model::checkpointing_text(grouped_tr), "full (groups of " + std::to_string(grouped_tr.checkpoint_group) + " blocks)");
  };
  expect_groups(megatron(1), megatron(4), 4.0 / 16.0, 4.0);
  expect_groups(megatron(1), megatron(3), 6.0 / 16.0, 3.0);
  expect_groups(megatron(1, 4), megatron(3, 4), 2.0 / 4.0, 3.0);
  // A group larger than the chunk is the whole chunk.
  expect_groups(megatron(1), megatron(64), 1.0 / 16.0, 16.0);
}

}  // namespace
}  // namespace trainplan::planner
