// torchtune's optimizer in backward (--optimizer-in-backward): what its source says it keeps and
// refuses (torchtune bd2a0fc, torchtune/training/memory.py register_optim_in_bwd_hooks: a
// post-accumulate-grad hook steps each parameter's own optimizer and zeroes that gradient;
// recipes/full_finetune_single_device.py raises with gradient accumulation).

#include <gtest/gtest.h>

#include <string>

#include "../common/catalog.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/planner/evaluator.hpp"
#include "trainplan/planner/memory.hpp"
#include "trainplan/planner/search.hpp"

namespace trainplan::planner {
namespace {

// torchtune's Llama 3.2 1B full fine-tune on one GPU in bf16: without the hooks all 1.24 G
// gradients exist when the step starts; with them only the one being stepped does, so the peak
// loses all but one parameter's gradient and the step's per-tensor work is one tensor at a time.
TEST(OptimizerInBackward, OneGradientAtATime) {
  const model::Architecture a = test::catalog().resolve_model("llama-3.2-1b").arch;
  const model::ParameterCounts n = model::count_parameters(a);
  const hardware::Cluster c = test::catalog().resolve_cluster("1xH100", std::nullopt).cluster;
  const Evaluator ev(a, n, c);
  model::Training t;
  t.library = Library::torchtune;
  t.precision = Precision::bf16_true;
  t.checkpointing = Checkpointing::full;
  t.seq = 1024;
  const StepCost plain = ev.cost(t, true);
  t.optimizer_in_backward = true;
  const StepCost hooked = ev.cost(t, true);
  const Bytes vocabulary_matrix(2.0 * static_cast<double>(a.vocab * a.hidden));
  EXPECT_LE(hooked.memory.gradients, vocabulary_matrix);
  EXPECT_GT(plain.memory.states.gradients, vocabulary_matrix * 4.0);
  EXPECT_LT(hooked.memory.peak_allocated, plain.memory.peak_allocated);
  // One optimizer per parameter, built from the config's AdamW kwargs: fused, as torchtune's configs
  // ask; a library that leaves torch's default steps each one-tensor list as the for-loop does.
  EXPECT_EQ(t.optimizer_implementation(), OptimizerImpl::fused);
  t.library = Library::accelerate;
  EXPECT_EQ(t.optimizer_implementation(), OptimizerImpl::for_loop);
  t.library = Library::torchtune;

  t.grad_accum = 2;
  try {
    validate_training(a, t);
    ADD_FAILURE() << "gradient accumulation accepted";
  } catch (const FieldError& e) {
    EXPECT_NE(std::string(e.what()).find("needs grad-accum 1"), std::string::npos) << e.what();
  }
}

// The search splits a global batch only without accumulation.
TEST(OptimizerInBackward, SearchKeepsGradAccumOne) {
  const model::Architecture a = test::catalog().resolve_model("llama-3.2-1b").arch;
  const model::ParameterCounts n = model::count_parameters(a);
  const hardware::Cluster c = test::catalog().resolve_cluster("1xH100", std::nullopt).cluster;
  SearchRequest req;
  req.base.library = Library::torchtune;
  req.base.precision = Precision::bf16_true;
  req.base.optimizer_in_backward = true;
  req.base.seq = 1024;
  req.global_batch = 8;
  const PlanResult p = search(a, n, c, req);
  ASSERT_FALSE(p.plans.empty());
  for (const Estimate& e : p.plans) EXPECT_EQ(e.training.grad_accum, 1) << e.training.micro_batch;
}

}  // namespace
}  // namespace trainplan::planner
