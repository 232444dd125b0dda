// Liger's kernels (--liger) against the H200 runs of data/reference/measured-h200-liger.json
// (tools/measure --plan liger, liger-kernel 0.8.5 applied as the Trainer's use_liger_kernel does;
// data/measurements/h200-2026-11-28-liger/README.md), each beside its eager twin measured on the
// same GPU, image and versions (measured-h200.json, measured-h200-families.json, and two pairs in
// the Liger file itself). No memory constant was fitted on these runs; the host's time per chunk of
// the fused loss (TimeConventions::liger_host_per_chunk) was fitted on three of them (their
// fitted_by), which the time bands below leave out.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "paths.hpp"
#include "trainplan/model/block_ops.hpp"
#include "trainplan/planner/validate.hpp"

namespace trainplan {
namespace {

using Json = nlohmann::json;
using planner::CaseResult;
using planner::Metric;

// Each Liger run of the file with its eager twin (the same name without "-liger").
std::vector<test::Twins> pairs() {
  return test::eager_twins("-liger", [](const CaseResult& r) { return r.file.ends_with("measured-h200-liger.json"); });
}

// The chunks of the fused linear cross-entropy as Liger sizes them, against the kernels the
// profiles counted: with a trained head each chunk runs one addmm of the weight's gradient (cuBLAS
// names it *_badd_*), so its launch count in one profiled step is the number of chunks.
TEST(LigerRuns, LossChunksAsTheProfilesCountThem) {
  int checked = 0;
  for (const char* file : {"/h200-2026-11-28-liger/run1-profile.json", "/h200-2026-11-28-liger/run2-profile.json"}) {
    std::ifstream in(std::string(TRAINPLAN_MEASUREMENTS_DIR) + file);
    ASSERT_TRUE(in) << file;
    const Json profile = Json::parse(in);
    for (const Json& run : profile.at("runs")) {
      const std::string name = run.at("run").get<std::string>();
      // Full fine-tuning (a trained head) without checkpointing, where the addmm is among the
      // profile's 15 longest kernels.
      if (!name.ends_with("-liger") || name.find("-full-") == std::string::npos || name.find("-ckpt") != std::string::npos)
        continue;
      const auto c = std::find_if(test::reference_cases().begin(), test::reference_cases().end(),
                                  [&](const planner::ReferenceCase& rc) { return rc.name == name; });
      ASSERT_NE(c, test::reference_cases().end()) << name;
      double badd = 0.0;
      for (const Json& k : run.at("top_kernels"))
        if (k.at("name").get<std::string>().find("_badd_") != std::string::npos) badd += k.at("count").get<double>();
      EXPECT_EQ(badd, static_cast<double>(model::fused_linear_loss_chunks(c->arch, c->training).count)) << name;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 4);  // Qwen3-0.6B, Llama-3.2-1B at s1024 and s2048 (twice: the second call's run)
}

// Peak allocated memory of every Liger run within 8 % (median within 3 %), and what Liger saves
// against the eager twin: the logits and log-softmax the fused loss never keeps, the norms' fp32
// copies and the activation output the SwiGLU kernel recomputes. Under bf16-true (the LoRA runs)
// the saving is within 10 % of the measured one or 0.6 GiB. Under bf16-mixed full fine-tuning it
// is over-predicted by 1.1 to 2.2 GiB at this writing (Qwen3-0.6B 20.9 against 18.7 GiB,
// Llama-3.2-1B at s2048 15.7 against 14.2, TinyLlama checkpointed 2.9 against 1.8): in each of the
// four the excess is close to one copy of the logits in bf16 (tokens x vocabulary x 2 bytes: 2.3,
// 2.0, 1.0 and, at s1024, 1.0 GiB against 2.2, 1.5, 1.1 and 0.6), which the LoRA runs under
// bf16-true do not show. What keeps it is not found yet (tools/measure --plan liger-parts applies
// one kernel at a time to find it), so those are held to 2.5 GiB.
TEST(LigerRuns, PeakMemoryAndWhatLigerSaves) {
  std::vector<double> errors;
  int n = 0;
  for (const test::Twins& p : pairs()) {
    const double ml = test::metric_value(*p.variant, Metric::peak_allocated, false);
    const double pl = test::metric_value(*p.variant, Metric::peak_allocated, true);
    errors.push_back(std::abs(pl / ml - 1.0) * 100.0);
    EXPECT_LE(errors.back(), 8.0) << p.variant->name;
    const double measured_saving = test::metric_value(*p.eager, Metric::peak_allocated, false) - ml;
    const double predicted_saving = test::metric_value(*p.eager, Metric::peak_allocated, true) - pl;
    const bool mixed_full = p.variant->name.find("-full-bf16-mixed-") != std::string::npos;
    const double band = mixed_full ? 2.5 : std::max(0.6, 0.10 * measured_saving);
    EXPECT_LE(std::abs(predicted_saving - measured_saving), band)
        << fmt::format("{}: saving predicted {:.2f} GiB, measured {:.2f} GiB", p.variant->name, predicted_saving,
                       measured_saving);
    ++n;
  }
  EXPECT_EQ(n, 11);
  EXPECT_LE(test::median(errors), 3.0);
}

// Step time of the held-out Liger runs (median within 12 %, each within 25 %; 10.2 % and 24.2 % at
// this writing: the host's time per chunk differs between runs more than one constant says,
// 0.1 to 1.7 ms of idle GPU per chunk in the profiles), and the direction
// of the change against the eager twin where the measured change is beyond the runs' noise (5 %):
// faster where the fused kernels win, slower where the fused loss's chunk loop costs more than it
// saves.
TEST(LigerRuns, HeldOutStepTimesAndTheDirectionOfTheChange) {
  std::vector<double> errors;
  for (const test::Twins& p : pairs()) {
    const double ml = test::metric_value(*p.variant, Metric::step_time, false);
    const double pl = test::metric_value(*p.variant, Metric::step_time, true);
    if (p.variant->fitted_by.empty()) {
      errors.push_back(std::abs(pl / ml - 1.0) * 100.0);
      EXPECT_LE(errors.back(), 25.0) << p.variant->name << fmt::format(": predicted {:.3f} s, measured {:.3f} s", pl, ml);
    }
    const double measured_change = ml / test::metric_value(*p.eager, Metric::step_time, false) - 1.0;
    const double predicted_change = pl / test::metric_value(*p.eager, Metric::step_time, true) - 1.0;
    if (std::abs(measured_change) > 0.05) {
      EXPECT_GT(measured_change * predicted_change, 0.0)
          << fmt::format("{}: Liger's change measured {:+.1f} %, predicted {:+.1f} %", p.variant->name,
                         100.0 * measured_change, 100.0 * predicted_change);
    }
  }
  EXPECT_EQ(errors.size(), 8u);
  EXPECT_LE(test::median(errors), 12.0);
}

}  // namespace
}  // namespace trainplan
