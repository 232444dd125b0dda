// FP8 training held to runs nobody on the team wrote (data/reference/published-fp8-cp.json), from
// three independent publishers: NVIDIA's Megatron-Bridge performance summary (Megatron-Core +
// Transformer Engine, H100, B200, GB200; current scaling and MXFP8; Llama 3.1 405B with context
// parallelism 2), MosaicML's llm-foundry FP8 table (Composer amp_fp8: TE delayed scaling) and
// Trainy's torchtitan runs on 32 and 64 H200s (FSDP2, torch.compile, torchao float8 tensorwise,
// per-op selective checkpointing); and to the eager torchao float8 runs measured on one H100
// (data/reference/measured-h100.json). No constant was fitted on any of them.
//
// The hardware issue's bar is a median |error| of tokens/s within 10 % over the published rows:
// met (6.0 % over the 23 at this writing: Trainy's torchtitan float8 rows -5.7 / -4.2 % with Inductor's kernels at the
// streaming rate, the Bridge rows without dropout masks; 7.8 % before those, 6.7 % before the compute beside hidden collectives
// was slowed; it was 15.9 % before the Triton FlashAttention ran at its
// Ampere-instruction rate on H100s and Composer's FSDP computed with its bf16-gathered weights). The
// Blackwell rows with small models are still over-predicted by 16-32 % (their 405B rows are within
// 7 %); the one outside 30 % states why in its "open" key, as do the Trainy rows' max reserved
// memory (25 % above the predicted; the 5 % is not met there). Held here: the H100 Megatron
// rows each within 10 %, the median over all within 10 %, the torchao runs' step times each within
// 10 % and their peak allocated within 5 %.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "paths.hpp"
#include "trainplan/planner/validate.hpp"

namespace trainplan {
namespace {

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

planner::ValidationReport of_file(const std::string& file) {
  std::vector<planner::ReferenceCase> cases;
  for (const planner::ReferenceCase& c : test::reference_cases())
    if (c.file.ends_with(file)) cases.push_back(c);
  return planner::validate(cases);
}

TEST(PublishedFp8, TokensPerSecondOfThePublishedRuns) {
  const planner::ValidationReport r = of_file("published-fp8-cp.json");
  std::vector<double> all;
  std::vector<double> h100_megatron;
  std::size_t megatron = 0, foundry = 0, trainy = 0, cp = 0;
  for (const planner::CaseResult& c : r.cases) {
    const planner::Comparison& m = c.comparisons.front();
    ASSERT_EQ(m.metric, planner::Metric::tokens_per_s) << c.name;
    std::cout << c.name << ": " << m.error_pct() << " %\n";
    all.push_back(std::abs(m.error_pct()));
    if (c.name.starts_with("mbridge-")) ++megatron;
    if (c.name.starts_with("llmfoundry-")) ++foundry;
    if (c.name.starts_with("trainy-")) ++trainy;
    if (c.name.ends_with("-cp2")) ++cp;
    if (c.name.starts_with("mbridge-") && c.name.find("-h100-") != std::string::npos)
      h100_megatron.push_back(std::abs(m.error_pct()));
  }
  // Three independent publishers, FP8 and FP8 with context parallelism among them; two of the
  // Megatron-Bridge rows run Megatron FSDP (zero3 under the megatron framework): the H100 one is
  // held to the H100 band like the others (+8.7 % at this writing).
  EXPECT_EQ(megatron, 14u);
  EXPECT_EQ(foundry, 7u);
  EXPECT_EQ(trainy, 2u);
  EXPECT_EQ(cp, 4u);
  ASSERT_EQ(h100_megatron.size(), 5u);
  for (double e : h100_megatron) EXPECT_LE(e, 10.0);
  std::cout << "median |error| " << median_of(all) << " % over " << all.size() << " rows\n";
  EXPECT_LE(median_of(all), 10.0);
}

TEST(PublishedFp8, EagerTorchaoRunsOnOneH100) {
  const planner::ValidationReport r = of_file("measured-h100.json");
  std::size_t fp8_runs = 0;
  for (const planner::CaseResult& c : r.cases) {
    // Eager runs only: the compiled float8 run is test_compile.cpp's and its file's tolerance.
    if (c.name.find("-fp8-") == std::string::npos || c.name.ends_with("-compile")) continue;
    ++fp8_runs;
    for (const planner::Comparison& m : c.comparisons) {
      std::cout << c.name << " " << to_string(m.metric) << ": " << m.error_pct() << " %\n";
      if (m.metric == planner::Metric::step_time) {
        EXPECT_LE(std::abs(m.error_pct()), 10.0) << c.name;
      }
      if (m.metric == planner::Metric::peak_allocated) {
        EXPECT_LE(std::abs(m.error_pct()), 5.0) << c.name;
      }
    }
  }
  EXPECT_EQ(fp8_runs, 3u);
}

}  // namespace
}  // namespace trainplan
