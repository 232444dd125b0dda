// axolotl YAML (examples/*). Key meanings: axolotl-ai-cloud/axolotl v0.18.0 (@067b021c),
// src/axolotl/utils/schemas/*.py (AxolotlInputConfig and its parts: base_model, adapter lora|qlora,
// load_in_4bit / load_in_8bit, lora_r, lora_alpha, lora_dropout, lora_target_linear,
// lora_target_modules, lora_modules_to_save, sequence_len, micro_batch_size,
// gradient_accumulation_steps, bf16 true|false|auto, fp16, gradient_checkpointing, optimizer (the
// Trainer's optim names), attn_implementation, fsdp, fsdp_config, deepspeed) and
// src/axolotl/loaders/model.py (a qlora base loads with bnb_4bit_quant_type nf4 and
// bnb_4bit_use_double_quant True).

#include <algorithm>
#include <array>
#include <string>
#include <string_view>

#include "config_reader.hpp"

namespace trainplan::request::config {
namespace {

// Every field name of the v0.18.0 schema (and its aliases), sorted: other keys get a warning.
constexpr std::array kAxolotlKeys = std::to_array<std::string_view>({
    "accelerator_config",
    "activation_checkpointing",
    "activation_dtype",
    "activation_offloading",
    "adam_beta1",
    "adam_beta2",
    "adam_beta3",
    "adam_epsilon",
    "adam_epsilon2",
    "adapter",
    "adaptive_max_tokens",
    "added_tokens_overrides",
    "additional_special_tokens",
    "advantage_estimator",
    "alignment_coef",
    "async_prefetch",
    "attn_implementation",
    "auto_find_batch_size",
    "auto_resume_from_checkpoints",
    "auto_wrap_policy",
    "axolotl_config_path",
    "base_model",
    "base_model_config",
    "batch_flattening",
    "batch_size",
    "bench_dataset",
    "bench_split",
    "beta",
    "bf16",
    "bfloat16",
    "bnb_config_kwargs",
    "bos_token",
    "capabilities",
    "ce_coef",
    "center_rewards_coefficient",
    "chat_template",
    "chat_template_jinja",
    "chat_template_kwargs",
    "check_interval",
    "chunked_cross_entropy",
    "chunked_cross_entropy_num_chunks",
    "cls_model_config",
    "comet_api_key",
    "comet_experiment_config",
    "comet_experiment_key",
    "comet_mode",
    "comet_online",
    "comet_project_name",
    "comet_workspace",
    "context_length",
    "context_parallel_size",
    "cosine_constant_lr_ratio",
    "cosine_min_lr_ratio",
    "cpo_alpha",
    "cpu_offload_pin_memory",
    "cpu_ram_efficient_loading",
    "curriculum_sampling",
    "data_parallel_size",
    "dataloader_drop_last",
    "dataloader_num_workers",
    "dataloader_pin_memory",
    "dataloader_prefetch_factor",
    "dataset_exact_deduplication",
    "dataset_keep_in_memory",
    "dataset_num_proc",
    "dataset_prepared_path",
    "dataset_processes",
    "dataset_shard_idx",
    "dataset_shard_num",
    "datasets",
    "ddp",
    "ddp_broadcast_buffers",
    "ddp_bucket_cap_mb",
    "ddp_find_unused_parameters",
    "ddp_timeout",
    "deepcompile",
    "deepspeed",
    "default_system_message",
    "device",
    "device_map",
    "dion_lr",
    "dion_momentum",
    "dion_rank_fraction",
    "dion_rank_multiple_of",
    "diversity_coef",
    "do_bench_eval",
    "do_causal_lm_eval",
    "dp_replicate_size",
    "dp_shard_size",
    "dpo_beta",
    "dpo_generate_during_eval",
    "dpo_label_smoothing",
    "dpo_loss_type",
    "dpo_loss_weights",
    "dpo_norm_loss",
    "dpo_padding_free",
    "dpo_use_liger_kernel",
    "dpo_use_logits_to_keep",
    "dpo_use_weighting",
    "dtype",
    "dynamic_checkpoint",
    "eaft_alpha",
    "eaft_k",
    "eager_attention",
    "early_stopping_patience",
    "ebft",
    "embed_method",
    "embedding_lr",
    "embedding_lr_scale",
    "embeddings_skip_upcast",
    "enable_prefix_caching",
    "enable_reasoning",
    "enabled",
    "end",
    "enforce_eager",
    "env_capabilities",
    "eos_token",
    "eot_tokens",
    "epsilon",
    "epsilon_high",
    "eval_batch_size",
    "eval_causal_lm_metrics",
    "eval_max_new_tokens",
    "eval_sample_packing",
    "eval_sequence_len",
    "eval_steps",
    "eval_strategy",
    "eval_table_size",
    "evals_per_epoch",
    "evaluation_strategy",
    "excess_length_strategy",
    "experimental_skip_move_to_device",
    "experts_implementation",
    "fake_quant_after_n_steps",
    "feature_layers",
    "final_state_dict_type",
    "fix_untrained_tokens",
    "flash_attention",
    "flash_attn_cross_entropy",
    "flash_attn_d512",
    "flash_attn_fuse_mlp",
    "flash_attn_rms_norm",
    "flash_optimum",
    "flex_attention",
    "flex_attn_compile_kwargs",
    "float16",
    "float32",
    "fp16",
    "fp32_norm_classes",
    "fp32_norms",
    "fp8",
    "fp8_enable_fsdp_float8_all_gather",
    "freeze_mm_modules",
    "fsdp",
    "fsdp_config",
    "fsdp_final_state_dict_type",
    "fsdp_version",
    "fused_attn_kernel",
    "gc_collect_steps",
    "gc_steps",
    "gemma4_hybrid_attn_impl",
    "generate_max_len",
    "generate_samples",
    "generation_batch_size",
    "generation_do_sample",
    "generation_kwargs",
    "generation_max_new_tokens",
    "generation_prompt_ratio",
    "generation_temperature",
    "generation_top_k",
    "generation_top_p",
    "gptq",
    "gpu_memory_limit",
    "gpu_memory_utilization",
    "gradient_accumulation_steps",
    "gradient_checkpointing",
    "gradient_checkpointing_kwargs",
    "gradio_max_new_tokens",
    "gradio_server_name",
    "gradio_server_port",
    "gradio_share",
    "gradio_temperature",
    "gradio_title",
    "greater_is_better",
    "group_by_length",
    "group_size",
    "gt_length_multiplier",
    "heads_k_stride",
    "hf_mlflow_log_artifacts",
    "hf_use_auth_token",
    "host",
    "hub_model_id",
    "hub_revision",
    "hub_strategy",
    "image_resize_algorithm",
    "image_size",
    "importance_sampling_level",
    "include_end",
    "include_start",
    "include_tkps",
    "include_tokens_per_second",
    "is_falcon_derived_model",
    "is_llama_derived_model",
    "is_mistral_derived_model",
    "is_preprocess",
    "is_qwen_derived_model",
    "jagged_restart_anneal_steps",
    "jagged_restart_steps",
    "jagged_restart_warmup_steps",
    "kto_desirable_weight",
    "kto_undesirable_weight",
    "large_head_attention",
    "layer_offloading",
    "learning_rate",
    "liger_cross_entropy", "liger_fused_linear_cross_entropy", "liger_glu_activation", "liger_layer_norm",
    "liger_rms_norm", "liger_rms_norm_gated", "liger_rope", "liger_swiglu", "liger_use_token_scaling",
    "lisa_layers_attribute",
    "lisa_n_layers",
    "lisa_step_interval",
    "llama4_linearized_experts",
    "load_best_model_at_end",
    "load_in_4bit",
    "load_in_8bit",
    "local_rank",
    "loftq_bits",
    "loftq_config",
    "log_completions",
    "logging_steps",
    "lora_alpha",
    "lora_alpha_pattern",
    "lora_dropout",
    "lora_embedding_kernel",
    "lora_fan_in_fan_out",
    "lora_mlp_kernel",
    "lora_model_dir",
    "lora_modules_to_save",
    "lora_o_kernel",
    "lora_on_cpu",
    "lora_qkv_kernel",
    "lora_r",
    "lora_rank_pattern",
    "lora_target_linear",
    "lora_target_modules",
    "lora_target_parameters",
    "loraplus_lr_embedding",
    "loraplus_lr_ratio",
    "loss_type",
    "loss_watchdog_patience",
    "loss_watchdog_threshold",
    "low_cpu_mem_usage",
    "lr",
    "lr_div_factor",
    "lr_groups",
    "lr_quadratic_warmup",
    "lr_scheduler",
    "lr_scheduler_kwargs",
    "mask_truncated_completions",
    "max_completion_length",
    "max_grad_norm",
    "max_memory",
    "max_model_len",
    "max_packed_sequence_len",
    "max_prompt_len",
    "max_steps",
    "mean_resizing_embeddings",
    "merge_lora",
    "merge_method",
    "metric_for_best_model",
    "micro_batch_size",
    "min_completion_prefix",
    "min_num_params",
    "min_p",
    "min_sample_len",
    "mixed_precision_policy",
    "mlflow_experiment_name",
    "mlflow_run_name",
    "mlflow_tracking_uri",
    "mode",
    "model_config",
    "model_kwargs",
    "model_quantization_config",
    "model_quantization_config_kwargs",
    "model_revision",
    "model_type",
    "modules",
    "multi_objective_aggregation",
    "multipack_real_batches",
    "n_samples_per_prompt",
    "name",
    "neftune_noise_alpha",
    "noisy_embedding_alpha",
    "num_completions_to_print",
    "num_dataset_shards_to_save",
    "num_epochs",
    "num_generation_samples",
    "num_generations",
    "num_iterations",
    "num_labels",
    "off_policy_mask_threshold",
    "offload",
    "offload_params",
    "optim_args",
    "optim_target_modules",
    "optimizer",
    "orpo_alpha",
    "otel_metrics_host",
    "otel_metrics_port",
    "output_dir",
    "overrides_of_model_config",
    "overrides_of_model_kwargs",
    "pad_to_multiple_of",
    "pad_to_sequence_len",
    "pad_token",
    "peft",
    "peft_autocast_adapter_dtype",
    "peft_ensure_weight_tying",
    "peft_init_lora_weights",
    "peft_layer_replication",
    "peft_layers_pattern",
    "peft_layers_to_transform",
    "peft_trainable_token_indices",
    "peft_use_dora",
    "peft_use_rslora",
    "plugins",
    "port",
    "pose_max_context_len",
    "pose_num_chunks",
    "pose_split_on_token_ids",
    "precompute_ref_log_probs",
    "prefetch_depth",
    "preprocess_iterable",
    "pretrain_multipack_attn",
    "pretrain_multipack_buffer_size",
    "pretraining_dataset",
    "pretraining_sample_concatenation",
    "process_reward_model",
    "processor_kwargs",
    "processor_type",
    "profiler_steps",
    "profiler_steps_start",
    "push_dataset_to_hub",
    "qat",
    "qgalore_cos_threshold",
    "qgalore_gamma_proj",
    "qgalore_proj_bits",
    "qgalore_proj_group_size",
    "qgalore_proj_quant",
    "qgalore_proj_type",
    "qgalore_queue_size",
    "qgalore_rank",
    "qgalore_scale",
    "qgalore_update_proj_gap",
    "qlora_sharded_model_loading",
    "quantization",
    "quantize_embedding",
    "quantize_moe_experts",
    "ray_num_workers",
    "ray_run_name",
    "reasoning_parser",
    "recompute_layer_types",
    "ref_model_mixup_alpha",
    "ref_model_sync_steps",
    "reinit_weights",
    "relora",
    "relora_cpu_offload",
    "relora_prune_method",
    "relora_prune_ratio",
    "remove_unused_columns",
    "repetition_penalty",
    "replay_buffer_size",
    "replay_recompute_logps",
    "reroll_max_groups",
    "reroll_start_fraction",
    "reshard_after_forward",
    "resize_token_embeddings_to_32x",
    "resources_per_worker",
    "resume_from_checkpoint",
    "revision_of_model",
    "reward_funcs",
    "reward_model",
    "reward_num_workers",
    "reward_weights",
    "ring_attn_func",
    "rl",
    "rl_adapter_ref_model",
    "rl_beta",
    "rl_coef",
    "role",
    "role_boundaries",
    "rollout_func",
    "rope_scaling",
    "rpo_alpha",
    "s2_attention",
    "sage_attention",
    "sample_packing",
    "sample_packing_bin_size",
    "sample_packing_eff_est",
    "sample_packing_group_size",
    "sample_packing_mp_start_method",
    "sample_packing_sequentially",
    "save",
    "save_first_step",
    "save_only_model",
    "save_safetensors",
    "save_sliding_window",
    "save_steps",
    "save_strategy",
    "save_total_limit",
    "saves_per_epoch",
    "scale_rewards",
    "scaling_softmax",
    "scaling_softmax_bias",
    "scaling_softmax_factor",
    "sdp_attention",
    "sdpa_varlen",
    "seed",
    "selective_checkpointing",
    "sequence_len",
    "sequence_parallel_degree",
    "serve_module",
    "shrink_embeddings",
    "shuffle_before_merging_datasets",
    "shuffle_merged_datasets",
    "simpo_gamma",
    "skip_prepare_dataset",
    "skip_zero_advantage_batches",
    "special_tokens",
    "start",
    "state_dict_type",
    "streaming",
    "streaming_min_groups",
    "streaming_multipack_buffer_size",
    "streaming_partial_batch",
    "strict",
    "stride",
    "sync_module_states",
    "sync_ref_model",
    "temperature",
    "tensor_parallel_size",
    "test_datasets",
    "tf32",
    "tiled_mlp",
    "tiled_mlp_num_shards",
    "tiled_mlp_use_original_mlp",
    "tokenizer_config",
    "tokenizer_legacy",
    "tokenizer_save_jinja_files",
    "tokenizer_type",
    "tokenizer_use_fast",
    "tokenizer_use_mistral_common",
    "tokens",
    "top_k",
    "top_p",
    "torch_compile",
    "torch_compile_backend",
    "torch_compile_mode",
    "torch_compile_options",
    "torch_empty_cache_steps",
    "torchdistx_path",
    "total_num_tokens",
    "total_supervised_tokens",
    "trackio_project_name",
    "trackio_run_name",
    "trackio_space_id",
    "train_on_inputs",
    "trainer_cls",
    "transformer_layer_cls_to_wrap",
    "trigger_file_path",
    "trl",
    "trust_remote_code",
    "type_of_model",
    "unfrozen_parameters",
    "unk_token",
    "use_bias_correction_kl",
    "use_comet",
    "use_data_producer",
    "use_eaft",
    "use_kernels",
    "use_liger_loss",
    "use_mlflow",
    "use_onebitllms",
    "use_orig_params",
    "use_otel_metrics",
    "use_pose",
    "use_ray",
    "use_tensorboard",
    "use_trackio",
    "use_vllm",
    "use_wandb",
    "use_whitening",
    "val_set_size",
    "vllm",
    "vllm_enable_sleep_mode",
    "vllm_guided_decoding_regex",
    "vllm_importance_sampling_cap",
    "vllm_importance_sampling_correction",
    "vllm_importance_sampling_mode",
    "vllm_lora_sync",
    "vllm_mode",
    "vllm_server_host",
    "vllm_server_port",
    "vllm_server_timeout",
    "vllm_sync_interval",
    "wandb_entity",
    "wandb_log_model",
    "wandb_mode",
    "wandb_name",
    "wandb_project",
    "wandb_run_id",
    "wandb_watch",
    "warmup_ratio",
    "warmup_steps",
    "weight_decay",
    "weight_dtype",
    "worker_extension_cls",
    "world_size",
    "xformers_attention",
});

void read_adapter(const Json& j, Reader& r) {
  const auto adapter = r.string(j, "adapter", "", "method");
  const bool q4 = r.boolean(j, "load_in_4bit", "", "quant").value_or(false);
  const bool q8 = r.boolean(j, "load_in_8bit", "", "quant").value_or(false);
  if (q4 && q8) r.fail("load_in_4bit and load_in_8bit are both true");
  if (!adapter) {
    if (q4 || q8)
      r.fail(q4 ? "load_in_4bit" : "load_in_8bit", true,
             "a quantized base needs an adapter (adapter: qlora)");
    r.set("method", "full", "adapter", "(none: full finetuning)");
    return;
  }
  if (*adapter == "qlora") {
    if (q8)
      r.fail("adapter", j.at("adapter"), "qlora loads the base in 4 bits, not with load_in_8bit");
    r.set("method", "qlora", "adapter", j.at("adapter"));
    r.set("quant", "nf4-dq", "adapter", j.at("adapter"));
  } else if (*adapter == "lora") {
    // LoRA over an 8-bit (or 4-bit) base is trainplan's qlora with that quantization.
    r.set("method", q8 || q4 ? "qlora" : "lora",
          q8   ? "load_in_8bit"
          : q4 ? "load_in_4bit"
               : "adapter",
          q8 || q4 ? Json(true) : j.at("adapter"));
    if (q8) r.set("quant", "int8", "load_in_8bit", true);
    if (q4) r.set("quant", "nf4-dq", "load_in_4bit", true);
  } else {
    r.fail("adapter", j.at("adapter"), "trainplan estimates lora and qlora adapters only");
  }
  r.set_integer(j, "lora_r", "", "lora-rank", 1);
  set_lora_alpha_and_dropout(r, j, "");
  // With lora_target_linear, axolotl adds every linear layer to lora_target_modules (the union,
  // src/axolotl/loaders/adapter.py: list(set(lora_target_modules + find_all_linear_names(model)))):
  // all-linear, whatever the list names.
  const bool all_linear = r.boolean(j, "lora_target_linear", "", "lora-targets").value_or(false);
  const auto listed = r.string_list(j, "lora_target_modules", "", "lora-targets");
  if (all_linear)
    r.set("lora-targets", "all-linear", listed ? "lora_target_linear (with lora_target_modules: the union)"
                                               : "lora_target_linear", true);
  else if (listed)
    r.set("lora-targets", *listed, "lora_target_modules", j.at("lora_target_modules"));
  if (j.contains("lora_modules_to_save") && j.at("lora_modules_to_save").is_array() &&
      !j.at("lora_modules_to_save").empty())
    r.warn("lora_modules_to_save " + shown(j.at("lora_modules_to_save")) +
           ": these modules train in full, which trainplan does not count");
}

void read_precision_and_kernels(const Json& j, Reader& r) {
  read_axolotl_bf16(j, r);
  if (r.boolean(j, "fp16", "", "precision").value_or(false))
    r.set("precision", "fp16-mixed", "fp16", true);
  // Passed to TrainingArguments.tf32 (torch.backends.cuda.matmul.allow_tf32).
  if (const auto tf = r.boolean(j, "tf32", "", "tf32")) r.set("tf32", *tf ? "true" : "false", "tf32", j.at("tf32"));
  const Json gc = j.value("gradient_checkpointing", Json());
  // activation_offloading keeps the checkpoints in host memory (axolotl's offloaded checkpointing).
  const bool offload = r.boolean(j, "activation_offloading", "", "checkpointing").value_or(false);
  if (gc.is_string() && gc.get<std::string>() == "offload")
    r.set("checkpointing", "full-offload", "gradient_checkpointing", gc);
  else if (const auto g = r.boolean(j, "gradient_checkpointing", "", "checkpointing"))
    r.set("checkpointing", *g ? (offload ? "full-offload" : "full") : "none",
          *g && offload ? "gradient_checkpointing (with activation_offloading)" : "gradient_checkpointing", gc);
  set_attn_implementation(r, j);
  if (r.boolean(j, "flash_attention", "", "attention").value_or(false))
    r.set("attention", "flash", "flash_attention", true);
  if (r.boolean(j, "sdp_attention", "", "attention").value_or(false))
    r.set("attention", "sdpa", "sdp_attention", true);
  if (j.contains("optimizer") && !j.at("optimizer").is_null())
    set_optimizer_name(r, "optimizer", j.at("optimizer"));
}

void read_sharding(const Json& j, Reader& r) {
  if (j.contains("fsdp") && !j.at("fsdp").is_null()) set_trainer_fsdp(r, "fsdp", j.at("fsdp"));
  if (j.contains("fsdp_config") && j.at("fsdp_config").is_object()) {
    const Json& f = j.at("fsdp_config");
    // dp_replicate_size above 1 beside dp_shard_size: accelerate's HSDP (ParallelismConfig).
    const std::int64_t replicate = r.integer(j, "dp_replicate_size", "", "strategy", 1).value_or(1);
    if (replicate > 1) {
      const std::int64_t shard = r.integer(j, "dp_shard_size", "", "hybrid-shard", 1).value_or(1);
      if (shard <= 1)
        r.fail("dp_replicate_size", j.at("dp_replicate_size"),
               "replicates without dp_shard_size above 1, which accelerate refuses under FSDP");
      r.set("strategy", "fsdp-hybrid", "dp_replicate_size", j.at("dp_replicate_size"));
      // FSDP shards over dp_shard and cp flattened (accelerate's fsdp_dim_names: "dp_shard_cp").
      const std::int64_t cp = r.integer(j, "context_parallel_size", "", "cp", 1).value_or(1);
      r.set("hybrid-shard", std::to_string(shard * cp), cp > 1 ? "dp_shard_size x context_parallel_size" : "dp_shard_size",
            j.at("dp_shard_size"));
    }
    for (const char* key : {"fsdp_offload_params", "offload_params"})
      if (const auto off = r.boolean(f, key, "fsdp_config", "offload"))
        r.set("offload", *off ? "optimizer+params" : "none", std::string("fsdp_config.") + key,
              f.at(key));
    for (const char* key : {"fsdp_activation_checkpointing", "activation_checkpointing"})
      if (r.boolean(f, key, "fsdp_config", "checkpointing").value_or(false))
        r.set("checkpointing", "full", std::string("fsdp_config.") + key, true);
    for (const char* key : {"fsdp_reshard_after_forward", "reshard_after_forward"})
      if (const auto re = replicate > 1 ? std::nullopt : r.boolean(f, key, "fsdp_config", "strategy"))
        r.set("strategy", *re ? "fsdp-full" : "fsdp-grad-op", std::string("fsdp_config.") + key,
              f.at(key));
    if (replicate <= 1 && r.string(f, "fsdp_sharding_strategy", "fsdp_config", "strategy"))
      set_named(r, "strategy", fsdp_sharding_strategies(), "fsdp_config.fsdp_sharding_strategy",
                f.at("fsdp_sharding_strategy"), "a sharding strategy trainplan does not model");
    if (!r.read().find("strategy"))
      r.set("strategy", "fsdp-full", "fsdp_config", "(FSDP, full sharding by default)");
    // fsdp_version (top level, or fsdp_config's older spelling) 2: accelerate's fully_shard.
    set_fsdp_version(r, f, "fsdp_version", "fsdp_config");
    set_fsdp_version(r, j, "fsdp_version", "");
  }
  if (j.contains("deepspeed") && !j.at("deepspeed").is_null()) {
    r.set("framework", "deepspeed", "deepspeed", j.at("deepspeed"));
    r.unresolved("strategy", "deepspeed", j.at("deepspeed"), "read that DeepSpeed config with another --from");
  }
  // accelerate's ParallelismConfig, which axolotl builds from these (utils/schemas/config.py).
  if (const auto tp = r.integer(j, "tensor_parallel_size", "", "tp", 1))
    r.set("tp", std::to_string(*tp), "tensor_parallel_size", j.at("tensor_parallel_size"));
  if (const auto cp = r.integer(j, "context_parallel_size", "", "cp", 1))
    r.set("cp", std::to_string(*cp), "context_parallel_size", j.at("context_parallel_size"));
}

// What axolotl does with the keys a file leaves out (utils/schemas/config.py): no gradient
// checkpointing, and without fsdp or deepspeed the Trainer's DDP; preference training and partial
// unfreezing under an adapter are said, not priced.
void read_defaults_and_unpriced(const Json& j, Reader& r) {
  if (!r.read().find("checkpointing"))
    r.set("checkpointing", "none", "(no gradient_checkpointing: axolotl's default, false)", "");
  if (!r.read().find("strategy") && !j.contains("deepspeed"))
    r.set("strategy", "ddp", "(no fsdp or deepspeed: the Trainer's DDP)", "");
  if (!r.read().find("offload") && !j.contains("deepspeed"))
    r.set("offload", "none", "(no fsdp offload or deepspeed: the optimizer stays on the GPU)", "");
  read_axolotl_rl(j, r);
}

}  // namespace

void read_axolotl(const Json& j, Reader& r) {
  r.set("library", "axolotl", "(an axolotl YAML)", "");
  if (const auto m = r.string(j, "base_model", "", "model"))
    r.set("model", *m, "base_model", j.at("base_model"));
  read_adapter(j, r);
  read_unfrozen(j, r);
  r.set_integer(j, "sequence_len", "", "seq", 1);
  r.set_integer(j, "micro_batch_size", "", "micro-batch", 1);
  r.set_integer(j, "gradient_accumulation_steps", "", "grad-accum", 1);
  read_precision_and_kernels(j, r);
  read_axolotl_liger(j, r);
  read_torch_compile(j, r);
  read_accelerator_config(j, r);
  read_sharding(j, r);
  read_defaults_and_unpriced(j, r);
  for (const auto& [k, v] : j.items())
    if (!std::binary_search(kAxolotlKeys.begin(), kAxolotlKeys.end(), std::string_view(k)))
      r.warn("key '" + text_excerpt(k) + "' is not an axolotl key; ignored");
}

}  // namespace trainplan::request::config
