// The cuDNN side of AttentionBench (attention.hpp): the device tensors of one shape and an
// executable cuDNN graph over them, the graphs cudnn-frontend builds (sdpa_plan.cpp).
#pragma once

#include <cmath>
#include <vector>

#include <cudnn.h>

#include "attention.hpp"
#include "cudnn_graph.hpp"
#include "device.hpp"

namespace trainplan::calibrate {

struct AttentionBench::Buffers {
  DeviceBuffer q, k, v, o, d_o, d_q, d_k, d_v;
  DeviceBuffer stats;             // cuDNN: per-row log-sum-exp, fp32
  DeviceBuffer softmax_sum;       // cuDNN backward: rowsum(dO * O), fp32, allocated on first use
  DeviceBuffer d_q_accum;         // cuDNN backward: dQ accumulated in fp32, allocated on first use
  DeviceBuffer scores, d_scores;  // unfused: b*h*s*s each, allocated on first use
};

// An executable cuDNN graph with its variant pack bound to fixed buffers.
class AttentionBench::SdpaPlan {
 public:
  enum class Graph { kSdpaFwd, kCompositeFwd, kCompositeBwd };

  SdpaPlan(cudnnHandle_t handle, const AttentionShape& a, Graph kind, const Buffers& buf,
           float scale);

  void run() const;
  [[nodiscard]] Graph kind() const { return kind_; }

 private:
  // The single SDPA_FWD operation (cuDNN >= 9.13.1), which cudnn-frontend prefers for a forward
  // without a mask. Stats are written: this is the training forward.
  void build_sdpa_fwd(const AttentionShape& a, const Buffers& buf);
  // S = scale * Q K^T, [causal mask], softmax with its statistics written out, O = P V.
  void build_composite_fwd(const AttentionShape& a, const Buffers& buf);
  // cudnn-frontend's CompositeSDPABackwardNode without dropout or bias (sdpa_plan.cpp).
  void build_composite_bwd(const AttentionShape& a, const Buffers& buf);
  // The first engine configuration of the heuristic that builds, its workspace and variant pack.
  void make_plan();

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

}  // namespace trainplan::calibrate
