#pragma once
// Replay: what one GPU runs in one training step of a plan, component by component, at its real
// shapes, each with the time the step-time model predicts for it and how often it occurs per
// optimizer step. `trainplan-calibrate --replay` runs the components on real GPUs; the measured
// times summed with the same counts give a projected step time to hold against the prediction. The
// GPU replayed is the slowest pipeline stage (the last: it holds the LM head and the loss), as the
// evaluator prices it. Derivations: docs/formulas.md, "Time and communication".

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "trainplan/core/enum_table.hpp"
#include "trainplan/core/units.hpp"
#include "trainplan/hardware/collective.hpp"
#include "trainplan/hardware/gpu.hpp"
#include "trainplan/hardware/profile.hpp"
#include "trainplan/model/architecture.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/model/training.hpp"
#include "trainplan/planner/communication.hpp"
#include "trainplan/planner/estimate.hpp"
#include "trainplan/planner/evaluator.hpp"
#include "trainplan/planner/memory.hpp"
#include "trainplan/planner/time_conventions.hpp"

namespace trainplan::planner {

// When in the step a component runs.
enum class ReplayPhase { forward, backward, step };

// C (m x n) = op(A) op(B), row-major as the model code writes it: A is stored m x k (k x m when
// transposed), B k x n (n x k when transposed, nn.Linear's weight). `batch` products of the same
// shape run back to back (experts, attention heads), each with its own operands.
struct GemmWork {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  std::int64_t batch = 1;
  bool a_transposed = false;
  bool b_transposed = false;
  std::string_view dtype = "bf16";  // bf16, fp16 or tf32: what the precision's matmuls run in
  [[nodiscard]] Flops flops() const {
    return Flops(2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) *
                 static_cast<double>(batch));
  }
};

// A fused attention kernel (FlashAttention / cuDNN SDPA), layout [batch, heads, seq, head_dim],
// grouped K/V with kv_heads heads. `flops` is what the model prices (the causal saving included).
struct AttentionWork {
  std::int64_t batch = 1;
  std::int64_t heads = 1;
  std::int64_t kv_heads = 1;
  std::int64_t seq = 1;
  std::int64_t head_dim = 1;
  bool causal = true;
  bool backward = false;
  Flops flops;
};

// Memory-bound kernels: `bytes` read and written through HBM over `kernels` launches.
struct StreamWork {
  Bytes bytes;
  double kernels = 1.0;
};

// The optimizer step over `params` parameters in `tensors` tensors on this GPU: the stepped weights
// and moments are `state_bytes` wide, the gradients `grad_bytes`; the kernels move
// `bytes_per_param` per parameter (planner::optimizer_step_bytes).
struct OptimizerWork {
  Optimizer optimizer = Optimizer::adamw;
  OptimizerImpl implementation = OptimizerImpl::foreach;
  double params = 0.0;
  double tensors = 1.0;
  double state_bytes = 4.0;
  double grad_bytes = 4.0;
  double bytes_per_param = 0.0;
};

// One NCCL collective of nccl-tests size `size` over `group`; the group's members are `stride`
// world ranks apart (tensor-parallel ranks adjacent, then data-parallel, then pipeline stages:
// Megatron's order), and every such group of the job runs it at once.
struct CollectiveWork {
  hardware::Collective collective = hardware::Collective::all_reduce;
  CommPurpose purpose = CommPurpose::data_parallel_gradients;
  Bytes size;
  Placement group;
  int stride = 1;
  LinkTier tier = LinkTier::nvlink;
};

// What the model charges but a GPU replay does not run (host work, CPU optimizer): predicted only.
struct ModelOnlyWork {
  std::string why;
};

using ReplayWork =
    std::variant<GemmWork, AttentionWork, StreamWork, OptimizerWork, CollectiveWork, ModelOnlyWork>;

// gemm, attention, memory_bound, optimizer_step, collective or model_only.
[[nodiscard]] std::string_view kind_name(const ReplayWork& w);

struct ReplayComponent {
  std::string name;  // "block q forward", "attention backward", "tensor-parallel all_reduce", ...
  ReplayPhase phase = ReplayPhase::forward;
  ReplayWork work;
  double count = 0.0;       // occurrences per optimizer step on this GPU, replays included
  double recomputed = 0.0;  // of count, the replays of activation checkpointing
  Seconds predicted;        // one occurrence
  // Share of this component's time that lengthens the step: 1 for kernels, the exposed share for
  // collectives that the model overlaps with compute.
  double exposed_fraction = 1.0;
  [[nodiscard]] Seconds predicted_total() const { return predicted * count; }
  [[nodiscard]] bool runs_on_gpu() const { return !std::holds_alternative<ModelOnlyWork>(work); }
};

// Limits that keep one occurrence within a GPU's memory: larger collectives and optimizer steps run
// as equal slices (more occurrences of a proportionally smaller one).
struct ReplayOptions {
  Bytes max_message = gib(1.0);
  double max_optimizer_params = 1e9;
};

struct ReplayPlan {
  Layout layout;
  double layers = 0.0;             // blocks on the replayed pipeline stage
  std::int64_t micro_batches = 1;  // per optimizer step
  std::vector<ReplayComponent> components;
  TimeBreakdown time;              // the evaluator's step with its parts
  std::vector<std::string> notes;  // what the replay leaves to the model, and why
  [[nodiscard]] Seconds predicted_sum() const;
};

// The components of one GPU's step with the evaluator's prices: GEMMs by gemm_time, collectives
// by collective_time, and the attention kernels, memory-bound work, loss and optimizer step by
// the evaluator's own terms (block_compute, edge_compute, the step's optimizer time), so that the
// components add up to its compute, memory-bound, recompute, communication and optimizer times.
// Throws InputError for impossible layouts (make_layout).
[[nodiscard]] ReplayPlan replay_plan(const model::Architecture& a, const model::ParameterCounts& n,
                                     const model::Training& tr, const hardware::Cluster& c,
                                     const hardware::HardwareProfile* profile = nullptr,
                                     const ReplayOptions& options = {},
                                     const EstimateOptions& estimate_options = {},
                                     const TimeConventions& tc = {},
                                     const MemoryConventions& mc = {});

// Measured times, one per component (nullopt: not measured, the prediction stands in), against the
// predictions: serial sums over the step, and the model's step with every measured component's
// exposed time in place of its predicted one.
struct ReplayProjection {
  Seconds predicted_serial;  // sum of count x predicted
  Seconds measured_serial;   // sum of count x measured (predicted where unmeasured)
  Seconds predicted_step;    // the evaluator's step
  Seconds projected_step;    // predicted_step + sum of count x exposed x (measured - predicted)
  std::size_t measured = 0;
  std::size_t unmeasured = 0;  // components run on GPUs that have no measurement
};
// Throws std::invalid_argument when `measured` does not have one entry per component.
[[nodiscard]] ReplayProjection project(const ReplayPlan& plan,
                                       const std::vector<std::optional<Seconds>>& measured);

}  // namespace trainplan::planner

namespace trainplan {
template <>
struct EnumTable<planner::ReplayPhase> {
  static constexpr std::string_view kWhat = "replay phase";
  static constexpr std::array kEntries{
      std::pair{planner::ReplayPhase::forward, std::string_view{"forward"}},
      std::pair{planner::ReplayPhase::backward, std::string_view{"backward"}},
      std::pair{planner::ReplayPhase::step, std::string_view{"step"}}};
};
}  // namespace trainplan
