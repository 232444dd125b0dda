#include "lt_matmul.hpp"

#include <array>

#include <fmt/format.h>

#include "gpu_error.hpp"

namespace trainplan::calibrate {

LtContext::LtContext(int device_id) : device(device_id) {
  const DeviceGuard guard(device);
  stream = make_stream();
  lt = make_cublaslt();
  workspace = DeviceBuffer(kCublasWorkspaceBytes);
}

namespace {

struct PreferenceDeleter {
  void operator()(cublasLtMatmulPreference_t p) const noexcept { cublasLtMatmulPreferenceDestroy(p); }
};

// Column-major view of a row-major stored matrix: rows and columns swap, leading dim = cols.
cublasLtMatrixLayout_t make_layout(const MatrixOperand& m, int batch) {
  cublasLtMatrixLayout_t layout = nullptr;
  TP_CUBLAS(cublasLtMatrixLayoutCreate(&layout, m.type, static_cast<std::uint64_t>(m.cols),
                                       static_cast<std::uint64_t>(m.rows), m.cols));
  if (batch > 1) {
    const std::int32_t count = batch;
    const std::int64_t stride = m.batch_stride;
    TP_CUBLAS(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                               sizeof count));
    TP_CUBLAS(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                               &stride, sizeof stride));
  }
  return layout;
}

}  // namespace

LtMatmul::LtMatmul(cublasLtHandle_t lt, const MatmulSpec& spec, std::size_t workspace_bytes)
    : lt_(lt), workspace_bytes_(workspace_bytes), alpha_(spec.alpha), beta_(spec.beta) {
  const auto& a = spec.a;
  const auto& b = spec.b;
  const std::int64_t m = a.transpose ? a.cols : a.rows;
  const std::int64_t k = a.transpose ? a.rows : a.cols;
  const std::int64_t kb = b.transpose ? b.cols : b.rows;
  const std::int64_t n = b.transpose ? b.rows : b.cols;
  if (k != kb || spec.c.rows != m || spec.c.cols != n) {
    throw GpuError(fmt::format("matmul shapes disagree: op(A) {}x{}, op(B) {}x{}, C {}x{}", m, k, kb,
                               n, spec.c.rows, spec.c.cols));
  }

  cublasLtMatmulDesc_t op = nullptr;
  TP_CUBLAS(cublasLtMatmulDescCreate(&op, spec.compute, CUDA_R_32F));
  op_.reset(op);
  const cublasOperation_t trans_a = b.transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t trans_b = a.transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
  TP_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof trans_a));
  TP_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof trans_b));
  if (spec.fast_accum) {
    const std::int8_t fast = 1;
    TP_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof fast));
  }
  a_layout_.reset(make_layout(b, spec.batch));
  b_layout_.reset(make_layout(a, spec.batch));
  c_layout_.reset(make_layout(spec.c, spec.batch));

  cublasLtMatmulPreference_t pref_raw = nullptr;
  TP_CUBLAS(cublasLtMatmulPreferenceCreate(&pref_raw));
  const std::unique_ptr<std::remove_pointer_t<cublasLtMatmulPreference_t>, PreferenceDeleter> pref(
      pref_raw);
  const std::uint64_t ws = workspace_bytes;
  TP_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref.get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                 &ws, sizeof ws));
  std::array<cublasLtMatmulHeuristicResult_t, 8> results{};
  int returned = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
      lt, op, a_layout_.get(), b_layout_.get(), c_layout_.get(), c_layout_.get(), pref.get(),
      static_cast<int>(results.size()), results.data(), &returned);
  if (status == CUBLAS_STATUS_NOT_SUPPORTED || (status == CUBLAS_STATUS_SUCCESS && returned == 0)) {
    throw Unsupported(fmt::format("cuBLASLt has no algorithm for C[{}x{}] = A[{}x{}] B[{}x{}] (batch {})",
                               m, n, m, k, k, n, spec.batch));
  }
  check_cublas(status, "cublasLtMatmulAlgoGetHeuristic");
  algo_ = results[0].algo;  // the heuristic's first choice, what frameworks get
}

void LtMatmul::run(const void* a, const void* b, void* c, void* workspace,
                   cudaStream_t stream) const {
  TP_CUBLAS(cublasLtMatmul(lt_, op_.get(), &alpha_, b, a_layout_.get(), a, b_layout_.get(), &beta_,
                           c, c_layout_.get(), c, c_layout_.get(), &algo_, workspace,
                           workspace_bytes_, stream));
}

}  // namespace trainplan::calibrate
