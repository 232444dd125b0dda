// The script-side notes every launch-config emitter adds (emit.cpp): what the training script
// itself must do beyond the launcher's configuration.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "emit_optimizer.hpp"
#include "trainplan/model/partial.hpp"

namespace trainplan::planner::emit_detail {

bool is_fp16(Precision p) { return p == Precision::fp16_mixed || p == Precision::fp16_true; }
bool is_bf16(Precision p) { return p == Precision::bf16_mixed || p == Precision::bf16_true; }
bool is_pure_16bit(Precision p) { return p == Precision::fp16_true || p == Precision::bf16_true; }

void note_script_changes(const model::Training& t, std::vector<std::string>& notes) {
  if (t.checkpointing == Checkpointing::full_offload)
    notes.push_back(
        "checkpoints on the host: the checkpointed blocks run under "
        "torch.autograd.graph.save_on_cpu(pin_memory=True) (all they save is their inputs; keep "
        "the head outside it)");
  if (t.method != Method::full)
    notes.push_back(fmt::format("LoRA rank {} alpha {} on {}: configure PEFT in the training script",
                                t.lora.rank, t.lora.alpha, fmt::join(t.lora.targets, ",")));
  if (model::trains_subset(t))
    notes.push_back(fmt::format("partial fine-tuning ({}): set requires_grad=False on every other parameter in "
                                "the training script, the trained ones kept in fp32 under mixed precision",
                                model::trained_subset_text(t.partial)));
  if (t.method == Method::qlora)
    notes.push_back(fmt::format(
        "QLoRA: load the base model with BitsAndBytesConfig(load_in_4bit=True, "
        "bnb_4bit_quant_type='{}', bnb_4bit_use_double_quant={})",
        t.quant == Quant::fp4 ? "fp4" : "nf4", t.quant == Quant::nf4_dq ? "True" : "False"));
  if (is_pure_16bit(t.precision))
    notes.push_back(fmt::format("{}: load the model in torch.{} (no fp32 master weights)",
                                to_string(t.precision), is_bf16(t.precision) ? "bfloat16" : "float16"));
  if (t.optimizer == Optimizer::galore_adamw)
    notes.push_back("GaLore: TrainingArguments(optim_target_modules=['attn', 'mlp']) in the script (the Trainer "
                    "requires target modules for GaLore)");
  if (t.liger && t.framework != Framework::megatron)
    notes.push_back("Liger: TrainingArguments(use_liger_kernel=True), with the liger-kernel package installed");
  if (t.runs_compiled())
    notes.push_back("torch.compile: TrainingArguments(torch_compile=True) or accelerate's dynamo_config (Inductor, "
                    "the default mode)");
  // TRL's preference trainers take TrainingArguments' fields through their configs.
  if (t.objective != Objective::sft)
    notes.push_back(fmt::format(
        "{}: train with TRL's {} (its config subclasses TrainingArguments; per_device_train_batch_size counts "
        "pairs){}",
        to_string(t.objective),
        t.objective == Objective::dpo ? "DPOTrainer" : (t.objective == Objective::orpo ? "ORPOTrainer" : "CPOTrainer, loss_type='simpo'"),
        t.reference_precomputed && t.objective == Objective::dpo ? ", precompute_ref_log_probs=True" : ""));
}

}  // namespace trainplan::planner::emit_detail
