// Modes of trainplan-calibrate, each an enum class with one string table, the project's
// EnumTable (trainplan/core/enum_table.hpp). The strings are the ones written to
// measurements.jsonl and accepted on the command line.
#pragma once

#include <array>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trainplan/core/enum_table.hpp"

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

// calibrate::to_string(e) names an enum of this file through its table, as trainplan::to_string.
using trainplan::to_string;

// Throws std::invalid_argument naming `flag` and the bad string.
template <class E>
[[nodiscard]] E parse_flag(std::string_view text, std::string_view flag) {
  if (const std::optional<E> v = try_parse<E>(text)) return *v;
  throw std::invalid_argument("unknown " + std::string(flag) + " '" + std::string(text) +
                              "' (expected one of: " + enum_choices<E>() + ")");
}

// Every value of E in the order of its table.
template <class E>
[[nodiscard]] std::vector<E> all_values() {
  std::vector<E> out;
  for (const auto& [value, name] : EnumTable<E>::kEntries) out.push_back(value);
  return out;
}

}  // namespace trainplan::calibrate

namespace trainplan {
template <>
struct EnumTable<calibrate::Collective> {
  static constexpr std::string_view kWhat = "collective";
  static constexpr std::array kEntries{
      std::pair{calibrate::Collective::kAllReduce, std::string_view{"all_reduce"}},
      std::pair{calibrate::Collective::kAllGather, std::string_view{"all_gather"}},
      std::pair{calibrate::Collective::kReduceScatter, std::string_view{"reduce_scatter"}},
      std::pair{calibrate::Collective::kAllToAll, std::string_view{"all_to_all"}},
      std::pair{calibrate::Collective::kBroadcast, std::string_view{"broadcast"}},
      std::pair{calibrate::Collective::kSendRecv, std::string_view{"send_recv"}}};
};
template <>
struct EnumTable<calibrate::Scope> {
  static constexpr std::string_view kWhat = "scope";
  static constexpr std::array kEntries{
      std::pair{calibrate::Scope::kIntraNode, std::string_view{"intra_node"}},
      std::pair{calibrate::Scope::kInterNode, std::string_view{"inter_node"}},
      std::pair{calibrate::Scope::kWorld, std::string_view{"world"}}};
};
// nccl-tests spells the datatypes this way (-d float|half|bfloat16); "bf16" is the project's name.
template <>
struct EnumTable<calibrate::CollDtype> {
  static constexpr std::string_view kWhat = "collective datatype";
  static constexpr std::array kEntries{
      std::pair{calibrate::CollDtype::kFloat, std::string_view{"float"}},
      std::pair{calibrate::CollDtype::kBf16, std::string_view{"bf16"}},
      std::pair{calibrate::CollDtype::kHalf, std::string_view{"half"}}};
};
template <>
struct EnumTable<calibrate::GemmDtype> {
  static constexpr std::string_view kWhat = "GEMM datatype";
  static constexpr std::array kEntries{
      std::pair{calibrate::GemmDtype::kBf16, std::string_view{"bf16"}},
      std::pair{calibrate::GemmDtype::kFp16, std::string_view{"fp16"}},
      std::pair{calibrate::GemmDtype::kTf32, std::string_view{"tf32"}},
      std::pair{calibrate::GemmDtype::kFp8, std::string_view{"fp8"}}};
};
template <>
struct EnumTable<calibrate::GemmLabel> {
  static constexpr std::string_view kWhat = "GEMM label";
  static constexpr std::array kEntries{
      std::pair{calibrate::GemmLabel::kQkv, std::string_view{"qkv"}},
      std::pair{calibrate::GemmLabel::kOut, std::string_view{"out"}},
      std::pair{calibrate::GemmLabel::kMlpUp, std::string_view{"mlp_up"}},
      std::pair{calibrate::GemmLabel::kMlpDown, std::string_view{"mlp_down"}},
      std::pair{calibrate::GemmLabel::kLmHead, std::string_view{"lm_head"}},
      std::pair{calibrate::GemmLabel::kSquare, std::string_view{"square"}},
      std::pair{calibrate::GemmLabel::kSkinny, std::string_view{"skinny"}}};
};
template <>
struct EnumTable<calibrate::AttentionPass> {
  static constexpr std::string_view kWhat = "attention pass";
  static constexpr std::array kEntries{
      std::pair{calibrate::AttentionPass::kFwd, std::string_view{"fwd"}},
      std::pair{calibrate::AttentionPass::kBwd, std::string_view{"bwd"}}};
};
template <>
struct EnumTable<calibrate::AttentionImpl> {
  static constexpr std::string_view kWhat = "attention implementation";
  static constexpr std::array kEntries{
      std::pair{calibrate::AttentionImpl::kCudnn, std::string_view{"cudnn"}},
      std::pair{calibrate::AttentionImpl::kUnfused, std::string_view{"unfused"}}};
};
template <>
struct EnumTable<calibrate::MemDirection> {
  static constexpr std::string_view kWhat = "copy direction";
  static constexpr std::array kEntries{
      std::pair{calibrate::MemDirection::kD2D, std::string_view{"d2d"}},
      std::pair{calibrate::MemDirection::kH2D, std::string_view{"h2d"}},
      std::pair{calibrate::MemDirection::kD2H, std::string_view{"d2h"}}};
};
template <>
struct EnumTable<calibrate::OptimizerPrecision> {
  static constexpr std::string_view kWhat = "optimizer precision";
  static constexpr std::array kEntries{
      std::pair{calibrate::OptimizerPrecision::kFp32Master, std::string_view{"fp32_master"}},
      std::pair{calibrate::OptimizerPrecision::kBf16, std::string_view{"bf16"}}};
};
template <>
struct EnumTable<calibrate::ElementwiseOp> {
  static constexpr std::string_view kWhat = "elementwise op";
  static constexpr std::array kEntries{
      std::pair{calibrate::ElementwiseOp::kCopy, std::string_view{"copy"}},
      std::pair{calibrate::ElementwiseOp::kCast, std::string_view{"cast"}},
      std::pair{calibrate::ElementwiseOp::kAdd, std::string_view{"add"}},
      std::pair{calibrate::ElementwiseOp::kRmsNorm, std::string_view{"rmsnorm"}}};
};
template <>
struct EnumTable<calibrate::LaunchOp> {
  static constexpr std::string_view kWhat = "launch op";
  static constexpr std::array kEntries{
      std::pair{calibrate::LaunchOp::kEmptyKernel, std::string_view{"empty_kernel"}},
      std::pair{calibrate::LaunchOp::kGemm, std::string_view{"gemm"}}};
};
}  // namespace trainplan
