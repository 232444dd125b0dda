#pragma once
// NCCL's own cost model of a collective, with its structure and constants kept and five of its
// quantities fitted per collective and link scope to measured curves (calibration::
// fit_collective_models). NVIDIA/nccl src/graph/tuning.cc: ncclTopoTuneModel builds, for every
// (algorithm, protocol), a latency
//   ring: base + (steps - inter_steps) intra_hop + inter_steps net_hop
//   tree: base + 2 ((ranks per node - 1) intra_hop + floor(log2 nodes) net_hop)   (all_reduce)
// and a bus bandwidth (ring LL: half, LL128: 0.92, tree: 0.92, tree LL: /3.8, tree LL128: 120/128
// or 7/9 on one node; LL capped at llMaxBw); ncclTopoGetAlgoTime adds bytes over the algorithm
// bandwidth (ring: bus bandwidth x ranks/steps, tree: half of it; trees scaled by
// treeCorrectionFactor at medium sizes) and NCCL runs the (algorithm, protocol) of least time.
// Fitted: the base and intra-node hop latencies x one factor, the network hop latencies x another,
// the ring Simple bus bandwidth, the tree's bandwidth relative to NCCL's factors, and the LL
// bandwidth cap. Method: docs/calibration.md ("The collective model").

#include <string>

#include "trainplan/core/enum_table.hpp"
#include "trainplan/core/units.hpp"
#include "trainplan/hardware/collective.hpp"
#include "trainplan/hardware/fit_quality.hpp"

namespace trainplan::hardware {

enum class NcclAlgorithm { tree, ring };
enum class NcclProtocol { ll, ll128, simple };

}  // namespace trainplan::hardware

namespace trainplan {
template <>
struct EnumTable<hardware::NcclAlgorithm> {
  static constexpr std::string_view kWhat = "NCCL algorithm";
  static constexpr std::array kEntries{
      std::pair{hardware::NcclAlgorithm::tree, std::string_view{"tree"}},
      std::pair{hardware::NcclAlgorithm::ring, std::string_view{"ring"}}};
};
template <>
struct EnumTable<hardware::NcclProtocol> {
  static constexpr std::string_view kWhat = "NCCL protocol";
  static constexpr std::array kEntries{
      std::pair{hardware::NcclProtocol::ll, std::string_view{"LL"}},
      std::pair{hardware::NcclProtocol::ll128, std::string_view{"LL128"}},
      std::pair{hardware::NcclProtocol::simple, std::string_view{"Simple"}}};
};
}  // namespace trainplan

namespace trainplan::hardware {

// The fitted quantities of one collective's model of one data type on one side of the node
// boundary (scope intra_node: one node or NVLink domain; inter_node: several).
struct CollectiveModel {
  Collective collective = Collective::all_reduce;
  LinkScope scope = LinkScope::intra_node;
  std::string dtype;                   // of the curves it was fitted to; empty: not recorded
  double latency_scale = 1.0;          // NCCL's base and intra-node hop latencies x this
  double network_latency_scale = 1.0;  // NCCL's network hop latencies x this
  BytesPerSecond busbw;                // ring, Simple protocol
  double tree_bandwidth = 1.0;         // tree bus bandwidth over ring's, beyond NCCL's factors
  BytesPerSecond ll_bandwidth;         // cap on the LL protocol's bus bandwidth (llMaxBw)
  FitQuality fit;                      // the model alone against the points it was fitted to
  friend bool operator==(const CollectiveModel&, const CollectiveModel&) = default;
};

struct NcclChoice {
  Seconds time;
  NcclAlgorithm algorithm = NcclAlgorithm::ring;
  NcclProtocol protocol = NcclProtocol::simple;
};

// Which link scope a collective over `nodes` nodes (or NVLink domains) is on.
[[nodiscard]] constexpr LinkScope scope_of(int nodes) {
  return nodes > 1 ? LinkScope::inter_node : LinkScope::intra_node;
}

// The (algorithm, protocol) NCCL runs for `bytes` (nccl-tests' size convention, collective.hpp)
// over `ranks` ranks on `nodes` nodes, and its time. all_reduce weighs ring and tree; the other
// collectives ring (NCCL's all_gather/reduce_scatter/broadcast; all_to_all and send_recv are
// point-to-point in NCCL and take the ring's step count here).
[[nodiscard]] NcclChoice nccl_choice(const CollectiveModel& m, int ranks, int nodes, Bytes bytes);

// "tree/LL": the words of a choice.
[[nodiscard]] std::string choice_text(const NcclChoice& c);

}  // namespace trainplan::hardware
