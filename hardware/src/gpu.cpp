#include "trainplan/hardware/gpu.hpp"

#include <algorithm>

#include "trainplan/core/error.hpp"

namespace trainplan::hardware {
namespace {

// "V100-32GB (Volta, compute capability 7.0)", "MI300X (CDNA3, gfx942)".
std::string gpu_words(const GpuSpec& g) {
  const std::string& cc = g.capabilities.compute_capability;
  if (cc.empty()) return g.name;
  const bool llvm_target = cc.starts_with("gfx");
  return g.name + " (" + g.architecture + ", " + (llvm_target ? "" : "compute capability ") + cc +
         ")";
}

std::string matrix_units(const GpuSpec& g) {
  return g.vendor == "AMD" ? "matrix cores" : "tensor cores";
}

template <class E, class Pred>
std::string supported_list(Pred ok) {
  std::string out;
  for (const auto& [v, name] : EnumTable<E>::kEntries) {
    if (!ok(v)) continue;
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

}  // namespace

bool GpuCapabilities::has(TensorCoreDtype d) const {
  return std::find(tensor_core_dtypes.begin(), tensor_core_dtypes.end(), d) !=
         tensor_core_dtypes.end();
}

bool GpuCapabilities::runs(FlashAttentionGen g) const {
  return std::find(flash_attention.begin(), flash_attention.end(), g) != flash_attention.end();
}

std::string_view matmul_dtype(const GpuSpec& g, Precision p, bool tf32) {
  switch (p) {
    case Precision::fp32: return tf32 && g.peak.tf32 > 0 ? "tf32" : "fp32";
    case Precision::fp16_mixed:
    case Precision::fp16_true: return "fp16";
    case Precision::bf16_mixed:
    case Precision::bf16_true:
      if (emulated_bf16(g, p)) return "fp32";
      return g.peak.bf16 > 0 ? "bf16" : "fp16";
  }
  return "fp32";
}

FlopsPerSecond peak_flops(const GpuSpec& g, Precision p, bool tf32) {
  const std::string_view units = matmul_dtype(g, p, tf32);
  if (units == "tf32") return tflops(g.peak.tf32);
  if (units == "bf16") return tflops(g.peak.bf16);
  if (units == "fp16") return tflops(g.peak.fp16);
  return tflops(g.peak.fp32);
}

bool emulated_bf16(const GpuSpec& g, Precision p) {
  const bool bf16 = p == Precision::bf16_mixed || p == Precision::bf16_true;
  return bf16 && !g.capabilities.bf16 && g.vendor == "NVIDIA" && g.peak.fp32 > 0;
}

bool supports(const GpuSpec& g, Precision p) {
  switch (p) {
    case Precision::fp32: return true;
    case Precision::fp16_mixed:
    case Precision::fp16_true: return g.capabilities.has(TensorCoreDtype::fp16);
    case Precision::bf16_mixed:
    case Precision::bf16_true: return g.capabilities.bf16;
  }
  return false;
}

bool supports(const GpuSpec& g, Attention a) {
  switch (a) {
    case Attention::flash:
    case Attention::triton: return g.capabilities.runs(FlashAttentionGen::fa2);
    case Attention::sdpa:
    case Attention::eager: return true;
  }
  return false;
}

Precision default_precision(const GpuSpec& g) {
  return g.capabilities.bf16 ? Precision::bf16_mixed : Precision::fp16_mixed;
}

Attention default_attention(const GpuSpec& g) {
  return supports(g, Attention::flash) ? Attention::flash : Attention::sdpa;
}

void require_supported(const GpuSpec& g, Precision p, Attention a) {
  if (!supports(g, p) && !emulated_bf16(g, p)) {
    const bool bf16 = p == Precision::bf16_mixed || p == Precision::bf16_true;
    // PyTorch reports bf16 as supported wherever a bf16 tensor can be created and then runs its
    // matmuls without the matrix units (torch/cuda/__init__.py, is_bf16_supported).
    throw FieldError(
        "{precision} " + std::string(to_string(p)) + ": " + gpu_words(g) + " has no " +
        (bf16 ? "bf16 " : "fp16 ") + matrix_units(g) +
        (bf16 ? " (PyTorch accepts bf16 there but runs it emulated, without them)" : "") +
        "; it supports " + supported_list<Precision>([&](Precision x) { return supports(g, x); }));
  }
  if (!supports(g, a))
    throw FieldError("{attention} " + std::string(to_string(a)) + ": " + gpu_words(g) +
                     " cannot run FlashAttention-2 (it needs compute capability 8.0 or newer, or "
                     "an AMD MI200/MI300); it supports " +
                     supported_list<Attention>([&](Attention x) { return supports(g, x); }) +
                     " (sdpa runs PyTorch's memory-efficient kernel there)");
}

}  // namespace trainplan::hardware
