// What to measure: message sizes, collective buffer shapes, GEMM and attention shapes, and the
// FLOP and bandwidth conventions used to turn a time into a rate. Pure functions, no GPU.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "names.hpp"

namespace trainplan::calibrate {

inline constexpr std::int64_t kKiB = std::int64_t{1} << 10;
inline constexpr std::int64_t kMiB = std::int64_t{1} << 20;
inline constexpr std::int64_t kGiB = std::int64_t{1} << 30;

// Bus-bandwidth factor of nccl-tests doc/PERFORMANCE.md: busbw = algbw * factor(n).
[[nodiscard]] double bus_factor(Collective c, int n);

// min, min*f, min*f^2, ... <= max (nccl-tests -b/-e/-f). Throws on min < 1, max < min or f <= 1.
[[nodiscard]] std::vector<std::int64_t> sweep_sizes(std::int64_t min_bytes, std::int64_t max_bytes,
                                                    double step_factor);

// The number `text` begins with, as std::stod reads it, and the index just past it; nullopt when
// it begins with none.
struct LeadingNumber {
  double value = 0.0;
  std::size_t end = 0;
};
[[nodiscard]] std::optional<LeadingNumber> leading_number(const std::string& text);

// "8K", "64M", "4G" (binary, as nccl-tests -b/-e) or plain bytes. Throws on bad text.
[[nodiscard]] std::int64_t parse_size(const std::string& text);
// 8 B, 64 KiB, 1 GiB, 1.5 GiB.
[[nodiscard]] std::string format_bytes(std::int64_t bytes);

[[nodiscard]] std::size_t element_size(CollDtype t);

// Per-rank element counts for one point of a collective sweep. `bytes` follows nccl-tests' `size`
// column: all_reduce, broadcast, send_recv: the per-rank buffer; all_gather: the total output;
// reduce_scatter: the total input; all_to_all: the total per rank. Counts are rounded down so that
// every rank gets whole elements; `bytes` is the size actually moved after rounding.
struct CollectiveShape {
  std::size_t send_count = 0;
  std::size_t recv_count = 0;
  std::size_t chunk = 0;  // elements per peer (all_gather, reduce_scatter, all_to_all)
  std::int64_t bytes = 0;
};
// nullopt when the size is too small to give every rank at least one element.
[[nodiscard]] std::optional<CollectiveShape> collective_shape(Collective c, std::int64_t bytes,
                                                              int n, std::size_t elem_size);

// --model-shapes h,I,heads,kv_heads,vocab,tokens
struct ModelShapes {
  std::int64_t hidden = 4096;
  std::int64_t intermediate = 11008;
  std::int64_t heads = 32;
  std::int64_t kv_heads = 32;
  std::int64_t vocab = 32000;
  std::int64_t tokens = 4096;
};
[[nodiscard]] ModelShapes parse_model_shapes(const std::string& text);

struct GemmShape {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  GemmLabel label = GemmLabel::kSquare;
};

// Forward GEMMs of one transformer layer plus the LM head under tensor parallel degree tp
// (Megatron column/row split; gated MLP with gate and up fused into one GEMM of width 2I/tp).
// M = tokens, K = reduction dim, N = output features. Throws when tp does not divide the dims.
[[nodiscard]] std::vector<GemmShape> model_gemm_shapes(const ModelShapes& s, int tp);
[[nodiscard]] std::vector<GemmShape> generic_gemm_shapes(bool quick);
[[nodiscard]] double gemm_flops(const GemmShape& g);

struct AttentionShape {
  std::int64_t batch = 1;
  std::int64_t heads = 32;
  std::int64_t kv_heads = 8;
  std::int64_t head_dim = 128;
  std::int64_t seq = 4096;
  bool causal = true;
  friend bool operator==(const AttentionShape&, const AttentionShape&) = default;
};
[[nodiscard]] std::vector<AttentionShape> attention_shapes(bool quick);

// FlashAttention / cuDNN convention: fwd = 4*b*h*s^2*d (half of it with a causal mask),
// bwd = 2.5 * fwd. GQA does not change it (h counts query heads).
[[nodiscard]] double attention_flops(const AttentionShape& a, AttentionPass pass);

// ---- GPU AdamW step ----------------------------------------------------------------------------

// One tensor of the optimizer sweep: a 4096 x 4096 weight, the commonest size in a 7B model.
inline constexpr std::int64_t kOptimizerTensorParams = std::int64_t{4096} * 4096;

// Parameter counts per step: 1e8 and 1e9 (--quick: 1e8).
[[nodiscard]] std::vector<std::int64_t> optimizer_param_counts(bool quick);
// `params` split into whole tensors of `tensor_params` and one with the rest. Throws on params < 1
// or tensor_params < 1.
[[nodiscard]] std::vector<std::int64_t> optimizer_tensor_sizes(
    std::int64_t params, std::int64_t tensor_params = kOptimizerTensorParams);

struct OptimizerDtypes {
  std::string_view param;  // also the weight copy the step updates
  std::string_view grad;
  std::string_view state;  // exp_avg and exp_avg_sq
};
[[nodiscard]] OptimizerDtypes optimizer_dtypes(OptimizerPrecision p);
// Bytes one AdamW step moves per parameter: it reads the parameter, the gradient and both moments
// and writes the parameter and both moments, 2 P + G + 4 S: 26 with fp32 master weights and bf16
// gradients, 14 in bf16.
[[nodiscard]] std::int64_t adamw_bytes_per_param(OptimizerPrecision p);

// ---- elementwise kernels ------------------------------------------------------------------------

// The RMSNorm rows: the hidden size of a 7B model.
inline constexpr std::int64_t kRmsNormWidth = 4096;

// Elements per kernel: 4Mi, 16Mi, 64Mi, 256Mi (--quick: 16Mi, 64Mi). Multiples of kRmsNormWidth.
[[nodiscard]] std::vector<std::int64_t> elementwise_sizes(bool quick);

struct ElementwiseDtypes {
  std::string_view in;
  std::string_view out;
};
[[nodiscard]] ElementwiseDtypes elementwise_dtypes(ElementwiseOp op);
// Bytes moved through memory for `elements` outputs: copy reads and writes bf16 (4 per element),
// cast reads fp32 and writes bf16 (6), add reads two bf16 and writes one (6), RMSNorm reads and
// writes bf16 (4) plus its weight row once.
[[nodiscard]] std::int64_t elementwise_bytes(ElementwiseOp op, std::int64_t elements);

// ---- launch overhead ----------------------------------------------------------------------------

// Square GEMM sizes of the launch chain, m = n = k: 64 (launch-bound), 256, 1024.
[[nodiscard]] std::vector<std::int64_t> launch_gemm_sizes();

}  // namespace trainplan::calibrate
