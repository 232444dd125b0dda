// The few CUDA kernels trainplan-calibrate needs, behind plain host functions (kernels.cu).
// Every launcher checks the launch and throws GpuError on failure.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "names.hpp"

namespace trainplan::calibrate {

enum class ElemType { kF32, kBf16, kF16, kFp8E4M3 };

[[nodiscard]] ElemType elem_type(CollDtype t);

// Uniform values in [-scale, scale] from a counter-based hash of (seed, index): not zeros, which
// draw less power and run faster than real data.
void fill_random(void* data, std::size_t count, ElemType type, std::uint64_t seed, float scale,
                 cudaStream_t stream);
void fill_constant(void* data, std::size_t count, ElemType type, float value, cudaStream_t stream);

// Collective data check. Rank r's send buffer holds v(r, i) = (r + i) mod 3 at element i; the
// verifier knows what every collective must leave in the receive buffer of group rank `rank`.
// Sums of values 0..2 stay exact integers as long as 2n fits the datatype's mantissa.
void fill_pattern(void* data, std::size_t count, ElemType type, int rank, cudaStream_t stream);

struct VerifySpec {
  Collective collective = Collective::kAllReduce;
  int ranks = 1;
  int rank = 0;
  std::size_t chunk = 0;  // elements per peer
  float rel_tol = 0.0f;
};
// Adds the number of wrong elements of `data` to *errors (device memory).
void count_collective_errors(const void* data, std::size_t count, ElemType type,
                             const VerifySpec& spec, unsigned long long* errors,
                             cudaStream_t stream);

// Streaming copy through the SMs (16-byte loads and stores), the path memory-bound kernels take.
void copy_kernel(void* dst, const void* src, std::size_t bytes, cudaStream_t stream);

// Row softmax over bf16 scores, in place: `rows` rows of `cols` columns. With `causal`, row r is
// query position r mod seq and columns beyond it are masked to zero.
void softmax_forward_bf16(void* scores, std::int64_t rows, std::int64_t cols, std::int64_t seq,
                          bool causal, cudaStream_t stream);
// Softmax backward in place: dS = P * (dP - rowsum(P * dP)), written over dP.
void softmax_backward_bf16(const void* probs, void* grad, std::int64_t rows, std::int64_t cols,
                           cudaStream_t stream);

// ---- optimizer ----------------------------------------------------------------------------------

// The constants of one AdamW step (cpu_adam.hpp: adamw_step_scalars).
struct AdamWScalars {
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float lr_decay = 1.0f;    // 1 - lr * weight_decay
  float step_size = 0.0f;   // lr / (1 - beta1^t)
  float bias2_sqrt = 1.0f;  // sqrt(1 - beta2^t)
};

// A run of at most kAdamWChunk consecutive elements of one tensor, at `start` in the flat arrays.
struct TensorChunk {
  std::int64_t start = 0;
  std::int32_t count = 0;
};
inline constexpr std::int32_t kAdamWChunk = 65536;  // torch's multi_tensor_apply chunk size

// One AdamW step over every chunk in device memory `chunks`, one launch, one block per chunk (the
// scheme of torch's fused multi_tensor_apply). Parameters and moments are `param` and `state`
// (kF32 or kBf16), gradients `grad` (kF32 or kBf16); math in fp32.
void adamw_multi_tensor(ElemType param, ElemType grad, ElemType state, void* p, const void* g,
                        void* exp_avg, void* exp_avg_sq, const TensorChunk* chunks,
                        std::size_t chunk_count, const AdamWScalars& s, cudaStream_t stream);

// ---- elementwise --------------------------------------------------------------------------------

// out[i] = bf16(in[i]) for fp32 `in`.
void cast_f32_to_bf16(const void* in, void* out, std::size_t count, cudaStream_t stream);
// c[i] = a[i] + b[i], bf16.
void add_bf16(const void* a, const void* b, void* c, std::size_t count, cudaStream_t stream);
// RMSNorm over rows of `width` bf16 elements (width a multiple of 8, at most 8192):
// y = x / sqrt(mean(x^2) + eps) * weight, fp32 math (Zhang & Sennrich 2019).
void rmsnorm_bf16(const void* x, const void* weight, void* y, std::int64_t rows, std::int64_t width,
                  float eps, cudaStream_t stream);

// ---- launch overhead ----------------------------------------------------------------------------

// `count` launches of a kernel with one thread that does nothing, back to back; the launches are
// checked once, after the last.
void launch_empty_kernels(int count, cudaStream_t stream);

}  // namespace trainplan::calibrate
