// Properties every memory estimate must have, over a grid of models and configurations.
#include <gtest/gtest.h>

#include <set>

#include "../common/catalog.hpp"
#include "trainplan/request/catalog.hpp"
#include "trainplan/model/activations.hpp"
#include "trainplan/model/library.hpp"
#include "trainplan/planner/fit.hpp"

namespace trainplan {
namespace {

using test::catalog;

struct Case {
  model::Architecture arch;
  model::ParameterCounts n;
  hardware::Cluster cluster;
};

Case setup(const char* model_name, const char* cluster) {
  const auto a = catalog().resolve_model(model_name).arch;
  return {a, model::count_parameters(a), catalog().resolve_cluster(cluster, std::nullopt).cluster};
}

// Defaults with a sequence every catalogue model supports.
model::Training training(const Case& s) {
  model::Training tr;
  tr.seq = std::min<std::int64_t>(1024, s.arch.max_seq);
  return tr;
}

planner::MemoryBreakdown mem(const Case& s, const model::Training& tr) {
  return planner::memory(s.arch, s.n, tr, planner::make_layout(s.arch, tr, s.cluster));
}

const char* kModels[] = {"llama-2-7b", "mistral-7b", "mixtral-8x7b", "gpt2-xl", "falcon-7b", "t5-3b",
                         "phi-2", "gemma-2b", "bloom-560m", "mpt-7b", "qwen2.5-7b"};

TEST(MemoryProperties, ModelStatesShrinkWithZeroStage) {
  for (const char* name : kModels) {
    for (Framework f : {Framework::pytorch, Framework::deepspeed}) {
      SCOPED_TRACE(std::string(name) + " " + std::string(to_string(f)));
      const Case s = setup(name, "8xA100-80GB");
      auto states = [&](Strategy st) {
        model::Training tr = training(s);
        tr.framework = f;
        tr.strategy = st;
        return planner::model_states(s.arch, s.n, tr, planner::make_layout(s.arch, tr, s.cluster)).device();
      };
      EXPECT_LE(states(Strategy::zero3), states(Strategy::zero2));
      EXPECT_LE(states(Strategy::zero2), states(Strategy::zero1));
      EXPECT_LE(states(Strategy::zero1), states(Strategy::ddp));
      EXPECT_LT(states(Strategy::zero3), states(Strategy::ddp));
    }
  }
}

TEST(MemoryProperties, MonotoneInMicroBatchAndSequence) {
  for (const char* name : kModels) {
    SCOPED_TRACE(name);
    const Case s = setup(name, "A100-80GB");
    model::Training tr;
    tr.seq = 512;
    Bytes last;
    for (std::int64_t b : {1, 2, 4, 8}) {
      tr.micro_batch = b;
      const Bytes now = mem(s, tr).peak_allocated;
      EXPECT_GE(now, last) << "micro-batch " << b;
      last = now;
    }
    tr.micro_batch = 1;
    last = Bytes(0.0);
    for (std::int64_t seq : {128, 256, 512, 1024}) {
      tr.seq = seq;
      const Bytes now = mem(s, tr).peak_allocated;
      EXPECT_GE(now, last) << "seq " << seq;
      last = now;
    }
  }
}

TEST(MemoryProperties, CheckpointingOrdersActivations) {
  for (const char* name : kModels) {
    for (Attention att : {Attention::eager, Attention::flash}) {
      SCOPED_TRACE(std::string(name) + " " + std::string(to_string(att)));
      const Case s = setup(name, "A100-80GB");
      model::Training tr;
      tr.seq = 1024;
      tr.attention = att;
      auto act = [&](Checkpointing ck) {
        tr.checkpointing = ck;
        return model::activation_memory(s.arch, tr).total();
      };
      EXPECT_LE(act(Checkpointing::full), act(Checkpointing::selective));
      EXPECT_LE(act(Checkpointing::selective), act(Checkpointing::none));
      EXPECT_LT(act(Checkpointing::full), act(Checkpointing::none));
    }
  }
}

TEST(MemoryProperties, AdaptersNeedLessThanFullFineTuning) {
  for (const char* name : kModels) {
    SCOPED_TRACE(name);
    const Case s = setup(name, "A100-80GB");
    model::Training full = training(s);
    model::Training lora = full;
    lora.method = Method::lora;
    model::Training qlora = full;
    qlora.method = Method::qlora;
    EXPECT_LT(mem(s, lora).peak_allocated, mem(s, full).peak_allocated);
    EXPECT_LT(mem(s, qlora).peak_allocated, mem(s, lora).peak_allocated);
  }
}

TEST(MemoryProperties, BreakdownSumsToTotals) {
  const Strategy strategies[] = {Strategy::ddp, Strategy::zero1, Strategy::zero2, Strategy::zero3,
                                 Strategy::fsdp_full, Strategy::fsdp_grad_op, Strategy::fsdp_hybrid};
  for (const char* name : kModels) {
    const Case s = setup(name, "2x8xA100-80GB");
    for (Strategy st : strategies) {
      for (Offload off : {Offload::none, Offload::optimizer, Offload::optimizer_params}) {
        SCOPED_TRACE(std::string(name) + " " + std::string(to_string(st)) + " " + std::string(to_string(off)));
        model::Training tr = training(s);
        tr.strategy = st;
        tr.offload = off;
        const auto m = mem(s, tr);
        EXPECT_NEAR((m.weights + m.gradients + m.optimizer + m.activations + m.buffers).value(),
                    m.peak_allocated.value(), 1.0);
        EXPECT_NEAR((m.peak_allocated + m.overhead).value(), m.device_total.value(), 1.0);
        EXPECT_GT(m.peak_allocated.value(), 0.0);
      }
    }
  }
}

// The allocator's cache sits between the peak and what nvidia-smi shows; with expandable segments
// only the 2 MiB page rounding of the peak is left (docs/formulas.md, "The caching allocator").
// With several pipeline stages the answer is the heavier of the first (the embedding and, under
// 1F1B, min(p, m) micro-batches in flight) and the last (the output layer, its loss and the
// multi-token prediction modules, one micro-batch in flight).
TEST(MemoryProperties, ThePipelineStageWithTheLargerPeakIsTheAnswer) {
  // DeepSeek-V2-Lite under Megatron, PP 2, one micro-batch: both stages hold one, the last the
  // head and its logits too.
  Case s = setup("deepseek-v2-lite", "8xH100-80GB");
  model::Training tr = training(s);
  tr.framework = Framework::megatron;
  tr.strategy = Strategy::zero1;
  tr.pp = 2;
  const planner::MemoryBreakdown without = mem(s, tr);
  EXPECT_EQ(without.peak_stage, "last");
  EXPECT_EQ(without.activation_detail.stage, model::PipelineStage::last);
  EXPECT_GT(without.activation_detail.head.value(), 0.0);
  EXPECT_EQ(without.activation_detail.embedding.value(), 0.0);
  // One prediction module lives on the last stage: its parameters (counted as the DeepSeek-V3
  // checkpoint holds them, test_parameters.cpp) are that stage's, one to one.
  s.arch.mtp_layers = 1;
  s.n = model::count_parameters(s.arch);
  const planner::MemoryBreakdown with = mem(s, tr);
  EXPECT_EQ(with.peak_stage, "last");
  EXPECT_NEAR(static_cast<double>(with.states.local_params - without.states.local_params),
              static_cast<double>(s.n.mtp), 1.0);
  EXPECT_GT(with.peak_allocated.value(), without.peak_allocated.value());
  // Llama-2-7B, PP 4 and eight micro-batches: the first stage holds four of them, the last one.
  const Case l = setup("llama-2-7b", "8xH100-80GB");
  model::Training deep = training(l);
  deep.strategy = Strategy::ddp;
  deep.pp = 4;
  deep.grad_accum = 8;
  const planner::MemoryBreakdown first = mem(l, deep);
  EXPECT_EQ(first.peak_stage, "first");
  EXPECT_EQ(first.activation_detail.in_flight, 4.0);
  EXPECT_EQ(first.activation_detail.head.value(), 0.0);
  // Interleaved with two chunks a stage: Megatron's last rank warms up (v-1) p = 4 chunk
  // micro-batches and runs one more, each half its layers (schedules.py get_pp_rank_microbatches);
  // with two micro-batches all four of its chunk micro-batches are in flight.
  deep.pp_virtual = 2;
  const model::ResolvedBlocks blocks = model::resolve_blocks(l.arch, deep);
  EXPECT_DOUBLE_EQ(model::activation_memory(l.arch, deep, blocks, model::PipelineStage::last).in_flight, 2.5);
  deep.grad_accum = 2;
  EXPECT_DOUBLE_EQ(model::activation_memory(l.arch, deep, blocks, model::PipelineStage::last).in_flight, 2.0);
  deep.pp_virtual = 1;
  // One stage: no stage named.
  deep.pp = 1;
  EXPECT_EQ(mem(l, deep).peak_stage, "");
}

TEST(Allocator, ReservedLiesBetweenThePeakAndTheDeviceTotal) {
  for (const char* name : kModels) {
    SCOPED_TRACE(name);
    const Case s = setup(name, "8xA100-80GB");
    for (Checkpointing ck : {Checkpointing::none, Checkpointing::full}) {
      model::Training tr = training(s);
      tr.strategy = Strategy::fsdp_full;
      tr.checkpointing = ck;
      const auto l = planner::make_layout(s.arch, tr, s.cluster);
      const auto m = planner::memory(s.arch, s.n, tr, l);
      EXPECT_GT(m.allocator_cache.value(), 0.0);
      EXPECT_LE(m.transient, m.peak_allocated);
      EXPECT_NEAR(m.reserved.value(), (m.peak_allocated + m.allocator_cache).value(), 1.0);
      EXPECT_NEAR(m.device_total.value(), (m.reserved + m.outside_torch).value(), 1.0);
      model::Training expandable = tr;
      expandable.expandable_segments = true;
      const auto e = planner::memory(s.arch, s.n, expandable, l);
      EXPECT_LT(e.allocator_cache, mib(2.0));
      EXPECT_LE(e.reserved, m.reserved);
      EXPECT_EQ(e.peak_allocated, m.peak_allocated);
    }
  }
}

// The verdict's three bands, by moving the usable capacity across the boundaries it names: no below
// the peak + context + the unreleasable cache, tight up to the full footprint, fits above; a margin
// turns a plan that fits only without it into tight.
TEST(Verdict, BandsFollowTheUsableCapacityAndTheMargin) {
  Case s = setup("llama-2-7b", "A100-80GB");
  model::Training tr = training(s);
  tr.method = Method::lora;
  const auto m = mem(s, tr);
  const planner::MemoryConventions mc;
  const Bytes hard = m.peak_allocated + m.outside_torch + m.allocator_cache * mc.unreleasable_cache_fraction;
  auto verdict = [&](Bytes usable, double margin) {
    s.cluster.gpu.usable_memory = usable;
    return planner::judge(m, s.cluster, margin).verdict;
  };
  EXPECT_EQ(verdict(m.peak_allocated, 0.0), planner::Verdict::no);
  EXPECT_EQ(verdict(hard * 0.999, 0.0), planner::Verdict::no);
  EXPECT_EQ(verdict(hard * 1.001, 0.0), planner::Verdict::tight);
  EXPECT_EQ(verdict(m.device_total * 0.999, 0.0), planner::Verdict::tight);
  EXPECT_EQ(verdict(m.device_total * 1.001, 0.0), planner::Verdict::fits);
  EXPECT_EQ(verdict(m.device_total * 1.001, 0.1), planner::Verdict::tight);
  EXPECT_EQ(verdict(m.device_total * 1.2, 0.1), planner::Verdict::fits);
  s.cluster.gpu.usable_memory = m.device_total * 0.999;
  EXPECT_TRUE(planner::fits(m, s.cluster));  // tight counts as fitting
  EXPECT_FALSE(planner::judge(m, s.cluster).reason.empty());
}

// fit's margin: the recommended plan leaves that share of the GPU free, or is tight when none can.
TEST(Fit, MarginIsLeftFreeByTheRecommendation) {
  const Case s = setup("llama-2-7b", "A100-80GB");
  planner::SearchRequest req;
  req.base.method = Method::lora;
  req.base.seq = 1024;
  req.margin = 0.2;
  const auto f = planner::fit(s.arch, s.n, req, s.cluster);
  ASSERT_TRUE(f.recommended.has_value());
  const auto& k = f.candidates[*f.recommended];
  EXPECT_EQ(k.verdict.verdict, planner::Verdict::fits);
  EXPECT_LE(k.memory.device_total, s.cluster.gpu.usable_memory * 0.8);
  model::Training at = k.training;
  at.micro_batch = k.max_micro_batch + 1;
  EXPECT_GT(mem(s, at).device_total, s.cluster.gpu.usable_memory * 0.8);
  req.margin = 1.5;
  EXPECT_THROW((void)planner::fit(s.arch, s.n, req, s.cluster), InputError);
}

TEST(Fit, AllOptionsPinnedGivesOneCandidate) {
  const Case s = setup("llama-2-13b", "4xA100-80GB");
  planner::SearchRequest req;
  req.strategy = Strategy::fsdp_full;
  req.checkpointing = Checkpointing::full;
  req.offload = Offload::none;
  const auto f = planner::fit(s.arch, s.n, req, s.cluster);
  ASSERT_EQ(f.candidates.size(), 1u);
  EXPECT_EQ(f.candidates[0].fits, f.candidates[0].memory.device_total <= s.cluster.gpu.usable_memory);
}

TEST(Fit, MaxMicroBatchIsTheLargestThatFits) {
  const Case s = setup("llama-2-7b", "A100-80GB");
  model::Training tr;
  tr.method = Method::lora;
  tr.checkpointing = Checkpointing::full;
  const auto l = planner::make_layout(s.arch, tr, s.cluster);
  const Bytes usable = s.cluster.gpu.usable_memory;
  const std::int64_t b = planner::max_micro_batch(s.arch, s.n, tr, l, s.cluster, {});
  ASSERT_GT(b, 0);
  tr.micro_batch = b;
  EXPECT_LE(planner::memory(s.arch, s.n, tr, l).device_total, usable);
  tr.micro_batch = b + 1;
  EXPECT_GT(planner::memory(s.arch, s.n, tr, l).device_total, usable);
}

// Offloaded states and checkpoints live in the nodes' CPU memory: where the cluster states it,
// a configuration whose host share exceeds it does not fit; unstated, it is not checked.
TEST(Fit, HostMemoryIsCheckedWhereTheClusterStatesIt) {
  Case s = setup("llama-2-13b", "8xA100-80GB");
  model::Training tr = training(s);
  tr.strategy = Strategy::fsdp_full;
  tr.seq = 4096;
  tr.checkpointing = Checkpointing::full_offload;
  tr.offload = Offload::optimizer;
  const auto l = planner::make_layout(s.arch, tr, s.cluster);
  const auto m = planner::memory(s.arch, s.n, tr, l);
  ASSERT_GT(m.host.value(), 0.0);
  EXPECT_TRUE(planner::fits(m, s.cluster));  // host memory not stated
  s.cluster.host_memory = m.host * 2.0;
  EXPECT_TRUE(planner::fits(m, s.cluster));
  s.cluster.host_memory = m.host * 0.5;
  EXPECT_FALSE(planner::fits(m, s.cluster));
  // The largest micro-batch stops where the host share outgrows the nodes' memory.
  const std::int64_t b = planner::max_micro_batch(s.arch, s.n, tr, l, s.cluster, {});
  tr.micro_batch = b + 1;
  EXPECT_GT(planner::memory(s.arch, s.n, tr, l).host, s.cluster.host_memory);
}

// litgpt's finetune/lora.py keeps `logits` in a local into the next iteration, and with it the
// previous micro-batch's graph, which bitsandbytes before 0.43.2 makes hold every 4-bit layer's
// input: for config_hub's Llama-2-7B QLoRA (micro-batch 2 of 512 tokens on an A10G) the end of the
// next forward, at its last 4-bit head matmul, outgrows backward. A shorter previous micro-batch
// holds less; none (the first micro-batch) leaves the peak in backward; 0.43.2 holds nothing.
TEST(MemoryProperties, LitgptHoldsThePreviousMicroBatchUnderOldBitsandbytes) {
  const Case s = setup("llama-2-7b", "1xA10G");
  auto peak = [&](int bitsandbytes, double previous_share) {
    model::Training tr = training(s);
    tr.library = Library::litgpt;
    tr.qlora_stack = model::library_traits(Library::litgpt).qlora_stack;
    tr.method = Method::qlora;
    tr.precision = Precision::bf16_true;
    tr.strategy = Strategy::single;
    tr.checkpointing = Checkpointing::none;
    tr.attention = Attention::sdpa;
    tr.lora.targets = {"q", "v"};
    tr.micro_batch = 2;
    tr.grad_accum = 4;
    tr.seq = 512;
    tr.bitsandbytes = bitsandbytes;
    tr.previous_share = previous_share;
    return mem(s, tr);
  };
  EXPECT_EQ(peak(4200, 1.0).peak_phase, "end of forward");
  EXPECT_GT(peak(4200, 1.0).peak_allocated, peak(4200, 0.5).peak_allocated);
  EXPECT_GT(peak(4200, 0.5).peak_allocated, peak(4200, 0.0).peak_allocated);
  EXPECT_EQ(peak(4200, 0.0).peak_phase, "backward");
  EXPECT_EQ(peak(4302, 1.0).peak_allocated, peak(4302, 0.0).peak_allocated);
  EXPECT_EQ(peak(4302, 1.0).peak_phase, "backward");
}

TEST(Fit, SearchesStrategiesThatSuitTheCluster) {
  const Case one = setup("llama-2-7b", "A100-80GB");
  const auto f1 = planner::fit(one.arch, one.n, {}, one.cluster);
  for (const auto& c : f1.candidates) EXPECT_EQ(c.training.strategy, Strategy::single);
  const Case two = setup("llama-2-7b", "2x8xA100-80GB");
  bool hybrid = false;
  for (const auto& c : planner::fit(two.arch, two.n, {}, two.cluster).candidates)
    hybrid = hybrid || c.training.strategy == Strategy::fsdp_hybrid;
  EXPECT_TRUE(hybrid);
}

TEST(Fit, ImpossiblePinnedDegreesAreErrors) {
  const Case s = setup("llama-2-7b", "4xA100-80GB");
  planner::SearchRequest req;
  req.base.tp = 3;
  req.strategy = Strategy::ddp;
  EXPECT_THROW((void)planner::fit(s.arch, s.n, req, s.cluster), InputError);
}

// Expert parallelism (DeepSpeed-MoE, Rajbhandari et al. 2022, arXiv:2201.05596, Sec. 4; Megatron-Core's
// expert-data-parallel group): each of ep ranks holds experts / ep of every MoE layer, and ZeRO shards
// an expert's states over the dp / ep ranks that hold it. Mixtral-8x7B (Mistral AI, "Mixtral of
// experts", 2023: 46.7B parameters) has 32 x 8 experts of 3 x 4096 x 14336 weights = 45.1B.
TEST(ExpertParallel, EachRankHoldsItsShareOfTheExperts) {
  const Case s = setup("mixtral-8x7b", "8xH100-80GB");
  ASSERT_EQ(s.n.experts, 32LL * 8 * 3 * 4096 * 14336);
  EXPECT_NEAR(static_cast<double>(s.n.total) / 1e9, 46.7, 0.05);
  model::Training tr = training(s);
  tr.precision = Precision::bf16_true;  // 2 bytes of weights, 2 of gradients, 4 of AdamW moments
  tr.strategy = Strategy::ddp;
  const double dense = static_cast<double>(s.n.total - s.n.experts);
  for (int ep : {1, 2, 4, 8}) {
    SCOPED_TRACE(ep);
    tr.ep = ep;
    const auto ms = mem(s, tr).states;
    const double held = dense + static_cast<double>(s.n.experts) / ep;
    EXPECT_NEAR(ms.weights.value(), 2.0 * held, 1.0);
    EXPECT_NEAR(ms.gradients.value(), 2.0 * held, 1.0);
    EXPECT_NEAR(ms.optimizer.value(), 4.0 * held, 1.0);
  }
  // ZeRO-1 shards the moments over all 8 ranks, the experts' over the 8 / ep holding them: the
  // same bytes whatever ep; the replicated weights and gradients shrink.
  tr.strategy = Strategy::zero1;
  tr.ep = 1;
  const auto z1 = mem(s, tr).states;
  tr.ep = 4;
  const auto z1_ep = mem(s, tr).states;
  EXPECT_NEAR(z1_ep.optimizer.value(), z1.optimizer.value(), 1.0);
  EXPECT_NEAR(z1_ep.weights.value(), 2.0 * (dense + static_cast<double>(s.n.experts) / 4), 1.0);
  // ZeRO-3 shards everything: expert parallelism leaves the states per GPU as they were.
  tr.strategy = Strategy::zero3;
  tr.ep = 1;
  const auto z3 = mem(s, tr).states;
  tr.ep = 8;
  const auto z3_ep = mem(s, tr).states;
  EXPECT_NEAR(z3_ep.device().value(), z3.device().value(), 1.0);
}

// fit tries each configuration without and with the widest expert parallelism the layout allows
// (8 experts over 8 data-parallel ranks: EP 8); a pinned degree is the only one; a dense model never
// gets one.
TEST(ExpertParallel, FitTriesTheWidestDegree) {
  const Case s = setup("mixtral-8x7b", "8xH100-80GB");
  planner::SearchRequest req;
  req.base = training(s);
  req.checkpointing = Checkpointing::full;
  req.offload = Offload::optimizer;
  std::set<int> eps;
  const auto r = planner::fit(s.arch, s.n, req, s.cluster);
  for (const auto& k : r.candidates) eps.insert(k.training.ep);
  EXPECT_EQ(eps, (std::set<int>{1, 8}));
  ASSERT_TRUE(r.recommended.has_value());
  req.expert_parallel = 2;
  req.base.ep = 2;
  for (const auto& k : planner::fit(s.arch, s.n, req, s.cluster).candidates) EXPECT_EQ(k.training.ep, 2);
  const Case dense = setup("llama-2-7b", "8xH100-80GB");
  planner::SearchRequest plain;
  plain.base = training(dense);
  for (const auto& k : planner::fit(dense.arch, dense.n, plain, dense.cluster).candidates)
    EXPECT_EQ(k.training.ep, 1);
}

TEST(ExpertParallel, ImpossibleDegreesNameTheOption) {
  auto message = [](const char* model, const char* cluster, int ep, Strategy st) {
    const Case s = setup(model, cluster);
    model::Training tr = training(s);
    tr.strategy = st;
    tr.ep = ep;
    try {
      (void)mem(s, tr);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string dense = message("llama-2-7b", "8xH100-80GB", 2, Strategy::ddp);
  EXPECT_NE(dense.find("expert-parallel 2"), std::string::npos) << dense;
  EXPECT_NE(dense.find("not a mixture of experts"), std::string::npos) << dense;
  const std::string experts = message("mixtral-8x7b", "8xH100-80GB", 3, Strategy::ddp);
  EXPECT_NE(experts.find("does not divide the 8 experts"), std::string::npos) << experts;
  const std::string ranks = message("mixtral-8x7b", "4xH100-80GB", 8, Strategy::ddp);
  EXPECT_NE(ranks.find("does not divide the 4 data-parallel ranks"), std::string::npos) << ranks;
  EXPECT_NE(message("mixtral-8x7b", "8xH100-80GB", 0, Strategy::ddp).find("at least 1"), std::string::npos);
}

}  // namespace
}  // namespace trainplan
