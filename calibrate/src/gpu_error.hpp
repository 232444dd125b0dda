// Every CUDA, cuBLASLt, cuDNN and NCCL call goes through one of these checks; a failure throws
// GpuError with the call spelled out, and main turns it into a message and an exit code.
#pragma once

#include <stdexcept>
#include <string>

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

namespace trainplan::calibrate {

class GpuError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The library has no kernel for a configuration (a shape, a dtype): skip it, not the run.
class Unsupported : public GpuError {
 public:
  using GpuError::GpuError;
};

// cuDNN failures keep their status so that callers can tell "not supported" from a real error.
class CudnnError : public GpuError {
 public:
  CudnnError(const std::string& what, cudnnStatus_t status) : GpuError(what), status_(status) {}
  [[nodiscard]] cudnnStatus_t status() const { return status_; }

 private:
  cudnnStatus_t status_;
};

void check_cuda(cudaError_t status, const char* call);
void check_cublas(cublasStatus_t status, const char* call);
void check_cudnn(cudnnStatus_t status, const char* call);
// Accepts ncclSuccess only; nonblocking callers handle ncclInProgress before calling this.
void check_nccl(ncclResult_t status, const char* call);

}  // namespace trainplan::calibrate

// The macros exist only to put the text of the call into the message.
#define TP_CUDA(call) ::trainplan::calibrate::check_cuda((call), #call)
#define TP_CUBLAS(call) ::trainplan::calibrate::check_cublas((call), #call)
#define TP_CUDNN(call) ::trainplan::calibrate::check_cudnn((call), #call)
#define TP_NCCL(call) ::trainplan::calibrate::check_nccl((call), #call)
