#include "elementwise.hpp"

#include <fmt/format.h>


#include "host_values.hpp"
#include "kernels.hpp"
#include "sweep.hpp"

namespace trainplan::calibrate {
namespace {

constexpr float kRmsNormEps = 1e-6f;  // Llama's rms_norm_eps

std::size_t input_size(ElementwiseOp op) { return op == ElementwiseOp::kCast ? 4 : 2; }

void upload(const std::vector<float>& v, std::size_t elem_size, void* dst, cudaStream_t st) {
  const std::vector<unsigned char> bytes = encode(v, elem_size);
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
  std::vector<unsigned char> bytes(a.size() * 2);
  TP_CUDA(cudaMemcpyAsync(bytes.data(), out_.get(), bytes.size(), cudaMemcpyDeviceToHost, st));
  TP_CUDA(cudaStreamSynchronize(st));
  return decode(bytes, 2);
}

}  // namespace trainplan::calibrate
