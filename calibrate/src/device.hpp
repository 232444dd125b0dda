// RAII owners for CUDA objects: unique_ptr with deleters for streams, events and library handles,
// small classes for device and pinned host buffers, and a guard that restores the current device.
#pragma once

#include <cstddef>
#include <memory>
#include <type_traits>

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include "gpu_error.hpp"

namespace trainplan::calibrate {

// Deleters ignore errors: they run during unwinding, when a second exception would terminate.
struct StreamDeleter {
  void operator()(cudaStream_t s) const noexcept { cudaStreamDestroy(s); }
};
struct EventDeleter {
  void operator()(cudaEvent_t e) const noexcept { cudaEventDestroy(e); }
};
struct CublasLtDeleter {
  void operator()(cublasLtHandle_t h) const noexcept { cublasLtDestroy(h); }
};
struct CudnnDeleter {
  void operator()(cudnnHandle_t h) const noexcept { cudnnDestroy(h); }
};

using StreamPtr = std::unique_ptr<std::remove_pointer_t<cudaStream_t>, StreamDeleter>;
using EventPtr = std::unique_ptr<std::remove_pointer_t<cudaEvent_t>, EventDeleter>;
using CublasLtPtr = std::unique_ptr<std::remove_pointer_t<cublasLtHandle_t>, CublasLtDeleter>;
using CudnnPtr = std::unique_ptr<std::remove_pointer_t<cudnnHandle_t>, CudnnDeleter>;

[[nodiscard]] StreamPtr make_stream();
[[nodiscard]] EventPtr make_event();
[[nodiscard]] CublasLtPtr make_cublaslt();
[[nodiscard]] CudnnPtr make_cudnn();

// Sets the current device for its lifetime.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

// Memory from one CUDA allocator (`Memory` supplies allocate and release), freed on destruction.
template <class Memory>
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(std::size_t bytes) : ptr_(Memory::allocate(bytes)), bytes_(bytes) {}
  [[nodiscard]] void* get() const { return ptr_.get(); }
  template <class T>
  [[nodiscard]] T* as() const {
    return static_cast<T*>(ptr_.get());
  }
  [[nodiscard]] std::size_t bytes() const { return bytes_; }

 private:
  struct Release {
    void operator()(void* p) const noexcept { Memory::release(p); }
  };
  std::unique_ptr<void, Release> ptr_;
  std::size_t bytes_ = 0;
};

struct DeviceMemory {
  static void* allocate(std::size_t bytes);  // cudaMalloc
  static void release(void* p) noexcept { cudaFree(p); }
};
struct PinnedMemory {
  static void* allocate(std::size_t bytes);  // cudaMallocHost
  static void release(void* p) noexcept { cudaFreeHost(p); }
};
using DeviceBuffer = Buffer<DeviceMemory>;
using PinnedBuffer = Buffer<PinnedMemory>;

// Milliseconds between two events recorded on a stream, after waiting for the second.
[[nodiscard]] float elapsed_ms(cudaEvent_t start, cudaEvent_t stop);

// Mean time of one call of `body` (which enqueues work on `stream`) in microseconds: `warmup`
// calls, then `iters` calls back to back between two CUDA events.
template <class Body>
[[nodiscard]] double time_on_stream_us(cudaStream_t stream, int warmup, int iters, Body&& body) {
  for (int i = 0; i < warmup; ++i) body();
  const EventPtr start = make_event();
  const EventPtr stop = make_event();
  TP_CUDA(cudaEventRecord(start.get(), stream));
  for (int i = 0; i < iters; ++i) body();
  TP_CUDA(cudaEventRecord(stop.get(), stream));
  return 1e3 * static_cast<double>(elapsed_ms(start.get(), stop.get())) / iters;
}

// Free bytes on the current device.
[[nodiscard]] std::size_t free_device_memory();

}  // namespace trainplan::calibrate
