#pragma once
// Memory per GPU and per host for one fully specified configuration: model states sharded by the
// strategy, activations, framework buffers, and the overheads nvidia-smi sees but the allocator
// does not. Derivations in docs/formulas.md.

#include <optional>
#include <string>
#include <string_view>

#include "trainplan/core/enum_table.hpp"
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
  int cp = 1;     // context-parallel ranks: they split sequences and hold the same weights
  int shard = 1;  // ranks a ZeRO/FSDP shard spans (dp x cp, or the node for hybrid sharding)
  int ep = 1;     // ranks the experts are spread over (divides shard)
  int cuda_sm = 0;  // the GPU's CUDA compute capability, major*10+minor; 0: not NVIDIA
  // GPUs in one scale-up (NVLink) domain: the node, or a rack of NVL72 trays. Placement counts
  // in these domains: a group inside one never touches the NICs.
  int gpus_per_domain = 1;
  // DeepSpeed ZeRO++'s hpZ (--zero-plus-plus with ZeRO-3): the ranks of the secondary partition of
  // the 16-bit parameters (a node); 0 without. The evaluator sets it from its EstimateOptions.
  int secondary_partition = 0;
  // Ranks that hold the same slice of the model and reduce its gradients: data- and
  // context-parallel together (Megatron's data-parallel group with context parallelism).
  [[nodiscard]] int replicas() const { return dp * cp; }
};

// Bounds on what a user can type, derived from what a cluster can hold: one micro-batch's input ids
// (8-byte token ids, the least a token keeps on the GPU) must fit in 1 TiB, above every GPU's
// memory, so a larger micro-batch can never fit; and one optimizer step of the whole cluster stays
// under 2^50 tokens (Llama 3 trained on about 2^44 in all). Within them, every product of counts
// the model forms (tokens x hidden x vocabulary ...) stays exact in std::int64_t and double.
inline constexpr std::int64_t kMaxTokensPerMicroBatch = std::int64_t{1} << 37;
inline constexpr std::int64_t kMaxTokensPerStep = std::int64_t{1} << 50;

// Throws FieldError naming the option when a value is out of range, its counts leave the bounds
// above, or the degrees do not fit the model (independent of the cluster and strategy).
void validate_training(const model::Architecture& a, const model::Training& tr);

// Why tr's context parallelism cannot run (a message with {option} placeholders), or nullopt:
// the checks of Megatron-Core and Transformer Engine (memory.cpp). validate_training throws it; the
// search skips such degrees.
[[nodiscard]] std::optional<std::string> context_parallel_problem(const model::Architecture& a,
                                                                  const model::Training& tr);

// FSDP2's reshard_after_forward=N (model::Training::fsdp_reshard_to) as torch maps it for a
// strategy that reshards after forward: 0 where it does not apply or N is the whole shard group
// (True); 1, every unit kept gathered to backward (False); else the N consecutive ranks a unit's
// post-forward copy spans, which its backward all-gather runs over.
[[nodiscard]] int post_forward_ranks(const model::Training& tr, const Layout& l);
// The shard group of hybrid sharding without --hybrid-shard: the data-parallel ranks of one node,
// the group torch's FSDP builds for HYBRID_SHARD without a device mesh.
[[nodiscard]] int node_hybrid_shard(const Layout& l);

// Throws InputError when the degrees do not divide the cluster or the model, or the strategy does
// not exist for the framework.
[[nodiscard]] Layout make_layout(const model::Architecture& a, const model::Training& tr,
                                 const hardware::Cluster& c);
// The same, with the compute capability of the cluster's GPU read already (cuda_sm(c.gpu), which
// an Evaluator reads once, not for every configuration).
[[nodiscard]] Layout make_layout(const model::Architecture& a, const model::Training& tr,
                                 const hardware::Cluster& c, int cuda_sm);

// Empirical constants: named, with their source, never literals inside an expression.
struct MemoryConventions {
  // CUDA context with lazy module loading, PyTorch >= 2.1 on A100: 0.47-0.92 GiB (stas00
  // ml-engineering training/performance "Preloaded CUDA kernels memory usage"); litgpt oom.md
  // arithmetic shows 0.51 GiB non-PyTorch memory on an A100-80GB.
  Bytes cuda_context = gib(0.5);
  // torch.distributed/NCCL after the first collective: +1.45 GiB measured (stas00 ml-engineering
  // "torch.distributed memory usage", 0.55 -> 2.00 GiB); charged when more than one rank.
  Bytes nccl = gib(1.45);
  // PyTorch's caching allocator (c10/cuda/CUDACachingAllocator.cpp, torch 2.x): blocks freed
  // within a step stay reserved; at the peak, part of them cannot serve the requests of the moment
  // (best-fit splitting, segments of 2 MiB / 20 MiB / 2 MiB-rounded sizes). The stranded share of
  // the step's transient bytes (activations, logits, gathered units, step temporaries): medians of
  // measured (max_memory_reserved - max_memory_allocated) / predicted transient on H200 runs of
  // 2026-11-26 (data/reference/measured-h200.json; torch 2.11, expandable_segments off), fitted on
  // every other run of each kind in that file's order: 6 whose peak has no recomputation (GPT-2
  // b8, GPT-2-medium, TinyLlama bf16-true, Llama-3.2-1B LoRA, Llama-2-7B LoRA b1, Llama-3.1-8B
  // LoRA: 0.10) and 3 whose backward peak recomputes (GPT-2 b8 checkpointed, Phi-2 LoRA,
  // Llama-2-7B LoRA b4: 0.33; checkpointing re-allocates each block's tensors between gradients
  // of other sizes). The other 12 runs, QLoRA included, are held out
  // (tests/validate/test_validate.cpp H200MemoryWithinTheIssuesBands).
  double cache_fraction = 0.10;
  double cache_fraction_recompute = 0.33;
  // Of that cache, the share the free-and-retry before out-of-memory cannot return: it frees whole
  // unused segments only (release_cached_blocks), not blocks split off segments that still hold
  // live tensors. Not measured: set between two runs near capacity that bracket it, the seed lab's
  // DDP OpenLLaMA-7B on A100-80GB (ran: at most 0.69) and litgpt's Llama-2-7B LoRA micro-batch 4
  // on A100-40GB (out of memory: at least 0.16), tests/model/test_measured_runs.cpp.
  double unreleasable_cache_fraction = 0.5;
  Bytes page = mib(2.0);  // kRoundLarge, and the expandable segment's page
  // DeepSpeed's estimators: additional_buffer_factor = 1.5 on host memory (stage3.py, stage_1_and_2.py).
  double deepspeed_host_buffer_factor = 1.5;
  // DeepSpeed ZeRO-1/2 gradient bucket: reduce_bucket_size = 5e8 elements of 16-bit (zero/config.py).
  double deepspeed_reduce_bucket_elements = 5e8;
};

// Model states on one GPU and its host share, before any phase logic.
struct ModelStates {
  Bytes weights;         // working weights (trainable and frozen base), FP8 copies included
  Bytes reference;       // of weights, a frozen reference model's copy (DPO, Training::holds_reference)
  Bytes fp8_weights;     // of weights, the FP8 copies a Transformer Engine recipe keeps (model/fp8.hpp)
  double fp8_gathered = 0;  // parameters this rank gathers in FP8 (Training::fp8_param_gather)
  Bytes gradients;       // gradients as they stand after backward (sharded where the strategy does)
  // The gradients the optimizer steps: `gradients`, except under FSDP's no_sync accumulation,
  // whose unsharded gradients are reduce-scattered to these shards by the last backward.
  Bytes step_gradients;
  Bytes optimizer;       // moments, master weights and fp32 gradient partitions on the GPU
  Bytes gather_buffers;  // DeepSpeed ZeRO-3: the largest layer's 16-bit params and grads in flight
  Bytes buckets;         // DeepSpeed ZeRO-1/2 gradient reduce bucket (not in its estimator)
  Bytes host;            // per rank on the host: offloaded states
  std::int64_t trainable = 0;     // trainable parameters held by this rank before sharding
  std::int64_t local_params = 0;  // all parameters held by this rank before sharding
  double experts = 0;             // of local_params, routed experts (this rank's 1/ep)
  // Of local_params, the FSDP root unit's (embeddings, head, final norm on this stage; everything
  // without a wrap policy), which FSDP keeps gathered from forward to backward.
  double root_params = 0;
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
  Bytes transient;       // of peak_allocated, what is allocated and freed within each step
  Bytes allocator_cache; // reserved but unallocated at the peak (allocator model, docs/formulas.md)
  Bytes reserved;        // what torch.cuda.max_memory_reserved reports: peak_allocated + cache
  Bytes outside_torch;   // CUDA context and NCCL: memory the caching allocator does not manage
  Bytes overhead;        // outside_torch + allocator_cache
  Bytes device_total;    // what nvidia-smi reports: reserved + outside_torch
  Bytes host;            // per node
  std::string_view peak_phase;  // "backward", "end of forward", "end of backward" or "optimizer step"
  bool expandable_segments = false;  // the allocator ran with them (model::Training::expandable_segments)
  // With several pipeline stages, the one these numbers are of: "first" (the embedding and the most
  // micro-batches in flight) or "last" (the head, its loss and any prediction modules); "" with one.
  std::string_view peak_stage;
  model::ActivationMemory activation_detail;
  ModelStates states;
};

[[nodiscard]] MemoryBreakdown memory(const model::Architecture& a, const model::ParameterCounts& n,
                                     const model::Training& tr, const Layout& l,
                                     const MemoryConventions& mc = {});
// The same from the blocks resolved already for tr's shape on the layout's GPU
// (model::resolve_blocks; an Evaluator resolves them once per shape). With several stages the first
// and the last are priced and the answer is the one whose peak is the larger (peak_stage and its
// activation_detail.stage say which).
[[nodiscard]] MemoryBreakdown memory(const model::Architecture& a, const model::ParameterCounts& n,
                                     const model::Training& tr, const Layout& l,
                                     const model::ResolvedBlocks& blocks, const MemoryConventions& mc = {});

// The answer to "does it fit?", from what must be resident at the peak and what the allocator is
// expected to hold on to:
//  fits:  what nvidia-smi would show (reserved + context + NCCL) stays within the usable memory,
//         less `margin` (a fraction of it);
//  tight: the peak itself fits but the allocator's cache does not (or not within the margin).
//         Before raising out-of-memory the allocator frees its cached blocks and retries cudaMalloc
//         (CUDACachingAllocator.cpp, malloc: release_cached_blocks frees the non-split cached
//         blocks), so it runs unless
//         fragmentation strands too much;
//  no:    peak allocated + context + NCCL + the cache the retry cannot return
//         (MemoryConventions::unreleasable_cache_fraction) exceeds the usable memory, or the host
//         share exceeds the nodes' stated CPU memory.
enum class Verdict { fits, tight, no };

// Reserved but unallocated at the peak: the stranded share of the step's transient bytes
// (MemoryConventions::cache_fraction*), at least the page rounding of the peak. With expandable
// segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True) each stream maps one growing segment
// whose freed pages serve requests of any size: only the 2 MiB page rounding of the peak.
[[nodiscard]] Bytes allocator_cache(Bytes peak_allocated, Bytes transient, bool recompute, bool expandable_segments,
                                    const MemoryConventions& mc);

struct MemoryVerdict {
  Verdict verdict = Verdict::no;
  std::string reason;  // one sentence with the numbers, for the outputs
};

[[nodiscard]] MemoryVerdict judge(const MemoryBreakdown& m, const hardware::Cluster& c, double margin = 0.0,
                                  const MemoryConventions& mc = {});
// judge()'s verdict without its sentence: what the searches call for every configuration.
[[nodiscard]] Verdict verdict_of(const MemoryBreakdown& m, const hardware::Cluster& c, double margin = 0.0,
                                 const MemoryConventions& mc = {});

// judge(m, c).verdict != Verdict::no: tight counts as fitting.
[[nodiscard]] bool fits(const MemoryBreakdown& m, const hardware::Cluster& c);

// The largest micro-batch (up to `limit`) whose verdict is "fits" with `margin` (judge); 0 when
// none is. Memory grows with the micro-batch, so it doubles then bisects.
[[nodiscard]] std::int64_t max_micro_batch(const model::Architecture& a, const model::ParameterCounts& n,
                                           model::Training tr, const Layout& l, const hardware::Cluster& c,
                                           const MemoryConventions& mc, std::int64_t limit = 4096,
                                           double margin = 0.0);

}  // namespace trainplan::planner

namespace trainplan {
template <>
struct EnumTable<planner::Verdict> {
  static constexpr std::string_view kWhat = "verdict";
  static constexpr std::array kEntries{std::pair{planner::Verdict::fits, std::string_view{"fits"}},
                                       std::pair{planner::Verdict::tight, std::string_view{"tight"}},
                                       std::pair{planner::Verdict::no, std::string_view{"no"}}};
};
}  // namespace trainplan
