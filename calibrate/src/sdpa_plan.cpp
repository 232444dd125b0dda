#include "sdpa_plan.hpp"

#include <cmath>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "gpu_error.hpp"

namespace trainplan::calibrate {
namespace {

// Unique ids of the tensors bound to memory; virtual tensors count up from kFirstVirtualUid.
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
};
static_assert(kDQAccum < kFirstVirtualUid);

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

AttentionBench::SdpaPlan::SdpaPlan(cudnnHandle_t handle, const AttentionShape& a, Graph kind,
                                   const Buffers& buf, float scale)
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

void AttentionBench::SdpaPlan::run() const {
  TP_CUDNN(cudnnBackendExecute(handle_, plan_.get(), pack_.get()));
}

// The single SDPA_FWD operation (cuDNN >= 9.13.1), which cudnn-frontend prefers for a forward
// without a mask. Stats are written: this is the training forward.
void AttentionBench::SdpaPlan::build_sdpa_fwd(const AttentionShape& a, const Buffers& buf) {
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
  g_.operation(CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR,
               {TP_DESC_ATTR(CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, &q.desc),
                TP_DESC_ATTR(CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC, &k.desc),
                TP_DESC_ATTR(CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC, &v.desc),
                TP_DESC_ATTR(CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC, &o.desc),
                TP_DESC_ATTR(CUDNN_ATTR_OPERATION_SDPA_FWD_STATSDESC, &stats.desc),
                TP_DESC_ATTR(CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC, &sc.desc)},
               "SDPA_FWD operation");
}

// S = scale * Q K^T, [causal mask], softmax with its statistics Stats = max + log(sum exp)
// written out, O = P V. cudnn-frontend's CompositeSDPANode and CompositeSoftmaxNode.
void AttentionBench::SdpaPlan::build_composite_fwd(const AttentionShape& a, const Buffers& buf) {
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
void AttentionBench::SdpaPlan::build_composite_bwd(const AttentionShape& a, const Buffers& buf) {
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

  // out = x^T y: the transpose is a reshape to (s_kv x s_q) strides; it enters in bf16. With
  // grouped KV heads the product is per query head, then summed over each group.
  const auto transposed_times = [&](const GraphTensor& x, const GraphTensor& y,
                                    const GraphTensor& out) {
    const GraphTensor x_t = g_.virt(sd, st, bf16);
    g_.reshape(x, x_t);
    if (!grouped) {
      g_.matmul(x_t, y, out);
      return;
    }
    const GraphTensor full = g_.virt(l.heads_full(), l.q_strides(), bf16);
    g_.matmul(x_t, y, full);
    g_.reduction(CUDNN_REDUCE_TENSOR_ADD, full, out);
  };
  transposed_times(p, d_o, d_v);  // dV = P^T dO

  const GraphTensor d_p = g_.virt(sd, ss, f32);
  g_.matmul(d_o, v_t, d_p);
  const GraphTensor d_p_centred = g_.virt(sd, ss, f32);
  g_.pointwise(CUDNN_POINTWISE_SUB, f32, d_p, &softmax_sum, nullptr, d_p_centred);
  const GraphTensor d_s_unscaled = g_.virt(sd, ss, f32);
  g_.pointwise(CUDNN_POINTWISE_MUL, f32, d_p_centred, &p, nullptr, d_s_unscaled);
  const GraphTensor d_s = g_.virt(sd, ss, f32);
  g_.pointwise(CUDNN_POINTWISE_MUL, f32, d_s_unscaled, &sc, nullptr, d_s);

  transposed_times(d_s, q, d_k);  // dK = dS^T Q

  const GraphTensor k = g_.virt(l.kv(), l.kv_strides(), bf16);
  g_.reshape(k_t, k);
  g_.matmul(d_s, k, d_q_accum);
  g_.pointwise(CUDNN_POINTWISE_IDENTITY, f32, d_q_accum, nullptr, nullptr, d_q);
}

void AttentionBench::SdpaPlan::make_plan() {
  graph_ = descriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR,
                      {TP_ATTR(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle_),
                       TP_ATTR(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                               static_cast<std::int64_t>(g_.ops().size()), g_.ops().data())},
                      "operation graph");

  void* graph_raw = graph_.get();
  const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
  Backend heur = descriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR,
                            {TP_DESC_ATTR(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, &graph_raw),
                             TP_ATTR(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode)},
                            "engine heuristics");
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
    set_attrs(plan.get(),
              {TP_ATTR(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle_),
               TP_DESC_ATTR(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, &raw[static_cast<std::size_t>(i)])});
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

  void* ws = workspace_.get();
  pack_ = descriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR,
                     {TP_ATTR(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64,
                              static_cast<std::int64_t>(g_.uids().size()), g_.uids().data()),
                      TP_ATTR(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
                              static_cast<std::int64_t>(g_.pointers().size()), g_.pointers().data()),
                      TP_ATTR(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws)},
                     "variant pack");
}

}  // namespace trainplan::calibrate
