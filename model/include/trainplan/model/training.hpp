#pragma once
// One fully specified training configuration: what runs on every GPU. Defaults follow PyTorch and
// Hugging Face practice (bf16 autocast with fp32 master weights, torch AdamW, FSDP wrapped per block).

#include <bitset>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "trainplan/core/modes.hpp"
#include "trainplan/model/lora.hpp"

namespace trainplan::model {

// Partial fine-tuning: full fine-tuning (Method::full) of a subset of the weights, every other one
// frozen (requires_grad False) - LLaMA-Factory's finetuning_type freeze, axolotl's
// unfrozen_parameters. What it changes (model/partial.hpp): the trained parameters' gradients and
// optimizer states; the weight gradients of frozen linears; and every layer below the lowest that
// needs a gradient (the first trained layer, or all of them when the embedding trains), which
// keeps nothing for backward and runs none.
struct TrainedSubset {
  static constexpr std::size_t kMaxLayers = 256;
  bool active = false;              // false: every weight trains
  std::bitset<kMaxLayers> layers;   // decoder layers (0-based) whose `roles` (and norms) train
  std::uint32_t roles = 0;          // bit 1 << Role per trained linear of those layers
  bool norms = false;               // their norms train too
  bool embedding = false;
  bool head = false;                // the untied LM head (a tied one trains with the embedding)
  // Layers named relative to the model, until resolve_trained_subset (model/partial.hpp) turns
  // them into `layers`: the last N, the first N, or N spread evenly (the last of each of N equal
  // groups: LLaMA Pro's added blocks, LLaMA-Factory's use_llama_pro).
  std::int32_t last = 0;
  std::int32_t first = 0;
  std::int32_t spread = 0;
  friend bool operator==(const TrainedSubset&, const TrainedSubset&) = default;
};

// How one layer takes part in training (model/partial.hpp layer_state): its weights train; it is
// frozen but backward passes through it to a trained layer below; or it is below every layer that
// needs a gradient and runs no backward at all.
enum class LayerState { trained, frozen, no_backward };

struct Training;
// The implementation of torch's Adam/AdamW the training library asks for where the request names
// none (model/library.hpp LibraryTraits::optimizer_impl): framework_default where it leaves torch's
// own, or where its engine runs the step (DeepSpeed, Megatron, an offloaded optimizer).
[[nodiscard]] OptimizerImpl library_optimizer_impl(const Training& tr);

struct Training {
  Method method = Method::full;
  Objective objective = Objective::sft;
  // DPO with the reference log-probabilities computed in a pass over the data before training
  // (TRL's precompute_ref_log_probs): no reference model is held or run during the steps.
  bool reference_precomputed = false;
  Precision precision = Precision::bf16_mixed;
  Optimizer optimizer = Optimizer::adamw;
  Strategy strategy = Strategy::single;
  int tp = 1;
  int pp = 1;
  int pp_virtual = 1;  // interleaved 1F1B model chunks per stage
  bool sequence_parallel = false;
  // Megatron-Core's --tp-comm-overlap: Transformer Engine's userbuffers split each tensor-parallel
  // all-gather and reduce-scatter into chunks pipelined with the GEMM they feed (Wang et al. 2022,
  // arXiv:2105.05720, Sec. 3); needs sequence parallelism.
  bool tp_comm_overlap = false;
  int ep = 1;  // expert parallelism: MoE experts spread over this many data-parallel ranks
  // Context parallelism: each sequence split over cp ranks (load-balanced for causal masks: 2 cp
  // chunks, rank r holding r and 2cp-1-r), keys and values exchanged as cp_comm says. Every
  // per-token quantity of a rank is of seq / cp tokens; attention reads the whole sequence's keys.
  int cp = 1;
  CpComm cp_comm = CpComm::ring;
  std::int64_t micro_batch = 1;
  std::int64_t grad_accum = 1;
  std::int64_t seq = 2048;
  // The length of the micro-batch run just before the peak's, as a share of seq, where a loop
  // keeps its autograd graph alive into the next forward (model/activations.hpp
  // ActivationMemory::forward_end): 1 as long (every micro-batch seq tokens); 0 none (the peak is
  // the first micro-batch's).
  double previous_share = 1.0;
  // Dropout probabilities set for the run (--hidden-dropout, --attention-dropout: Megatron-LM's
  // flags, a config's values overridden). Unset: the model config's under the libraries that run
  // transformers' or their own model code (none where that code has no dropout layers), Megatron-LM's
  // default 0.1 each under megatron (megatron/training/arguments.py).
  std::optional<double> hidden_dropout;
  std::optional<double> attention_dropout;
  Checkpointing checkpointing = Checkpointing::none;
  Attention attention = Attention::flash;
  Offload offload = Offload::none;
  // Megatron-Core's --cpu-offloading with --cpu-offloading-num-layers N (Transformer Engine's CPU
  // offload context, activations only): what N layers of each stage save for backward goes to host
  // memory after their forward and comes back before their backward; 0: none.
  int offload_activation_layers = 0;
  LoraConfig lora;
  TrainedSubset partial;  // partial fine-tuning (full method only)
  // Partial fine-tuning under checkpointing, as LLaMA-Factory runs it
  // (model_utils/checkpointing.py get_custom_gradient_checkpointing_func): only the layers with
  // trained weights are checkpointed (reentrant, their input made to require a gradient); the
  // others run plain, and nothing makes the embedding's output require one (transformers' own
  // checkpointing does: model/partial.hpp first_backward_layer).
  bool checkpoint_trained_only = false;
  // Full checkpointing of one block in N, the others run plain: torchtitan's layer-selective
  // checkpointing (activation_checkpoint.mode "selective", selective_ac_option "N"; torchtitan
  // torchtitan/distributed/activation_checkpoint.py _apply_layer_sac: a counter from 1 over the
  // blocks a rank builds, the N-th, 2N-th, ... wrapped). 1: every block.
  std::int64_t checkpoint_every = 1;
  // Full checkpointing of the first K blocks of each pipeline chunk, the others plain: Megatron-LM's
  // --recompute-method block --recompute-num-layers K (megatron/core/transformer/transformer_block.py
  // _checkpointed_forward: `if l < recompute_num_layers` over the chunk's layers). 0: every block.
  std::int64_t checkpoint_layers = 0;
  // Full checkpointing of groups of N consecutive blocks of each pipeline chunk, a group keeping
  // only its first block's input and rebuilt at once in backward: Megatron-LM's --recompute-method
  // uniform --recompute-num-layers N (megatron/core/transformer/transformer_block.py
  // _checkpointed_forward: checkpoint(custom(l, l + recompute_num_layers)), l stepping by N over the
  // chunk's layers). 1: each block on its own.
  std::int64_t checkpoint_group = 1;
  // The layer a block is built for under partial fine-tuning (set by model::stack_ops per kind of
  // layer; trained otherwise), and whether checkpointing wraps it (checkpoint_every).
  LayerState layer = LayerState::trained;
  bool layer_checkpointed = true;
  // FP8 training of the block's linear layers (model/fp8.hpp); none: they run at the precision's
  // 16-bit dtype. The precision still says what the weights, the rest of the block and the head are.
  Fp8Recipe fp8 = Fp8Recipe::none;
  // The block linears' parameters all-gathered in FP8 (one byte each): Megatron-Core's
  // --fp8-param-gather, which also keeps them as FP8 tensors (no 16-bit copy, no separate weight
  // cache), and torchao's enable_fsdp_float8_all_gather under FSDP2 (tensorwise only).
  bool fp8_param_gather = false;
  Quant quant = Quant::nf4;
  std::int64_t quant_block = 64;  // bitsandbytes blocksize: weights per absmax constant (4-bit)
  FsdpWrap fsdp_wrap = FsdpWrap::block;
  // PyTorch's FSDP: 1, FullyShardedDataParallel (a flat parameter per unit, gathered straight into
  // it; frees behind recordStream); 2, fully_shard (PyTorch >= 2.4: per-parameter dim-0 shards
  // gathered through one flat buffer and copied out on the compute stream, gradients copied into
  // one flat reduce-scatter input; no recordStream). Set from the library unless given
  // (LibraryTraits::fsdp_version); read where PyTorch gathers the parameters (gathers_parameters).
  int fsdp_version = 1;
  // FSDP2's fully_shard(reshard_after_forward=N): after a unit's forward each rank keeps its 1/N
  // of the gathered parameters (a copy in the gathered dtype), so backward gathers them again over
  // N consecutive ranks (a node) instead of the whole shard group. 0: the strategy's own (True for
  // full and hybrid sharding). N must divide the shard group; 1 is False (kept gathered) and the
  // group's size is True, as torch's _get_post_forward_mesh_info maps them
  // (torch/distributed/fsdp/_fully_shard/_fsdp_init.py, torch >= 2.4).
  int fsdp_reshard_to = 0;
  // Hybrid sharding (Strategy::fsdp_hybrid): the ranks one shard group spans, the rest replicating
  // it (the device mesh's shard dimension of HYBRID_SHARD / HSDP, torchtitan's
  // data_parallel_shard_degree, DeepSpeed MiCS's mics_shard_size). 0: one node, the group torch's
  // FSDP builds for HYBRID_SHARD without a device mesh.
  int hybrid_shard = 0;
  // The training library (model/library.hpp) and the engine whose accounting holds (its default).
  Library library = Library::hf_trainer;
  Framework framework = Framework::pytorch;
  // fp32 matmuls on TF32 tensor cores (torch.backends.cuda.matmul.allow_tf32); only fp32 reads it.
  bool tf32 = false;
  // Liger's kernels patched into transformers' modeling code (the Trainer's use_liger_kernel:
  // liger_kernel.transformers._apply_liger_kernel_to_instance with the model type's defaults);
  // what they change is the op list's (model/library.hpp liger_kernels).
  bool liger = false;
  // torch.compile of the model with its loss (Inductor, default mode, no CUDA graphs): what it
  // changes is the op list's (model/library.hpp op_variant; docs/formulas.md "torch.compile").
  bool compile = false;
  // PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: PyTorch's caching allocator maps one growing
  // segment per stream instead of fixed-size segments, so blocks freed within the step serve
  // requests of any size and little of its cache is stranded (planner/memory.hpp allocator_cache).
  // Set from the library's launcher unless given (expandable_segments_by_default).
  bool expandable_segments = false;
  // The library's chunked output loss (LibraryTraits::output_chunks: torchtune's
  // CEWithChunkedOutputLoss): the output projection and the loss's fp32 upcast run chunk by chunk
  // of the sequence. Set from the library unless given.
  bool chunked_loss = false;
  // GaLore's projection rank (Zhao et al. 2024, arXiv:2403.03507; optimizer galore-adamw): each
  // block linear's gradient projected to this rank, AdamW's moments kept there.
  std::int64_t galore_rank = 128;
  bool zero_init = true;        // DeepSpeed zero.Init: ZeRO-3 never materialises the full model on CPU
  // DeepSpeed's overlap_comm false: ZeRO's gradient reduction runs on the compute stream, exposed
  // (runtime/zero/config.py: the default below stage 3); false here is overlap_comm true.
  bool no_overlap_comm = false;
  OptimizerImpl optimizer_impl = OptimizerImpl::framework_default;
  // torchtune's optimizer_in_bwd: every parameter has its own optimizer, stepped by a
  // post-accumulate-grad hook the moment its gradient is complete, which then frees that gradient
  // (torchtune/training/memory.py register_optim_in_bwd_hooks; PyTorch's "fusing the optimizer
  // step into the backward pass"). Gradients never all exist at once; needs grad_accum 1.
  bool optimizer_in_backward = false;
  // accelerate's GradientAccumulationPlugin(sync_each_batch=True) (a TrainingArguments'
  // accelerator_config gradient_accumulation_kwargs): every micro-batch's backward reduces the
  // gradients instead of accumulating them under no_sync (accelerator.py accumulate; transformers'
  // trainer.py training loop): DDP all-reduces each micro-batch, FSDP keeps its gradients sharded.
  bool sync_each_batch = false;
  // DeepSpeed's bf16.bf16_master_weights_and_grads: the optimizer's master weights and its gradient
  // partition in bf16 instead of fp32; bf16_optimizer_states: its moments too (needs the first).
  // DeepSpeed runtime/config.py asserts both need bf16 and ZeRO stage 1-3 (DeepSpeed PR #7700).
  bool bf16_master = false;
  bool bf16_optimizer_states = false;
  // Adapters under mixed precision: keep the frozen base in fp32 (litgpt's bf16-mixed autocasts an
  // fp32 model) instead of the 16-bit compute dtype (Hugging Face + PEFT practice).
  bool frozen_base_fp32 = false;
  // QLoRA: the software that puts the linears in 4 bits, and the bitsandbytes release that runs
  // them, major*10000+minor*100+patch (0.42.0 -> 4200); 0: a current release, as pip installs
  // today (model/model_states.hpp qlora_stack_traits).
  QloraStack qlora_stack = QloraStack::hf_peft;
  int bitsandbytes = 0;
  // The training library's release, as bitsandbytes' (package_release); 0: the newest its traits
  // were read from (model/library.hpp versioned_traits: what older releases did otherwise).
  int library_version = 0;
  // MoE under Megatron-Core: the expert capacity factor (--moe-expert-capacity-factor; 0: dropless,
  // its default) and whether each expert's input is padded to its capacity
  // (--moe-pad-expert-input-to-capacity). Hugging Face's MoE blocks are always dropless.
  double moe_capacity_factor = 0.0;
  bool moe_pad_to_capacity = false;
  // The CUDA compute capability (major*10+minor) of the GPUs, which decides the SDPA kernel and
  // autocast's fp32 ops (model/sdpa.hpp); 0: not a CUDA GPU (the CPU oracle). Set by the planner.
  int cuda_sm = 0;
  // The Hugging Face transformers release whose model code runs, major*100+minor (5.17 -> 517):
  // what a family passes to SDPA and how its experts run change between releases (sdpa.hpp,
  // block_ops.cpp). The default is the newest release this project's tables were read from.
  int transformers = kNewestTransformers;
  static constexpr int kNewestTransformers = 524;

  // A rank's share of each sequence, and of the micro-batch's tokens (all of them without CP).
  // micro_batch counts samples; a preference pair is two sequences through the model.
  [[nodiscard]] std::int64_t local_seq() const { return seq / cp; }
  [[nodiscard]] std::int64_t sequences() const { return micro_batch * sequences_per_sample(objective); }
  [[nodiscard]] std::int64_t tokens_per_micro_batch() const { return local_seq() * sequences(); }
  // A frozen reference model runs a forward of every micro-batch (DPO without precomputed
  // log-probabilities). Under an adapter method it is the same model with its adapters disabled
  // (TRL: use_adapter(model, None); LLaMA-Factory create_ref_model: None for LoRA), so only full
  // training holds a second copy of the weights.
  [[nodiscard]] bool runs_reference() const { return needs_reference(objective) && !reference_precomputed; }
  [[nodiscard]] bool holds_reference() const { return runs_reference() && method == Method::full; }
  // PyTorch's sharded data parallelism (FSDP, and ZeRO-2/3 run by it) gathers each unit's
  // parameters for compute and frees them after.
  // Gradient accumulation under PyTorch FSDP in a library that runs every micro-batch but the last
  // under no_sync (LibraryTraits::fsdp_no_sync_accumulation: transformers' Trainer, Lightning
  // Fabric's no_backward_sync): every unit's gradient accumulates unsharded until the last
  // micro-batch's backward reduce-scatters it (torch.distributed.fsdp FullyShardedDataParallel.no_sync:
  // "FSDP will accumulate the full model gradients (instead of gradient shards) until the eventual
  // sync").
  // Not under accelerate's GradientAccumulationPlugin(sync_each_batch=True) (sync_each_batch).
  [[nodiscard]] bool accumulates_unsharded_gradients() const;
  [[nodiscard]] bool gathers_parameters() const {
    return framework == Framework::pytorch &&
           (is_fsdp(strategy) || strategy == Strategy::zero3 || strategy == Strategy::zero2);
  }
  // FSDP2 (fully_shard) gathering them.
  [[nodiscard]] bool runs_fsdp2() const { return gathers_parameters() && fsdp_version == 2; }
  // fsdp_reshard_to is given where it applies: FSDP2 under a strategy that reshards after forward.
  [[nodiscard]] bool reshards_to_group() const {
    return fsdp_reshard_to > 0 && runs_fsdp2() && shards_parameters(strategy);
  }
  // torch.compile runs the model (Inductor's kernels); Megatron's own fused kernels ignore it.
  [[nodiscard]] bool runs_compiled() const { return compile && framework != Framework::megatron; }
  // Bytes per gradient element PyTorch's sharded data parallelism reduce-scatters: the dtype the
  // gradients were computed in, or fp32 where the library's FSDP2 policy reduces in fp32
  // (LibraryTraits::fsdp2_reduces_fp32: torchtitan's mixed_precision_reduce).
  [[nodiscard]] double fsdp_reduce_bytes() const;
  // Under mixed precision it gathers them in the compute dtype (FSDP MixedPrecision(param_dtype):
  // accelerate's FullyShardedDataParallelPlugin.set_mixed_precision, Composer's DEFAULT and PURE,
  // torchtitan's MixedPrecisionPolicy): the block computes with 16-bit weights, so autocast casts
  // none of them and the residual stream is 16-bit, as in a 16-bit model. Not where the library
  // gathers fp32 (LibraryTraits::fsdp_gathers_fp32: Lightning Fabric's, so litgpt's).
  [[nodiscard]] bool computes_in_gathered_16bit() const;
  [[nodiscard]] OptimizerImpl optimizer_implementation() const {
    if (optimizer_impl == OptimizerImpl::framework_default) {
      if (const OptimizerImpl lib = library_optimizer_impl(*this); lib != OptimizerImpl::framework_default) return lib;
      // One optimizer per parameter: torch's default path steps a one-tensor list at a time, as the
      // for-loop does.
      if (optimizer_in_backward) return OptimizerImpl::for_loop;
    }
    return resolved_optimizer_impl(optimizer_impl, framework, offload);
  }
};

// The strategy's name (display_name) with PyTorch's FSDP2 said where it runs: "FSDP2 full-shard",
// "ZeRO-3 (FSDP2)".
[[nodiscard]] std::string strategy_name(const Training& t);

// "5.17", "5.17.0" or "4.57.1" as major*100+minor; nothing for anything else (a release before 4.0
// or a minor over 99). The second form throws InputError naming `what`.
inline constexpr std::string_view kTransformersReleaseForm =
    "MAJOR.MINOR or MAJOR.MINOR.PATCH, 4.0 or later, e.g. 5.17";
[[nodiscard]] std::optional<int> transformers_release(std::string_view text);
[[nodiscard]] int parse_transformers_release(std::string_view text, std::string_view what);
[[nodiscard]] std::string transformers_release_text(int release);  // 517 -> "5.17"

// A Python package's release (bitsandbytes, the training library): "0.42.0" or "0.43" as
// major*10000+minor*100+patch, "current" as 0; nothing for anything else (a minor or patch over
// 99). The second form throws InputError naming `what` and the package.
inline constexpr std::string_view kPackageReleaseForm = "MAJOR.MINOR or MAJOR.MINOR.PATCH, e.g. 0.42.0, or current";
[[nodiscard]] std::optional<int> package_release(std::string_view text);
[[nodiscard]] int parse_package_release(std::string_view text, std::string_view package, std::string_view what);
[[nodiscard]] std::string package_release_text(int release);  // 4200 -> "0.42.0"; 0 -> "current"

}  // namespace trainplan::model
