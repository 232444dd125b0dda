#pragma once
// One transformer block as the list of ops it runs, for one micro-batch on one GPU: the only place
// that walks a block. Each op carries its kind, its GEMM or attention shape, the memory-bound bytes
// and kernels of its forward and of its autograd backward, the kernels it launches, and the tensors
// it keeps for backward. Family traits (model/family.hpp) and the attention that runs
// (model/sdpa.hpp attention_run) enter here and nowhere else; the activation memory
// (activations.hpp), the GEMM, attention and memory-bound times and the kernel counts
// (planner/compute.hpp) and the replay's work list (planner/replay.hpp) are folds over the list.
// Shape: Calculon's per-layer op list (Isaev et al. 2023, "Calculon: a methodology and tool for
// high-level co-design of systems and large language models", SC'23).
//
// Two accountings, chosen by the framework:
//  * pytorch / deepspeed (Hugging Face models in eager PyTorch): every elementwise op, cast, copy
//    and reduction with its autograd backward (grad formulas of torch's
//    tools/autograd/derivatives.yaml), and the tensors the implementation saves, op by op
//    (docs/formulas.md, "Activations" and "Memory-bound work and host overhead"), checked against
//    the PyTorch oracle;
//  * megatron: Megatron-LM's fused kernels (norm, bias-dropout-add, bias-activation, rotary,
//    MoE permutation) by the elements they stream, and the saved tensors of Korthikanti et al. 2022
//    (arXiv:2205.05198), Table 2 and Sec. 4, generalised to any MLP width, gated MLPs and
//    grouped-query attention.

#include <cstdint>
#include <string_view>
#include <vector>

#include "trainplan/core/units.hpp"
#include "trainplan/model/architecture.hpp"
#include "trainplan/model/family.hpp"
#include "trainplan/model/sdpa.hpp"
#include "trainplan/model/training.hpp"

namespace trainplan::model {

// HBM traffic and kernel launches of a piece of work.
struct KernelWork {
  double bytes = 0.0;
  double kernels = 0.0;
  KernelWork& operator+=(const KernelWork& o) {
    bytes += o.bytes;
    kernels += o.kernels;
    return *this;
  }
  [[nodiscard]] KernelWork operator*(double k) const { return {bytes * k, kernels * k}; }
  [[nodiscard]] KernelWork operator+(const KernelWork& o) const { return {bytes + o.bytes, kernels + o.kernels}; }
};

// A block's memory-bound work of forward and backward (eager accounting) and every kernel each
// launches.
struct EagerWork {
  KernelWork forward;
  KernelWork backward;
  double forward_launches = 0.0;
  double backward_launches = 0.0;
  // Scaled and summed field by field (StackOps' average over its kinds of layer).
  [[nodiscard]] EagerWork operator*(double k) const {
    return {forward * k, backward * k, forward_launches * k, backward_launches * k};
  }
  [[nodiscard]] EagerWork operator+(const EagerWork& o) const {
    return {forward + o.forward, backward + o.backward, forward_launches + o.forward_launches,
            backward_launches + o.backward_launches};
  }
};

enum class OpKind {
  gemm,            // a linear layer (and its LoRA adapter's products)
  attention_core,  // scores, softmax and context: one fused kernel, or two batched matmuls
  norm,            // RMSNorm / LayerNorm
  elementwise,     // activations, scalings, residual adds, dropout
  copy_cast,       // materialising copies and dtype casts
  reduction,       // row means and sums
  routing,         // MoE router scores, top-k and token permutation
  fused,           // a Megatron fused kernel, priced by its passes over `elements`
};

// A linear's products per GPU: forward Y[m x n] = X[m x k] W^T, backward dX (and dW when trained),
// `count` back-to-back products (the experts, each on its balanced share of the tokens).
struct GemmShape {
  Role role = Role::q;
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  std::int64_t count = 1;
  bool weight_grad = false;      // the weight is trained
  bool input_grad = true;        // the input's gradient is computed (not in partial fine-tuning's entry layer)
  bool adapted = false;          // carries a LoRA adapter of rank `rank` (two thin products more)
  std::int64_t rank = 0;
  double dequant_bytes = 0.0;    // QLoRA: one pass over the 4-bit weight and its 16-bit copy
  [[nodiscard]] bool expert() const { return count > 1; }
};

// The attention core per GPU (query heads split over tensor-parallel ranks).
struct AttentionShape {
  std::int64_t batch = 1;
  std::int64_t heads = 1;     // query heads on this GPU
  std::int64_t kv_heads = 1;  // key/value heads on this GPU (at least one)
  double heads_per_gpu = 1;   // a.heads / tp, unrounded (the FLOPs)
  std::int64_t seq = 1;        // keys a query may attend to: the whole sequence
  std::int64_t query_seq = 1;  // queries of a sequence on this GPU: seq / cp (all of them under
                               // the all-to-all exchange, which splits the heads instead)
  std::int64_t head_dim = 1;    // of a query and a key
  std::int64_t v_head_dim = 1;  // of a value (narrower under latent attention)
  bool causal = true;
  // SDPA is handed a materialised mask (model/sdpa.hpp SdpaMask::boolean): the kernel reads it and
  // cannot skip the blocks above the diagonal, so it does the whole s x s work.
  bool explicit_mask = false;
  bool cross = false;  // an encoder-decoder's cross-attention
  bool backward = true;  // false: nothing upstream trains (partial fine-tuning's entry layer)
  // Grouped keys and values copied to every query head before the kernel (repeat_kv): the kernel
  // reads, and context parallelism exchanges, `heads` of them.
  bool kv_expanded = false;
};

// Megatron's fused kernels, priced by TimeConventions' passes per kind.
enum class FusedPass { norm, residual, activation, rotary, permute };

// The collective an op brings under model parallelism, per micro-batch and pass:
//  * tensor_parallel: a row-parallel linear (attention output, the MLP's down projection) ends
//    with Megatron's g, an all-reduce of its output in forward (a reduce-scatter under sequence
//    parallelism), and its sublayer's f, an all-reduce of the input gradient in backward (an
//    all-gather) - Shoeybi et al. 2019 (arXiv:1909.08053) Fig. 3, Korthikanti et al. 2022
//    (arXiv:2205.05198) Sec. 4.2.2: one pair per sublayer.
//  * expert_all_to_all: the MoE dispatch and combine all-to-alls among expert-parallel ranks,
//    two each pass (Lepikhin et al. 2020, GShard, arXiv:2006.16668, Sec. 2.2).
enum class OpCollective { none, tensor_parallel, expert_all_to_all };

struct Op {
  std::string_view name;
  OpKind kind = OpKind::elementwise;
  bool core = false;          // part of the attention core: selective checkpointing re-runs it
  KernelWork forward;         // memory-bound ops of forward (eager accounting)
  KernelWork backward;        // their autograd backward
  double forward_launches = 0.0;   // kernels beyond the memory-bound ones (GEMMs, attention)
  double backward_launches = 0.0;
  GemmShape gemm;             // kind gemm
  AttentionShape attention;   // kind attention_core
  FusedPass pass = FusedPass::norm;  // kind fused: `elements` of `element_bytes`, plus a
  double elements = 0.0;             // `mask_bytes` per element (dropout masks)
  double element_bytes = 0.0;
  double mask_bytes = 0.0;
  OpCollective collective = OpCollective::none;
};

// A layer's collectives in one pass (forward; backward has as many): tensor-parallel f/g pairs and
// expert-parallel all-to-alls.
struct LayerCollectives {
  double tensor_parallel = 0.0;
  double expert_all_to_all = 0.0;
  [[nodiscard]] LayerCollectives operator*(double k) const { return {tensor_parallel * k, expert_all_to_all * k}; }
  [[nodiscard]] LayerCollectives operator+(const LayerCollectives& o) const {
    return {tensor_parallel + o.tensor_parallel, expert_all_to_all + o.expert_all_to_all};
  }
};

// A tensor kept from forward to backward, and the op that keeps it.
struct SavedTensor {
  std::string_view name;
  Bytes bytes;
  bool core = false;  // dropped by selective checkpointing (the attention core's)
  std::size_t op = 0;
  // Also held outside autograd's saved tensors, so alive after backward until the graph itself is
  // freed: a linear's input that bitsandbytes' 4-bit matmul before 0.43.2 stores on its context
  // (autograd/_functions.py MatMul4Bit: ctx.tensors = (A, B); model_states.hpp keeps_input).
  bool held = false;
};

struct BlockOps {
  Stack stack = Stack::decoder;
  Framework framework = Framework::pytorch;
  AttentionRun run;  // the attention this block runs (model/sdpa.hpp)
  // False for a layer below every layer that needs a gradient (partial fine-tuning,
  // model/partial.hpp): it keeps nothing, runs no backward and is not recomputed.
  bool runs_backward = true;
  // False for a layer checkpointing leaves alone (Training::checkpoint_trained_only): it keeps what
  // it saves and is not replayed.
  bool checkpointed = true;
  std::vector<Op> ops;
  std::vector<SavedTensor> saved;

  // Folds.
  [[nodiscard]] EagerWork eager_work() const;    // memory-bound work and launches, one pass
  [[nodiscard]] Bytes saved_bytes() const;       // everything kept for backward
  [[nodiscard]] Bytes saved_core_bytes() const;  // of which the attention core's
  [[nodiscard]] Bytes held_bytes() const;        // of which held past backward (SavedTensor::held)
  [[nodiscard]] double gemm_count() const;        // linear layers (not their adapters)
  [[nodiscard]] LayerCollectives collectives() const;
};

// What a block's attention allocates beside its saved tensors and its own output (forward) or input
// gradients (backward) under context parallelism (tr.cp > 1; zero otherwise): the keys and values of
// the other ranks as the exchange holds them, the partial outputs it merges, the gradient buffers it
// accumulates and passes on, at the largest moment of each pass, per the implementation that runs
// (model/src/context_exchange.cpp: PyTorch's context_parallel, DeepSpeed-Ulysses, Transformer
// Engine under megatron).
struct ContextExchange {
  Bytes forward;
  Bytes backward;
};
[[nodiscard]] ContextExchange context_exchange(const BlockOps& ops, const Training& tr);

// The ops of one block of `stack` for tr's micro-batch on tr's GPU (tr.cuda_sm decides the SDPA
// kernel). `first`: the first block of a stack, which also keeps what later blocks share with it
// (T5's relative position buckets, the encoder output a decoder attends to) and, with a frozen
// embedding, nothing for what needs no gradient yet.
[[nodiscard]] BlockOps block_ops(const Architecture& a, const Training& tr, Stack stack, bool first = false);

// torchtitan's per-op selective checkpointing (Checkpointing::selective_op), its policy as of
// torchtitan e7c0cae (2025-06, torchtitan/models/llama3/parallelize_llama.py _save_list and
// _custom_policy): it saves the outputs of every other aten.mm of the block (the 1st, 3rd, ...: q,
// v, the MLP's gate and down projections of a Llama block), of SDPA's flash and efficient kernels
// and of max (float8's amax, a scalar), and replays the rest in backward. Float8 GEMMs
// (aten._scaled_mm), grouped expert GEMMs and cuDNN attention are not in its list: replayed.
// Whether it saves the output of the `mm`-th plain matmul of a block (1-based; float8 and grouped
// GEMMs are not counted).
[[nodiscard]] constexpr bool op_sac_saves_mm(int mm) { return mm % 2 == 1; }
// Per op of `ops`: whether the policy saves its output.
[[nodiscard]] std::vector<bool> op_sac_saved(const BlockOps& ops, const Training& tr);
// The bytes of those outputs, per block: what the block keeps beside its input.
[[nodiscard]] Bytes op_sac_saved_bytes(const BlockOps& ops, const Training& tr);

// A kind of layer of a stack beside its main block, and the share of the stack's layers that run
// it: Llama 4's NoPE layers (Architecture::nope_interval), the dense layers of an MoE model
// (Architecture::expert_layers), and the two combined, each counted layer by layer.
struct LayerVariant {
  BlockOps ops;
  double share = 0;
  // "NoPE layers", "dense layers", "dense NoPE layers", "expert layers"; under partial fine-tuning
  // each kind is split further into its trained, frozen and no-backward layers
  // (partial_layer_kind).
  std::string_view kind;
};

// The ops of one stack's layers: the main block (the expert layers, with rotary positions) and the
// other kinds of layer with their shares.
struct StackOps {
  BlockOps block;
  double block_share = 1.0;
  std::vector<LayerVariant> variants;
  // A per-layer quantity of the blocks, averaged over the stack's layers.
  template <class T, class F>
  [[nodiscard]] T average(F of_block) const {
    T out = of_block(block) * block_share;
    for (const LayerVariant& v : variants) out = out + of_block(v.ops) * v.share;
    return out;
  }
  // Memory-bound work per layer, averaged over the stack's layers.
  [[nodiscard]] EagerWork eager_work() const;
  [[nodiscard]] LayerCollectives collectives() const;  // per layer, averaged likewise
};
[[nodiscard]] StackOps stack_ops(const Architecture& a, const Training& tr, Stack stack);

// Every stack of a model: the encoder's (encoder-decoder models only) and the decoder's. A caller
// pricing many configurations of one shape builds them once (planner::Evaluator does).
struct ModelOps {
  StackOps encoder;
  StackOps decoder;
  BlockOps embedding;  // edge_ops(Edge::embedding)
  BlockOps head;       // edge_ops(Edge::head)
  [[nodiscard]] const StackOps& of(Stack s) const { return s == Stack::encoder ? encoder : decoder; }
};
[[nodiscard]] ModelOps model_ops(const Architecture& a, const Training& tr);
// block_linears(a, stack) of each stack, where a caller holds them already (null: worked out).
struct StackLinears {
  const std::vector<Linear>* encoder = nullptr;
  const std::vector<Linear>* decoder = nullptr;
};
// The same into `out`, whose lists keep their capacity (no allocation when refilled).
void build_model_ops(const Architecture& a, const Training& tr, ModelOps& out, StackLinears linears = {});

// Outside the blocks, one micro-batch: the embedding lookup (first stage), the final norm, the LM
// head and the loss (last stage). Their bytes and times are priced by planner::edge_compute; the
// list gives their kernels.
enum class Edge { embedding, head };
[[nodiscard]] BlockOps edge_ops(const Architecture& a, const Training& tr, Edge edge);
// Liger's fused linear cross-entropy (OpListVariant::fused_linear_loss) works through the micro-batch's
// rows in chunks sized so that a chunk's logits are about the size of the head's input
// (fused_linear_cross_entropy.py: inc_factor = ceil(V / H), chunk = next_power_of_2(ceil(BT /
// inc_factor)), at most BT): `rows` per chunk, `count` chunks.
struct LossChunks {
  std::int64_t rows = 1;
  std::int64_t count = 1;
};
[[nodiscard]] LossChunks fused_linear_loss_chunks(const Architecture& a, const Training& tr);
void build_edge_ops(const Architecture& a, const Training& tr, Edge edge, BlockOps& out);

// A NoPE layer of Llama 4 as a model of its own: no rotary positions, full causal attention (no
// chunk mask), no q/k norm (Llama4TextAttention norms q and k on its rotary layers only).
[[nodiscard]] Architecture nope_variant(const Architecture& a);
// The architecture (0-based) layer `layer` of `stack` runs: the model's, its dense_variant for a
// dense layer of an MoE model, its nope_variant for a NoPE layer.
[[nodiscard]] Architecture layer_architecture(const Architecture& a, Stack stack, std::int64_t layer);

// A linear's shard on one of `tp` tensor-parallel ranks (Shoeybi et al. 2019, arXiv:1909.08053,
// Sec. 3): q, k, v, gate, up and the LM head split their outputs, o and down their inputs, the
// router is replicated; K/V keep at least one head per rank.
struct LinearShard {
  std::int64_t k = 0;  // input features on this GPU
  std::int64_t n = 0;  // output features on this GPU
};
[[nodiscard]] LinearShard linear_shard(const Architecture& a, const Linear& l, int tp);

// Bytes per element an RMSNorm keeps of its input: the fp32 copy its variance is taken from, and
// where the family's norm multiplies the model-dtype input itself by the fp32 reciprocal (T5, its
// OpListVariant), also that input when the model dtype is not fp32.
[[nodiscard]] double rms_input_bytes(const OpListVariant& family, const Training& tr);

// SDPA runs causal without a mask, except where the model builds one (b x 1 x s x s, boolean until
// the attention casts it): Falcon always (hf_sdpa_call), any model under a sliding window.
[[nodiscard]] bool sdpa_explicit_mask(const Architecture& a, const Training& tr);

}  // namespace trainplan::model
