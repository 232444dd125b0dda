// The plan search: what it tries, what it returns, and that threads do not change the answer.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "../common/catalog.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/request/catalog.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/model/partial.hpp"
#include "trainplan/planner/fit.hpp"
#include "trainplan/planner/search.hpp"

namespace trainplan::planner {
namespace {

using test::catalog;

struct Problem {
  model::Architecture a;
  model::ParameterCounts n;
  hardware::Cluster c;
};

Problem problem(const std::string& model, const std::string& cluster) {
  Problem p{catalog().resolve_model(model).arch,
            {},
            catalog().resolve_cluster(cluster, std::nullopt).cluster};
  p.n = model::count_parameters(p.a);
  return p;
}

// A search over sequences of `seq` tokens for a global batch, keeping the `top` plans.
SearchRequest ranked(std::int64_t seq, std::int64_t global_batch, std::size_t top) {
  SearchRequest req;
  req.base.seq = seq;
  req.global_batch = global_batch;
  req.top = top;
  return req;
}

TEST(Search, PlansFitAreRankedAndHonourTheGlobalBatch) {
  const Problem p = problem("llama-3.1-8b", "2x8xA100-80GB");
  const SearchRequest req = ranked(8192, 512, 5);
  const PlanResult r = search(p.a, p.n, p.c, req);
  ASSERT_EQ(r.plans.size(), 5u);
  EXPECT_GT(r.evaluated, r.fitting);
  EXPECT_GT(r.fitting, 0);
  for (std::size_t i = 0; i < r.plans.size(); ++i) {
    const Estimate& e = r.plans[i];
    SCOPED_TRACE(plan_label(e.training, e.layout));
    EXPECT_TRUE(e.fits);
    EXPECT_EQ(e.global_batch, 512);
    EXPECT_LE(e.training.tp, 8);  // inside a node unless asked
    EXPECT_GE(e.max_micro_batch, e.training.micro_batch);
    if (i > 0) {
      EXPECT_LE(e.throughput.tokens_per_s, r.plans[i - 1].throughput.tokens_per_s);
      EXPECT_FALSE(r.why_slower[i].empty());
    }
  }
  EXPECT_TRUE(r.why_slower[0].empty());
  EXPECT_FALSE(r.rejected.empty());
}

// torchtitan's per-op checkpointing is searched where torchtitan runs the job, and only there
// (Llama 3.1 8B at 8k tokens on 8 A100-40GBs, where every plan needs some checkpointing).
TEST(Search, TorchtitanSearchesItsPerOpCheckpointing) {
  const Problem p = problem("llama-3.1-8b", "8xA100-40GB");
  SearchRequest req = ranked(8192, 64, 40);
  auto policies = [&](Library lib) {
    req.base.library = lib;
    std::set<Checkpointing> seen;
    for (const Estimate& e : search(p.a, p.n, p.c, req).plans) seen.insert(e.training.checkpointing);
    return seen;
  };
  EXPECT_TRUE(policies(Library::torchtitan).contains(Checkpointing::selective_op));
  EXPECT_FALSE(policies(Library::hf_trainer).contains(Checkpointing::selective_op));
}

// Under Megatron-LM a plan that recomputes layers recomputes the fewest of each pipeline chunk that
// fit at its batch (--recompute-method block: transformer_block.py _checkpointed_forward), one
// layer fewer not fitting; a request that pins the checkpointing gets every layer (Llama 3.1 70B at
// 8k tokens on 4 nodes of 8 H100).
TEST(Search, MegatronRecomputesTheFewestLayersThatFit) {
  const Problem p = problem("llama-3.1-70b", "4x8xH100-80GB");
  SearchRequest req = ranked(8192, 256, 40);
  req.base.framework = Framework::megatron;
  req.base.library = Library::megatron;
  const Evaluator ev(p.a, p.n, p.c);
  std::size_t some = 0;
  for (const Estimate& e : search(p.a, p.n, p.c, req).plans) {
    if (e.training.checkpoint_layers == 0) continue;
    SCOPED_TRACE(plan_label(e.training, e.layout));
    ++some;
    EXPECT_EQ(e.training.checkpointing, Checkpointing::full);
    EXPECT_TRUE(e.fits);
    model::Training fewer = e.training;
    fewer.checkpoint_layers -= 1;
    if (fewer.checkpoint_layers > 0) {
      EXPECT_FALSE(ev.cost(fewer, false).fits);
    }
  }
  EXPECT_GT(some, 0u);
  req.checkpointing = Checkpointing::full;
  for (const Estimate& e : search(p.a, p.n, p.c, req).plans) EXPECT_EQ(e.training.checkpoint_layers, 0);
}

// fit offers the same under Megatron-LM, at the micro-batch it asks about: beside each plan that
// recomputes every layer and fits, the fewest layers of each chunk that fit (one fewer does not),
// listed first; a request that pins the checkpointing, or a library without the option (the
// Trainer), gets none. Llama 3.1 70B at 8k tokens on 4 nodes of 8 H100.
TEST(Fit, MegatronOffersTheFewestRecomputedLayersThatFit) {
  const Problem p = problem("llama-3.1-70b", "4x8xH100-80GB");
  SearchRequest req;
  req.base.seq = 8192;
  req.base.framework = Framework::megatron;
  req.base.library = Library::megatron;
  const MemoryConventions mc;
  const FitResult r = fit(p.a, p.n, req, p.c, mc);
  std::size_t some = 0;
  for (std::size_t i = 0; i < r.candidates.size(); ++i) {
    const model::Training& t = r.candidates[i].training;
    if (t.checkpoint_layers == 0) continue;
    SCOPED_TRACE(model::checkpointing_text(t));
    ++some;
    EXPECT_EQ(r.candidates[i].verdict.verdict, Verdict::fits);
    model::Training fewer = t;
    fewer.checkpoint_layers -= 1;
    const Layout& l = r.candidates[i].layout;
    if (fewer.checkpoint_layers > 0) {
      EXPECT_NE(verdict_of(memory(p.a, p.n, fewer, l, mc), p.c, req.margin, mc), Verdict::fits);
    }
    // The plan that recomputes every layer follows it.
    ASSERT_LT(i + 1, r.candidates.size());
    EXPECT_EQ(r.candidates[i + 1].training.checkpoint_layers, 0);
    EXPECT_EQ(r.candidates[i + 1].training.strategy, t.strategy);
    EXPECT_EQ(r.candidates[i + 1].training.checkpointing, Checkpointing::full);
  }
  EXPECT_GT(some, 0u);
  req.checkpointing = Checkpointing::full;
  for (const Candidate& k : fit(p.a, p.n, req, p.c, mc).candidates) EXPECT_EQ(k.training.checkpoint_layers, 0);
  req.checkpointing.reset();
  req.base.framework = Framework::pytorch;
  req.base.library = Library::hf_trainer;
  for (const Candidate& k : fit(p.a, p.n, req, p.c, mc).candidates) {
    EXPECT_EQ(k.training.checkpoint_layers, 0);
    EXPECT_EQ(k.training.checkpoint_every, 1);
  }
}

TEST(Search, ResultDoesNotDependOnTheNumberOfThreads) {
  const Problem p = problem("llama-2-13b", "2x8xA100-80GB");
  SearchRequest req;
  req.global_batch = 256;
  req.top = 8;
  req.threads = 1;
  const PlanResult one = search(p.a, p.n, p.c, req);
  req.threads = 2;
  const PlanResult two = search(p.a, p.n, p.c, req);
  req.threads = 5;
  const PlanResult five = search(p.a, p.n, p.c, req);
  ASSERT_EQ(one.plans.size(), two.plans.size());
  ASSERT_EQ(one.plans.size(), five.plans.size());
  EXPECT_EQ(one.evaluated, two.evaluated);
  for (std::size_t i = 0; i < one.plans.size(); ++i) {
    EXPECT_EQ(plan_label(one.plans[i].training, one.plans[i].layout),
              plan_label(two.plans[i].training, two.plans[i].layout));
    EXPECT_EQ(one.plans[i].time.step, two.plans[i].time.step);
    EXPECT_EQ(one.plans[i].time.step, five.plans[i].time.step);
  }
  ASSERT_EQ(one.rejected.size(), two.rejected.size());
  for (std::size_t i = 0; i < one.rejected.size(); ++i)
    EXPECT_EQ(one.rejected[i].reason, two.rejected[i].reason);
}

TEST(Search, PinnedOptionsAreKept) {
  const Problem p = problem("llama-2-13b", "8xA100-80GB");
  SearchRequest req;
  req.strategy = Strategy::fsdp_full;
  req.checkpointing = Checkpointing::full;
  req.micro_batch = 2;
  req.global_batch = 64;
  const PlanResult r = search(p.a, p.n, p.c, req);
  ASSERT_FALSE(r.plans.empty());
  for (const auto& e : r.plans) {
    EXPECT_EQ(e.training.strategy, Strategy::fsdp_full);
    EXPECT_EQ(e.training.checkpointing, Checkpointing::full);
    EXPECT_EQ(e.training.micro_batch, 2);
  }
}

// A mixture of experts: expert-parallel degrees dividing both the experts and the data-parallel
// degree are tried; a dense model only ever runs with ep = 1; a pinned degree is kept.
TEST(Search, ExpertParallelDegreesAreSearchedForMixturesOfExperts) {
  const Problem moe = problem("mixtral-8x7b", "8xH100-80GB");
  SearchRequest req;
  req.strategy = Strategy::zero1;
  req.global_batch = 64;
  req.top = 50;
  const PlanResult r = search(moe.a, moe.n, moe.c, req);
  ASSERT_FALSE(r.plans.empty());
  std::set<int> seen;
  for (const auto& e : r.plans) {
    seen.insert(e.training.ep);
    EXPECT_EQ(moe.a.experts % e.training.ep, 0);
    EXPECT_EQ(e.layout.dp % e.training.ep, 0);
  }
  EXPECT_GE(seen.size(), 2u);  // more than one degree made the top 50

  req.expert_parallel = 4;
  for (const auto& e : search(moe.a, moe.n, moe.c, req).plans) EXPECT_EQ(e.training.ep, 4);
  req.expert_parallel = 3;  // does not divide 8 experts
  EXPECT_THROW((void)search(moe.a, moe.n, moe.c, req), InputError);

  const Problem dense = problem("llama-2-7b", "8xH100-80GB");
  SearchRequest plain;
  plain.global_batch = 64;
  plain.top = 50;
  for (const auto& e : search(dense.a, dense.n, dense.c, plain).plans) EXPECT_EQ(e.training.ep, 1);
}

// Progress arrives once per layout, one call at a time, up to the total; a false answer stops the
// search with what it has, marked cancelled.
TEST(Search, ReportsProgressAndStopsWhenAsked) {
  const Problem p = problem("llama-2-13b", "2x8xA100-80GB");
  SearchRequest req;
  req.global_batch = 256;
  req.threads = 2;
  std::vector<std::size_t> seen;
  std::size_t total = 0;
  req.progress = [&](std::size_t done, std::size_t of) {
    seen.push_back(done);
    total = of;
    return true;
  };
  const PlanResult full = search(p.a, p.n, p.c, req);
  EXPECT_FALSE(full.cancelled);
  ASSERT_GT(total, 1u);
  ASSERT_EQ(seen.size(), total);
  for (std::size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], i + 1);

  std::size_t calls = 0;
  req.progress = [&](std::size_t, std::size_t) { return ++calls < 2; };
  const PlanResult stopped = search(p.a, p.n, p.c, req);
  EXPECT_TRUE(stopped.cancelled);
  EXPECT_EQ(calls, 2u);
  EXPECT_LT(stopped.evaluated, full.evaluated);
}

// Nothing fits: a result with reasons, not an exception.
TEST(Search, NothingFitsIsAResultWithReasons) {
  const Problem p = problem("llama-2-70b", "A100-80GB");
  const PlanResult r = search(p.a, p.n, p.c, SearchRequest{});
  EXPECT_TRUE(r.plans.empty());
  ASSERT_FALSE(r.rejected.empty());
  EXPECT_NE(r.rejected.front().reason.find("does not fit"), std::string::npos)
      << r.rejected.front().reason;
}

TEST(Search, ImpossiblePinnedDegreesAndBatchesAreInputErrors) {
  const Problem p = problem("llama-2-13b", "8xA100-80GB");
  SearchRequest req;
  req.tp = 3;
  EXPECT_THROW((void)search(p.a, p.n, p.c, req), InputError);
  req.tp = 2;
  req.pp = 2;
  req.micro_batch = 4;
  req.global_batch = 36;  // dp = 2: 36 is not a multiple of 4 x 2
  try {
    (void)search(p.a, p.n, p.c, req);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("global-batch 36"), std::string::npos) << e.what();
  }
  SearchRequest zero;
  zero.global_batch = 0;
  EXPECT_THROW((void)search(p.a, p.n, p.c, zero), InputError);
}

// "DDP across 2 nodes: 30 % slower, 3.8 s/step of exposed inter-node all-reduce"
TEST(Search, RunnersUpSayWhyTheyLose) {
  const Problem p = problem("llama-2-7b", "2x8xA100-80GB");
  model::Training tr;
  tr.strategy = Strategy::ddp;
  tr.checkpointing = Checkpointing::full;
  hardware::Cluster slow = p.c;
  slow.inter_node = {1, 100.0, "ethernet"};
  const Evaluator ev(p.a, p.n, slow);
  const StepCost ddp = ev.cost(tr);
  tr.strategy = Strategy::fsdp_full;
  const StepCost fsdp = ev.cost(tr);
  // On one 100 Gb/s NIC per node DDP's fp32 gradients, all-reduced in 25 MB buckets, lose to
  // FSDP's bf16 gathers and reductions.
  const std::string why = why_slower(fsdp, ddp);
  EXPECT_NE(why.find("% slower"), std::string::npos) << why;
  EXPECT_NE(why.find("exposed inter-node"), std::string::npos) << why;
  EXPECT_EQ(plan_label(tr, fsdp.layout), "FSDP full-shard across 2 nodes, full checkpointing");
  EXPECT_EQ(why_slower(ddp, ddp), "as fast (within 0.5 %)");
}

}  // namespace
}  // namespace trainplan::planner
