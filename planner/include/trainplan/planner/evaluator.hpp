#pragma once
// The step-time model of one fully specified configuration. An Evaluator resolves what depends only
// on the architecture and the cluster once (linear shapes, FLOP coefficients, links, GPU constants)
// and then prices configurations quickly: memory, compute, recompute, communication per collective
// and link tier with its overlap, pipeline bubble, optimizer and offload.
// Derivations: docs/formulas.md, "Time and communication".

#include <algorithm>
#include <array>
#include <vector>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "trainplan/core/enum_table.hpp"
#include "trainplan/hardware/collective.hpp"
#include "trainplan/hardware/gpu.hpp"
#include "trainplan/hardware/profile.hpp"
#include "trainplan/model/activations.hpp"
#include "trainplan/model/architecture.hpp"
#include "trainplan/model/flops.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/model/training.hpp"
#include "trainplan/planner/communication.hpp"
#include "trainplan/planner/compute.hpp"
#include "trainplan/planner/estimate.hpp"
#include "trainplan/planner/memory.hpp"
#include "trainplan/planner/time_conventions.hpp"

namespace trainplan::planner {

// What a transfer is: the NCCL collective, or a host copy of offloading.
enum class Transfer {
  all_reduce,
  all_gather,
  reduce_scatter,
  all_to_all,
  send_recv,
  device_to_host,
  host_to_device
};

// Why it happens.
enum class CommPurpose {
  data_parallel_gradients,    // DDP all-reduce
  gradient_reduce_scatter,    // ZeRO / FSDP gradient shards
  parameter_gather_step,      // ZeRO-1/2 parameters gathered after the optimizer step
  parameter_gather_forward,   // ZeRO-3 / FSDP forward gathers
  parameter_gather_backward,  // ZeRO-3 / FSDP backward gathers
  replica_gradients,          // hybrid sharding: all-reduce across shard groups
  tensor_parallel,            // Megatron f/g operators (and SP gathers/scatters)
  pipeline,                   // stage-to-stage activations and gradients
  expert_all_to_all,          // MoE dispatch and combine
  context_parallel,           // keys and values among the context-parallel ranks
  offload_gradients,          // gradients to the host optimizer
  offload_parameters,         // parameters back to the GPU
  offload_activations,        // checkpoints to the host and back (full-offload)
  reference_gather,           // ZeRO-3 / FSDP gathers of DPO's reference forward
};

// Options that are strategy choices beyond model::Training.
struct EstimateOptions {
  bool zero_plus_plus = false;  // DeepSpeed ZeRO++ (qwZ, hpZ, qgZ) with zero3
};

struct CommTerm {
  Transfer kind = Transfer::all_reduce;
  CommPurpose purpose = CommPurpose::data_parallel_gradients;
  LinkTier tier = LinkTier::nvlink;
  int ranks = 1;
  Bytes bytes;      // sent per GPU per step
  Seconds time;     // of all these transfers in one step
  Seconds exposed;  // of which not hidden behind compute
};

inline constexpr std::size_t kMaxCommTerms = 16;

// Everything the estimate says, without strings or allocations: what the search ranks.
struct StepCost {
  Layout layout;
  MemoryBreakdown memory;
  bool fits = false;
  std::int64_t global_batch = 0;
  TimeBreakdown time;
  double tokens_per_s = 0;
  double samples_per_s = 0;
  double mfu = 0;
  double hfu = 0;
  FlopsPerSecond peak;
  Flops model_flops;          // per step, all GPUs (no recompute)
  Flops hardware_flops;       // per step, all GPUs (with recompute)
  Seconds stage_micro_batch;  // one micro-batch through the slowest pipeline stage
  std::array<CommTerm, kMaxCommTerms> comm{};
  std::size_t comm_count = 0;
};

// Per-layer and edge compute of one micro-batch, and the blocks' activations before checkpointing,
// depend on a few fields only; the search prices many strategies over the same shapes, so the last
// few are kept. The key is also their only input: block_compute, edge_compute and
// model::resolve_blocks see the training write_to() gives (these fields and the GPU's compute
// capability, every other one at its default), so the caches cannot return a result computed from
// a field the key leaves out.
struct LayerComputeKey {
  // The fields that differ most between the shapes a search prices come first: a lookup among
  // many kept shapes rejects the others on their first comparison.
  // Sequences through the model per micro-batch (Training::sequences: a preference pair is two),
  // written back as an SFT micro-batch of that many.
  std::int64_t sequences = 0;
  std::int64_t seq = 0;
  int tp = 0;
  Precision precision = Precision::fp32;
  Method method = Method::full;
  Attention attention = Attention::flash;
  Framework framework = Framework::pytorch;
  Library library = Library::hf_trainer;  // its model code's copies and loss dtype (op_variant)
  bool tf32 = false;                      // the fp32 matmuls' units
  bool liger = false;                     // Liger's kernels in the op list (op_variant)
  bool compile = false;                   // torch.compile's op list (op_variant)
  bool chunked_loss = false;              // the library's chunked output loss (op_variant)
  Quant quant = Quant::nf4;
  std::int64_t quant_block = 0;
  bool sequence_parallel = false;
  std::int64_t lora_rank = 0;
  double lora_dropout = 0.0;
  bool frozen_base_fp32 = false;  // autocast casts an fp32 frozen base every forward
  // FSDP's units gathered in the compute dtype (Training::computes_in_gathered_16bit): no weight
  // casts, a 16-bit residual stream; written back as strategy fsdp-full.
  bool gathered_16bit = false;
  QloraStack qlora_stack = QloraStack::hf_peft;  // what a QLoRA block saves (the resolved blocks)
  int bitsandbytes = 0;                          // and the release that runs its 4-bit matmuls
  int library_version = 0;  // the library's release (versioned traits: a pinned bitsandbytes, soft-capping)
  int transformers = 0;  // the release whose model code runs (SDPA path, experts)
  std::optional<double> hidden_dropout;     // set for the run (Training::hidden_dropout)
  std::optional<double> attention_dropout;
  double moe_capacity_factor = 0.0;  // Megatron's expert capacity (what each expert multiplies)
  bool moe_pad_to_capacity = false;
  int cp = 1;                     // a rank's share of each sequence
  CpComm cp_comm = CpComm::ring;  // all-to-all splits the heads instead
  Fp8Recipe fp8 = Fp8Recipe::none;  // the block linears' GEMMs, casts and saved inputs
  // Micro-batches per step where the recipe quantizes each weight once a step (Transformer Engine
  // under Megatron, model::fp8_cast_work); 1 otherwise.
  std::int64_t fp8_weight_batches = 1;
  model::TrainedSubset partial;  // partial fine-tuning: the layers' states and weight gradients
  bool checkpoint_trained_only = false;  // which of its layers checkpointing replays
  // Partial fine-tuning under checkpointing, which decides which layers run a backward
  // (model/partial.hpp first_backward_layer): the ops are built with checkpointing full.
  bool partial_replayed = false;
  // Full checkpointing of some blocks only (Training::checkpoint_every, checkpoint_layers; 1 and 0
  // otherwise) and the pipeline degrees that set the blocks a rank counts: the ops are built with
  // checkpointing full.
  std::int64_t checkpoint_every = 1;
  std::int64_t checkpoint_layers = 0;
  int checkpoint_pp = 1;
  int checkpoint_pp_virtual = 1;

  [[nodiscard]] static LayerComputeKey of(const model::Training& tr);
  // Writes the key's fields into `t` (the adapters' targets from `targets`): the training the
  // compute is priced from where t's other fields are model::Training's defaults.
  void write_to(model::Training& t, const std::vector<std::string>& targets) const;
  friend bool operator==(const LayerComputeKey&, const LayerComputeKey&) = default;
};
// The op lists of one shape (model::build_model_ops) and the training they were built from: the
// key's fields on the evaluator's GPU, every other field at its default.
struct ShapeOps {
  model::Training training;
  model::ModelOps ops;
};
struct LayerCompute {
  BlockCompute block;  // average layer
  EdgeCompute edge;
};

// The last N values worked out, looked up by key, the oldest replaced first (a search varies the
// strategy, checkpointing and pipeline over few shapes). Slots are made as they are first needed,
// so an evaluator that prices one configuration builds one.
template <class Key, class Value, std::size_t N>
class RecentValues {
 public:
  [[nodiscard]] const Value* find(const Key& key) const {
    for (std::size_t i = 0; i < count_; ++i)
      if (entries_[i].first == key) return &entries_[i].second;
    return nullptr;
  }
  const Value& insert(const Key& key, Value value) {
    Value& slot = replace(key);
    slot = std::move(value);
    return slot;
  }
  // The slot the next value for `key` goes into, holding whatever it held before (a caller refills
  // it in place, reusing its storage).
  Value& replace(const Key& key) {
    const std::size_t slot = next_;
    next_ = (next_ + 1) % N;
    count_ = std::min(count_ + 1, N);
    if (entries_.empty()) entries_.reserve(N);  // never reallocated: references stay valid
    if (slot == entries_.size()) entries_.emplace_back();
    entries_[slot].first = key;
    return entries_[slot].second;
  }
  // Forgets every value (the slots keep their storage). The next value goes into the first slot,
  // the one find() looks at first.
  void clear() {
    count_ = 0;
    next_ = 0;
  }

 private:
  std::vector<std::pair<Key, Value>> entries_;  // at most N; the first count_ hold values
  std::size_t count_ = 0;
  std::size_t next_ = 0;
};

class Evaluator {
 public:
  Evaluator(model::Architecture a, model::ParameterCounts n, hardware::Cluster c,
            const hardware::HardwareProfile* profile = nullptr, MemoryConventions mc = {},
            TimeConventions tc = {}, EstimateOptions options = {});

  // Throws InputError for impossible layouts. Not thread-safe (caches shapes): one per thread.
  // With time_if_infeasible false, a configuration that does not fit stops after its memory.
  [[nodiscard]] StepCost cost(const model::Training& tr, bool time_if_infeasible = true) const;
  // The full estimate: cost plus the largest micro-batch that fits and the named communication.
  [[nodiscard]] Estimate estimate(const model::Training& tr) const;
  [[nodiscard]] Estimate to_estimate(const model::Training& tr, const StepCost& s,
                                     bool with_max_micro_batch = true) const;

  [[nodiscard]] const model::Architecture& architecture() const { return a_; }
  [[nodiscard]] const model::ParameterCounts& counts() const { return n_; }
  [[nodiscard]] const hardware::Cluster& cluster() const { return c_; }
  [[nodiscard]] const MemoryConventions& memory_conventions() const { return mc_; }
  [[nodiscard]] const TimeConventions& time_conventions() const { return tc_; }
  [[nodiscard]] const EstimateOptions& options() const { return options_; }

 private:
  struct Shapes {
    bool valid = false;
    Method method = Method::full;
    model::LoraConfig lora;
    model::TrainedSubset partial;  // what the FLOPs count as trained
    bool checkpoint_trained_only = false;
    Checkpointing checkpointing = Checkpointing::none;  // of a partial fine-tune (its FLOPs' layers)
    BlockShape main;
    BlockShape decoder;  // encoder-decoder only
    model::FlopCoefficients flops;
  };
  const Shapes& shapes(const model::Training& tr) const;
  const ComputeDevice& device(const model::Training& tr) const;

  const LayerCompute& layer_compute(const model::Training& tr, const Shapes& sh) const;
  // The blocks' activations of tr's shape on this cluster's GPU (model::resolve_blocks). After
  // shapes(tr), which drops the blocks resolved for other adapter targets.
  const model::ResolvedBlocks& resolved_blocks(const model::Training& tr) const;
  // The op lists of tr's shape on this cluster's GPU (model::build_model_ops), which both of the
  // above fold, built once into the cache slot they replace, reusing its storage.
  const ShapeOps& shape_ops(const model::Training& tr) const;
  // Tokens/s, samples/s, model and hardware FLOPs, MFU and HFU of a costed step.
  // The optimizer step on the GPU (tr.offload none) or on the host CPUs: its time alone.
  Seconds optimizer_step(const model::Training& tr, const Layout& l, const Shapes& sh, double layers_stage,
                         double opt_params) const;
  void throughput(StepCost& out, const model::Training& tr, const model::FlopCoefficients& flops,
                  FlopsPerSecond peak) const;
  // Whether the hardware profile answered a communication term's time.
  [[nodiscard]] bool measured_by_profile(const CommTerm& t) const;

  model::Architecture a_;
  model::ParameterCounts n_;
  hardware::Cluster c_;
  const hardware::HardwareProfile* profile_ = nullptr;
  MemoryConventions mc_;
  TimeConventions tc_;
  EstimateOptions options_;
  LinkModel links_;
  int cuda_sm_ = 0;  // the GPU's compute capability (cuda_sm), read once
  std::array<ComputeDevice, 6> devices_;  // by Precision, and fp32 with TF32
  mutable Shapes shapes_;
  static constexpr std::size_t kShapesKept = 16;
  mutable RecentValues<LayerComputeKey, LayerCompute, kShapesKept> compute_cache_;
  mutable RecentValues<LayerComputeKey, model::ResolvedBlocks, kShapesKept> blocks_cache_;
  mutable RecentValues<LayerComputeKey, ShapeOps, kShapesKept> ops_cache_;
};

// Time to process `tokens` training tokens at the estimate's throughput.
[[nodiscard]] Seconds time_to_train(const Estimate& e, double tokens);

// The MFU/HFU convention the estimate uses, in words.
[[nodiscard]] std::string mfu_formula(const hardware::GpuSpec& g, Precision p, bool tf32);

}  // namespace trainplan::planner

namespace trainplan {
template <>
struct EnumTable<planner::Transfer> {
  static constexpr std::string_view kWhat = "transfer";
  static constexpr std::array kEntries{
      std::pair{planner::Transfer::all_reduce, std::string_view{"all_reduce"}},
      std::pair{planner::Transfer::all_gather, std::string_view{"all_gather"}},
      std::pair{planner::Transfer::reduce_scatter, std::string_view{"reduce_scatter"}},
      std::pair{planner::Transfer::all_to_all, std::string_view{"all_to_all"}},
      std::pair{planner::Transfer::send_recv, std::string_view{"send_recv"}},
      std::pair{planner::Transfer::device_to_host, std::string_view{"d2h"}},
      std::pair{planner::Transfer::host_to_device, std::string_view{"h2d"}}};
};
template <>
struct EnumTable<planner::CommPurpose> {
  static constexpr std::string_view kWhat = "communication purpose";
  static constexpr std::array kEntries{
      std::pair{planner::CommPurpose::data_parallel_gradients,
                std::string_view{"data-parallel gradient all-reduce"}},
      std::pair{planner::CommPurpose::gradient_reduce_scatter,
                std::string_view{"gradient reduce-scatter"}},
      std::pair{planner::CommPurpose::parameter_gather_step,
                std::string_view{"parameter all-gather after the step"}},
      std::pair{planner::CommPurpose::parameter_gather_forward,
                std::string_view{"forward parameter all-gather"}},
      std::pair{planner::CommPurpose::parameter_gather_backward,
                std::string_view{"backward parameter all-gather"}},
      std::pair{planner::CommPurpose::replica_gradients,
                std::string_view{"replica gradient all-reduce"}},
      std::pair{planner::CommPurpose::tensor_parallel,
                std::string_view{"tensor-parallel activations"}},
      std::pair{planner::CommPurpose::pipeline, std::string_view{"pipeline activations"}},
      std::pair{planner::CommPurpose::expert_all_to_all, std::string_view{"MoE all-to-all"}},
      std::pair{planner::CommPurpose::context_parallel,
                std::string_view{"context-parallel keys and values"}},
      std::pair{planner::CommPurpose::offload_gradients, std::string_view{"gradients to host"}},
      std::pair{planner::CommPurpose::offload_parameters,
                std::string_view{"parameters to device"}},
      std::pair{planner::CommPurpose::offload_activations,
                std::string_view{"checkpoints to host and back"}},
      std::pair{planner::CommPurpose::reference_gather,
                std::string_view{"reference-model parameter all-gather"}}};
};
}  // namespace trainplan
