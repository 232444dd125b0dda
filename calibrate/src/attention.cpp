#include "attention.hpp"

#include <array>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "host_values.hpp"
#include "kernels.hpp"
#include "lt_matmul.hpp"
#include "sdpa_plan.hpp"

namespace trainplan::calibrate {
namespace {

constexpr std::size_t kBf16Bytes = 2;

// ---- unfused: cuBLASLt + softmax --------------------------------------------------------------

// Query heads that share a KV head are adjacent in [b, h, s, d], so a group of g = h/kv_heads
// heads is one (g*s x d) matrix against its KV head's (s x d): one batched GEMM per product,
// batch = b * kv_heads.
struct UnfusedPlan {
  UnfusedPlan(cublasLtHandle_t lt, const AttentionShape& a, AttentionPass pass, std::size_t ws) {
    const std::int64_t g = a.heads / a.kv_heads;
    const std::int64_t gs = g * a.seq;
    const std::int64_t s = a.seq;
    const std::int64_t d = a.head_dim;
    const auto bf16 = CUDA_R_16BF;
    const MatrixOperand q{bf16, gs, d, false, gs * d};
    const MatrixOperand kv{bf16, s, d, false, s * d};
    const MatrixOperand kv_t{bf16, s, d, true, s * d};
    const MatrixOperand p{bf16, gs, s, false, gs * s};
    const MatrixOperand p_t{bf16, gs, s, true, gs * s};
    const int batch = static_cast<int>(a.batch * a.kv_heads);
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    const auto make = [&](MatrixOperand x, MatrixOperand y, MatrixOperand out, float alpha) {
      MatmulSpec spec;
      spec.a = x;
      spec.b = y;
      spec.c = out;
      spec.batch = batch;
      spec.alpha = alpha;
      return std::make_unique<LtMatmul>(lt, spec, ws);
    };
    switch (pass) {
      case AttentionPass::kFwd:
        scores = make(q, kv_t, p, scale);  // S = scale * Q K^T
        context = make(p, kv, q, 1.0f);    // O = P V
        break;
      case AttentionPass::kBwd:
        d_value = make(p_t, q, kv, 1.0f);    // dV = P^T dO
        d_probs = make(q, kv_t, p, 1.0f);    // dP = dO V^T
        d_query = make(p, kv, q, scale);     // dQ = scale * dS K
        d_key = make(p_t, q, kv, scale);     // dK = scale * dS^T Q
        break;
    }
  }
  std::unique_ptr<LtMatmul> scores, context, d_value, d_probs, d_query, d_key;
};

}  // namespace

AttentionBench::AttentionBench(int device) : ctx_(device) {
  const DeviceGuard guard(ctx_.device);
  cudnn_ = make_cudnn();
  TP_CUDNN(cudnnSetStream(cudnn_.get(), ctx_.stream.get()));
}

AttentionBench::~AttentionBench() = default;

void AttentionBench::set_shape(const AttentionShape& shape) {
  const DeviceGuard guard(ctx_.device);
  shape_ = shape;
  scale_ = 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
  // The plans point into the buffers: they go first, then the previous shape's memory.
  cudnn_bwd_.reset();
  cudnn_fwd_.reset();
  cudnn_fwd_refused_.reset();
  buf_.reset();
  buf_ = std::make_unique<Buffers>();
  const auto q_elems = static_cast<std::size_t>(shape.batch * shape.heads * shape.seq * shape.head_dim);
  const auto kv_elems =
      static_cast<std::size_t>(shape.batch * shape.kv_heads * shape.seq * shape.head_dim);
  for (DeviceBuffer* b : {&buf_->q, &buf_->o, &buf_->d_o, &buf_->d_q}) {
    *b = DeviceBuffer(q_elems * kBf16Bytes);
  }
  for (DeviceBuffer* b : {&buf_->k, &buf_->v, &buf_->d_k, &buf_->d_v}) {
    *b = DeviceBuffer(kv_elems * kBf16Bytes);
  }
  buf_->stats = DeviceBuffer(static_cast<std::size_t>(shape.batch * shape.heads * shape.seq) * 4);
  fill_random(buf_->q.get(), q_elems, ElemType::kBf16, 11, 1.0f, ctx_.stream.get());
  fill_random(buf_->k.get(), kv_elems, ElemType::kBf16, 12, 1.0f, ctx_.stream.get());
  fill_random(buf_->v.get(), kv_elems, ElemType::kBf16, 13, 1.0f, ctx_.stream.get());
  fill_random(buf_->d_o.get(), q_elems, ElemType::kBf16, 14, 1.0f, ctx_.stream.get());
  TP_CUDA(cudaStreamSynchronize(ctx_.stream.get()));
}

bool AttentionBench::unfused_fits() const {
  const DeviceGuard guard(ctx_.device);
  const double scores = 2.0 * static_cast<double>(kBf16Bytes) * static_cast<double>(shape_.batch) *
                        static_cast<double>(shape_.heads) * static_cast<double>(shape_.seq) *
                        static_cast<double>(shape_.seq);
  const bool allocated = buf_->scores.get() != nullptr;
  // Leave a tenth of the free memory for cuBLASLt and the allocator.
  return allocated || scores < 0.9 * static_cast<double>(free_device_memory());
}

double AttentionBench::unfused_us(AttentionPass pass, int warmup, int iters) {
  const DeviceGuard guard(ctx_.device);
  const auto& a = shape_;
  const std::int64_t rows = a.batch * a.heads * a.seq;
  const auto score_bytes = static_cast<std::size_t>(rows * a.seq) * kBf16Bytes;
  if (buf_->scores.get() == nullptr) {
    buf_->scores = DeviceBuffer(score_bytes);
    buf_->d_scores = DeviceBuffer(score_bytes);
  }
  cudaStream_t st = ctx_.stream.get();
  void* ws = ctx_.workspace.get();
  const Buffers& b = *buf_;
  const UnfusedPlan fwd(ctx_.lt.get(), a, AttentionPass::kFwd, ctx_.workspace.bytes());
  const auto forward = [&] {
    fwd.scores->run(b.q.get(), b.k.get(), b.scores.get(), ws, st);
    softmax_forward_bf16(b.scores.get(), rows, a.seq, a.seq, a.causal, st);
    fwd.context->run(b.scores.get(), b.v.get(), b.o.get(), ws, st);
  };
  if (pass == AttentionPass::kFwd) return time_on_stream_us(st, warmup, iters, forward);

  forward();  // the probabilities P the backward pass reads
  const UnfusedPlan bwd(ctx_.lt.get(), a, AttentionPass::kBwd, ctx_.workspace.bytes());
  return time_on_stream_us(st, warmup, iters, [&] {
    bwd.d_value->run(b.scores.get(), b.d_o.get(), b.d_v.get(), ws, st);
    bwd.d_probs->run(b.d_o.get(), b.v.get(), b.d_scores.get(), ws, st);
    softmax_backward_bf16(b.scores.get(), b.d_scores.get(), rows, a.seq, st);
    bwd.d_query->run(b.d_scores.get(), b.k.get(), b.d_q.get(), ws, st);
    bwd.d_key->run(b.d_scores.get(), b.q.get(), b.d_k.get(), ws, st);
  });
}

std::vector<float> AttentionBench::to_host(Tensor t) {
  const DeviceGuard guard(ctx_.device);
  const DeviceBuffer* src = &buf_->o;
  switch (t) {
    case Tensor::kQ:
      src = &buf_->q;
      break;
    case Tensor::kK:
      src = &buf_->k;
      break;
    case Tensor::kV:
      src = &buf_->v;
      break;
    case Tensor::kO:
      src = &buf_->o;
      break;
    case Tensor::kDO:
      src = &buf_->d_o;
      break;
    case Tensor::kDQ:
      src = &buf_->d_q;
      break;
    case Tensor::kDK:
      src = &buf_->d_k;
      break;
    case Tensor::kDV:
      src = &buf_->d_v;
      break;
  }
  std::vector<unsigned char> bytes(src->bytes());
  TP_CUDA(cudaMemcpyAsync(bytes.data(), src->get(), src->bytes(), cudaMemcpyDeviceToHost,
                          ctx_.stream.get()));
  TP_CUDA(cudaStreamSynchronize(ctx_.stream.get()));
  return decode(bytes, kBf16Bytes);
}

std::optional<double> AttentionBench::cudnn_us(AttentionPass pass, int warmup, int iters,
                                               std::string& why_not) {
  const DeviceGuard guard(ctx_.device);
  using Graph = SdpaPlan::Graph;
  if (!cudnn_fwd_ && !cudnn_fwd_refused_) {
    // cudnn-frontend's choice on cuDNN 9.19 (SDPA_attributes::_auto_select_implementation): the
    // single operation where it can express the problem, else the composite graph.
    std::vector<Graph> order{Graph::kCompositeFwd};
    if (!shape_.causal) order.insert(order.begin(), Graph::kSdpaFwd);
    std::string refusals;
    for (const Graph g : order) {
      try {
        cudnn_fwd_ = std::make_unique<SdpaPlan>(cudnn_.get(), shape_, g, *buf_, scale_);
        break;
      } catch (const CudnnError& e) {
        refusals += fmt::format("{}{} forward: {}", refusals.empty() ? "" : "; ",
                                g == Graph::kSdpaFwd ? "SDPA_FWD" : "composite", e.what());
      }
    }
    if (!cudnn_fwd_) cudnn_fwd_refused_ = refusals;
  }
  if (!cudnn_fwd_) {
    why_not = *cudnn_fwd_refused_;
    return std::nullopt;
  }
  try {
    if (pass == AttentionPass::kFwd) {
      return time_on_stream_us(ctx_.stream.get(), warmup, iters, [&] { cudnn_fwd_->run(); });
    }
    if (!cudnn_bwd_) {
      const auto rows = static_cast<std::size_t>(shape_.batch * shape_.heads * shape_.seq);
      if (buf_->softmax_sum.get() == nullptr) {
        buf_->softmax_sum = DeviceBuffer(rows * sizeof(float));
        buf_->d_q_accum =
            DeviceBuffer(rows * static_cast<std::size_t>(shape_.head_dim) * sizeof(float));
      }
      cudnn_bwd_ =
          std::make_unique<SdpaPlan>(cudnn_.get(), shape_, Graph::kCompositeBwd, *buf_, scale_);
    }
    cudnn_fwd_->run();  // O and the statistics the backward pass reads
    return time_on_stream_us(ctx_.stream.get(), warmup, iters, [&] { cudnn_bwd_->run(); });
  } catch (const CudnnError& e) {
    why_not = fmt::format("{}: {}", pass == AttentionPass::kFwd ? "forward" : "composite backward",
                          e.what());
    return std::nullopt;
  }
}

std::string AttentionBench::cudnn_forward_graph() const {
  if (!cudnn_fwd_) return "";
  switch (cudnn_fwd_->kind()) {
    case SdpaPlan::Graph::kSdpaFwd:
      return "sdpa_fwd";
    case SdpaPlan::Graph::kCompositeFwd:
    case SdpaPlan::Graph::kCompositeBwd:
      return "composite";
  }
  return "";
}

}  // namespace trainplan::calibrate
