#pragma once
// GPU, node and cluster specifications as plain values (datasheet numbers live in data/gpus/).

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

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

// Input dtypes of the tensor cores (AMD: matrix cores).
enum class TensorCoreDtype { fp32, tf32, fp16, bf16, fp8, int8 };

// FlashAttention generations (Dao-AILab/flash-attention): FlashAttention-2 needs sm80 or newer on
// CUDA (MI200/MI300 on ROCm); FlashAttention-3 is Hopper only.
enum class FlashAttentionGen { fa2, fa3 };

// What the chip can run, from datasheets and the CUDA/ROCm documentation (data/gpus/*.json,
// "capabilities"); the derivation and the sources are in docs/formulas.md, "GPU capabilities".
struct GpuCapabilities {
  std::string compute_capability;  // NVIDIA "major.minor" ("7.0"); AMD the LLVM target ("gfx942")
  std::vector<TensorCoreDtype> tensor_core_dtypes;
  bool bf16 = false;  // bf16 on the matrix units (not merely representable: PyTorch emulates it)
  bool fp8 = false;
  std::vector<FlashAttentionGen> flash_attention;  // generations that run; empty: none
  [[nodiscard]] bool has(TensorCoreDtype d) const;
  [[nodiscard]] bool runs(FlashAttentionGen g) const;
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
  // Per direction between the GPU and its host's memory where that is not PCIe (Grace's
  // NVLink-C2C on GB200/GB300); 0: over PCIe.
  BytesPerSecond host_bandwidth;
  int default_gpus_per_node = 8;
  // GPUs one NVLink fabric joins when the GPU comes in a rack-scale system (GB200/GB300 NVL72:
  // 72 GPUs across 18 trays of 4); 0: the fabric ends at the node.
  int nvlink_domain_gpus = 0;
  InterNodeLink default_inter_node;
  GpuCapabilities capabilities;
};

// Peak dense throughput of the units this precision's matmuls run on: fp32 on the CUDA cores
// unless `tf32` lets them onto the TF32 tensor cores (torch.backends.cuda.matmul.allow_tf32, off
// by default since PyTorch 1.12); bf16 on a GPU without bf16 matrix units is emulated at the fp32
// rate (emulated_bf16 below).
[[nodiscard]] FlopsPerSecond peak_flops(const GpuSpec& g, Precision p, bool tf32);
// "tf32", "fp32", "fp16" or "bf16": the units peak_flops priced.
[[nodiscard]] std::string_view matmul_dtype(const GpuSpec& g, Precision p, bool tf32);

// Whether the GPU runs this precision's matrix multiplies on its matrix units (fp32 always runs).
[[nodiscard]] bool supports(const GpuSpec& g, Precision p);
// bf16 on an NVIDIA GPU without bf16 matrix units (Volta, Turing): PyTorch accepts it
// (torch.cuda.is_bf16_supported(including_emulation=True)) and cuBLAS runs its GEMMs on the CUDA
// cores, so it trains, slowly. require_supported lets it through; the request layer warns.
[[nodiscard]] bool emulated_bf16(const GpuSpec& g, Precision p);
// Whether the GPU runs this attention: flash needs FlashAttention-2; SDPA and eager run anywhere
// (SDPA falls back to its memory-efficient kernel below sm80).
[[nodiscard]] bool supports(const GpuSpec& g, Attention a);
// What a request that does not name one gets: bf16-mixed where the GPU has bf16, else fp16-mixed.
[[nodiscard]] Precision default_precision(const GpuSpec& g);
// flash where FlashAttention-2 runs, else sdpa.
[[nodiscard]] Attention default_attention(const GpuSpec& g);
// Throws InputError naming the option, the GPU and what it supports when it cannot honour the
// precision or the attention kernel.
void require_supported(const GpuSpec& g, Precision p, Attention a);

struct Cluster {
  GpuSpec gpu;
  int nodes = 1;
  int gpus_per_node = 1;
  InterNodeLink inter_node;
  Bytes host_memory;        // CPU memory per node for offloaded states; 0: not stated, not checked
  std::string description;  // how it was named, for messages
  // GPUs in one NVLink domain (a multiple of gpus_per_node); 0: the node. Collectives inside a
  // domain run at the GPU's NVLink rate across its nodes; the NICs carry only what leaves it.
  int nvlink_domain = 0;
  [[nodiscard]] int world() const { return nodes * gpus_per_node; }
  // The scale-up domain a group of ranks can stay inside: the NVLink domain, else the node.
  [[nodiscard]] int gpus_per_domain() const {
    return nvlink_domain > gpus_per_node ? std::min(nvlink_domain, world()) : gpus_per_node;
  }
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
template <>
struct EnumTable<hardware::TensorCoreDtype> {
  static constexpr std::string_view kWhat = "tensor-core dtype";
  static constexpr std::array kEntries{
      std::pair{hardware::TensorCoreDtype::fp32, std::string_view{"fp32"}},
      std::pair{hardware::TensorCoreDtype::tf32, std::string_view{"tf32"}},
      std::pair{hardware::TensorCoreDtype::fp16, std::string_view{"fp16"}},
      std::pair{hardware::TensorCoreDtype::bf16, std::string_view{"bf16"}},
      std::pair{hardware::TensorCoreDtype::fp8, std::string_view{"fp8"}},
      std::pair{hardware::TensorCoreDtype::int8, std::string_view{"int8"}}};
};
template <>
struct EnumTable<hardware::FlashAttentionGen> {
  static constexpr std::string_view kWhat = "FlashAttention generation";
  static constexpr std::array kEntries{
      std::pair{hardware::FlashAttentionGen::fa2, std::string_view{"fa2"}},
      std::pair{hardware::FlashAttentionGen::fa3, std::string_view{"fa3"}}};
};
}  // namespace trainplan
