#include "trainplan/hardware/nccl_model.hpp"

#include <algorithm>
#include <array>
#include <cmath>

namespace trainplan::hardware {
namespace {

// NVIDIA/nccl src/graph/tuning.cc (master at 5067397c), ncclTunerConstantsDefaults, in
// microseconds, indexed [algorithm: tree, ring][protocol: LL, LL128, Simple].
constexpr double kBaseLatency[2][3] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}};
constexpr double kNvlinkHop[2][3] = {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}};
constexpr double kNetworkHop[2][3] = {{5.0, 8.5, 14.0}, {2.7, 4.0, 14.0}};

// treeCorrectionFactor of the same file: all_reduce trees at 64 B x 2^i, i = 0..22.
constexpr double kTreeCorrection[3][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};

// floor(log2(x)), -1 for x < 1: NCCL's log2i (src/include/utils.h, bitops.h log2Down).
[[nodiscard]] int log2i(double x) { return x >= 1.0 ? static_cast<int>(std::floor(std::log2(x))) : -1; }

// NCCL's step count of the ring: all_reduce 2 (n - 1), all_gather and reduce_scatter n - 1,
// broadcast n (ncclTopoTuneModel's nsteps); the point-to-point collectives as ring_steps.
[[nodiscard]] int nccl_ring_steps(Collective c, int ranks) {
  return c == Collective::broadcast ? ranks : ring_steps(c, ranks);
}

[[nodiscard]] Seconds candidate_time(const CollectiveModel& m, NcclAlgorithm a, NcclProtocol p,
                                     int ranks, int nodes, Bytes bytes) {
  const int ai = a == NcclAlgorithm::tree ? 0 : 1;
  const int pi = static_cast<int>(p);
  const int per_node = std::max(1, ranks / nodes);
  const double intra = kNvlinkHop[ai][pi] * m.latency_scale;
  // With one rank per node every hop is exposed: NCCL takes the tree's network latency.
  const double net = kNetworkHop[per_node == 1 ? 0 : ai][pi] * m.network_latency_scale;
  double latency_us = kBaseLatency[ai][pi] * m.latency_scale;
  double bus = m.busbw.value();
  double seconds_per_byte = 0.0;
  if (a == NcclAlgorithm::ring) {
    const int steps = nccl_ring_steps(m.collective, ranks);
    const int inter = nodes > 1 ? ring_inter_node_steps(m.collective, nodes) : 0;
    latency_us += (steps - inter) * intra + inter * net;
    if (p == NcclProtocol::ll) bus = std::min(bus * 0.5, m.ll_bandwidth.value());
    if (p == NcclProtocol::ll128) bus *= 0.92;
    // Algorithm bandwidth = bus x ranks / steps, which is nccl-tests' bus factor for every ring
    // collective (send_recv: 1).
    seconds_per_byte = bus_factor(m.collective, ranks) / bus;
  } else {
    latency_us += 2.0 * ((per_node - 1) * intra + log2i(nodes) * net);
    bus *= 0.92 * m.tree_bandwidth;
    if (p == NcclProtocol::ll) bus = std::min(bus / 3.8, m.ll_bandwidth.value());
    if (p == NcclProtocol::ll128) bus *= nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0;
    const int log_size = log2i(bytes.value() / 64.0);
    if (log_size >= 0 && log_size < 23) bus *= kTreeCorrection[pi][log_size];
    seconds_per_byte = 2.0 / bus;  // algorithm bandwidth: half the bus bandwidth
  }
  return Seconds(latency_us * 1e-6 + bytes.value() * seconds_per_byte);
}

}  // namespace

NcclChoice nccl_choice(const CollectiveModel& m, int ranks, int nodes, Bytes bytes) {
  nodes = std::max(nodes, 1);
  NcclChoice best{Seconds(0.0), NcclAlgorithm::ring, NcclProtocol::simple};
  if (ranks <= 1 || !(m.busbw.value() > 0.0)) return best;
  bool first = true;
  for (const NcclAlgorithm a : {NcclAlgorithm::tree, NcclAlgorithm::ring}) {
    if (a == NcclAlgorithm::tree && m.collective != Collective::all_reduce) continue;
    for (const NcclProtocol p : {NcclProtocol::ll, NcclProtocol::ll128, NcclProtocol::simple}) {
      if (p == NcclProtocol::ll && !(m.ll_bandwidth.value() > 0.0)) continue;
      const Seconds t = candidate_time(m, a, p, ranks, nodes, bytes);
      if (first || t < best.time) best = {t, a, p};
      first = false;
    }
  }
  return best;
}

std::string choice_text(const NcclChoice& c) {
  return std::string(trainplan::to_string(c.algorithm)) + "/" +
         std::string(trainplan::to_string(c.protocol));
}

}  // namespace trainplan::hardware
