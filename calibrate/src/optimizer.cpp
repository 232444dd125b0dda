#include "optimizer.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "host_values.hpp"
#include "kernels.hpp"
#include "sweep.hpp"

namespace trainplan::calibrate {
namespace {

struct Types {
  ElemType param, grad, state;
};

Types types_of(OptimizerPrecision p) {
  switch (p) {
    case OptimizerPrecision::kFp32Master:
      return {ElemType::kF32, ElemType::kBf16, ElemType::kF32};
    case OptimizerPrecision::kBf16:
      return {ElemType::kBf16, ElemType::kBf16, ElemType::kBf16};
  }
  return {ElemType::kF32, ElemType::kBf16, ElemType::kF32};
}

std::size_t size_of(ElemType t) { return t == ElemType::kF32 ? 4 : 2; }

}  // namespace

std::vector<TensorChunk> chunk_table(const std::vector<std::int64_t>& tensor_sizes) {
  std::vector<TensorChunk> chunks;
  std::int64_t start = 0;
  for (const std::int64_t n : tensor_sizes) {
    for (std::int64_t off = 0; off < n; off += kAdamWChunk) {
      chunks.push_back(
          {start + off, static_cast<std::int32_t>(std::min<std::int64_t>(kAdamWChunk, n - off))});
    }
    start += n;
  }
  return chunks;
}

AdamWScalars adamw_kernel_scalars(const AdamWConfig& cfg, int step) {
  const AdamWStepScalars c = adamw_step_scalars(cfg, step);
  return {cfg.beta1, cfg.beta2, cfg.eps, c.lr_decay, c.step_size, c.bias2_sqrt};
}

OptimizerBench::OptimizerBench(int device) : device_(device) {
  const DeviceGuard guard(device_);
  stream_ = make_stream();
}

std::optional<std::string> OptimizerBench::prepare(OptimizerPrecision precision,
                                                   const std::vector<std::int64_t>& tensor_sizes) {
  const DeviceGuard guard(device_);
  for (DeviceBuffer* b : {&param_, &grad_, &exp_avg_, &exp_avg_sq_, &chunks_}) {
    *b = DeviceBuffer();  // free the previous case first
  }
  precision_ = precision;
  params_ = 0;
  for (const auto n : tensor_sizes) params_ += n;
  const Types t = types_of(precision);
  const auto n = static_cast<std::size_t>(params_);
  const std::vector<TensorChunk> table = chunk_table(tensor_sizes);
  const double need =
      static_cast<double>(n) *
          static_cast<double>(size_of(t.param) + size_of(t.grad) + 2 * size_of(t.state)) +
      static_cast<double>(table.size() * sizeof(TensorChunk));
  const auto free_bytes = static_cast<double>(free_device_memory());
  // A tenth of the free memory stays for the allocator and the context.
  if (need > 0.9 * free_bytes) {
    return fmt::format("{:.1f} GB of parameters, gradients and moments; {:.1f} GB free", need / 1e9,
                       free_bytes / 1e9);
  }
  param_ = DeviceBuffer(n * size_of(t.param));
  grad_ = DeviceBuffer(n * size_of(t.grad));
  exp_avg_ = DeviceBuffer(n * size_of(t.state));
  exp_avg_sq_ = DeviceBuffer(n * size_of(t.state));
  chunks_ = DeviceBuffer(table.size() * sizeof(TensorChunk));
  chunk_count_ = table.size();
  cudaStream_t st = stream_.get();
  TP_CUDA(
      cudaMemcpyAsync(chunks_.get(), table.data(), chunks_.bytes(), cudaMemcpyHostToDevice, st));
  fill_random(param_.get(), n, t.param, 21, 0.02f, st);
  fill_random(grad_.get(), n, t.grad, 22, 1e-3f, st);
  TP_CUDA(cudaMemsetAsync(exp_avg_.get(), 0, exp_avg_.bytes(), st));
  TP_CUDA(cudaMemsetAsync(exp_avg_sq_.get(), 0, exp_avg_sq_.bytes(), st));
  TP_CUDA(cudaStreamSynchronize(st));
  step_ = 0;
  return std::nullopt;
}

void OptimizerBench::launch_step(const AdamWConfig& cfg) {
  const AdamWScalars s = adamw_kernel_scalars(cfg, ++step_);
  const Types t = types_of(precision_);
  adamw_multi_tensor(t.param, t.grad, t.state, param_.get(), grad_.get(), exp_avg_.get(),
                     exp_avg_sq_.get(), chunks_.as<TensorChunk>(), chunk_count_, s, stream_.get());
}

double OptimizerBench::step_us(int warmup, int iters) {
  const DeviceGuard guard(device_);
  const AdamWConfig cfg;  // torch.optim.AdamW's defaults but lr
  return time_on_stream_us(stream_.get(), warmup, iters, [&] { launch_step(cfg); });
}

std::vector<float> OptimizerBench::run_steps(const std::vector<float>& param,
                                             const std::vector<float>& grad, int steps,
                                             const AdamWConfig& cfg) {
  const DeviceGuard guard(device_);
  const auto n = static_cast<std::size_t>(params_);
  if (param.size() != n || grad.size() != n) {
    throw GpuError(
        fmt::format("OptimizerBench::run_steps: {} values for {} parameters", param.size(), n));
  }
  const Types t = types_of(precision_);
  const auto p_bytes = encode(param, size_of(t.param));
  const auto g_bytes = encode(grad, size_of(t.grad));
  cudaStream_t st = stream_.get();
  TP_CUDA(
      cudaMemcpyAsync(param_.get(), p_bytes.data(), p_bytes.size(), cudaMemcpyHostToDevice, st));
  TP_CUDA(cudaMemcpyAsync(grad_.get(), g_bytes.data(), g_bytes.size(), cudaMemcpyHostToDevice, st));
  TP_CUDA(cudaMemsetAsync(exp_avg_.get(), 0, exp_avg_.bytes(), st));
  TP_CUDA(cudaMemsetAsync(exp_avg_sq_.get(), 0, exp_avg_sq_.bytes(), st));
  step_ = 0;
  for (int i = 0; i < steps; ++i) launch_step(cfg);
  std::vector<unsigned char> out(param_.bytes());
  TP_CUDA(cudaMemcpyAsync(out.data(), param_.get(), out.size(), cudaMemcpyDeviceToHost, st));
  TP_CUDA(cudaStreamSynchronize(st));
  return decode(out, size_of(t.param));
}

}  // namespace trainplan::calibrate
