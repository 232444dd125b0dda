#include "device.hpp"

namespace trainplan::calibrate {

StreamPtr make_stream() {
  cudaStream_t s = nullptr;
  TP_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return StreamPtr(s);
}

EventPtr make_event() {
  cudaEvent_t e = nullptr;
  TP_CUDA(cudaEventCreate(&e));
  return EventPtr(e);
}

CublasLtPtr make_cublaslt() {
  cublasLtHandle_t h = nullptr;
  TP_CUBLAS(cublasLtCreate(&h));
  return CublasLtPtr(h);
}

CudnnPtr make_cudnn() {
  cudnnHandle_t h = nullptr;
  TP_CUDNN(cudnnCreate(&h));
  return CudnnPtr(h);
}

DeviceGuard::DeviceGuard(int device) {
  TP_CUDA(cudaGetDevice(&previous_));
  TP_CUDA(cudaSetDevice(device));
}

DeviceGuard::~DeviceGuard() { cudaSetDevice(previous_); }

void* DeviceMemory::allocate(std::size_t bytes) {
  void* p = nullptr;
  TP_CUDA(cudaMalloc(&p, bytes));
  return p;
}

void* PinnedMemory::allocate(std::size_t bytes) {
  void* p = nullptr;
  TP_CUDA(cudaMallocHost(&p, bytes));
  return p;
}

float elapsed_ms(cudaEvent_t start, cudaEvent_t stop) {
  TP_CUDA(cudaEventSynchronize(stop));
  float ms = 0;
  TP_CUDA(cudaEventElapsedTime(&ms, start, stop));
  return ms;
}

std::size_t free_device_memory() {
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  TP_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  return free_bytes;
}

}  // namespace trainplan::calibrate
