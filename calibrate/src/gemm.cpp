#include "gemm.hpp"

#include "kernels.hpp"

namespace trainplan::calibrate {
namespace {

struct GemmTypes {
  cudaDataType_t in;
  cudaDataType_t out;
  ElemType in_elem;
  std::size_t in_bytes;
  std::size_t out_bytes;
  cublasComputeType_t compute;
};

GemmTypes types_of(GemmDtype t) {
  switch (t) {
    case GemmDtype::kBf16:
      return {CUDA_R_16BF, CUDA_R_16BF, ElemType::kBf16, 2, 2, CUBLAS_COMPUTE_32F};
    case GemmDtype::kFp16:
      return {CUDA_R_16F, CUDA_R_16F, ElemType::kF16, 2, 2, CUBLAS_COMPUTE_32F};
    case GemmDtype::kTf32:
      return {CUDA_R_32F, CUDA_R_32F, ElemType::kF32, 4, 4, CUBLAS_COMPUTE_32F_FAST_TF32};
    case GemmDtype::kFp8:
      // e4m3 inputs, bf16 output, fp32 accumulation (per-tensor scales left at 1).
      return {CUDA_R_8F_E4M3, CUDA_R_16BF, ElemType::kFp8E4M3, 1, 2, CUBLAS_COMPUTE_32F};
  }
  return {CUDA_R_16BF, CUDA_R_16BF, ElemType::kBf16, 2, 2, CUBLAS_COMPUTE_32F};
}

}  // namespace

GemmBench::GemmBench(int device) : ctx_(device) {
  int major = 0;
  int minor = 0;
  TP_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, ctx_.device));
  TP_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, ctx_.device));
  cc_ = major * 10 + minor;
}

bool GemmBench::supports(GemmDtype t) const { return t != GemmDtype::kFp8 || cc_ >= 89; }

double GemmBench::time_us(const GemmShape& g, GemmDtype t, int warmup, int iters) {
  const DeviceGuard guard(ctx_.device);
  const GemmTypes ty = types_of(t);
  const auto m = static_cast<std::size_t>(g.m);
  const auto n = static_cast<std::size_t>(g.n);
  const auto k = static_cast<std::size_t>(g.k);
  const DeviceBuffer a(m * k * ty.in_bytes);
  const DeviceBuffer w(n * k * ty.in_bytes);
  const DeviceBuffer c(m * n * ty.out_bytes);
  cudaStream_t st = ctx_.stream.get();
  fill_random(a.get(), m * k, ty.in_elem, 1, 1.0f, st);
  fill_random(w.get(), n * k, ty.in_elem, 2, 1.0f, st);

  MatmulSpec spec;
  spec.a = {ty.in, g.m, g.k, false, 0};
  spec.b = {ty.in, g.n, g.k, true, 0};
  spec.c = {ty.out, g.m, g.n, false, 0};
  spec.compute = ty.compute;
  spec.fast_accum = t == GemmDtype::kFp8;
  const LtMatmul matmul(ctx_.lt.get(), spec, ctx_.workspace.bytes());
  return time_on_stream_us(st, warmup, iters, [&] {
    matmul.run(a.get(), w.get(), c.get(), ctx_.workspace.get(), st);
  });
}

}  // namespace trainplan::calibrate
