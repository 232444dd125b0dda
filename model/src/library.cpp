// The training libraries' traits (library.hpp), one row each, with the source each was read from.
#include "trainplan/model/library.hpp"

#include <array>
#include <string_view>

#include "trainplan/model/architecture.hpp"
#include "trainplan/model/fp8.hpp"
#include "trainplan/model/training.hpp"

namespace trainplan::model {
namespace {

// litgpt's own attention: SDPA with is_causal and no dropout, grouped K/V expanded to every query
// head, a single one too, before the call.
constexpr HfSdpaCall kLitgptSdpa{.own_attention = true,
                                 .kv_as_is = true,
                                 .kv_broadcast = true,
                                 .dropout = false,
                                 .source = "litgpt v0.5.7 litgpt/model.py CausalSelfAttention.forward"};

constexpr std::array<LibraryTraits, 11> kLibraries{{
    {.library = Library::hf_trainer,
     .name = "hf-trainer",
     .fsdp_no_sync_accumulation = true,
     .optimizer_impl = OptimizerImpl::fused,
     .optimizer_impl_from_transformers = 454,
     .source = "huggingface/transformers v5.17.0 src/transformers/trainer.py and training_args.py "
               "(tf32=None leaves PyTorch's default; optim defaults to adamw_torch_fused under torch 2.8 "
               "and later from v4.54.0, PR #37358, adamw_torch before; "
               "loss_utils.py ForCausalLMLoss upcasts the logits to fp32; every micro-batch but the "
               "last of an accumulation runs under accelerator.no_sync unless DeepSpeed runs it)",
     .unmodelled = ""},
    {.library = Library::accelerate,
     .name = "accelerate",
     .fsdp_no_sync_accumulation = true,
     .source = "huggingface/accelerate src/accelerate/accelerator.py: wraps the user's own loop "
               "and model (transformers' modeling files in practice); no TF32 switch of its own",
     .unmodelled = ""},
    {.library = Library::trl,
     .name = "trl",
     .fsdp_no_sync_accumulation = true,
     .optimizer_impl = OptimizerImpl::fused,
     .optimizer_impl_from_transformers = 454,
     .source = "huggingface/trl trl/trainer/sft_trainer.py: SFTTrainer subclasses transformers' "
               "Trainer (its defaults hold, the fused AdamW among them)",
     .unmodelled = "TRL's SFT loss from v1.7.0, chunked_nll by default (trl/trainer/sft_trainer.py: the output "
                   "layer and the cross-entropy in checkpointed chunks of 256 labelled tokens, PR #5846; up to "
                   "v1.9.0 each chunk, and its recomputation, copies the output layer's weight to fp32: "
                   "h.float() @ w.float().t()), is priced as transformers' loss over the whole logits "
                   "(loss_type nll, the default up to v1.6)"},
    {.library = Library::litgpt,
     .name = "litgpt",
     .tf32 = true,
     .sdpa_call = &kLitgptSdpa,
     .kv_expanded = true,
     .head_major_attention_output = true,
     .value_view_of_fused_qkv = true,
     .one_qkv_lora_dropout = true,
     .lora_qkv_update_kept = true,
     .adapter_head_chunk_positions = 128,
     .model_without_dropout = true,
     .one_kernel_gelu = true,
     .unties_embeddings = true,
     .fsdp_no_sync_accumulation = true,
     .loss_in_model_dtype = true,
     .logits_kept = true,
     .output_fp32 = true,
     .loss_chunk_positions = 128,
     .sdpa_only = true,
     .frozen_base_fp32 = true,
     .fsdp_gathers_fp32 = true,
     .qlora_stack = QloraStack::lightning,
     .source = "Lightning-AI/litgpt v0.5.x: litgpt/__main__.py main() calls "
               "torch.set_float32_matmul_precision(\"high\") for every CLI command (TF32 on); "
               "litgpt/model.py CausalSelfAttention.forward copies grouped K/V to every query head "
               "(expand + reshape up to v0.5.4, repeat_interleave after the rotary embedding from "
               "v0.5.5) and calls SDPA with is_causal, an ungrouped value as a view of the fused qkv "
               "output; litgpt/lora.py LoRAQKVLinear drops the input out once for all adapted parts and pads "
               "their update with index_copy_ unless q, k and v are all adapted (zero_pad; torch's "
               "IndexCopyBackward keeps the source), and GPT.forward runs lm_head on chunks of "
               "lm_head_chunk_size=128 positions from finetune/lora.py and adapter.py; "
               "litgpt/utils.py chunked_cross_entropy "
               "(cross_entropy in chunks of 128 positions, no upcast of its own, also at "
               "8641822); finetune/full.py and lora.py keep `logits` in a local through "
               "fabric.backward and into the next iteration's forward (lit-gpt 8641822 runs the longest "
               "sample first); litgpt/finetune/lora.py (under *-mixed the model is fp32, the base frozen); QLoRA "
               "through lightning Fabric's BitsandbytesPrecision (4-bit head; the bitsandbytes release is "
               "--bitsandbytes: litgpt pinned 0.42.0 up to v0.5.4); lightning_fabric/plugins/precision/fsdp.py "
               "FSDPPrecision.mixed_precision_config: bf16-mixed and 16-mixed gather param_dtype float32 "
               "(torch >= 2.0); litgpt/scripts/convert_hf_checkpoint.py copies a tied checkpoint's "
               "embedding into lm_head.weight and the finetune scripts never tie it (train.tie_embeddings "
               "unsupported): an untied head; model.py has no dropout and one F.gelu; finetune/full.py "
               "runs accumulating micro-batches under fabric.no_backward_sync (FSDP no_sync); Fabric's "
               "precision plugins return the model's floating outputs in fp32 (plugins/precision/half.py, "
               "bitsandbytes.py convert_output: the default dtype), so the logits reach the loss as fp32",
     .unmodelled = ""},
    {.library = Library::torchtune,
     .name = "torchtune",
     .kv_expanded = true,
     .output_chunks = 8,
     .compiles_loss_apart = true,
     .sdpa_only = true,
     .fsdp_version = 2,
     .optimizer_impl = OptimizerImpl::fused,
     .source = "pytorch/torchtune v0.6.1 torchtune/modules/attention.py:285-291 (grouped K/V "
               "k.unsqueeze(2).expand(...).flatten(1, 2), a copy at every query head, then SDPA); "
               "torchtune/training/precision.py (_set_float32_precision is never called by a "
               "recipe: TF32 off); torchtune/modules/loss/ce_chunked_output_loss.py "
               "(CEWithChunkedOutputLoss, the recipe configs' loss: num_output_chunks 8, each chunk's "
               "logits.float() then cross_entropy) with modules/transformer.py "
               "TransformerDecoder.chunked_output (the output projection on h.chunk(8, dim=1)), and "
               "without it self.output(h).float(); recipes/full_finetune_single_device.py _loss_step "
               "(del logits after the loss); 118 of the 123 recipe configs with torch.optim.AdamW pass "
               "fused: True; "
               "torchtune/training/_distributed.py shard_model (fully_shard on every layer and the "
               "root, no mixed-precision policy: the model is bf16); QLoRA: models/llama3/_component_builders.py "
               "quantize_base puts torchao's NF4Tensor (4-bit codes, an int8 scaler per block of 64, a scale "
               "per 256 scalers: bitsandbytes' NF4 bytes with double quantization) on every block linear "
               "(FrozenNF4Linear where not adapted) and leaves the output layer 16-bit",
     .unmodelled = "torchtune's own model code is priced as transformers' modeling files with its grouped K/V "
                   "copies, and its per-layer torch.compile as a whole-model compile"},
    {.library = Library::axolotl,
     .name = "axolotl",
     .tf32 = true,
     .fsdp_no_sync_accumulation = true,
     .optimizer_impl = OptimizerImpl::fused,
     .source = "axolotl-ai-cloud/axolotl v0.18.0 src/axolotl/utils/schemas/config.py:592 (tf32 "
               "defaults to \"auto\" from v0.16.0: on where the GPU has TF32; None before), its optimizer "
               "adamw_torch_fused by default (PR #2293, 2025-01) and "
               "src/axolotl/core/trainers: transformers' Trainer over transformers' models",
     .unmodelled = "kernel patches an axolotl YAML can turn on other than Liger's (unsloth, cut cross-entropy) "
                   "are not priced"},
    {.library = Library::torchtitan,
     .name = "torchtitan",
     .fsdp_version = 2,
     .fsdp2_reduces_fp32 = true,
     .optimizer_impl = OptimizerImpl::fused,
     .expandable_segments = true,
     .source = "pytorch/torchtitan torchtitan/models/llama3/model/model.py (grouped K/V through "
               "SDPA's enable_gqa from v0.2.2, PR #2259; repeat_kv copies up to v0.2.1); no TF32 "
               "switch; parallelize_llama.py apply_fsdp (fully_shard on every block and the root) "
               "with config_manager.py mixed_precision_param bfloat16 and mixed_precision_reduce "
               "float32 (@e7c0cae L221-231), optimizer implementation \"fused\" by default "
               "(components/optimizer/optimizer.py); run_train.sh, the launch its README gives, sets "
               "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (@e7c0cae L24; PYTORCH_ALLOC_CONF in "
               "later releases)",
     .unmodelled = "torchtitan's own model code is priced as transformers' modeling files (its "
                   "compile, float8 and per-op checkpointing through --compile, --fp8 torchao-* and "
                   "--checkpointing selective-op)"},
    {.library = Library::megatron,
     .name = "megatron",
     .engine = Framework::megatron,
     .source = "NVIDIA/Megatron-LM megatron/core/transformer (fused LayerNorm, bias-GeLU, "
               "bias-dropout-add, fused softmax or Transformer Engine's attention; Korthikanti "
               "et al. 2022, arXiv:2205.05198, Sec. 4-5); distributed optimizer with fp32 main "
               "parameters and gradients",
     .unmodelled = ""},
    {.library = Library::megatron_deepspeed,
     .name = "megatron-deepspeed",
     .engine = Framework::megatron,
     .source = "deepspeedai/Megatron-DeepSpeed megatron/model/transformer.py: Megatron-LM's fused "
               "block under DeepSpeed's engine",
     .unmodelled = "DeepSpeed's ZeRO accounting of the model states under a Megatron block is "
                   "priced as Megatron's distributed optimizer"},
    {.library = Library::deepspeed,
     .name = "deepspeed",
     .engine = Framework::deepspeed,
     .source = "deepspeedai/DeepSpeed deepspeed/runtime/engine.py (FusedAdam by default, its "
               "buckets and ZeRO stages) over transformers' models",
     .unmodelled = ""},
    {.library = Library::llm_foundry,
     .name = "llm-foundry",
     .tf32 = true,
     .fused_loss = true,
     .low_precision_norm = true,
     .expandable_segments = true,
     .source = "mosaicml/composer v0.32.1 composer/devices/device_gpu.py:41-53 (DeviceGPU "
               "allow_tf32=True by default); mosaicml/llm-foundry v0.21.0 "
               "llmfoundry/models/mpt/configuration_mpt.py (loss_fn defaults to fused_crossentropy: "
               "flash-attn's flash_attn/ops/triton/cross_entropy.py CrossEntropyLoss, one kernel each "
               "way over the logits) and llmfoundry/models/mpt/modeling_mpt.py; "
               "llmfoundry/models/layers/norm.py LPLayerNorm (input and weight cast to the autocast "
               "dtype, F.layer_norm with autocast disabled; norm_type low_precision_layernorm, which "
               "the benchmark script sets: scripts/train/benchmarking/submit_benchmarks.py @v0.3.0); "
               "llmfoundry/utils/config_utils.py TrainConfig expandable_segments: bool = True (from "
               "v0.10.0), which command_utils/train.py writes into PYTORCH_CUDA_ALLOC_CONF",
     .unmodelled = "llm-foundry's MPT model code (its attention implementations) is priced as "
                   "transformers' modeling files; its low-precision LayerNorm and fused "
                   "cross-entropy are priced"},
}};

}  // namespace

constexpr bool in_enum_order() {
  for (std::size_t i = 0; i < kLibraries.size(); ++i)
    if (kLibraries[i].library != EnumTable<Library>::kEntries[i].first) return false;
  return kLibraries.size() == EnumTable<Library>::kEntries.size();
}
static_assert(in_enum_order(), "kLibraries must list every Library in the enum's order");

const LibraryTraits& library_traits(Library l) { return kLibraries[static_cast<std::size_t>(l)]; }

namespace {
constexpr VersionedTraits kVersioned[] = {
    {.library = Library::litgpt,
     .until = 100,  // lit-gpt's setup.py said 0.1.0 from its start to the rename (March 2024)
     .adapters_skip_logit_softcap = true,
     .rms_norm_in_input_dtype = true,
     .lora_qkv_always_padded = true,
     .source = "Lightning-AI/lit-gpt 0.1.0 (setup.py) as of 8641822: lit_gpt/rmsnorm.py RMSNorm ran in the "
               "input's dtype (x * torch.rsqrt(norm_x + eps); the fp32 upcast came with 6178c7cc, "
               "2023-10-24, still 0.1.0: commits after it are priced as this record); lit_gpt/lora.py "
               "LoRAQKVLinear.zero_pad padded with index_copy whichever parts were adapted; no "
               "bitsandbytes pin (requirements-all.txt); no soft-capped model"},
    {.library = Library::litgpt,
     .until = 504,
     .bitsandbytes = 4200,
     .adapters_skip_logit_softcap = true,
     .source = "Lightning-AI/litgpt up to v0.5.4: pyproject.toml pinned bitsandbytes==0.42.0 (extra 'all', from "
               "2bcb2c3e; v0.5.5 moved to >=0.44.0); litgpt/lora.py GPT.forward returned the head's chunks "
               "(lm_head_chunk_size=128 from finetune/lora.py and adapter.py) before final_logit_softcapping "
               "(soft-capped per chunk from 17a58dfa, v0.5.5)"},
    {.library = Library::llm_foundry,
     .until = 901,
     .no_expandable_segments = true,
     .source = "mosaicml/llm-foundry up to v0.9.1: no expandable_segments key before v0.8.0; from v0.8.0 "
               "scripts/train/train.py read it with default False (cfg.pop('expandable_segments', False); "
               "TrainConfig expandable_segments: bool = False at v0.9.0-v0.9.1); True from v0.10.0"},
    {.library = Library::torchtitan,
     .until = 99,  // every 0.0.x release and checkout before v0.1.0
     .kv_expanded = true,
     .compile_leaves_loss_eager = true,
     .source = "pytorch/torchtitan before v0.1.0: the loss ran eager under training.compile (train.py @9dec370 "
               "L136-138, 'compiling loss function causes CUDA errors, turning off for now'; compiled with "
               "the model from bbb1b616, 2025-04-02) and repeat_kv copied K/V (models/llama/model.py @9dec370 "
               "L201-202)"},
    {.library = Library::torchtitan,
     .until = 201,
     .kv_expanded = true,
     .source = "pytorch/torchtitan up to v0.2.1: repeat_kv copied the grouped K/V up to the query heads "
               "before SDPA (models/llama3/model/model.py @v0.2.1 L273-274; SDPA's enable_gqa from v0.2.2, "
               "PR #2259)"},
};
}  // namespace

const VersionedTraits* versioned_traits(const Training& tr) {
  if (tr.library_version == 0) return nullptr;
  const VersionedTraits* found = nullptr;  // the earliest range that holds the release
  for (const VersionedTraits& v : kVersioned)
    if (v.library == tr.library && tr.library_version <= v.until && (!found || v.until < found->until)) found = &v;
  return found;
}

OptimizerImpl library_optimizer_impl(const Training& tr) {
  const LibraryTraits& lib = library_traits(tr.library);
  // torch's AdamW/Adam stepped by torch itself: not DeepSpeed's or Megatron's engine, not offloaded.
  const bool torch_adam = tr.optimizer == Optimizer::adamw || tr.optimizer == Optimizer::adam;
  if (!torch_adam || tr.framework != Framework::pytorch || tr.offload != Offload::none) return OptimizerImpl::framework_default;
  if (lib.optimizer_impl_from_transformers > 0 && tr.transformers < lib.optimizer_impl_from_transformers)
    return OptimizerImpl::framework_default;
  return lib.optimizer_impl;
}

bool has_versioned_traits(Library l) {
  for (const VersionedTraits& v : kVersioned)
    if (v.library == l) return true;
  return false;
}

int bitsandbytes_release(const Training& tr) {
  if (tr.bitsandbytes != 0) return tr.bitsandbytes;
  const VersionedTraits* v = versioned_traits(tr);
  return v != nullptr ? v->bitsandbytes : 0;
}

bool expandable_segments_by_default(const Training& tr) {
  const VersionedTraits* v = versioned_traits(tr);
  return library_traits(tr.library).expandable_segments && !(v != nullptr && v->no_expandable_segments);
}

bool softcaps_logits(const Architecture& a, const Training& tr) {
  if (a.logit_softcap <= 0.0) return false;
  const VersionedTraits* v = versioned_traits(tr);
  return !(v != nullptr && v->adapters_skip_logit_softcap && is_adapter(tr.method));
}

Library library_of(Framework f) {
  switch (f) {
    case Framework::pytorch: return Library::hf_trainer;
    case Framework::deepspeed: return Library::deepspeed;
    case Framework::megatron: return Library::megatron;
  }
  return Library::hf_trainer;
}

namespace {

// Liger's apply functions by model type, with the kernels each turns on by default (liger-kernel
// 0.8.5 monkey_patch.py: rope, rms_norm, swiglu or geglu and fused_linear_cross_entropy default to
// True; DeepSeek-V2/V3 leave rope False, gpt-oss swiglu False for its own experts). Model types of
// the catalogue's families only; MODEL_TYPE_TO_APPLY_LIGER_FN has more (vision models, GLM-4,
// Granite, ...).
struct LigerRow {
  std::string_view model_type;
  LigerKernels kernels;
};
constexpr LigerKernels kLigerAll{true, true, true, true, true};
constexpr LigerKernels kLigerNoRope{true, true, false, true, true};
constexpr LigerKernels kLigerNoGlu{true, true, true, false, true};
constexpr std::array<LigerRow, 16> kLiger{{
    {"llama", kLigerAll},       {"mistral", kLigerAll},       {"mixtral", kLigerAll},
    {"qwen2", kLigerAll},       {"qwen3", kLigerAll},         {"qwen3_moe", kLigerAll},
    {"gemma", kLigerAll},       {"gemma2", kLigerAll},        {"gemma3_text", kLigerAll},
    {"gemma3", kLigerAll},      {"phi3", kLigerAll},          {"olmo2", kLigerAll},
    {"llama4_text", kLigerAll}, {"deepseek_v2", kLigerNoRope}, {"deepseek_v3", kLigerNoRope},
    {"gpt_oss", kLigerNoGlu},
}};

}  // namespace

LigerKernels liger_kernels(const Architecture& a) {
  for (const std::string_view type : {std::string_view(a.family), std::string_view(family_of(a).model_type)})
    for (const LigerRow& row : kLiger)
      if (row.model_type == type) return row.kernels;
  return {};
}

bool runs_transformers_models(Library l) {
  switch (l) {
    case Library::hf_trainer:
    case Library::accelerate:
    case Library::trl:
    case Library::axolotl:
    case Library::deepspeed: return true;
    case Library::litgpt:
    case Library::torchtune:
    case Library::torchtitan:
    case Library::megatron:
    case Library::megatron_deepspeed:
    case Library::llm_foundry: return false;
  }
  return false;
}

Architecture as_built_by(Architecture a, Library l) {
  if (library_traits(l).unties_embeddings) a.tie_embeddings = false;
  return a;
}

double hidden_dropout(const Architecture& a, const Training& tr) {
  if (library_traits(tr.library).model_without_dropout) return 0.0;
  return tr.hidden_dropout.value_or(a.hidden_dropout);
}

double attention_dropout(const Architecture& a, const Training& tr) {
  if (library_traits(tr.library).model_without_dropout) return 0.0;
  return tr.attention_dropout.value_or(a.attention_dropout);
}

OpListVariant op_variant(const Architecture& a, const Training& tr) {
  OpListVariant v = family_of(a).ops;
  const LibraryTraits& lib = library_traits(tr.library);
  const VersionedTraits* release = versioned_traits(tr);
  if (lib.kv_expanded || (release != nullptr && release->kv_expanded)) v.kv_always_repeated = true;
  if (lib.value_view_of_fused_qkv) v.fused_qkv_value_view = true;
  if (lib.one_qkv_lora_dropout) v.one_qkv_lora_dropout = true;
  if (lib.lora_qkv_update_kept) v.lora_qkv_update_kept = true;
  if (release != nullptr && release->lora_qkv_always_padded) v.lora_qkv_always_padded = true;
  if (release != nullptr && release->rms_norm_in_input_dtype) v.rms_norm_in_input_dtype = true;
  if (compile_recomputes_fp8_inputs(tr)) v.recomputes_linear_inputs = true;
  if (lib.loss_in_model_dtype) v.loss_in_model_dtype = true;
  if (lib.logits_kept) v.logits_kept = true;
  if (lib.output_fp32) v.logits_fp32 = true;
  v.loss_chunk_positions = lib.loss_chunk_positions;
  if (lib.output_chunks > 0 && tr.chunked_loss)
    v.loss_chunk_positions = static_cast<int>((tr.seq + lib.output_chunks - 1) / lib.output_chunks);
  else if (lib.output_chunks > 0)
    v.logits_fp32 = true;
  if (lib.fused_loss) v.fused_loss = true;
  if (lib.one_kernel_gelu) v.one_kernel_gelu = true;
  if (tr.liger && tr.framework != Framework::megatron && runs_transformers_models(tr.library)) {
    const LigerKernels k = liger_kernels(a);
    v.fused_norm = k.rms_norm && a.norm == NormKind::rmsnorm;
    v.fused_rotary = k.rope && a.position == PositionKind::rotary;
    v.fused_glu = k.glu && a.mlp == MlpKind::gated;
    v.fused_linear_loss = k.fused_linear_cross_entropy;
  }
  // torch.compile (Inductor) of the model and its loss: one kernel per norm, rotary embedding and
  // gated activation each way (triton_red_fused_..._mean_mul_pow_rsqrt, _cos_mul_neg_sin_...,
  // _mul_silu_silu_backward in the compiled H200 runs' profiles), the cross-entropy as two
  // reductions (_log_softmax_..._prepare_softmax_online forward, _log_softmax_backward_data_..._nll_loss
  // backward: no log-softmax kept), and the casts and saved tensors of OpListVariant::compiled.
  // Liger's kernels, where patched in, stay what they are (compile traces through them).
  if (tr.runs_compiled()) {
    v.compiled = true;
    v.fused_norm = v.fused_norm || a.norm == NormKind::rmsnorm;
    v.fused_rotary = v.fused_rotary || a.position == PositionKind::rotary;
    v.fused_glu = v.fused_glu || a.mlp == MlpKind::gated;
    v.one_kernel_gelu = true;  // a pointwise chain, one kernel each way keeping its input
    v.fused_loss = v.fused_loss || (!v.fused_linear_loss && !(release != nullptr && release->compile_leaves_loss_eager));
    v.loss_compiled_apart = lib.compiles_loss_apart;
  }
  return v;
}

}  // namespace trainplan::model
