// fit_profile: grouping, checks and the sections it fills.

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>

#include "trainplan/calibration/profile_fit.hpp"
#include "trainplan/core/error.hpp"

namespace trainplan::calibration {
namespace {

using hardware::Collective;
using hardware::LinkScope;

CollectiveMeasurement point(Collective c, LinkScope scope, int ranks, int nodes, double bytes,
                            double alpha_us, double busbw_GBps) {
  CollectiveMeasurement m;
  m.collective = c;
  m.scope = scope;
  m.ranks = ranks;
  m.nodes = nodes;
  m.dtype = "float";
  m.bytes = Bytes(bytes);
  m.time = Seconds(alpha_us * 1e-6 + hardware::bus_factor(c, ranks) * bytes / (busbw_GBps * 1e9));
  m.algbw = m.bytes / m.time;
  m.busbw = m.algbw * hardware::bus_factor(c, ranks);
  return m;
}

calibration::Run sweep(const std::string& name, Collective c, LinkScope scope, int ranks, int nodes,
                     int sizes) {
  calibration::Run r;
  r.name = name;
  double s = 1024;
  for (int i = 0; i < sizes; ++i, s *= 4)
    r.measurements.collectives.push_back(point(c, scope, ranks, nodes, s, 20, 100));
  return r;
}

std::string error_of(const std::vector<calibration::Run>& runs, const ProfileFitOptions& opt = {}) {
  try {
    (void)fit_profile(runs, opt);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ProfileFit, FitsCurvesAndMergesRepeats) {
  calibration::Run a = sweep("run-a", Collective::all_reduce, LinkScope::intra_node, 8, 1, 8);
  calibration::Run b = sweep("run-b", Collective::all_reduce, LinkScope::intra_node, 8, 1, 8);
  a.provenance.gpu = "NVIDIA H100 80GB HBM3";
  a.provenance.ranks = 8;
  b.provenance.date = "2026-02-01";
  a.provenance.date = "2026-01-01";
  // A wrong row is not fitted but counted.
  CollectiveMeasurement bad =
      point(Collective::all_reduce, LinkScope::intra_node, 8, 1, 2048, 900, 1);
  bad.valid = false;
  b.measurements.collectives.push_back(bad);
  ProfileFitOptions opt;
  opt.name = "pod";
  const ProfileFit fit = fit_profile(std::vector<calibration::Run>{a, b}, opt);
  ASSERT_EQ(fit.profile.collectives.size(), 1u);
  const hardware::CollectiveCurve& c = fit.profile.collectives[0];
  EXPECT_EQ(c.points.size(), 8u);  // the same sizes twice merge
  EXPECT_NEAR(c.alpha.value(), 20e-6, 1e-12);
  EXPECT_NEAR(to_gbps(c.busbw), 100.0, 1e-6);
  EXPECT_EQ(fit.curves[0].invalid, 1);
  EXPECT_EQ(fit.profile.name, "pod");
  EXPECT_EQ(fit.profile.gpu, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(fit.profile.provenance.date, "2026-02-01");
  EXPECT_EQ(fit.profile.provenance.sources, (std::vector<std::string>{"run-a", "run-b"}));
}

TEST(ProfileFit, TooFewPointsNamesTheCurveAndCount) {
  const std::string msg =
      error_of({sweep("gb10", Collective::all_gather, LinkScope::inter_node, 2, 2, 2)});
  EXPECT_NE(msg.find("all_gather over 2 ranks on 2 nodes"), std::string::npos) << msg;
  EXPECT_NE(msg.find("2 valid sizes"), std::string::npos) << msg;
  EXPECT_NE(msg.find("at least 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'gb10'"), std::string::npos) << msg;
}

TEST(ProfileFit, MismatchedWorldSizesAreAnError) {
  const std::string msg =
      error_of({sweep("pod-a", Collective::all_reduce, LinkScope::world, 16, 2, 6),
                sweep("pod-b", Collective::all_gather, LinkScope::world, 32, 4, 6)});
  EXPECT_NE(msg.find("'pod-a' and 'pod-b'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("16 ranks on 2 nodes vs 32 ranks on 4 nodes"), std::string::npos) << msg;
  // A run whose provenance says another world size than its world rows.
  calibration::Run r = sweep("pod-c", Collective::all_reduce, LinkScope::world, 16, 2, 6);
  r.provenance.ranks = 8;
  EXPECT_NE(error_of({r}).find("pod-c"), std::string::npos);
  // Different sizes at intra/inter scope are fine: that is how scaling is measured.
  EXPECT_EQ(error_of({sweep("x", Collective::all_reduce, LinkScope::inter_node, 16, 2, 6),
                      sweep("y", Collective::all_reduce, LinkScope::inter_node, 32, 4, 6)}),
            "");
}

TEST(ProfileFit, NoMeasurements) {
  calibration::Run empty;
  empty.name = "nothing-here";
  const std::string msg = error_of({empty});
  EXPECT_NE(msg.find("no measurements"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'nothing-here'"), std::string::npos) << msg;
  EXPECT_NE(error_of({}).find("no calibration runs"), std::string::npos);
}

TEST(ProfileFit, GemmAttentionMemoryAndAdam) {
  calibration::Run r;
  r.name = "gpu";
  for (std::int64_t s : {512, 1024, 4096, 8192}) {
    GemmMeasurement g;
    g.dtype = hardware::GemmDtype::bf16;
    g.m = g.n = g.k = s;
    const double eta = 0.8 * hardware::tile_efficiency(s, s, 128, 128) *
                       hardware::wave_efficiency(s, s, 128, 128, 132) * static_cast<double>(s) /
                       (static_cast<double>(s) + 128.0);
    g.rate = tflops(989 * eta);
    r.measurements.gemms.push_back(g);
  }
  for (std::int64_t s : {1024, 2048, 4096, 8192}) {
    AttentionMeasurement a;
    a.pass = AttentionPass::fwd;
    a.dtype = "bf16";
    a.seq = s;
    a.rate = tflops(989 * 0.7 * static_cast<double>(s) / (static_cast<double>(s) + 1000.0));
    r.measurements.attention.push_back(a);
  }
  for (double b : {1e8, 1e9, 4e9}) {
    BandwidthMeasurement m;
    m.direction = CopyDirection::d2d;
    m.bytes = Bytes(b);
    m.rate = gbps(b < 1e9 ? 2000 : 2800);
    r.measurements.bandwidth.push_back(m);
  }
  CpuAdamMeasurement adam;
  adam.params_per_s = 1.2e9;
  r.measurements.cpu_adam.push_back(adam);

  // Without a peak, the GEMM fit cannot start.
  EXPECT_NE(error_of({r}).find("no peak bf16"), std::string::npos);
  ProfileFitOptions opt;
  opt.peaks = {{hardware::GemmDtype::bf16, tflops(989)}};
  opt.sm_count = 132;
  const ProfileFit fit = fit_profile(std::vector<calibration::Run>{r}, opt);
  ASSERT_EQ(fit.profile.gemm.size(), 1u);
  const hardware::GemmModel& g = fit.profile.gemm[0];
  EXPECT_TRUE(g.roofline());
  EXPECT_EQ(g.fit.points, 4);
  EXPECT_EQ(g.leave_one_out.points, 4);
  // The profile answers each measured shape with its measured rate.
  for (const GemmMeasurement& m : r.measurements.gemms) {
    EXPECT_NEAR(*fit.profile.gemm_efficiency(m.m, m.n, m.k, "bf16", 0) * 989e12, m.rate.value(),
                1e-9 * m.rate.value());
  }
  EXPECT_LT(g.fit.max_rel_err, 1e-9);
  EXPECT_LT(g.model_fit.median_rel_err, 0.2);
  ASSERT_TRUE(fit.profile.attention_fwd.has_value());
  EXPECT_NEAR(fit.profile.attention_fwd->efficiency, 0.7, 1e-6);
  EXPECT_NEAR(fit.profile.attention_fwd->seq_half, 1000.0, 1e-3);
  EXPECT_FALSE(fit.profile.attention_bwd.has_value());
  EXPECT_NEAR(to_gbps(*fit.profile.memory.hbm), 2800.0, 1e-9);
  EXPECT_FALSE(fit.profile.memory.h2d.has_value());
  EXPECT_DOUBLE_EQ(*fit.profile.cpu_adam_params_per_s, 1.2e9);
  EXPECT_EQ(fit.profile.gpu, "unknown");
  EXPECT_FALSE(fit.notes.empty());

  // A peak typed in PFLOP/s (0.989 for 989), or one the measurements beat, is refused by name:
  // the profile would otherwise claim efficiencies above 1.
  ProfileFitOptions pflops = opt;
  pflops.peaks = {{hardware::GemmDtype::bf16, tflops(0.989)}};
  try {
    (void)fit_profile(std::vector<calibration::Run>{r}, pflops);
    ADD_FAILURE() << "a peak of 0.989 TFLOP/s was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("outside what a GPU has"), std::string::npos) << e.what();
  }
  ProfileFitOptions low = opt;
  low.peaks = {{hardware::GemmDtype::bf16, tflops(300)}};  // the 8192^3 point ran at ~700
  try {
    (void)fit_profile(std::vector<calibration::Run>{r}, low);
    ADD_FAILURE() << "measurements above the stated peak were accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("above the stated peak 300"), std::string::npos) << e.what();
  }
}

TEST(ProfileFit, AttentionWithoutCudnnKeepsTheProxyLabelled) {
  calibration::Run r;
  r.name = "old-run";
  for (const AttentionPass pass : {AttentionPass::fwd, AttentionPass::bwd}) {
    for (std::int64_t s : {1024, 4096, 16384}) {
      AttentionMeasurement a;
      a.pass = pass;
      a.impl = pass == AttentionPass::fwd ? AttentionImpl::cudnn : AttentionImpl::unfused;
      a.dtype = "bf16";
      a.head_dim = 128;
      a.seq = s;
      a.rate = tflops(pass == AttentionPass::fwd ? 600 : 130);
      r.measurements.attention.push_back(a);
    }
  }
  SkippedPoint skipped;
  skipped.kind = "attention";
  skipped.reason = "cuDNN refused: CUDNN_STATUS_BAD_PARAM";
  AttentionMeasurement shape;
  shape.pass = AttentionPass::bwd;
  shape.impl = AttentionImpl::cudnn;
  shape.seq = 4096;
  skipped.attention = shape;
  skipped.fallback_kind = "attention";
  shape.impl = AttentionImpl::unfused;
  skipped.fallback_attention = shape;
  r.measurements.skipped = {skipped, skipped};
  ProfileFitOptions opt;
  opt.peaks = {{hardware::GemmDtype::bf16, tflops(989)}};
  const ProfileFit fit = fit_profile(std::vector<calibration::Run>{r}, opt);
  ASSERT_TRUE(fit.profile.attention_bwd.has_value());
  EXPECT_EQ(fit.profile.attention_bwd->kernel, hardware::AttentionKernel::unfused);
  EXPECT_FALSE(fit.profile.attention_efficiency(true, 4096).has_value());
  EXPECT_TRUE(fit.profile.attention_efficiency(false, 4096).has_value());
  ASSERT_EQ(fit.skipped.size(), 1u);
  EXPECT_EQ(fit.skipped[0].count, 2);
  EXPECT_EQ(fit.skipped[0].family, "attention bwd cudnn");
  EXPECT_EQ(fit.skipped[0].fallback, "attention unfused");
  bool said = false;
  for (const std::string& note : fit.notes) {
    if (note.find("attention bwd: no cuDNN point") != std::string::npos &&
        note.find("2 cuDNN points skipped") != std::string::npos &&
        note.find("unfused") != std::string::npos) {
      said = true;
    }
  }
  EXPECT_TRUE(said);
  bool reported = false;
  for (const FamilyReport& f : fit.families) {
    if (f.family == "attention bwd") {
      reported = true;
      EXPECT_FALSE(f.used);
      EXPECT_EQ(f.source, "unfused proxy");
    }
  }
  EXPECT_TRUE(reported);
}

TEST(ProfileFit, OptimizerElementwiseAndLaunch) {
  calibration::Run r;
  r.name = "kernels";
  for (const auto& [states, params, rate] :
       {std::tuple{ElementDtype::fp32, 1e8, 3800.0}, std::tuple{ElementDtype::fp32, 1e9, 3970.0},
        std::tuple{ElementDtype::bf16, 1e8, 3250.0}, std::tuple{ElementDtype::bf16, 1e9, 4000.0}}) {
    OptimizerMeasurement o;
    o.state_dtype = states;
    o.params = static_cast<std::int64_t>(params);
    o.bytes = Bytes(params * (states == ElementDtype::fp32 ? 26.0 : 14.0));
    o.rate = gbps(rate);
    o.time = o.bytes / o.rate;
    r.measurements.optimizer.push_back(o);
  }
  // The 16 MiB points are served by L2 and run faster than HBM: left out.
  for (const auto& [op, bytes, rate] : {std::tuple{ElementwiseOp::copy, 16777216.0, 9000.0},
                                        std::tuple{ElementwiseOp::copy, 1073741824.0, 3600.0},
                                        std::tuple{ElementwiseOp::add, 1610612736.0, 4200.0},
                                        std::tuple{ElementwiseOp::rmsnorm, 268443648.0, 2900.0},
                                        std::tuple{ElementwiseOp::rmsnorm, 1073750016.0, 3100.0}}) {
    ElementwiseMeasurement e;
    e.op = op;
    e.bytes = Bytes(bytes);
    e.rate = gbps(rate);
    e.time = e.bytes / e.rate;
    r.measurements.elementwise.push_back(e);
  }
  for (const auto& [op, size, us] :
       {std::tuple{LaunchOp::empty_kernel, 0, 4.4}, std::tuple{LaunchOp::gemm, 1024, 8.9},
        std::tuple{LaunchOp::gemm, 64, 8.6}}) {
    LaunchMeasurement l;
    l.op = op;
    l.m = l.n = l.k = size;
    l.launches = 1000;
    l.time = Seconds(us * 1e-6);
    r.measurements.launch.push_back(l);
  }
  const ProfileFit fit = fit_profile(std::vector<calibration::Run>{r}, {});
  const hardware::HardwareProfile& p = fit.profile;
  // Sizes at least 1/8 of the largest: the 1e9-parameter steps.
  EXPECT_NEAR(to_gbps(*p.optimizer_bandwidth(true)), 3970.0, 1e-9);
  EXPECT_NEAR(to_gbps(*p.optimizer_bandwidth(false)), 4000.0, 1e-9);
  // Median of 3600, 4200, 2900, 3100.
  EXPECT_NEAR(to_gbps(*p.elementwise_bandwidth()), 3350.0, 1e-9);
  ASSERT_EQ(p.kernels.elementwise_by_op.size(), 3u);
  EXPECT_EQ(p.kernels.elementwise_by_op[2].first, "rmsnorm");
  EXPECT_NEAR(to_gbps(p.kernels.elementwise_by_op[2].second), 3000.0, 1e-9);
  EXPECT_NEAR(p.launch_overhead()->value(), 4.4e-6, 1e-18);
  EXPECT_NEAR(p.gemm_launch_overhead()->value(), 8.6e-6, 1e-18);
  EXPECT_EQ(p.launch.small_gemm_size, 64);
  bool l2_note = false;
  for (const std::string& n : fit.notes) l2_note |= n.find("L2") != std::string::npos;
  EXPECT_TRUE(l2_note);
}

TEST(MergeProvenance, CountsTakeTheLargestStringsJoin) {
  hardware::RunProvenance a;
  a.tool = "nccl-tests";
  a.ranks = 8;
  a.hosts = {"n1"};
  a.sources = {"a.log"};
  a.nccl = "2.18.3";
  hardware::RunProvenance b = a;
  b.tool = "trainplan-calibrate";
  b.ranks = 16;
  b.hosts = {"n1", "n2"};
  b.sources = {"b.log"};
  const hardware::RunProvenance m = merge_provenance(std::vector{a, b, a});
  EXPECT_EQ(m.tool, "nccl-tests+trainplan-calibrate");
  EXPECT_EQ(m.ranks, 16);
  EXPECT_EQ(m.hosts, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_EQ(m.sources, (std::vector<std::string>{"a.log", "b.log"}));
  EXPECT_EQ(m.nccl, "2.18.3");
}

// Nodes of 4 GPUs in NVL72 racks (GB200/GB300: 72 GPUs to a domain, 18 nodes): NCCL takes the
// domain as one node (MNNVL), so curves are keyed by the domains they span, as the planner asks
// for a group inside one (ranks, 1). OCI's published GB300 logs (tests/calibration/data/real/
// multinode) keep two sizes only, too few to fit, so the sweeps here are made up.
TEST(FitProfile, NodesOfOneNvlinkDomainAreOneNcclNode) {
  std::vector<calibration::Run> runs;
  for (const int hosts : {1, 2, 16, 32}) {
    const LinkScope scope = hosts == 1 ? LinkScope::intra_node : LinkScope::inter_node;
    runs.push_back(sweep("n" + std::to_string(hosts), Collective::all_reduce, scope, 4 * hosts, hosts, 6));
  }
  ProfileFitOptions opt;
  opt.name = "nvl72";
  opt.nvlink_domain_gpus = 72;
  const ProfileFit fit = fit_profile(runs, opt);
  std::vector<std::tuple<int, int, int>> keys;  // ranks, NCCL's nodes, hosts
  for (const CurveReport& c : fit.curves) keys.emplace_back(c.ranks, c.nodes, c.hosts);
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(keys, (std::vector<std::tuple<int, int, int>>{{4, 1, 1}, {8, 1, 2}, {64, 1, 16}, {128, 2, 32}}));
  EXPECT_NE(fit.profile.find_curve(Collective::all_reduce, 64, 1), nullptr);
  EXPECT_NE(fit.profile.find_model(Collective::all_reduce, LinkScope::intra_node), nullptr);
  // Without the domain the nodes are the hosts.
  opt.nvlink_domain_gpus = 0;
  EXPECT_NE(fit_profile(runs, opt).profile.find_curve(Collective::all_reduce, 64, 16), nullptr);
}

// Curves are kept per data type under nccl-tests' names (trainplan-calibrate's "bf16" is
// nccl-tests' "bfloat16"), and a query for a dtype the profile measured answers from its curves.
TEST(FitProfile, CurvesPerDataTypeUnderNcclTestsNames) {
  calibration::Run fp32 = sweep("fp32", Collective::all_reduce, LinkScope::intra_node, 8, 1, 6);
  calibration::Run bf16 = fp32;
  bf16.name = "bf16";
  for (CollectiveMeasurement& m : bf16.measurements.collectives) {
    m.dtype = "bf16";
    m.time = m.time * 2.0;
  }
  ProfileFitOptions opt;
  opt.name = "dtypes";
  const ProfileFit fit = fit_profile(std::vector<calibration::Run>{fp32, bf16}, opt);
  ASSERT_EQ(fit.curves.size(), 2u);
  EXPECT_EQ(fit.profile.collective_models.size(), 2u);
  const Bytes b(1024.0 * 16);
  const auto f = fit.profile.collective_time(Collective::all_reduce, 8, 1, b, "float");
  const auto h = fit.profile.collective_time(Collective::all_reduce, 8, 1, b, "bfloat16");
  ASSERT_TRUE(f && h);
  EXPECT_NEAR(h->value() / f->value(), 2.0, 1e-9);
  EXPECT_NE(fit.profile.find_model(Collective::all_reduce, LinkScope::intra_node, "bfloat16"), nullptr);
}

}  // namespace
}  // namespace trainplan::calibration
