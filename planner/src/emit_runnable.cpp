// What the emitters never write, whatever the plan (emit.hpp require_emittable): a config the GPU
// cannot run or runs only emulated, a kernel no emitted launcher runs, and a format the plan's
// training library does not read.
#include <string>

#include "trainplan/core/error.hpp"
#include "trainplan/hardware/gpu.hpp"
#include "trainplan/model/fp8.hpp"
#include "trainplan/model/library.hpp"
#include "trainplan/planner/emit.hpp"

namespace trainplan::planner {
namespace {

// Whether `library` starts its jobs from this format: a DeepSpeed JSON is read by DeepSpeed's
// engine (the Trainer and axolotl pass it on, Megatron-DeepSpeed takes it); an accelerate YAML by
// `accelerate launch` (the Trainer, TRL, axolotl); the torchrun command starts the Trainer's
// script or Megatron-LM's pretrain_gpt.py.
bool reads(Library library, EmitFormat f) {
  switch (library) {
    case Library::hf_trainer:
    case Library::accelerate:
    case Library::trl:
    case Library::deepspeed:  // the Trainer under DeepSpeed's engine, launched any of the three ways
      return true;
    case Library::axolotl: return f != EmitFormat::torchrun;
    case Library::megatron: return f == EmitFormat::torchrun;
    case Library::megatron_deepspeed: return f == EmitFormat::deepspeed;
    case Library::litgpt:
    case Library::torchtune:
    case Library::torchtitan:
    case Library::llm_foundry:
      return false;
  }
  return false;
}

}  // namespace

void require_emittable(EmitFormat f, const model::Training& t, const hardware::GpuSpec& gpu) {
  // bf16 on a V100: an estimate answers it, a launch config would start the slow path.
  if (hardware::emulated_bf16(gpu, t.precision))
    throw FieldError("{precision} " + std::string(to_string(t.precision)) + ": " + gpu.name +
                     " runs bf16 only emulated, without its tensor cores; no launch config is written for "
                     "it (fp16-mixed runs on them)");
  hardware::require_supported(gpu, t.precision, t.attention);
  if (t.attention == Attention::triton)
    throw FieldError("{attention} triton: neither transformers nor Megatron-LM runs the Triton FlashAttention; "
                     "no launch config is written for it (flash runs FlashAttention-2)");
  if (t.checkpointing == Checkpointing::selective_op)
    throw FieldError("{checkpointing} selective-op: torchtitan's per-op policy; neither the Trainer, "
                     "accelerate, DeepSpeed nor Megatron-LM has it, so no launch config is written for it "
                     "(selective or full run everywhere)");
  if (t.cp > 1 && t.library != Library::megatron)
    throw FieldError("{cp} " + std::to_string(t.cp) + ": neither DeepSpeed, accelerate nor the Trainer's script splits " +
                     "sequences over ranks; the torchrun command of {library} megatron does " +
                     "(--context-parallel-size)");
  // Megatron-LM's flags name Transformer Engine's recipes; the Trainer's and DeepSpeed's configs
  // written here carry no FP8 recipe (accelerate's fp8 backend needs its own recipe kwargs).
  if (t.fp8 != Fp8Recipe::none && !(t.framework == Framework::megatron && model::fp8_traits(t.fp8).transformer_engine))
    throw FieldError("{fp8} " + std::string(to_string(t.fp8)) +
                     ": no launch config written here sets an FP8 recipe but the torchrun command of {framework} "
                     "megatron with a Transformer Engine recipe (--fp8-format, --fp8-recipe)");
  // accelerate's FullyShardedDataParallelPlugin takes a bool under FSDP2 (an int raises), the
  // Trainer's fsdp_config goes through it, and Megatron-LM's --use-torch-fsdp2 passes none.
  if (t.reshards_to_group())
    throw FieldError("{reshard-after-forward} " + std::to_string(t.fsdp_reshard_to) +
                     ": only fully_shard(module, reshard_after_forward=N) itself (or composer's FSDP2Config) "
                     "takes a group size; accelerate, the Trainer and Megatron-LM take a bool, so no launch config "
                     "is written for it (plan without it for one)");
  // The Trainer steps GaLore layer-wise inside backward (optim galore_adamw_layerwise).
  if (t.optimizer_in_backward && t.optimizer != Optimizer::galore_adamw)
    throw FieldError("{optimizer-in-backward}: torchtune's optimizer_in_bwd; neither the Trainer, DeepSpeed, "
                     "accelerate nor Megatron-LM steps the optimizer inside backward, and no torchtune config is "
                     "written here");
  // Megatron-LM's pretrain_gpt.py trains next-token prediction only.
  if (t.objective != Objective::sft && t.framework == Framework::megatron)
    throw FieldError("{objective} " + std::string(to_string(t.objective)) +
                     ": Megatron-LM's pretrain_gpt.py has no preference loss; the DeepSpeed, accelerate and "
                     "torchrun configs of the Hugging Face Trainer (TRL) are written for it");
  if (!reads(t.library, f))
    throw FieldError("{library} " + std::string(to_string(t.library)) + ": it does not start a job from the " +
                     std::string(to_string(f)) + " launch config; --emit writes DeepSpeed JSON, accelerate YAML " +
                     "and torchrun commands for the Hugging Face Trainer, DeepSpeed and Megatron-LM");
}

}  // namespace trainplan::planner
