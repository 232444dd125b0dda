// The groups PyTorch's FSDP shards over, worked by hand on Llama-3.1-8B (one block 218,112,000
// parameters, the model 8,030,261,248; test_fsdp2.cpp gives the counts) on H100s in nodes of 8.
//
// FSDP2's fully_shard(reshard_after_forward=N), from PyTorch's sources
// (torch/distributed/fsdp/_fully_shard/_fsdp_init.py _get_post_forward_mesh_info: N must divide
// the shard mesh, 1 means False and the mesh's size True, the post-forward mesh is the shard mesh
// viewed as (-1, N); _fsdp_param.py to_sharded_post_forward: each rank clones its 1/N of the
// all-gather output, then frees the output; "Resharding to smaller mesh with TP is not supported
// yet"), over 16 GPUs.
//
// Hybrid sharding's group size (--hybrid-shard N: HSDP's shard dimension, DeepSpeed MiCS's
// mics_shard_size), over 32 GPUs: each rank holds 1/N of the model's states, gathers and
// reduce-scatters within its group, and all-reduces its 1/N of the gradients with the ranks holding
// the same shard (ZeRO, Rajbhandari et al. 2020, Sec. 5; MiCS, Zhang et al. 2022, arXiv:2205.00119,
// Sec. 3).
#include <gtest/gtest.h>

#include <string>

#include "../common/catalog.hpp"
#include "../common/input_error.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/planner/evaluator.hpp"

namespace trainplan::planner {
namespace {

constexpr double kBlock = 218'112'000.0;
constexpr double kParams = 8'030'261'248.0;
constexpr double kBlocks = 32.0 * kBlock;

model::Training training(Strategy s) {
  model::Training t;
  t.strategy = s;
  t.precision = Precision::bf16_mixed;
  t.seq = 8192;
  return t;
}

Estimate estimate(const char* cluster, const model::Training& t) {
  const model::Architecture a = test::catalog().resolve_model("llama-3.1-8b").arch;
  const hardware::Cluster c = test::catalog().resolve_cluster(cluster, std::nullopt).cluster;
  return Evaluator(a, model::count_parameters(a), c).estimate(t);
}

// FSDP2 over 16 GPUs with reshard_after_forward=N (0: True).
Estimate resharded(Strategy s, int reshard_to, int tp = 1) {
  model::Training t = training(s);
  t.tp = tp;
  t.fsdp_version = 2;
  t.fsdp_reshard_to = reshard_to;
  return estimate("16xH100-80GB", t);
}

// Over 32 GPUs in groups of N (0: a node).
Estimate hybrid(Strategy s, int hybrid_shard) {
  model::Training t = training(s);
  t.hybrid_shard = hybrid_shard;
  return estimate("32xH100-80GB", t);
}

const CommunicationItem* item(const Estimate& e, std::string_view purpose) {
  for (const CommunicationItem& x : e.communication)
    if (x.purpose == purpose) return &x;
  return nullptr;
}


void expect_same(const Estimate& x, const Estimate& y) {
  EXPECT_EQ(x.memory.peak_allocated.value(), y.memory.peak_allocated.value());
  EXPECT_EQ(x.memory.reserved.value(), y.memory.reserved.value());
  EXPECT_EQ(x.time.step.value(), y.time.step.value());
  ASSERT_EQ(x.communication.size(), y.communication.size());
  for (std::size_t i = 0; i < x.communication.size(); ++i) {
    EXPECT_EQ(x.communication[i].purpose, y.communication[i].purpose);
    EXPECT_EQ(x.communication[i].tier, y.communication[i].tier);
    EXPECT_EQ(x.communication[i].bytes.value(), y.communication[i].bytes.value());
  }
}

// torch turns N = the shard mesh's size into True and N = 1 into False (SHARD_GRAD_OP's FSDP2
// form): the same plan bit for bit.
TEST(Fsdp2Reshard, TheGroupSizeIsTrueAndOneIsFalse) {
  expect_same(resharded(Strategy::fsdp_full, 16), resharded(Strategy::fsdp_full, 0));
  expect_same(resharded(Strategy::fsdp_full, 1), resharded(Strategy::fsdp_grad_op, 0));
}

// N = 8: between its forward and its backward every block unit leaves 1/8 of itself in bf16 on
// each rank: 32 x 218,112,000 x 2 / 8 = 1,744,896,000 bytes more at the start of backward.
TEST(Fsdp2Reshard, KeepsEachRanksShareOfEveryBlockToBackward) {
  const Estimate full = resharded(Strategy::fsdp_full, 0);
  const Estimate node = resharded(Strategy::fsdp_full, 8);
  ASSERT_EQ(node.memory.peak_phase, "backward");
  EXPECT_DOUBLE_EQ(node.memory.peak_allocated.value() - full.memory.peak_allocated.value(), kBlocks * 2.0 / 8.0);
}

// Forward still gathers over all 16 ranks (15/16 of the bf16 model sent per rank, across the
// nodes); backward gathers from the post-forward copies over the 8 ranks of a node: 7/8 of the
// model (the root too: the Trainer's accelerate passes reshard_after_forward to it, which torch
// >= 2.8 honours), on NVLink. The reduce-scatter stays on the 16.
TEST(Fsdp2Reshard, BackwardGathersInsideTheNode) {
  const Estimate full = resharded(Strategy::fsdp_full, 0);
  const Estimate node = resharded(Strategy::fsdp_full, 8);
  const CommunicationItem* fwd = item(node, "forward parameter all-gather");
  const CommunicationItem* bwd = item(node, "backward parameter all-gather");
  const CommunicationItem* full_bwd = item(full, "backward parameter all-gather");
  ASSERT_TRUE(fwd && bwd && full_bwd);
  EXPECT_EQ(fwd->tier, "network");
  EXPECT_DOUBLE_EQ(fwd->bytes.value(), kParams * 2.0 * 15.0 / 16.0);
  EXPECT_EQ(bwd->tier, "nvlink");
  EXPECT_DOUBLE_EQ(bwd->bytes.value(), kParams * 2.0 * 7.0 / 8.0);
  EXPECT_EQ(full_bwd->tier, "network");
  EXPECT_DOUBLE_EQ(item(node, "gradient reduce-scatter")->bytes.value(),
                   item(full, "gradient reduce-scatter")->bytes.value());
  EXPECT_LT(bwd->time.value(), full_bwd->time.value());
}

// What torch refuses: N not dividing the shard mesh (ValueError), and a smaller post-forward mesh
// under tensor parallelism (NotImplementedError).
TEST(Fsdp2Reshard, RefusesWhatTorchRefuses) {
  const std::string indivisible = test::input_error_of([] { (void)resharded(Strategy::fsdp_full, 3); });
  EXPECT_NE(indivisible.find("reshard-after-forward 3 does not divide the 16 ranks"), std::string::npos)
      << indivisible;
  const std::string tp = test::input_error_of([] { (void)resharded(Strategy::fsdp_full, 4, 2); });
  EXPECT_NE(tp.find("reshard-after-forward 4 with tensor parallelism"), std::string::npos) << tp;
}

// One group of every data-parallel rank replicates nothing: FULL_SHARD, bit for bit.
TEST(HybridShard, OneGroupOfAllRanksIsFullSharding) {
  const Estimate h = hybrid(Strategy::fsdp_hybrid, 32);
  const Estimate f = hybrid(Strategy::fsdp_full, 0);
  EXPECT_EQ(h.memory.peak_allocated.value(), f.memory.peak_allocated.value());
  EXPECT_EQ(h.time.step.value(), f.time.step.value());
}

// Groups of 16 span two nodes: the AdamW moments (8 bytes a parameter) over 16 ranks, the gathers
// on the network; the replicas (2) all-reduce each rank's sixteenth of the bf16 gradients, sending
// 2 x (1/2) of it.
TEST(HybridShard, GroupsOfSixteenSpanTwoNodes) {
  const Estimate e = hybrid(Strategy::fsdp_hybrid, 16);
  EXPECT_EQ(e.layout.shard, 16);
  EXPECT_DOUBLE_EQ(e.memory.optimizer.value(), kParams * 8.0 / 16.0);
  const CommunicationItem* ag = item(e, "forward parameter all-gather");
  ASSERT_NE(ag, nullptr);
  EXPECT_EQ(ag->tier, "network");
  EXPECT_DOUBLE_EQ(ag->bytes.value(), kParams * 2.0 * 15.0 / 16.0);
  const CommunicationItem* ar = item(e, "replica gradient all-reduce");
  ASSERT_NE(ar, nullptr);
  EXPECT_DOUBLE_EQ(ar->bytes.value(), kParams * 2.0 / 16.0);
  // Without a size, the group is the node's 8 ranks.
  const Estimate node = hybrid(Strategy::fsdp_hybrid, 0);
  EXPECT_EQ(node.layout.shard, 8);
  EXPECT_DOUBLE_EQ(node.memory.optimizer.value(), kParams * 8.0 / 8.0);
}

TEST(HybridShard, RefusesAGroupThatDoesNotDivideTheRanks) {
  const std::string e = test::input_error_of([] { (void)hybrid(Strategy::fsdp_hybrid, 12); });
  EXPECT_NE(e.find("hybrid-shard 12 does not divide the 32 data-parallel ranks"), std::string::npos) << e;
}

}  // namespace
}  // namespace trainplan::planner
