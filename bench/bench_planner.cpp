// How fast the planner answers: one configuration priced end to end (memory, compute,
// communication, bubble, optimizer), fit's memory verdict, and a full plan search.
#include <benchmark/benchmark.h>

#include <array>
#include <optional>

#include "trainplan/request/catalog.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/planner/evaluator.hpp"
#include "trainplan/planner/fit.hpp"
#include "trainplan/planner/search.hpp"

namespace {

using namespace trainplan;

const request::Catalog& catalog() {
  static const request::Catalog c = request::Catalog::builtin();
  return c;
}

struct Setup {
  model::Architecture arch;
  model::ParameterCounts counts;
  hardware::Cluster cluster;
};

Setup setup(const char* model, const char* cluster) {
  Setup s{catalog().resolve_model(model).arch,
          {},
          catalog().resolve_cluster(cluster, std::nullopt).cluster};
  s.counts = model::count_parameters(s.arch);
  return s;
}

model::Training llama70b_fsdp() {
  model::Training tr;
  tr.strategy = Strategy::fsdp_full;
  tr.micro_batch = 2;
  tr.seq = 4096;
  tr.checkpointing = Checkpointing::full;
  return tr;
}

// One fully specified configuration (the README's estimate example), priced again and again.
void BM_EvaluateFullySpecified(benchmark::State& state) {
  const Setup s = setup("llama-2-70b", "4x8xH100-80GB");
  const planner::Evaluator ev(s.arch, s.counts, s.cluster);
  const model::Training tr = llama70b_fsdp();
  for (auto _ : state) benchmark::DoNotOptimize(ev.cost(tr));
  state.counters["items_per_second"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_EvaluateFullySpecified);

// Prices the configurations in turn, one per iteration, and reports evaluations per second.
template <std::size_t N>
void cost_in_turn(benchmark::State& state, const planner::Evaluator& ev,
                  const std::array<model::Training, N>& configs) {
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(ev.cost(configs[i]));
    i = i + 1 == N ? 0 : i + 1;
  }
  state.counters["items_per_second"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

// Distinct configurations in turn (strategy, checkpointing, micro-batch, TP): no two consecutive
// evaluations share their memory or compute inputs.
void BM_EvaluateVaried(benchmark::State& state) {
  const Setup s = setup("llama-2-70b", "4x8xH100-80GB");
  const planner::Evaluator ev(s.arch, s.counts, s.cluster);
  std::array<model::Training, 48> configs;
  const std::array strategies{Strategy::ddp, Strategy::fsdp_full, Strategy::fsdp_grad_op,
                              Strategy::fsdp_hybrid};
  const std::array ckpts{Checkpointing::none, Checkpointing::selective, Checkpointing::full};
  for (std::size_t i = 0; i < configs.size(); ++i) {
    model::Training tr = llama70b_fsdp();
    tr.strategy = strategies[i % strategies.size()];
    tr.checkpointing = ckpts[(i / 4) % ckpts.size()];
    tr.micro_batch = 1 + static_cast<std::int64_t>(i % 3);
    tr.tp = (i / 12) % 2 == 0 ? 1 : 2;
    tr.grad_accum = 1 + static_cast<std::int64_t>(i / 24);
    configs[i] = tr;
  }
  cost_in_turn(state, ev, configs);
}
BENCHMARK(BM_EvaluateVaried);

// Every evaluation a new batch shape (micro-batch x sequence length): the per-layer compute cache
// never hits, so each call prices every GEMM, attention kernel and collective afresh.
void BM_EvaluateDistinctShapes(benchmark::State& state) {
  const Setup s = setup("llama-2-70b", "4x8xH100-80GB");
  const planner::Evaluator ev(s.arch, s.counts, s.cluster);
  std::array<model::Training, 64> configs;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    model::Training tr = llama70b_fsdp();
    tr.micro_batch = 1 + static_cast<std::int64_t>(i % 4);
    tr.seq = 1024 + 256 * static_cast<std::int64_t>(i / 4);
    configs[i] = tr;
  }
  cost_in_turn(state, ev, configs);
}
BENCHMARK(BM_EvaluateDistinctShapes);

// The Estimate the CLI and GUI render: cost plus the largest micro-batch that fits and named
// communication items.
void BM_EvaluateEstimate(benchmark::State& state) {
  const Setup s = setup("llama-2-70b", "4x8xH100-80GB");
  const planner::Evaluator ev(s.arch, s.counts, s.cluster);
  const model::Training tr = llama70b_fsdp();
  for (auto _ : state) benchmark::DoNotOptimize(ev.estimate(tr));
  state.counters["items_per_second"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_EvaluateEstimate);

// planner::evaluate() as the GUI calls it: a fresh evaluator each time.
void BM_EvaluateFreeFunction(benchmark::State& state) {
  const Setup s = setup("llama-2-70b", "4x8xH100-80GB");
  const model::Training tr = llama70b_fsdp();
  for (auto _ : state) benchmark::DoNotOptimize(planner::evaluate(s.arch, s.counts, tr, s.cluster));
  state.counters["items_per_second"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_EvaluateFreeFunction);

void BM_Fit13bOn4xA100(benchmark::State& state) {
  const Setup s = setup("llama-2-13b", "4xA100-80GB");
  planner::SearchRequest req;
  req.base.seq = 2048;
  for (auto _ : state) benchmark::DoNotOptimize(planner::fit(s.arch, s.counts, req, s.cluster));
}
BENCHMARK(BM_Fit13bOn4xA100)->Unit(benchmark::kMillisecond);

// A full plan search on state.range(0) threads, and the configurations it priced per second.
void plan_search(benchmark::State& state, const char* model, const char* cluster,
                 std::int64_t global_batch, std::int64_t seq, bool megatron = false) {
  const Setup s = setup(model, cluster);
  planner::SearchRequest req;
  req.global_batch = global_batch;
  req.base.seq = seq;
  if (megatron) {
    req.base.framework = Framework::megatron;
    req.base.library = Library::megatron;
  }
  req.threads = static_cast<unsigned>(state.range(0));
  std::int64_t configs = 0;
  for (auto _ : state) {
    const planner::PlanResult r = planner::search(s.arch, s.counts, s.cluster, req);
    configs += r.evaluated;
    benchmark::DoNotOptimize(r);
  }
  state.counters["configs_per_second"] =
      benchmark::Counter(static_cast<double>(configs), benchmark::Counter::kIsRate);
}

// `trainplan plan gpt3-175b 128x8xA100-80GB --global-batch 1536`.
void BM_PlanGpt3On1024A100(benchmark::State& state) {
  plan_search(state, "gpt3-175b", "128x8xA100-80GB", 1536, 2048);
}
BENCHMARK(BM_PlanGpt3On1024A100)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// `trainplan plan llama-3.1-405b 2048x8xH100-80GB --seq 131072 --global-batch 128`: Llama 3's
// long-context stage (Dubey et al. 2024, Table 4), TP x CP x PP x DP on 16,384 GPUs.
void BM_PlanLlama405bOn16384H100At128k(benchmark::State& state) {
  plan_search(state, "llama-3.1-405b", "2048x8xH100-80GB", 128, 131072);
}
BENCHMARK(BM_PlanLlama405bOn16384H100At128k)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// The same under Megatron-LM, whose plans that recompute every layer are bisected to the fewest
// layers that fit (--checkpoint-layers).
void BM_PlanLlama405bMegatronOn16384H100At128k(benchmark::State& state) {
  plan_search(state, "llama-3.1-405b", "2048x8xH100-80GB", 128, 131072, true);
}
BENCHMARK(BM_PlanLlama405bMegatronOn16384H100At128k)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
