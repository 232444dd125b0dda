// Modes of trainplan-calibrate, each an enum class with one string table. The strings are the
// ones written to measurements.jsonl and accepted on the command line.
#pragma once

#include <array>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace trainplan::calibrate {

enum class Collective { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kBroadcast, kSendRecv };
enum class Scope { kIntraNode, kInterNode, kWorld };
enum class CollDtype { kFloat, kBf16, kHalf };
enum class GemmDtype { kBf16, kFp16, kTf32, kFp8 };
enum class GemmLabel { kQkv, kOut, kMlpUp, kMlpDown, kLmHead, kSquare, kSkinny };
enum class AttentionPass { kFwd, kBwd };
enum class AttentionImpl { kCudnn, kUnfused };
enum class MemDirection { kD2D, kH2D, kD2H };
// Precisions of the GPU AdamW step: fp32 parameters and moments with bf16 gradients (mixed
// precision with fp32 master weights), or everything in bf16.
enum class OptimizerPrecision { kFp32Master, kBf16 };
enum class ElementwiseOp { kCopy, kCast, kAdd, kRmsNorm };
enum class LaunchOp { kEmptyKernel, kGemm };

template <class E, std::size_t N>
using NameTable = std::array<std::pair<E, std::string_view>, N>;

inline constexpr NameTable<Collective, 6> kCollectiveNames{{
    {Collective::kAllReduce, "all_reduce"},
    {Collective::kAllGather, "all_gather"},
    {Collective::kReduceScatter, "reduce_scatter"},
    {Collective::kAllToAll, "all_to_all"},
    {Collective::kBroadcast, "broadcast"},
    {Collective::kSendRecv, "send_recv"},
}};
inline constexpr NameTable<Scope, 3> kScopeNames{{
    {Scope::kIntraNode, "intra_node"},
    {Scope::kInterNode, "inter_node"},
    {Scope::kWorld, "world"},
}};
// nccl-tests spells the datatypes this way (-d float|half|bfloat16); "bf16" is the project's name.
inline constexpr NameTable<CollDtype, 3> kCollDtypeNames{{
    {CollDtype::kFloat, "float"},
    {CollDtype::kBf16, "bf16"},
    {CollDtype::kHalf, "half"},
}};
inline constexpr NameTable<GemmDtype, 4> kGemmDtypeNames{{
    {GemmDtype::kBf16, "bf16"},
    {GemmDtype::kFp16, "fp16"},
    {GemmDtype::kTf32, "tf32"},
    {GemmDtype::kFp8, "fp8"},
}};
inline constexpr NameTable<GemmLabel, 7> kGemmLabelNames{{
    {GemmLabel::kQkv, "qkv"},
    {GemmLabel::kOut, "out"},
    {GemmLabel::kMlpUp, "mlp_up"},
    {GemmLabel::kMlpDown, "mlp_down"},
    {GemmLabel::kLmHead, "lm_head"},
    {GemmLabel::kSquare, "square"},
    {GemmLabel::kSkinny, "skinny"},
}};
inline constexpr NameTable<AttentionPass, 2> kAttentionPassNames{{
    {AttentionPass::kFwd, "fwd"},
    {AttentionPass::kBwd, "bwd"},
}};
inline constexpr NameTable<AttentionImpl, 2> kAttentionImplNames{{
    {AttentionImpl::kCudnn, "cudnn"},
    {AttentionImpl::kUnfused, "unfused"},
}};
inline constexpr NameTable<MemDirection, 3> kMemDirectionNames{{
    {MemDirection::kD2D, "d2d"},
    {MemDirection::kH2D, "h2d"},
    {MemDirection::kD2H, "d2h"},
}};

inline constexpr NameTable<OptimizerPrecision, 2> kOptimizerPrecisionNames{{
    {OptimizerPrecision::kFp32Master, "fp32_master"},
    {OptimizerPrecision::kBf16, "bf16"},
}};
inline constexpr NameTable<ElementwiseOp, 4> kElementwiseOpNames{{
    {ElementwiseOp::kCopy, "copy"},
    {ElementwiseOp::kCast, "cast"},
    {ElementwiseOp::kAdd, "add"},
    {ElementwiseOp::kRmsNorm, "rmsnorm"},
}};
inline constexpr NameTable<LaunchOp, 2> kLaunchOpNames{{
    {LaunchOp::kEmptyKernel, "empty_kernel"},
    {LaunchOp::kGemm, "gemm"},
}};

template <class E, std::size_t N>
[[nodiscard]] constexpr std::string_view name_in(const NameTable<E, N>& table, E value) {
  for (const auto& [e, name] : table) {
    if (e == value) return name;
  }
  return "?";
}

// Throws std::invalid_argument naming `what` and the bad string.
template <class E, std::size_t N>
[[nodiscard]] E parse_in(const NameTable<E, N>& table, std::string_view text, std::string_view what) {
  for (const auto& [e, name] : table) {
    if (name == text) return e;
  }
  std::string allowed;
  for (const auto& entry : table) {
    if (!allowed.empty()) allowed += ", ";
    allowed += entry.second;
  }
  throw std::invalid_argument("unknown " + std::string(what) + " '" + std::string(text) +
                              "' (expected one of: " + allowed + ")");
}

[[nodiscard]] inline std::string_view to_string(Collective v) { return name_in(kCollectiveNames, v); }
[[nodiscard]] inline std::string_view to_string(Scope v) { return name_in(kScopeNames, v); }
[[nodiscard]] inline std::string_view to_string(CollDtype v) { return name_in(kCollDtypeNames, v); }
[[nodiscard]] inline std::string_view to_string(GemmDtype v) { return name_in(kGemmDtypeNames, v); }
[[nodiscard]] inline std::string_view to_string(GemmLabel v) { return name_in(kGemmLabelNames, v); }
[[nodiscard]] inline std::string_view to_string(AttentionPass v) {
  return name_in(kAttentionPassNames, v);
}
[[nodiscard]] inline std::string_view to_string(AttentionImpl v) {
  return name_in(kAttentionImplNames, v);
}
[[nodiscard]] inline std::string_view to_string(MemDirection v) {
  return name_in(kMemDirectionNames, v);
}
[[nodiscard]] inline std::string_view to_string(OptimizerPrecision v) {
  return name_in(kOptimizerPrecisionNames, v);
}
[[nodiscard]] inline std::string_view to_string(ElementwiseOp v) {
  return name_in(kElementwiseOpNames, v);
}
[[nodiscard]] inline std::string_view to_string(LaunchOp v) { return name_in(kLaunchOpNames, v); }

}  // namespace trainplan::calibrate
