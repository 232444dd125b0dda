#include "elementwise.hpp"

#include <fmt/format.h>

#include <cstring>

#include "kernels.hpp"
#include "sweep.hpp"

namespace trainplan::calibrate {
namespace {

constexpr float kRmsNormEps = 1e-6f;  // Llama's rms_norm_eps

std::size_t input_size(ElementwiseOp op) { return op == ElementwiseOp::kCast ? 4 : 2; }

std::uint16_t to_bf16_bits(float f) {
  std::uint32_t u = 0;
  std::memcpy(&u, &f, sizeof u);
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
  return static_cast<std::uint16_t>(u >> 16);
}

void upload(const std::vector<float>& v, std::size_t elem_size, void* dst, cudaStream_t st) {
  std::vector<unsigned char> bytes(v.size() * elem_size);
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (elem_size == 4) {
      std::memcpy(&bytes[4 * i], &v[i], 4);
    } else {
      const std::uint16_t b = to_bf16_bits(v[i]);
      std::memcpy(&bytes[2 * i], &b, 2);
    }
  }
  TP_CUDA(cudaMemcpyAsync(dst, bytes.data(), bytes.size(), cudaMemcpyHostToDevice, st));
  TP_CUDA(cudaStreamSynchronize(st));  // `bytes` goes out of scope
}

}  // namespace

ElementwiseBench::ElementwiseBench(int device) : device_(device) {
  const DeviceGuard guard(device_);
  stream_ = make_stream();
}

void ElementwiseBench::allocate(ElementwiseOp op, std::int64_t elements) {
  if (op == ElementwiseOp::kRmsNorm && elements % kRmsNormWidth != 0) {
    throw GpuError(
        fmt::format("RMSNorm over {} elements: not whole rows of {}", elements, kRmsNormWidth));
  }
  for (DeviceBuffer* buf : {&a_, &b_, &out_, &weight_})
    *buf = DeviceBuffer();  // free the last point's
  const auto n = static_cast<std::size_t>(elements);
  a_ = DeviceBuffer(n * input_size(op));
  if (op == ElementwiseOp::kAdd) b_ = DeviceBuffer(n * 2);
  out_ = DeviceBuffer(n * 2);
  if (op == ElementwiseOp::kRmsNorm)
    weight_ = DeviceBuffer(static_cast<std::size_t>(kRmsNormWidth) * 2);
}

void ElementwiseBench::launch(ElementwiseOp op, std::int64_t elements) {
  const auto n = static_cast<std::size_t>(elements);
  cudaStream_t st = stream_.get();
  switch (op) {
    case ElementwiseOp::kCopy:
      copy_kernel(out_.get(), a_.get(), n * 2, st);
      break;
    case ElementwiseOp::kCast:
      cast_f32_to_bf16(a_.get(), out_.get(), n, st);
      break;
    case ElementwiseOp::kAdd:
      add_bf16(a_.get(), b_.get(), out_.get(), n, st);
      break;
    case ElementwiseOp::kRmsNorm:
      rmsnorm_bf16(a_.get(), weight_.get(), out_.get(), elements / kRmsNormWidth, kRmsNormWidth,
                   kRmsNormEps, st);
      break;
  }
}

double ElementwiseBench::time_us(ElementwiseOp op, std::int64_t elements, int warmup, int iters) {
  const DeviceGuard guard(device_);
  allocate(op, elements);
  const auto n = static_cast<std::size_t>(elements);
  cudaStream_t st = stream_.get();
  fill_random(a_.get(), n, op == ElementwiseOp::kCast ? ElemType::kF32 : ElemType::kBf16, 31, 1.0f,
              st);
  if (b_.get() != nullptr) fill_random(b_.get(), n, ElemType::kBf16, 32, 1.0f, st);
  if (weight_.get() != nullptr) {
    fill_random(weight_.get(), static_cast<std::size_t>(kRmsNormWidth), ElemType::kBf16, 33, 1.0f,
                st);
  }
  return time_on_stream_us(st, warmup, iters, [&] { launch(op, elements); });
}

std::vector<float> ElementwiseBench::run(ElementwiseOp op, const std::vector<float>& a,
                                         const std::vector<float>& b,
                                         const std::vector<float>& weight) {
  const DeviceGuard guard(device_);
  const auto elements = static_cast<std::int64_t>(a.size());
  allocate(op, elements);
  cudaStream_t st = stream_.get();
  upload(a, input_size(op), a_.get(), st);
  if (op == ElementwiseOp::kAdd) upload(b, 2, b_.get(), st);
  if (op == ElementwiseOp::kRmsNorm) upload(weight, 2, weight_.get(), st);
  launch(op, elements);
  std::vector<std::uint16_t> bits(a.size());
  TP_CUDA(cudaMemcpyAsync(bits.data(), out_.get(), bits.size() * 2, cudaMemcpyDeviceToHost, st));
  TP_CUDA(cudaStreamSynchronize(st));
  std::vector<float> out(bits.size());
  for (std::size_t i = 0; i < bits.size(); ++i) {
    const std::uint32_t word = static_cast<std::uint32_t>(bits[i])
                               << 16;  // bf16 = top half of fp32
    std::memcpy(&out[i], &word, sizeof word);
  }
  return out;
}

}  // namespace trainplan::calibrate
