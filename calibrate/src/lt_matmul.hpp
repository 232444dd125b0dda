// One cuBLASLt matmul, planned once (descriptors + the heuristic's first algorithm) and run many
// times. Operands are described row-major, as the model code writes them; the class maps them to
// cuBLAS' column-major convention (C^T = op(B)^T op(A)^T).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>

#include <cublasLt.h>

#include "device.hpp"

namespace trainplan::calibrate {

struct MatrixOperand {
  cudaDataType_t type = CUDA_R_16BF;
  std::int64_t rows = 0;  // of the stored row-major matrix
  std::int64_t cols = 0;
  bool transpose = false;  // use the stored matrix transposed
  std::int64_t batch_stride = 0;  // elements between consecutive matrices of a batch
};

struct MatmulSpec {
  MatrixOperand a;  // C = op(A) * op(B), C never transposed
  MatrixOperand b;
  MatrixOperand c;
  int batch = 1;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  bool fast_accum = false;  // FP8 fast accumulation (what TransformerEngine uses in forward)
  float alpha = 1.0f;
  float beta = 0.0f;
};

inline constexpr std::size_t kCublasWorkspaceBytes = std::size_t{32} << 20;  // 32 MiB, Hopper+

// What a benchmark that runs cuBLASLt on one device holds: the device, a stream, a handle and a
// workspace of kCublasWorkspaceBytes, made on that device.
struct LtContext {
  explicit LtContext(int device_id);
  int device;
  StreamPtr stream;
  CublasLtPtr lt;
  DeviceBuffer workspace;
};

class LtMatmul {
 public:
  // Throws GpuError when the shapes disagree or cuBLASLt offers no algorithm.
  LtMatmul(cublasLtHandle_t lt, const MatmulSpec& spec, std::size_t workspace_bytes);
  void run(const void* a, const void* b, void* c, void* workspace, cudaStream_t stream) const;

 private:
  struct DescDeleter {
    void operator()(cublasLtMatmulDesc_t d) const noexcept { cublasLtMatmulDescDestroy(d); }
  };
  struct LayoutDeleter {
    void operator()(cublasLtMatrixLayout_t l) const noexcept { cublasLtMatrixLayoutDestroy(l); }
  };
  using DescPtr = std::unique_ptr<std::remove_pointer_t<cublasLtMatmulDesc_t>, DescDeleter>;
  using LayoutPtr = std::unique_ptr<std::remove_pointer_t<cublasLtMatrixLayout_t>, LayoutDeleter>;

  cublasLtHandle_t lt_;
  DescPtr op_;
  LayoutPtr a_layout_;  // cuBLAS' A: our B
  LayoutPtr b_layout_;  // cuBLAS' B: our A
  LayoutPtr c_layout_;
  cublasLtMatmulAlgo_t algo_{};
  std::size_t workspace_bytes_;
  float alpha_;
  float beta_;
};

}  // namespace trainplan::calibrate
