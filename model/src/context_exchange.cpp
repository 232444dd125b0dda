// What context parallelism allocates beside a block's saved tensors while its attention runs: the
// exchange's buffers, per implementation, counted beyond what the same attention holds without CP
// (its saved inputs, its output in forward, its input gradients in backward). The saved tensors
// are those of the attention without CP: each implementation saves its local inputs, output and
// log-sum-exp and exchanges again in backward.
//
// Per attention call on a rank, in elements, c the compute dtype's bytes and f = 4 (fp32):
//   Q  = b (s/N) a d         the rank's queries (a heads on this GPU, d their width)
//   O  = b (s/N) a d_v       its output
//   KV = b (s/N) k (d + d_v) its keys and values (k heads as the kernel reads them: every query
//                            head where the model copies grouped K/V first)
//   R  = b (s/N) a           its rows (one fp32 log-sum-exp each)
// Each implementation's terms name the allocations of its source; the moment that holds the most
// is taken in each pass. Not counted: the attention kernels' own workspaces (as without CP) and
// allocations on a side stream that the caching allocator keeps apart.

#include <algorithm>

#include "trainplan/model/block_ops.hpp"

namespace trainplan::model {
namespace {

constexpr double kFp32 = 4.0;

struct ExchangeShape {
  double q = 0.0;
  double o = 0.0;
  double kv = 0.0;
  double rows = 0.0;
};

ExchangeShape exchange_shape(const AttentionShape& s) {
  // Under the all-to-all exchange the shape is the head-split view of the whole sequence: the same
  // element counts as the rank's tokens with every head.
  const double tokens = static_cast<double>(s.batch) * static_cast<double>(s.query_seq);
  const double heads = static_cast<double>(s.heads);
  const double kv_heads = s.kv_expanded ? heads : static_cast<double>(s.kv_heads);
  return {tokens * heads * static_cast<double>(s.head_dim), tokens * heads * static_cast<double>(s.v_head_dim),
          tokens * kv_heads * static_cast<double>(s.head_dim + s.v_head_dim), tokens * heads};
}

// PyTorch's context_parallel (torch/distributed/tensor/experimental/_attention.py,
// _templated_ring_attention and its backward, torch 2.6-2.9; torchtitan's CP). The keys and values
// arrive through the rotater: all-gather, every rank's chunk at once (N KV); the ring (all-to-all
// rotater), the chunk in use, its concatenated copy sent on and the next received (3 KV). Forward
// merges each step's output into an fp32 accumulator (_SDPAMerger with convert_to_f32): the
// accumulator, the step's output upcast and the product and difference of the merge (4 f O).
// Backward accumulates the key/value gradients in fp32 and passes them round the ring: the
// accumulated chunk, its concatenated copy sent and the next received (3 f KV); the query gradient
// accumulates in fp32 and the load-balanced half-chunk update concatenates a second copy (2 f Q).
ContextExchange torch_context_parallel(const ExchangeShape& x, const Training& tr, double c) {
  const double chunks = tr.cp_comm == CpComm::all_gather ? static_cast<double>(tr.cp) : 3.0;
  return {Bytes(chunks * c * x.kv + 4.0 * kFp32 * x.o), Bytes(chunks * c * x.kv + kFp32 * (3.0 * x.kv + 2.0 * x.q))};
}

// DeepSpeed-Ulysses (Jacobs et al. 2023, arXiv:2309.14509; deepspeed/sequence/layer.py
// _SeqAllToAll): q, k and v (forward), the output's gradient and the input gradients (backward)
// leave by all-to-all from a contiguous copy into a fresh output: two copies of each in flight.
ContextExchange ulysses(const ExchangeShape& x, double c) {
  const Bytes both(2.0 * c * (x.q + x.kv + x.o));
  return {both, both};
}

// Transformer Engine (transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py
// @d0067d0d, the sbhd layout Megatron-Core hands it, 16-bit, no FP8 attention):
// - p2p (AttnFuncWithCPAndKVP2P): forward keeps every step's K/V ring buffer in p2p_comm_buffers
//   until it returns (the first a copy of its own: N KV, one of them saved, L1685-1706) and every
//   step's output and fp32 log-sum-exp until the correction loop ((N + 1 + r)/2 of each, at most N
//   on the last rank, L1672-1673, L1981-2027); backward holds two [kv, dkv] pairs (4 KV,
//   L2397-2401), the query-gradient buffer (Q, L2396) and half the log-sum-exp in fp32.
// - all-gather (AttnFuncWithCPAndKVAllGather): with G = N KV / 2 one gathered K or V, forward holds
//   the gathered K and V and their reorder (max(3G, 2G + 2 O), L3215-3230); backward the whole
//   sequence's dk, dv (2G, L3768-3777), K/V gathered again (2G and G while reordered, L3788-3807),
//   each step's gradients of both steps ((2 + 1/N) G, L3778-3780) and the final reorder (G,
//   L4116-4117): (7 + 1/N) G + 2 Q, beyond the input gradients.
// - a2a (AttnFuncWithCPAndQKVOA2A): q, k, v each copied head-split and reordered (max(2 Q, Q + 1.5
//   KV), L387-538) in forward; in backward the output gradient exchanged (kept, Q) and the input
//   gradients reordered and exchanged beside the originals (max(3 Q + 1.5 KV, 2 Q + 2.5 KV)).
ContextExchange transformer_engine(const ExchangeShape& x, const Training& tr, double c) {
  const double n = static_cast<double>(tr.cp);
  switch (tr.cp_comm) {
    case CpComm::ring:
      return {Bytes(c * ((n - 1.0) * x.kv + n * x.o) + kFp32 * n * x.rows),
              Bytes(c * (4.0 * x.kv + x.q) + kFp32 * 0.5 * x.rows)};
    case CpComm::all_gather: {
      const double g = 0.5 * n * x.kv;
      return {Bytes(c * (std::max(3.0 * g, 2.0 * g + 2.0 * x.o) - x.o)),
              Bytes(c * ((7.0 + 1.0 / n) * g + x.q - x.kv))};
    }
    case CpComm::all_to_all:
      return {Bytes(c * std::max(2.0 * x.q, x.q + 1.5 * x.kv)),
              Bytes(c * (x.q + std::max(3.0 * x.q + 1.5 * x.kv, 2.0 * x.q + 2.5 * x.kv)))};
  }
  return {};
}

}  // namespace

ContextExchange context_exchange(const BlockOps& ops, const Training& tr) {
  ContextExchange out;
  if (tr.cp <= 1 || !ops.runs_backward) return out;
  const double c = compute_bytes(tr.precision);
  for (const Op& op : ops.ops) {
    if (op.kind != OpKind::attention_core || op.attention.cross) continue;
    const ExchangeShape x = exchange_shape(op.attention);
    ContextExchange e;
    if (tr.framework == Framework::megatron) e = transformer_engine(x, tr, c);
    else if (tr.cp_comm == CpComm::all_to_all) e = ulysses(x, c);
    else e = torch_context_parallel(x, tr, c);
    out.forward = std::max(out.forward, e.forward);
    out.backward = std::max(out.backward, e.backward);
  }
  return out;
}

}  // namespace trainplan::model
