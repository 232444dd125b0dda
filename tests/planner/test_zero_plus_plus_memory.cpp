// DeepSpeed ZeRO++'s hpZ keeps a secondary partition of the 16-bit parameters inside each node,
// worked by hand from DeepSpeed's sources (deepspeed/runtime/zero/partition_parameters.py
// _partition_param_sec: a tensor of numel / zero_hpz_partition_size in param.dtype, made once and
// reused; stage3.py _post_step: invalidate_secondary_tensor after the optimizer step), on
// Llama-3.1-70B (70,553,706,496 parameters) under ZeRO-3 over 32 H100s in nodes of 8.
#include <gtest/gtest.h>

#include "../common/catalog.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/planner/evaluator.hpp"

namespace trainplan::planner {
namespace {

constexpr double kParams = 70'553'706'496.0;

Estimate estimate(bool zero_plus_plus, Precision p = Precision::bf16_mixed) {
  const model::Architecture a = test::catalog().resolve_model("llama-3.1-70b").arch;
  const model::ParameterCounts n = model::count_parameters(a);
  EXPECT_DOUBLE_EQ(static_cast<double>(n.total), kParams);
  const hardware::Cluster c = test::catalog().resolve_cluster("32xH100-80GB", std::nullopt).cluster;
  model::Training t;
  t.framework = Framework::deepspeed;
  t.strategy = Strategy::zero3;
  t.precision = p;
  t.checkpointing = Checkpointing::full;
  EstimateOptions o;
  o.zero_plus_plus = zero_plus_plus;
  return Evaluator(a, n, c, nullptr, {}, {}, o).estimate(t);
}

// The secondary partition: every parameter's 2 bytes over the node's 8 ranks, alive from the first
// forward to the end of the optimizer step, so at the peak whatever phase holds it.
TEST(ZeroPlusPlus, HpzHoldsASecondaryPartitionPerNode) {
  const Estimate plain = estimate(false);
  const Estimate zpp = estimate(true);
  EXPECT_EQ(zpp.memory.peak_phase, plain.memory.peak_phase);
  EXPECT_DOUBLE_EQ(zpp.memory.peak_allocated.value() - plain.memory.peak_allocated.value(), kParams * 2.0 / 8.0);
  EXPECT_EQ(zpp.layout.secondary_partition, 8);
  EXPECT_EQ(plain.layout.secondary_partition, 0);
}

// fp32 training keeps fp32 parameters: the secondary partition is 4 bytes a parameter over 8.
TEST(ZeroPlusPlus, TheSecondaryPartitionIsInTheParametersDtype) {
  const Estimate plain = estimate(false, Precision::fp32);
  const Estimate zpp = estimate(true, Precision::fp32);
  EXPECT_DOUBLE_EQ(zpp.memory.peak_allocated.value() - plain.memory.peak_allocated.value(), kParams * 4.0 / 8.0);
}

}  // namespace
}  // namespace trainplan::planner
