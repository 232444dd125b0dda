// The time model against the H200 step profiles (data/measurements/h200-2026-11-26/
// step-profile.json: forward, backward and optimizer step timed apart with synchronisation, the
// kernel time of one step by category). Runs whose profile fitted a constant of TimeConventions
// are named in its comments; every run is held to the same bands here.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "paths.hpp"
#include "trainplan/core/enum_table.hpp"
#include "trainplan/model/activations.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/planner/evaluator.hpp"
#include "trainplan/planner/optimizer_step.hpp"

namespace trainplan {
namespace {

using Json = nlohmann::json;

const Json& profile() {
  static const Json j = [] {
    std::ifstream in(std::string(TRAINPLAN_MEASUREMENTS_DIR) + "/h200-2026-11-26/step-profile.json");
    return Json::parse(in);
  }();
  return j;
}

// The step-profile's config names are its own; these are the catalogue's.
std::string catalogue_name(const std::string& config) {
  static const std::vector<std::pair<std::string, std::string>> names = {
      {"llama2_7b", "llama-2-7b"},     {"llama31_8b", "llama-3.1-8b"},
      {"tinyllama_1.1b", "tinyllama-1.1b"}, {"gpt2_xl", "gpt2-xl"},
      {"mistral_7b", "mistral-7b"},    {"qwen25_7b", "qwen2.5-7b"},
      {"falcon_7b", "falcon-7b"},      {"open_llama_7b", "open-llama-7b"}};
  for (const auto& [k, v] : names)
    if (k == config) return v;
  ADD_FAILURE() << "unknown config " << config;
  return config;
}

struct ProfiledRun {
  std::string name;
  Json measured;
  planner::Estimate predicted;
  double optimizer_params = 0;
};

std::vector<ProfiledRun> runs() {
  std::vector<ProfiledRun> out;
  const hardware::Cluster h200 = test::catalog().resolve_cluster("1xH200", std::nullopt).cluster;
  for (const Json& r : profile().at("runs")) {
    const model::Architecture a =
        test::catalog().resolve_model(catalogue_name(r.at("config"))).arch;
    model::Training t;
    t.method = parse_enum<Method>(r.at("method").get<std::string>());
    t.precision = parse_enum<Precision>(r.at("precision").get<std::string>());
    t.checkpointing = parse_enum<Checkpointing>(r.at("checkpointing").get<std::string>());
    t.attention = parse_enum<Attention>(r.at("attention").get<std::string>());
    t.optimizer_impl = parse_enum<OptimizerImpl>(r.at("optimizer_impl").get<std::string>());
    t.seq = r.at("seq");
    t.micro_batch = r.at("micro_batch");
    if (!r.at("lora").is_null()) {
      t.lora.targets = r.at("lora")[0].get<std::vector<std::string>>();
      t.lora.rank = r.at("lora")[1];
      t.lora.alpha = 2.0 * static_cast<double>(t.lora.rank);
      t.lora.dropout = 0.0;
    }
    const planner::Evaluator ev(a, model::count_parameters(a), h200);
    const planner::StepCost cost = ev.cost(t);
    out.push_back({r.at("name"), r, ev.to_estimate(t, cost, false), cost.memory.states.optimizer_params});
  }
  return out;
}

double pct(double predicted, double measured) { return 100.0 * (predicted - measured) / measured; }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The bar: forward, backward and optimizer phases within 15 % median each.
TEST(H200StepProfile, PhasesWithinFifteenPercentMedian) {
  const std::vector<ProfiledRun> rs = runs();
  ASSERT_EQ(rs.size(), 11u);
  std::vector<double> fwd, bwd, opt;
  for (const ProfiledRun& r : rs) {
    const Json& p = r.measured.at("phases_s");
    fwd.push_back(std::abs(pct(r.predicted.time.forward_phase.value(), p.at("forward_s"))));
    bwd.push_back(std::abs(pct(r.predicted.time.backward_phase.value(), p.at("backward_s"))));
    opt.push_back(std::abs(pct(r.predicted.time.optimizer.value(), p.at("optimizer_s"))));
    std::cout << fmt::format("  {}: forward {:+.1f} %, backward {:+.1f} %, optimizer {:+.1f} %\n",
                             r.name, pct(r.predicted.time.forward_phase.value(), p.at("forward_s")),
                             pct(r.predicted.time.backward_phase.value(), p.at("backward_s")),
                             pct(r.predicted.time.optimizer.value(), p.at("optimizer_s")));
  }
  EXPECT_LE(median(fwd), 15.0);
  EXPECT_LE(median(bwd), 15.0);
  EXPECT_LE(median(opt), 15.0);
}

// The optimizer kernels alone, per implementation: foreach and fused AdamW, fp32 (bf16-mixed)
// and bf16 (bf16-true) states, on the runs that train every weight. The bandwidth fractions were
// fitted on the Llama-2-7B and TinyLlama foreach runs and the fused arithmetic on the TinyLlama
// fused run; GPT-2-XL, Falcon-7B (two runs), OpenLLaMA-7B and the Llama-2-7B fused run are held
// out. Within 10 % each.
TEST(H200StepProfile, OptimizerKernelsPerImplementation) {
  const hardware::GpuSpec g = test::catalog().resolve_gpu("H200").spec;
  std::size_t seen = 0;
  for (const ProfiledRun& r : runs()) {
    if (r.measured.at("method") != "full") continue;
    SCOPED_TRACE(r.name);
    const double measured = r.measured.at("kernel_time_s_by_category").at("optimizer");
    const planner::OptimizerStepTime t =
        planner::optimizer_step_time(r.predicted.training, g.hbm_bandwidth, g.peak.fp32,
                                     r.optimizer_params, 0.0, planner::TimeConventions{});
    EXPECT_NEAR(pct(t.kernels.value(), measured), 0.0, 10.0)
        << fmt::format("predicted {:.2f} ms, measured {:.2f} ms", 1e3 * t.kernels.value(),
                       1e3 * measured);
    ++seen;
  }
  EXPECT_EQ(seen, 8u);
}

// torch's foreach AdamW holds sqrt(v) for every parameter while it steps: Llama-2-7B bf16-true,
// optimizer-phase peak 62.82 GiB with foreach and 50.27 GiB with fused=True (the same run
// otherwise). The transient is the difference.
TEST(H200StepProfile, ForeachTransientIsTheMeasuredPeakDifference) {
  double foreach_peak = 0, fused_peak = 0;
  const ProfiledRun* foreach_run = nullptr;
  const std::vector<ProfiledRun> rs = runs();
  for (const ProfiledRun& r : rs) {
    if (r.name == "llama-2-7b-full-bf16-true-s512-b1-ckpt") {
      foreach_peak = r.measured.at("peaks").at("optimizer_peak_GiB");
      foreach_run = &r;
    }
    if (r.name == "llama-2-7b-full-bf16-true-s512-b1-ckpt-fused")
      fused_peak = r.measured.at("peaks").at("optimizer_peak_GiB");
  }
  ASSERT_NE(foreach_run, nullptr);
  const double transient =
      planner::optimizer_step_transient(foreach_run->predicted.training,
                                        foreach_run->optimizer_params, 0.0)
          .value() /
      kGiB;
  EXPECT_NEAR(transient, foreach_peak - fused_peak, 0.02 * (foreach_peak - fused_peak));
  model::Training fused = foreach_run->predicted.training;
  fused.optimizer_impl = OptimizerImpl::fused;
  EXPECT_EQ(planner::optimizer_step_transient(fused, foreach_run->optimizer_params, 0.0).value(), 0.0);
}

// The loss's backward transient against the measured phase peaks. Under LoRA the head is frozen,
// so what backward allocates beyond what forward left (backward peak - allocated after forward) is
// the loss's first gradients: nll_loss_backward's fp32 gradient and log_softmax_backward's, 8
// bytes per logit, before any block's. Llama-3.1-8B (s1024 b1, V 128256: measured 0.98 GiB) and
// Qwen2.5-7B (s2048 b2, V 152064: 4.64 GiB); no constant of the memory model was fitted on these
// phase peaks.
TEST(H200StepProfile, LossGradientsAreWhatBackwardAddsUnderLora) {
  int seen = 0;
  for (const ProfiledRun& r : runs()) {
    if (r.predicted.training.method != Method::lora || r.predicted.training.checkpointing != Checkpointing::none)
      continue;
    SCOPED_TRACE(r.name);
    const Json& peaks = r.measured.at("peaks");
    const double measured =
        peaks.at("backward_peak_GiB").get<double>() - peaks.at("after_forward_allocated_GiB").get<double>();
    const model::Architecture a = test::catalog().resolve_model(catalogue_name(r.measured.at("config"))).arch;
    const double predicted = model::head_activations(a, r.predicted.training).transient.value() / kGiB;
    EXPECT_NEAR(predicted / measured, 1.0, 0.03) << predicted << " GiB predicted, " << measured << " measured";
    ++seen;
  }
  EXPECT_EQ(seen, 2);
}

// Memory-bound kernels (copies, casts, elementwise, norms, the loss): the eager elementwise
// efficiency and kernel floor were fitted on TinyLlama (foreach), Qwen2.5-7B, OpenLLaMA-7B and
// Llama-2-7B (foreach); the other runs are held out. Runs without checkpointing (the estimate
// reports recomputation as one term). Falcon-7B under sdpa runs its attention on the math path
// (fp32 GEMMs, a materialised softmax), which the model does not follow yet: left out here.
// Median within 20 %.
TEST(H200StepProfile, MemoryBoundKernelTime) {
  std::vector<double> errors;
  for (const ProfiledRun& r : runs()) {
    if (r.name == "falcon-7b-full-bf16-true-s1024-b1-sdpa") continue;
    if (r.measured.at("checkpointing") != "none") continue;  // the replay's share is not apart
    double measured = 0;
    for (const auto& [k, v] : r.measured.at("kernel_time_s_by_category").items())
      if (k != "gemm" && k != "attention" && k != "optimizer") measured += v.get<double>();
    errors.push_back(std::abs(pct(r.predicted.time.memory_bound.value(), measured)));
    std::cout << fmt::format("  {}: memory-bound {:+.1f} %\n", r.name,
                             pct(r.predicted.time.memory_bound.value(), measured));
  }
  EXPECT_EQ(errors.size(), 7u);
  EXPECT_LE(median(errors), 20.0);
}

}  // namespace
}  // namespace trainplan
