// JSON of measurements, provenance and profiles: round trips and rejection of unknown keys.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "trainplan/core/error.hpp"
#include "trainplan/request/measurements.hpp"
#include "trainplan/request/profile_json.hpp"

namespace trainplan::request {
namespace {

using hardware::Collective;

// Values built with the same unit conversions the readers use, so that equality is exact.
hardware::HardwareProfile full_profile() {
  hardware::HardwareProfile p;
  p.name = "h100-pod";
  p.gpu = "H100-80GB";
  p.provenance.tool = "trainplan-calibrate";
  p.provenance.gpu = "NVIDIA H100 80GB HBM3";
  p.provenance.gpu_count = 16;
  p.provenance.hosts = {"n1", "n2"};
  p.provenance.nodes = 2;
  p.provenance.ranks = 16;
  p.provenance.cuda = "13.0";
  p.provenance.nccl = "2.28.9";
  p.provenance.date = "2026-01-02T03:04:05Z";
  p.provenance.sources = {"run-a"};
  hardware::CollectiveCurve c;
  c.collective = Collective::reduce_scatter;
  c.scope = hardware::LinkScope::inter_node;
  c.ranks = 16;
  c.nodes = 2;
  c.alpha = Seconds(41.5 * 1e-6);
  c.busbw = gbps(88.25);
  c.regimes = {{Bytes(16777216), Seconds(20.25 * 1e-6), gbps(40.5)},
               {Bytes(4294967296), Seconds(90.75 * 1e-6), gbps(95.125)}};
  c.points = {{Bytes(1024), Seconds(22.54 * 1e-6)},
              {Bytes(4096), Seconds(35.33 * 1e-6)},
              {Bytes(4294967296), Seconds(38180 * 1e-6)}};
  c.fit = {0.03125, 0.125, 3};
  p.collectives.push_back(c);
  hardware::CollectiveModel cm;
  cm.collective = Collective::reduce_scatter;
  cm.scope = hardware::LinkScope::inter_node;
  cm.latency_scale = 1.25;
  cm.network_latency_scale = 0.75;
  cm.busbw = gbps(36.5);
  cm.tree_bandwidth = 0.5;
  cm.ll_bandwidth = gbps(5.25);
  cm.fit = {0.0625, 0.25, 96};
  p.collective_models.push_back(cm);
  hardware::GemmModel g;
  g.dtype = hardware::GemmDtype::fp8;
  g.peak_efficiency = 0.6875;
  g.k0 = 192;
  g.sm_count = 132;
  g.peak = tflops(1979);
  g.points = {{4096, 4096, 4096, tflops(1200.5)}, {8192, 8192, 1024, tflops(1100.25)}};
  g.fit = {0.01, 0.02, 2};
  p.gemm.push_back(g);
  hardware::GemmModel r = g;  // the roofline form, with its interpolation and qualities
  r.dtype = hardware::GemmDtype::bf16;
  r.peak = tflops(989);
  r.overhead = Seconds(3.125 * 1e-6);
  r.read_bandwidth = gbps(3584.5);
  r.write_bandwidth = gbps(3561.25);
  r.smoothness = 3.0625;
  r.a_bytes = 2;
  r.c_bytes = 2;
  r.interpolation_octaves = 1;
  r.interpolation_prior = 0.125;
  r.model_fit = {0.0625, 0.125, 2};
  r.leave_one_out = {0.078125, 0.25, 2};
  p.gemm.insert(p.gemm.begin(), r);  // the reader lists dtypes by name
  hardware::AttentionModel a;
  a.efficiency = 0.71;
  a.seq_half = 1500;
  a.peak = tflops(989);
  a.points = {{2048, tflops(484.5)}, {16384, tflops(702.25)}};
  a.fit = {0.02, 0.04, 2};
  p.attention_fwd = a;
  hardware::AttentionModel causal = a;  // a causal model with head dims, and an unfused proxy
  causal.points = {{1024, tflops(480.25), 128}, {16384, tflops(608.5), 64}};
  causal.interpolated = {0.01, 0.03, 2};
  p.attention_fwd_causal = causal;
  causal.kernel = hardware::AttentionKernel::unfused;
  p.attention_bwd_causal = causal;
  p.memory.hbm = gbps(2900.5);
  p.memory.d2h = gbps(52.25);
  p.cpu_adam_params_per_s = 1.5e9;
  p.kernels.optimizer_fp32_states = gbps(3970.5);
  p.kernels.optimizer_bf16_states = gbps(4007.75);
  p.kernels.elementwise = gbps(3858.5);
  p.kernels.elementwise_min_bytes = Bytes(268435456);
  p.kernels.elementwise_by_op = {{"add", gbps(4156.5)}, {"copy", gbps(3626.25)}};
  p.launch.empty_kernel = Seconds(4.4375 * 1e-6);
  p.launch.small_gemm = Seconds(8.59375 * 1e-6);
  p.launch.small_gemm_size = 64;
  return p;
}

TEST(ProfileJson, RoundTrip) {
  const hardware::HardwareProfile p = full_profile();
  const std::string text = profile_to_json(p);
  const hardware::HardwareProfile back = parse_profile_json(text, "p.json");
  EXPECT_EQ(back, p);
  EXPECT_EQ(profile_to_json(back), text);
  EXPECT_NE(text.find("\"schema\": \"trainplan.profile/1\""), std::string::npos);
  EXPECT_NE(text.find("\"alpha_us\": 41.5"), std::string::npos);
  EXPECT_NE(text.find("\"busbw_GBps\": 88.25"), std::string::npos);
  EXPECT_NE(text.find("\"peak_TFLOPS\": 1979"), std::string::npos);
  EXPECT_EQ(text.find("\"bwd\""), std::string::npos);  // absent sections stay absent
  EXPECT_EQ(text.find("h2d_GBps"), std::string::npos);
  EXPECT_NE(text.find("\"kernel\": \"unfused\""), std::string::npos);
  EXPECT_NE(text.find("\"fp32_states_GBps\": 3970.5"), std::string::npos);
  EXPECT_NE(text.find("\"empty_kernel_us\": 4.4375"), std::string::npos);
  EXPECT_NE(text.find("\"read_GBps\": 3584.5"), std::string::npos);
  ASSERT_TRUE(back.attention_fwd_causal.has_value());
  EXPECT_EQ(back.attention_fwd_causal->points[0].head_dim, 128);
}

// Profiles written before the roofline form, causal attention and the kernel sections still
// read, and answer as they did.
TEST(ProfileJson, ProfilesOfTheFirstFormStillRead) {
  const hardware::HardwareProfile p = parse_profile_json(
      R"({"schema": "trainplan.profile/1", "name": "old", "gpu": "H200",
          "gemm": {"dtypes": {"bf16": {"peak_efficiency": 0.8, "k0": 128, "tile_m": 128,
                   "tile_n": 128, "sm_count": 132, "peak_TFLOPS": 989,
                   "points": [[4096, 4096, 4096, 700]],
                   "fit": {"median_rel_err": 0.07, "max_rel_err": 0.25, "points": 1}}}},
          "attention": {"fwd": {"efficiency": 0.7, "seq_half": 1000, "peak_TFLOPS": 989,
                        "points": [[4096, 560]],
                        "fit": {"median_rel_err": 0.1, "max_rel_err": 0.2, "points": 1}}}})",
      "old.json");
  ASSERT_EQ(p.gemm.size(), 1u);
  EXPECT_FALSE(p.gemm[0].roofline());
  EXPECT_NEAR(*p.gemm_efficiency(4096, 4096, 4096, "bf16", 132),
              0.8 * (1024.0 / 1056.0) * 4096.0 / (4096.0 + 128.0), 1e-12);
  ASSERT_TRUE(p.attention_fwd.has_value());
  EXPECT_EQ(p.attention_fwd->kernel, hardware::AttentionKernel::fused);
  EXPECT_EQ(p.attention_fwd->points[0].head_dim, 0);
  EXPECT_FALSE(p.optimizer_bandwidth(true).has_value());
  EXPECT_FALSE(p.launch_overhead().has_value());
}

TEST(ProfileJson, NewSectionsRejectHalfForms) {
  const std::string good = profile_to_json(full_profile());
  struct Case {
    std::string name;
    std::string from;
    std::string to;
    std::string says;
  };
  const Case cases[] = {
      {"roofline key without read_GBps", "\"read_GBps\": 3584.5", "\"read_GiBps\": 3584.5",
       "'read_GiBps'"},
      {"kernels typo", "\"fp32_states_GBps\"", "\"fp32_state_GBps\"", "'fp32_state_GBps'"},
      {"launch typo", "\"empty_kernel_us\"", "\"empty_kernel_ms\"", "'empty_kernel_ms'"},
      {"attention kernel", "\"kernel\": \"unfused\"", "\"kernel\": \"eager\"", "'eager'"},
      {"attention slot", "\"fwd_causal\"", "\"fwd_masked\"", "'fwd_masked'"},
      {"interpolation", "\"octaves\"", "\"octave\"", "'octave'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string bad = good;
    const std::size_t at = bad.find(c.from);
    ASSERT_NE(at, std::string::npos);
    bad.replace(at, c.from.size(), c.to);
    try {
      (void)parse_profile_json(bad, "p.json");
      ADD_FAILURE() << "accepted " << c.to;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << e.what();
    }
  }
}

TEST(ProfileJson, EverySectionMayBeAbsent) {
  const hardware::HardwareProfile p = parse_profile_json(
      R"({"schema": "trainplan.profile/1", "name": "empty", "gpu": "A100-80GB"})", "p.json");
  EXPECT_TRUE(p.empty());
  EXPECT_EQ(p.gpu, "A100-80GB");
}

struct TypoCase {
  std::string name;
  std::string from;
  std::string to;
  std::string key;  // the message must name it
};

TEST(ProfileJson, UnknownKeysAreNamed) {
  const std::string good = profile_to_json(full_profile());
  const TypoCase cases[] = {
      {"top level", "\"collectives\"", "\"colectives\"", "colectives"},
      {"curve", "\"alpha_us\": 41.5", "\"alpha_ms\": 41.5", "alpha_ms"},
      {"regime", "\"max_bytes\": 16777216", "\"max_byte\": 16777216", "max_byte"},
      {"fit", "\"median_rel_err\": 0.03125", "\"median_err\": 0.03125", "median_err"},
      {"gemm dtype", "\"fp8\": {", "\"fp9\": {", "fp9"},
      {"memory", "\"hbm_GBps\"", "\"hbm_GiBps\"", "hbm_GiBps"},
      {"provenance", "\"cuda\": \"13.0\"", "\"cuda_version\": \"13.0\"", "cuda_version"},
      {"attention", "\"seq_half\"", "\"seq_halve\"", "seq_halve"},
      {"collective model", "\"ll_GBps\"", "\"ll_GiBps\"", "ll_GiBps"},
  };
  for (const TypoCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::string bad = good;
    const std::size_t at = bad.find(c.from);
    ASSERT_NE(at, std::string::npos);
    bad.replace(at, c.from.size(), c.to);
    try {
      (void)parse_profile_json(bad, "typo.json");
      ADD_FAILURE() << "accepted " << c.to;
    } catch (const InputError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("'" + c.key + "'"), std::string::npos) << msg;
      EXPECT_NE(msg.find("typo.json"), std::string::npos) << msg;
    }
  }
}

TEST(ProfileJson, BadValuesAreNamed) {
  EXPECT_THROW((void)parse_profile_json(R"({"schema": "trainplan.profile/2"})", "p.json"),
               InputError);
  EXPECT_THROW((void)parse_profile_json("{not json", "p.json"), InputError);
  std::string text = profile_to_json(full_profile());
  text.replace(text.find("\"reduce_scatter\""), 16, "\"reduce_scater\"");
  try {
    (void)parse_profile_json(text, "p.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("reduce_scater"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("all_reduce"), std::string::npos) << e.what();
  }
}

// A collective model's values are checked like every other: the message names the model and key.
TEST(ProfileJson, CollectiveModelValuesAreNamed) {
  const std::string good = profile_to_json(full_profile());
  const TypoCase cases[] = {
      {"negative scale", "\"latency_scale\": 1.25", "\"latency_scale\": -1.25", "latency_scale"},
      {"zero bandwidth", "\"busbw_GBps\": 36.5", "\"busbw_GBps\": 0", "busbw_GBps"},
      {"world scope", "\"scope\": \"inter_node\",\n      \"latency_scale\"",
       "\"scope\": \"world\",\n      \"latency_scale\"", "scope"},
  };
  for (const TypoCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::string bad = good;
    const std::size_t at = bad.find(c.from);
    ASSERT_NE(at, std::string::npos) << good;
    bad.replace(at, c.from.size(), c.to);
    try {
      (void)parse_profile_json(bad, "m.json");
      ADD_FAILURE() << "accepted " << c.to;
    } catch (const InputError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("'" + c.key + "'"), std::string::npos) << msg;
      EXPECT_NE(msg.find("collective_models[0]"), std::string::npos) << msg;
    }
  }
}

// A profile written before the collective models existed gets them fitted to its curves on
// reading, as `calibrate fit` would have.
TEST(ProfileJson, ProfilesWithoutCollectiveModelsGetThemFitted) {
  hardware::HardwareProfile p = full_profile();
  p.collective_models.clear();
  hardware::CollectiveCurve& c = p.collectives.front();
  c.points.clear();
  for (int i = 0; i < 8; ++i) {
    const double bytes = std::pow(16.0, i + 1);
    c.points.push_back({Bytes(bytes), Seconds(30e-6 + 0.9375 * bytes / 40e9)});
  }
  const hardware::HardwareProfile back = parse_profile_json(profile_to_json(p), "old.json");
  ASSERT_EQ(back.collective_models.size(), 1u);
  EXPECT_EQ(back.collective_models[0].collective, Collective::reduce_scatter);
  EXPECT_EQ(back.collective_models[0].scope, hardware::LinkScope::inter_node);
  EXPECT_TRUE(back.collective_time(Collective::reduce_scatter, 64, 8, Bytes(1e6)).has_value());
}

calibration::Measurements all_kinds() {
  calibration::Measurements m;
  calibration::CollectiveMeasurement c;
  c.collective = Collective::all_gather;
  c.scope = hardware::LinkScope::world;
  c.ranks = 16;
  c.nodes = 2;
  c.dtype = "bfloat16";
  c.bytes = Bytes(17179869184.0);
  c.time = Seconds(374425 * 1e-6);
  c.algbw = gbps(45.88);
  c.busbw = gbps(43.0125);
  c.in_place = true;
  c.valid = false;
  m.collectives.push_back(c);
  calibration::GemmMeasurement g;
  g.dtype = hardware::GemmDtype::bf16;
  g.m = 8192;
  g.n = 8192;
  g.k = 8192;
  g.time = Seconds(1400.5 * 1e-6);
  g.rate = tflops(785.25);
  g.label = "square";
  m.gemms.push_back(g);
  calibration::AttentionMeasurement a;
  a.pass = calibration::AttentionPass::bwd;
  a.impl = calibration::AttentionImpl::unfused;
  a.dtype = "bf16";
  a.batch = 1;
  a.heads = 64;
  a.kv_heads = 8;
  a.head_dim = 128;
  a.seq = 8192;
  a.causal = true;
  a.time = Seconds(5000.25 * 1e-6);
  a.rate = tflops(412.5);
  m.attention.push_back(a);
  calibration::BandwidthMeasurement b;
  b.direction = calibration::CopyDirection::h2d;
  b.bytes = Bytes(1073741824.0);
  b.time = Seconds(21000.5 * 1e-6);
  b.rate = gbps(51.125);
  m.bandwidth.push_back(b);
  calibration::CpuAdamMeasurement ad;
  ad.params = 100000000;
  ad.time = Seconds(50000 * 1e-6);
  ad.params_per_s = 2e9;
  m.cpu_adam.push_back(ad);
  calibration::OptimizerMeasurement o;
  o.param_dtype = calibration::ElementDtype::fp32;
  o.grad_dtype = calibration::ElementDtype::bf16;
  o.state_dtype = calibration::ElementDtype::fp32;
  o.params = 1000000000;
  o.tensors = 60;
  o.bytes = Bytes(26000000000.0);
  o.time = Seconds(6548.25 * 1e-6);
  o.rate = gbps(3970.5);
  o.params_per_s = 1.5e11;
  m.optimizer.push_back(o);
  calibration::ElementwiseMeasurement e;
  e.op = calibration::ElementwiseOp::rmsnorm;
  e.elements = 67108864;
  e.row = 4096;
  e.bytes = Bytes(268443648.0);
  e.time = Seconds(93.125 * 1e-6);
  e.rate = gbps(2881.5);
  m.elementwise.push_back(e);
  calibration::LaunchMeasurement l;
  l.op = calibration::LaunchOp::gemm;
  l.dtype = hardware::GemmDtype::bf16;
  l.m = l.n = l.k = 64;
  l.launches = 1000;
  l.time = Seconds(7.5 * 1e-6);
  m.launch.push_back(l);
  calibration::SkippedPoint sk;
  sk.kind = "attention";
  sk.point = R"({"batch":1,"causal":true,"dtype":"bf16","head_dim":128,"heads":32,"impl":"cudnn",)"
             R"("kind":"attention","kv_heads":8,"pass":"bwd","seq":16384})";
  sk.reason = "cuDNN refused: CUDNN_STATUS_NOT_SUPPORTED";
  sk.fallback =
      R"({"batch":1,"causal":true,"dtype":"bf16","head_dim":128,"heads":32,"impl":"unfused",)"
      R"("kind":"attention","kv_heads":8,"pass":"bwd","seq":16384})";
  sk.fallback_kind = "attention";
  calibration::AttentionMeasurement shape = a;
  shape.heads = 32;
  shape.seq = 16384;
  shape.batch = 1;
  shape.time = Seconds(0.0);
  shape.rate = FlopsPerSecond(0.0);
  shape.impl = calibration::AttentionImpl::cudnn;
  sk.attention = shape;
  shape.impl = calibration::AttentionImpl::unfused;
  sk.fallback_attention = shape;
  m.skipped.push_back(sk);
  return m;
}

TEST(MeasurementsJsonl, RoundTripOfEveryKind) {
  const calibration::Measurements m = all_kinds();
  const std::string text = measurements_to_jsonl(m);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 9);
  EXPECT_EQ(
      text.substr(0, text.find('\n')),
      R"({"kind":"collective","collective":"all_gather","scope":"world","ranks":16,"nodes":2,)"
      R"("dtype":"bfloat16","bytes":17179869184,"time_us":374425.0,"algbw_GBps":45.88,)"
      R"("busbw_GBps":43.0125,"in_place":true,"valid":false})");
  EXPECT_EQ(parse_measurements_jsonl(text, "m.jsonl"), m);
}

TEST(MeasurementsJsonl, DerivedRatesWhenAbsent) {
  const calibration::Measurements m = parse_measurements_jsonl(
      R"({"kind":"collective","collective":"all_reduce","scope":"intra_node","ranks":8,"nodes":1,"bytes":1000000000,"time_us":10000})"
      "\n\n"
      R"({"kind":"gemm","dtype":"bf16","m":1000,"n":1000,"k":1000,"time_us":10})"
      "\n",
      "m.jsonl");
  ASSERT_EQ(m.collectives.size(), 1u);
  EXPECT_NEAR(to_gbps(m.collectives[0].algbw), 100.0, 1e-9);
  EXPECT_NEAR(to_gbps(m.collectives[0].busbw), 175.0, 1e-9);
  EXPECT_TRUE(m.collectives[0].valid);
  EXPECT_NEAR(to_tflops(m.gemms[0].rate), 200.0, 1e-9);
}

TEST(MeasurementsJsonl, ErrorsNameLineAndKey) {
  const std::string good = measurements_to_jsonl(all_kinds());
  std::string bad = good;
  bad.replace(bad.find("\"tflops\":785.25"), 15, "\"tflop\":785.25");
  try {
    (void)parse_measurements_jsonl(bad, "run/measurements.jsonl");
    FAIL();
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("run/measurements.jsonl line 2"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'tflop'"), std::string::npos) << msg;
  }
  EXPECT_THROW((void)parse_measurements_jsonl(R"({"kind":"nvlink"})", "m"), InputError);
  EXPECT_THROW(
      (void)parse_measurements_jsonl(
          R"({"kind":"collective","collective":"all_reduce","scope":"intra_node","ranks":16,"nodes":2,"bytes":8,"time_us":1})",
          "m"),
      InputError);  // intra_node on 2 nodes
  EXPECT_THROW(
      (void)parse_measurements_jsonl(
          R"({"kind":"collective","collective":"all_reduce","scope":"world","ranks":8,"nodes":1,"bytes":8,"time_us":-1})",
          "m"),
      InputError);
  EXPECT_THROW((void)parse_measurements_jsonl("{\"kind\":", "m"), InputError);
}

// The lines trainplan-calibrate writes for the optimizer, elementwise, launch and skipped kinds
// (calibrate/README.md), read as written.
TEST(MeasurementsJsonl, ReadsTheBenchLinesOfTheNewKinds) {
  const calibration::Measurements m = parse_measurements_jsonl(
      R"({"kind":"optimizer","optimizer":"adamw","param_dtype":"bf16","grad_dtype":"bf16","state_dtype":"bf16","params":1000000000,"tensors":60,"bytes":14000000000,"time_us":3493.1663513183594,"GBps":4007.825162611064,"params_per_s":286273225900.7903})"
      "\n"
      R"({"kind":"elementwise","op":"cast","in_dtype":"fp32","out_dtype":"bf16","elements":4194304,"bytes":25165824,"time_us":5.406399816274643,"GBps":4654.821111129157})"
      "\n"
      R"({"kind":"launch","op":"empty_kernel","launches":1000,"time_us":4.437168149999999})"
      "\n"
      R"({"kind":"skipped","point":{"kind":"attention","pass":"bwd","impl":"cudnn","dtype":"bf16","batch":1,"heads":32,"kv_heads":8,"head_dim":128,"seq":16384,"causal":true},"reason":"cuDNN refused"})"
      "\n",
      "m.jsonl");
  ASSERT_EQ(m.optimizer.size(), 1u);
  EXPECT_EQ(m.optimizer[0].state_dtype, calibration::ElementDtype::bf16);
  EXPECT_NEAR(to_gbps(m.optimizer[0].rate), 4007.825162611064, 1e-9);
  ASSERT_EQ(m.elementwise.size(), 1u);
  EXPECT_EQ(m.elementwise[0].op, calibration::ElementwiseOp::cast);
  EXPECT_EQ(m.elementwise[0].row, 0);
  ASSERT_EQ(m.launch.size(), 1u);
  EXPECT_FALSE(m.launch[0].dtype.has_value());
  EXPECT_NEAR(m.launch[0].time.value(), 4.437168149999999e-6, 1e-18);
  ASSERT_EQ(m.skipped.size(), 1u);
  ASSERT_TRUE(m.skipped[0].attention.has_value());
  EXPECT_EQ(m.skipped[0].attention->pass, calibration::AttentionPass::bwd);
  EXPECT_TRUE(m.skipped[0].attention->causal);
  EXPECT_TRUE(m.skipped[0].fallback.empty());
  EXPECT_EQ(m.size(), 3u);  // a skipped point is not a measurement
}

TEST(MeasurementsJsonl, NewKindsRejectWhatTheBenchDoesNotWrite) {
  struct Case {
    std::string name;
    std::string line;
    std::string says;  // the message names this
  };
  const Case cases[] = {
      {"unknown optimizer key",
       R"({"kind":"optimizer","optimizer":"adamw","param_dtype":"fp32","grad_dtype":"bf16","state_dtype":"fp32","params":10,"tensors":1,"bytes":260,"time_us":1,"GBs":1})",
       "'GBs'"},
      {"unknown optimizer",
       R"({"kind":"optimizer","optimizer":"lion","param_dtype":"fp32","grad_dtype":"bf16","state_dtype":"fp32","params":10,"tensors":1,"bytes":260,"time_us":1})",
       "'lion'"},
      {"unknown state dtype",
       R"({"kind":"optimizer","optimizer":"adamw","param_dtype":"fp32","grad_dtype":"bf16","state_dtype":"fp64","params":10,"tensors":1,"bytes":260,"time_us":1})",
       "'fp64'"},
      {"more tensors than parameters",
       R"({"kind":"optimizer","optimizer":"adamw","param_dtype":"fp32","grad_dtype":"bf16","state_dtype":"fp32","params":10,"tensors":11,"bytes":260,"time_us":1})",
       "11 tensors"},
      {"row on a copy",
       R"({"kind":"elementwise","op":"copy","in_dtype":"bf16","out_dtype":"bf16","elements":4096,"row":4096,"bytes":16384,"time_us":1})",
       "'row'"},
      {"rmsnorm without a row",
       R"({"kind":"elementwise","op":"rmsnorm","in_dtype":"bf16","out_dtype":"bf16","elements":4096,"bytes":16384,"time_us":1})",
       "'row'"},
      {"unknown elementwise op",
       R"({"kind":"elementwise","op":"softmax","in_dtype":"bf16","out_dtype":"bf16","elements":4096,"bytes":16384,"time_us":1})",
       "'softmax'"},
      {"empty kernel with a shape",
       R"({"kind":"launch","op":"empty_kernel","m":64,"launches":1000,"time_us":4})", "'m'"},
      {"GEMM launch without a dtype",
       R"({"kind":"launch","op":"gemm","m":64,"n":64,"k":64,"launches":1000,"time_us":8})",
       "'dtype'"},
      {"zero time", R"({"kind":"launch","op":"empty_kernel","launches":1000,"time_us":0})",
       "'time_us'"},
      {"skipped point of an unknown kind",
       R"({"kind":"skipped","point":{"kind":"nvlink"},"reason":"no"})", "'nvlink'"},
      {"skipped point with an unknown key",
       R"({"kind":"skipped","point":{"kind":"gemm","dtype":"bf16","m":1,"n":1,"k":1,"lable":"x"},"reason":"no"})",
       "'lable'"},
      {"skipped without a reason",
       R"({"kind":"skipped","point":{"kind":"gemm","dtype":"bf16","m":1,"n":1,"k":1}})",
       "'reason'"},
      {"skipped with an unknown key",
       R"({"kind":"skipped","point":{"kind":"gemm","dtype":"bf16","m":1,"n":1,"k":1},"reason":"x","why":"y"})",
       "'why'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    try {
      (void)parse_measurements_jsonl("\n" + c.line + "\n", "run/measurements.jsonl");
      ADD_FAILURE() << "accepted " << c.line;
    } catch (const InputError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("run/measurements.jsonl line 2"), std::string::npos) << msg;
      EXPECT_NE(msg.find(c.says), std::string::npos) << msg;
    }
  }
}

TEST(ProvenanceJson, RoundTripNullsAndUnknownKeys) {
  hardware::RunProvenance p;
  p.tool = "nccl-tests";
  p.gpu = "NVIDIA GB10";
  p.ranks = 2;
  p.hosts = {"a", "b"};
  p.sources = {"log.txt"};
  const std::string text = provenance_to_json(p);
  EXPECT_EQ(text.find("\"schema\": \"trainplan.run/1\""), 4u);
  EXPECT_NE(text.find("\"driver\": null"), std::string::npos);
  EXPECT_EQ(parse_provenance_json(text, "provenance.json"), p);
  const std::string minimal =
      R"({"schema":"trainplan.run/1","tool":"trainplan-calibrate","gpu":null})";
  EXPECT_EQ(parse_provenance_json(minimal, "p").tool, "trainplan-calibrate");
  try {
    (void)parse_provenance_json(R"({"schema":"trainplan.run/1","gpus":"x"})", "prov.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'gpus'"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)parse_provenance_json(R"({"tool":"x"})", "prov.json"), InputError);
}

TEST(RoundSignificant, PrintsTheNumbersConversionsCameFrom) {
  EXPECT_EQ(round_significant(40.12e-6 * 1e6), 40.12);
  EXPECT_EQ(round_significant(0.0), 0.0);
  EXPECT_EQ(round_significant(-3.0000000000004), -3.0);
}

}  // namespace
}  // namespace trainplan::request
