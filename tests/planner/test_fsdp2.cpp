// FSDP2 (fully_shard) beside FSDP1 (FullyShardedDataParallel), worked by hand from PyTorch's
// sources (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py foreach_all_gather,
// foreach_all_gather_copy_out and foreach_reduce; _fsdp_param_group.py AllGatherState and
// ReduceScatterState) on Llama-3.1-8B (hidden 4096, 32 heads of 128, 8 K/V heads, MLP 14336,
// vocabulary 128256, untied head):
//   one block: q, o 4096 x 4096, k, v 4096 x 1024, gate, up, down 4096 x 14336, two RMSNorms of
//   4096 = 218,112,000 parameters (the unit torchtitan and accelerate's TRANSFORMER_BASED_WRAP
//   shard); the root: embedding and head 128256 x 4096 each and the final norm = 1,050,677,248.
//   FSDP2 holds one unit's all-gather output beside its copied-out parameters, and one unit's
//   gradients twice (the unsharded ones and the reduce-scatter input in the reduce dtype).
#include <gtest/gtest.h>

#include "../common/catalog.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/planner/evaluator.hpp"
#include "trainplan/planner/time_conventions.hpp"

namespace trainplan::planner {
namespace {

constexpr double kBlock = 218'112'000.0;
constexpr double kRoot = 1'050'677'248.0;
constexpr double kParams = 8'030'261'248.0;  // 32 blocks and the root

struct Pair {
  Estimate fsdp1, fsdp2;
};

Pair estimates(Library library, int gpus = 8) {
  const model::Architecture a = test::catalog().resolve_model("llama-3.1-8b").arch;
  const model::ParameterCounts n = model::count_parameters(a);
  EXPECT_DOUBLE_EQ(static_cast<double>(n.total), kParams);
  const hardware::Cluster c =
      test::catalog().resolve_cluster(std::to_string(gpus) + "xH100-80GB", std::nullopt).cluster;
  auto run = [&](int version) {
    model::Training t;
    t.library = library;
    t.strategy = Strategy::fsdp_full;
    t.precision = Precision::bf16_mixed;
    t.seq = 2048;
    t.fsdp_version = version;
    return Evaluator(a, n, c).estimate(t);
  };
  return {run(1), run(2)};
}

double reduce_scatter_bytes(const Estimate& e) {
  double bytes = 0.0;
  for (const CommunicationItem& x : e.communication)
    if (x.collective == "reduce_scatter") bytes += x.bytes.value();
  return bytes;
}

// The Trainer's (accelerate's) policy reduces in bf16: at the backward peak FSDP2 holds one block
// more in bf16 (its all-gather output) and its gradients once more in bf16 (the reduce-scatter
// input): 218,112,000 x (2 + 2) bytes. The copy-in stream's pool keeps the root's all-gather output
// (2 x 1,050,677,248 bytes) of which a block's (2 x 218,112,000) serves at the peak: the rest is
// reserved and free.
TEST(Fsdp2, HoldsOneUnitMoreGatheredAndItsGradientsAgain) {
  const Pair p = estimates(Library::hf_trainer);
  ASSERT_EQ(p.fsdp2.memory.peak_phase, "backward");
  const double more = p.fsdp2.memory.peak_allocated.value() - p.fsdp1.memory.peak_allocated.value();
  EXPECT_DOUBLE_EQ(more, kBlock * (2.0 + 2.0));
  const double reserved_more = p.fsdp2.memory.reserved.value() - p.fsdp1.memory.reserved.value();
  EXPECT_GE(reserved_more, more + 2.0 * (kRoot - kBlock));
  EXPECT_DOUBLE_EQ(reduce_scatter_bytes(p.fsdp2), reduce_scatter_bytes(p.fsdp1));
}

// torchtitan's policy reduces in fp32 (config_manager.py mixed_precision_reduce "float32"): the
// reduce-scatter input is 4 bytes a gradient, and the reduce-scatter sends twice the bytes.
TEST(Fsdp2, TorchtitanReducesInFp32) {
  const Pair p = estimates(Library::torchtitan);
  const double more = p.fsdp2.memory.peak_allocated.value() - p.fsdp1.memory.peak_allocated.value();
  EXPECT_DOUBLE_EQ(more, kBlock * (2.0 + 4.0));
  EXPECT_GT(reduce_scatter_bytes(p.fsdp1), 0.0);
  EXPECT_DOUBLE_EQ(reduce_scatter_bytes(p.fsdp2), 2.0 * reduce_scatter_bytes(p.fsdp1));
}

// FSDP2's copies run on the compute stream: each all-gather's copy-out reads and writes the
// gathered parameters (2 x 2 bytes a parameter, forward and again backward: accelerate passes
// reshard_after_forward=True to the root too, which torch >= 2.8 reshards), each reduce-scatter's
// copy-in reads the bf16 gradients and writes the bf16 input (2 + 2 bytes): 12 bytes a parameter
// per step at the H100's HBM rate (3.35 TB/s datasheet x the elementwise efficiency). FSDP1
// gathers into and reduces from its flat parameter. Nothing else moves.
TEST(Fsdp2, CopiesRunOnTheComputeStream) {
  const Pair p = estimates(Library::hf_trainer);
  const double rate = 3.35e12 * TimeConventions{}.hbm_efficiency;
  const double more = p.fsdp2.time.memory_bound.value() - p.fsdp1.time.memory_bound.value();
  EXPECT_NEAR(more, 12.0 * kParams / rate, 1e-9);
  EXPECT_NEAR(p.fsdp2.time.compute.value(), p.fsdp1.time.compute.value(), 1e-12);
}

double backward_gather_bytes(const Estimate& e) {
  for (const CommunicationItem& x : e.communication)
    if (x.purpose == "backward parameter all-gather") return x.bytes.value();
  return 0.0;
}

// What backward gathers again over 8 GPUs (7/8 of it sent per rank, bf16): FSDP1 keeps its root unit
// (embeddings, head, final norm) gathered from forward (_post_forward_reshard: not state._is_root),
// so do torchtitan's own units for the embeddings and the output (reshard_after_forward False by
// default); accelerate's FSDP2 passes reshard_after_forward=True to the root, which torch >= 2.8
// reshards (PR #154704), so its backward gathers the root again.
TEST(Fsdp2, BackwardGathersTheRootWhereItWasResharded) {
  const Pair trainer = estimates(Library::hf_trainer);
  const Pair titan = estimates(Library::torchtitan);
  EXPECT_DOUBLE_EQ(backward_gather_bytes(trainer.fsdp1), (kParams - kRoot) * 2.0 * 7.0 / 8.0);
  EXPECT_DOUBLE_EQ(backward_gather_bytes(trainer.fsdp2), kParams * 2.0 * 7.0 / 8.0);
  EXPECT_DOUBLE_EQ(backward_gather_bytes(titan.fsdp2), (kParams - kRoot) * 2.0 * 7.0 / 8.0);
}

}  // namespace
}  // namespace trainplan::planner
