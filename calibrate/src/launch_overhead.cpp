#include "launch_overhead.hpp"

#include <algorithm>
#include <chrono>

#include "kernels.hpp"
#include "lt_matmul.hpp"

namespace trainplan::calibrate {
namespace {

// `body(count)` enqueues `count` launches; the clock runs from before the first to after the
// stream drained, so the last kernel's run and one synchronisation are shared by all launches.
template <class Body>
double host_us_per_launch(cudaStream_t stream, int launches, int warmup, int rounds, Body&& body) {
  for (int r = 0; r < warmup; ++r) body(launches);
  TP_CUDA(cudaStreamSynchronize(stream));
  double total_us = 0;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    body(launches);
    TP_CUDA(cudaStreamSynchronize(stream));
    const auto t1 = std::chrono::steady_clock::now();
    total_us += std::chrono::duration<double, std::micro>(t1 - t0).count();
  }
  return total_us / (static_cast<double>(std::max(1, rounds)) * std::max(1, launches));
}

}  // namespace

LaunchBench::LaunchBench(int device) : ctx_(device) {}

double LaunchBench::empty_kernel_us(int launches, int warmup, int rounds) {
  const DeviceGuard guard(ctx_.device);
  cudaStream_t st = ctx_.stream.get();
  return host_us_per_launch(st, launches, warmup, rounds,
                            [&](int count) { launch_empty_kernels(count, st); });
}

double LaunchBench::gemm_us(std::int64_t n, int launches, int warmup, int rounds) {
  const DeviceGuard guard(ctx_.device);
  const auto elems = static_cast<std::size_t>(n * n);
  const DeviceBuffer a(elems * 2), b(elems * 2), c(elems * 2);
  cudaStream_t st = ctx_.stream.get();
  fill_random(a.get(), elems, ElemType::kBf16, 41, 1.0f, st);
  fill_random(b.get(), elems, ElemType::kBf16, 42, 1.0f, st);
  // C = A W^T, W stored n x n as nn.Linear keeps it.
  MatmulSpec spec;
  spec.a = {CUDA_R_16BF, n, n, false, 0};
  spec.b = {CUDA_R_16BF, n, n, true, 0};
  spec.c = {CUDA_R_16BF, n, n, false, 0};
  const LtMatmul mm(ctx_.lt.get(), spec, ctx_.workspace.bytes());
  void* ws = ctx_.workspace.get();
  return host_us_per_launch(st, launches, warmup, rounds, [&](int count) {
    for (int i = 0; i < count; ++i) mm.run(a.get(), b.get(), c.get(), ws, st);
  });
}

}  // namespace trainplan::calibrate
