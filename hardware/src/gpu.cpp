#include "trainplan/hardware/gpu.hpp"

namespace trainplan::hardware {

FlopsPerSecond peak_flops(const GpuSpec& g, Precision p) {
  switch (p) {
    case Precision::fp32: return tflops(g.peak.tf32 > 0 ? g.peak.tf32 : g.peak.fp32);
    case Precision::fp16_mixed:
    case Precision::fp16_true: return tflops(g.peak.fp16);
    case Precision::bf16_mixed:
    case Precision::bf16_true: return tflops(g.peak.bf16 > 0 ? g.peak.bf16 : g.peak.fp16);
  }
  return tflops(g.peak.fp32);
}

}  // namespace trainplan::hardware
