// HardwareProfile queries and the collective formulas of trainplan/hardware/collective.hpp.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "paths.hpp"
#include "trainplan/calibration/profile_fit.hpp"
#include "trainplan/hardware/profile.hpp"
#include "trainplan/request/collective_log.hpp"

namespace trainplan::hardware {
namespace {

struct FactorCase {
  Collective c;
  int n;
  double factor;
};

TEST(BusFactor, NcclTestsDefinitions) {
  // nccl-tests doc/PERFORMANCE.md; the GB10 all_gather row checks it: 45.88 GB/s algbw over 2 ranks
  // printed as 22.94 GB/s busbw.
  const FactorCase cases[] = {
      {Collective::all_reduce, 8, 1.75},      {Collective::all_reduce, 32, 1.9375},
      {Collective::all_reduce, 2, 1.0},       {Collective::all_gather, 2, 0.5},
      {Collective::reduce_scatter, 8, 0.875}, {Collective::all_to_all, 16, 0.9375},
      {Collective::broadcast, 8, 1.0},        {Collective::send_recv, 2, 1.0},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(to_string(c.c)) + " n=" + std::to_string(c.n));
    EXPECT_DOUBLE_EQ(bus_factor(c.c, c.n), c.factor);
  }
  EXPECT_NEAR(45.88 * bus_factor(Collective::all_gather, 2), 22.94, 1e-12);
}

TEST(CollectiveFormulas, RingAndTree) {
  // Ring all-reduce, 8 ranks, 1 us per hop, 100 GB/s: 14 us + 1.75 * 1 GB / 100 GB/s.
  EXPECT_NEAR(ring_time(Collective::all_reduce, 8, Bytes(1e9), Seconds(1e-6), gbps(100)).value(),
              14e-6 + 0.0175, 1e-15);
  EXPECT_NEAR(ring_time(Collective::all_gather, 4, Bytes(4e9), Seconds(2e-6), gbps(100)).value(),
              6e-6 + 0.03, 1e-15);
  EXPECT_DOUBLE_EQ(ring_time(Collective::all_reduce, 1, Bytes(1e9), Seconds(1e-6), gbps(1)).value(),
                   0.0);
  EXPECT_NEAR(tree_all_reduce_time(16, Bytes(1e9), Seconds(5e-6), gbps(100)).value(), 40e-6 + 0.01,
              1e-15);
  EXPECT_EQ(ring_steps(Collective::all_reduce, 8), 14);
  EXPECT_EQ(ring_inter_node_steps(Collective::all_reduce, 2), 2);
  EXPECT_EQ(ring_inter_node_steps(Collective::reduce_scatter, 4), 3);
  // NCCL's ring latency: 8.4 + 14 * 3.4 us on one node; two of the 30 steps of 16 ranks cross
  // nodes.
  const RingLatency lat;
  EXPECT_NEAR(ring_latency(lat, Collective::all_reduce, 8, 1).value(), 56e-6, 1e-12);
  EXPECT_NEAR(ring_latency(lat, Collective::all_reduce, 16, 2).value(),
              8.4e-6 + 28 * 3.4e-6 + 2 * 14e-6, 1e-12);
  EXPECT_EQ(parse_enum<Collective>("all_to_all"), Collective::all_to_all);
  EXPECT_EQ(to_string(LinkScope::inter_node), "inter_node");
}

HardwareProfile a100_profile() {
  const request::CollectiveLog log =
      request::read_collective_log(test::fixture("real_all_reduce_perf_fmt2.13_1proc_8xA100.txt"));
  calibration::Run run;
  run.name = "a100";
  run.measurements.collectives = request::to_measurements(log);
  calibration::ProfileFitOptions opt;
  opt.name = "a100";
  return calibration::fit_profile(std::span<const calibration::Run>(&run, 1), opt).profile;
}

TEST(CollectiveTime, EqualsTheMeasuredPointsAtMeasuredSizes) {
  const HardwareProfile p = a100_profile();
  const request::CollectiveLog log =
      request::read_collective_log(test::fixture("real_all_reduce_perf_fmt2.13_1proc_8xA100.txt"));
  for (const request::LogRow& row : log.blocks.front().rows) {
    SCOPED_TRACE(row.bytes);
    const auto t =
        p.collective_time(Collective::all_reduce, 8, 1, Bytes(static_cast<double>(row.bytes)));
    ASSERT_TRUE(t.has_value());
    EXPECT_DOUBLE_EQ(t->value(), row.out_of_place->time_us * 1e-6);
  }
}

TEST(CollectiveTime, InterpolatesBetweenAndExtrapolatesBeyond) {
  const HardwareProfile p = a100_profile();
  const auto at = [&](double bytes) {
    return p.collective_time(Collective::all_reduce, 8, 1, Bytes(bytes))->value();
  };
  // Log-log: halfway in log size between 64 MiB (695.5 us) and 128 MiB (1305.0 us).
  EXPECT_NEAR(at(std::sqrt(67108864.0 * 134217728.0)), std::sqrt(695.5e-6 * 1305.0e-6), 1e-12);
  // Monotone where the measurements are (from 4 KiB up), continuous at the ends.
  double previous = 0.0;
  for (double s = 4096; s <= 64.0 * kGiB; s *= 1.37) {
    const double t = at(s);
    EXPECT_GE(t, previous) << s;
    previous = t;
  }
  EXPECT_NEAR(at(4294967296.0 * (1 + 1e-9)), 32336e-6, 1e-9);
  EXPECT_GT(at(8.0 * kGiB), 32336e-6);
  EXPECT_NEAR(at(8.0 * kGiB) - 32336e-6,
              1.75 * 4.0 * kGiB / p.collectives[0].regimes.back().busbw.value(), 1e-9);
  EXPECT_LE(at(1.0), 40.12e-6);
  EXPECT_GT(at(1.0), 30e-6);
}

// NCCL's own latencies (src/graph/tuning.cc defaults, worked by hand): with a bandwidth so high
// that bytes cost nothing, a 4-byte all_reduce over 16 ranks on 2 nodes is the tree with LL,
// 6.8 + 2 (7 x 0.6 + 1 x 5.0) = 25.2 us (the ring with LL: 6.6 + 28 x 0.6 + 2 x 2.7 = 28.8 us);
// over 128 ranks on 16 nodes 6.8 + 2 (7 x 0.6 + 4 x 5.0) = 55.2 us; on one node of 8 the ring
// with LL, 6.6 + 14 x 0.6 = 15.0 us, beats the tree's 6.8 + 2 x 7 x 0.6 = 15.2 us.
TEST(NcclModel, LatencyOfNcclsOwnConstants) {
  CollectiveModel m;
  m.busbw = gbps(1e9);
  m.ll_bandwidth = gbps(1e9);
  const NcclChoice two = nccl_choice(m, 16, 2, Bytes(4));
  EXPECT_EQ(choice_text(two), "tree/LL");
  EXPECT_NEAR(two.time.value(), 25.2e-6, 1e-9);
  EXPECT_NEAR(nccl_choice(m, 128, 16, Bytes(4)).time.value(), 55.2e-6, 1e-9);
  const NcclChoice one = nccl_choice(m, 8, 1, Bytes(4));
  EXPECT_EQ(choice_text(one), "ring/LL");
  EXPECT_NEAR(one.time.value(), 15.0e-6, 1e-9);
  // all_gather has no tree: the ring with LL, 6.6 + 7 x 0.6 us on one node.
  m.collective = Collective::all_gather;
  EXPECT_NEAR(nccl_choice(m, 8, 1, Bytes(4)).time.value(), 10.8e-6, 1e-9);
}

// Large messages go to the ring with Simple at the bus bandwidth: 1 GiB over 8 ranks at
// 100 GB/s is 8.4 + 14 x 3.4 us + 1.75 GiB / 100 GB/s (the tree's 0.92 of it at half the algorithm
// bandwidth is slower, the LL protocols are capped).
TEST(NcclModel, LargeMessagesTakeTheRingWithSimple) {
  CollectiveModel m;
  m.busbw = gbps(100);
  m.ll_bandwidth = gbps(10);
  const NcclChoice c = nccl_choice(m, 8, 1, Bytes(kGiB));
  EXPECT_EQ(choice_text(c), "ring/Simple");
  EXPECT_NEAR(c.time.value(), 56e-6 + 1.75 * kGiB / 100e9, 1e-12);
}

TEST(CollectiveTime, OtherRankCountsFromTheScopesModel) {
  HardwareProfile p = a100_profile();
  p.collective_models = calibration::fit_collective_models(p.collectives);
  ASSERT_EQ(p.collective_models.size(), 1u);
  EXPECT_EQ(p.collective_models[0].scope, LinkScope::intra_node);
  const auto t4 = p.collective_time(Collective::all_reduce, 4, 1, Bytes(kGiB));
  const auto t8 = p.collective_time(Collective::all_reduce, 8, 1, Bytes(kGiB));
  ASSERT_TRUE(t4 && t8);
  EXPECT_LT(*t4, *t8);
  // No inter-node curve: the profile cannot say; another collective neither.
  EXPECT_FALSE(p.collective_time(Collective::all_reduce, 16, 2, Bytes(kGiB)).has_value());
  EXPECT_FALSE(p.collective_time(Collective::all_gather, 8, 1, Bytes(kGiB)).has_value());
  EXPECT_DOUBLE_EQ(p.collective_time(Collective::all_gather, 1, 1, Bytes(kGiB))->value(), 0.0);
  EXPECT_NE(p.find_curve(Collective::all_reduce, 8, 1), nullptr);
  EXPECT_EQ(p.find_curve(Collective::all_reduce, 4, 1), nullptr);
}

// Between measured node counts the curves' departure from the model is interpolated in log2 of
// the node count; beyond them the nearest one's is kept; a measured curve answers itself.
TEST(CollectiveTime, DepartureCarriedBetweenNodeCounts) {
  HardwareProfile p;
  CollectiveModel m;
  m.scope = LinkScope::inter_node;
  m.busbw = gbps(50);
  m.ll_bandwidth = gbps(5);
  p.collective_models = {m};
  const auto curve = [&](int nodes, double departure) {
    CollectiveCurve c;
    c.scope = LinkScope::inter_node;
    c.ranks = 8 * nodes;
    c.nodes = nodes;
    for (const double b : {1e3, 1e6, 1e9})
      c.points.push_back({Bytes(b), nccl_choice(m, c.ranks, nodes, Bytes(b)).time * departure});
    return c;
  };
  p.collectives = {curve(2, 1.2), curve(8, 0.9)};
  const auto at = [&](int nodes) {
    const Bytes b(1e6);
    return p.collective_time(Collective::all_reduce, 8 * nodes, nodes, b)->value() /
           nccl_choice(m, 8 * nodes, nodes, b).time.value();
  };
  EXPECT_NEAR(at(2), 1.2, 1e-9);
  EXPECT_NEAR(at(4), std::sqrt(1.2 * 0.9), 1e-9);
  EXPECT_NEAR(at(32), 0.9, 1e-9);
  // One node is another scope: no model there.
  EXPECT_FALSE(p.collective_time(Collective::all_reduce, 8, 1, Bytes(1e6)).has_value());
}

TEST(GemmEfficiency, ModelAndAbsence) {
  HardwareProfile p;
  EXPECT_FALSE(p.gemm_efficiency(4096, 4096, 4096, "bf16", 132).has_value());
  EXPECT_TRUE(p.empty());
  GemmModel g;
  g.dtype = GemmDtype::bf16;
  g.peak_efficiency = 0.8;
  g.k0 = 128;
  g.sm_count = 132;
  p.gemm.push_back(g);
  // 4096 x 4096 in 128 x 128 tiles: 1024 tiles on 132 SMs = 8 waves (1056 slots).
  const double expected = 0.8 * 1.0 * (1024.0 / 1056.0) * 4096.0 / (4096.0 + 128.0);
  EXPECT_NEAR(*p.gemm_efficiency(4096, 4096, 4096, "bf16", 0), expected, 1e-15);
  // 108 SMs (A100): 1024 tiles in 10 waves of 108.
  EXPECT_NEAR(*p.gemm_efficiency(4096, 4096, 4096, "bf16", 108),
              0.8 * (1024.0 / 1080.0) * 4096.0 / (4096.0 + 128.0), 1e-15);
  // Tile quantization: 4097 rows pad to 33 tiles.
  EXPECT_NEAR(tile_efficiency(4097, 128, 128, 128), 4097.0 / (33.0 * 128.0), 1e-15);
  EXPECT_FALSE(p.gemm_efficiency(4096, 4096, 4096, "fp8", 132).has_value());
  EXPECT_FALSE(p.gemm_efficiency(4096, 4096, 4096, "bogus", 132).has_value());
}

// A roofline model: t = overhead + (C^p + B^p)^(1/p).
GemmModel roofline_bf16() {
  GemmModel g;
  g.dtype = GemmDtype::bf16;
  g.peak = FlopsPerSecond(1000e12);
  g.peak_efficiency = 0.8;
  g.k0 = 100;
  g.sm_count = 132;
  g.overhead = Seconds(2e-6);
  g.read_bandwidth = gbps(4000);
  g.write_bandwidth = gbps(3000);
  g.smoothness = 3;
  g.a_bytes = 2;
  g.c_bytes = 2;
  return g;
}

TEST(GemmEfficiency, RooflineForm) {
  const GemmModel g = roofline_bf16();
  // 8192^3: 4096 tiles of 128 x 128 in 32 waves of 132 (4224 slots).
  const double flops = 2.0 * 8192.0 * 8192.0 * 8192.0;
  const double compute = flops / (1000e12 * 0.8 * (4096.0 / 4224.0) * 8192.0 / 8292.0);
  const double memory = 2.0 * 8192.0 * 8192.0 * 2.0 / 4000e9 + 8192.0 * 8192.0 * 2.0 / 3000e9;
  const double expected = 2e-6 + std::cbrt(compute * compute * compute + memory * memory * memory);
  EXPECT_NEAR(gemm_model_time(g, 8192, 8192, 8192, 0).value(), expected, 1e-15);
  EXPECT_NEAR(gemm_model_efficiency(g, 8192, 8192, 8192, 0), flops / (1000e12 * expected), 1e-12);
  // A skinny product is bound by reading its weight: 8192 x 8192 bf16 at 4 TB/s.
  const double skinny = gemm_model_time(g, 16, 8192, 8192, 0).value();
  EXPECT_GT(skinny, 8192.0 * 8192.0 * 2.0 / 4000e9);
  EXPECT_LT(skinny, 1.2 * (2e-6 + 8192.0 * 8192.0 * 2.0 / 4000e9));
  // Thin operands run on narrower tiles.
  EXPECT_EQ(narrow_tile(16, 128), 16);
  EXPECT_EQ(narrow_tile(100, 128), 128);
  EXPECT_EQ(narrow_tile(4096, 128), 128);
  EXPECT_EQ(narrow_tile(3, 128), 16);
}

// Measured points are honoured: a measured shape answers its measured rate, a shape near it
// moves toward it, a shape far from every point answers the model.
TEST(GemmEfficiency, InterpolationHonoursThePoints) {
  GemmModel g = roofline_bf16();
  g.interpolation_octaves = 1.0;
  g.interpolation_prior = 0.1;
  const double model_rate = 1000e12 * gemm_model_efficiency(g, 4096, 4096, 4096, 0);
  g.points = {{4096, 4096, 4096, FlopsPerSecond(1.1 * model_rate)},
              {4096, 4096, 4096, FlopsPerSecond(1.3 * model_rate)}};  // repeats: their mean
  HardwareProfile p;
  p.gemm.push_back(g);
  const double at_point = *p.gemm_efficiency(4096, 4096, 4096, "bf16", 0) * 1000e12;
  EXPECT_NEAR(at_point, model_rate * std::sqrt(1.1 * 1.3), 1e-6 * model_rate);
  // Half an octave away in M: most of the correction.
  const double near = *p.gemm_efficiency(5793, 4096, 4096, "bf16", 0);
  const double near_model = gemm_model_efficiency(g, 5793, 4096, 4096, 0);
  EXPECT_GT(near / near_model, 1.1);
  EXPECT_LT(near / near_model, std::sqrt(1.1 * 1.3) + 1e-12);
  // Eight octaves away: the model.
  EXPECT_NEAR(*p.gemm_efficiency(16, 4096, 4096, "bf16", 0),
              gemm_model_efficiency(g, 16, 4096, 4096, 0), 1e-12);
  // Leaving the point out is what a leave-one-out check sees.
  EXPECT_NEAR(gemm_predicted_time(g, 4096, 4096, 4096, 0, 0).value(),
              gemm_model_time(g, 4096, 4096, 4096, 0).value() / 1.3, 1e-15);
}

TEST(OtherQueries, AttentionCausalFallbackAndProxy) {
  HardwareProfile p;
  AttentionModel plain;
  plain.efficiency = 0.7;
  plain.seq_half = 1024;
  plain.peak = FlopsPerSecond(1000e12);
  p.attention_fwd = plain;
  // No causal model: causal queries use the non-causal one.
  EXPECT_NEAR(*p.attention_efficiency(false, 4096, true), 0.7 * 4096.0 / 5120.0, 1e-15);
  AttentionModel causal = plain;
  causal.efficiency = 0.6;
  p.attention_fwd_causal = causal;
  EXPECT_NEAR(*p.attention_efficiency(false, 4096, true), 0.6 * 4096.0 / 5120.0, 1e-15);
  EXPECT_NEAR(*p.attention_efficiency(false, 4096), 0.7 * 4096.0 / 5120.0, 1e-15);
  // An unfused proxy never answers for the fused kernel.
  AttentionModel proxy = plain;
  proxy.kernel = AttentionKernel::unfused;
  p.attention_bwd = proxy;
  EXPECT_FALSE(p.attention_efficiency(true, 4096).has_value());
  EXPECT_FALSE(p.attention_efficiency(true, 4096, true).has_value());
}

TEST(OtherQueries, AttentionPointsOfTheNearestHeadDim) {
  AttentionModel a;
  a.efficiency = 0.7;
  a.seq_half = 1000;
  a.peak = FlopsPerSecond(1000e12);
  a.points = {{1024, FlopsPerSecond(450e12), 64},
              {4096, FlopsPerSecond(540e12), 64},
              {1024, FlopsPerSecond(630e12), 128},
              {1024, FlopsPerSecond(650e12), 128},  // repeats: their median
              {4096, FlopsPerSecond(690e12), 128}};
  EXPECT_NEAR(attention_model_efficiency(a, 1024, 128), 0.64, 1e-12);
  EXPECT_NEAR(attention_model_efficiency(a, 4096, 64), 0.54, 1e-12);
  EXPECT_NEAR(attention_model_efficiency(a, 2048, 80), std::sqrt(0.45 * 0.54), 1e-12);
  // Past the last point, the saturation model's shape from the point's level.
  EXPECT_NEAR(attention_model_efficiency(a, 16384, 128),
              0.69 * (16384.0 / 17384.0) / (4096.0 / 5096.0), 1e-12);
  EXPECT_NEAR(attention_model_efficiency(a, 4096, 0), 0.7 * 4096.0 / 5096.0, 1e-15);
}

TEST(OtherQueries, KernelBandwidthsAndLaunch) {
  HardwareProfile p;
  EXPECT_FALSE(p.optimizer_bandwidth(true).has_value());
  EXPECT_FALSE(p.elementwise_bandwidth().has_value());
  EXPECT_FALSE(p.launch_overhead().has_value());
  EXPECT_FALSE(p.gemm_launch_overhead().has_value());
  p.kernels.optimizer_fp32_states = gbps(3970);
  EXPECT_FALSE(p.empty());
  p.kernels.optimizer_bf16_states = gbps(4008);
  p.kernels.elementwise = gbps(3858);
  p.launch.empty_kernel = Seconds(4.4e-6);
  p.launch.small_gemm = Seconds(8.6e-6);
  EXPECT_DOUBLE_EQ(to_gbps(*p.optimizer_bandwidth(true)), 3970);
  EXPECT_DOUBLE_EQ(to_gbps(*p.optimizer_bandwidth(false)), 4008);
  EXPECT_DOUBLE_EQ(to_gbps(*p.elementwise_bandwidth()), 3858);
  EXPECT_DOUBLE_EQ(p.launch_overhead()->value(), 4.4e-6);
  EXPECT_DOUBLE_EQ(p.gemm_launch_overhead()->value(), 8.6e-6);
}

TEST(OtherQueries, AttentionMemoryAdam) {
  HardwareProfile p;
  EXPECT_FALSE(p.attention_efficiency(false, 4096).has_value());
  EXPECT_FALSE(p.hbm_bandwidth().has_value());
  AttentionModel a;
  a.efficiency = 0.7;
  a.seq_half = 1024;
  p.attention_bwd = a;
  EXPECT_FALSE(p.attention_efficiency(false, 4096).has_value());
  EXPECT_NEAR(*p.attention_efficiency(true, 4096), 0.7 * 4096.0 / 5120.0, 1e-15);
  p.memory.hbm = gbps(2900);
  p.memory.h2d = gbps(50);
  p.cpu_adam_params_per_s = 2e9;
  EXPECT_DOUBLE_EQ(to_gbps(*p.hbm_bandwidth()), 2900);
  EXPECT_DOUBLE_EQ(to_gbps(*p.h2d_bandwidth()), 50);
  EXPECT_FALSE(p.d2h_bandwidth().has_value());
  EXPECT_DOUBLE_EQ(*p.cpu_adam_rate(), 2e9);
  EXPECT_FALSE(p.empty());
}

}  // namespace
}  // namespace trainplan::hardware
