#include "attention.hpp"

#include <array>
#include <cmath>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "kernels.hpp"
#include "lt_matmul.hpp"

namespace trainplan::calibrate::bench {

struct AttentionBench::Buffers {
  DeviceBuffer q, k, v, o, d_o, d_q, d_k, d_v;
  DeviceBuffer stats;             // cuDNN: per-row log-sum-exp, fp32
  DeviceBuffer scores, d_scores;  // unfused: b*h*s*s each, allocated on first use
};

namespace {

constexpr std::size_t kBf16Bytes = 2;

// ---- cuDNN backend API -------------------------------------------------------------------------

struct BackendDeleter {
  void operator()(cudnnBackendDescriptor_t d) const noexcept { cudnnBackendDestroyDescriptor(d); }
};
using Backend = std::unique_ptr<void, BackendDeleter>;

Backend make_backend(cudnnBackendDescriptorType_t type) {
  cudnnBackendDescriptor_t d = nullptr;
  TP_CUDNN(cudnnBackendCreateDescriptor(type, &d));
  return Backend(d);
}

void set_attr(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name, const char* name_text,
              cudnnBackendAttributeType_t type, std::int64_t count, const void* value) {
  check_cudnn(cudnnBackendSetAttribute(d, name, type, count, value),
              fmt::format("cudnnBackendSetAttribute({})", name_text).c_str());
}
// Spells the attribute's name into the error message.
#define TP_SET_ATTR(desc, name, type, count, value) set_attr((desc), (name), #name, (type), (count), (value))

void finalize(cudnnBackendDescriptor_t d, const char* what) {
  check_cudnn(cudnnBackendFinalize(d), fmt::format("cudnnBackendFinalize({})", what).c_str());
}

Backend tensor(std::int64_t uid, const std::array<std::int64_t, 4>& dims,
               const std::array<std::int64_t, 4>& strides, cudnnDataType_t type,
               bool by_value = false) {
  Backend t = make_backend(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const std::int64_t alignment = 16;
  TP_SET_ATTR(t.get(), CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
  TP_SET_ATTR(t.get(), CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data());
  TP_SET_ATTR(t.get(), CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data());
  TP_SET_ATTR(t.get(), CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  TP_SET_ATTR(t.get(), CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
  if (by_value) {
    const bool yes = true;
    TP_SET_ATTR(t.get(), CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &yes);
  }
  finalize(t.get(), "tensor");
  return t;
}

enum Uid : std::int64_t { kQ = 1, kK, kV, kO, kStats, kScale, kDO, kDQ, kDK, kDV };

// An executable cuDNN SDPA graph with its variant pack bound to fixed buffers.
class SdpaPlan {
 public:
  SdpaPlan(cudnnHandle_t handle, const AttentionShape& a, AttentionPass pass,
           const AttentionBench::Buffers& buf, const float* scale)
      : handle_(handle) {
    const std::int64_t b = a.batch, h = a.heads, g = a.kv_heads, s = a.seq, d = a.head_dim;
    const std::array<std::int64_t, 4> q_dims{b, h, s, d}, q_strides{h * s * d, s * d, d, 1};
    const std::array<std::int64_t, 4> kv_dims{b, g, s, d}, kv_strides{g * s * d, s * d, d, 1};
    const std::array<std::int64_t, 4> stats_dims{b, h, s, 1}, stats_strides{h * s, s, 1, 1};
    const std::array<std::int64_t, 4> one{1, 1, 1, 1};
    const auto bf16 = CUDNN_DATA_BFLOAT16;
    std::vector<Backend> tensors;
    const auto add = [&](Backend t) {
      tensors.push_back(std::move(t));
      return tensors.back().get();
    };
    void* q = add(tensor(kQ, q_dims, q_strides, bf16));
    void* k = add(tensor(kK, kv_dims, kv_strides, bf16));
    void* v = add(tensor(kV, kv_dims, kv_strides, bf16));
    void* o = add(tensor(kO, q_dims, q_strides, bf16));
    void* stats = add(tensor(kStats, stats_dims, stats_strides, CUDNN_DATA_FLOAT));
    void* sc = add(tensor(kScale, one, one, CUDNN_DATA_FLOAT, /*by_value=*/true));

    Backend op;
    std::vector<std::int64_t> uids{kQ, kK, kV, kO, kStats, kScale};
    std::vector<void*> ptrs{buf.q.get(), buf.k.get(), buf.v.get(), buf.o.get(), buf.stats.get(),
                            const_cast<float*>(scale)};
    switch (pass) {
      case AttentionPass::kFwd:
        op = make_backend(CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR);
        TP_SET_ATTR(op.get(), CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &q);
        TP_SET_ATTR(op.get(), CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &k);
        TP_SET_ATTR(op.get(), CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v);
        TP_SET_ATTR(op.get(), CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &o);
        TP_SET_ATTR(op.get(), CUDNN_ATTR_OPERATION_SDPA_FWD_STATSDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                    &stats);
        TP_SET_ATTR(op.get(), CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                    &sc);
        break;
      case AttentionPass::kBwd: {
        void* d_o = add(tensor(kDO, q_dims, q_strides, bf16));
        void* d_q = add(tensor(kDQ, q_dims, q_strides, bf16));
        void* d_k = add(tensor(kDK, kv_dims, kv_strides, bf16));
        void* d_v = add(tensor(kDV, kv_dims, kv_strides, bf16));
        op = make_backend(CUDNN_BACKEND_OPERATION_SDPA_BWD_DESCRIPTOR);
        TP_SET_ATTR(op.get(), CUDNN_ATTR_OPERATION_SDPA_BWD_QDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &q);
        TP_SET_ATTR(op.get(), CUDNN_ATTR_OPERATION_SDPA_BWD_KDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &k);
        TP_SET_ATTR(op.get(), CUDNN_ATTR_OPERATION_SDPA_BWD_VDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v);
        TP_SET_ATTR(op.get(), CUDNN_ATTR_OPERATION_SDPA_BWD_ODESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &o);
        TP_SET_ATTR(op.get(), CUDNN_ATTR_OPERATION_SDPA_BWD_STATSDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                    &stats);
        TP_SET_ATTR(op.get(), CUDNN_ATTR_OPERATION_SDPA_BWD_SCALEDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                    &sc);
        TP_SET_ATTR(op.get(), CUDNN_ATTR_OPERATION_SDPA_BWD_DODDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                    &d_o);
        TP_SET_ATTR(op.get(), CUDNN_ATTR_OPERATION_SDPA_BWD_DQDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                    &d_q);
        TP_SET_ATTR(op.get(), CUDNN_ATTR_OPERATION_SDPA_BWD_DKDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                    &d_k);
        TP_SET_ATTR(op.get(), CUDNN_ATTR_OPERATION_SDPA_BWD_DVDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                    &d_v);
        uids.insert(uids.end(), {kDO, kDQ, kDK, kDV});
        ptrs.insert(ptrs.end(), {buf.d_o.get(), buf.d_q.get(), buf.d_k.get(), buf.d_v.get()});
        break;
      }
    }
    finalize(op.get(), "SDPA operation");

    graph_ = make_backend(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    void* op_raw = op.get();
    TP_SET_ATTR(graph_.get(), CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle_);
    TP_SET_ATTR(graph_.get(), CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op_raw);
    finalize(graph_.get(), "operation graph");

    Backend heur = make_backend(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    void* graph_raw = graph_.get();
    const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    TP_SET_ATTR(heur.get(), CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                &graph_raw);
    TP_SET_ATTR(heur.get(), CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    finalize(heur.get(), "engine heuristics");
    std::int64_t count = 0;
    TP_CUDNN(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                      CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr));
    std::vector<Backend> configs;
    std::vector<cudnnBackendDescriptor_t> raw;
    for (std::int64_t i = 0; i < count; ++i) {
      configs.push_back(make_backend(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
      raw.push_back(configs.back().get());
    }
    std::int64_t returned = 0;
    TP_CUDNN(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                      CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &returned, raw.data()));
    // The first configuration that builds, in the heuristic's order.
    for (std::int64_t i = 0; i < returned && !plan_; ++i) {
      Backend plan = make_backend(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
      TP_SET_ATTR(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle_);
      TP_SET_ATTR(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                  1, &raw[static_cast<std::size_t>(i)]);
      if (cudnnBackendFinalize(plan.get()) == CUDNN_STATUS_SUCCESS) plan_ = std::move(plan);
    }
    // The plan refers to the descriptors it was built from: they live as long as it does.
    for (auto& t : tensors) keep_.push_back(std::move(t));
    keep_.push_back(std::move(op));
    keep_.push_back(std::move(heur));
    for (auto& c : configs) keep_.push_back(std::move(c));
    if (!plan_) {
      throw CudnnError(fmt::format("no cuDNN engine builds an SDPA {} plan ({} candidates)",
                                   to_string(pass), returned),
                       CUDNN_STATUS_NOT_SUPPORTED);
    }
    std::int64_t ws_bytes = 0;
    TP_CUDNN(cudnnBackendGetAttribute(plan_.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                      CUDNN_TYPE_INT64, 1, nullptr, &ws_bytes));
    if (ws_bytes > 0) workspace_ = DeviceBuffer(static_cast<std::size_t>(ws_bytes));

    pack_ = make_backend(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    void* ws = workspace_.get();
    TP_SET_ATTR(pack_.get(), CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64,
                static_cast<std::int64_t>(uids.size()), uids.data());
    TP_SET_ATTR(pack_.get(), CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
                static_cast<std::int64_t>(ptrs.size()), ptrs.data());
    TP_SET_ATTR(pack_.get(), CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
    finalize(pack_.get(), "variant pack");
  }

  void run() const { TP_CUDNN(cudnnBackendExecute(handle_, plan_.get(), pack_.get())); }

 private:
  cudnnHandle_t handle_;
  std::vector<Backend> keep_;
  Backend graph_;
  Backend plan_;
  Backend pack_;
  DeviceBuffer workspace_;
};

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

AttentionBench::AttentionBench(int device) : device_(device) {
  const DeviceGuard guard(device_);
  stream_ = make_stream();
  lt_ = make_cublaslt();
  cudnn_ = make_cudnn();
  TP_CUDNN(cudnnSetStream(cudnn_.get(), stream_.get()));
  workspace_ = DeviceBuffer(kCublasWorkspaceBytes);
}

AttentionBench::~AttentionBench() = default;

void AttentionBench::set_shape(const AttentionShape& shape) {
  const DeviceGuard guard(device_);
  shape_ = shape;
  buf_.reset();  // free the previous shape's memory first
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
  fill_random(buf_->q.get(), q_elems, ElemType::kBf16, 11, 1.0f, stream_.get());
  fill_random(buf_->k.get(), kv_elems, ElemType::kBf16, 12, 1.0f, stream_.get());
  fill_random(buf_->v.get(), kv_elems, ElemType::kBf16, 13, 1.0f, stream_.get());
  fill_random(buf_->d_o.get(), q_elems, ElemType::kBf16, 14, 1.0f, stream_.get());
  TP_CUDA(cudaStreamSynchronize(stream_.get()));
}

bool AttentionBench::unfused_fits() const {
  const DeviceGuard guard(device_);
  const double scores = 2.0 * static_cast<double>(kBf16Bytes) * static_cast<double>(shape_.batch) *
                        static_cast<double>(shape_.heads) * static_cast<double>(shape_.seq) *
                        static_cast<double>(shape_.seq);
  const bool allocated = buf_->scores.get() != nullptr;
  // Leave a tenth of the free memory for cuBLASLt and the allocator.
  return allocated || scores < 0.9 * static_cast<double>(free_device_memory());
}

double AttentionBench::unfused_us(AttentionPass pass, int warmup, int iters) {
  const DeviceGuard guard(device_);
  const auto& a = shape_;
  const std::int64_t rows = a.batch * a.heads * a.seq;
  const auto score_bytes = static_cast<std::size_t>(rows * a.seq) * kBf16Bytes;
  if (buf_->scores.get() == nullptr) {
    buf_->scores = DeviceBuffer(score_bytes);
    buf_->d_scores = DeviceBuffer(score_bytes);
  }
  cudaStream_t st = stream_.get();
  void* ws = workspace_.get();
  const Buffers& b = *buf_;
  const UnfusedPlan fwd(lt_.get(), a, AttentionPass::kFwd, workspace_.bytes());
  const auto forward = [&] {
    fwd.scores->run(b.q.get(), b.k.get(), b.scores.get(), ws, st);
    softmax_forward_bf16(b.scores.get(), rows, a.seq, a.seq, a.causal, st);
    fwd.context->run(b.scores.get(), b.v.get(), b.o.get(), ws, st);
  };
  if (pass == AttentionPass::kFwd) return time_on_stream_us(st, warmup, iters, forward);

  forward();  // the probabilities P the backward pass reads
  const UnfusedPlan bwd(lt_.get(), a, AttentionPass::kBwd, workspace_.bytes());
  return time_on_stream_us(st, warmup, iters, [&] {
    bwd.d_value->run(b.scores.get(), b.d_o.get(), b.d_v.get(), ws, st);
    bwd.d_probs->run(b.d_o.get(), b.v.get(), b.d_scores.get(), ws, st);
    softmax_backward_bf16(b.scores.get(), b.d_scores.get(), rows, a.seq, st);
    bwd.d_query->run(b.d_scores.get(), b.k.get(), b.d_q.get(), ws, st);
    bwd.d_key->run(b.d_scores.get(), b.q.get(), b.d_k.get(), ws, st);
  });
}

std::vector<float> AttentionBench::to_host(Tensor t) {
  const DeviceGuard guard(device_);
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
  }
  std::vector<std::uint16_t> bits(src->bytes() / kBf16Bytes);
  TP_CUDA(cudaMemcpyAsync(bits.data(), src->get(), src->bytes(), cudaMemcpyDeviceToHost,
                          stream_.get()));
  TP_CUDA(cudaStreamSynchronize(stream_.get()));
  std::vector<float> out(bits.size());
  for (std::size_t i = 0; i < bits.size(); ++i) {
    const std::uint32_t word = static_cast<std::uint32_t>(bits[i]) << 16;  // bf16 = top half of fp32
    std::memcpy(&out[i], &word, sizeof word);
  }
  return out;
}

std::optional<double> AttentionBench::cudnn_us(AttentionPass pass, int warmup, int iters,
                                               std::string& why_not) {
  const DeviceGuard guard(device_);
  if (shape_.causal) {
    // cuDNN 9.19's SDPA operation takes block masks only; an element-wise causal mask needs the
    // score-modifier subgraph of cuDNN >= 9.21 or the composite graph the frontend builds.
    why_not = "causal masks are not expressible with the SDPA operation of this cuDNN";
    return std::nullopt;
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(shape_.head_dim));
  std::unique_ptr<SdpaPlan> fwd;
  std::unique_ptr<SdpaPlan> bwd;
  try {
    fwd = std::make_unique<SdpaPlan>(cudnn_.get(), shape_, AttentionPass::kFwd, *buf_, &scale);
    if (pass == AttentionPass::kBwd) {
      bwd = std::make_unique<SdpaPlan>(cudnn_.get(), shape_, AttentionPass::kBwd, *buf_, &scale);
    }
  } catch (const CudnnError& e) {
    why_not = e.what();
    return std::nullopt;
  }
  if (pass == AttentionPass::kFwd) {
    return time_on_stream_us(stream_.get(), warmup, iters, [&] { fwd->run(); });
  }
  fwd->run();  // O and the statistics the backward pass reads
  return time_on_stream_us(stream_.get(), warmup, iters, [&] { bwd->run(); });
}

}  // namespace trainplan::calibrate::bench
