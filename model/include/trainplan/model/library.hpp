#pragma once
// The training library that runs the job, as one record of traits: what it changes in the memory
// and time of the same model, batch and strategy, each read from the library's own source (the
// table in library.cpp cites them; docs/formulas.md, "Training libraries", lists them).
//
// A library decides, unless a flag or a config file says otherwise:
// - whose accounting of the model states and the block holds (`engine`, what --framework names);
// - whether fp32 matmuls run on TF32 tensor cores (PyTorch leaves them off);
// - what its model code does beyond the Hugging Face family's op list, and the SDPA call it makes
//   where that is its own (`sdpa_call`);
// - the LoRA/QLoRA layout of its adapters.
// What a library is known to do that is not priced yet is said in `unmodelled`, and the request
// layer repeats it as a note, so that a user never reads a library's name as more than it is.

#include <string_view>

#include "trainplan/core/modes.hpp"
#include "trainplan/model/family.hpp"

namespace trainplan::model {

struct Architecture;
struct Training;

struct LibraryTraits {
  Library library = Library::hf_trainer;
  std::string_view name;
  // The engine whose conventions hold the model states and the block (--framework).
  Framework engine = Framework::pytorch;
  // fp32 matmuls on TF32 tensor cores unless the user says otherwise
  // (torch.backends.cuda.matmul.allow_tf32; PyTorch's default is off since 1.12).
  bool tf32 = false;
  // What its own model code passes to SDPA (hf_sdpa_call); null where transformers' modeling
  // files run (the family's call).
  const HfSdpaCall* sdpa_call = nullptr;
  // Grouped-query K/V copied to every query head before attention (expand + reshape), so the
  // attention kernel reads and keeps n_heads wide K and V.
  bool kv_expanded = false;
  // Its attention hands the o projection a token-major copy of the heads' head-major output
  // (reshape after transpose), which the projection keeps where it keeps its input.
  bool head_major_attention_output = false;
  // Its attention computes q, k and v with one fused projection and hands SDPA the value as a view
  // of that projection's output where K/V are not copied to every head (multi-head attention): the
  // kernel saves the view, so the whole output stays alive (OpListVariant::fused_qkv_value_view).
  bool value_view_of_fused_qkv = false;
  // Its LoRA on that fused projection drops the input out once for every adapted part
  // (OpListVariant::one_qkv_lora_dropout).
  bool one_qkv_lora_dropout = false;
  // Its LoRA on that fused projection pads the adapted parts' update with index_copy, which keeps
  // it for backward (OpListVariant::lora_qkv_update_kept).
  bool lora_qkv_update_kept = false;
  // Its adapter fine-tuning runs the output layer on chunks of this many positions: under autocast
  // a frozen fp32 head is cast to 16 bits once per chunk (autocast caches the casts of leaf
  // tensors that require grad only), each copy kept by its chunk's matmul for the input gradient.
  int adapter_head_chunk_positions = 0;
  // Its model code has no dropout layers, whatever the checkpoint's config sets (resid_pdrop,
  // attention_dropout).
  bool model_without_dropout = false;
  // Its model code runs GELU as one torch.nn.functional.gelu kernel (the tanh approximation where
  // the config names it), not Hugging Face's composite NewGELUActivation (GPT-2, Phi).
  bool one_kernel_gelu = false;
  // Its model holds the output layer as a parameter of its own, a copy of a checkpoint's tied
  // input embedding (as_built_by).
  bool unties_embeddings = false;
  // Under FSDP with gradient accumulation it runs every micro-batch but the last under no_sync
  // (Training::accumulates_unsharded_gradients).
  bool fsdp_no_sync_accumulation = false;
  // The cross-entropy takes the logits in the dtype the head produced them, without an fp32
  // upcast (transformers' ForCausalLMLoss upcasts).
  bool loss_in_model_dtype = false;
  // The training loop keeps the logits alive through backward, and with them the micro-batch's
  // autograd graph into the next forward (model/activations.hpp holds_previous_micro_batch).
  bool logits_kept = false;
  // The model's floating outputs come back cast to fp32 (OpListVariant::logits_fp32).
  bool output_fp32 = false;
  // Its cross-entropy runs in chunks of this many positions (OpListVariant::loss_chunk_positions).
  int loss_chunk_positions = 0;
  // Its recipes' loss runs the output projection on this many chunks of the sequence and upcasts
  // each chunk in the loss (Training::chunked_loss); without it the model returns its logits cast to
  // fp32 (OpListVariant::logits_fp32).
  int output_chunks = 0;
  // Its torch.compile compiles the blocks one by one and the loss as a graph of its own, the head
  // left eager (OpListVariant::loss_compiled_apart).
  bool compiles_loss_apart = false;
  // Its loss is one fused cross-entropy kernel (OpListVariant::fused_loss).
  bool fused_loss = false;
  // Its model code always calls torch's SDPA (no eager or flash-attn switch).
  bool sdpa_only = false;
  // Adapters under a *-mixed precision: the frozen base stays fp32 (autocast over an fp32 model).
  bool frozen_base_fp32 = false;
  // Its FSDP under a *-mixed precision gathers the parameters in fp32 and autocasts them
  // (Training::computes_in_gathered_16bit); elsewhere FSDP gathers them in the compute dtype.
  bool fsdp_gathers_fp32 = false;
  // Its PyTorch FSDP: 1, FullyShardedDataParallel; 2, fully_shard (Training::fsdp_version).
  int fsdp_version = 1;
  // Its FSDP2 mixed-precision policy reduces the gradients in fp32 (MixedPrecisionPolicy
  // reduce_dtype); elsewhere in the dtype they were computed in (reduce_dtype None).
  bool fsdp2_reduces_fp32 = false;
  // Its LayerNorm runs in the compute dtype with autocast off (llm-foundry's LPLayerNorm), where
  // autocast would run F.layer_norm in fp32 over an upcast copy of a 16-bit input.
  bool low_precision_norm = false;
  QloraStack qlora_stack = QloraStack::hf_peft;
  // The implementation of torch's Adam/AdamW it asks for unless told otherwise (its default optimizer
  // name or its configs' `fused: True`), from this transformers release on where it is the Trainer's
  // (0: any); framework_default where it leaves torch's own (foreach on CUDA).
  OptimizerImpl optimizer_impl = OptimizerImpl::framework_default;
  int optimizer_impl_from_transformers = 0;
  // Its launcher or training script sets PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True unless
  // the configuration says otherwise (Training::expandable_segments).
  bool expandable_segments = false;
  std::string_view source;      // where the traits were read
  std::string_view unmodelled;  // what the library does that is not priced yet ("" when none)
};

// What Liger patches into a model type by default (liger-kernel 0.8.5
// src/liger_kernel/transformers/monkey_patch.py, MODEL_TYPE_TO_APPLY_LIGER_FN and each
// apply_liger_kernel_to_* function's defaults). `supported` false: Liger has no kernels for it and
// the model runs unchanged.
struct LigerKernels {
  bool supported = false;
  bool rms_norm = false;
  bool rope = false;
  bool glu = false;  // SwiGLU or GeGLU of the dense MLPs (expert MLPs stay transformers')
  bool fused_linear_cross_entropy = false;
};
[[nodiscard]] LigerKernels liger_kernels(const Architecture& a);
// Whether a library runs transformers' modeling files, the code Liger patches.
[[nodiscard]] bool runs_transformers_models(Library l);

// The model as the library builds it from a checkpoint: `a` with its embeddings untied where the
// library holds the output layer apart (LibraryTraits::unties_embeddings).
[[nodiscard]] Architecture as_built_by(Architecture a, Library l);

// The dropout probabilities the library's model code applies: the architecture's, or none.
[[nodiscard]] double hidden_dropout(const Architecture& a, const Training& tr);
[[nodiscard]] double attention_dropout(const Architecture& a, const Training& tr);

// The record of `l`: the table is in Library's order, so this is an index.
[[nodiscard]] const LibraryTraits& library_traits(Library l);
// What a library's releases up to `until` did otherwise than its traits record (the newest read),
// selected by Training::library_version.
struct VersionedTraits {
  Library library = Library::hf_trainer;
  int until = 0;  // the last release these hold for (package_release form)
  // The bitsandbytes release it pinned (what Training::bitsandbytes 0 means there); 0: none.
  int bitsandbytes = 0;
  // Its adapter fine-tuning ran the LM head in chunks that skip the final logit soft-capping.
  bool adapters_skip_logit_softcap = false;
  // Its model code copied grouped keys and values up to the query heads before attention
  // (LibraryTraits::kv_expanded).
  bool kv_expanded = false;
  // torch.compile compiled the model's blocks but left the loss eager (OpListVariant::fused_loss
  // not set by --compile).
  bool compile_leaves_loss_eager = false;
  // Its RMSNorm ran in the input's dtype (OpListVariant::rms_norm_in_input_dtype).
  bool rms_norm_in_input_dtype = false;
  // Its LoRA padded the q/k/v update even where every part was adapted
  // (OpListVariant::lora_qkv_always_padded).
  bool lora_qkv_always_padded = false;
  // Its launcher left the allocator's configuration alone where the newest sets expandable
  // segments (LibraryTraits::expandable_segments).
  bool no_expandable_segments = false;
  const char* source = "";
};
// The record that holds for tr's library and release; null for the newest (or a library without
// versioned traits).
[[nodiscard]] const VersionedTraits* versioned_traits(const Training& tr);
[[nodiscard]] bool has_versioned_traits(Library l);
// The bitsandbytes release that runs tr's 4-bit layers: the one given, else the one tr's library
// release pinned, else 0 (a current release).
[[nodiscard]] int bitsandbytes_release(const Training& tr);
// Whether tr's library release runs with expandable segments when its configuration does not say:
// its traits, less a release that did not set them.
[[nodiscard]] bool expandable_segments_by_default(const Training& tr);
// The model's final logits are soft-capped (Gemma 2), unless the library release skips it.
[[nodiscard]] bool softcaps_logits(const Architecture& a, const Training& tr);

// The library a --framework value stands for when no library is named (the alias kept from before
// there were libraries): pytorch -> hf-trainer, deepspeed -> deepspeed, megatron -> megatron.
[[nodiscard]] Library library_of(Framework f);
// The family's op-list variant with the library's model code applied (block_ops.hpp).
[[nodiscard]] OpListVariant op_variant(const Architecture& a, const Training& tr);

}  // namespace trainplan::model
