#pragma once
// Partial fine-tuning (Training::partial, model/training.hpp): which layers train, what a trained
// subset costs in parameters, and the --trainable text that states it.
//
// What autograd does with a partly frozen model (PyTorch autograd mechanics, "Locally disabling
// gradient computation": an op records its backward only when an input requires a gradient):
//  * a trained layer keeps what its backward needs and computes its input and weight gradients;
//  * a frozen layer above the lowest trained one still passes the gradient down: it keeps what
//    its input gradient needs and runs that backward, without weight gradients;
//  * a layer below every layer that needs a gradient (the embedding frozen) records nothing and
//    runs no backward; nor is it recomputed under checkpointing.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trainplan/model/architecture.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/model/training.hpp"

namespace trainplan::model {

[[nodiscard]] constexpr std::uint32_t role_bit(Role r) { return 1u << static_cast<unsigned>(r); }
inline constexpr std::uint32_t kAttentionRoles = role_bit(Role::q) | role_bit(Role::k) | role_bit(Role::v) |
                                                 role_bit(Role::o) | role_bit(Role::q_a) | role_bit(Role::kv_a) |
                                                 role_bit(Role::kv_b);
inline constexpr std::uint32_t kMlpRoles =
    role_bit(Role::gate) | role_bit(Role::up) | role_bit(Role::down) | role_bit(Role::router);

// Partial fine-tuning is on: full fine-tuning of a subset.
[[nodiscard]] inline bool trains_subset(const Training& tr) {
  return tr.method == Method::full && tr.partial.active;
}
// Whether checkpointing (when on) wraps the block tr builds: every block, but under
// Training::checkpoint_trained_only only those with trained weights, and one in
// Training::checkpoint_every (Training::layer_checkpointed).
[[nodiscard]] bool checkpointed_layer(const Training& tr);
// Whether full checkpointing wraps some blocks only (Training::checkpoint_every above 1 or
// checkpoint_layers above 0).
[[nodiscard]] bool picks_some_blocks(const Training& tr);
// Whether it wraps decoder layer `layer` (0-based): with checkpoint_layers K the first K blocks of
// each pipeline chunk; with checkpoint_every N the N-th, 2N-th, ... block of its pipeline stage (each
// rank counts the blocks it builds from 1). Always true when !picks_some_blocks.
[[nodiscard]] bool checkpoint_picks(const Architecture& a, const Training& tr, std::int64_t layer);
// Checkpointing some blocks only, as the library offers it: Megatron-LM's block method
// (Training::checkpoint_layers over each virtual pipeline chunk's blocks), torchtitan's one block
// in N (Training::checkpoint_every over each stage's); none elsewhere and for encoder-decoders.
// `blocks`: the blocks of the chunk or stage the option counts over.
enum class SomeBlocks { none, first_layers, one_in_n };
struct SomeBlocksOffer {
  SomeBlocks kind = SomeBlocks::none;
  std::int64_t blocks = 0;
};
[[nodiscard]] SomeBlocksOffer some_blocks_offer(const Architecture& a, const Training& tr);
// Full checkpointing of groups of blocks (Training::checkpoint_group above 1): of each pipeline
// chunk's L blocks, ceil(L / N) keep a group's input (`kept_share` of the blocks' checkpoint
// inputs) and backward rebuilds up to `rebuilt` blocks at once (min(N, L)).
struct CheckpointGroups {
  double kept_share = 1.0;
  double rebuilt = 1.0;
};
[[nodiscard]] CheckpointGroups checkpoint_groups(const Architecture& a, const Training& tr);
// The share of the decoder's layers it picks (1 at 1).
[[nodiscard]] double checkpoint_picked_share(const Architecture& a, const Training& tr);
// The checkpointing as plans and tables name it: "full", "full (1 block in 2)", "full (first 4
// blocks of each stage)", "full (groups of 4 blocks)".
[[nodiscard]] std::string checkpointing_text(const Training& tr);
// Whether the block tr builds computes the weight gradient of a linear of this role.
[[nodiscard]] bool trains_weight(const Training& tr, Role r);

// The lowest decoder layer whose input needs a gradient: 0 when every weight or the embedding
// trains, else the first trained layer (a.layers when no layer trains).
[[nodiscard]] std::int64_t first_backward_layer(const Architecture& a, const Training& tr);
[[nodiscard]] LayerState layer_state(const Architecture& a, const Training& tr, std::int64_t layer);
// The lowest trained layer when its own input needs no gradient (the embedding frozen, no
// checkpointing): like an adapter model's first block, it runs only the backward that leads to
// what it trains (block_ops' `first` block).
[[nodiscard]] bool entry_layer(const Architecture& a, const Training& tr, std::int64_t layer);
// In the entry layer (its norms frozen), whether a linear of this role computes its input
// gradient, and whether the attention core runs its backward: the projections reading the block
// input never need theirs; the attention core and its output projection theirs only when q, k or v
// train; the MLP's input needs one only when the attention trains, and the down projection's input
// only when the attention or the MLP's gate/up/router do.
[[nodiscard]] bool entry_input_gradient(const Training& tr, Role r);
[[nodiscard]] bool entry_attention_backward(const Training& tr);

// Trained parameters of decoder layers [from, to), and of the embedding and the LM head as asked;
// `experts` of them routed experts; `tensors` the parameter tensors the optimizer steps.
struct SubsetParameters {
  double all = 0.0;
  double experts = 0.0;
  double tensors = 0.0;
};
[[nodiscard]] SubsetParameters subset_parameters(const Architecture& a, const ParameterCounts& n, const Training& tr,
                                                 std::int64_t from, std::int64_t to, bool embedding, bool head);

// --trainable: comma-separated terms - decoder layers `N` or `A-B` (0-based), `last:N`, `first:N`
// or `spread:N` (resolve_trained_subset), `embedding`, `head`, and what of those layers trains:
// `all` (the default), `attention`, `mlp`, `norms` or linear roles (q, k, v, o, gate, up, down,
// router). Throws InputError naming `what`.
[[nodiscard]] TrainedSubset parse_trained_subset(std::string_view text, std::string_view what);
// The same subset written back in that form ("24-31", "44-55,router,gate,up,down,embedding,head").
[[nodiscard]] std::string trained_subset_text(const TrainedSubset& s);
// The relative layers (last:N, first:N, spread:N) as this model's layers; InputError naming `what`
// where the model has fewer than N layers, or N does not divide them for spread (LLaMA-Factory's
// own check).
[[nodiscard]] TrainedSubset resolve_trained_subset(const Architecture& a, TrainedSubset s, std::string_view what);
// A subset the model can train: resolved, its layers exist (InputError otherwise, naming `what`).
void check_trained_subset(const Architecture& a, const TrainedSubset& s, std::string_view what);

// The names of a model's parameters as transformers' named_parameters() gives them, for the
// families whose modules follow Llama's layout (llama, mistral, mixtral, qwen2, qwen3, qwen3_moe,
// gemma 1-3, olmo2); empty for the others. `transformers`: the release (Training::transformers):
// from 5.0 an MoE block is `mlp` with fused experts (mlp.experts.gate_up_proj), before it Mixtral's
// was `block_sparse_moe` with one module per expert.
struct ParameterName {
  enum class Kind { embedding, head, final_norm, norm, linear };
  std::string name;
  Kind kind = Kind::linear;
  std::int64_t layer = -1;    // decoder layer, or -1 outside the blocks
  std::uint32_t roles = 0;    // role_bit of what the tensor holds (gate_up_proj: gate and up)
};
[[nodiscard]] std::vector<ParameterName> hf_parameter_names(const Architecture& a, int transformers);

}  // namespace trainplan::model
