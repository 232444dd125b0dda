#include "kernels.hpp"

#include <algorithm>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "gpu_error.hpp"

namespace trainplan::calibrate::bench {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float load_as_float(const void* data, std::size_t i, ElemType type) {
  switch (type) {
    case ElemType::kF32:
      return static_cast<const float*>(data)[i];
    case ElemType::kBf16:
      return __bfloat162float(static_cast<const __nv_bfloat16*>(data)[i]);
    case ElemType::kF16:
      return __half2float(static_cast<const __half*>(data)[i]);
    case ElemType::kFp8E4M3:
      return static_cast<float>(static_cast<const __nv_fp8_e4m3*>(data)[i]);
  }
  return 0.0f;
}

__device__ __forceinline__ void store_from_float(void* data, std::size_t i, ElemType type, float v) {
  switch (type) {
    case ElemType::kF32:
      static_cast<float*>(data)[i] = v;
      break;
    case ElemType::kBf16:
      static_cast<__nv_bfloat16*>(data)[i] = __float2bfloat16(v);
      break;
    case ElemType::kF16:
      static_cast<__half*>(data)[i] = __float2half(v);
      break;
    case ElemType::kFp8E4M3:
      static_cast<__nv_fp8_e4m3*>(data)[i] = __nv_fp8_e4m3(v);
      break;
  }
}

__device__ __forceinline__ std::uint64_t mix64(std::uint64_t x) {
  // splitmix64 finaliser (Steele, Lea & Flood 2014).
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

__device__ __forceinline__ float pattern(int rank, std::size_t i) {
  return static_cast<float>((static_cast<std::size_t>(rank) + i) % 3);
}

// sum over r < n of pattern(r, i): every 3 consecutive ranks add 0 + 1 + 2.
__device__ __forceinline__ float pattern_sum(int n, std::size_t i) {
  float s = 3.0f * static_cast<float>(n / 3);
  for (int j = 0; j < n % 3; ++j) s += pattern(j, i);
  return s;
}

__device__ float expected_value(const VerifySpec& s, std::size_t i) {
  switch (s.collective) {
    case Collective::kAllReduce:
      return pattern_sum(s.ranks, i);
    case Collective::kAllGather:
      return pattern(static_cast<int>(i / s.chunk), i % s.chunk);
    case Collective::kReduceScatter:
      return pattern_sum(s.ranks, static_cast<std::size_t>(s.rank) * s.chunk + i);
    case Collective::kAllToAll:
      return pattern(static_cast<int>(i / s.chunk),
                     static_cast<std::size_t>(s.rank) * s.chunk + i % s.chunk);
    case Collective::kBroadcast:
      return pattern(0, i);
    case Collective::kSendRecv:
      return pattern((s.rank + s.ranks - 1) % s.ranks, i);
  }
  return -1.0f;
}

__global__ void fill_random_kernel(void* data, std::size_t count, ElemType type, std::uint64_t seed,
                                   float scale) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::uint64_t h = mix64(seed ^ mix64(i));
    const float u = static_cast<float>(h >> 40) * (1.0f / 16777216.0f);  // [0, 1)
    store_from_float(data, i, type, scale * (2.0f * u - 1.0f));
  }
}

__global__ void fill_constant_kernel(void* data, std::size_t count, ElemType type, float value) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    store_from_float(data, i, type, value);
  }
}

__global__ void fill_pattern_kernel(void* data, std::size_t count, ElemType type, int rank) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    store_from_float(data, i, type, pattern(rank, i));
  }
}

__global__ void verify_kernel(const void* data, std::size_t count, ElemType type, VerifySpec spec,
                              unsigned long long* errors) {
  unsigned long long wrong = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float want = expected_value(spec, i);
    const float got = load_as_float(data, i, type);
    // Written as a negated comparison so that NaN counts as wrong.
    if (!(fabsf(got - want) <= spec.rel_tol * want)) ++wrong;
  }
  if (wrong != 0) atomicAdd(errors, wrong);
}

__global__ void copy_kernel_impl(uint4* __restrict__ dst, const uint4* __restrict__ src,
                                 std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    dst[i] = src[i];
  }
}

__device__ float block_reduce(float v, bool use_max) {
  __shared__ float partial[kThreads / 32];
  for (int offset = 16; offset > 0; offset /= 2) {
    const float other = __shfl_xor_sync(0xffffffffu, v, offset);
    v = use_max ? fmaxf(v, other) : v + other;
  }
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  float r = use_max ? -INFINITY : 0.0f;
  for (int w = 0; w < kThreads / 32; ++w) r = use_max ? fmaxf(r, partial[w]) : r + partial[w];
  __syncthreads();  // partial[] is reused by the next reduction
  return r;
}

__global__ void softmax_forward_kernel(__nv_bfloat16* scores, std::int64_t cols, std::int64_t seq,
                                       bool causal) {
  const std::int64_t row = blockIdx.x;
  __nv_bfloat16* x = scores + row * cols;
  const std::int64_t valid = causal && row % seq + 1 < cols ? row % seq + 1 : cols;
  float m = -INFINITY;
  for (std::int64_t j = threadIdx.x; j < valid; j += blockDim.x) m = fmaxf(m, __bfloat162float(x[j]));
  m = block_reduce(m, true);
  float sum = 0.0f;
  for (std::int64_t j = threadIdx.x; j < valid; j += blockDim.x) sum += __expf(__bfloat162float(x[j]) - m);
  sum = block_reduce(sum, false);
  const float inv = 1.0f / sum;
  for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    x[j] = __float2bfloat16(j < valid ? __expf(__bfloat162float(x[j]) - m) * inv : 0.0f);
  }
}

__global__ void softmax_backward_kernel(const __nv_bfloat16* probs, __nv_bfloat16* grad,
                                        std::int64_t cols) {
  const std::int64_t row = blockIdx.x;
  const __nv_bfloat16* p = probs + row * cols;
  __nv_bfloat16* g = grad + row * cols;
  float dot = 0.0f;
  for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    dot += __bfloat162float(p[j]) * __bfloat162float(g[j]);
  }
  dot = block_reduce(dot, false);
  for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const float pj = __bfloat162float(p[j]);
    g[j] = __float2bfloat16(pj * (__bfloat162float(g[j]) - dot));
  }
}

unsigned int grid_for(std::size_t count) {
  const std::size_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned int>(std::clamp<std::size_t>(blocks, 1, 8192));
}

void check_launch(const char* kernel) { check_cuda(cudaGetLastError(), kernel); }

}  // namespace

ElemType elem_type(CollDtype t) {
  switch (t) {
    case CollDtype::kFloat:
      return ElemType::kF32;
    case CollDtype::kBf16:
      return ElemType::kBf16;
    case CollDtype::kHalf:
      return ElemType::kF16;
  }
  return ElemType::kF32;
}

void fill_random(void* data, std::size_t count, ElemType type, std::uint64_t seed, float scale,
                 cudaStream_t stream) {
  if (count == 0) return;
  fill_random_kernel<<<grid_for(count), kThreads, 0, stream>>>(data, count, type, seed, scale);
  check_launch("fill_random_kernel<<<>>>");
}

void fill_constant(void* data, std::size_t count, ElemType type, float value, cudaStream_t stream) {
  if (count == 0) return;
  fill_constant_kernel<<<grid_for(count), kThreads, 0, stream>>>(data, count, type, value);
  check_launch("fill_constant_kernel<<<>>>");
}

void fill_pattern(void* data, std::size_t count, ElemType type, int rank, cudaStream_t stream) {
  if (count == 0) return;
  fill_pattern_kernel<<<grid_for(count), kThreads, 0, stream>>>(data, count, type, rank);
  check_launch("fill_pattern_kernel<<<>>>");
}

void count_collective_errors(const void* data, std::size_t count, ElemType type,
                             const VerifySpec& spec, unsigned long long* errors,
                             cudaStream_t stream) {
  if (count == 0) return;
  verify_kernel<<<grid_for(count), kThreads, 0, stream>>>(data, count, type, spec, errors);
  check_launch("verify_kernel<<<>>>");
}

void copy_kernel(void* dst, const void* src, std::size_t bytes, cudaStream_t stream) {
  if (bytes % sizeof(uint4) != 0 || reinterpret_cast<std::uintptr_t>(dst) % sizeof(uint4) != 0 ||
      reinterpret_cast<std::uintptr_t>(src) % sizeof(uint4) != 0) {
    throw GpuError("copy_kernel: buffers and size must be 16-byte aligned");
  }
  int device = 0;
  int sms = 0;
  TP_CUDA(cudaGetDevice(&device));
  TP_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const std::size_t n = bytes / sizeof(uint4);
  // Enough resident blocks to cover every SM several times over; the loop strides the rest.
  const auto blocks = static_cast<unsigned int>(
      std::clamp<std::size_t>((n + 1023) / 1024, 1, static_cast<std::size_t>(sms) * 16));
  copy_kernel_impl<<<blocks, 1024, 0, stream>>>(static_cast<uint4*>(dst),
                                                static_cast<const uint4*>(src), n);
  check_launch("copy_kernel_impl<<<>>>");
}

void softmax_forward_bf16(void* scores, std::int64_t rows, std::int64_t cols, std::int64_t seq,
                          bool causal, cudaStream_t stream) {
  if (rows == 0) return;
  softmax_forward_kernel<<<static_cast<unsigned int>(rows), kThreads, 0, stream>>>(
      static_cast<__nv_bfloat16*>(scores), cols, seq, causal);
  check_launch("softmax_forward_kernel<<<>>>");
}

void softmax_backward_bf16(const void* probs, void* grad, std::int64_t rows, std::int64_t cols,
                           cudaStream_t stream) {
  if (rows == 0) return;
  softmax_backward_kernel<<<static_cast<unsigned int>(rows), kThreads, 0, stream>>>(
      static_cast<const __nv_bfloat16*>(probs), static_cast<__nv_bfloat16*>(grad), cols);
  check_launch("softmax_backward_kernel<<<>>>");
}

}  // namespace trainplan::calibrate::bench
