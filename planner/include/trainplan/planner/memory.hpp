#pragma once
// Memory per GPU and per host for one fully specified configuration: model states sharded by the
// strategy, activations, framework buffers, and the overheads nvidia-smi sees but the allocator
// does not. Derivations in docs/formulas.md.

#include <string_view>

#include "trainplan/core/units.hpp"
#include "trainplan/hardware/gpu.hpp"
#include "trainplan/model/activations.hpp"
#include "trainplan/model/architecture.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/model/training.hpp"

namespace trainplan::planner {

// How the world is cut: tp x pp x dp ranks; ZeRO/FSDP shard over `shard` ranks of the dp group.
// Expert parallelism spreads a MoE's experts over `ep` ranks of the dp group; their states are
// sharded over the shard / ep ranks that hold the same experts (DeepSpeed-MoE, arXiv:2201.05596).
struct Layout {
  int world = 1;
  int nodes = 1;
  int gpus_per_node = 1;
  int tp = 1;
  int pp = 1;
  int dp = 1;
  int shard = 1;  // ranks a ZeRO/FSDP shard spans (dp, or the node for hybrid sharding)
  int ep = 1;     // ranks the experts are spread over (divides shard)
  int cuda_sm = 0;  // the GPU's CUDA compute capability, major*10+minor; 0: not NVIDIA
};

// Throws InputError naming the option when a value is out of range or the degrees do not fit the
// model (independent of the cluster and strategy).
void validate_training(const model::Architecture& a, const model::Training& tr);

// Throws InputError when the degrees do not divide the cluster or the model, or the strategy does
// not exist for the framework.
[[nodiscard]] Layout make_layout(const model::Architecture& a, const model::Training& tr,
                                 const hardware::Cluster& c);

// Empirical constants: named, with their source, never literals inside an expression.
struct MemoryConventions {
  // CUDA context with lazy module loading, PyTorch >= 2.1 on A100: 0.47-0.92 GiB (stas00
  // ml-engineering training/performance "Preloaded CUDA kernels memory usage"); litgpt oom.md
  // arithmetic shows 0.51 GiB non-PyTorch memory on an A100-80GB.
  Bytes cuda_context = gib(0.5);
  // torch.distributed/NCCL after the first collective: +1.45 GiB measured (stas00 ml-engineering
  // "torch.distributed memory usage", 0.55 -> 2.00 GiB); charged when more than one rank.
  Bytes nccl = gib(1.45);
  // Allocator cache above peak allocated (fragmentation): reserved ~ 1.05-1.15 x allocated in public
  // runs (reference memory.md 2.10); the middle is used.
  double allocator_reserve = 0.10;
  // DeepSpeed's estimators: additional_buffer_factor = 1.5 on host memory (stage3.py, stage_1_and_2.py).
  double deepspeed_host_buffer_factor = 1.5;
  // DeepSpeed ZeRO-1/2 gradient bucket: reduce_bucket_size = 5e8 elements of 16-bit (zero/config.py).
  double deepspeed_reduce_bucket_elements = 5e8;
};

// Model states on one GPU and its host share, before any phase logic.
struct ModelStates {
  Bytes weights;         // working weights (trainable and frozen base)
  Bytes gradients;       // gradients as they stand after backward (sharded where the strategy does)
  Bytes optimizer;       // moments, master weights and fp32 gradient partitions on the GPU
  Bytes gather_buffers;  // DeepSpeed ZeRO-3: the largest layer's 16-bit params and grads in flight
  Bytes buckets;         // DeepSpeed ZeRO-1/2 gradient reduce bucket (not in its estimator)
  Bytes host;            // per rank on the host: offloaded states
  std::int64_t trainable = 0;     // trainable parameters held by this rank before sharding
  std::int64_t local_params = 0;  // all parameters held by this rank before sharding
  double experts = 0;             // of local_params, routed experts (this rank's 1/ep)
  double trainable_experts = 0;   // of trainable, routed experts
  double optimizer_params = 0;    // trainable parameters whose optimizer states this rank steps
  double grad_bytes_per_param = 0;  // gradient bytes per trainable parameter on the GPU, unsharded
  [[nodiscard]] Bytes device() const { return weights + gradients + optimizer + gather_buffers; }
};

[[nodiscard]] ModelStates model_states(const model::Architecture& a, const model::ParameterCounts& n,
                                       const model::Training& tr, const Layout& l,
                                       const MemoryConventions& mc = {});

struct MemoryBreakdown {
  // Parts at the peak, summing to peak_allocated.
  Bytes weights, gradients, optimizer, activations, buffers;
  Bytes peak_allocated;  // what torch.cuda.max_memory_allocated reports
  Bytes overhead;        // CUDA context, NCCL, allocator cache
  Bytes device_total;    // what nvidia-smi reports: peak_allocated + overhead
  Bytes host;            // per node
  std::string_view peak_phase;  // "backward" or "optimizer step"
  model::ActivationMemory activation_detail;
  ModelStates states;
};

[[nodiscard]] MemoryBreakdown memory(const model::Architecture& a, const model::ParameterCounts& n,
                                     const model::Training& tr, const Layout& l,
                                     const MemoryConventions& mc = {});

// A configuration fits when what nvidia-smi shows fits the GPU's usable memory and, where the
// cluster states its nodes' CPU memory, the offloaded share fits that too.
[[nodiscard]] bool fits(const MemoryBreakdown& m, const hardware::Cluster& c);

}  // namespace trainplan::planner
