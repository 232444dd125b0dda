// Hugging Face TrainingArguments as JSON or YAML (HfArgumentParser.parse_json_file /
// parse_yaml_file). Key meanings: huggingface/transformers v4.46.0, src/transformers/
// training_args.py (per_device_train_batch_size, gradient_accumulation_steps, bf16/fp16 = mixed
// precision through autocast with fp32 weights, gradient_checkpointing, optim: OptimizerNames,
// fsdp: FSDPOption, deepspeed: a path or dict). Files written for TRL scripts also carry TRL's
// ModelConfig (huggingface/trl v0.12, trl/trainer/model_config.py: use_peft, lora_r, lora_alpha,
// lora_dropout, lora_target_modules, load_in_4bit / load_in_8bit, bnb_4bit_quant_type "nf4",
// use_bnb_nested_quant) and SFTConfig's max_seq_length (trl/trainer/sft_config.py).

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "config_reader.hpp"

namespace trainplan::request::config {
namespace {

// Keys read without a warning though they change nothing trainplan prices.
constexpr std::array kOtherKeys = std::to_array<std::string_view>({
    // TrainingArguments fields that do not change memory or step time.
    "output_dir", "overwrite_output_dir", "do_train", "do_eval", "do_predict", "eval_strategy",
    "evaluation_strategy", "prediction_loss_only", "per_device_eval_batch_size",
    "eval_accumulation_steps", "eval_delay", "learning_rate", "weight_decay", "adam_beta1",
    "adam_beta2", "adam_epsilon", "max_grad_norm", "num_train_epochs", "max_steps",
    "lr_scheduler_type", "lr_scheduler_kwargs", "warmup_ratio", "warmup_steps", "log_level",
    "log_level_replica", "log_on_each_node", "logging_dir", "logging_strategy",
    "logging_first_step", "logging_steps", "logging_nan_inf_filter", "save_strategy",
    "save_steps", "save_total_limit", "save_safetensors", "save_on_each_node", "save_only_model",
    "seed", "data_seed", "jit_mode_eval", "use_cpu", "bf16_full_eval", "fp16_full_eval",
    "local_rank", "ddp_backend", "eval_steps", "dataloader_drop_last", "dataloader_num_workers",
    "dataloader_pin_memory", "dataloader_persistent_workers", "dataloader_prefetch_factor",
    "past_index", "run_name", "disable_tqdm", "remove_unused_columns", "label_names",
    "load_best_model_at_end", "metric_for_best_model", "greater_is_better", "ignore_data_skip",
    "fsdp_config", "accelerator_config", "label_smoothing_factor", "optim_args", "adafactor",
    "group_by_length", "length_column_name", "report_to", "ddp_find_unused_parameters",
    "ddp_bucket_cap_mb", "ddp_broadcast_buffers", "skip_memory_metrics", "push_to_hub",
    "resume_from_checkpoint", "hub_model_id", "hub_strategy", "hub_token", "hub_private_repo",
    "hub_always_push", "gradient_checkpointing_kwargs", "include_inputs_for_metrics",
    "include_for_metrics", "eval_do_concat_batches", "auto_find_batch_size", "full_determinism",
    "torchdynamo", "ray_scope", "ddp_timeout", "torch_compile", "torch_compile_backend",
    "torch_compile_mode", "include_tokens_per_second", "include_num_input_tokens_seen",
    "neftune_noise_alpha", "optim_target_modules", "batch_eval_metrics", "eval_on_start",
    "use_liger_kernel", "eval_use_gather_object", "average_tokens_across_devices",
    "predict_with_generate", "generation_max_length", "generation_num_beams", "sortish_sampler",
    "restore_callback_states_from_checkpoint",
    // TRL ModelConfig and SFTConfig fields, and the script's own arguments in such files.
    "model_revision", "trust_remote_code", "use_fast_tokenizer", "chat_template",
    "dataset_mixture", "dataset_name", "dataset_config", "dataset_text_field",
    "dataset_num_proc", "dataset_kwargs", "packing", "dataset_train_split", "dataset_test_split",
    "lora_modules_to_save", "lora_task_type", "use_rslora", "use_dora", "bnb_4bit_compute_dtype",
    "train_file", "validation_file", "test_file", "cache_dir", "max_train_samples",
    "max_eval_samples", "preprocessing_num_workers"});

void read_trl_model_config(const Json& j, Reader& r) {
  if (const auto m = r.string(j, "model_name_or_path", "", "model"))
    r.set("model", *m, "model_name_or_path", j.at("model_name_or_path"));
  const auto peft = r.boolean(j, "use_peft", "", "method");
  const auto q4 = r.boolean(j, "load_in_4bit", "", "quant");
  const auto q8 = r.boolean(j, "load_in_8bit", "", "quant");
  if (q4 && *q4 && q8 && *q8) r.fail("load_in_4bit and load_in_8bit are both true");
  const bool quantized = (q4 && *q4) || (q8 && *q8);
  // A script's own LoRA arguments without TRL's use_peft (FastChat's train_lora.py LoraArguments:
  // lora_r, lora_alpha, lora_dropout, q_lora = 4-bit NF4 with double quantization): LoRA.
  const bool own_lora = !peft && j.contains("lora_r");
  const bool q_lora = own_lora && r.boolean(j, "q_lora", "", "quant").value_or(false);
  if ((peft && *peft) || own_lora) {
    if (q_lora) {
      r.set("method", "qlora", "q_lora", true);
      r.set("quant", "nf4-dq", "q_lora", true);
    } else {
      r.set("method", quantized ? "qlora" : "lora",
            quantized ? (q4 && *q4 ? "load_in_4bit" : "load_in_8bit") : (own_lora ? "lora_r" : "use_peft"),
            own_lora ? shown(j.at("lora_r")) : "true");
    }
    if (q4 && *q4) {
      const std::string type = r.string(j, "bnb_4bit_quant_type", "", "quant").value_or("nf4");
      const bool nested = r.boolean(j, "use_bnb_nested_quant", "", "quant").value_or(false);
      if (type != "nf4" && type != "fp4")
        r.fail("bnb_4bit_quant_type", j.at("bnb_4bit_quant_type"), "must be nf4 or fp4");
      r.set("quant", type == "fp4" ? "fp4" : (nested ? "nf4-dq" : "nf4"), "load_in_4bit", true);
    } else if (q8 && *q8) {
      r.set("quant", "int8", "load_in_8bit", true);
    }
    r.set_integer(j, "lora_r", "", "lora-rank", 1);
    set_lora_alpha_and_dropout(r, j, "");
    if (const auto t = r.string_list(j, "lora_target_modules", "", "lora-targets"))
      r.set("lora-targets", *t, "lora_target_modules", j.at("lora_target_modules"));
  } else if (quantized) {
    r.fail(q4 && *q4 ? "load_in_4bit" : "load_in_8bit", true,
           "a quantized base needs adapters to train (use_peft: true)");
  }
}

// TRL's own configs: a key only its ModelConfig or SFTConfig has (trl/trainer/model_config.py,
// sft_config.py), so the model is loaded by TRL (trl sft, SFTTrainer given a model name).
bool trl_loads_model(const Json& j) {
  for (const char* key : {"use_peft", "load_in_4bit", "load_in_8bit", "use_bnb_nested_quant", "bnb_4bit_quant_type",
                          "lora_target_modules", "packing", "dataset_text_field", "max_seq_length",
                          "completion_only_loss", "assistant_only_loss", "model_init_kwargs"})
    if (j.contains(key)) return true;
  return false;
}

// The dtype the script's from_pretrained loads the model in: `dtype` (TRL's ModelConfig from
// v0.23.0, huggingface/trl #4000; transformers' example scripts' ModelArguments, #39782),
// `torch_dtype` before; "" where the file gives none.
std::string load_dtype(const Json& j, Reader& r, std::string& key) {
  if (j.contains("dtype") && j.contains("torch_dtype") && !j.at("dtype").is_null() &&
      !j.at("torch_dtype").is_null() && j.at("dtype") != j.at("torch_dtype"))
    r.fail("dtype", j.at("dtype"), "contradicts torch_dtype = " + shown(j.at("torch_dtype")));
  key = j.contains("dtype") && !j.at("dtype").is_null() ? "dtype" : "torch_dtype";
  if (!j.contains(key) || j.at(key).is_null()) return "";
  const Json& v = j.at(key);
  if (!v.is_string()) r.fail(key, v, "must be auto, bfloat16, float16 or float32");
  std::string d = v.get<std::string>();
  if (d.starts_with("torch.")) d = d.substr(6);
  if (d == "bf16") d = "bfloat16";
  if (d == "fp16" || d == "half") d = "float16";
  if (d == "fp32" || d == "float") d = "float32";
  if (d != "auto" && d != "bfloat16" && d != "float16" && d != "float32")
    r.fail(key, v, "must be auto, bfloat16, float16 or float32");
  return d;
}

// The precision of a TrainingArguments file: bf16/fp16 autocast over the model as the script
// loaded it. Only DeepSpeed (fp32 partitions in its optimizer) and accelerate's FSDP under mixed
// precision (the trainable parameters upcast to fp32: huggingface/accelerate accelerator.py and
// utils/fsdp_utils.py, from v0.30.0, PR #2674) keep fp32 master weights of a 16-bit model; without
// either AdamW steps the 16-bit weights themselves, which is *-true. A file without dtype: TRL
// loads float32 (ModelConfig dtype default "float32" from v0.27.0, #4778; None before, which
// transformers up to 4.57 loaded as float32), transformers' own scripts pass None, which
// from_pretrained reads as "auto" from v5.0.0 (PR #42805: the checkpoint's dtype) and as float32
// before.
void read_precision(const Json& j, Reader& r) {
  const bool bf16 = r.boolean(j, "bf16", "", "precision").value_or(false);
  const bool fp16 = r.boolean(j, "fp16", "", "precision").value_or(false);
  if (bf16 && fp16) r.fail("bf16 and fp16 are both true");
  std::string key;
  const std::string load = load_dtype(j, r, key);
  const bool adapters = r.read().find("method") && r.read().find("method")->value != "full";
  const bool engine = (j.contains("deepspeed") && !j.at("deepspeed").is_null()) || r.read().find("strategy");
  const std::string mixed = bf16 ? "bf16-mixed" : "fp16-mixed";
  if (load == "auto" && !engine && !adapters) {
    r.from_checkpoint(key, j.at(key), bf16 ? "bf16" : fp16 ? "fp16" : "",
                      "the checkpoint's own dtype; where its config.json declares none, from_pretrained takes "
                      "its first floating weight's (modeling_utils.py _get_dtype), which trainplan does not "
                      "read: a 16-bit checkpoint "
                      "trains as bf16-true (fp16-true) here, an fp32 one as " +
                          (bf16 || fp16 ? mixed : std::string("fp32")));
    return;
  }
  if (load == "auto" && adapters && (bf16 || fp16))
    r.warn(key + " = auto: the frozen base in the checkpoint's own dtype, which trainplan does not read; priced "
           "16-bit (--frozen-base-fp32 for an fp32 checkpoint)");
  const bool load16 = load == "bfloat16" || load == "float16";
  const std::string pure = load == "float16" ? "fp16-true" : "bf16-true";
  if (load16 && ((bf16 && load == "float16") || (fp16 && load == "bfloat16")))
    r.warn(key + " = " + load + " with " + (bf16 ? "bf16" : "fp16") + " = true: autocast to the other 16-bit type; "
           "priced as " + (engine || adapters ? mixed : pure));
  if (bf16 || fp16) {
    if (load16 && !engine && !adapters) {
      r.set_yielding("precision", pure,
                     key + " = " + load + ", " + (bf16 ? "bf16" : "fp16") +
                         " = true (no deepspeed or fsdp in this file to keep fp32 master weights: the optimizer "
                         "steps the 16-bit weights)",
                     "");
    } else {
      const bool trl = load.empty() && trl_loads_model(j);
      // Without a dtype the script decides; said where it is not TRL's float32.
      r.set("precision", mixed, bf16 ? "bf16" : "fp16",
            load.empty() && !trl && !engine && !adapters
                ? "true (no dtype: fp32 weights, as transformers up to 4.57 loads them; from 5.0 a script that "
                  "passes none gets the checkpoint's dtype, a 16-bit one training as " + pure + ")"
                : "true");
      if (adapters && (load == "float32" || trl))
        r.set("frozen-base-fp32", "true", trl ? "(no dtype: TRL's ModelConfig loads float32)" : key + " = float32", "");
    }
  } else if (load16 && !engine) {
    r.set("precision", pure, key, j.at(key));
  }
}

}  // namespace

void read_training_arguments(const Json& j, Reader& r) {
  r.set("library", "hf-trainer", "(TrainingArguments)", "");
  r.set_integer(j, "per_device_train_batch_size", "", "micro-batch", 1);
  r.set_integer(j, "gradient_accumulation_steps", "", "grad-accum", 1);
  if (const auto gc = r.boolean(j, "gradient_checkpointing", "", "checkpointing"))
    r.set("checkpointing", *gc ? "full" : "none", "gradient_checkpointing",
          j.at("gradient_checkpointing"));
  if (j.contains("optim") && !j.at("optim").is_null()) set_optimizer_name(r, "optim", j.at("optim"));
  // GaLore's rank from optim_args ("rank=64, update_proj_gap=200"; trainer.py's default 128).
  const bool galore = j.contains("optim") && j.at("optim").is_string() &&
                      j.at("optim").get<std::string>().starts_with("galore_");
  const auto args = galore ? r.string(j, "optim_args", "", "") : std::nullopt;
  if (const std::size_t at = args ? args->find("rank=") : std::string::npos; at != std::string::npos)
    r.set("galore-rank", args->substr(at + 5, args->find_first_of(", ", at) - at - 5), "optim_args", j.at("optim_args"));
  if (j.contains("fsdp") && !j.at("fsdp").is_null() && j.at("fsdp") != "" &&
      j.at("fsdp") != Json::array())
    set_trainer_fsdp(r, "fsdp", j.at("fsdp"));
  // fsdp_config's "version" (training_args.py _process_fsdp_args). Left out, the Trainer's default:
  // FSDP1 up to transformers PR #45640 (merged 2026-04-24), FSDP2 after it; answered with the
  // library's (1), which the option's help says.
  if (j.contains("fsdp_config") && j.at("fsdp_config").is_object())
    set_fsdp_version(r, j.at("fsdp_config"), "version", "fsdp_config");
  if (j.contains("deepspeed") && !j.at("deepspeed").is_null()) {
    r.set("framework", "deepspeed", "deepspeed", j.at("deepspeed"));
    r.unresolved("strategy", "deepspeed", j.at("deepspeed"), "read that DeepSpeed config with another --from");
  } else if (!r.read().find("offload")) {
    // The Trainer offloads only through DeepSpeed (offload_optimizer) or FSDP's offload option.
    r.set("offload", "none", "(no deepspeed, no fsdp offload: the Trainer keeps the optimizer on the GPU)", "");
  }
  // FastChat's and Alpaca's scripts pad every sample to model_max_length.
  for (const char* key : {"max_seq_length", "max_length", "model_max_length"}) r.set_integer(j, key, "", "seq", 1);
  // training_args.py: tf32 sets torch.backends.cuda.matmul.allow_tf32; None leaves PyTorch's
  // default (off).
  if (const auto tf = r.boolean(j, "tf32", "", "tf32")) r.set("tf32", *tf ? "true" : "false", "tf32", j.at("tf32"));
  set_attn_implementation(r, j);
  // trainer.py: use_liger_kernel applies _apply_liger_kernel_to_instance with the model type's defaults.
  if (const auto liger = r.boolean(j, "use_liger_kernel", "", "liger"))
    r.set("liger", *liger ? "true" : "false", "use_liger_kernel", j.at("use_liger_kernel"));
  read_torch_compile(j, r);
  read_accelerator_config(j, r);
  read_trl_model_config(j, r);
  read_precision(j, r);
  read_trl_preference(j, r);
  std::vector<std::string_view> known(kOtherKeys.begin(), kOtherKeys.end());
  for (const std::string_view k : trl_preference_keys()) known.push_back(k);
  r.check_keys(
      j, "",
      {"per_device_train_batch_size",
       "gradient_accumulation_steps",
       "tf32",
       "bf16",
       "fp16",
       "gradient_checkpointing",
       "optim",
       "fsdp",
       "deepspeed",
       "max_seq_length",
       "max_length",
       "attn_implementation",
       "model_name_or_path",
       "use_peft",
       "load_in_4bit",
       "load_in_8bit",
       "bnb_4bit_quant_type",
       "use_bnb_nested_quant",
       "lora_r",
       "lora_alpha",
       "lora_dropout",
       "lora_target_modules",
       "q_lora",
       "model_max_length",
       "torch_dtype",
       "dtype"},
      known);
}

}  // namespace trainplan::request::config
