// The few CUDA kernels trainplan-calibrate needs, behind plain host functions (kernels.cu).
// Every launcher checks the launch and throws GpuError on failure.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "names.hpp"

namespace trainplan::calibrate::bench {

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

}  // namespace trainplan::calibrate::bench
