#include "attention.hpp"

#include <array>
#include <cmath>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "kernels.hpp"
#include "lt_matmul.hpp"

namespace trainplan::calibrate {

struct AttentionBench::Buffers {
  DeviceBuffer q, k, v, o, d_o, d_q, d_k, d_v;
  DeviceBuffer stats;             // cuDNN: per-row log-sum-exp, fp32
  DeviceBuffer softmax_sum;       // cuDNN backward: rowsum(dO * O), fp32, allocated on first use
  DeviceBuffer d_q_accum;         // cuDNN backward: dQ accumulated in fp32, allocated on first use
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

using Dims = std::array<std::int64_t, 4>;

// A tensor of a graph: its descriptor and the shape the next operation needs to describe its
// output.
struct GraphTensor {
  cudnnBackendDescriptor_t desc = nullptr;
  Dims dims{};
  Dims strides{};
};

// Unique ids of the tensors bound to memory; virtual tensors count up from kFirstVirtual.
enum Uid : std::int64_t {
  kQ = 1,
  kK,
  kV,
  kO,
  kStats,
  kScale,
  kDO,
  kDQ,
  kDK,
  kDV,
  kNegInf,
  kOne,
  kSoftmaxSum,
  kDQAccum,
  kFirstVirtual = 100
};

// An operation graph under construction: owns every descriptor, records the memory each
// non-virtual tensor is bound to, and finalizes into an execution plan with its variant pack.
class OpGraph {
 public:
  // A tensor read or written through `data` (device memory; host memory when by value).
  GraphTensor io(std::int64_t uid, const Dims& dims, const Dims& strides, cudnnDataType_t type,
                 void* data, bool by_value = false) {
    uids_.push_back(uid);
    ptrs_.push_back(data);
    return make_tensor(uid, dims, strides, type, /*is_virtual=*/false, by_value);
  }
  GraphTensor scalar(std::int64_t uid, float* value) {
    const Dims one{1, 1, 1, 1};
    return io(uid, one, one, CUDNN_DATA_FLOAT, value, /*by_value=*/true);
  }
  // A tensor that lives only inside the fused kernel.
  GraphTensor virt(const Dims& dims, const Dims& strides, cudnnDataType_t type) {
    return make_tensor(next_virtual_++, dims, strides, type, /*is_virtual=*/true, false);
  }

  void matmul(const GraphTensor& a, const GraphTensor& b, const GraphTensor& c) {
    Backend mm = make_backend(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
    TP_SET_ATTR(mm.get(), CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
    finalize(mm.get(), "matmul descriptor");
    Backend op = make_backend(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    void* mm_raw = mm.get();
    TP_SET_ATTR(op.get(), CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                &a.desc);
    TP_SET_ATTR(op.get(), CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                &b.desc);
    TP_SET_ATTR(op.get(), CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                &c.desc);
    TP_SET_ATTR(op.get(), CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                &mm_raw);
    finalize(op.get(), "matmul operation");
    keep(std::move(mm));
    add_op(std::move(op));
  }

  // y = mode(x[, b[, t]]). `axis` only for GEN_INDEX.
  void pointwise(cudnnPointwiseMode_t mode, cudnnDataType_t compute, const GraphTensor& x,
                 const GraphTensor* b, const GraphTensor* t, const GraphTensor& y,
                 std::int64_t axis = -1) {
    Backend pw = make_backend(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    TP_SET_ATTR(pw.get(), CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
    TP_SET_ATTR(pw.get(), CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &compute);
    if (mode == CUDNN_POINTWISE_GEN_INDEX) {
      TP_SET_ATTR(pw.get(), CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis);
    }
    finalize(pw.get(), "pointwise descriptor");
    Backend op = make_backend(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    void* pw_raw = pw.get();
    TP_SET_ATTR(op.get(), CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR,
                CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw_raw);
    TP_SET_ATTR(op.get(), CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                &x.desc);
    if (b != nullptr) {
      TP_SET_ATTR(op.get(), CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                  &b->desc);
    }
    if (t != nullptr) {
      TP_SET_ATTR(op.get(), CUDNN_ATTR_OPERATION_POINTWISE_TDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                  &t->desc);
    }
    TP_SET_ATTR(op.get(), CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                &y.desc);
    const float unit = 1.0f;
    TP_SET_ATTR(op.get(), CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1, &unit);
    TP_SET_ATTR(op.get(), CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1, &unit);
    finalize(op.get(), "pointwise operation");
    keep(std::move(pw));
    add_op(std::move(op));
  }

  // Reduces x over the dimensions where y is 1 (or, for a head group, smaller).
  void reduction(cudnnReduceTensorOp_t reduce, const GraphTensor& x, const GraphTensor& y) {
    Backend rd = make_backend(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
    TP_SET_ATTR(rd.get(), CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1,
                &reduce);
    TP_SET_ATTR(rd.get(), CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
    finalize(rd.get(), "reduction descriptor");
    Backend op = make_backend(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
    void* rd_raw = rd.get();
    TP_SET_ATTR(op.get(), CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                &x.desc);
    TP_SET_ATTR(op.get(), CUDNN_ATTR_OPERATION_REDUCTION_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                &y.desc);
    TP_SET_ATTR(op.get(), CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                &rd_raw);
    finalize(op.get(), "reduction operation");
    keep(std::move(rd));
    add_op(std::move(op));
  }

  // A view of x with other dimensions or strides (the transposes of the backward pass).
  void reshape(const GraphTensor& x, const GraphTensor& y) {
    Backend op = make_backend(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
    TP_SET_ATTR(op.get(), CUDNN_ATTR_OPERATION_RESHAPE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                &x.desc);
    TP_SET_ATTR(op.get(), CUDNN_ATTR_OPERATION_RESHAPE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                &y.desc);
    finalize(op.get(), "reshape operation");
    add_op(std::move(op));
  }

  // An operation built outside (the single SDPA_FWD operation).
  void add_op(Backend op) {
    ops_.push_back(op.get());
    keep(std::move(op));
  }
  [[nodiscard]] const std::vector<cudnnBackendDescriptor_t>& ops() const { return ops_; }
  [[nodiscard]] const std::vector<std::int64_t>& uids() const { return uids_; }
  [[nodiscard]] const std::vector<void*>& pointers() const { return ptrs_; }

 private:
  GraphTensor make_tensor(std::int64_t uid, const Dims& dims, const Dims& strides,
                          cudnnDataType_t type, bool is_virtual, bool by_value) {
    Backend t = make_backend(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    const std::int64_t alignment = 16;  // what tensor-core engines need; cudaMalloc gives 256
    TP_SET_ATTR(t.get(), CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
    TP_SET_ATTR(t.get(), CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data());
    TP_SET_ATTR(t.get(), CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data());
    TP_SET_ATTR(t.get(), CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    TP_SET_ATTR(t.get(), CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
    if (is_virtual) {
      const bool yes = true;
      TP_SET_ATTR(t.get(), CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &yes);
    }
    if (by_value) {
      const bool yes = true;
      TP_SET_ATTR(t.get(), CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &yes);
    }
    finalize(t.get(), "tensor");
    const GraphTensor out{t.get(), dims, strides};
    keep(std::move(t));
    return out;
  }
  void keep(Backend d) { owned_.push_back(std::move(d)); }

  std::vector<Backend> owned_;
  std::vector<cudnnBackendDescriptor_t> ops_;
  std::vector<std::int64_t> uids_;
  std::vector<void*> ptrs_;
  std::int64_t next_virtual_ = kFirstVirtual;
};

// The shapes of one attention problem, in the layouts the backend graphs use.
struct SdpaLayout {
  explicit SdpaLayout(const AttentionShape& a)
      : b(a.batch), h(a.heads), g(a.kv_heads), s(a.seq), d(a.head_dim) {}
  std::int64_t b, h, g, s, d;
  [[nodiscard]] Dims q() const { return {b, h, s, d}; }  // also O, dO, dQ
  [[nodiscard]] Dims q_strides() const { return {h * s * d, s * d, d, 1}; }
  [[nodiscard]] Dims kv() const { return {b, g, s, d}; }  // also dK, dV
  [[nodiscard]] Dims kv_strides() const { return {g * s * d, s * d, d, 1}; }
  // K and V as stored, read transposed (d x s): the backend's matmul takes K^T, not K.
  [[nodiscard]] Dims kv_t() const { return {b, g, d, s}; }
  [[nodiscard]] Dims kv_t_strides() const { return {g * s * d, s * d, 1, d}; }
  [[nodiscard]] Dims scores() const { return {b, h, s, s}; }
  [[nodiscard]] Dims scores_strides() const { return {h * s * s, s * s, s, 1}; }
  [[nodiscard]] Dims scores_t_strides() const { return {h * s * s, s * s, 1, s}; }
  [[nodiscard]] Dims rows() const { return {b, h, s, 1}; }  // softmax statistics
  [[nodiscard]] Dims rows_strides() const { return {h * s, s, 1, 1}; }
  [[nodiscard]] Dims heads_full() const { return {b, h, s, d}; }  // dK, dV before the group sum
};

// Causal (top-left aligned) mask: scores where the key position exceeds the query position
// become -inf. cudnn-frontend's CompositeDiagonalBandMaskNode with right bound 0.
GraphTensor causal_mask(OpGraph& g, const GraphTensor& scores, const GraphTensor& neg_inf) {
  const GraphTensor row = g.virt(scores.dims, scores.strides, CUDNN_DATA_INT32);
  g.pointwise(CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, scores, nullptr, nullptr, row, 2);
  const GraphTensor col = g.virt(scores.dims, scores.strides, CUDNN_DATA_INT32);
  g.pointwise(CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, scores, nullptr, nullptr, col, 3);
  const GraphTensor keep = g.virt(scores.dims, scores.strides, CUDNN_DATA_BOOLEAN);
  g.pointwise(CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, row, &col, nullptr, keep);
  const GraphTensor masked = g.virt(scores.dims, scores.strides, CUDNN_DATA_FLOAT);
  // y = keep ? x : b
  g.pointwise(CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, scores, &neg_inf, &keep, masked);
  return masked;
}

}  // namespace

// An executable cuDNN graph with its variant pack bound to fixed buffers.
class AttentionBench::SdpaPlan {
 public:
  enum class Graph { kSdpaFwd, kCompositeFwd, kCompositeBwd };

  SdpaPlan(cudnnHandle_t handle, const AttentionShape& a, Graph kind, const Buffers& buf,
           float scale)
      : handle_(handle), kind_(kind), scale_(scale) {
    switch (kind) {
      case Graph::kSdpaFwd:
        build_sdpa_fwd(a, buf);
        break;
      case Graph::kCompositeFwd:
        build_composite_fwd(a, buf);
        break;
      case Graph::kCompositeBwd:
        build_composite_bwd(a, buf);
        break;
    }
    make_plan();
  }

  void run() const { TP_CUDNN(cudnnBackendExecute(handle_, plan_.get(), pack_.get())); }
  [[nodiscard]] Graph kind() const { return kind_; }

 private:
  // The single SDPA_FWD operation (cuDNN >= 9.13.1), which cudnn-frontend prefers for a forward
  // without a mask. Stats are written: this is the training forward.
  void build_sdpa_fwd(const AttentionShape& a, const Buffers& buf) {
    if (a.causal) {
      throw CudnnError("the SDPA_FWD operation takes no causal mask before cuDNN 9.21",
                       CUDNN_STATUS_NOT_SUPPORTED);
    }
    const SdpaLayout l(a);
    const auto bf16 = CUDNN_DATA_BFLOAT16;
    const GraphTensor q = g_.io(kQ, l.q(), l.q_strides(), bf16, buf.q.get());
    const GraphTensor k = g_.io(kK, l.kv(), l.kv_strides(), bf16, buf.k.get());
    const GraphTensor v = g_.io(kV, l.kv(), l.kv_strides(), bf16, buf.v.get());
    const GraphTensor o = g_.io(kO, l.q(), l.q_strides(), bf16, buf.o.get());
    const GraphTensor stats =
        g_.io(kStats, l.rows(), l.rows_strides(), CUDNN_DATA_FLOAT, buf.stats.get());
    const GraphTensor sc = g_.scalar(kScale, &scale_);
    Backend op = make_backend(CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR);
    TP_SET_ATTR(op.get(), CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                &q.desc);
    TP_SET_ATTR(op.get(), CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                &k.desc);
    TP_SET_ATTR(op.get(), CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                &v.desc);
    TP_SET_ATTR(op.get(), CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                &o.desc);
    TP_SET_ATTR(op.get(), CUDNN_ATTR_OPERATION_SDPA_FWD_STATSDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                &stats.desc);
    TP_SET_ATTR(op.get(), CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                &sc.desc);
    finalize(op.get(), "SDPA_FWD operation");
    g_.add_op(std::move(op));
  }

  // S = scale * Q K^T, [causal mask], softmax with its statistics Stats = max + log(sum exp)
  // written out, O = P V. cudnn-frontend's CompositeSDPANode and CompositeSoftmaxNode.
  void build_composite_fwd(const AttentionShape& a, const Buffers& buf) {
    const SdpaLayout l(a);
    const auto bf16 = CUDNN_DATA_BFLOAT16;
    const auto f32 = CUDNN_DATA_FLOAT;
    const GraphTensor q = g_.io(kQ, l.q(), l.q_strides(), bf16, buf.q.get());
    const GraphTensor k_t = g_.io(kK, l.kv_t(), l.kv_t_strides(), bf16, buf.k.get());
    const GraphTensor v = g_.io(kV, l.kv(), l.kv_strides(), bf16, buf.v.get());
    const GraphTensor o = g_.io(kO, l.q(), l.q_strides(), bf16, buf.o.get());
    const GraphTensor stats = g_.io(kStats, l.rows(), l.rows_strides(), f32, buf.stats.get());
    const GraphTensor sc = g_.scalar(kScale, &scale_);

    const Dims sd = l.scores(), ss = l.scores_strides();
    const GraphTensor s = g_.virt(sd, ss, f32);
    g_.matmul(q, k_t, s);
    GraphTensor scaled = g_.virt(sd, ss, f32);
    g_.pointwise(CUDNN_POINTWISE_MUL, f32, s, &sc, nullptr, scaled);
    if (a.causal) scaled = causal_mask(g_, scaled, g_.scalar(kNegInf, &neg_inf_));

    const GraphTensor max = g_.virt(l.rows(), l.rows_strides(), f32);
    g_.reduction(CUDNN_REDUCE_TENSOR_MAX, scaled, max);
    const GraphTensor centred = g_.virt(sd, ss, f32);
    g_.pointwise(CUDNN_POINTWISE_SUB, f32, scaled, &max, nullptr, centred);
    const GraphTensor e = g_.virt(sd, ss, f32);
    g_.pointwise(CUDNN_POINTWISE_EXP, f32, centred, nullptr, nullptr, e);
    const GraphTensor sum = g_.virt(l.rows(), l.rows_strides(), f32);
    g_.reduction(CUDNN_REDUCE_TENSOR_ADD, e, sum);
    const GraphTensor log_sum = g_.virt(l.rows(), l.rows_strides(), f32);
    g_.pointwise(CUDNN_POINTWISE_LOG, f32, sum, nullptr, nullptr, log_sum);
    g_.pointwise(CUDNN_POINTWISE_ADD, f32, max, &log_sum, nullptr, stats);
    // P enters the second matmul in the input type, as the backend requires.
    const GraphTensor p = g_.virt(sd, ss, bf16);
    g_.pointwise(CUDNN_POINTWISE_DIV, f32, e, &sum, nullptr, p);
    g_.matmul(p, v, o);
  }

  // cudnn-frontend's CompositeSDPABackwardNode without dropout or bias:
  //   softmax_sum = rowsum(dO * O)
  //   P  = exp(scale * Q K^T [masked] - Stats)
  //   dV = P^T dO,  dP = dO V^T,  dS = scale * P * (dP - softmax_sum)
  //   dK = dS^T Q,  dQ = dS K (accumulated in fp32, then converted)
  // With grouped KV heads dK and dV are computed per query head and summed over each group.
  // Not the single SDPA_BWD operation: cuDNN 9.19 refuses to finalize a graph of it
  // (CUDNN_STATUS_BAD_PARAM: outputGraph.buildDAG(), on an H200), and cudnn-frontend never builds
  // one; this graph is what its sdpa_backward() sends on cuDNN 9.
  void build_composite_bwd(const AttentionShape& a, const Buffers& buf) {
    const SdpaLayout l(a);
    const auto bf16 = CUDNN_DATA_BFLOAT16;
    const auto f32 = CUDNN_DATA_FLOAT;
    const bool grouped = a.kv_heads != a.heads;
    const GraphTensor q = g_.io(kQ, l.q(), l.q_strides(), bf16, buf.q.get());
    const GraphTensor k_t = g_.io(kK, l.kv_t(), l.kv_t_strides(), bf16, buf.k.get());
    const GraphTensor v_t = g_.io(kV, l.kv_t(), l.kv_t_strides(), bf16, buf.v.get());
    const GraphTensor o = g_.io(kO, l.q(), l.q_strides(), bf16, buf.o.get());
    const GraphTensor d_o = g_.io(kDO, l.q(), l.q_strides(), bf16, buf.d_o.get());
    const GraphTensor stats = g_.io(kStats, l.rows(), l.rows_strides(), f32, buf.stats.get());
    const GraphTensor d_q = g_.io(kDQ, l.q(), l.q_strides(), bf16, buf.d_q.get());
    const GraphTensor d_k = g_.io(kDK, l.kv(), l.kv_strides(), bf16, buf.d_k.get());
    const GraphTensor d_v = g_.io(kDV, l.kv(), l.kv_strides(), bf16, buf.d_v.get());
    const GraphTensor softmax_sum =
        g_.io(kSoftmaxSum, l.rows(), l.rows_strides(), f32, buf.softmax_sum.get());
    const GraphTensor d_q_accum = g_.io(kDQAccum, l.q(), l.q_strides(), f32, buf.d_q_accum.get());
    const GraphTensor sc = g_.scalar(kScale, &scale_);
    const GraphTensor one = g_.scalar(kOne, &one_);

    // The strides of this virtual product are the frontend's, kept as they are: the fused kernel
    // never stores it, and the graph is matched as the frontend builds it.
    const GraphTensor d_o_o = g_.virt(l.q(), {l.h * l.s * l.d, l.s * l.d, l.h * l.d, 1}, f32);
    g_.pointwise(CUDNN_POINTWISE_MUL, f32, d_o, &o, nullptr, d_o_o);
    const GraphTensor row_dot = g_.virt(l.rows(), l.rows_strides(), f32);
    g_.reduction(CUDNN_REDUCE_TENSOR_ADD, d_o_o, row_dot);
    g_.pointwise(CUDNN_POINTWISE_MUL, f32, row_dot, &one, nullptr, softmax_sum);

    const Dims sd = l.scores(), ss = l.scores_strides(), st = l.scores_t_strides();
    const GraphTensor s = g_.virt(sd, ss, f32);
    g_.matmul(q, k_t, s);
    const GraphTensor scaled = g_.virt(sd, ss, f32);
    g_.pointwise(CUDNN_POINTWISE_MUL, f32, s, &sc, nullptr, scaled);
    GraphTensor centred = g_.virt(sd, ss, f32);
    g_.pointwise(CUDNN_POINTWISE_SUB, f32, scaled, &stats, nullptr, centred);
    if (a.causal) centred = causal_mask(g_, centred, g_.scalar(kNegInf, &neg_inf_));
    const GraphTensor p = g_.virt(sd, ss, f32);
    g_.pointwise(CUDNN_POINTWISE_EXP, f32, centred, nullptr, nullptr, p);

    // dV = P^T dO: the transpose is a reshape to (s_kv x s_q) strides; it enters in bf16.
    const GraphTensor p_t = g_.virt(sd, st, bf16);
    g_.reshape(p, p_t);
    if (grouped) {
      const GraphTensor d_v_full = g_.virt(l.heads_full(), l.q_strides(), bf16);
      g_.matmul(p_t, d_o, d_v_full);
      g_.reduction(CUDNN_REDUCE_TENSOR_ADD, d_v_full, d_v);
    } else {
      g_.matmul(p_t, d_o, d_v);
    }

    const GraphTensor d_p = g_.virt(sd, ss, f32);
    g_.matmul(d_o, v_t, d_p);
    const GraphTensor d_p_centred = g_.virt(sd, ss, f32);
    g_.pointwise(CUDNN_POINTWISE_SUB, f32, d_p, &softmax_sum, nullptr, d_p_centred);
    const GraphTensor d_s_unscaled = g_.virt(sd, ss, f32);
    g_.pointwise(CUDNN_POINTWISE_MUL, f32, d_p_centred, &p, nullptr, d_s_unscaled);
    const GraphTensor d_s = g_.virt(sd, ss, f32);
    g_.pointwise(CUDNN_POINTWISE_MUL, f32, d_s_unscaled, &sc, nullptr, d_s);

    const GraphTensor d_s_t = g_.virt(sd, st, bf16);
    g_.reshape(d_s, d_s_t);
    if (grouped) {
      const GraphTensor d_k_full = g_.virt(l.heads_full(), l.q_strides(), bf16);
      g_.matmul(d_s_t, q, d_k_full);
      g_.reduction(CUDNN_REDUCE_TENSOR_ADD, d_k_full, d_k);
    } else {
      g_.matmul(d_s_t, q, d_k);
    }

    const GraphTensor k = g_.virt(l.kv(), l.kv_strides(), bf16);
    g_.reshape(k_t, k);
    g_.matmul(d_s, k, d_q_accum);
    g_.pointwise(CUDNN_POINTWISE_IDENTITY, f32, d_q_accum, nullptr, nullptr, d_q);
  }

  void make_plan() {
    graph_ = make_backend(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    TP_SET_ATTR(graph_.get(), CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle_);
    TP_SET_ATTR(graph_.get(), CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                static_cast<std::int64_t>(g_.ops().size()), g_.ops().data());
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
    std::vector<cudnnBackendDescriptor_t> raw;
    for (std::int64_t i = 0; i < count; ++i) {
      configs_.push_back(make_backend(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
      raw.push_back(configs_.back().get());
    }
    std::int64_t returned = 0;
    TP_CUDNN(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                      CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &returned, raw.data()));
    // The first configuration that builds, in the heuristic's order; the last refusal is kept.
    std::string last_refusal;
    for (std::int64_t i = 0; i < returned && !plan_; ++i) {
      Backend plan = make_backend(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
      TP_SET_ATTR(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle_);
      TP_SET_ATTR(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                  1, &raw[static_cast<std::size_t>(i)]);
      try {
        finalize(plan.get(), "execution plan");
        plan_ = std::move(plan);
      } catch (const CudnnError& e) {
        last_refusal = e.what();
      }
    }
    heur_ = std::move(heur);
    if (!plan_) {
      throw CudnnError(fmt::format("no cuDNN engine builds this graph ({} candidates{}{})",
                                   returned, last_refusal.empty() ? "" : "; last: ", last_refusal),
                       CUDNN_STATUS_NOT_SUPPORTED);
    }
    std::int64_t ws_bytes = 0;
    TP_CUDNN(cudnnBackendGetAttribute(plan_.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                      CUDNN_TYPE_INT64, 1, nullptr, &ws_bytes));
    if (ws_bytes > 0) workspace_ = DeviceBuffer(static_cast<std::size_t>(ws_bytes));

    pack_ = make_backend(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    void* ws = workspace_.get();
    TP_SET_ATTR(pack_.get(), CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64,
                static_cast<std::int64_t>(g_.uids().size()), g_.uids().data());
    TP_SET_ATTR(pack_.get(), CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
                static_cast<std::int64_t>(g_.pointers().size()), g_.pointers().data());
    TP_SET_ATTR(pack_.get(), CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
    finalize(pack_.get(), "variant pack");
  }

  cudnnHandle_t handle_;
  Graph kind_;
  // By-value scalars: the variant pack points at these, read at every execution.
  float scale_;
  float neg_inf_ = -INFINITY;
  float one_ = 1.0f;
  // The plan refers to the descriptors it was built from: they live as long as it does.
  OpGraph g_;
  Backend graph_;
  Backend heur_;
  std::vector<Backend> configs_;
  Backend plan_;
  Backend pack_;
  DeviceBuffer workspace_;
};

namespace {

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
      return time_on_stream_us(stream_.get(), warmup, iters, [&] { cudnn_fwd_->run(); });
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
    return time_on_stream_us(stream_.get(), warmup, iters, [&] { cudnn_bwd_->run(); });
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
