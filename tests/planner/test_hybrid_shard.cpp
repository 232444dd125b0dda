// Hybrid sharding's group size (--hybrid-shard N: HSDP's shard dimension, DeepSpeed MiCS's
// mics_shard_size), worked by hand on Llama-3.1-8B (8,030,261,248 parameters) over 32 H100s in
// four nodes of 8: each rank holds 1/N of the model's states, gathers and reduce-scatters within
// its group, and all-reduces its 1/N of the gradients with the ranks holding the same shard
// (ZeRO paper's partitioning, Rajbhandari et al. 2020, Sec. 5; MiCS, Zhang et al. 2022,
// arXiv:2205.00119, Sec. 3).
#include <gtest/gtest.h>

#include "../common/catalog.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/planner/evaluator.hpp"

namespace trainplan::planner {
namespace {

constexpr double kParams = 8'030'261'248.0;

Estimate estimate(Strategy s, int hybrid_shard) {
  const model::Architecture a = test::catalog().resolve_model("llama-3.1-8b").arch;
  const hardware::Cluster c = test::catalog().resolve_cluster("32xH100-80GB", std::nullopt).cluster;
  model::Training t;
  t.strategy = s;
  t.precision = Precision::bf16_mixed;
  t.seq = 4096;
  t.hybrid_shard = hybrid_shard;
  return Evaluator(a, model::count_parameters(a), c).estimate(t);
}

const CommunicationItem* item(const Estimate& e, std::string_view purpose) {
  for (const CommunicationItem& x : e.communication)
    if (x.purpose == purpose) return &x;
  return nullptr;
}

// One group of every data-parallel rank replicates nothing: FULL_SHARD, bit for bit.
TEST(HybridShard, OneGroupOfAllRanksIsFullSharding) {
  const Estimate h = estimate(Strategy::fsdp_hybrid, 32);
  const Estimate f = estimate(Strategy::fsdp_full, 0);
  EXPECT_EQ(h.memory.peak_allocated.value(), f.memory.peak_allocated.value());
  EXPECT_EQ(h.time.step.value(), f.time.step.value());
}

// Groups of 16 span two nodes: the AdamW moments (8 bytes a parameter) over 16 ranks, the gathers
// on the network; the replicas (2) all-reduce each rank's sixteenth of the bf16 gradients, sending
// 2 x (1/2) of it.
TEST(HybridShard, GroupsOfSixteenSpanTwoNodes) {
  const Estimate e = estimate(Strategy::fsdp_hybrid, 16);
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
  const Estimate node = estimate(Strategy::fsdp_hybrid, 0);
  EXPECT_EQ(node.layout.shard, 8);
  EXPECT_DOUBLE_EQ(node.memory.optimizer.value(), kParams * 8.0 / 8.0);
}

TEST(HybridShard, RefusesAGroupThatDoesNotDivideTheRanks) {
  try {
    (void)estimate(Strategy::fsdp_hybrid, 12);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("hybrid-shard 12 does not divide the 32 data-parallel ranks"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace trainplan::planner
