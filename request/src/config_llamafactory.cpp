// LLaMA-Factory YAML (`llamafactory-cli train FILE`, examples/train_*/*.yaml). Key meanings and
// defaults: hiyouga/LLaMA-Factory, src/llamafactory/hparams/finetuning_args.py (finetuning_type
// lora|freeze|full, default lora; lora_rank 8; lora_alpha default lora_rank x 2; lora_dropout 0.0;
// lora_target "all" = every linear layer; pure_bf16 = bf16 without autocast), model_args.py
// (quantization_bit 4|8 on the fly, quantization_method bitsandbytes by default, quantization_type
// nf4, double_quantization true; disable_gradient_checkpointing false: checkpointing is on unless
// disabled; flash_attn auto|disabled|sdpa|fa2) and data_args.py (cutoff_len). The training keys
// are the Hugging Face Trainer's (per_device_train_batch_size, gradient_accumulation_steps,
// bf16/fp16, optim, deepspeed).

#include <string>

#include "config_reader.hpp"

namespace trainplan::request::config {
namespace {

// finetuning_type freeze (model/adapter.py _setup_freeze_tuning, at ff6d4d12): the last
// freeze_trainable_layers layers train (default 2; negative: the first ones; with use_llama_pro N
// layers spread evenly, the last of each of N groups), of them the modules freeze_trainable_modules
// names ("all" by default), and the freeze_extra_modules outside the blocks; LLaMA-Factory loads the
// model in the compute dtype and upcasts only what trains to fp32.
void read_freeze(const Json& j, Reader& r) {
  r.set("method", "full", "finetuning_type", j.at("finetuning_type"));
  const std::int64_t n = r.integer(j, "freeze_trainable_layers", "", "trainable", -4096).value_or(2);
  const bool pro = r.boolean(j, "use_llama_pro", "", "trainable").value_or(false);
  if (n == 0 || (pro && n < 0))
    r.fail("freeze_trainable_layers", j.at("freeze_trainable_layers"),
           pro ? "use_llama_pro needs a positive count of layers" : "trains no layer");
  std::string spec = (pro ? "spread:" : n > 0 ? "last:" : "first:") + std::to_string(n > 0 ? n : -n);
  const std::string modules = r.string_list(j, "freeze_trainable_modules", "", "trainable").value_or("all");
  std::size_t pos = 0;
  while (pos <= modules.size()) {
    const std::size_t comma = std::min(modules.find(',', pos), modules.size());
    const std::string m = modules.substr(pos, comma - pos);
    pos = comma + 1;
    if (m == "all" || m == "self_attn" || m == "mlp" || m == "block_sparse_moe")
      spec += m == "all" ? "" : m == "self_attn" ? ",attention" : ",mlp";
    else if (m.ends_with("norm"))
      spec += ",norms";
    else
      r.fail("freeze_trainable_modules", j.at("freeze_trainable_modules"),
             "module '" + m + "' is not one trainplan knows in a block (all, self_attn, mlp, a *norm)");
  }
  const std::string extra = r.string_list(j, "freeze_extra_modules", "", "trainable").value_or("");
  pos = 0;
  while (!extra.empty() && pos <= extra.size()) {
    const std::size_t comma = std::min(extra.find(',', pos), extra.size());
    const std::string m = extra.substr(pos, comma - pos);
    pos = comma + 1;
    if (m == "embed_tokens" || m == "lm_head")
      spec += m == "embed_tokens" ? ",embedding" : ",head";
    else if (m == "norm")
      r.warn("freeze_extra_modules norm: the final norm's weights that train are not counted");
    else
      r.fail("freeze_extra_modules", j.at("freeze_extra_modules"),
             "module '" + m + "' is not one trainplan knows outside the blocks (embed_tokens, lm_head, norm)");
  }
  r.set("trainable", spec, pro ? "freeze_trainable_layers with use_llama_pro" : "freeze_trainable_layers",
        std::to_string(n));
  // LLaMA-Factory checkpoints only the layers with trained weights (model_utils/checkpointing.py
  // get_custom_gradient_checkpointing_func).
  r.set("checkpoint-trained-only", "true", "finetuning_type", j.at("finetuning_type"));
}

void read_method(const Json& j, Reader& r) {
  const std::string type = r.string(j, "finetuning_type", "", "method").value_or("lora");
  const bool given = j.contains("finetuning_type");
  const std::string source = given ? "finetuning_type" : "(no finetuning_type: LLaMA-Factory's default, lora)";
  if (type != "lora" && type != "full" && type != "freeze")
    r.fail("finetuning_type", j.at("finetuning_type"), "must be lora, freeze or full");
  const auto bits = r.integer(j, "quantization_bit", "", "quant", 1);
  if (bits && *bits != 4 && *bits != 8)
    r.fail("quantization_bit", j.at("quantization_bit"),
           "trainplan models bitsandbytes' 4- and 8-bit quantization only");
  if (bits && type != "lora")
    r.fail("quantization_bit", j.at("quantization_bit"), "quantizes the frozen base of LoRA only");
  if (type == "freeze") {
    read_freeze(j, r);
    return;
  }
  const std::string method = r.string(j, "quantization_method", "", "quant").value_or("bitsandbytes");
  if (bits && method != "bitsandbytes" && method != "bnb")
    r.warn("quantization_method = " + method + ": priced as bitsandbytes' " + std::to_string(*bits) + "-bit");
  r.set("method", bits ? "qlora" : type, bits ? "quantization_bit" : source,
        bits ? shown(j.at("quantization_bit")) : (given ? shown(j.at("finetuning_type")) : ""));
  if (bits) {
    const std::string qtype = r.string(j, "quantization_type", "", "quant").value_or("nf4");
    const bool dq = r.boolean(j, "double_quantization", "", "quant").value_or(true);
    if (qtype != "nf4" && qtype != "fp4") r.fail("quantization_type", j.at("quantization_type"), "must be nf4 or fp4");
    r.set("quant", *bits == 8 ? "int8" : qtype == "fp4" ? "fp4" : (dq ? "nf4-dq" : "nf4"),
          "quantization_bit (quantization_type " + qtype + ", double_quantization " + (dq ? "true" : "false") + ")",
          "");
  }
  if (type != "lora") return;
  const std::int64_t rank = r.integer(j, "lora_rank", "", "lora-rank", 1).value_or(8);
  r.set("lora-rank", std::to_string(rank), j.contains("lora_rank") ? "lora_rank" : "(LLaMA-Factory's default)",
        j.contains("lora_rank") ? shown(j.at("lora_rank")) : "");
  if (const auto a = r.number(j, "lora_alpha", "", "lora-alpha"))
    r.set("lora-alpha", j.at("lora_alpha").dump(), "lora_alpha", j.at("lora_alpha"));
  else
    r.set("lora-alpha", std::to_string(2 * rank), "(no lora_alpha: LLaMA-Factory's default, lora_rank x 2)", "");
  const double dropout = r.number(j, "lora_dropout", "", "lora-dropout").value_or(0.0);
  if (dropout < 0 || dropout >= 1) r.fail("lora_dropout", j.at("lora_dropout"), "must be in [0, 1)");
  r.set("lora-dropout", j.contains("lora_dropout") ? j.at("lora_dropout").dump() : "0.0",
        j.contains("lora_dropout") ? "lora_dropout" : "(LLaMA-Factory's default)", "");
  const std::string targets = r.string(j, "lora_target", "", "lora-targets").value_or("all");
  r.set("lora-targets", targets == "all" ? "all-linear" : targets,
        j.contains("lora_target") ? "lora_target" : "(no lora_target: LLaMA-Factory's default, all)",
        j.contains("lora_target") ? shown(j.at("lora_target")) : "");
}

// GaLore (hparams/finetuning_args.py GaloreArguments and train/trainer_utils.py
// _create_galore_optimizer, at ff6d4d12): galore_torch's GaLoreAdamW on every linear but the head
// (galore_target all), rank galore_rank (default 16); galore_layerwise steps each parameter from
// its own hook in backward.
void read_llamafactory_galore(const Json& j, Reader& r) {
  if (!r.boolean(j, "use_galore", "", "optimizer").value_or(false)) return;
  r.set("optimizer", "galore-adamw", "use_galore", j.at("use_galore"));
  if (j.contains("galore_rank"))
    r.set_integer(j, "galore_rank", "", "galore-rank", 1);
  else
    r.set("galore-rank", "16", "(no galore_rank: LLaMA-Factory's default)", "");
  if (r.boolean(j, "galore_layerwise", "", "optimizer-in-backward").value_or(false))
    r.set("optimizer-in-backward", "true", "galore_layerwise", j.at("galore_layerwise"));
  const std::string target = r.string(j, "galore_target", "", "").value_or("all");
  if (target != "all")
    r.warn("galore_target " + target + ": GaLore on these modules only is not modelled; priced on every block linear");
  if (j.contains("optim") && j.at("optim") != "adamw_torch")
    r.warn("optim " + shown(j.at("optim")) + " with use_galore: LLaMA-Factory's GaLore for it (8-bit AdamW, "
           "Adafactor) is priced as GaLore's AdamW");
}

void read_training(const Json& j, Reader& r) {
  r.set_integer(j, "per_device_train_batch_size", "", "micro-batch", 1);
  r.set_integer(j, "gradient_accumulation_steps", "", "grad-accum", 1);
  r.set_integer(j, "cutoff_len", "", "seq", 1);
  const bool pure = r.boolean(j, "pure_bf16", "", "precision").value_or(false);
  const bool bf16 = r.boolean(j, "bf16", "", "precision").value_or(false);
  const bool fp16 = r.boolean(j, "fp16", "", "precision").value_or(false);
  if (pure)
    r.set("precision", "bf16-true", "pure_bf16", true);
  else if (bf16 && fp16)
    r.fail("bf16 and fp16 are both true");
  else if (bf16 || fp16)
    r.set("precision", bf16 ? "bf16-mixed" : "fp16-mixed", bf16 ? "bf16" : "fp16", true);
  const bool off = r.boolean(j, "disable_gradient_checkpointing", "", "checkpointing").value_or(false);
  r.set("checkpointing", off ? "none" : "full",
        j.contains("disable_gradient_checkpointing")
            ? "disable_gradient_checkpointing"
            : "(no disable_gradient_checkpointing: LLaMA-Factory checkpoints by default)",
        j.contains("disable_gradient_checkpointing") ? shown(j.at("disable_gradient_checkpointing")) : "");
  if (const auto fa = r.string(j, "flash_attn", "", "attention"); fa && *fa != "auto")
    r.set("attention", *fa == "fa2" ? "flash" : *fa == "sdpa" ? "sdpa" : "eager", "flash_attn", j.at("flash_attn"));
  if (j.contains("optim")) set_optimizer_name(r, "optim", j.at("optim"));
  if (j.contains("deepspeed") && j.at("deepspeed").is_string()) {
    r.set("framework", "deepspeed", "deepspeed", j.at("deepspeed"));
    r.unresolved("strategy", "deepspeed", j.at("deepspeed"),
                 "a DeepSpeed config this file names (read it too: --from that file)");
  }
  else  // the Trainer offloads only through DeepSpeed or FSDP
    r.set("offload", "none", "(no deepspeed: the Trainer keeps the optimizer on the GPU)", "");
  // Keys that change what runs but are not modelled: said, never dropped in silence.
  // model/model_utils/liger_kernel.py (at ff6d4d12): the model type's apply function with its defaults, but
  // for stages that need the logits (pairwise losses), which swap the fused linear cross-entropy for
  // Liger's plain one.
  if (const auto liger = r.boolean(j, "enable_liger_kernel", "", "liger")) {
    const std::string stage = r.string(j, "stage", "", "").value_or("sft");
    if (*liger && stage != "sft" && stage != "pt")
      r.warn("enable_liger_kernel = true with stage " + stage + ": LLaMA-Factory keeps the logits there (Liger's "
             "plain cross-entropy instead of the fused linear one), which is not modelled; estimated without Liger");
    else
      r.set("liger", *liger ? "true" : "false", "enable_liger_kernel", j.at("enable_liger_kernel"));
  }
  read_llamafactory_galore(j, r);
  for (const char* key : {"use_unsloth", "use_dora", "use_badam", "use_apollo"})
    if (r.boolean(j, key, "", "").value_or(false))
      r.warn(std::string(key) + " = true: not modelled; estimated without it");
  if (j.contains("additional_target") && !j.at("additional_target").is_null())
    r.warn("additional_target " + shown(j.at("additional_target")) +
           ": these modules train in full, which trainplan does not count");
  // train/fp8_utils.py (at ff6d4d12) builds FP8 recipe kwargs and discards them; only
  // ACCELERATE_MIXED_PRECISION=fp8 is set. Under transformers 4.x accelerate then runs its default
  // FP8 recipe (torchao's Float8 tensorwise where torchao is the backend); under 5.x the Trainer
  // passes mixed_precision="bf16" itself and FP8 stays off. Which release runs, the file does not say.
  if (r.boolean(j, "fp8", "", "fp8").value_or(false))
    r.unresolved("fp8", "fp8", j.at("fp8"),
                 "LLaMA-Factory only sets ACCELERATE_MIXED_PRECISION=fp8 (fp8_backend " +
                     r.string(j, "fp8_backend", "", "").value_or("auto") +
                     "): FP8 runs under transformers 4.x (accelerate's default recipe, torchao's tensorwise: "
                     "give --fp8 torchao-tensorwise) and is off under 5.x, whose Trainer passes bf16; the file "
                     "does not say which release runs");
  read_llamafactory_stage(j, r);
}

}  // namespace

void read_llamafactory(const Json& j, Reader& r) {
  // LLaMA-Factory trains through its subclasses of transformers' Trainer.
  r.set("library", "hf-trainer", "(a LLaMA-Factory YAML)", "");
  if (const auto m = r.string(j, "model_name_or_path", "", "model"))
    r.set("model", *m, "model_name_or_path", j.at("model_name_or_path"));
  read_method(j, r);
  read_training(j, r);
  r.check_keys(j, "",
               {"model_name_or_path", "finetuning_type", "quantization_bit", "quantization_method",
                "quantization_type", "double_quantization", "lora_rank", "lora_alpha", "lora_dropout",
                "lora_target", "per_device_train_batch_size", "gradient_accumulation_steps", "cutoff_len",
                "pure_bf16", "bf16", "fp16", "disable_gradient_checkpointing", "flash_attn", "optim",
                "deepspeed", "stage"},
               {"do_train", "do_eval", "do_predict", "dataset", "dataset_dir", "eval_dataset", "template",
                "max_samples", "overwrite_cache", "preprocessing_num_workers", "output_dir", "logging_steps",
                "save_steps", "save_strategy", "save_total_limit", "save_only_model", "plot_loss",
                "overwrite_output_dir", "learning_rate", "num_train_epochs", "max_steps", "lr_scheduler_type",
                "warmup_ratio", "warmup_steps", "weight_decay", "max_grad_norm", "ddp_timeout", "val_size",
                "per_device_eval_batch_size", "eval_strategy", "eval_steps", "report_to", "run_name",
                "trust_remote_code", "resume_from_checkpoint", "dataloader_num_workers", "seed", "packing",
                "neat_packing", "tokenized_path", "adapter_name_or_path", "export_dir", "use_fast_tokenizer",
                "pref_beta", "pref_loss", "ref_model", "reward_model", "reward_model_type", "logging_dir",
                "image_max_pixels", "video_max_pixels", "enable_thinking", "use_unsloth", "enable_liger_kernel",
                "use_dora", "use_galore", "use_badam", "use_apollo", "use_rslora", "additional_target",
                "freeze_vision_tower", "streaming", "buffer_size",
                "mix_strategy", "cache_dir", "hf_hub_token", "push_to_hub", "include_num_input_tokens_seen",
                "fp8", "fp8_backend", "fp8_enable_fsdp_float8_all_gather", "galore_target", "galore_rank",
                "galore_update_interval", "galore_scale", "galore_proj_type", "galore_layerwise", "badam_mode",
                "badam_start_block", "badam_switch_mode", "badam_switch_interval", "badam_update_ratio",
                "badam_mask_mode", "badam_verbose", "apollo_target", "apollo_rank", "apollo_update_interval",
                "apollo_scale", "apollo_proj", "apollo_proj_type", "apollo_scale_type", "apollo_layerwise",
                "apollo_scale_front", "freeze_trainable_layers", "freeze_trainable_modules", "freeze_extra_modules",
                "loraplus_lr_ratio", "pissa_init", "pissa_convert", "create_new_adapter", "use_llama_pro"});
}

}  // namespace trainplan::request::config
