// Partial fine-tuning in the step-time model: which layers run a backward and are replayed depends
// on the subset and on checkpointing (model/partial.hpp), so one evaluator pricing several of them
// in turn must give what a fresh evaluator gives each (its caches key on both), and the work
// follows autograd: no backward below the trained layers, no replay of layers checkpointing leaves
// alone.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../common/catalog.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/model/partial.hpp"
#include "trainplan/planner/evaluator.hpp"

namespace trainplan::planner {
namespace {

using test::catalog;

Evaluator evaluator() {
  const model::Architecture a = catalog().resolve_model("llama-3.2-1b").arch;
  return Evaluator(a, model::count_parameters(a), catalog().resolve_cluster("H100-80GB", std::nullopt).cluster);
}

model::Training training(const std::string& trainable, Checkpointing ck, bool trained_only = false) {
  model::Training t;
  t.strategy = Strategy::single;
  t.micro_batch = 2;
  t.checkpointing = ck;
  if (!trainable.empty()) t.partial = model::parse_trained_subset(trainable, "trainable");
  t.checkpoint_trained_only = trained_only;
  return t;
}

TEST(PartialTime, OneEvaluatorPricesEachSubsetAsAFreshOneDoes) {
  const std::vector<model::Training> cases = {
      training("", Checkpointing::none),         training("12-15", Checkpointing::none),
      training("12-15", Checkpointing::full),    training("12-15", Checkpointing::full, true),
      training("8,mlp,head", Checkpointing::none), training("", Checkpointing::full),
      training("12-15", Checkpointing::none)};
  const Evaluator shared = evaluator();
  for (const model::Training& t : cases) {
    SCOPED_TRACE(model::trained_subset_text(t.partial));
    const Estimate again = shared.estimate(t);
    const Estimate fresh = evaluator().estimate(t);
    EXPECT_DOUBLE_EQ(again.time.step.value(), fresh.time.step.value());
    EXPECT_DOUBLE_EQ(again.memory.peak_allocated.value(), fresh.memory.peak_allocated.value());
  }
}

TEST(PartialTime, BackwardAndReplayFollowTheLayersThatNeedThem) {
  const Evaluator ev = evaluator();
  const TimeBreakdown full = ev.estimate(training("", Checkpointing::full)).time;
  // transformers' checkpointing: every layer passes the gradient down and is replayed.
  const TimeBreakdown hf = ev.estimate(training("12-15", Checkpointing::full)).time;
  // LLaMA-Factory's: layers 0-11 run neither backward nor replay, 12-15 are replayed.
  const TimeBreakdown lf = ev.estimate(training("12-15", Checkpointing::full, true)).time;
  // Replayed: all 16 layers under transformers' checkpointing (the frozen ones without autocast's
  // weight casts, their weights being 16-bit already), the 4 trained ones under LLaMA-Factory's.
  EXPECT_LE(hf.recompute.value(), full.recompute.value());
  EXPECT_GT(hf.recompute.value(), 0.75 * full.recompute.value());
  EXPECT_GT(lf.recompute.value(), 0.2 * full.recompute.value());
  EXPECT_LT(lf.recompute.value(), 0.3 * full.recompute.value());
  EXPECT_LT(lf.compute.value(), hf.compute.value());
  EXPECT_LT(hf.compute.value(), full.compute.value());  // the frozen layers' weight gradients
  // Without checkpointing nothing is replayed, and the layers below the trained ones run forward only.
  const TimeBreakdown plain = ev.estimate(training("12-15", Checkpointing::none)).time;
  EXPECT_EQ(plain.recompute.value(), 0.0);
  EXPECT_LT(plain.compute.value(), hf.compute.value());
}

}  // namespace
}  // namespace trainplan::planner
