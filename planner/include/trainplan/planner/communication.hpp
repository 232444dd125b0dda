#pragma once
// Communication: the bytes each parallel strategy moves per GPU (published closed forms, one pure
// function each), where each group of ranks sits on the cluster, and what a collective costs on
// the links it crosses (ring, tree and hierarchical algorithms priced with hardware/collective.hpp,
// or the calibrated curves of a hardware profile). Derivations: docs/formulas.md.

#include <cstdint>
#include <string_view>

#include "trainplan/core/enum_table.hpp"
#include "trainplan/core/modes.hpp"
#include "trainplan/core/units.hpp"
#include "trainplan/hardware/collective.hpp"
#include "trainplan/hardware/gpu.hpp"
#include "trainplan/hardware/profile.hpp"
#include "trainplan/model/architecture.hpp"
#include "trainplan/model/training.hpp"
#include "trainplan/planner/memory.hpp"
#include "trainplan/planner/time_conventions.hpp"

namespace trainplan::planner {

// The slowest link a transfer crosses.
enum class LinkTier { nvlink, xgmi, pcie, network };

// Bytes one GPU sends for one collective whose nccl-tests size is `size` over n ranks: the bus
// factor times the size (NVIDIA/nccl-tests doc/PERFORMANCE.md; ring algorithms send exactly this).
[[nodiscard]] constexpr Bytes bytes_sent(hardware::Collective c, int n, Bytes size) {
  return n <= 1 ? Bytes(0.0) : size * hardware::bus_factor(c, n);
}

// Data-parallel / ZeRO / FSDP bytes sent per GPU per optimizer step, by collective, for the
// gradients (psi g bytes) and the gathered parameters (psi w bytes) held by the data-parallel
// group, n ranks sharing the shard and k micro-batches per step. Rajbhandari et al. 2020 (ZeRO,
// arXiv:1910.02054) Sec. 7: DDP 2 psi, ZeRO-1/2 2 psi, ZeRO-3 3 psi (times (n-1)/n); with
// accumulation FSDP and ZeRO-3 gather (and ZeRO-2/3, FSDP reduce-scatter) every micro-batch.
struct DataParallelVolume {
  Bytes all_reduce;
  Bytes reduce_scatter;
  Bytes all_gather;
  [[nodiscard]] Bytes total() const { return all_reduce + reduce_scatter + all_gather; }
};
[[nodiscard]] DataParallelVolume data_parallel_volume(Strategy s, Bytes gradients, Bytes parameters,
                                                      int n, std::int64_t k);

// ZeRO++ (Wang et al. 2023, arXiv:2306.10209): forward gather quantized to int8 (qwZ), backward
// gather from a secondary shard inside the node (hpZ, `node_ranks` ranks), gradients exchanged as
// int4 by all-to-all (qgZ). Bytes per GPU per step; the node-local gather is reported separately.
struct ZeroPlusPlusVolume {
  Bytes forward_gather;   // int8, across the data-parallel group
  Bytes backward_gather;  // 16-bit, inside the node
  Bytes gradient_all_to_all;
};
inline constexpr double kQwzBytes = 1.0;  // int8 weights (qwZ), block scales neglected
inline constexpr double kQgzBytes = 0.5;  // int4 gradients (qgZ)
[[nodiscard]] ZeroPlusPlusVolume zero_plus_plus_volume(double psi, int n, int node_ranks, double w,
                                                       std::int64_t k);

// Tensor-parallel collectives of one transformer layer for one micro-batch (Megatron f/g operators;
// Shoeybi et al. 2019 Sec. 3, Korthikanti et al. 2022 Sec. 4.2.2): `pairs` f/g pairs a pass (the
// layer's op list: one per sublayer, 2 in a GPT block, 3 in a T5 decoder block), so `pairs`
// all-reduces forward and as many backward (+`pairs` when full recomputation replays the
// forward, in the `replayed` share of the layers it wraps); with sequence parallelism each
// all-reduce becomes an all-gather plus a reduce-scatter of the same bytes.
struct TensorParallelCollectives {
  double all_reduce = 0;
  double all_gather = 0;
  double reduce_scatter = 0;
};
[[nodiscard]] TensorParallelCollectives tensor_parallel_collectives(double pairs, bool sequence_parallel,
                                                                    Checkpointing c, double replayed = 1.0);
// The activation each of them moves: b s h elements of the compute dtype.
[[nodiscard]] Bytes tensor_parallel_message(std::int64_t b, std::int64_t s, std::int64_t h,
                                            double c);
// Bytes sent per GPU per micro-batch by `n` tensor-parallel all-reduces (or, with sequence
// parallelism, as many all-gathers and reduce-scatters).
[[nodiscard]] Bytes tensor_parallel_bytes(std::int64_t b, std::int64_t s, std::int64_t h, int t, double c,
                                          bool sequence_parallel, double n);
// Bytes sent per GPU per layer per micro-batch by a layer's collectives above.
[[nodiscard]] Bytes tensor_parallel_bytes_per_layer(std::int64_t b, std::int64_t s, std::int64_t h,
                                                    int t, double c, double pairs,
                                                    bool sequence_parallel, Checkpointing ck,
                                                    double replayed = 1.0);

// Pipeline point-to-point message per micro-batch per stage boundary and direction: b s h c bytes,
// divided by t when Megatron's scatter-gather optimisation (Narayanan et al. 2021 Sec. 4.1) or
// sequence parallelism leaves each tensor-parallel rank its own slice.
[[nodiscard]] Bytes pipeline_message(std::int64_t b, std::int64_t s, std::int64_t h, double c,
                                     int t, bool split_over_tp);

// MoE expert-parallel all-to-all: per MoE layer and micro-batch the op list's dispatch and combine,
// forward and backward (model::OpCollective::expert_all_to_all), each of k b s h c bytes
// (Lepikhin et al. 2020, GShard, arXiv:2006.16668).
[[nodiscard]] Bytes moe_all_to_all_message(std::int64_t top_k, std::int64_t b, std::int64_t s,
                                           std::int64_t h, double c);
// The same for one tensor-parallel rank of tr's micro-batch, the tokens a capacity drops or pads
// counted as the framework sends them (model::expert_token_share): what the cost and the replay
// price.
[[nodiscard]] Bytes expert_all_to_all_message(const model::Architecture& a, const model::Training& tr);

// Pipeline bubble as a fraction of the ideal time: (p - 1) / (v m) (Narayanan et al. 2021,
// arXiv:2104.04473, Sec. 2.2; 1F1B for v = 1, interleaved 1F1B for v model chunks per stage).
[[nodiscard]] constexpr double bubble_fraction(int p, int v, std::int64_t m) {
  if (p <= 1 || m <= 0) return 0.0;
  return static_cast<double>(p - 1) / (static_cast<double>(v) * static_cast<double>(m));
}

// Where a group of ranks sits. Rank order is Megatron's: tensor-parallel ranks adjacent, then
// context-, then data-parallel, then pipeline stages (megatron/core/parallel_state.py, order
// "tp-cp-ep-dp-pp"); the data-parallel group holds the context-parallel ranks too.
// "Node" here is the scale-up domain (Layout::gpus_per_domain): the node, or the whole NVLink
// domain of a rack-scale system, whose links price everything that stays inside it.
struct Placement {
  int ranks = 1;
  int per_node = 1;  // ranks of the group inside one domain
  int nodes = 1;     // domains the group spans
};
[[nodiscard]] Placement tensor_parallel_group(const Layout& l);
[[nodiscard]] Placement data_parallel_group(const Layout& l);
[[nodiscard]] Placement shard_group(const Layout& l);    // ZeRO/FSDP shard (hybrid: inside a node)
[[nodiscard]] Placement replica_group(const Layout& l);  // hybrid sharding: across shard groups
// FSDP2's reshard_after_forward=N: N consecutive ranks of the shard group (torch views the shard
// mesh as (-1, N)), which hold a unit between its forward and its backward.
[[nodiscard]] Placement post_forward_group(const Layout& l, int ranks);
// Context-parallel ranks: adjacent to the tensor-parallel ones (Megatron's order "tp-cp-ep-dp-pp").
[[nodiscard]] Placement context_parallel_group(const Layout& l);
// Expert-parallel ranks: ep ranks of the data-parallel group.
[[nodiscard]] Placement expert_parallel_group(const Layout& l);
// Two adjacent pipeline stages: on the same node or not.
[[nodiscard]] Placement pipeline_pair(const Layout& l);

// The links of a cluster as the cost model uses them, resolved once.
struct LinkModel {
  LinkTier intra_tier = LinkTier::nvlink;
  BytesPerSecond intra_busbw;   // plateau bus bandwidth inside a node
  BytesPerSecond intra_p2p;     // point-to-point inside a node
  BytesPerSecond bridge_busbw;  // NVLink bridge pairs: inside the pair
  bool bridged_pairs = false;   // NVLink only between GPU pairs (A100 PCIe with bridges)
  BytesPerSecond nic_per_gpu;   // achieved network bandwidth per GPU (NICs per node / GPUs)
  BytesPerSecond host_copy;     // pinned host <-> device per GPU
  double small_message_fraction = 0.63;
  Bytes pipeline_fill;
  double tree_bandwidth_fraction = 0.46;
  hardware::RingLatency latency;
  const hardware::HardwareProfile* profile = nullptr;
};
[[nodiscard]] LinkModel link_model(const hardware::Cluster& c,
                                   const hardware::HardwareProfile* profile,
                                   const TimeConventions& tc);

[[nodiscard]] LinkTier tier_of(const LinkModel& m, const Placement& g);

// Time of one collective of nccl-tests size `size` over the group: the fastest of ring, tree
// (all-reduce across nodes) and hierarchical (all-reduce across nodes with several ranks per node:
// reduce-scatter in node, all-reduce across nodes, all-gather in node), each in two regimes (the
// low-latency protocols and the pipelined Simple protocol), as NCCL's tuner picks the fastest
// (NVIDIA/nccl src/graph/tuning.cc). A hardware profile's measured curve or collective model wins
// where it has one, of `dtype` (nccl-tests' name: "float", "bfloat16", "half") where it was
// measured (HardwareProfile::collective_time).
[[nodiscard]] Seconds collective_time(const LinkModel& m, hardware::Collective c,
                                      const Placement& g, Bytes size,
                                      std::string_view dtype = {});

// Pinned host <-> device copy of one GPU over PCIe.
[[nodiscard]] Seconds host_copy_time(const LinkModel& m, Bytes size);

// Bytes per element of reduced gradients: Megatron and PyTorch DDP reduce the fp32 main gradients
// under mixed precision; DeepSpeed (communication_data_type) and FSDP's MixedPrecision reduce in
// the 16-bit compute dtype (accelerate's bf16/fp16 FSDP policy), or fp32 where a library's FSDP2
// policy says so (Training::fsdp_reduce_bytes).
[[nodiscard]] double gradient_comm_bytes(const model::Training& tr);
// nccl-tests' name of that element type: "float" for 4 bytes, else the 16-bit compute dtype.
[[nodiscard]] std::string_view gradient_comm_dtype(const model::Training& tr);

}  // namespace trainplan::planner

namespace trainplan {
template <>
struct EnumTable<planner::LinkTier> {
  static constexpr std::string_view kWhat = "link tier";
  static constexpr std::array kEntries{
      std::pair{planner::LinkTier::nvlink, std::string_view{"nvlink"}},
      std::pair{planner::LinkTier::xgmi, std::string_view{"xgmi"}},
      std::pair{planner::LinkTier::pcie, std::string_view{"pcie"}},
      std::pair{planner::LinkTier::network, std::string_view{"network"}}};
};
}  // namespace trainplan
