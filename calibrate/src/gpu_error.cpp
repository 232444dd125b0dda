#include "gpu_error.hpp"

#include <array>

#include <fmt/format.h>

namespace trainplan::calibrate {

void check_cuda(cudaError_t status, const char* call) {
  if (status == cudaSuccess) return;
  throw GpuError(fmt::format("{} failed: {} ({})", call, cudaGetErrorString(status),
                             cudaGetErrorName(status)));
}

void check_cublas(cublasStatus_t status, const char* call) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw GpuError(fmt::format("{} failed: {}", call, cublasLtGetStatusString(status)));
}

void check_cudnn(cudnnStatus_t status, const char* call) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  std::array<char, 1024> detail{};
  cudnnGetLastErrorString(detail.data(), detail.size());
  throw CudnnError(fmt::format("{} failed: {}{}{}", call, cudnnGetErrorString(status),
                               detail[0] != '\0' ? ": " : "", detail.data()),
                   status);
}

void check_nccl(ncclResult_t status, const char* call) {
  if (status == ncclSuccess) return;
  const char* last = ncclGetLastError(nullptr);
  throw GpuError(fmt::format("{} failed: {}{}{}", call, ncclGetErrorString(status),
                             last != nullptr && last[0] != '\0' ? ": " : "",
                             last != nullptr ? last : ""));
}

}  // namespace trainplan::calibrate
