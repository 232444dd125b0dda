#pragma once
// Activation memory: the bytes autograd keeps for backward, per transformer block and for the
// embedding and head, for one micro-batch on one GPU.
//
// A block's saved tensors are those of its op list (model/block_ops.hpp: Korthikanti et al. 2022
// for megatron, the Hugging Face implementation op by op for pytorch / deepspeed); here they are
// summed, with the checkpointing policy, the pipeline's micro-batches in flight, the embedding and
// the head.

#include <algorithm>
#include <optional>
#include <string_view>
#include <vector>

#include "trainplan/core/units.hpp"
#include "trainplan/model/architecture.hpp"
#include "trainplan/model/block_ops.hpp"
#include "trainplan/model/sdpa.hpp"
#include "trainplan/model/training.hpp"

namespace trainplan::model {

struct ActivationTerm {
  std::string_view name;
  Bytes bytes;
};

struct BlockActivations {
  Bytes saved;      // kept from forward to backward by one block (no checkpointing)
  Bytes attention;  // of which the attention core (scores, softmax, dropout; dropped by selective)
  bool runs_backward = true;  // false: below every layer that needs a gradient (keeps nothing)
  bool checkpointed = true;   // false: checkpointing leaves it alone (it keeps `saved`)
  Bytes op_sac_outputs;       // what torchtitan's per-op policy saves of it (op_sac_saved_bytes)
  Bytes held;                 // of saved: held past backward by 4-bit matmuls (SavedTensor::held)
  // Beside the saved tensors while its attention runs under context parallelism: the other ranks'
  // keys and values, the partial outputs and the gradient buffers the exchange allocates
  // (context_exchange).
  ContextExchange exchange;
};

// One block of the given stack, without checkpointing (selective and full are applied by
// activation_memory), for t = seq * micro_batch tokens, sharded by TP (and SP).
[[nodiscard]] BlockActivations block_activations(const Architecture& a, const Training& tr, Stack stack);

// The same block's saved tensors by name, summing to block_activations(...).saved.
[[nodiscard]] std::vector<ActivationTerm> block_activation_terms(const Architecture& a, const Training& tr,
                                                                Stack stack);

// What the first block of a stack keeps beyond (or short of) the others, signed: the rotary cos/sin
// tables its attention is first to save, T5's relative position buckets, the encoder output a
// decoder attends to; under full checkpointing the other checkpoint inputs (position ids, an
// attention mask); with a frozen embedding (adapters), nothing for its first norm, whose input needs
// no gradient.
[[nodiscard]] Bytes first_block_extra(const Architecture& a, const Training& tr, Stack stack);

// What one block keeps for backward after the checkpointing policy, the first block of a stack
// with its first_block_extra.
[[nodiscard]] Bytes kept_per_block(const Architecture& a, const Training& tr, Stack stack, bool first);

// What (0-based) layer `layer` of the model keeps for backward after the checkpointing policy
// (the encoder's layers first for an encoder-decoder).
[[nodiscard]] Bytes kept_per_layer(const Architecture& a, const Training& tr, std::int64_t layer);

// What full checkpointing keeps per block: its input.
[[nodiscard]] Bytes checkpoint_bytes(const Architecture& a, const Training& tr);

// Embedding output (+ dropout mask) kept for backward by the first stage.
[[nodiscard]] Bytes embedding_activations(const Architecture& a, const Training& tr);

// The last stage's head: final norm, LM-head input, the loss's log-softmax and labels (saved), and
// the larger of the loss's forward copies and its first gradients in backward (transient).
// The training loop keeps the previous micro-batch's autograd graph alive into the next forward
// (LibraryTraits::logits_kept: litgpt's `logits` local) while that graph holds tensors past
// backward (bitsandbytes before 0.43.2: QloraStackTraits::keeps_input): what
// Training::previous_share prices.
[[nodiscard]] bool holds_previous_micro_batch(const Training& tr);

struct HeadActivations {
  Bytes saved;
  Bytes transient;    // the larger of the loss's forward and backward allocations beyond saved
  Bytes forward_end;  // alive as forward ends, before the loss
  Bytes forward_end_weight;  // beside it then: a 4-bit head's dequantized weight (a buffer, not kept)
  Bytes held;         // of saved: the head's input, held past backward by a 4-bit head's matmul
  [[nodiscard]] Bytes total() const { return saved + transient; }
};
[[nodiscard]] HeadActivations head_activations(const Architecture& a, const Training& tr);

// One block of a stack, its saved tensors by name (block_activation_terms).
struct StackActivationTerms {
  Stack stack = Stack::decoder;
  std::vector<ActivationTerm> terms;
};

// The pipeline stages whose memory can be the largest: the first holds the embedding and, under
// 1F1B, the most micro-batches in flight; the last holds the head and its loss, the multi-token
// prediction modules, and one micro-batch (more when interleaved). With one stage both are it.
enum class PipelineStage { first, last };

struct ActivationMemory {
  PipelineStage stage = PipelineStage::first;  // whose activations these are
  // The detail outputs show (activation_detail fills it; the searches never need it):
  // --attention sdpa: the kernel PyTorch picks for this model on this GPU, and why (model/sdpa.hpp).
  std::optional<SdpaChoice> sdpa;
  std::vector<StackActivationTerms> block_terms;  // per stack (encoder first), before checkpointing
  Bytes per_block;       // saved per block after checkpointing policy (one micro-batch)
  Bytes blocks;          // all blocks of the most loaded stage, times micro-batches in flight
  Bytes recompute_peak;  // full checkpointing: one block's activations rebuilt during its backward
  ContextExchange exchange;  // context parallelism: the largest block's exchange buffers
  Bytes embedding;
  Bytes head;
  Bytes host;            // full-offload: the checkpoints waiting in host memory (not in total())
  double in_flight = 1;  // micro-batches whose activations are alive at once (pipeline schedules)
  // Alive as forward returns, where that moment can outgrow total(): with the previous micro-batch's
  // tensors that 4-bit matmuls hold past backward still alive (activation_memory); 0 elsewhere.
  Bytes forward_end;
  Bytes forward_end_weight;  // beside it: the 4-bit head's dequantized weight during its last matmul
  // The head's backward (its saved tensors and the loss gradients) runs and frees before the last
  // block is replayed, so the two do not coexist: the larger counts. A block's context-parallel
  // exchange comes in its attention's backward, on top of the block rebuilt, and in the last
  // block's forward, before the head.
  [[nodiscard]] Bytes total() const {
    return blocks + embedding + std::max({head, recompute_peak + exchange.backward, exchange.forward});
  }
};

// What activation_memory reads of the blocks, resolved for one block shape on one GPU: each stack's
// block before checkpointing, what the first block of the stack saves, the attention that runs and
// whether the model hands it a materialised mask. None of it depends on checkpointing, pipelining,
// accumulation or the strategy, so a caller pricing many such configurations of one shape resolves
// it once (planner::Evaluator does).
struct StackBlock {
  BlockActivations block;  // the main kind of layer, not the first (StackOps::block)
  double block_share = 1.0;
  // The other kinds of layer (StackOps::variants) and their shares of the stack's layers.
  std::vector<std::pair<BlockActivations, double>> variants;
  // What the first block saves beyond a block of its kind that is not first (Hugging Face
  // accounting; zero for megatron, and where the training's checkpointing replays the blocks).
  Bytes first_extra;
};
struct ResolvedBlocks {
  StackBlock encoder;  // encoder-decoder models only
  StackBlock decoder;
  Attention attention = Attention::flash;  // the attention that runs (model/sdpa.hpp)
  bool explicit_mask = false;              // SDPA handed a b x 1 x s x s mask the model builds
  OpListVariant variant;                   // the family's (model/family.hpp)
  [[nodiscard]] const StackBlock& of(Stack s) const { return s == Stack::encoder ? encoder : decoder; }
};
[[nodiscard]] ResolvedBlocks resolve_blocks(const Architecture& a, const Training& tr);
// The same from the model's op lists for tr (model_ops(a, tr)).
[[nodiscard]] ResolvedBlocks resolve_blocks(const Architecture& a, const Training& tr, const ModelOps& ops);

// The activation memory of the first pipeline stage (the most loaded under 1F1B), without the
// detail (sdpa, block_terms).
[[nodiscard]] ActivationMemory activation_memory(const Architecture& a, const Training& tr);
// The same from blocks resolved already (resolve_blocks, for tr's shape and GPU), of either stage;
// tr's cuda_sm is not read.
[[nodiscard]] ActivationMemory activation_memory(const Architecture& a, const Training& tr,
                                                 const ResolvedBlocks& blocks,
                                                 PipelineStage stage = PipelineStage::first);
// Adds what outputs show beside the numbers: the SDPA kernel chosen and one block's saved tensors
// by name.
void add_activation_detail(ActivationMemory& m, const Architecture& a, const Training& tr);

}  // namespace trainplan::model
