// FSDP2's fully_shard(reshard_after_forward=N), worked by hand from PyTorch's sources
// (torch/distributed/fsdp/_fully_shard/_fsdp_init.py _get_post_forward_mesh_info: N must divide
// the shard mesh, 1 means False and the mesh's size True, the post-forward mesh is the shard mesh
// viewed as (-1, N); _fsdp_param.py to_sharded_post_forward: each rank clones its 1/N of the
// all-gather output, then frees the output; "Resharding to smaller mesh with TP is not supported
// yet") on Llama-3.1-8B over 16 H100s in two nodes of 8 (one block 218,112,000 parameters, the
// model 8,030,261,248; test_fsdp2.cpp gives the counts).
#include <gtest/gtest.h>

#include "../common/catalog.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/planner/evaluator.hpp"

namespace trainplan::planner {
namespace {

constexpr double kBlock = 218'112'000.0;
constexpr double kParams = 8'030'261'248.0;
constexpr double kBlocks = 32.0 * kBlock;  // what backward gathers again: the root unit stays gathered

Estimate estimate(Strategy s, int reshard_to, int tp = 1) {
  const model::Architecture a = test::catalog().resolve_model("llama-3.1-8b").arch;
  const hardware::Cluster c = test::catalog().resolve_cluster("16xH100-80GB", std::nullopt).cluster;
  model::Training t;
  t.strategy = s;
  t.precision = Precision::bf16_mixed;
  t.seq = 8192;
  t.tp = tp;
  t.fsdp_version = 2;
  t.fsdp_reshard_to = reshard_to;
  return Evaluator(a, model::count_parameters(a), c).estimate(t);
}

const CommunicationItem& item(const Estimate& e, std::string_view purpose) {
  for (const CommunicationItem& x : e.communication)
    if (x.purpose == purpose) return x;
  throw std::runtime_error("no " + std::string(purpose));
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
  expect_same(estimate(Strategy::fsdp_full, 16), estimate(Strategy::fsdp_full, 0));
  expect_same(estimate(Strategy::fsdp_full, 1), estimate(Strategy::fsdp_grad_op, 0));
}

// N = 8: between its forward and its backward every block unit leaves 1/8 of itself in bf16 on
// each rank: 32 x 218,112,000 x 2 / 8 = 1,744,896,000 bytes more at the start of backward.
TEST(Fsdp2Reshard, KeepsEachRanksShareOfEveryBlockToBackward) {
  const Estimate full = estimate(Strategy::fsdp_full, 0);
  const Estimate node = estimate(Strategy::fsdp_full, 8);
  ASSERT_EQ(node.memory.peak_phase, "backward");
  EXPECT_DOUBLE_EQ(node.memory.peak_allocated.value() - full.memory.peak_allocated.value(), kBlocks * 2.0 / 8.0);
}

// Forward still gathers over all 16 ranks (15/16 of the bf16 model sent per rank, across the
// nodes); backward gathers from the post-forward copies over the 8 ranks of a node: 7/8 of the
// model (the root too: the Trainer's accelerate passes reshard_after_forward to it, which torch
// >= 2.8 honours), on NVLink. The reduce-scatter stays on the 16.
TEST(Fsdp2Reshard, BackwardGathersInsideTheNode) {
  const Estimate full = estimate(Strategy::fsdp_full, 0);
  const Estimate node = estimate(Strategy::fsdp_full, 8);
  const CommunicationItem& fwd = item(node, "forward parameter all-gather");
  const CommunicationItem& bwd = item(node, "backward parameter all-gather");
  EXPECT_EQ(fwd.tier, "network");
  EXPECT_DOUBLE_EQ(fwd.bytes.value(), kParams * 2.0 * 15.0 / 16.0);
  EXPECT_EQ(bwd.tier, "nvlink");
  EXPECT_DOUBLE_EQ(bwd.bytes.value(), kParams * 2.0 * 7.0 / 8.0);
  EXPECT_EQ(item(full, "backward parameter all-gather").tier, "network");
  EXPECT_DOUBLE_EQ(item(node, "gradient reduce-scatter").bytes.value(),
                   item(full, "gradient reduce-scatter").bytes.value());
  EXPECT_LT(bwd.time.value(), item(full, "backward parameter all-gather").time.value());
}

// What torch refuses: N not dividing the shard mesh (ValueError), and a smaller post-forward mesh
// under tensor parallelism (NotImplementedError).
TEST(Fsdp2Reshard, RefusesWhatTorchRefuses) {
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string indivisible = message([] { (void)estimate(Strategy::fsdp_full, 3); });
  EXPECT_NE(indivisible.find("reshard-after-forward 3 does not divide the 16 ranks"), std::string::npos)
      << indivisible;
  const std::string tp = message([] { (void)estimate(Strategy::fsdp_full, 4, 2); });
  EXPECT_NE(tp.find("reshard-after-forward 4 with tensor parallelism"), std::string::npos) << tp;
}

}  // namespace
}  // namespace trainplan::planner
