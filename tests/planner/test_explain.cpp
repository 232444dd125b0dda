// planner::suggest_changes against configurations whose verdict is published: litgpt's LoRA
// resource table (Lightning-AI/litgpt tutorials/resource-tables.md, dated 10/20/2023, litgpt commit
// 8641822; one A100-SXM4-40GB, bf16-true, LoRA r=8 on query and value, Alpaca at full length:
// longest sample 1304 tokens for the Llama 2 tokenizer, 1079 for Falcon; global batch 128).
// The table gives Llama-2-7B micro-batch 2 = 29.07 GB and micro-batch 4 = OOM, Llama-2-13B
// micro-batch 1 = 38.12 GB and micro-batch 2 = OOM, and Falcon-40B OOM with no quantization, nf4
// and nf4-dq alike.
#include <gtest/gtest.h>

#include <algorithm>

#include <string>

#include "../common/catalog.hpp"
#include "trainplan/request/catalog.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/planner/emit.hpp"
#include "trainplan/planner/explain.hpp"

namespace trainplan::planner {
namespace {

struct LoraRun {
  model::Architecture a;
  model::ParameterCounts n;
  hardware::Cluster c;
  model::Training t;
};

LoraRun litgpt_lora(const std::string& model, std::int64_t micro_batch, std::int64_t seq) {
  const request::Catalog& catalog = test::catalog();
  LoraRun s{catalog.resolve_model(model).arch,
            {},
            catalog.resolve_cluster("A100-40GB", std::nullopt).cluster,
            {}};
  s.n = model::count_parameters(s.a);
  s.t.method = Method::lora;
  s.t.precision = Precision::bf16_true;
  s.t.optimizer = Optimizer::adamw;
  s.t.strategy = Strategy::single;
  s.t.micro_batch = micro_batch;
  s.t.grad_accum = 128 / micro_batch;
  s.t.seq = seq;
  s.t.checkpointing = Checkpointing::none;
  s.t.attention = Attention::flash;
  s.t.lora.rank = 8;
  s.t.lora.alpha = 16;
  s.t.lora.dropout = 0.05;
  s.t.lora.targets = {"q", "v"};
  return s;
}

const Suggestion* find_change(const Explanation& x, const std::string& option) {
  for (const Suggestion& s : x.suggestions)
    if (s.changes.front().option == option) return &s;
  return nullptr;
}

// What every suggestion must be: fitting per the model, under the GPU's usable memory, keeping
// the global batch, and ranked by throughput.
void expect_sound(const Explanation& x, const LoraRun& s) {
  const std::int64_t batch = s.t.micro_batch * s.t.grad_accum;
  double last = 1e300;
  for (const Suggestion& sug : x.suggestions) {
    EXPECT_TRUE(sug.estimate.fits);
    EXPECT_LE(sug.estimate.memory.peak_allocated.value(), s.c.gpu.usable_memory.value());
    EXPECT_EQ(sug.estimate.training.micro_batch * sug.estimate.training.grad_accum, batch);
    EXPECT_LE(sug.estimate.throughput.tokens_per_s, last);
    last = sug.estimate.throughput.tokens_per_s;
  }
}

TEST(SuggestChanges, Llama2_7bLoraMicroBatch4FitsAtMicroBatch2) {
  const LoraRun s = litgpt_lora("llama-2-7b", 4, 1304);
  const Explanation x = suggest_changes(s.a, s.n, s.t, s.c);
  ASSERT_FALSE(x.given.fits) << "litgpt's table: micro-batch 4 is OOM";
  ASSERT_FALSE(x.suggestions.empty());
  EXPECT_FALSE(x.pairs) << "a single change fits (micro-batch 2 ran at 29.07 GB)";
  expect_sound(x, s);
  const Suggestion* mb = find_change(x, "micro-batch");
  ASSERT_NE(mb, nullptr) << "micro-batch 2 with twice the accumulation ran";
  EXPECT_EQ(mb->changes.at(0).to, "2");
  EXPECT_EQ(mb->changes.at(1).option, "grad-accum");
  EXPECT_EQ(mb->changes.at(1).to, "64");
}

TEST(SuggestChanges, Llama2_13bLoraMicroBatch2FitsAtMicroBatch1) {
  const LoraRun s = litgpt_lora("llama-2-13b", 2, 1304);
  const Explanation x = suggest_changes(s.a, s.n, s.t, s.c);
  ASSERT_FALSE(x.given.fits) << "litgpt's table: micro-batch 2 is OOM";
  ASSERT_FALSE(x.suggestions.empty());
  expect_sound(x, s);
  const Suggestion* mb = find_change(x, "micro-batch");
  ASSERT_NE(mb, nullptr) << "micro-batch 1 ran at 38.12 GB";
  EXPECT_EQ(mb->changes.at(0).to, "1");
}

// When single changes fit, a pair is listed only if it is faster than every one of them and neither
// of its changes fits alone: Llama-2-13B LoRA at micro-batch 8, s2048, on an A100-40GB, where only
// checkpointing fits alone and micro-batch 1 fits only with QLoRA, which keeps more throughput.
TEST(SuggestChanges, PairsBesideSinglesOnlyWhenFaster) {
  const LoraRun s = litgpt_lora("llama-2-13b", 8, 2048);
  const Explanation x = suggest_changes(s.a, s.n, s.t, s.c);
  ASSERT_FALSE(x.given.fits);
  expect_sound(x, s);
  EXPECT_FALSE(x.pairs);
  double fastest_single = 0.0;
  std::vector<std::string> fitting_singles;  // "option=value" of each single change that fits alone
  for (const Suggestion& sug : x.suggestions) {
    if (sug.pair) continue;
    fastest_single = std::max(fastest_single, sug.estimate.throughput.tokens_per_s);
    if (sug.estimate.verdict.verdict == Verdict::fits)
      for (const auto& c : sug.changes) fitting_singles.push_back(c.option + "=" + c.to);
  }
  ASSERT_GT(fastest_single, 0.0) << "a single change fits";
  ASSERT_TRUE(std::any_of(x.suggestions.begin(), x.suggestions.end(), [](const Suggestion& u) { return u.pair; }));
  for (const Suggestion& sug : x.suggestions) {
    if (!sug.pair) continue;
    EXPECT_GT(sug.estimate.throughput.tokens_per_s, fastest_single);
    // Neither half fits alone: a change that fits by itself is not paired again (one that is only
    // tight alone may be, when the pair fits and runs faster).
    for (const auto& c : sug.changes)
      EXPECT_EQ(std::count(fitting_singles.begin(), fitting_singles.end(), c.option + "=" + c.to), 0)
          << c.option << " " << c.to;
  }
}

TEST(SuggestChanges, Falcon40bLoraDoesNotFitAsGiven) {
  const LoraRun s = litgpt_lora("falcon-40b", 1, 1079);
  const Explanation x = suggest_changes(s.a, s.n, s.t, s.c);
  ASSERT_FALSE(x.given.fits) << "litgpt's table: OOM without quantization";
  expect_sound(x, s);
}

// Explain draws strategies, checkpointing and offload from the candidate space fit and search walk,
// so under Megatron-LM it suggests only what pretrain_gpt.py runs: its optimizer offload
// (--optimizer-cpu-offload), never parameter or activation offload, which it has no flag for
// (Megatron-LM arguments.py; planner::emit refuses them). Llama-2-70B, TP8 on 4 nodes of 8 H100,
// micro-batch 4 at 4096 tokens, does not fit as given.
TEST(SuggestChanges, UnderMegatronOnlyWhatMegatronRuns) {
  const request::Catalog& catalog = test::catalog();
  const model::Architecture a = catalog.resolve_model("llama-2-70b").arch;
  const model::ParameterCounts n = model::count_parameters(a);
  const hardware::Cluster c = catalog.resolve_cluster("4x8xH100-80GB", std::nullopt).cluster;
  model::Training t;
  t.framework = Framework::megatron;
  t.optimizer_impl = OptimizerImpl::fused;
  t.strategy = Strategy::ddp;
  t.tp = 8;
  t.sequence_parallel = true;
  t.micro_batch = 4;
  t.grad_accum = 4;
  t.seq = 4096;
  t.checkpointing = Checkpointing::none;
  const Explanation x = suggest_changes(a, n, t, c);
  ASSERT_FALSE(x.given.fits);
  ASSERT_FALSE(x.suggestions.empty());
  for (const Suggestion& s : x.suggestions) {
    EXPECT_NE(s.estimate.training.offload, Offload::optimizer_params);
    EXPECT_NE(s.estimate.training.checkpointing, Checkpointing::full_offload);
    EXPECT_NO_THROW((void)emit(EmitFormat::torchrun, s.estimate, c, a)) << s.changes.front().option;
  }
}

// Megatron's block method recomputes the first K layers of each pipeline chunk (transformer_block.py
// _checkpointed_forward): the fewest that fit are offered, and run faster than recomputing every
// layer. Llama-3.1-70B, TP 8 x PP 4 with sequence parallelism on 4 nodes of 8 H100, 16384 tokens, no
// recomputation: does not fit.
TEST(SuggestChanges, UnderMegatronTheFewestRecomputedLayersThatFit) {
  const request::Catalog& catalog = test::catalog();
  const model::Architecture a = catalog.resolve_model("llama-3.1-70b").arch;
  const model::ParameterCounts n = model::count_parameters(a);
  const hardware::Cluster c = catalog.resolve_cluster("4x8xH100-80GB", std::nullopt).cluster;
  model::Training t;
  t.framework = Framework::megatron;
  t.library = Library::megatron;
  t.strategy = Strategy::zero1;
  t.tp = 8;
  t.pp = 4;
  t.sequence_parallel = true;
  t.grad_accum = 8;
  t.seq = 16384;
  const Explanation x = suggest_changes(a, n, t, c);
  ASSERT_FALSE(x.given.fits);
  const Suggestion* some = nullptr;
  const Suggestion* every = nullptr;
  for (const Suggestion& s : x.suggestions) {
    if (s.pair || s.estimate.verdict.verdict != Verdict::fits) continue;
    const model::Training& st = s.estimate.training;
    if (st.checkpointing == Checkpointing::full && st.checkpoint_layers > 0 && !some) some = &s;
    if (st.checkpointing == Checkpointing::full && st.checkpoint_layers == 0) every = &s;
  }
  ASSERT_NE(some, nullptr);
  ASSERT_NE(every, nullptr);
  EXPECT_GT(some->estimate.throughput.tokens_per_s, every->estimate.throughput.tokens_per_s);
  EXPECT_LT(some->estimate.training.checkpoint_layers, 20);  // of the 20 layers of a stage
  model::Training fewer = some->estimate.training;
  fewer.checkpoint_layers -= 1;
  EXPECT_NE(evaluate(a, n, fewer, c).verdict.verdict, Verdict::fits);
  EXPECT_NO_THROW((void)emit(EmitFormat::torchrun, some->estimate, c, a));
}

// DPO of Llama-2-7B on two A100-80GB under ZeRO-2, micro-batch 2: the policy's model states
// (2 + 2 + 12/2 bytes a parameter) and the reference's unsharded 16-bit copy (2 more) do not fit;
// TRL's precompute_ref_log_probs drops the reference, and is offered as a change of its own.
TEST(SuggestChanges, DpoOffersThePrecomputedReference) {
  const request::Catalog& catalog = test::catalog();
  const model::Architecture a = catalog.resolve_model("llama-2-7b").arch;
  const model::ParameterCounts n = model::count_parameters(a);
  const hardware::Cluster c = catalog.resolve_cluster("2xA100-80GB", std::nullopt).cluster;
  model::Training t;
  t.framework = Framework::deepspeed;
  t.strategy = Strategy::zero2;
  t.checkpointing = Checkpointing::full;
  t.objective = Objective::dpo;
  t.micro_batch = 2;
  t.seq = 2048;
  const Explanation x = suggest_changes(a, n, t, c);
  ASSERT_FALSE(x.given.fits);
  const Suggestion* pre = find_change(x, "precomputed-reference");
  ASSERT_NE(pre, nullptr);
  EXPECT_EQ(pre->estimate.memory.states.reference, Bytes(0.0));
  EXPECT_EQ(pre->estimate.time.reference, Seconds(0.0));
}

TEST(SuggestChanges, AConfigurationThatFitsNeedsNoChange) {
  // litgpt's table: Llama-2-7B micro-batch 2 ran (29.07 GB).
  const LoraRun s = litgpt_lora("llama-2-7b", 2, 1304);
  const Explanation x = suggest_changes(s.a, s.n, s.t, s.c);
  EXPECT_TRUE(x.given.fits);
  EXPECT_TRUE(x.suggestions.empty());
}

}  // namespace
}  // namespace trainplan::planner
