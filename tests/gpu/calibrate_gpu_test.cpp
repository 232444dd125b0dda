// GPU checks of trainplan-calibrate, one case per ctest entry (label `gpu`):
//   matmul_layout  cuBLASLt row-major mapping (NN, NT, TN, batched) against a CPU product
//   gemm_peak      bf16 GEMM at 8192^3 reaches more than half the device's dense bf16 peak
//   hbm_copy       device-to-device copy bandwidth is plausible against the HBM peak
//   attention      unfused and cuDNN attention forward, causal or not, against a CPU reference
//   attention_bwd  unfused and cuDNN attention dQ, dK, dV (grouped KV heads, causal or not)
//                  against a CPU reference
//   adamw          the multi-tensor AdamW kernel against the CPU step, fp32 master weights and bf16
//   elementwise    copy, cast, add and RMSNorm kernels against the CPU
//   launch         empty-kernel and small-GEMM launch overheads are measured and plausible
//   all_reduce     an all_reduce sweep over all local GPUs verifies (needs two GPUs)
// Exit code 77 with "SKIPPED: ..." where the check cannot run (ctest SKIP_RETURN_CODE).
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "attention.hpp"
#include "bootstrap.hpp"
#include "comm.hpp"
#include "cpu_adam.hpp"
#include "device.hpp"
#include "elementwise.hpp"
#include "gemm.hpp"
#include "host_values.hpp"
#include "kernels.hpp"
#include "launch_overhead.hpp"
#include "lt_matmul.hpp"
#include "measurement.hpp"
#include "membw.hpp"
#include "optimizer.hpp"
#include "options.hpp"
#include "progress.hpp"
#include "sweep.hpp"

namespace tb = trainplan::calibrate;

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

using tb::from_bf16_bits;
using tb::to_bf16_bits;

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

// cuDNN has fused attention for bf16 from Ampere (compute capability 8.0) on: a refusal there is
// a failure of the graph this project builds, not a missing feature.
bool cudnn_attention_expected() { return attribute(cudaDevAttrComputeCapabilityMajor, 0) >= 8; }

int check_attention() {
  device_count_or_skip();
  tb::AttentionBench bench(0);
  int failures = 0;
  for (const bool causal : {false, true}) {
    const tb::AttentionShape a{2, 4, 2, 64, 256, causal};
    const std::string tag = causal ? " causal" : "";
    bench.set_shape(a);
    const auto q = bench.to_host(tb::AttentionBench::Tensor::kQ);
    const auto k = bench.to_host(tb::AttentionBench::Tensor::kK);
    const auto v = bench.to_host(tb::AttentionBench::Tensor::kV);
    const auto want = reference_attention(a, q, k, v);
    (void)bench.unfused_us(tb::AttentionPass::kFwd, 0, 1);
    failures += compare("unfused fwd" + tag, bench.to_host(tb::AttentionBench::Tensor::kO), want);
    std::string why_not;
    if (bench.cudnn_us(tb::AttentionPass::kFwd, 0, 1, why_not)) {
      failures += compare(fmt::format("cudnn fwd{} ({} graph)", tag, bench.cudnn_forward_graph()),
                          bench.to_host(tb::AttentionBench::Tensor::kO), want);
    } else {
      fmt::print("cudnn fwd{} not run: {}\n", tag, why_not);
      if (cudnn_attention_expected()) ++failures;
    }
  }
  return failures == 0 ? 0 : 1;
}

struct Gradients {
  std::vector<float> dq, dk, dv;
};

// dQ, dK, dV of softmax(scale * Q K^T [causal]) V for the upstream gradient dO, on the CPU in fp32:
// dV = P^T dO, dP = dO V^T, dS = P * (dP - rowsum(dO * O)), dQ = scale dS K, dK = scale dS^T Q,
// with dK and dV summed over the query heads that share a KV head.
Gradients reference_attention_backward(const tb::AttentionShape& a, const std::vector<float>& q,
                                       const std::vector<float>& k, const std::vector<float>& v,
                                       const std::vector<float>& d_o) {
  const auto s = static_cast<std::size_t>(a.seq), d = static_cast<std::size_t>(a.head_dim);
  const auto h = static_cast<std::size_t>(a.heads),
             g = static_cast<std::size_t>(a.heads / a.kv_heads);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  Gradients out{std::vector<float>(q.size()), std::vector<float>(k.size()),
                std::vector<float>(v.size())};
  std::vector<float> p(s * s), dp(s * s), o(s * d), delta(s);
  for (std::size_t bi = 0; bi < static_cast<std::size_t>(a.batch); ++bi) {
    for (std::size_t hi = 0; hi < h; ++hi) {
      const std::size_t kv = bi * static_cast<std::size_t>(a.kv_heads) + hi / g;
      const float* qh = &q[(bi * h + hi) * s * d];
      const float* doh = &d_o[(bi * h + hi) * s * d];
      const float* kh = &k[kv * s * d];
      const float* vh = &v[kv * s * d];
      float* dqh = &out.dq[(bi * h + hi) * s * d];
      float* dkh = &out.dk[kv * s * d];
      float* dvh = &out.dv[kv * s * d];
      for (std::size_t i = 0; i < s; ++i) {
        const std::size_t cols = a.causal ? i + 1 : s;
        float mx = -INFINITY;
        for (std::size_t j = 0; j < s; ++j) {
          float dot = 0;
          for (std::size_t x = 0; x < d; ++x) dot += qh[i * d + x] * kh[j * d + x];
          p[i * s + j] = j < cols ? scale * dot : -INFINITY;
          mx = std::max(mx, p[i * s + j]);
        }
        float sum = 0;
        for (std::size_t j = 0; j < s; ++j) sum += (p[i * s + j] = std::exp(p[i * s + j] - mx));
        for (std::size_t j = 0; j < s; ++j) p[i * s + j] /= sum;
        for (std::size_t x = 0; x < d; ++x) {
          float acc = 0;
          for (std::size_t j = 0; j < s; ++j) acc += p[i * s + j] * vh[j * d + x];
          o[i * d + x] = acc;
        }
        delta[i] = 0;
        for (std::size_t x = 0; x < d; ++x) delta[i] += doh[i * d + x] * o[i * d + x];
        for (std::size_t j = 0; j < s; ++j) {
          float dot = 0;
          for (std::size_t x = 0; x < d; ++x) dot += doh[i * d + x] * vh[j * d + x];
          dp[i * s + j] = p[i * s + j] * (dot - delta[i]);  // dS
        }
      }
      for (std::size_t i = 0; i < s; ++i) {
        for (std::size_t j = 0; j < s; ++j) {
          const float ds = scale * dp[i * s + j];
          const float pij = p[i * s + j];
          for (std::size_t x = 0; x < d; ++x) {
            dqh[i * d + x] += ds * kh[j * d + x];
            dkh[j * d + x] += ds * qh[i * d + x];
            dvh[j * d + x] += pij * doh[i * d + x];
          }
        }
      }
    }
  }
  return out;
}

// Relative Frobenius error: gradients are small and of mixed sign, so elementwise tolerances say
// little; a wrong layout or a missing term gives an error of order one.
int compare_norm(const std::string& what, const std::vector<float>& got,
                 const std::vector<float>& want, double tolerance) {
  double diff = 0, norm = 0;
  float worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double e = static_cast<double>(got[i]) - want[i];
    diff += e * e;
    norm += static_cast<double>(want[i]) * want[i];
    worst = std::max(worst, std::fabs(got[i] - want[i]));
  }
  const double rel = norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
  const bool ok = rel <= tolerance;  // false for NaN
  fmt::print("{}: relative error {:.4f} (tolerance {}), worst abs error {:.5f}{}\n", what, rel,
             tolerance, worst, ok ? "" : "  FAILED");
  return ok ? 0 : 1;
}

int check_attention_bwd() {
  device_count_or_skip();
  tb::AttentionBench bench(0);
  // P and dS pass through bf16 (unfused) and the outputs are bf16: about 1 % of the norm.
  constexpr double kTolerance = 0.03;
  int failures = 0;
  for (const bool causal : {false, true}) {
    for (const std::int64_t kv_heads : {2, 4}) {
      const tb::AttentionShape a{2, 4, kv_heads, 64, 256, causal};
      const std::string tag =
          fmt::format("{}{}", kv_heads == a.heads ? " mha" : " gqa", causal ? " causal" : "");
      bench.set_shape(a);
      const auto want =
          reference_attention_backward(a, bench.to_host(tb::AttentionBench::Tensor::kQ),
                                       bench.to_host(tb::AttentionBench::Tensor::kK),
                                       bench.to_host(tb::AttentionBench::Tensor::kV),
                                       bench.to_host(tb::AttentionBench::Tensor::kDO));
      const auto check = [&](const std::string& impl) {
        failures += compare_norm(impl + " dQ" + tag, bench.to_host(tb::AttentionBench::Tensor::kDQ),
                                 want.dq, kTolerance);
        failures += compare_norm(impl + " dK" + tag, bench.to_host(tb::AttentionBench::Tensor::kDK),
                                 want.dk, kTolerance);
        failures += compare_norm(impl + " dV" + tag, bench.to_host(tb::AttentionBench::Tensor::kDV),
                                 want.dv, kTolerance);
      };
      (void)bench.unfused_us(tb::AttentionPass::kBwd, 0, 1);
      check("unfused");
      std::string why_not;
      if (bench.cudnn_us(tb::AttentionPass::kBwd, 0, 1, why_not)) {
        check(fmt::format("cudnn ({} fwd)", bench.cudnn_forward_graph()));
      } else {
        fmt::print("cudnn bwd{} not run: {}\n", tag, why_not);
        if (cudnn_attention_expected()) ++failures;
      }
    }
  }
  return failures == 0 ? 0 : 1;
}

float round_bf16(float f) { return from_bf16_bits(to_bf16_bits(f)); }

// The AdamW step of cpu_adam.cpp with the parameters and moments rounded to bf16 after each update,
// as the all-bf16 kernel stores them.
void adamw_bf16_reference(std::vector<float>& p, const std::vector<float>& g, std::vector<float>& m,
                          std::vector<float>& v, int step, const tb::AdamWConfig& cfg) {
  const tb::AdamWStepScalars c = tb::adamw_step_scalars(cfg, step);
  for (std::size_t i = 0; i < p.size(); ++i) {
    float pf = p[i] * c.lr_decay;
    const float mf = cfg.beta1 * m[i] + (1.0f - cfg.beta1) * g[i];
    const float vf = cfg.beta2 * v[i] + (1.0f - cfg.beta2) * g[i] * g[i];
    pf -= c.step_size * mf / (std::sqrt(vf) / c.bias2_sqrt + cfg.eps);
    p[i] = round_bf16(pf);
    m[i] = round_bf16(mf);
    v[i] = round_bf16(vf);
  }
}

int check_adamw() {
  device_count_or_skip();
  // Odd sizes: chunk tails, and tensors that start off a 4-element boundary.
  const std::vector<std::int64_t> sizes{1000, tb::kAdamWChunk + 3, 7, 3 * 4096 + 1};
  std::int64_t n = 0;
  for (const auto x : sizes) n += x;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  std::vector<float> p0(static_cast<std::size_t>(n)), g(p0.size());
  for (auto& x : p0) x = round_bf16(uni(rng));  // exact in both precisions
  for (auto& x : g) x = round_bf16(0.01f * uni(rng));
  tb::OptimizerBench bench(0);
  constexpr int kSteps = 3;
  int failures = 0;
  for (const auto precision :
       {tb::OptimizerPrecision::kFp32Master, tb::OptimizerPrecision::kBf16}) {
    if (const auto why_not = bench.prepare(precision, sizes)) throw Skip{*why_not};
    const bool bf16 = precision == tb::OptimizerPrecision::kBf16;
    tb::AdamWConfig cfg;
    // bf16 parameters near 1 have a spacing of 2^-8: a larger learning rate makes the steps
    // visible.
    if (bf16) cfg.lr = 0.05f;
    const std::vector<float> got = bench.run_steps(p0, g, kSteps, cfg);
    std::vector<float> want = p0, m(p0.size(), 0.0f), v(p0.size(), 0.0f);
    for (int step = 1; step <= kSteps; ++step) {
      if (bf16) {
        adamw_bf16_reference(want, g, m, v, step, cfg);
      } else {
        tb::adamw_step(want, g, m, v, step, cfg, 1);
      }
    }
    // fp32: a few ulps of the parameters, against updates of 1e-4 per step. bf16: one bf16 spacing.
    const float tolerance = bf16 ? 1.0f / 128 : 2e-6f;
    std::size_t wrong = 0;
    float worst = 0, moved = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      const float err = std::fabs(got[i] - want[i]);
      worst = std::max(worst, err);
      moved = std::max(moved, std::fabs(got[i] - p0[i]));
      if (!(err <= tolerance)) ++wrong;
    }
    fmt::print(
        "adamw {} x {} steps, {} params in {} tensors: {} off, worst abs error {:.2e}, "
        "largest change {:.2e}\n",
        tb::to_string(precision), kSteps, n, sizes.size(), wrong, worst, moved);
    if (wrong != 0 || !(moved > 10 * tolerance)) ++failures;
  }
  return failures == 0 ? 0 : 1;
}

int check_elementwise() {
  device_count_or_skip();
  tb::ElementwiseBench bench(0);
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> uni(-2.0f, 2.0f);
  const auto random = [&](std::size_t count) {
    std::vector<float> x(count);
    for (auto& e : x) e = uni(rng);
    return x;
  };
  int failures = 0;
  const auto report = [&](const std::string& what, const std::vector<float>& got,
                          const std::vector<float>& want, float rel_tol) {
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (!(std::fabs(got[i] - want[i]) <= rel_tol * std::fabs(want[i]) + 1e-6f)) ++wrong;
    }
    fmt::print("{}: {} of {} elements off\n", what, wrong, got.size());
    if (wrong != 0) ++failures;
  };
  const std::size_t rows = 3;
  const auto width = static_cast<std::size_t>(tb::kRmsNormWidth);
  {
    const auto a = random(rows * width);
    std::vector<float> want(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) want[i] = round_bf16(a[i]);
    report("copy", bench.run(tb::ElementwiseOp::kCopy, a, {}, {}), want, 0.0f);
  }
  {
    const auto a = random(rows * width + 5);  // a tail past the vector loop
    std::vector<float> want(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) want[i] = round_bf16(a[i]);
    report("cast fp32->bf16", bench.run(tb::ElementwiseOp::kCast, a, {}, {}), want, 0.0f);
  }
  {
    const auto a = random(rows * width + 5);
    const auto b = random(a.size());
    std::vector<float> want(a.size());
    for (std::size_t i = 0; i < a.size(); ++i)
      want[i] = round_bf16(round_bf16(a[i]) + round_bf16(b[i]));
    report("add bf16", bench.run(tb::ElementwiseOp::kAdd, a, b, {}), want, 0.0f);
  }
  {
    const auto x = random(rows * width);
    const auto w = random(width);
    std::vector<float> want(x.size());
    for (std::size_t r = 0; r < rows; ++r) {
      double sum_sq = 0;
      for (std::size_t j = 0; j < width; ++j)
        sum_sq += double(round_bf16(x[r * width + j])) * round_bf16(x[r * width + j]);
      const float inv =
          1.0f / std::sqrt(static_cast<float>(sum_sq / static_cast<double>(width)) + 1e-6f);
      for (std::size_t j = 0; j < width; ++j) {
        want[r * width + j] = round_bf16(round_bf16(x[r * width + j]) * inv * round_bf16(w[j]));
      }
    }
    // rsqrtf and the order of the sum: within one bf16 rounding.
    report("rmsnorm bf16", bench.run(tb::ElementwiseOp::kRmsNorm, x, {}, w), want, 1.0f / 128);
  }
  return failures == 0 ? 0 : 1;
}

int check_launch() {
  device_count_or_skip();
  tb::LaunchBench bench(0);
  const double empty = bench.empty_kernel_us(1000, 1, 5);
  const double gemm = bench.gemm_us(64, 500, 1, 5);
  fmt::print("launch overhead: empty kernel {:.2f} us, bf16 GEMM 64^3 {:.2f} us per launch\n",
             empty, gemm);
  // A launch costs microseconds; more than a millisecond means the timing is wrong.
  return empty > 0 && empty < 1000 && gemm > 0 && gemm < 1000 ? 0 : 1;
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
    if (which == "attention_bwd") return check_attention_bwd();
    if (which == "adamw") return check_adamw();
    if (which == "elementwise") return check_elementwise();
    if (which == "launch") return check_launch();
    if (which == "all_reduce") return check_all_reduce();
    fmt::print(stderr,
               "usage: calibrate_gpu_test matmul_layout|gemm_peak|hbm_copy|attention|attention_bwd|"
               "adamw|elementwise|launch|all_reduce\n");
    return 2;
  } catch (const Skip& s) {
    fmt::print("SKIPPED: {}\n", s.why);
    return kSkip;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
