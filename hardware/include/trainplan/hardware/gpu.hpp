#pragma once
// GPU, node and cluster specifications as plain values (datasheet numbers live in data/gpus/).

#include <string>

#include "trainplan/core/modes.hpp"
#include "trainplan/core/units.hpp"

namespace trainplan::hardware {

enum class IntraTopology { nvswitch, nvlink_bridge, pcie, xgmi };

struct IntraNodeLink {
  std::string link;  // "NVLink3", "PCIe4", ...
  IntraTopology topology = IntraTopology::pcie;
  BytesPerSecond bandwidth;  // unidirectional per GPU
};

struct InterNodeLink {
  int links_per_node = 0;
  double link_Gbps = 0.0;  // line rate of one NIC, gigabits per second
  std::string fabric;      // infiniband, roce, ethernet, efa
  [[nodiscard]] BytesPerSecond per_node() const {
    return BytesPerSecond(links_per_node * link_Gbps * 1e9 / 8.0);
  }
};

struct PeakFlops {  // dense, TFLOP/s; 0 where the dtype is unsupported
  double fp32 = 0, tf32 = 0, fp16 = 0, bf16 = 0, fp8 = 0, int8 = 0;
};

struct GpuSpec {
  std::string name;
  std::string vendor;
  std::string architecture;
  std::string form_factor;
  Bytes memory;         // total as nvidia-smi reports it
  Bytes usable_memory;  // what the framework can allocate (torch total capacity)
  PeakFlops peak;
  BytesPerSecond hbm_bandwidth;
  int sm_count = 0;
  IntraNodeLink intra_node;
  BytesPerSecond pcie_bandwidth;
  int default_gpus_per_node = 8;
  InterNodeLink default_inter_node;
};

// Peak dense throughput for the dtype the matmuls of this precision run in; V100 has no bf16 and
// falls back to its fp16 tensor cores only for fp16.
[[nodiscard]] FlopsPerSecond peak_flops(const GpuSpec& g, Precision p);

struct Cluster {
  GpuSpec gpu;
  int nodes = 1;
  int gpus_per_node = 1;
  InterNodeLink inter_node;
  Bytes host_memory;        // CPU memory per node for offloaded states; 0: not stated, not checked
  std::string description;  // how it was named, for messages
  [[nodiscard]] int world() const { return nodes * gpus_per_node; }
};

}  // namespace trainplan::hardware

namespace trainplan {
template <>
struct EnumTable<hardware::IntraTopology> {
  static constexpr std::string_view kWhat = "intra-node topology";
  static constexpr std::array kEntries{
      std::pair{hardware::IntraTopology::nvswitch, std::string_view{"nvswitch"}},
      std::pair{hardware::IntraTopology::nvlink_bridge, std::string_view{"nvlink-bridge"}},
      std::pair{hardware::IntraTopology::pcie, std::string_view{"pcie"}},
      std::pair{hardware::IntraTopology::xgmi, std::string_view{"xgmi"}}};
};
}  // namespace trainplan
