#pragma once
// Collectives as NCCL and nccl-tests name them, the bus-bandwidth factors of nccl-tests and the
// latency-bandwidth (alpha-beta) cost of the ring and tree algorithms. Message sizes follow the
// `size` column of nccl-tests: the per-rank buffer for all_reduce, broadcast and send_recv; the
// total gathered/scattered array for all_gather and reduce_scatter; the per-rank total for
// all_to_all. Derivations: docs/calibration.md.

#include <algorithm>
#include <array>
#include <cmath>
#include <string_view>
#include <utility>

#include "trainplan/core/enum_table.hpp"
#include "trainplan/core/units.hpp"

namespace trainplan::hardware {

enum class Collective { all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, send_recv };

// Which links a measured curve crossed: one node, several nodes, or a calibration run's whole job.
enum class LinkScope { intra_node, inter_node, world };

}  // namespace trainplan::hardware

namespace trainplan {
template <>
struct EnumTable<hardware::Collective> {
  static constexpr std::string_view kWhat = "collective";
  static constexpr std::array kEntries{
      std::pair{hardware::Collective::all_reduce, std::string_view{"all_reduce"}},
      std::pair{hardware::Collective::all_gather, std::string_view{"all_gather"}},
      std::pair{hardware::Collective::reduce_scatter, std::string_view{"reduce_scatter"}},
      std::pair{hardware::Collective::all_to_all, std::string_view{"all_to_all"}},
      std::pair{hardware::Collective::broadcast, std::string_view{"broadcast"}},
      std::pair{hardware::Collective::send_recv, std::string_view{"send_recv"}}};
};
template <>
struct EnumTable<hardware::LinkScope> {
  static constexpr std::string_view kWhat = "link scope";
  static constexpr std::array kEntries{
      std::pair{hardware::LinkScope::intra_node, std::string_view{"intra_node"}},
      std::pair{hardware::LinkScope::inter_node, std::string_view{"inter_node"}},
      std::pair{hardware::LinkScope::world, std::string_view{"world"}}};
};
}  // namespace trainplan

namespace trainplan::hardware {

// busbw = algbw * bus_factor(n), n = ranks. NVIDIA/nccl-tests doc/PERFORMANCE.md ("Bus bandwidth").
[[nodiscard]] constexpr double bus_factor(Collective c, int n) {
  const double r = n;
  switch (c) {
    case Collective::all_reduce: return 2.0 * (r - 1.0) / r;
    case Collective::all_gather:
    case Collective::reduce_scatter:
    case Collective::all_to_all: return (r - 1.0) / r;
    case Collective::broadcast:
    case Collective::send_recv: return 1.0;
  }
  return 1.0;
}

// Latency-bound steps of the ring algorithm over n ranks. NCCL src/graph/tuning.cc (nsteps);
// Thakur, Rabenseifner & Gropp 2005 (IJHPCA 19(1)), Sections 4.1-4.4.
[[nodiscard]] constexpr int ring_steps(Collective c, int n) {
  switch (c) {
    case Collective::all_reduce: return 2 * (n - 1);
    case Collective::all_gather:
    case Collective::reduce_scatter:
    case Collective::all_to_all:
    case Collective::broadcast: return n - 1;
    case Collective::send_recv: return n > 1 ? 1 : 0;
  }
  return 0;
}

// Of those steps, the ones that cross a node boundary. NCCL src/graph/tuning.cc (nInterSteps).
[[nodiscard]] constexpr int ring_inter_node_steps(Collective c, int nodes) {
  switch (c) {
    case Collective::all_reduce: return 2 * (nodes - 1);
    case Collective::all_gather:
    case Collective::reduce_scatter:
    case Collective::all_to_all:
    case Collective::broadcast: return nodes - 1;
    case Collective::send_recv: return nodes > 1 ? 1 : 0;
  }
  return 0;
}

// Hockney's model in nccl-tests units: t = alpha + bus_factor * S / B_bus.
// Hockney 1994 (Parallel Computing 20(3)); nccl-tests doc/PERFORMANCE.md.
[[nodiscard]] constexpr Seconds alpha_beta_time(Seconds alpha, double factor, Bytes size,
                                                BytesPerSecond busbw) {
  return alpha + factor * (size / busbw);
}

// Ring collective over n ranks with per-hop latency alpha and per-rank link bandwidth B:
// t = steps * alpha + bus_factor * S / B. Thakur, Rabenseifner & Gropp 2005, Section 4.
[[nodiscard]] constexpr Seconds ring_time(Collective c, int n, Bytes size, Seconds hop_latency,
                                          BytesPerSecond link_bandwidth) {
  if (n <= 1) return Seconds(0.0);
  return ring_steps(c, n) * hop_latency + bus_factor(c, n) * (size / link_bandwidth);
}

// Pipelined (double binary) tree all-reduce: t = 2 log2(n) alpha + S / B; log latency, full
// bandwidth. Sanders, Speck & Traeff 2009 (Parallel Computing 35(12)); NCCL >= 2.4 tuning.cc.
[[nodiscard]] inline Seconds tree_all_reduce_time(int n, Bytes size, Seconds hop_latency,
                                                  BytesPerSecond bandwidth) {
  if (n <= 1) return Seconds(0.0);
  return 2.0 * std::log2(static_cast<double>(n)) * hop_latency + size / bandwidth;
}

// Per-step latencies of NCCL's ring model, Simple protocol (the one large messages use).
// NVIDIA/nccl src/graph/tuning.cc: baseLat Ring/Simple 8.4 us, hwLat NVLink Ring/Simple 3.4 us,
// NET Ring/Simple 14 us.
struct RingLatency {
  Seconds base = Seconds(8.4e-6);
  Seconds intra_hop = Seconds(3.4e-6);
  Seconds inter_hop = Seconds(14.0e-6);
  friend constexpr bool operator==(const RingLatency&, const RingLatency&) = default;
};

// NCCL's ring latency: base + (steps - inter_steps) * intra_hop + inter_steps * inter_hop.
// NVIDIA/nccl src/graph/tuning.cc (ncclTopoTuneModel).
[[nodiscard]] constexpr Seconds ring_latency(const RingLatency& lat, Collective c, int ranks,
                                             int nodes) {
  const int steps = ring_steps(c, ranks);
  const int inter = std::min(steps, ring_inter_node_steps(c, nodes));
  return lat.base + (steps - inter) * lat.intra_hop + inter * lat.inter_hop;
}

}  // namespace trainplan::hardware
