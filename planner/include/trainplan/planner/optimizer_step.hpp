#pragma once
// The optimizer step on the GPU, by implementation: the bytes its kernels move per parameter, the
// memory it allocates while it runs, and the host work before its kernels. Derivations:
// docs/formulas.md, "The optimizer step".

#include <optional>

#include "trainplan/core/units.hpp"
#include "trainplan/model/architecture.hpp"
#include "trainplan/model/training.hpp"
#include "trainplan/planner/time_conventions.hpp"

namespace trainplan::planner {

struct BlockShape;

// Bytes the step's kernels read and write per stepped parameter. Adam/AdamW, foreach and the
// per-parameter loop (torch/optim/adam.py _multi_tensor_adam, _single_tensor_adam): weight decay
// (2 passes), lerp of m (3), v * beta2 (2), addcmul of g^2 (4), sqrt, divide, + eps (2 each into a
// temporary), addcdiv into the weights (4): 18 passes over states and 3 over the gradient. Fused
// (torch _fused_adamw_, DeepSpeed FusedAdam, apex): one pass reading p, g, m, v and writing p, m, v.
// Frameworks keeping fp32 master weights apart from 16-bit ones also write the 16-bit copy.
[[nodiscard]] double optimizer_step_bytes(const model::Training& tr);

// Memory the step allocates while it runs: foreach Adam materialises sqrt(v) for every parameter
// it steps at once (_multi_tensor_adam's exp_avg_sq_sqrt); the loop one tensor's worth at a time;
// fused kernels nothing.
[[nodiscard]] Bytes optimizer_step_transient(const model::Training& tr, double stepped_params,
                                             double largest_tensor);

// Parameter tensors one rank steps (weights, biases, norms, embeddings; two per LoRA adapter),
// for a pipeline stage holding `layers` blocks shaped like `block`.
[[nodiscard]] double trainable_tensors(const model::Architecture& a, const BlockShape& block,
                                       const model::Training& tr, double layers);

// GPU time of the step's kernels over `params` parameters, and the host time before them.
// `hbm` is the datasheet bandwidth (or a measured one scaled alike), `fp32_tflops` the GPU's
// non-tensor fp32 peak; `measured`, when a profile has it, the optimizer kernels' own streaming
// rate for these states (trainplan-calibrate --optimizer), which stands in for the achieved
// streaming rate.
struct OptimizerStepTime {
  Seconds kernels;
  Seconds host;
};
[[nodiscard]] OptimizerStepTime optimizer_step_time(
    const model::Training& tr, BytesPerSecond hbm, double fp32_tflops, double params,
    double tensors, const TimeConventions& tc,
    std::optional<BytesPerSecond> measured = std::nullopt);

// Whether the step's states are fp32 (the profile's optimizer rate is measured per state dtype).
[[nodiscard]] bool optimizer_states_fp32(const model::Training& tr);

}  // namespace trainplan::planner
