// Host-side parts of trainplan-calibrate that need no GPU: sweeps and conventions, JSON lines,
// resume keys, provenance, launch detection, options and the CPU AdamW step.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cpu_adam.hpp"
#include "launch_env.hpp"
#include "measurement.hpp"
#include "options.hpp"
#include "provenance.hpp"
#include "sweep.hpp"

namespace tb = trainplan::calibrate;

namespace {

std::filesystem::path fresh_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("trainplan_calibrate_unit_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

tb::EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

}  // namespace

TEST(CalibrateSweep, BusFactorsFollowNcclTests) {
  // nccl-tests doc/PERFORMANCE.md: all_reduce 2(n-1)/n; all_gather, reduce_scatter, alltoall
  // (n-1)/n; broadcast, sendrecv 1.
  struct Row {
    tb::Collective c;
    int n;
    double factor;
  };
  const Row rows[] = {{tb::Collective::kAllReduce, 8, 1.75},    {tb::Collective::kAllReduce, 2, 1.0},
                      {tb::Collective::kAllGather, 8, 0.875},   {tb::Collective::kReduceScatter, 4, 0.75},
                      {tb::Collective::kAllToAll, 16, 0.9375},  {tb::Collective::kBroadcast, 8, 1.0},
                      {tb::Collective::kSendRecv, 8, 1.0},      {tb::Collective::kAllReduce, 32, 1.9375}};
  for (const Row& r : rows) {
    SCOPED_TRACE(std::string(tb::to_string(r.c)) + " n=" + std::to_string(r.n));
    EXPECT_DOUBLE_EQ(tb::bus_factor(r.c, r.n), r.factor);
  }
}

TEST(CalibrateSweep, SizesDoubleFromMinToMax) {
  const auto s = tb::sweep_sizes(8, 4 * tb::kGiB, 2.0);
  ASSERT_EQ(s.size(), 30u);  // 2^3 .. 2^32
  EXPECT_EQ(s.front(), 8);
  EXPECT_EQ(s.back(), 4 * tb::kGiB);
  EXPECT_EQ(tb::sweep_sizes(1024, 1024, 2.0), std::vector<std::int64_t>{1024});
  EXPECT_THROW((void)tb::sweep_sizes(0, 8, 2.0), std::invalid_argument);
  EXPECT_THROW((void)tb::sweep_sizes(64, 8, 2.0), std::invalid_argument);
  EXPECT_THROW((void)tb::sweep_sizes(8, 64, 1.0), std::invalid_argument);
}

TEST(CalibrateSweep, ParsesBinarySizes) {
  EXPECT_EQ(tb::parse_size("8"), 8);
  EXPECT_EQ(tb::parse_size("64K"), 64 * 1024);
  EXPECT_EQ(tb::parse_size("32M"), 32 * tb::kMiB);
  EXPECT_EQ(tb::parse_size("4G"), 4 * tb::kGiB);
  EXPECT_EQ(tb::parse_size("1GiB"), tb::kGiB);
  EXPECT_THROW((void)tb::parse_size("4X"), std::invalid_argument);
  EXPECT_THROW((void)tb::parse_size("big"), std::invalid_argument);
  EXPECT_THROW((void)tb::parse_size("0"), std::invalid_argument);
  EXPECT_EQ(tb::format_bytes(8), "8 B");
  EXPECT_EQ(tb::format_bytes(64 * tb::kMiB), "64 MiB");
  EXPECT_EQ(tb::format_bytes(3 * tb::kGiB / 2), "1.5 GiB");
}

TEST(CalibrateSweep, CollectiveShapesUseNcclTestsSizeColumn) {
  // all_gather: size is the total output; 8 ranks of float: 1 MiB -> 32768 floats sent per rank.
  auto ag = tb::collective_shape(tb::Collective::kAllGather, tb::kMiB, 8, 4);
  ASSERT_TRUE(ag);
  EXPECT_EQ(ag->send_count, 32768u);
  EXPECT_EQ(ag->recv_count, 262144u);
  EXPECT_EQ(ag->bytes, tb::kMiB);
  // reduce_scatter: size is the total input.
  auto rs = tb::collective_shape(tb::Collective::kReduceScatter, tb::kMiB, 8, 4);
  ASSERT_TRUE(rs);
  EXPECT_EQ(rs->send_count, 262144u);
  EXPECT_EQ(rs->recv_count, 32768u);
  // all_reduce: the per-rank buffer.
  auto ar = tb::collective_shape(tb::Collective::kAllReduce, 8, 8, 4);
  ASSERT_TRUE(ar);
  EXPECT_EQ(ar->send_count, 2u);
  EXPECT_EQ(ar->bytes, 8);
  // Too small to give each of 8 ranks one float.
  EXPECT_FALSE(tb::collective_shape(tb::Collective::kAllGather, 8, 8, 4));
  // Rounded down to whole elements per rank: 6 ranks, 64 B of float -> 2 per rank, 48 B.
  auto a2a = tb::collective_shape(tb::Collective::kAllToAll, 64, 6, 4);
  ASSERT_TRUE(a2a);
  EXPECT_EQ(a2a->chunk, 2u);
  EXPECT_EQ(a2a->bytes, 48);
}

TEST(CalibrateSweep, ModelGemmShapesLlama2_7B) {
  const tb::ModelShapes llama{4096, 11008, 32, 32, 32000, 4096};
  const auto tp1 = tb::model_gemm_shapes(llama, 1);
  ASSERT_EQ(tp1.size(), 5u);
  EXPECT_EQ(tp1[0].label, tb::GemmLabel::kQkv);
  EXPECT_EQ(tp1[0].n, 3 * 4096);
  EXPECT_EQ(tp1[0].k, 4096);
  EXPECT_EQ(tp1[1].k, 4096);       // out: K = heads * d
  EXPECT_EQ(tp1[2].n, 2 * 11008);  // gate + up fused
  EXPECT_EQ(tp1[3].k, 11008);
  EXPECT_EQ(tp1[4].n, 32000);
  for (const auto& g : tp1) EXPECT_EQ(g.m, 4096);

  const auto tp2 = tb::model_gemm_shapes(llama, 2);
  EXPECT_EQ(tp2[0].n, 3 * 2048);
  EXPECT_EQ(tp2[1].k, 2048);
  EXPECT_EQ(tp2[2].n, 11008);
  EXPECT_EQ(tp2[3].k, 5504);
  EXPECT_EQ(tp2[4].n, 16000);

  // GQA: 8 KV heads of 128 under tp 8 -> 4 query heads + 2 KV heads = 6 * 128.
  const tb::ModelShapes llama3{4096, 14336, 32, 8, 128256, 8192};
  EXPECT_EQ(tb::model_gemm_shapes(llama3, 8)[0].n, 6 * 128);
  // Vocabulary padded to a multiple of 128 * tp (128256 -> 129024 at tp 8).
  EXPECT_EQ(tb::model_gemm_shapes(llama3, 8)[4].n, 129024 / 8);
  EXPECT_THROW((void)tb::model_gemm_shapes(llama, 3), std::invalid_argument);
}

TEST(CalibrateSweep, ParsesModelShapes) {
  const auto s = tb::parse_model_shapes("5120,13824,40,40,32000,2048");
  EXPECT_EQ(s.hidden, 5120);
  EXPECT_EQ(s.tokens, 2048);
  EXPECT_THROW((void)tb::parse_model_shapes("4096,11008,32"), std::invalid_argument);
  EXPECT_THROW((void)tb::parse_model_shapes("4096,11008,30,30,32000,4096"), std::invalid_argument);
  EXPECT_THROW((void)tb::parse_model_shapes("4096,11008,32,5,32000,4096"), std::invalid_argument);
  EXPECT_THROW((void)tb::parse_model_shapes("4096,x,32,32,32000,4096"), std::invalid_argument);
}

TEST(CalibrateSweep, AttentionFlopsConvention) {
  const tb::AttentionShape a{1, 64, 8, 128, 32768, false};
  // cuDNN frontend benchmark, H200, s = 32768, h = 64, d = 128, no mask: 50.769 ms at 693 TFLOPS.
  EXPECT_NEAR(tb::attention_flops(a, tb::AttentionPass::kFwd) / 50.769e-3 / 1e12, 693.0, 0.5);
  tb::AttentionShape causal = a;
  causal.causal = true;
  EXPECT_DOUBLE_EQ(tb::attention_flops(causal, tb::AttentionPass::kFwd),
                   0.5 * tb::attention_flops(a, tb::AttentionPass::kFwd));
  EXPECT_DOUBLE_EQ(tb::attention_flops(a, tb::AttentionPass::kBwd),
                   2.5 * tb::attention_flops(a, tb::AttentionPass::kFwd));
  for (const auto& s : tb::attention_shapes(true)) EXPECT_EQ(s.batch * s.seq, 16384);
}

TEST(CalibrateMeasurement, LinesFollowTheContract) {
  const tb::Json c = tb::with_collective_result(
      tb::collective_params(tb::Collective::kAllReduce, tb::Scope::kIntraNode, 8, 1,
                            tb::CollDtype::kFloat, 64 * tb::kMiB),
      500.0, tb::bus_factor(tb::Collective::kAllReduce, 8), true);
  std::vector<std::string> keys;
  for (const auto& item : c.items()) keys.push_back(item.key());
  const std::vector<std::string> contract{"kind",  "collective", "scope",      "ranks",
                                          "nodes", "dtype",      "bytes",      "in_place",
                                          "time_us", "algbw_GBps", "busbw_GBps", "valid"};
  EXPECT_EQ(keys, contract);
  EXPECT_EQ(c["kind"], "collective");
  EXPECT_EQ(c["scope"], "intra_node");
  EXPECT_NEAR(c["algbw_GBps"].get<double>(), 64.0 * 1048576 / 500e-6 / 1e9, 1e-9);
  EXPECT_NEAR(c["busbw_GBps"].get<double>(), 1.75 * c["algbw_GBps"].get<double>(), 1e-9);
  EXPECT_EQ(c["in_place"], false);
  EXPECT_EQ(c["valid"], true);

  const tb::GemmShape g{8192, 8192, 8192, tb::GemmLabel::kSquare};
  const tb::Json gl = tb::with_gemm_result(tb::gemm_params(tb::GemmDtype::kBf16, g), g, 1500.0);
  EXPECT_NEAR(gl["tflops"].get<double>(), 2.0 * 8192.0 * 8192 * 8192 / 1.5e-3 / 1e12, 1e-9);
  EXPECT_EQ(gl["label"], "square");

  const tb::AttentionShape a{2, 32, 8, 128, 8192, true};
  const tb::Json al = tb::with_attention_result(
      tb::attention_params(tb::AttentionPass::kBwd, tb::AttentionImpl::kUnfused, a), a,
      tb::AttentionPass::kBwd, 1000.0);
  EXPECT_EQ(al["impl"], "unfused");
  EXPECT_EQ(al["dtype"], "bf16");
  EXPECT_EQ(al["causal"], true);
  EXPECT_NEAR(al["tflops"].get<double>(),
              tb::attention_flops(a, tb::AttentionPass::kBwd) / 1e-3 / 1e12, 1e-9);

  const tb::Json m = tb::with_memory_result(tb::memory_params(tb::MemDirection::kD2D, tb::kGiB),
                                            2.0 * tb::kGiB, 1000.0);
  EXPECT_NEAR(m["GBps"].get<double>(), 2.0 * 1073741824 / 1e-3 / 1e9, 1e-9);
  const tb::Json adam = tb::with_cpu_adam_result(tb::cpu_adam_params(1000000), 1000000, 2000.0);
  EXPECT_NEAR(adam["params_per_s"].get<double>(), 5e8, 1e-3);
}

TEST(CalibrateSweep, OptimizerTrafficAndTensors) {
  // Read p, g, m, v; write p, m, v: 2 P + G + 4 S bytes per parameter.
  EXPECT_EQ(tb::adamw_bytes_per_param(tb::OptimizerPrecision::kFp32Master), 2 * 4 + 2 + 4 * 4);
  EXPECT_EQ(tb::adamw_bytes_per_param(tb::OptimizerPrecision::kBf16), 2 * 2 + 2 + 4 * 2);
  EXPECT_EQ(tb::optimizer_dtypes(tb::OptimizerPrecision::kFp32Master).grad, "bf16");
  EXPECT_EQ(tb::optimizer_dtypes(tb::OptimizerPrecision::kFp32Master).state, "fp32");
  const auto sizes = tb::optimizer_tensor_sizes(100'000'000);
  ASSERT_EQ(sizes.size(), 6u);  // five 4096 x 4096 weights and the rest
  EXPECT_EQ(sizes.front(), tb::kOptimizerTensorParams);
  std::int64_t total = 0;
  for (const auto n : sizes) total += n;
  EXPECT_EQ(total, 100'000'000);
  EXPECT_EQ(tb::optimizer_tensor_sizes(8, 4), (std::vector<std::int64_t>{4, 4}));
  EXPECT_THROW((void)tb::optimizer_tensor_sizes(0), std::invalid_argument);
  EXPECT_EQ(tb::optimizer_param_counts(true), std::vector<std::int64_t>{100'000'000});
  EXPECT_EQ(tb::optimizer_param_counts(false).back(), 1'000'000'000);
}

TEST(CalibrateSweep, ElementwiseTraffic) {
  struct Row {
    tb::ElementwiseOp op;
    std::int64_t bytes_per_element;
  };
  const Row rows[] = {{tb::ElementwiseOp::kCopy, 4},
                      {tb::ElementwiseOp::kCast, 6},
                      {tb::ElementwiseOp::kAdd, 6},
                      {tb::ElementwiseOp::kRmsNorm, 4}};
  const std::int64_t n = 16 * tb::kMiB;
  for (const Row& r : rows) {
    SCOPED_TRACE(std::string(tb::to_string(r.op)));
    const std::int64_t weight = r.op == tb::ElementwiseOp::kRmsNorm ? 2 * tb::kRmsNormWidth : 0;
    EXPECT_EQ(tb::elementwise_bytes(r.op, n), r.bytes_per_element * n + weight);
  }
  EXPECT_EQ(tb::elementwise_dtypes(tb::ElementwiseOp::kCast).in, "fp32");
  for (const bool quick : {true, false}) {
    for (const auto e : tb::elementwise_sizes(quick)) EXPECT_EQ(e % tb::kRmsNormWidth, 0);
  }
  EXPECT_EQ(tb::launch_gemm_sizes().front(), 64);
}

TEST(CalibrateMeasurement, NewKindsCarryWhatTheyMeasured) {
  const tb::Json opt = tb::with_optimizer_result(
      tb::optimizer_params(tb::OptimizerPrecision::kFp32Master, 1'000'000'000, 60), 8000.0);
  std::vector<std::string> keys;
  for (const auto& item : opt.items()) keys.push_back(item.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"kind", "optimizer", "param_dtype", "grad_dtype",
                                            "state_dtype", "params", "tensors", "bytes", "time_us",
                                            "GBps", "params_per_s"}));
  EXPECT_EQ(opt["bytes"], 26'000'000'000);
  EXPECT_NEAR(opt["GBps"].get<double>(), 26e9 / 8e-3 / 1e9, 1e-9);
  EXPECT_NEAR(opt["params_per_s"].get<double>(), 1e9 / 8e-3, 1e-3);
  EXPECT_EQ(tb::resume_key(opt), tb::resume_key(tb::optimizer_params(
                                     tb::OptimizerPrecision::kFp32Master, 1'000'000'000, 60)));

  const tb::Json norm = tb::with_elementwise_result(
      tb::elementwise_params(tb::ElementwiseOp::kRmsNorm, tb::kMiB), 10.0);
  EXPECT_EQ(norm["kind"], "elementwise");
  EXPECT_EQ(norm["op"], "rmsnorm");
  EXPECT_EQ(norm["row"], tb::kRmsNormWidth);
  EXPECT_NEAR(norm["GBps"].get<double>(), (4.0 * tb::kMiB + 8192) / 10e-6 / 1e9, 1e-9);
  EXPECT_FALSE(tb::elementwise_params(tb::ElementwiseOp::kAdd, tb::kMiB).contains("row"));

  const tb::Json gemm =
      tb::with_launch_result(tb::launch_params(tb::LaunchOp::kGemm, 64, 1000), 4.5);
  EXPECT_EQ(gemm["op"], "gemm");
  EXPECT_EQ(gemm["m"], 64);
  EXPECT_EQ(gemm["launches"], 1000);
  EXPECT_EQ(gemm["time_us"], 4.5);
  EXPECT_FALSE(tb::launch_params(tb::LaunchOp::kEmptyKernel, 0, 1000).contains("m"));

  const tb::AttentionShape a{2, 32, 8, 128, 8192, true};
  const tb::Json cudnn =
      tb::attention_params(tb::AttentionPass::kBwd, tb::AttentionImpl::kCudnn, a);
  const tb::Json unfused =
      tb::attention_params(tb::AttentionPass::kBwd, tb::AttentionImpl::kUnfused, a);
  const tb::Json skip = tb::skipped_line(cudnn, "cuDNN refused: no engine", unfused);
  EXPECT_EQ(skip["kind"], "skipped");
  EXPECT_EQ(skip["point"], cudnn);
  EXPECT_EQ(skip["fallback"], unfused);
  EXPECT_FALSE(tb::skipped_line(cudnn, "x", std::nullopt).contains("fallback"));
  // A skipped point is not done: --resume measures it again.
  EXPECT_NE(tb::resume_key(skip), tb::resume_key(cudnn));
}

TEST(CalibrateMeasurement, ResumeKeyIgnoresMeasuredFields) {
  const tb::Json params = tb::memory_params(tb::MemDirection::kH2D, 256 * tb::kMiB);
  const tb::Json line = tb::with_memory_result(params, 256.0 * tb::kMiB, 12345.0);
  EXPECT_EQ(tb::resume_key(params), tb::resume_key(line));
  EXPECT_NE(tb::resume_key(params),
            tb::resume_key(tb::memory_params(tb::MemDirection::kD2H, 256 * tb::kMiB)));
}

TEST(CalibrateMeasurement, LogResumesValidLinesOnly) {
  const auto dir = fresh_dir("log");
  const auto file = dir / "measurements.jsonl";
  const tb::Json p1 = tb::memory_params(tb::MemDirection::kD2D, tb::kGiB);
  const tb::Json p2 = tb::collective_params(tb::Collective::kAllGather, tb::Scope::kWorld, 16, 2,
                                            tb::CollDtype::kBf16, tb::kMiB);
  const tb::Json p3 = tb::cpu_adam_params(10);
  {
    tb::MeasurementLog log(file, false);
    log.append(tb::with_memory_result(p1, 2.0 * tb::kGiB, 800.0));
    log.append(tb::with_collective_result(p2, 100.0, 0.9375, /*valid=*/false));
  }
  {
    // An interrupted run: half a line at the end.
    std::ofstream out(file, std::ios::app);
    out << R"({"kind":"cpu_adam","params":10,"ti)";
  }
  tb::MeasurementLog resumed(file, true);
  EXPECT_EQ(resumed.resumed_count(), 1u);
  EXPECT_TRUE(resumed.contains(p1));
  EXPECT_FALSE(resumed.contains(p2));  // invalid points are measured again
  EXPECT_FALSE(resumed.contains(p3));
  resumed.append(tb::with_cpu_adam_result(p3, 10, 1.0));
  EXPECT_TRUE(resumed.contains(p3));

  std::ifstream in(file);
  std::string line;
  int parsed = 0;
  while (std::getline(in, line)) {
    if (nlohmann::json::accept(line)) ++parsed;
  }
  EXPECT_EQ(parsed, 3);  // the new line starts on its own line after the cut one

  tb::MeasurementLog fresh(file, false);
  EXPECT_EQ(fresh.resumed_count(), 0u);
  EXPECT_EQ(std::filesystem::file_size(file), 0u);
  std::filesystem::remove_all(dir);
}

TEST(CalibrateProvenance, HasExactlyTheContractKeys) {
  tb::Provenance p;
  p.gpu = "NVIDIA H100 80GB HBM3";
  p.gpu_count = 8;
  p.hosts = {"node1"};
  p.ranks = 8;
  const auto j = tb::to_json(p);
  std::vector<std::string> keys;
  for (const auto& item : j.items()) keys.push_back(item.key());
  const std::vector<std::string> expected{"schema", "tool",   "gpu",     "gpu_count", "hosts",
                                          "nodes",  "ranks",  "driver",  "cuda",      "nccl",
                                          "cublas", "cudnn",  "command", "date",      "sources"};
  EXPECT_EQ(keys, expected);
  EXPECT_EQ(j["schema"], "trainplan.run/1");
  EXPECT_EQ(j["tool"], "trainplan-calibrate");
  EXPECT_TRUE(j["sources"].is_array());
}

TEST(CalibrateProvenance, FormatsVersionsDatesAndCommands) {
  EXPECT_EQ(tb::version_5digit(22809), "2.28.9");   // ncclGetVersion
  EXPECT_EQ(tb::version_5digit(91900), "9.19.0");   // cudnnGetVersion
  EXPECT_EQ(tb::version_5digit(130100), "13.1.0");  // cublasLtGetVersion
  EXPECT_EQ(tb::cuda_version_string(13000), "13.0");
  EXPECT_EQ(tb::cuda_version_string(12040), "12.4");
  const std::string date = tb::iso8601_utc_now();
  EXPECT_EQ(date.size(), 20u);
  EXPECT_EQ(date[10], 'T');
  EXPECT_EQ(date.back(), 'Z');
  const char* argv[] = {"trainplan-calibrate", "-o", "runs/node 1", "--model-shapes", "4096,1"};
  EXPECT_EQ(tb::shell_join(5, argv),
            "trainplan-calibrate -o 'runs/node 1' --model-shapes 4096,1");
}

TEST(CalibrateLaunch, DetectsLaunchers) {
  // Alone.
  auto single = tb::detect_launch(env_of({}), true);
  EXPECT_EQ(single.mode, tb::LaunchMode::kSingleProcess);

  // torchrun: NCCL_COMM_ID one above MASTER_PORT.
  auto torch = tb::detect_launch(env_of({{"RANK", "3"},
                                         {"WORLD_SIZE", "16"},
                                         {"LOCAL_RANK", "3"},
                                         {"MASTER_ADDR", "10.0.0.1"},
                                         {"MASTER_PORT", "29500"}}),
                                 true);
  EXPECT_EQ(torch.mode, tb::LaunchMode::kEnv);
  EXPECT_EQ(torch.rank, 3);
  EXPECT_EQ(torch.world_size, 16);
  EXPECT_EQ(torch.local_rank, 3);
  EXPECT_EQ(torch.nccl_comm_id, "10.0.0.1:29501");

  // A user's NCCL_COMM_ID is kept.
  auto user = tb::detect_launch(
      env_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}, {"NCCL_COMM_ID", "h:1"}}),
      true);
  EXPECT_TRUE(user.nccl_comm_id.empty());

  // IPv6 master address.
  auto v6 = tb::detect_launch(env_of({{"RANK", "0"},
                                      {"WORLD_SIZE", "2"},
                                      {"LOCAL_RANK", "0"},
                                      {"MASTER_ADDR", "fe80::1"},
                                      {"MASTER_PORT", "1000"}}),
                              true);
  EXPECT_EQ(v6.nccl_comm_id, "[fe80::1]:1001");

  // Slurm without MASTER_ADDR: the first host of the step, default port 29500.
  auto slurm = tb::detect_launch(env_of({{"SLURM_PROCID", "9"},
                                         {"SLURM_NTASKS", "16"},
                                         {"SLURM_LOCALID", "1"},
                                         {"SLURM_STEP_NODELIST", "gpu[07-08]"}}),
                                 false);
  EXPECT_EQ(slurm.mode, tb::LaunchMode::kEnv);
  EXPECT_EQ(slurm.rank, 9);
  EXPECT_EQ(slurm.local_rank, 1);
  EXPECT_EQ(slurm.nccl_comm_id, "gpu07:29501");

  // mpirun: MPI when built with it, environment rendezvous otherwise.
  const std::map<std::string, std::string> ompi{{"OMPI_COMM_WORLD_RANK", "1"},
                                                {"OMPI_COMM_WORLD_SIZE", "2"},
                                                {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                                {"MASTER_ADDR", "head"}};
  auto mpi = tb::detect_launch(env_of(ompi), true);
  EXPECT_EQ(mpi.mode, tb::LaunchMode::kMpi);
  EXPECT_EQ(mpi.local_rank, 1);
  auto no_mpi = tb::detect_launch(env_of(ompi), false);
  EXPECT_EQ(no_mpi.mode, tb::LaunchMode::kEnv);
  EXPECT_EQ(no_mpi.rank, 1);
  EXPECT_EQ(no_mpi.nccl_comm_id, "head:29501");
}

TEST(CalibrateLaunch, RejectsBadEnvironment) {
  EXPECT_THROW((void)tb::detect_launch(env_of({{"RANK", "x"}, {"WORLD_SIZE", "2"}}), false),
               std::invalid_argument);
  EXPECT_THROW(
      (void)tb::detect_launch(env_of({{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"},
                                      {"MASTER_ADDR", "h"}}),
                              false),
      std::invalid_argument);
  // Several ranks and nowhere to meet.
  try {
    (void)tb::detect_launch(env_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}}),
                            false);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("MASTER_ADDR"), std::string::npos);
  }
}

TEST(CalibrateLaunch, SlurmFirstHost) {
  EXPECT_EQ(tb::slurm_first_host("gpu[01-04,07],cpu1"), "gpu01");
  EXPECT_EQ(tb::slurm_first_host("node7"), "node7");
  EXPECT_EQ(tb::slurm_first_host("a,b"), "a");
  EXPECT_EQ(tb::slurm_first_host("rack1-n[3-5]-ib"), "rack1-n3-ib");
  EXPECT_EQ(tb::slurm_first_host("x[2,4]y[10-11]"), "x2y10");
}

TEST(CalibrateOptions, QuickDefaultsAndErrors) {
  {
    CLI::App app;
    tb::Options o;
    tb::setup_options(app, o);
    app.parse("--quick -o run", false);
    tb::finalize_options(app, o);
    EXPECT_TRUE(o.comm && o.gemm && o.attention && o.membw);
    EXPECT_TRUE(o.optimizer && o.elementwise && o.launch);
    EXPECT_FALSE(o.cpu_adam);
    EXPECT_EQ(o.optimizer_params, std::vector<std::int64_t>{100'000'000});
    EXPECT_EQ(o.max_bytes, tb::kGiB);
    EXPECT_EQ(o.collectives.size(), 3u);
    EXPECT_EQ(o.gemm_dtypes, std::vector<tb::GemmDtype>{tb::GemmDtype::kBf16});
  }
  {
    CLI::App app;
    tb::Options o;
    tb::setup_options(app, o);
    app.parse("--comm --dtype bf16,half -o run", false);
    tb::finalize_options(app, o);
    EXPECT_TRUE(o.comm);
    EXPECT_FALSE(o.gemm);
    EXPECT_EQ(o.max_bytes, 4 * tb::kGiB);
    EXPECT_EQ(o.collectives.size(), 6u);
    EXPECT_EQ(o.dtypes, (std::vector<tb::CollDtype>{tb::CollDtype::kBf16, tb::CollDtype::kHalf}));
  }
  {
    CLI::App app;
    tb::Options o;
    tb::setup_options(app, o);
    app.parse("--dtype fp32 -o run", false);
    EXPECT_THROW(tb::finalize_options(app, o), std::invalid_argument);
  }
  {
    CLI::App app;
    tb::Options o;
    tb::setup_options(app, o);
    app.parse("--min-bytes 1M --max-bytes 1K -o run", false);
    EXPECT_THROW(tb::finalize_options(app, o), std::invalid_argument);
  }
  {
    CLI::App app;
    tb::Options o;
    tb::setup_options(app, o);
    app.parse("--optimizer --optimizer-params 1e9,250000000 --launches 500 -o run", false);
    tb::finalize_options(app, o);
    EXPECT_TRUE(o.optimizer);
    EXPECT_FALSE(o.elementwise || o.launch || o.attention || o.comm);
    EXPECT_EQ(o.optimizer_params, (std::vector<std::int64_t>{1'000'000'000, 250'000'000}));
    EXPECT_EQ(o.launches, 500);
  }
  for (const char* bad : {"--optimizer-params 1.5 -o run", "--optimizer-params 0 -o run",
                          "--optimizer-params 1e8x -o run"}) {
    SCOPED_TRACE(bad);
    CLI::App app;
    tb::Options o;
    tb::setup_options(app, o);
    app.parse(bad, false);
    EXPECT_THROW(tb::finalize_options(app, o), std::invalid_argument);
  }
  {
    CLI::App app;
    tb::Options o;
    tb::setup_options(app, o);
    EXPECT_THROW(app.parse("--launches 5 -o run", false), CLI::ValidationError);
  }
}

TEST(CalibrateCpuAdam, OneStepMatchesAdamW) {
  // Step 1 from zero moments: m = 0.1 g, v = 0.001 g^2, bias-corrected m^ = g, v^ = g^2, so the
  // update is lr * g / (|g| + eps) after the decoupled decay p *= 1 - lr * wd.
  std::vector<float> p{1.0f, -2.0f, 0.5f};
  const std::vector<float> g{0.5f, -1.0f, 0.0f};
  std::vector<float> m(3, 0.0f);
  std::vector<float> v(3, 0.0f);
  const tb::AdamWConfig cfg{0.1f, 0.9f, 0.999f, 1e-8f, 0.01f};
  tb::adamw_step(p, g, m, v, 1, cfg, 2);
  const float decay = 1.0f - 0.1f * 0.01f;
  EXPECT_NEAR(p[0], 1.0f * decay - 0.1f, 1e-6);
  EXPECT_NEAR(p[1], -2.0f * decay + 0.1f, 1e-6);
  EXPECT_NEAR(p[2], 0.5f * decay, 1e-6);
  EXPECT_NEAR(m[1], -0.1f, 1e-7);
  EXPECT_NEAR(v[1], 0.001f, 1e-7);
  EXPECT_THROW(tb::adamw_step(p, std::vector<float>(2), m, v, 1, cfg, 1), std::invalid_argument);
  // The constants the GPU kernel shares: step 1 undoes the moments' bias exactly.
  const tb::AdamWStepScalars c = tb::adamw_step_scalars(cfg, 1);
  EXPECT_NEAR(c.lr_decay, decay, 1e-7);
  EXPECT_NEAR(c.step_size, 0.1f / (1.0f - 0.9f), 1e-5);
  EXPECT_NEAR(c.bias2_sqrt, std::sqrt(1.0f - 0.999f), 1e-6);
  EXPECT_THROW((void)tb::adamw_step_scalars(cfg, 0), std::invalid_argument);
  EXPECT_GT(tb::time_cpu_adam_us(100000, 1, 2, 2), 0.0);
}
