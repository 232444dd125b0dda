#include "membw.hpp"

#include <cstring>

#include "kernels.hpp"

namespace trainplan::calibrate {

MemoryBench::MemoryBench(int device) : device_(device) {
  const DeviceGuard guard(device_);
  stream_ = make_stream();
}

MemoryBench::DeviceCopy MemoryBench::d2d_us(std::size_t bytes, int warmup, int iters) {
  const DeviceGuard guard(device_);
  const DeviceBuffer src(bytes);
  const DeviceBuffer dst(bytes);
  TP_CUDA(cudaMemsetAsync(src.get(), 1, bytes, stream_.get()));
  cudaStream_t st = stream_.get();
  DeviceCopy out;
  out.memcpy_us = time_on_stream_us(st, warmup, iters, [&] {
    TP_CUDA(cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice, st));
  });
  out.kernel_us = time_on_stream_us(st, warmup, iters, [&] { copy_kernel(dst.get(), src.get(), bytes, st); });
  return out;
}

double MemoryBench::h2d_us(std::size_t bytes, int warmup, int iters) {
  const DeviceGuard guard(device_);
  const PinnedBuffer host(bytes);
  const DeviceBuffer dev(bytes);
  std::memset(host.get(), 1, bytes);
  cudaStream_t st = stream_.get();
  return time_on_stream_us(st, warmup, iters, [&] {
    TP_CUDA(cudaMemcpyAsync(dev.get(), host.get(), bytes, cudaMemcpyHostToDevice, st));
  });
}

double MemoryBench::d2h_us(std::size_t bytes, int warmup, int iters) {
  const DeviceGuard guard(device_);
  const PinnedBuffer host(bytes);
  const DeviceBuffer dev(bytes);
  TP_CUDA(cudaMemsetAsync(dev.get(), 1, bytes, stream_.get()));
  cudaStream_t st = stream_.get();
  return time_on_stream_us(st, warmup, iters, [&] {
    TP_CUDA(cudaMemcpyAsync(host.get(), dev.get(), bytes, cudaMemcpyDeviceToHost, st));
  });
}

}  // namespace trainplan::calibrate
