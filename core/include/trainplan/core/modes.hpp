#pragma once
// Every training mode the planner knows, each an enum class with its one string table.

#include <array>
#include <string_view>
#include <utility>

#include "trainplan/core/enum_table.hpp"

namespace trainplan {

enum class Method { full, lora, qlora };
// What the loss asks of each micro-batch. sft: one sequence per sample. The preference objectives
// train on pairs: the chosen and the rejected completion of each prompt run through the model
// together, one batch of 2 x micro-batch sequences (TRL's DPOTrainer concatenates them,
// trl/trainer/dpo_trainer.py DataCollatorForPreference; ORPOTrainer and CPOTrainer
// concatenated_forward). dpo (Rafailov et al. 2023, arXiv:2305.18290; IPO, hinge and the other
// loss_types of the DPOTrainer alike) also needs a frozen reference model's log-probabilities: one
// more forward of both sequences; orpo (Hong et al. 2024, arXiv:2403.07691) and simpo (Meng et al.
// 2024, arXiv:2405.14734; TRL's CPO) need none.
enum class Objective { sft, dpo, orpo, simpo };
enum class Precision { fp32, fp16_mixed, bf16_mixed, fp16_true, bf16_true };
// paged_adamw: bitsandbytes' PagedAdamW (32-bit), two fp32 moments in paged memory whatever the
// parameters' dtype; lion: Chen et al. 2023 (arXiv:2302.06675), one momentum per parameter; lion_8bit and
// paged_lion_8bit are bitsandbytes' Lion8bit and PagedLion8bit (1-byte momentum); lamb: You et al.
// 2019 (arXiv:1904.00962), Adam's two moments and a per-layer trust ratio.
enum class Optimizer {
  adamw,
  adam,
  sgd,
  sgd_momentum,
  adamw_8bit,
  paged_adamw_8bit,
  paged_adamw,
  adafactor,
  lion,
  lion_8bit,
  paged_lion_8bit,
  lamb,
  galore_adamw
};
enum class Strategy { single, ddp, zero1, zero2, zero3, fsdp_full, fsdp_grad_op, fsdp_hybrid };
// full_offload: full checkpointing with the checkpoints kept in host memory (ZeRO-R's Pa+cpu,
// Rajbhandari et al. 2019, arXiv:1910.02054, Sec. 6.1; DeepSpeed's cpu_checkpointing).
// selective_op: torchtitan's per-op selective activation checkpointing ([activation_checkpoint]
// mode "selective", selective_ac_option "op"): the block's forward is replayed in backward except
// the ops whose outputs its policy saves (model/block_ops.hpp op_sac_saved).
enum class Checkpointing { none, selective, full, full_offload, selective_op };
// flash: FlashAttention-2 (or the fused kernel SDPA dispatches to); triton: the Triton
// FlashAttention of flash-attn's flash_attn_triton.py (llm-foundry's attn_impl "triton" of 2023),
// the same memory as flash at its own, lower rate; sdpa: torch's dispatch; eager: the model's ops.
enum class Attention { flash, sdpa, eager, triton };
enum class Offload { none, optimizer, optimizer_params };
// How context-parallel ranks exchange keys and values: ring passes each rank's K/V chunk round the
// ranks, behind the attention blocks (Liu et al. 2023, Ring Attention; Megatron-Core/TE "p2p");
// all_gather gathers K/V before attention and reduce-scatters their gradients (Llama 3, Dubey et
// al. 2024 Sec. 3.3.2; torch's context_parallel "allgather"); all_to_all re-splits Q, K, V and the
// output by heads instead of tokens (DeepSpeed-Ulysses, Jacobs et al. 2023; TE "a2a").
enum class CpComm { ring, all_gather, all_to_all };
// Megatron-LM's names for them (megatron/training/arguments.py --cp-comm-type; its fourth,
// "a2a+p2p", the hierarchical exchange, is not modelled).
inline constexpr std::array<std::pair<CpComm, std::string_view>, 3> kMegatronCpCommTypes{
    {{CpComm::ring, "p2p"}, {CpComm::all_gather, "allgather"}, {CpComm::all_to_all, "a2a"}}};
// FP8 training: the recipe that quantizes the block's linear layers (model/fp8.hpp says what each
// runs and keeps): Transformer Engine's delayed and current per-tensor scaling, MXFP8 (32-element
// E8M0 blocks, Blackwell) and DeepSeek-V3-style blockwise scaling (1x128 activations, 128x128
// weights); torchao's float8 training with per-tensor (tensorwise) or per-row (rowwise) scales, and
// rowwise with the weight gradient kept in high precision.
enum class Fp8Recipe {
  none,
  te_delayed,
  te_current,
  te_mxfp8,
  te_blockwise,
  torchao_tensorwise,
  torchao_rowwise,
  torchao_rowwise_gw_hp
};
enum class Quant { nf4, nf4_dq, fp4, int8 };
enum class FsdpWrap { block, none };
// The software that puts a QLoRA model's linears in 4 bits, where it changes the memory
// (model/model_states.hpp qlora_stack_traits): transformers' bitsandbytes quantizer under PEFT, or
// lightning Fabric's BitsandbytesPrecision (litgpt). The bitsandbytes release is a separate input
// (Training::bitsandbytes).
enum class QloraStack { hf_peft, lightning };
enum class Framework { pytorch, deepspeed, megatron };
// The training library that runs the job (model/library.hpp: what each one changes and why).
enum class Library {
  hf_trainer,
  accelerate,
  trl,
  litgpt,
  torchtune,
  axolotl,
  torchtitan,
  megatron,
  megatron_deepspeed,
  deepspeed,
  llm_foundry
};
// How the optimizer step runs (Adam-family, SGD): `default` is what the framework does unasked:
// torch.optim on CUDA picks foreach (torch/optim/optimizer.py _default_to_fused_or_foreach),
// DeepSpeed its FusedAdam (or DeepSpeedCPUAdam with an offloaded optimizer), Megatron apex/TE fused
// Adam. foreach: torch's multi-tensor ops, one list op per formula step; fused: torch's
// AdamW(fused=True) single kernel; for-loop: torch's per-parameter path (foreach=False).
enum class OptimizerImpl { framework_default, foreach, fused, for_loop, deepspeed_fused, deepspeed_cpu };

template <>
struct EnumTable<Method> {
  static constexpr std::string_view kWhat = "method";
  static constexpr std::array kEntries{std::pair{Method::full, std::string_view{"full"}},
                                       std::pair{Method::lora, std::string_view{"lora"}},
                                       std::pair{Method::qlora, std::string_view{"qlora"}}};
};
template <>
struct EnumTable<Objective> {
  static constexpr std::string_view kWhat = "objective";
  static constexpr std::array kEntries{std::pair{Objective::sft, std::string_view{"sft"}},
                                       std::pair{Objective::dpo, std::string_view{"dpo"}},
                                       std::pair{Objective::orpo, std::string_view{"orpo"}},
                                       std::pair{Objective::simpo, std::string_view{"simpo"}}};
};
template <>
struct EnumTable<Precision> {
  static constexpr std::string_view kWhat = "precision";
  static constexpr std::array kEntries{
      std::pair{Precision::fp32, std::string_view{"fp32"}},
      std::pair{Precision::fp16_mixed, std::string_view{"fp16-mixed"}},
      std::pair{Precision::bf16_mixed, std::string_view{"bf16-mixed"}},
      std::pair{Precision::fp16_true, std::string_view{"fp16-true"}},
      std::pair{Precision::bf16_true, std::string_view{"bf16-true"}}};
};
template <>
struct EnumTable<Optimizer> {
  static constexpr std::string_view kWhat = "optimizer";
  static constexpr std::array kEntries{
      std::pair{Optimizer::adamw, std::string_view{"adamw"}},
      std::pair{Optimizer::adam, std::string_view{"adam"}},
      std::pair{Optimizer::sgd, std::string_view{"sgd"}},
      std::pair{Optimizer::sgd_momentum, std::string_view{"sgd-momentum"}},
      std::pair{Optimizer::adamw_8bit, std::string_view{"adamw-8bit"}},
      std::pair{Optimizer::paged_adamw_8bit, std::string_view{"paged-adamw-8bit"}},
      std::pair{Optimizer::paged_adamw, std::string_view{"paged-adamw"}},
      std::pair{Optimizer::adafactor, std::string_view{"adafactor"}},
      std::pair{Optimizer::lion, std::string_view{"lion"}},
      std::pair{Optimizer::lion_8bit, std::string_view{"lion-8bit"}},
      std::pair{Optimizer::paged_lion_8bit, std::string_view{"paged-lion-8bit"}},
      std::pair{Optimizer::lamb, std::string_view{"lamb"}},
      std::pair{Optimizer::galore_adamw, std::string_view{"galore-adamw"}}};
};
template <>
struct EnumTable<Strategy> {
  static constexpr std::string_view kWhat = "strategy";
  static constexpr std::array kEntries{
      std::pair{Strategy::single, std::string_view{"single"}},
      std::pair{Strategy::ddp, std::string_view{"ddp"}},
      std::pair{Strategy::zero1, std::string_view{"zero1"}},
      std::pair{Strategy::zero2, std::string_view{"zero2"}},
      std::pair{Strategy::zero3, std::string_view{"zero3"}},
      std::pair{Strategy::fsdp_full, std::string_view{"fsdp-full"}},
      std::pair{Strategy::fsdp_grad_op, std::string_view{"fsdp-grad-op"}},
      std::pair{Strategy::fsdp_hybrid, std::string_view{"fsdp-hybrid"}}};
};
template <>
struct EnumTable<Checkpointing> {
  static constexpr std::string_view kWhat = "checkpointing";
  static constexpr std::array kEntries{
      std::pair{Checkpointing::none, std::string_view{"none"}},
      std::pair{Checkpointing::selective, std::string_view{"selective"}},
      std::pair{Checkpointing::full, std::string_view{"full"}},
      std::pair{Checkpointing::full_offload, std::string_view{"full-offload"}},
      std::pair{Checkpointing::selective_op, std::string_view{"selective-op"}}};
};
template <>
struct EnumTable<Attention> {
  static constexpr std::string_view kWhat = "attention";
  static constexpr std::array kEntries{std::pair{Attention::flash, std::string_view{"flash"}},
                                       std::pair{Attention::sdpa, std::string_view{"sdpa"}},
                                       std::pair{Attention::eager, std::string_view{"eager"}},
                                       std::pair{Attention::triton, std::string_view{"triton"}}};
};
template <>
struct EnumTable<CpComm> {
  static constexpr std::string_view kWhat = "context-parallel exchange";
  static constexpr std::array kEntries{std::pair{CpComm::ring, std::string_view{"ring"}},
                                       std::pair{CpComm::all_gather, std::string_view{"all-gather"}},
                                       std::pair{CpComm::all_to_all, std::string_view{"all-to-all"}}};
};
template <>
struct EnumTable<Fp8Recipe> {
  static constexpr std::string_view kWhat = "FP8 recipe";
  static constexpr std::array kEntries{
      std::pair{Fp8Recipe::none, std::string_view{"none"}},
      std::pair{Fp8Recipe::te_delayed, std::string_view{"te-delayed"}},
      std::pair{Fp8Recipe::te_current, std::string_view{"te-current"}},
      std::pair{Fp8Recipe::te_mxfp8, std::string_view{"te-mxfp8"}},
      std::pair{Fp8Recipe::te_blockwise, std::string_view{"te-blockwise"}},
      std::pair{Fp8Recipe::torchao_tensorwise, std::string_view{"torchao-tensorwise"}},
      std::pair{Fp8Recipe::torchao_rowwise, std::string_view{"torchao-rowwise"}},
      std::pair{Fp8Recipe::torchao_rowwise_gw_hp, std::string_view{"torchao-rowwise-gw-hp"}}};
};
template <>
struct EnumTable<Offload> {
  static constexpr std::string_view kWhat = "offload";
  static constexpr std::array kEntries{
      std::pair{Offload::none, std::string_view{"none"}},
      std::pair{Offload::optimizer, std::string_view{"optimizer"}},
      std::pair{Offload::optimizer_params, std::string_view{"optimizer+params"}}};
};
template <>
struct EnumTable<Quant> {
  static constexpr std::string_view kWhat = "quantization";
  static constexpr std::array kEntries{std::pair{Quant::nf4, std::string_view{"nf4"}},
                                       std::pair{Quant::nf4_dq, std::string_view{"nf4-dq"}},
                                       std::pair{Quant::fp4, std::string_view{"fp4"}},
                                       std::pair{Quant::int8, std::string_view{"int8"}}};
};
template <>
struct EnumTable<FsdpWrap> {
  static constexpr std::string_view kWhat = "FSDP wrap policy";
  static constexpr std::array kEntries{std::pair{FsdpWrap::block, std::string_view{"block"}},
                                       std::pair{FsdpWrap::none, std::string_view{"none"}}};
};
template <>
struct EnumTable<QloraStack> {
  static constexpr std::string_view kWhat = "QLoRA stack";
  static constexpr std::array kEntries{std::pair{QloraStack::hf_peft, std::string_view{"hf-peft"}},
                                       std::pair{QloraStack::lightning, std::string_view{"lightning"}}};
};
template <>
struct EnumTable<OptimizerImpl> {
  static constexpr std::string_view kWhat = "optimizer implementation";
  static constexpr std::array kEntries{
      std::pair{OptimizerImpl::framework_default, std::string_view{"default"}},
      std::pair{OptimizerImpl::foreach, std::string_view{"foreach"}},
      std::pair{OptimizerImpl::fused, std::string_view{"fused"}},
      std::pair{OptimizerImpl::for_loop, std::string_view{"for-loop"}},
      std::pair{OptimizerImpl::deepspeed_fused, std::string_view{"deepspeed-fused"}},
      std::pair{OptimizerImpl::deepspeed_cpu, std::string_view{"deepspeed-cpu"}}};
};
template <>
struct EnumTable<Framework> {
  static constexpr std::string_view kWhat = "framework";
  static constexpr std::array kEntries{
      std::pair{Framework::pytorch, std::string_view{"pytorch"}},
      std::pair{Framework::deepspeed, std::string_view{"deepspeed"}},
      std::pair{Framework::megatron, std::string_view{"megatron"}}};
};
template <>
struct EnumTable<Library> {
  static constexpr std::string_view kWhat = "library";
  static constexpr std::array kEntries{
      std::pair{Library::hf_trainer, std::string_view{"hf-trainer"}},
      std::pair{Library::accelerate, std::string_view{"accelerate"}},
      std::pair{Library::trl, std::string_view{"trl"}},
      std::pair{Library::litgpt, std::string_view{"litgpt"}},
      std::pair{Library::torchtune, std::string_view{"torchtune"}},
      std::pair{Library::axolotl, std::string_view{"axolotl"}},
      std::pair{Library::torchtitan, std::string_view{"torchtitan"}},
      std::pair{Library::megatron, std::string_view{"megatron"}},
      std::pair{Library::megatron_deepspeed, std::string_view{"megatron-deepspeed"}},
      std::pair{Library::deepspeed, std::string_view{"deepspeed"}},
      std::pair{Library::llm_foundry, std::string_view{"llm-foundry"}}};
};

// Properties of the modes, one exhaustive switch each.
// Whether backward replays every block's forward from its checkpointed input.
[[nodiscard]] constexpr bool recomputes_blocks(Checkpointing c) {
  switch (c) {
    case Checkpointing::full:
    case Checkpointing::full_offload:
    case Checkpointing::selective_op: return true;
    case Checkpointing::none:
    case Checkpointing::selective: return false;
  }
  return false;
}

[[nodiscard]] constexpr bool is_mixed(Precision p) {
  switch (p) {
    case Precision::fp16_mixed:
    case Precision::bf16_mixed: return true;
    case Precision::fp32:
    case Precision::fp16_true:
    case Precision::bf16_true: return false;
  }
  return false;
}

// Bytes of the dtype the matrix multiplies run in.
[[nodiscard]] constexpr double compute_bytes(Precision p) {
  switch (p) {
    case Precision::fp32: return 4.0;
    case Precision::fp16_mixed:
    case Precision::bf16_mixed:
    case Precision::fp16_true:
    case Precision::bf16_true: return 2.0;
  }
  return 4.0;
}

// Bytes of the stored (master) parameters: fp32 unless the whole model is 16-bit.
[[nodiscard]] constexpr double param_bytes(Precision p) {
  switch (p) {
    case Precision::fp32:
    case Precision::fp16_mixed:
    case Precision::bf16_mixed: return 4.0;
    case Precision::fp16_true:
    case Precision::bf16_true: return 2.0;
  }
  return 4.0;
}

[[nodiscard]] constexpr bool shards_parameters(Strategy s) {
  switch (s) {
    case Strategy::zero3:
    case Strategy::fsdp_full:
    case Strategy::fsdp_hybrid: return true;
    case Strategy::single:
    case Strategy::ddp:
    case Strategy::zero1:
    case Strategy::zero2:
    case Strategy::fsdp_grad_op: return false;
  }
  return false;
}

[[nodiscard]] constexpr bool shards_gradients(Strategy s) {
  switch (s) {
    case Strategy::zero2:
    case Strategy::zero3:
    case Strategy::fsdp_full:
    case Strategy::fsdp_grad_op:
    case Strategy::fsdp_hybrid: return true;
    case Strategy::single:
    case Strategy::ddp:
    case Strategy::zero1: return false;
  }
  return false;
}

[[nodiscard]] constexpr bool shards_optimizer(Strategy s) {
  switch (s) {
    case Strategy::single:
    case Strategy::ddp: return false;
    case Strategy::zero1:
    case Strategy::zero2:
    case Strategy::zero3:
    case Strategy::fsdp_full:
    case Strategy::fsdp_grad_op:
    case Strategy::fsdp_hybrid: return true;
  }
  return false;
}

// DeepSpeed's ZeRO stages 1-3 (not PyTorch FSDP's variants).
[[nodiscard]] constexpr bool is_zero(Strategy s) {
  return s == Strategy::zero1 || s == Strategy::zero2 || s == Strategy::zero3;
}

[[nodiscard]] constexpr bool is_fsdp(Strategy s) {
  switch (s) {
    case Strategy::fsdp_full:
    case Strategy::fsdp_grad_op:
    case Strategy::fsdp_hybrid: return true;
    case Strategy::single:
    case Strategy::ddp:
    case Strategy::zero1:
    case Strategy::zero2:
    case Strategy::zero3: return false;
  }
  return false;
}

// The name people use for a strategy, shared by every front end and the planner's explanations.
[[nodiscard]] constexpr std::string_view display_name(Strategy s) {
  switch (s) {
    case Strategy::single: return "single GPU";
    case Strategy::ddp: return "DDP";
    case Strategy::zero1: return "ZeRO-1";
    case Strategy::zero2: return "ZeRO-2";
    case Strategy::zero3: return "ZeRO-3";
    case Strategy::fsdp_full: return "FSDP full-shard";
    case Strategy::fsdp_grad_op: return "FSDP grad-op";
    case Strategy::fsdp_hybrid: return "FSDP hybrid-shard";
  }
  return "?";
}

// The implementation that runs: `default` resolved for the framework and the offload.
[[nodiscard]] constexpr OptimizerImpl resolved_optimizer_impl(OptimizerImpl impl, Framework f,
                                                              Offload o) {
  if (impl != OptimizerImpl::framework_default) return impl;
  if (o != Offload::none) return OptimizerImpl::deepspeed_cpu;
  switch (f) {
    case Framework::pytorch: return OptimizerImpl::foreach;
    case Framework::deepspeed: return OptimizerImpl::deepspeed_fused;
    case Framework::megatron: return OptimizerImpl::fused;
  }
  return OptimizerImpl::foreach;
}

// Whether an optimizer implementation can run with this offload: DeepSpeed's FusedAdam without,
// its CPU Adam with; torch's and `default` follow the offload.
[[nodiscard]] constexpr bool optimizer_impl_allows(OptimizerImpl impl, Offload o) {
  switch (impl) {
    case OptimizerImpl::framework_default: return true;
    case OptimizerImpl::deepspeed_cpu: return o != Offload::none;
    // torch's optimizers step wherever the states are: on the host under FSDP's CPU offload
    // (fused=True has CPU kernels since torch 2.4, torch/optim/adamw.py).
    case OptimizerImpl::foreach:
    case OptimizerImpl::fused:
    case OptimizerImpl::for_loop: return true;
    case OptimizerImpl::deepspeed_fused: return o == Offload::none;
  }
  return true;
}

// Sequences each sample runs through the model: 2 for a preference pair.
[[nodiscard]] constexpr int sequences_per_sample(Objective o) { return o == Objective::sft ? 1 : 2; }
// Whether the loss compares against a frozen reference model's log-probabilities.
[[nodiscard]] constexpr bool needs_reference(Objective o) { return o == Objective::dpo; }
[[nodiscard]] constexpr bool is_quantized(Method m) { return m == Method::qlora; }
[[nodiscard]] constexpr bool is_adapter(Method m) { return m != Method::full; }

}  // namespace trainplan
