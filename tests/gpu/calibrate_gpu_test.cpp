// GPU checks of trainplan-calibrate, one case per ctest entry (label `gpu`):
//   matmul_layout  cuBLASLt row-major mapping (NN, NT, TN, batched) against a CPU product
//   gemm_peak      bf16 GEMM at 8192^3 reaches more than half the device's dense bf16 peak
//   hbm_copy       device-to-device copy bandwidth is plausible against the HBM peak
//   attention      unfused (and cuDNN, where it runs) attention forward against a CPU reference
//   all_reduce     an all_reduce sweep over all local GPUs verifies (needs two GPUs)
// Exit code 77 with "SKIPPED: ..." where the check cannot run (ctest SKIP_RETURN_CODE).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attention.hpp"
#include "bootstrap.hpp"
#include "comm.hpp"
#include "device.hpp"
#include "gemm.hpp"
#include "lt_matmul.hpp"
#include "membw.hpp"
#include "measurement.hpp"
#include "options.hpp"
#include "progress.hpp"

namespace tb = trainplan::calibrate::bench;

namespace {

constexpr int kSkip = 77;

struct Skip {
  std::string why;
};

int device_count_or_skip() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    throw Skip{fmt::format("no CUDA device ({})", status != cudaSuccess
                                                       ? cudaGetErrorString(status)
                                                       : "0 devices")};
  }
  return count;
}

int attribute(cudaDeviceAttr a, int device) {
  int v = 0;
  TP_CUDA(cudaDeviceGetAttribute(&v, a, device));
  return v;
}

std::uint16_t to_bf16_bits(float f) {
  std::uint32_t u = 0;
  std::memcpy(&u, &f, sizeof u);
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
  return static_cast<std::uint16_t>(u >> 16);
}

float from_bf16_bits(std::uint16_t b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f = 0;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Dense bf16 tensor-core FLOP per clock per SM, from datasheet peaks: A100 312 TFLOPS at 1410 MHz
// on 108 SMs (2048); A10 125 TFLOPS at 1695 MHz on 72 SMs and L40S 362 TFLOPS at 2520 MHz on
// 142 SMs (1024); H100 SXM 989 TFLOPS at 1830 MHz on 132 SMs (4096); B200 2250 TFLOPS on 148 SMs
// (8192). GeForce parts accumulate fp32 at half rate and would need their own row.
int bf16_flops_per_clock_per_sm(int cc) {
  switch (cc) {
    case 80:
      return 2048;
    case 86:
    case 87:
    case 89:
      return 1024;
    case 90:
      return 4096;
    case 100:
    case 103:
      return 8192;
    default:
      return 0;
  }
}

int check_matmul_layout() {
  device_count_or_skip();
  const tb::DeviceGuard guard(0);
  const tb::CublasLtPtr lt = tb::make_cublaslt();
  const tb::StreamPtr stream = tb::make_stream();
  const tb::DeviceBuffer workspace(tb::kCublasWorkspaceBytes);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> small(-3, 3);  // products of small integers are exact in fp32
  int failures = 0;
  const int m = 48, n = 32, k = 64, batch = 2;
  for (const bool ta : {false, true}) {
    for (const bool tbt : {false, true}) {
      // Stored shapes: op(A) is m x k, op(B) is k x n.
      const std::int64_t ar = ta ? k : m, ac = ta ? m : k;
      const std::int64_t br = tbt ? n : k, bc = tbt ? k : n;
      std::vector<float> a(static_cast<std::size_t>(batch * ar * ac));
      std::vector<float> b(static_cast<std::size_t>(batch * br * bc));
      for (auto& x : a) x = static_cast<float>(small(rng));
      for (auto& x : b) x = static_cast<float>(small(rng));
      std::vector<std::uint16_t> a16(a.size()), b16(b.size()), c16(static_cast<std::size_t>(batch * m * n));
      for (std::size_t i = 0; i < a.size(); ++i) a16[i] = to_bf16_bits(a[i]);
      for (std::size_t i = 0; i < b.size(); ++i) b16[i] = to_bf16_bits(b[i]);
      const tb::DeviceBuffer da(a16.size() * 2), db(b16.size() * 2), dc(c16.size() * 2);
      TP_CUDA(cudaMemcpy(da.get(), a16.data(), da.bytes(), cudaMemcpyHostToDevice));
      TP_CUDA(cudaMemcpy(db.get(), b16.data(), db.bytes(), cudaMemcpyHostToDevice));
      tb::MatmulSpec spec;
      spec.a = {CUDA_R_16BF, ar, ac, ta, ar * ac};
      spec.b = {CUDA_R_16BF, br, bc, tbt, br * bc};
      spec.c = {CUDA_R_16BF, m, n, false, m * n};
      spec.batch = batch;
      const tb::LtMatmul mm(lt.get(), spec, workspace.bytes());
      mm.run(da.get(), db.get(), dc.get(), workspace.get(), stream.get());
      TP_CUDA(cudaStreamSynchronize(stream.get()));
      TP_CUDA(cudaMemcpy(c16.data(), dc.get(), dc.bytes(), cudaMemcpyDeviceToHost));
      int wrong = 0;
      for (int z = 0; z < batch; ++z) {
        for (int i = 0; i < m; ++i) {
          for (int j = 0; j < n; ++j) {
            float want = 0;
            for (int p = 0; p < k; ++p) {
              const float av = ta ? a[static_cast<std::size_t>(z * ar * ac + p * ac + i)]
                                  : a[static_cast<std::size_t>(z * ar * ac + i * ac + p)];
              const float bv = tbt ? b[static_cast<std::size_t>(z * br * bc + j * bc + p)]
                                   : b[static_cast<std::size_t>(z * br * bc + p * bc + j)];
              want += av * bv;
            }
            const float got = from_bf16_bits(c16[static_cast<std::size_t>(z * m * n + i * n + j)]);
            if (std::fabs(got - want) > 0.01f * std::fabs(want) + 1e-3f) ++wrong;
          }
        }
      }
      fmt::print("op(A){} op(B){}: {} wrong of {}\n", ta ? "=A^T" : "=A", tbt ? "=B^T" : "=B", wrong,
                 batch * m * n);
      failures += wrong;
    }
  }
  return failures == 0 ? 0 : 1;
}

int check_gemm_peak() {
  device_count_or_skip();
  const int cc = attribute(cudaDevAttrComputeCapabilityMajor, 0) * 10 +
                 attribute(cudaDevAttrComputeCapabilityMinor, 0);
  const int per_sm = bf16_flops_per_clock_per_sm(cc);
  if (per_sm == 0) throw Skip{fmt::format("no bf16 peak known for compute capability {}", cc)};
  const double clock_hz = 1e3 * attribute(cudaDevAttrClockRate, 0);  // kHz, the boost clock
  const double peak = per_sm * attribute(cudaDevAttrMultiProcessorCount, 0) * clock_hz;
  tb::GemmBench bench(0);
  const tb::GemmShape g{8192, 8192, 8192, tb::GemmLabel::kSquare};
  const double t_us = bench.time_us(g, tb::GemmDtype::kBf16, 20, 50);
  const double achieved = tb::gemm_flops(g) / (t_us * 1e-6);
  fmt::print("bf16 8192^3: {:.1f} us, {:.1f} TFLOP/s of {:.1f} peak ({:.0f} %)\n", t_us,
             achieved / 1e12, peak / 1e12, 100 * achieved / peak);
  return achieved > 0.5 * peak ? 0 : 1;
}

int check_hbm_copy() {
  device_count_or_skip();
  // DDR: two transfers per memory clock over the bus width.
  const double peak = 2.0 * 1e3 * attribute(cudaDevAttrMemoryClockRate, 0) *
                      attribute(cudaDevAttrGlobalMemoryBusWidth, 0) / 8.0;
  tb::MemoryBench bench(0);
  const std::size_t bytes = std::size_t{1} << 30;
  const auto t = bench.d2d_us(bytes, 5, 20);
  const double traffic = 2.0 * static_cast<double>(bytes);
  const double ce = traffic / (t.memcpy_us * 1e-6);
  const double sm = traffic / (t.kernel_us * 1e-6);
  fmt::print("d2d 1 GiB: copy engine {:.0f} GB/s, copy kernel {:.0f} GB/s, peak {:.0f} GB/s\n",
             ce / 1e9, sm / 1e9, peak / 1e9);
  const double best = std::max(ce, sm);
  // Streaming copies reach 80-90 % of peak; anything above it means the timing is wrong.
  return best > 0.5 * peak && best < 1.05 * peak ? 0 : 1;
}

// softmax(scale * Q K^T [causal]) V for one query head against its KV head, on the CPU.
std::vector<float> reference_attention(const tb::AttentionShape& a, const std::vector<float>& q,
                                       const std::vector<float>& k, const std::vector<float>& v) {
  const auto s = static_cast<std::size_t>(a.seq), d = static_cast<std::size_t>(a.head_dim);
  const auto h = static_cast<std::size_t>(a.heads), g = static_cast<std::size_t>(a.heads / a.kv_heads);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  std::vector<float> o(q.size());
  std::vector<float> p(s);
  for (std::size_t bi = 0; bi < static_cast<std::size_t>(a.batch); ++bi) {
    for (std::size_t hi = 0; hi < h; ++hi) {
      const std::size_t kv = bi * static_cast<std::size_t>(a.kv_heads) + hi / g;
      const float* qh = &q[(bi * h + hi) * s * d];
      const float* kh = &k[kv * s * d];
      const float* vh = &v[kv * s * d];
      float* oh = &o[(bi * h + hi) * s * d];
      for (std::size_t i = 0; i < s; ++i) {
        const std::size_t cols = a.causal ? i + 1 : s;
        float mx = -INFINITY;
        for (std::size_t j = 0; j < cols; ++j) {
          float dot = 0;
          for (std::size_t x = 0; x < d; ++x) dot += qh[i * d + x] * kh[j * d + x];
          p[j] = scale * dot;
          mx = std::max(mx, p[j]);
        }
        float sum = 0;
        for (std::size_t j = 0; j < cols; ++j) sum += (p[j] = std::exp(p[j] - mx));
        for (std::size_t x = 0; x < d; ++x) {
          float acc = 0;
          for (std::size_t j = 0; j < cols; ++j) acc += p[j] * vh[j * d + x];
          oh[i * d + x] = acc / sum;
        }
      }
    }
  }
  return o;
}

int compare(const std::string& what, const std::vector<float>& got, const std::vector<float>& want) {
  std::size_t wrong = 0;
  float worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const float err = std::fabs(got[i] - want[i]);
    worst = std::max(worst, err);
    // Scores, probabilities and outputs pass through bf16.
    if (!(err <= 0.03f + 0.03f * std::fabs(want[i]))) ++wrong;
  }
  fmt::print("{}: {} of {} elements off, worst abs error {:.4f}\n", what, wrong, got.size(), worst);
  return wrong == 0 ? 0 : 1;
}

int check_attention() {
  device_count_or_skip();
  tb::AttentionBench bench(0);
  int failures = 0;
  for (const bool causal : {false, true}) {
    const tb::AttentionShape a{2, 4, 2, 64, 256, causal};
    bench.set_shape(a);
    const auto q = bench.to_host(tb::AttentionBench::Tensor::kQ);
    const auto k = bench.to_host(tb::AttentionBench::Tensor::kK);
    const auto v = bench.to_host(tb::AttentionBench::Tensor::kV);
    const auto want = reference_attention(a, q, k, v);
    (void)bench.unfused_us(tb::AttentionPass::kFwd, 0, 1);
    failures += compare(fmt::format("unfused fwd{}", causal ? " causal" : ""),
                        bench.to_host(tb::AttentionBench::Tensor::kO), want);
    (void)bench.unfused_us(tb::AttentionPass::kBwd, 0, 1);  // runs; no reference for the gradients
    std::string why_not;
    if (bench.cudnn_us(tb::AttentionPass::kFwd, 0, 1, why_not)) {
      failures += compare(fmt::format("cudnn fwd{}", causal ? " causal" : ""),
                          bench.to_host(tb::AttentionBench::Tensor::kO), want);
      if (!bench.cudnn_us(tb::AttentionPass::kBwd, 0, 1, why_not)) {
        fmt::print("cudnn bwd not run: {}\n", why_not);
      }
    } else {
      fmt::print("cudnn fwd{} not run: {}\n", causal ? " causal" : "", why_not);
    }
  }
  return failures == 0 ? 0 : 1;
}

int check_all_reduce() {
  const int count = device_count_or_skip();
  if (count < 2) throw Skip{"one CUDA device: an all_reduce needs two"};
  tb::Options o;
  o.collectives = {tb::Collective::kAllReduce};
  o.dtypes = {tb::CollDtype::kFloat, tb::CollDtype::kBf16};
  o.min_bytes = 1024;
  o.max_bytes = 64 << 20;
  o.iters = 5;
  o.warmup = 2;
  tb::Bootstrap boot(tb::LaunchInfo{}, count);
  tb::CommSuite comm(boot, 120);
  tb::Progress progress(0, true);
  const auto points = comm.plan(o, progress);
  const auto dir = std::filesystem::temp_directory_path() / "trainplan_calibrate_gpu_all_reduce";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  {
    tb::MeasurementLog log(dir / "measurements.jsonl", false);
    tb::Progress run_progress(points.size(), true);
    comm.run(points, o, &log, run_progress);
  }
  comm.shutdown();
  std::ifstream in(dir / "measurements.jsonl");
  std::string line;
  std::size_t lines = 0;
  std::size_t invalid = 0;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    ++lines;
    if (j.at("valid") != true || j.at("ranks") != count) ++invalid;
  }
  fmt::print("{} all_reduce points over {} GPUs, {} invalid\n", lines, count, invalid);
  return lines == points.size() && lines > 0 && invalid == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string which = argc > 1 ? argv[1] : "";
  try {
    if (which == "matmul_layout") return check_matmul_layout();
    if (which == "gemm_peak") return check_gemm_peak();
    if (which == "hbm_copy") return check_hbm_copy();
    if (which == "attention") return check_attention();
    if (which == "all_reduce") return check_all_reduce();
    fmt::print(stderr, "usage: calibrate_gpu_test matmul_layout|gemm_peak|hbm_copy|attention|all_reduce\n");
    return 2;
  } catch (const Skip& s) {
    fmt::print("SKIPPED: {}\n", s.why);
    return kSkip;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
