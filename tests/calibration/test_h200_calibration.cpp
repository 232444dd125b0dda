// The real H200 runs (data/measurements/h200-2026-11-26*, one NVIDIA H200) through
// `calibrate fit`, and the profile committed from them (data/profiles/h200.json): the GEMM fit
// honours its points, and every fitted value sits where the H200 datasheet allows.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "../common/catalog.hpp"
#include "trainplan/calibration/profile_fit.hpp"
#include "trainplan/request/catalog.hpp"
#include "trainplan/request/measurements.hpp"
#include "trainplan/request/profile_json.hpp"

namespace trainplan::calibration {
namespace {

namespace fs = std::filesystem;

fs::path data(const std::string& relative) { return fs::path(TRAINPLAN_DATA_DIR) / relative; }

// Dense datasheet values of the H200 (data/gpus/H200.json): what every bound below refers to.
constexpr double kBf16PeakTflops = 989.0;
constexpr double kHbmGBps = 4800.0;

ProfileFitOptions h200_options() {
  const hardware::GpuSpec spec = test::catalog().resolve_gpu("H200").spec;
  ProfileFitOptions o;
  o.name = "h200";
  o.gpu = spec.name;
  o.peaks = {{hardware::GemmDtype::bf16, tflops(spec.peak.bf16)},
             {hardware::GemmDtype::fp16, tflops(spec.peak.fp16)},
             {hardware::GemmDtype::tf32, tflops(spec.peak.tf32)},
             {hardware::GemmDtype::fp8, tflops(spec.peak.fp8)}};
  o.sm_count = spec.sm_count;
  o.hbm = spec.hbm_bandwidth;
  return o;
}

// Issue 11's bar for the shared calibrate-full run: GEMM median error <= 3 %, max <= 15 %, on
// its own points. Leave-one-out is printed beside it, so that the number is honest: at 4096^3 the
// run measured bf16 twice, 785 and 653 TFLOP/s (the square sweep ran at lower clocks than the
// layer shapes), so no fit can predict either from the other better than 20 %.
TEST(H200Calibration, GemmFitHonoursTheFullRun) {
  const calibration::Run run = request::read_run_dir(data("measurements/h200-2026-11-26/calibrate-full"));
  const ProfileFit fit = fit_profile(std::vector<calibration::Run>{run}, h200_options());
  ASSERT_EQ(fit.profile.gemm.size(), 4u);
  for (const hardware::GemmModel& g : fit.profile.gemm) {
    SCOPED_TRACE(std::string(to_string(g.dtype)));
    EXPECT_EQ(g.fit.points, 17);
    EXPECT_LE(g.fit.median_rel_err, 0.03);
    EXPECT_LE(g.fit.max_rel_err, 0.15);
    ASSERT_EQ(g.leave_one_out.points, 17);
    // Guards against a regression, not the bar: held-out errors as measured when the fit was
    // written, with room.
    EXPECT_LE(g.leave_one_out.median_rel_err, 0.12);
    EXPECT_LE(g.leave_one_out.max_rel_err, 0.35);
    std::cout << "GEMM " << to_string(g.dtype) << ": in-sample median "
              << 100 * g.fit.median_rel_err << " %, max " << 100 * g.fit.max_rel_err
              << " %; model alone median " << 100 * g.model_fit.median_rel_err << " %, max "
              << 100 * g.model_fit.max_rel_err << " %; leave-one-out median "
              << 100 * g.leave_one_out.median_rel_err << " %, max "
              << 100 * g.leave_one_out.max_rel_err << " %\n";
  }
  // The first runs have no cuDNN backward point: the fit says so and keeps the proxy apart.
  ASSERT_TRUE(fit.profile.attention_bwd.has_value());
  EXPECT_EQ(fit.profile.attention_bwd->kernel, hardware::AttentionKernel::unfused);
  EXPECT_FALSE(fit.profile.attention_efficiency(true, 4096).has_value());
  bool said = false;
  for (const std::string& note : fit.notes) {
    said |= note.find("attention bwd: no cuDNN point") != std::string::npos;
  }
  EXPECT_TRUE(said);
}

// The new run measured the cuDNN backward and causal passes: nothing skipped, every family fused.
TEST(H200Calibration, SecondRunFitsCudnnBackwardAndCausal) {
  const fs::path dir = data("measurements/h200-2026-11-26-calibrate-v2");
  const std::vector<calibration::Run> runs{request::read_run_dir(dir / "attention"),
                                         request::read_run_dir(dir / "kernels")};
  const ProfileFit fit = fit_profile(runs, h200_options());
  EXPECT_TRUE(fit.skipped.empty());
  for (const auto* a : {&fit.profile.attention_fwd, &fit.profile.attention_bwd,
                        &fit.profile.attention_fwd_causal, &fit.profile.attention_bwd_causal}) {
    ASSERT_TRUE(a->has_value());
    EXPECT_EQ((*a)->kernel, hardware::AttentionKernel::fused);
    EXPECT_EQ((*a)->points.size(), 15u);
  }
  for (const FamilyReport& f : fit.families) {
    std::cout << f.family << " (" << f.source << "): " << f.points << " points, model median "
              << 100 * f.model.median_rel_err << " %, max " << 100 * f.model.max_rel_err << " %";
    if (f.profile) {
      std::cout << "; profile median " << 100 * f.profile->median_rel_err << " %, max "
                << 100 * f.profile->max_rel_err << " %";
    }
    std::cout << "\n";
  }
}

// A committed profile and the datasheet it must sit under: data/gpus/<gpu>.json dense bf16 peak
// and HBM rate. Both GPUs are the GH100 die at 700 W: 989 TFLOP/s bf16 dense; HBM 4.8 TB/s on the
// H200, 3.35 TB/s on the H100 SXM.
struct CommittedProfile {
  std::string file;
  std::string gpu;         // the catalogue's name
  std::string device;      // in the name the driver reported (provenance)
  double bf16_peak_tflops;
  double hbm_gbps;
  std::vector<std::string> runs;  // the run folders its provenance must name
};

void PrintTo(const CommittedProfile& c, std::ostream* os) { *os << c.file; }

class CommittedProfileIsSane : public ::testing::TestWithParam<CommittedProfile> {};

// Made by `trainplan calibrate fit` from the runs its provenance names (data/profiles/README.md).
TEST_P(CommittedProfileIsSane, WithinTheDatasheet) {
  const CommittedProfile& c = GetParam();
  const double peak = c.bf16_peak_tflops;
  const double hbm = c.hbm_gbps;
  const hardware::HardwareProfile p = request::read_profile(data(c.file));
  EXPECT_EQ(p.gpu, c.gpu);
  ASSERT_TRUE(p.provenance.gpu.has_value());
  EXPECT_NE(p.provenance.gpu->find(c.device), std::string::npos);
  for (const std::string& run : c.runs) {
    bool named = false;
    for (const std::string& s : p.provenance.sources) named |= s.find(run) != std::string::npos;
    EXPECT_TRUE(named) << run;
  }

  // GEMM: below the dense peak, and where cuBLASLt runs Llama-7B layers at 700 W (780-810
  // TFLOP/s measured on both GPUs).
  for (const auto& [m, n, k] : {std::tuple{4096, 4096, 4096}, std::tuple{4096, 11008, 4096},
                                std::tuple{8192, 8192, 8192}, std::tuple{16384, 4096, 4096}}) {
    const double rate = *p.gemm_efficiency(m, n, k, "bf16", 0) * peak;
    EXPECT_GT(rate, 0.6 * peak) << m << " " << n << " " << k;
    EXPECT_LT(rate, peak) << m << " " << n << " " << k;
  }
  // A skinny product is bound by its weight's bytes: at most the HBM rate in FLOPs.
  const double skinny = *p.gemm_efficiency(16, 8192, 8192, "bf16", 0) * peak * 1e12;
  EXPECT_LT(skinny, 2.0 * 16 * hbm * 1e9 / 2.0 * 1.05);
  for (const hardware::GemmModel& g : p.gemm) {
    EXPECT_TRUE(g.roofline());
    EXPECT_GT(g.peak_efficiency, 0.5);
    EXPECT_LT(g.peak_efficiency, 1.0);
    EXPECT_LT(to_gbps(g.read_bandwidth), hbm * 1.05);
    EXPECT_GT(to_gbps(g.read_bandwidth), 0.5 * hbm);
  }

  // Attention: fused (cuDNN) in every pass and mask, between a third and 90 % of the peak.
  for (const bool backward : {false, true}) {
    for (const bool causal : {false, true}) {
      for (const std::int64_t seq : {1024, 4096, 16384}) {
        const std::optional<double> eta = p.attention_efficiency(backward, seq, causal, 128);
        ASSERT_TRUE(eta.has_value());
        EXPECT_GT(*eta, 0.25) << backward << causal << seq;
        EXPECT_LT(*eta, 0.9) << backward << causal << seq;
      }
    }
  }
  // The backward pass from the fused kernel, not the unfused proxy (efficiency 0.135).
  EXPECT_GT(*p.attention_efficiency(true, 4096), 0.4);

  // Streaming kernels: below the datasheet's HBM rate, above 60 % of it.
  for (const std::optional<BytesPerSecond> rate :
       {p.hbm_bandwidth(), p.optimizer_bandwidth(true), p.optimizer_bandwidth(false),
        p.elementwise_bandwidth()}) {
    ASSERT_TRUE(rate.has_value());
    EXPECT_LT(to_gbps(*rate), hbm);
    EXPECT_GT(to_gbps(*rate), 0.6 * hbm);
  }
  ASSERT_TRUE(p.launch_overhead().has_value());
  EXPECT_GT(p.launch_overhead()->value(), 1e-6);
  EXPECT_LT(p.launch_overhead()->value(), 20e-6);
  ASSERT_TRUE(p.gemm_launch_overhead().has_value());
  EXPECT_GT(*p.gemm_launch_overhead(), *p.launch_overhead());
}


INSTANTIATE_TEST_SUITE_P(
    Profiles, CommittedProfileIsSane,
    ::testing::Values(
        CommittedProfile{"profiles/h200.json", "H200", "NVIDIA H200", 989.0, 4800.0,
                         {"h200-2026-11-26/calibrate-full", "h200-2026-11-26/calibrate-quick",
                          "h200-2026-11-26-calibrate-v2/attention",
                          "h200-2026-11-26-calibrate-v2/kernels"}},
        CommittedProfile{"profiles/h100.json", "H100-80GB", "NVIDIA H100 80GB HBM3", 989.0, 3350.0,
                         {"h100-2026-11-28-calibrate/full", "h100-2026-11-28-calibrate/attention",
                          "h100-2026-11-28-calibrate/kernels"}}),
    [](const ::testing::TestParamInfo<CommittedProfile>& i) {
      return i.param.gpu.substr(0, 4);  // H200, H100
    });

// Held out: the H100 run fitted nothing before this profile existed. The H100 SXM and the H200 are
// one die (132 SMs, 989 TFLOP/s bf16 dense at 700 W), so where a GEMM is bound by its arithmetic
// the H200's fitted model answers the H100's measured time; where it is bound by HBM it must not
// (the H100 reads at 3.35 TB/s, not 4.8).
TEST(H200Calibration, ComputeBoundGemmsCarryToTheH100) {
  const hardware::HardwareProfile h200 = request::read_profile(data("profiles/h200.json"));
  const calibration::Run h100 =
      request::read_run_dir(data("measurements/h100-2026-11-28-calibrate/full"));
  std::vector<double> errors;
  for (const calibration::GemmMeasurement& g : h100.measurements.gemms) {
    if (g.dtype != hardware::GemmDtype::bf16 || std::min({g.m, g.n, g.k}) < 2048) continue;
    const double predicted_tflops =
        *h200.gemm_efficiency(g.m, g.n, g.k, "bf16", 132) * kBf16PeakTflops;
    const double measured_tflops = g.rate.value() / 1e12;
    errors.push_back(std::abs(predicted_tflops - measured_tflops) / measured_tflops);
    std::cout << g.label << " " << g.m << "x" << g.n << "x" << g.k << ": H100 measured "
              << measured_tflops << " TFLOP/s, H200 profile " << predicted_tflops << "\n";
  }
  ASSERT_GE(errors.size(), 8u);
  std::sort(errors.begin(), errors.end());
  EXPECT_LE(errors[errors.size() / 2], 0.05);
  EXPECT_LE(errors.back(), 0.12);
}

}  // namespace
}  // namespace trainplan::calibration
