#include "trainplan/planner/communication.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "trainplan/model/flops.hpp"

namespace trainplan::planner {
namespace {

using hardware::Collective;

[[nodiscard]] constexpr double dbl(std::int64_t v) { return static_cast<double>(v); }
[[nodiscard]] int ceil_div(int a, int b) { return (a + b - 1) / b; }

// One alpha-beta line per protocol family: the low-latency protocols at a fraction of the plateau
// bandwidth, and Simple, whose pipeline must fill before it reaches the plateau; NCCL runs the
// faster (tuning.cc). Priced with hardware::regimes_time.
[[nodiscard]] Seconds two_regimes(const LinkModel& m, Seconds alpha, double factor, Bytes size,
                                  BytesPerSecond plateau) {
  if (!(plateau.value() > 0.0)) return Seconds(std::numeric_limits<double>::infinity());
  const std::array<hardware::Regime, 2> regimes{
      hardware::Regime{m.pipeline_fill, alpha, plateau * m.small_message_fraction},
      hardware::Regime{Bytes(std::numeric_limits<double>::max()),
                       alpha + factor * (m.pipeline_fill / plateau), plateau}};
  return hardware::regimes_time(regimes, factor, size);
}

// Plateau bus bandwidth of `per_node` ranks inside one node.
[[nodiscard]] BytesPerSecond intra_bandwidth(const LinkModel& m, int per_node, bool p2p) {
  if (m.bridged_pairs && per_node > 2) return m.host_copy;  // beyond the pair: PCIe via the host
  return p2p ? m.intra_p2p : m.intra_busbw;
}

// Ring over ranks spread `per_node` to a node: the node's share of NICs bounds it across nodes.
[[nodiscard]] Seconds ring(const LinkModel& m, Collective c, const Placement& g, Bytes size) {
  const double factor = hardware::bus_factor(c, g.ranks);
  const Seconds alpha = hardware::ring_latency(m.latency, c, g.ranks, g.nodes);
  BytesPerSecond bw = intra_bandwidth(m, g.per_node, c == Collective::send_recv);
  if (g.nodes > 1) bw = std::min(bw, m.nic_per_gpu * static_cast<double>(g.per_node));
  return two_regimes(m, alpha, factor, size, bw);
}

}  // namespace

DataParallelVolume data_parallel_volume(Strategy s, Bytes grads, Bytes params, int n,
                                        std::int64_t k) {
  DataParallelVolume v;
  if (n <= 1) return v;
  const double kd = dbl(k);
  const Bytes rs = bytes_sent(Collective::reduce_scatter, n, grads);
  const Bytes ag = bytes_sent(Collective::all_gather, n, params);
  switch (s) {
    case Strategy::single:
      break;
    case Strategy::ddp:
      v.all_reduce = bytes_sent(Collective::all_reduce, n, grads);
      break;
    case Strategy::zero1:  // gradients reduced once at the accumulation boundary
      v.reduce_scatter = rs;
      v.all_gather = ag;
      break;
    case Strategy::zero2:  // partitions reduced every micro-batch, parameters gathered after the
                           // step
      v.reduce_scatter = rs * kd;
      v.all_gather = ag;
      break;
    case Strategy::fsdp_grad_op:  // gathered once per micro-batch, kept through backward
      v.reduce_scatter = rs * kd;
      v.all_gather = ag * kd;
      break;
    case Strategy::zero3:
    case Strategy::fsdp_full:
    case Strategy::fsdp_hybrid:  // gathered for forward and again for backward
      v.reduce_scatter = rs * kd;
      v.all_gather = ag * (2.0 * kd);
      break;
  }
  return v;
}

ZeroPlusPlusVolume zero_plus_plus_volume(double psi, int n, int node_ranks, double w,
                                         std::int64_t k) {
  ZeroPlusPlusVolume v;
  const double kd = dbl(k);
  v.forward_gather = bytes_sent(Collective::all_gather, n, Bytes(psi * kQwzBytes)) * kd;
  v.backward_gather = bytes_sent(Collective::all_gather, node_ranks, Bytes(psi * w)) * kd;
  v.gradient_all_to_all = bytes_sent(Collective::all_to_all, n, Bytes(psi * kQgzBytes)) * kd;
  return v;
}

TensorParallelCollectives tensor_parallel_collectives(double pairs, bool sequence_parallel, Checkpointing c,
                                                      double replayed) {
  double n = 2.0 * pairs;  // one forward, one backward per pair
  switch (c) {
    case Checkpointing::none:
    case Checkpointing::selective:
      break;
    case Checkpointing::full:
    case Checkpointing::full_offload:
    // torchtitan's per-op list keeps sequence parallelism's reduce-scatter outputs; counted
    // replayed here as under full (an over-count with TP + SP).
    case Checkpointing::selective_op:
      n += pairs * replayed;
      break;  // the replayed forward
  }
  TensorParallelCollectives out;
  if (sequence_parallel) {
    out.all_gather = n;
    out.reduce_scatter = n;
  } else {
    out.all_reduce = n;
  }
  return out;
}

Bytes tensor_parallel_message(std::int64_t b, std::int64_t s, std::int64_t h, double c) {
  return Bytes(dbl(b) * dbl(s) * dbl(h) * c);
}

Bytes tensor_parallel_bytes(std::int64_t b, std::int64_t s, std::int64_t h, int t, double c,
                            bool sequence_parallel, double n) {
  const Bytes x = tensor_parallel_message(b, s, h, c);
  const double ar = sequence_parallel ? 0.0 : n;
  const double sp = sequence_parallel ? n : 0.0;
  return bytes_sent(Collective::all_reduce, t, x) * ar + bytes_sent(Collective::all_gather, t, x) * sp +
         bytes_sent(Collective::reduce_scatter, t, x) * sp;
}

Bytes tensor_parallel_bytes_per_layer(std::int64_t b, std::int64_t s, std::int64_t h, int t,
                                      double c, double pairs, bool sequence_parallel, Checkpointing ck,
                                      double replayed) {
  const TensorParallelCollectives n = tensor_parallel_collectives(pairs, sequence_parallel, ck, replayed);
  return tensor_parallel_bytes(b, s, h, t, c, sequence_parallel, n.all_reduce + n.all_gather);
}

Bytes pipeline_message(std::int64_t b, std::int64_t s, std::int64_t h, double c, int t,
                       bool split_over_tp) {
  return Bytes(dbl(b) * dbl(s) * dbl(h) * c / (split_over_tp ? t : 1));
}

Bytes moe_all_to_all_message(std::int64_t top_k, std::int64_t b, std::int64_t s, std::int64_t h,
                             double c) {
  return Bytes(dbl(top_k) * dbl(b) * dbl(s) * dbl(h) * c);
}

Bytes expert_all_to_all_message(const model::Architecture& a, const model::Training& tr) {
  return moe_all_to_all_message(a.experts_per_token, tr.sequences(), tr.local_seq(), a.hidden, compute_bytes(tr.precision)) *
         model::expert_token_share(a, tr) / static_cast<double>(tr.tp);
}

Placement tensor_parallel_group(const Layout& l) {
  Placement g;
  g.ranks = l.tp;
  g.per_node = std::min(l.tp, l.gpus_per_domain);
  g.nodes = ceil_div(l.tp, g.per_node);
  return g;
}

namespace {
// `ranks` spaced `stride` apart in Megatron's rank order: as many in one domain as it holds.
Placement spread(int ranks, int stride, const Layout& l) {
  Placement g;
  g.ranks = ranks;
  g.per_node = std::clamp(l.gpus_per_domain / stride, 1, ranks);
  g.nodes = ceil_div(ranks, g.per_node);
  return g;
}
}  // namespace

Placement data_parallel_group(const Layout& l) { return spread(l.replicas(), l.tp, l); }

Placement context_parallel_group(const Layout& l) { return spread(l.cp, l.tp, l); }

Placement shard_group(const Layout& l) {
  if (l.shard >= l.replicas()) return data_parallel_group(l);
  return spread(l.shard, l.tp, l);
}

Placement post_forward_group(const Layout& l, int ranks) { return spread(ranks, l.tp, l); }

// Declared in memory.hpp beside the Layout they read.
int node_hybrid_shard(const Layout& l) { return std::clamp(l.gpus_per_node / (l.tp * l.pp), 1, l.replicas()); }

int post_forward_ranks(const model::Training& tr, const Layout& l) {
  const int n = tr.fsdp_reshard_to;
  if (!tr.reshards_to_group() || n >= l.shard) return 0;
  return n;
}

Placement replica_group(const Layout& l) {
  const int shard = std::max(1, l.shard);
  return spread(std::max(1, l.replicas() / shard), l.tp * shard, l);
}

Placement expert_parallel_group(const Layout& l) { return spread(l.ep, l.tp, l); }

Placement pipeline_pair(const Layout& l) {
  Placement g;
  g.ranks = 2;
  const bool same_node = l.tp * l.replicas() < l.gpus_per_domain;
  g.per_node = same_node ? 2 : 1;
  g.nodes = same_node ? 1 : 2;
  return g;
}

LinkModel link_model(const hardware::Cluster& c, const hardware::HardwareProfile* profile,
                     const TimeConventions& tc) {
  LinkModel m;
  const hardware::IntraNodeLink& in = c.gpu.intra_node;
  const BytesPerSecond pcie =
      c.gpu.pcie_bandwidth.value() > 0.0 ? c.gpu.pcie_bandwidth : in.bandwidth;
  m.host_copy = (c.gpu.host_bandwidth.value() > 0.0 ? c.gpu.host_bandwidth : pcie) * tc.pcie_copy_efficiency;
  switch (in.topology) {
    case hardware::IntraTopology::nvswitch:
      m.intra_tier = LinkTier::nvlink;
      m.intra_busbw = in.bandwidth * tc.nvswitch_busbw_efficiency;
      m.intra_p2p = in.bandwidth * tc.nvlink_p2p_efficiency;
      break;
    case hardware::IntraTopology::nvlink_bridge:
      m.intra_tier = LinkTier::nvlink;
      m.bridged_pairs = true;
      m.intra_busbw = in.bandwidth * tc.nvswitch_busbw_efficiency;
      m.intra_p2p = in.bandwidth * tc.nvlink_p2p_efficiency;
      break;
    case hardware::IntraTopology::pcie:
      m.intra_tier = LinkTier::pcie;
      m.intra_busbw = pcie * tc.pcie_busbw_efficiency;
      m.intra_p2p = pcie * tc.pcie_copy_efficiency;
      break;
    case hardware::IntraTopology::xgmi:
      m.intra_tier = LinkTier::xgmi;
      m.intra_busbw = in.bandwidth * tc.xgmi_busbw_efficiency;
      m.intra_p2p = in.bandwidth * tc.nvlink_p2p_efficiency;
      break;
  }
  m.bridge_busbw = m.intra_busbw;
  const double gpus = std::max(1, c.gpus_per_node);
  m.nic_per_gpu = c.inter_node.per_node() * (tc.network_efficiency / gpus);
  m.small_message_fraction = tc.small_message_busbw_fraction;
  m.pipeline_fill = tc.pipeline_fill_bytes;
  m.tree_bandwidth_fraction = tc.tree_bandwidth_fraction;
  m.latency = tc.latency;
  m.profile = profile != nullptr && !profile->empty() ? profile : nullptr;
  if (m.profile != nullptr) {
    // Measured pinned copies: the slower direction bounds an offload round trip.
    const auto h2d = m.profile->h2d_bandwidth();
    const auto d2h = m.profile->d2h_bandwidth();
    if (h2d && d2h)
      m.host_copy = std::min(*h2d, *d2h);
    else if (h2d)
      m.host_copy = *h2d;
    else if (d2h)
      m.host_copy = *d2h;
  }
  return m;
}

LinkTier tier_of(const LinkModel& m, const Placement& g) {
  if (g.nodes > 1) return LinkTier::network;
  if (m.bridged_pairs && g.per_node > 2) return LinkTier::pcie;
  return m.intra_tier;
}

Seconds collective_time(const LinkModel& m, Collective c, const Placement& g, Bytes size,
                        std::string_view dtype) {
  if (g.ranks <= 1 || !(size.value() > 0.0)) return Seconds(0.0);
  if (m.profile != nullptr) {
    if (const auto t = m.profile->collective_time(c, g.ranks, g.nodes, size, dtype)) return *t;
  }
  Seconds best = ring(m, c, g, size);
  if (g.nodes <= 1) return best;
  switch (c) {
    case Collective::all_reduce: {
      // Double binary tree: log-depth latency, half the bus bandwidth as algorithm bandwidth.
      const BytesPerSecond bw = std::min(intra_bandwidth(m, g.per_node, false),
                                         m.nic_per_gpu * static_cast<double>(g.per_node));
      const Seconds tree =
          m.latency.base + hardware::tree_all_reduce_time(g.ranks, size, m.latency.inter_hop,
                                                          bw * m.tree_bandwidth_fraction);
      best = std::min(best, tree);
      if (g.per_node > 1) {
        // Hierarchical: reduce-scatter in node, all-reduce of 1/g across nodes (every rank on its
        // own NIC), all-gather in node.
        const Placement node{g.per_node, g.per_node, 1};
        const Placement across{g.nodes, 1, g.nodes};
        const Seconds hier =
            ring(m, Collective::reduce_scatter, node, size) +
            ring(m, Collective::all_reduce, across, size / static_cast<double>(g.per_node)) +
            ring(m, Collective::all_gather, node, size);
        best = std::min(best, hier);
      }
      break;
    }
    case Collective::all_to_all: {
      // Each rank sends (n - g)/n of its buffer off the node through its own NIC.
      const double off = static_cast<double>(g.ranks - g.per_node) / g.ranks;
      const Seconds alpha = hardware::ring_latency(m.latency, c, g.ranks, g.nodes);
      best = std::min(best, two_regimes(m, alpha, off, size, m.nic_per_gpu));
      break;
    }
    case Collective::all_gather:
    case Collective::reduce_scatter:
    case Collective::broadcast:
    case Collective::send_recv:
      break;
  }
  return best;
}

Seconds host_copy_time(const LinkModel& m, Bytes size) {
  if (!(size.value() > 0.0)) return Seconds(0.0);
  return size / m.host_copy;
}

double gradient_comm_bytes(const model::Training& tr) {
  switch (tr.framework) {
    case Framework::megatron:
      return is_mixed(tr.precision) ? 4.0 : param_bytes(tr.precision);
    case Framework::deepspeed:
      return compute_bytes(tr.precision);
    case Framework::pytorch:
      if (is_fsdp(tr.strategy) || tr.strategy == Strategy::zero2 || tr.strategy == Strategy::zero3)
        return tr.fsdp_reduce_bytes();
      return param_bytes(tr.precision);
  }
  return compute_bytes(tr.precision);
}

std::string_view gradient_comm_dtype(const model::Training& tr) {
  if (gradient_comm_bytes(tr) >= 4.0) return "float";
  const bool fp16 = tr.precision == Precision::fp16_mixed || tr.precision == Precision::fp16_true;
  return fp16 ? "half" : "bfloat16";
}

}  // namespace trainplan::planner
