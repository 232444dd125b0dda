cmake_minimum_required(VERSION 3.25)
# The trainplan command line as a user meets it. Run by ctest as
#   cmake -DTRAINPLAN=... -DDATA=... -DWORK=... -P cli_tests.cmake
set(failures 0)

function(run_case name expect_rc)
  # Remaining arguments: the command line, then MATCH <regex>... (stdout) / ERR <regex>... (stderr).
  set(args "")
  set(out_patterns "")
  set(err_patterns "")
  set(mode collect_args)
  foreach(a IN LISTS ARGN)
    if(a STREQUAL "MATCH")
      set(mode collect_out)
    elseif(a STREQUAL "ERR")
      set(mode collect_err)
    elseif(mode STREQUAL "collect_args")
      list(APPEND args "${a}")
    elseif(mode STREQUAL "collect_out")
      list(APPEND out_patterns "${a}")
    else()
      list(APPEND err_patterns "${a}")
    endif()
  endforeach()
  execute_process(COMMAND ${TRAINPLAN} ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(ok TRUE)
  if(expect_rc STREQUAL "nonzero")
    if(rc EQUAL 0)
      set(ok FALSE)
    endif()
  elseif(NOT rc EQUAL expect_rc)
    set(ok FALSE)
  endif()
  foreach(p IN LISTS out_patterns)
    if(NOT out MATCHES "${p}")
      set(ok FALSE)
      message("  [${name}] stdout lacks /${p}/")
    endif()
  endforeach()
  foreach(p IN LISTS err_patterns)
    if(NOT err MATCHES "${p}")
      set(ok FALSE)
      message("  [${name}] stderr lacks /${p}/")
    endif()
  endforeach()
  if(ok)
    message("ok   ${name}")
  else()
    message("FAIL ${name} (exit ${rc})\n--- stdout\n${out}\n--- stderr\n${err}")
    math(EXPR f "${failures} + 1")
    set(failures ${f} PARENT_SCOPE)
  endif()
  set(last_out "${out}" PARENT_SCOPE)
endfunction()

# --- the headline questions
# A plan whose offload changes nothing but a rounding of the time model is not the advice.
run_case(fit_no_needless_offload 0 fit llama-3.2-1b A10G --method lora MATCH "with single GPU: ")
run_case(fit_leanest_without_needless_offload 1 fit gemma-2b A10G --library litgpt --method lora --precision bf16-true --seq 8192
         MATCH "its leanest plan \\(single GPU, full checkpointing\\):")
run_case(fit_headline 0 fit 13b 4xA100
         MATCH "^Fits — llama-2-13b" "GiB usable per GPU" "micro-batch up to" "FSDP full-shard" "A100 = A100-80GB")
# One wording of sizes with the GUI: the communication table in binary units (it once said GB).
run_case(estimate_comm_binary_units 0 estimate llama-2-70b 2x8xH100-80GB
         MATCH "reduce_scatter +gradient reduce-scatter +network +[0-9.]+ GiB" "total +[0-9.]+ GiB")
run_case(fit_lora_json 0 fit llama-2-13b 4xA100-80GB --method lora --lora-rank 16 --json
         MATCH "\"schema\": \"trainplan.fit/1\"")
string(JSON schema GET "${last_out}" schema)
string(JSON trainable GET "${last_out}" model trainable_parameters)
string(JSON ncand LENGTH "${last_out}" candidates)
string(JSON first_fits GET "${last_out}" candidates 0 fits)
string(JSON peak GET "${last_out}" candidates 0 memory peak_allocated_bytes)
if(NOT trainable EQUAL 13107200 OR ncand LESS 2 OR peak LESS_EQUAL 0)
  message("FAIL fit_lora_json contents: trainable=${trainable} candidates=${ncand} peak=${peak}")
  math(EXPR failures "${failures} + 1")
endif()
run_case(fit_config_folder_pinned 0 fit ${DATA}/tiny-llama 2x8xH100-80GB --strategy fsdp-full --micro-batch 4
         --seq 4096 --checkpointing full --offload none --json MATCH "\"strategy\": \"fsdp-full\"")
string(JSON ncand LENGTH "${last_out}" candidates)
if(NOT ncand EQUAL 1)
  message("FAIL fit_config_folder_pinned: ${ncand} candidates with every option pinned")
  math(EXPR failures "${failures} + 1")
endif()
# An fp32 frozen base (litgpt's bf16-mixed) holds 4 bytes per base weight instead of 2.
run_case(fit_base_16bit 0 fit llama-2-7b A100-80GB --method lora --strategy single --micro-batch 1
         --seq 512 --checkpointing none --json MATCH "\"frozen_base_fp32\": false")
string(JSON w16 GET "${last_out}" candidates 0 memory breakdown weights)
run_case(fit_base_fp32 0 fit llama-2-7b A100-80GB --method lora --strategy single --micro-batch 1
         --seq 512 --checkpointing none --frozen-base-fp32 --json MATCH "\"frozen_base_fp32\": true")
string(JSON w32 GET "${last_out}" candidates 0 memory breakdown weights)
math(EXPR ratio_x100 "${w32} * 100 / ${w16}")
if(ratio_x100 LESS 195 OR ratio_x100 GREATER 200)
  message("FAIL fit_base_fp32: weights ${w32} vs ${w16} bytes (expected about twice)")
  math(EXPR failures "${failures} + 1")
endif()
run_case(fit_does_not_fit 1 fit llama-2-70b A100-40GB MATCH "^Does not fit — llama-2-70b")
run_case(models 0 models MATCH "llama-2-13b" "mixtral-8x7b" "Size aliases")
run_case(models_json 0 models --json MATCH "trainplan.models/1")
run_case(gpus 0 gpus MATCH "H100-80GB" "79.15")
run_case(gpus_json 0 gpus --json MATCH "trainplan.gpus/1")

# --- bad input: a clear message naming the input, a non-zero exit
run_case(unknown_model 2 fit llama-2-13 4xA100 ERR "unknown model 'llama-2-13'" "did you mean: llama-2-13b")
run_case(unknown_gpu 2 fit 7b 4xR100 ERR "unknown GPU 'R100'" "known GPUs:")
run_case(malformed_cluster 2 fit 7b 12xA100-80GB ERR "12 GPUs do not fill nodes of 8")
run_case(tp_not_dividing 2 fit 7b 4xA100 --tp 8 --strategy ddp ERR "--tp 8 x --pp 1 = 8 GPUs per model replica does not divide the cluster's 4 GPUs")
run_case(tp_not_dividing_heads 2 fit gpt2 8xA100 --tp 8 --strategy ddp ERR "does not divide the 12 attention heads")
run_case(zero_micro_batch 2 fit 7b A100 --micro-batch 0 ERR "--micro-batch must be at least 1")
run_case(negative_seq 2 fit 7b A100 --seq -5 ERR "--seq must be at least 1")
run_case(unknown_method 2 fit 7b A100 --method foo ERR "--method: unknown method 'foo'" "full, lora, qlora")
run_case(unknown_strategy 2 fit 7b 4xA100 --strategy zero4 ERR "unknown strategy 'zero4'")
# An option without effect is answered, with a warning that names it (issue #20).
run_case(lora_option_without_lora 0 fit 7b A100 --lora-rank 8 ERR "warning: --lora-rank 8 ignored: it applies with --method lora or qlora")
run_case(frozen_base_without_adapters 0 fit 7b A100 --frozen-base-fp32 ERR "warning: --frozen-base-fp32 true ignored")
run_case(quant_block_without_qlora 0 fit 7b A100 --quant-block 128 ERR "warning: --quant-block 128 ignored: it applies with --method qlora")
run_case(bitsandbytes_without_qlora 0 fit 7b A100 --bitsandbytes 0.42.0 ERR "warning: --bitsandbytes 0.42.0 ignored: it applies with --method qlora")
run_case(bitsandbytes_in_json 0 estimate llama-2-7b A10G --library litgpt --method qlora --bitsandbytes 0.42 --json MATCH "\"bitsandbytes\": \"0.42.0\"" "\"qlora_stack\": \"lightning\"")
run_case(library_version_without_versioned_traits 0 estimate llama-2-7b A10G --method qlora --library-version 0.5.4 ERR "warning: --library-version 0.5.4 ignored: it applies with --library litgpt, torchtitan or llm-foundry")
run_case(library_version_note 0 estimate gemma-2-2b A10G --library litgpt --library-version 0.4.7 --method lora --precision bf16-true MATCH "note: library litgpt 0.4.7: its traits up to 0.5.4 \\(Lightning-AI/litgpt up to v0.5.4")
run_case(peak_phase_in_text 0 estimate llama-2-7b A10G --library litgpt --library-version 0.4.0 --method qlora --precision bf16-true --seq 512 --micro-batch 2 MATCH "GiB per GPU \\(peak: end of forward\\) — fits")
run_case(library_version_pins_bitsandbytes 0 estimate llama-2-7b A10G --library litgpt --library-version 0.5.4 --method qlora --json MATCH "\"library_version\": \"0.5.4\"" "\"bitsandbytes\": \"0.42.0\"")
run_case(previous_share_without_held_graph 0 estimate llama-2-7b A10G --library litgpt --method qlora --previous-share 0 ERR "warning: --previous-share 0 ignored: it applies with --library litgpt, --method qlora and bitsandbytes before 0.43.2 \\(--bitsandbytes, or --library-version up to 0.5.4\\)")
run_case(previous_share_in_json 0 estimate llama-2-7b A10G --library litgpt --method qlora --bitsandbytes 0.42 --seq 512 --json MATCH "\"previous_share\": 1.0" "\"peak_phase\": \"end of forward\"")
# Expandable segments: the library's launcher default (torchtitan's run_train.sh, llm-foundry from
# 0.10.0), off elsewhere and for llm-foundry up to 0.9.1; given, it wins; the plan's memory keeps
# only the page rounding as cache, and every launch config says to set it.
run_case(expandable_segments_torchtitan 0 estimate llama-3.1-8b 8xH100 --library torchtitan --json MATCH "\"expandable_segments\": true")
run_case(expandable_segments_trainer 0 estimate llama-3.1-8b 8xH100 --json MATCH "\"expandable_segments\": false")
run_case(expandable_segments_llmfoundry_old 0 estimate llama-3.1-8b 8xH100 --library llm-foundry --library-version 0.9.1 --json MATCH "\"expandable_segments\": false")
run_case(chunked_loss_torchtune 0 estimate llama-3.1-8b 1xH100 --library torchtune --json MATCH "\"chunked_loss\": true")
run_case(chunked_loss_torchtune_off 0 estimate llama-3.1-8b 1xH100 --library torchtune --chunked-loss off --json MATCH "\"chunked_loss\": false")
run_case(chunked_loss_trainer_warns 0 estimate llama-3.1-8b 1xH100 --chunked-loss on ERR "chunked-loss")
run_case(expandable_segments_off 0 estimate llama-3.1-8b 8xH100 --library torchtitan --expandable-segments off --json MATCH "\"expandable_segments\": false")
run_case(expandable_segments_emit 0 estimate llama-3.1-8b 8xH100 --strategy fsdp-full --expandable-segments on --emit torchrun ERR "note: the environment of every rank: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")
run_case(fsdp_version_without_fsdp 0 estimate 7b 4xA100 --strategy ddp --fsdp-version 2 ERR "warning: --fsdp-version 2 ignored: it applies where PyTorch shards the parameters")
run_case(fsdp_version_in_json 0 estimate llama-3.1-8b 8xH100 --library torchtitan --strategy fsdp-full --json MATCH "\"fsdp_version\": 2")
run_case(fsdp_version_in_label 0 estimate llama-3.1-8b 8xH100 --library torchtitan --strategy fsdp-full MATCH "FSDP2 full-shard")
run_case(checkpoint_every_without_full 0 estimate 7b A100 --checkpointing none --checkpoint-every 2 ERR "warning: --checkpoint-every 2 ignored: it applies with --checkpointing full")
run_case(checkpoint_every_in_label 0 estimate llama-3.1-8b 8xH100 --library torchtitan --strategy fsdp-full --checkpointing full --checkpoint-every 2 MATCH "full \\(1 block in 2\\) checkpointing")
# torchtitan's default checkpointing (selective_ac_option "2") from a job config that leaves it out.
file(WRITE ${WORK}/torchtitan-default-ac.toml "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[training]\nlocal_batch_size = 1\nseq_len = 8192\n")
run_case(checkpoint_every_from_toml 0 estimate llama-3.1-8b 8xH100 --from ${WORK}/torchtitan-default-ac.toml
         MATCH "full \\(1 block in 2\\) checkpointing")
# Megatron's block method written by the torchrun emitter and read back from it.
run_case(checkpoint_layers_emitted 0 estimate llama-3.1-8b 8xH100 --framework megatron --tp 2 --strategy zero1
         --checkpointing full --checkpoint-layers 4 --emit torchrun MATCH "--recompute-method block --recompute-num-layers 4")
file(WRITE ${WORK}/checkpoint-layers.sh "${last_out}")
run_case(checkpoint_layers_read_back 0 estimate llama-3.1-8b 8xH100 --from ${WORK}/checkpoint-layers.sh
         MATCH "full \\(first 4 blocks of each stage\\) checkpointing")
# Megatron's uniform method with groups written by the torchrun emitter and read back from it.
run_case(checkpoint_group_emitted 0 estimate llama-3.1-8b 8xH100 --framework megatron --tp 2 --strategy zero1
         --checkpointing full --checkpoint-group 4 --emit torchrun MATCH "--recompute-method uniform --recompute-num-layers 4")
file(WRITE ${WORK}/checkpoint-group.sh "${last_out}")
run_case(checkpoint_group_read_back 0 estimate llama-3.1-8b 8xH100 --from ${WORK}/checkpoint-group.sh
         MATCH "full \\(groups of 4 blocks\\) checkpointing")
# Megatron-Core's CPU offloading of activations written by the torchrun emitter and read back.
run_case(offload_activations_emitted 0 estimate llama-3.1-8b 8xH100 --framework megatron --tp 2 --strategy zero1
         --offload-activations 20 --emit torchrun MATCH "--cpu-offloading --cpu-offloading-num-layers 20")
file(WRITE ${WORK}/offload-activations.sh "${last_out}")
run_case(offload_activations_read_back 0 estimate llama-3.1-8b 8xH100 --from ${WORK}/offload-activations.sh --json
         MATCH "\"offload_activations\": 20")
run_case(offload_activations_without_megatron 0 estimate llama-3.1-8b 8xH100 --offload-activations 4
         ERR "warning: --offload-activations 4 ignored: it applies with --framework megatron")
# Megatron-LM's dropout flags written by the torchrun emitter and read back; a library without
# dropout layers changes nothing by them (a warning).
run_case(dropout_emitted 0 estimate llama-3.1-8b 8xH100 --framework megatron --tp 2 --strategy zero1
         --hidden-dropout 0 --attention-dropout 0 --emit torchrun MATCH "--hidden-dropout 0 --attention-dropout 0")
file(WRITE ${WORK}/dropout.sh "${last_out}")
run_case(dropout_read_back 0 estimate llama-3.1-8b 8xH100 --from ${WORK}/dropout.sh --activations
         MATCH "norm, projection inputs and dropout masks +64.0")
run_case(dropout_without_dropout_layers 0 estimate llama-3.1-8b 8xH100 --library litgpt --hidden-dropout 0.1
         ERR "warning: --hidden-dropout 0.1 ignored: it applies with a library whose model code has dropout layers")
run_case(checkpoint_group_in_json 0 estimate llama-3.1-8b 8xH100 --framework megatron --tp 2 --strategy zero1 --checkpointing full --checkpoint-group 4 --json MATCH "\"checkpoint_group\": 4")
run_case(checkpoint_every_in_json 0 estimate llama-3.1-8b 8xH100 --library torchtitan --strategy fsdp-full --checkpointing full --checkpoint-every 2 --json MATCH "\"checkpoint_every\": 2")
# FSDP2 written by --emit accelerate reads back as FSDP2 (fsdp_version, fsdp_reshard_after_forward).
run_case(fsdp2_emit 0 estimate llama-3.1-8b 8xH100 --strategy fsdp-grad-op --fsdp-version 2 --emit accelerate
         MATCH "fsdp_version: 2" "fsdp_reshard_after_forward: false")
file(WRITE ${WORK}/fsdp2-emitted.yaml "${last_out}")
run_case(fsdp2_emit_read_back 0 estimate llama-3.1-8b 8xH100 --from ${WORK}/fsdp2-emitted.yaml
         MATCH "fsdp-version 2 +<- fsdp_config.fsdp_version = 2" "strategy fsdp-grad-op +<- fsdp_config.fsdp_reshard_after_forward = false"
               "FSDP2 grad-op")
# accelerate's FSDP2 HSDP: its parallelism_config's replicate and shard sizes, read back as the plan.
run_case(fsdp2_emit_hybrid 0 estimate llama-3.1-8b 4x8xH100 --strategy fsdp-hybrid --hybrid-shard 16 --fsdp-version 2
         --emit accelerate MATCH "parallelism_config_dp_replicate_size: 2" "parallelism_config_dp_shard_size: 16")
file(WRITE ${WORK}/fsdp2-hsdp-emitted.yaml "${last_out}")
run_case(fsdp2_emit_hybrid_read_back 0 estimate llama-3.1-8b 4x8xH100 --from ${WORK}/fsdp2-hsdp-emitted.yaml
         MATCH "FSDP2 hybrid-shard \\(groups of 16\\) across 4 nodes")
run_case(fsdp2_emit_trainer 0 estimate llama-3.1-8b 8xH100 --strategy fsdp-full --fsdp-version 2 --emit torchrun
         MATCH "--fsdp_config '{\"version\": 2}'")
run_case(sync_each_batch_without_accumulation 0 estimate 7b 4xA100 --strategy ddp --sync-each-batch ERR "warning: --sync-each-batch true ignored: it applies with --grad-accum above 1")
run_case(sync_each_batch_emit 0 estimate llama-3.1-8b 8xH100 --strategy fsdp-full --grad-accum 4 --sync-each-batch --emit torchrun
         MATCH "--accelerator_config '{\"gradient_accumulation_kwargs\": {\"sync_each_batch\": true}}'")
run_case(mtp_layers_without_megatron 0 estimate deepseek-v2-lite A100 --method lora --mtp-layers 1 ERR "warning: --mtp-layers 1 ignored: it applies with --framework megatron")
run_case(moe_capacity_without_megatron 0 estimate mixtral-8x7b 8xH100 --moe-capacity-factor 1.25 ERR "warning: --moe-capacity-factor 1.25 ignored: it applies with --framework megatron")
run_case(moe_capacity_dense_model 0 estimate llama-2-7b 8xH100 --framework megatron --moe-capacity-factor 1.25 ERR "warning: --moe-capacity-factor 1.25 ignored: model 'llama-2-7b' has no experts")
run_case(bf16_master_without_deepspeed 0 estimate 7b 4xA100 --bf16-master-weights ERR "warning: --bf16-master-weights true ignored: it applies with --framework deepspeed, bf16-mixed and ZeRO stage 1-3")
run_case(bf16_states_without_master 0 estimate 7b 4xA100 --framework deepspeed --strategy zero2 --bf16-optimizer-states ERR "warning: --bf16-optimizer-states true ignored: it applies with --bf16-master-weights")
# Preference training: an unknown objective, the precomputed reference without DPO, a pair's bound.
run_case(objective_unknown 2 estimate 7b A100 --objective kto ERR "--objective: unknown objective 'kto'" "sft, dpo, orpo, simpo")
run_case(precomputed_reference_without_dpo 0 estimate 7b A100 --objective orpo --precomputed-reference ERR "warning: --precomputed-reference true ignored: it applies with --objective dpo")
run_case(dpo_pair_bound 2 estimate 7b 8xA100 --objective dpo --micro-batch 67108864 ERR "2 x --micro-batch .two sequences a pair. x --seq" "beyond the memory of any GPU")
run_case(dpo_estimate 0 estimate llama-3.1-8b 8xH100 --framework deepspeed --strategy zero3 --checkpointing full --objective dpo MATCH "dpo pairs" "reference forward .DPO." "frozen reference model's copy")
run_case(dpo_megatron_emit 2 estimate llama-3.1-8b 8xH100 --framework megatron --strategy zero1 --objective dpo --emit torchrun ERR "--objective dpo: Megatron-LM's pretrain_gpt.py has no preference loss")
# torchtune's optimizer in backward: one gradient at a time, no accumulation, no launch config.
run_case(optimizer_in_backward_accumulating 2 estimate 7b A100 --optimizer-in-backward --grad-accum 4 ERR "--optimizer-in-backward steps each parameter as soon as its gradient is complete" "needs --grad-accum 1")
run_case(optimizer_in_backward_megatron 0 estimate llama-3.1-8b 8xH100 --framework megatron --strategy zero1 --optimizer-in-backward ERR "warning: --optimizer-in-backward true ignored: it applies with --framework pytorch")
run_case(optimizer_in_backward_emit 2 plan 7b A100 --optimizer-in-backward --emit torchrun ERR "--optimizer-in-backward: torchtune's optimizer_in_bwd")
# GaLore: full fine-tuning on one GPU or DDP; its rank alone is a warning.
run_case(galore_adapters_refused 2 estimate llama-3.2-1b H100 --method lora --optimizer galore-adamw ERR "--optimizer galore-adamw trains full weights through low-rank gradients")
run_case(galore_fsdp_refused 2 estimate llama-3.2-1b 8xH100 --strategy fsdp-full --optimizer galore-adamw ERR "one GPU or DDP under --framework pytorch, not fsdp-full")
run_case(galore_rank_without_galore 0 estimate llama-3.2-1b H100 --galore-rank 64 ERR "warning: --galore-rank 64 ignored: it applies with --optimizer galore-adamw")
run_case(galore_fit_ddp 0 fit llama-3.2-1b 8xH100 --optimizer galore-adamw MATCH "with DDP")
run_case(galore_emit 0 plan llama-3.2-1b 2xH100 --optimizer galore-adamw --emit torchrun MATCH "--optim galore_adamw --optim_args rank=128" ERR "optim_target_modules=.'attn', 'mlp'.")
run_case(galore_note 0 estimate llama-3.2-1b H100 --optimizer galore-adamw --galore-rank 256 MATCH "SVD that refreshes each projection")
# Partial fine-tuning: the subset in the headline, relative layers resolved against the model, bad
# specs and subsets the model cannot train refused by name, an adapter's --trainable a warning.
run_case(partial_estimate 0 estimate llama-3.2-1b H100 --trainable 12-15 MATCH "full of 12-15: 243.3M trained")
run_case(partial_last 0 fit llama-3.2-1b 8xH100 --trainable last:4 MATCH "full of 12-15: 243.3M trained")
run_case(partial_patterns 0 estimate llama-3.2-1b H100 --trainable "match:^model.layers.1[0-5].mlp" MATCH "full of 10-15,gate,up,down")
run_case(partial_layer_missing 2 estimate llama-3.2-1b H100 --trainable 20 ERR "layer 20 of llama-3.2-1b, which has 16 layers")
run_case(partial_spread_indivisible 2 estimate llama-3.2-1b H100 --trainable spread:5 ERR "spread:5 must divide the layers")
run_case(partial_bad_term 2 estimate llama-3.2-1b H100 --trainable 3,feathers ERR "unknown term 'feathers'")
run_case(partial_nothing_matched 2 estimate llama-3.2-1b H100 --trainable "match:^vision" ERR "unfreezes no parameter of llama-3.2-1b")
run_case(partial_megatron_refused 2 estimate llama-3.2-1b H100 --trainable 3 --framework megatron ERR "partial fine-tuning under --framework megatron is not modelled")
run_case(partial_with_adapter 0 estimate llama-3.2-1b H100 --method lora --trainable 3 ERR "warning: --trainable 3 ignored: it applies with --method full")
run_case(partial_emit_note 0 plan llama-3.2-1b 2xH100 --trainable 12-15 --emit torchrun ERR "partial fine-tuning .12-15.: set requires_grad=False")
# Liger's kernels: answered with them where Liger patches the model type; said and answered without
# them where it has none, or where the library's own model code runs.
run_case(liger_estimate_json 0 estimate llama-3.2-1b H200 --liger --micro-batch 4 --seq 2048 --json MATCH "\"liger\": true")
run_case(liger_unsupported_model 0 estimate gpt2 H200 --liger ERR "warning: --liger: Liger has no kernels for model type 'gpt2' .model 'gpt2'.; answered without them")
run_case(liger_megatron 0 estimate llama-3.1-8b 8xH100 --framework megatron --strategy zero1 --liger ERR "warning: --liger true ignored: it applies with a library that runs transformers' modeling files")
run_case(liger_litgpt 0 estimate llama-3.2-1b H200 --library litgpt --liger ERR "warning: --liger true ignored")
run_case(liger_moe_note 0 estimate qwen3-30b-a3b 8xH200 --method lora --liger MATCH "liger: the expert MLPs are priced as transformers' experts")
# torch.compile: answered compiled (the JSON says so); under Megatron's accounting it changes
# nothing (a warning).
run_case(compile_estimate_json 0 estimate llama-3.2-1b H200 --compile --micro-batch 4 --seq 2048 --json MATCH "\"compile\": true")
run_case(compile_megatron 0 estimate llama-3.1-8b 8xH100 --framework megatron --strategy zero1 --compile ERR "warning: --compile true ignored: it applies with --framework pytorch or deepspeed")
# Gemma-2B LoRA at micro-batch 2 and 2048 tokens on an L4: its 256k-vocabulary logits do not fit,
# Liger's fused loss keeps none (the H200 runs: 27.9 GiB eager, 13.6 GiB with Liger).
run_case(explain_offers_chunked_loss 1 explain llama-3.2-1b 1xL4 --library torchtune --precision bf16-true --micro-batch 4 --seq 4096 --checkpointing full --chunked-loss off MATCH "--chunked-loss on .was off.  *fits")
run_case(explain_offers_liger 1 explain gemma-2b L4 --method lora --lora-targets all-linear --precision bf16-true --micro-batch 2 --seq 2048 --checkpointing none MATCH "--liger true .was false.  *fits")
run_case(liger_emit_note 0 plan llama-3.2-1b 2xH200 --liger --emit accelerate ERR "note: Liger: TrainingArguments.use_liger_kernel=True.")
run_case(moe_pad_without_capacity 2 estimate mixtral-8x7b 8xH100 --framework megatron --moe-pad-to-capacity ERR "--moe-pad-to-capacity needs --moe-capacity-factor")
run_case(quant_block_not_power_of_two 2 fit 7b A100 --method qlora --quant-block 100 ERR "--quant-block must be a power of two")
run_case(optimizer_impl_unknown 2 estimate 7b A100 --optimizer-impl turbo ERR "--optimizer-impl: unknown optimizer implementation")
run_case(optimizer_impl_cpu_without_offload 2 estimate 7b A100 --optimizer-impl deepspeed-cpu ERR "--optimizer-impl deepspeed-cpu steps on the host")
run_case(optimizer_impl_gpu_with_offload 2 estimate 7b 4xA100 --strategy zero2 --offload optimizer --optimizer-impl deepspeed-fused ERR "--optimizer-impl deepspeed-fused runs on the GPU")
# A family without an SDPA path in the chosen transformers release: the note says eager runs.
run_case(sdpa_path_gone 0 estimate gemma-2-2b 1xH100 --method lora --attention sdpa MATCH "transformers 5.24 has no SDPA path for gemma2")
run_case(optimizer_impl_fused 0 estimate 7b 1xH200 --precision bf16-true --checkpointing full --optimizer-impl fused MATCH "optimizer step" "memory-bound" "host")
run_case(bad_lora_target 2 fit 7b A100 --method lora --lora-targets q,qkv ERR "unknown LoRA target 'qkv'")
run_case(truncated_config 2 fit ${DATA}/truncated_config.json A100 ERR "truncated_config.json" "invalid JSON")
# A key the file leaves out takes its Hugging Face class's default, and the output says so.
run_case(missing_key_config 0 fit ${DATA}/missing_vocab.json A100 MATCH "vocab_size missing: LlamaConfig default 32000")
run_case(missing_model_type 2 fit ${DATA}/missing_model_type.json A100 ERR "missing_model_type.json" "'model_type' is missing")
run_case(heads_not_dividing_hidden 2 fit ${DATA}/heads_not_dividing.json A100 ERR "not divisible by 8 attention heads")
run_case(seq_beyond_positions 2 fit gpt2 A100 --seq 4096 ERR "exceeds the 1024 learned positions")
run_case(bad_inter_node 2 fit 7b 2x8xA100 --inter-node fast ERR "--inter-node 'fast'")
run_case(cluster_file_typo 2 fit 7b ${DATA}/cluster_typo.json ERR "unknown keys present: 'gpus_per_nodes'")
run_case(bad_host_memory 2 fit 7b A100 --host-memory -3 ERR "--host-memory must be above 0 \\(got -3\\)")
# Offloaded states beyond the nodes' stated CPU memory do not fit, and the verdict says why.
run_case(host_memory_too_small 1 fit llama-2-70b 8xA100-80GB --seq 8192 --offload optimizer
         --checkpointing full-offload --host-memory 100 MATCH "the offloaded share needs .* GiB of CPU memory per node, of 100.0 GiB")
run_case(megatron_has_no_fsdp_hybrid 2 fit 7b 8xA100 --framework megatron --strategy fsdp-hybrid ERR "megatron framework" "zero2/zero3 for Megatron FSDP")
run_case(megatron_fsdp_searched 0 plan llama-3.1-8b 8xH100 --framework megatron --seq 8192 --top 3 MATCH "1 +ZeRO-3 ")
run_case(megatron_fsdp_emit 0 plan llama-3.1-8b 8xH100 --framework megatron --strategy zero3 --emit torchrun MATCH "--use-megatron-fsdp --data-parallel-sharding-strategy optim_grads_params")
run_case(cluster_count_overflow 2 fit 7b 99999999999999999999xA100 ERR "count '99999999999999999999' is too large")
string(REPEAT "1x" 20000 long_cluster)
run_case(cluster_spec_too_long 2 fit 7b "${long_cluster}A100" ERR "the cluster argument: too long \\(40004 characters")
run_case(inter_node_count_overflow 2 fit 7b 2x8xA100 --inter-node 99999999999999x200Gbps ERR "--inter-node" "too large")
run_case(no_arguments nonzero)
# GPU capabilities: a V100 (no bf16 tensor cores, no FlashAttention-2) defaults to fp16-mixed and
# sdpa, and refuses bf16 and flash by name (docs/formulas.md, "GPU capabilities").
run_case(v100_defaults_fp16_mixed 1 fit 7b V100-32GB
         MATCH "micro-batch 1, fp16-mixed" "precision fp16-mixed: V100-32GB has no bf16 tensor cores")
run_case(v100_fit_json_fp16_mixed 0 fit 7b 8xV100-32GB --json MATCH "\"precision\": \"fp16-mixed\"")
if(last_out MATCHES "\"precision\": \"bf16")
  message("FAIL v100_fit_json_fp16_mixed: a V100 candidate names bf16")
  math(EXPR failures "${failures} + 1")
endif()
# bf16 there is emulated by PyTorch: answered with a warning, never written as a launch config.
run_case(v100_bf16_true_answered 0 fit tinyllama-1.1b V100-32GB --precision bf16-true
         ERR "--precision bf16-true: V100-32GB has no bf16 tensor cores; PyTorch runs bf16 there emulated")
run_case(v100_bf16_mixed_plan_answered 0 plan 7b 8xV100-32GB --precision bf16-mixed --top 1
         ERR "--precision bf16-mixed: V100-32GB has no bf16 tensor cores")
run_case(v100_bf16_emit_refused 2 estimate tinyllama-1.1b V100-32GB --precision bf16-mixed --emit deepspeed
         ERR "--precision bf16-mixed: V100-32GB runs bf16 only emulated" "no launch config is written")
# The training library (docs/formulas.md, "Training libraries"): litgpt copies grouped K/V to every
# head, so the LLM lab's TinyLlama run at fp32, micro-batch 32, 512 tokens does not fit an A100-80GB.
run_case(library_litgpt_lab_oom 1 fit tinyllama-1.1b A100-80GB --library litgpt --precision fp32
         --micro-batch 32 --seq 512 --strategy single --checkpointing none --offload none
         MATCH "does not fit" "note: attention sdpa: litgpt always calls torch's SDPA")
run_case(library_emit_refused 2 estimate tinyllama-1.1b A100-80GB --library litgpt --emit torchrun
         ERR "--library litgpt: it does not start a job from the torchrun launch config")
run_case(library_unknown 2 fit 7b A100 --library nope ERR "--library: unknown library 'nope' \\(expected one of: hf-trainer")
run_case(tf32_without_fp32_warns 0 fit tinyllama-1.1b A100 --tf32 ERR "--tf32 true ignored: it applies with --precision fp32")
run_case(v100_flash_refused 2 estimate 7b V100-32GB --attention flash
         ERR "--attention flash: V100-32GB" "FlashAttention-2" "it supports sdpa, eager")
run_case(v100_emit_torchrun_fp16 0 estimate 7b 8xV100-32GB --method lora --strategy ddp --emit torchrun
         MATCH " --fp16" "--attn_implementation sdpa" ERR "loss is scaled dynamically")
if(last_out MATCHES "bf16|flash_attention_2")
  message("FAIL v100_emit_torchrun_fp16: the V100 launch line names bf16 or FlashAttention-2")
  math(EXPR failures "${failures} + 1")
endif()
# An emitter's refusal names the options to change; the command line words them as its flags.
run_case(emit_refusal_in_flags 2 estimate llama-2-7b 8xA100-80GB --strategy fsdp-hybrid --emit deepspeed
         ERR "--emit deepspeed: DeepSpeed has no hybrid sharding"
             "plan with --strategy zero3 \\(--zero-plus-plus adds node-local gathers\\), or --emit accelerate")
run_case(emit_note_in_flags 0 estimate llama-2-7b 8xA100-80GB --framework deepspeed --strategy zero3 --offload optimizer
         --emit accelerate ERR "note: write ds_config.json with --emit deepspeed")

# The request layer: config files read with --from (tests/request/configs holds real ones), fit's margin,
# explain.
set(CONFIGS ${DATA}/../../request/configs)
run_case(megatron_fsdp_bad_sharding 2 estimate llama-3.1-8b 8xH100 --from ${CONFIGS}/bad-megatron-fsdp-sharding.sh ERR "--data-parallel-sharding-strategy" "must be no_shard, optim, optim_grads or optim_grads_params")
# DeepSpeed's "auto" with nothing to resolve it is answered as if the key were left out, said in a
# note (fit reports the largest micro-batch that fits; plan searches it).
run_case(from_deepspeed_auto_left_open 0 fit llama-2-7b 8xA100-80GB --from ${CONFIGS}/ds-accelerate-zero_stage3_offload.json
         MATCH "train_micro_batch_size_per_gpu = \"auto\": left to other inputs; nothing else gives micro-batch: default 1"
               "micro-batch up to")
run_case(from_deepspeed_auto_searched_by_plan 0 plan llama-2-7b 8xA100-80GB --top 1 --from ${CONFIGS}/ds-accelerate-zero_stage3_offload.json
         MATCH "train_micro_batch_size_per_gpu = \"auto\".*micro-batch: searched when omitted")
run_case(from_deepspeed_zero3 0 fit llama-2-7b 8xA100-80GB --from ${CONFIGS}/ds-accelerate-zero_stage3_offload.json --micro-batch 4
         MATCH "ZeRO-3, optimizer\\+params offload" "strategy zero3 +<- zero_optimization.stage = 3")
run_case(from_accelerate_wrong_cluster 2 estimate llama-2-7b 8xA100-80GB --from ${CONFIGS}/accelerate-fsdp.yaml
         ERR "num_processes = 2" "8 GPUs")
run_case(from_flag_overrides_file 0 estimate llama-2-7b 2xA100-80GB --from ${CONFIGS}/accelerate-fsdp.yaml --from ${CONFIGS}/peft-lora-r8.json --lora-rank 4
         MATCH "lora-rank 4 overrides peft-lora-r8.json: r = 8")
run_case(from_not_a_config 2 fit llama-2-7b 8xA100-80GB --from ${CONFIGS}/bad-wrong-kind.json ERR "bad-wrong-kind.json")
run_case(margin_out_of_range 2 fit llama-2-7b 4xA100-80GB --margin 1 ERR "--margin must be below 1")
# The seed lab's DDP run (teaching-on-testbeds/llm-chi torch/a100_llama7b_4ddp.py at 5bb926bb:
# OpenLLaMA-7B, 4x A100-80GB, micro-batch 4, 512 tokens) ran at 73.98 GB
# allocated, 78.30 GB reserved: tight, not a no (its torch.optim.AdamW: foreach).
run_case(seed_ddp_is_tight 0 fit openlm-research/open_llama_7b 4xA100-80GB --precision bf16-true --strategy ddp
         --micro-batch 4 --seq 512 --checkpointing none --offload none --optimizer-impl foreach MATCH "^Tight")
run_case(explain_suggests_changes 1 explain meta-llama/Llama-3.1-8B 4xA100-40GB
         --from ${CONFIGS}/litgpt-llama-3.1-8b-full.yaml --seq 4096 MATCH "does not fit" "--micro-batch 1 \\(was 4\\), --grad-accum 16 \\(was 4\\)")
run_case(explain_fits_as_given 0 explain llama-2-7b 8xA100-80GB --strategy fsdp-full MATCH "Nothing to change")
# explain --json: the same answer and exit code; every suggestion names its changes and carries its plan.
run_case(explain_json 1 explain meta-llama/Llama-3.1-8B 4xA100-40GB
         --from ${CONFIGS}/litgpt-llama-3.1-8b-full.yaml --seq 4096 --json MATCH "\"schema\": \"trainplan.explain/1\"")
string(JSON fits GET "${last_out}" fits)
string(JSON nsug LENGTH "${last_out}" suggestions)
# litgpt accumulates under FSDP's no_sync: every rank holds the whole model's bf16 gradients; the
# fastest change that fits takes the micro-batch down to 1 (with torch.compile beside it).
string(JSON first_option GET "${last_out}" suggestions 0 changes 0 option)
string(JSON first_to GET "${last_out}" suggestions 0 changes 0 to)
string(JSON first_verdict GET "${last_out}" suggestions 0 plan verdict)
if(fits OR nsug LESS 2 OR NOT first_option STREQUAL "micro-batch" OR NOT first_to STREQUAL "1"
   OR first_verdict STREQUAL "no")
  message("FAIL explain_json contents: fits=${fits} suggestions=${nsug} first=${first_option} ${first_to} ${first_verdict}")
  math(EXPR failures "${failures} + 1")
endif()

# torchtitan's llama3_8b.toml (e7c0cae) with the flags of Trainy's command line reads as the
# published-fp8-cp.json case states that run: the same memory and throughput as those options given.
run_case(torchtitan_toml_as_trainy 0 estimate llama-3.1-8b 4x8xH200 --from ${CONFIGS}/torchtitan-llama3-8b-e7c0cae.toml
         --micro-batch 2 --compile --fp8 torchao-tensorwise --fp8-param-gather --json)
string(JSON toml_reserved GET "${last_out}" plan memory reserved_bytes)
string(JSON toml_tps GET "${last_out}" plan tokens_per_s)
run_case(torchtitan_flags_as_trainy 0 estimate llama-3.1-8b 4x8xH200 --library torchtitan --strategy fsdp-full
         --micro-batch 2 --seq 8192 --checkpointing selective-op --attention flash --compile --fp8 torchao-tensorwise
         --fp8-param-gather --optimizer-impl fused --offload none --json)
string(JSON flags_reserved GET "${last_out}" plan memory reserved_bytes)
string(JSON flags_tps GET "${last_out}" plan tokens_per_s)
if(NOT toml_reserved STREQUAL flags_reserved OR NOT toml_tps STREQUAL flags_tps)
  message("FAIL torchtitan TOML vs flags: reserved ${toml_reserved} / ${flags_reserved}, tokens/s ${toml_tps} / ${flags_tps}")
  math(EXPR failures "${failures} + 1")
endif()

if(failures GREATER 0)
  message(FATAL_ERROR "${failures} command-line case(s) failed")
endif()
# FSDP2's reshard_after_forward=N: from the option, and from composer's FSDP2Config in an llm-foundry
# YAML (false reads as 1, kept gathered); ignored with a warning under FSDP1.
run_case(reshard_after_forward_label 0 estimate llama-3.1-8b 16xH100 --strategy fsdp-full --fsdp-version 2
         --reshard-after-forward 8 MATCH "FSDP2 full-shard \\(reshard_after_forward=8\\) across 2 nodes")
run_case(reshard_after_forward_fsdp1 0 estimate llama-3.1-8b 16xH100 --strategy fsdp-full --reshard-after-forward 8
         ERR "warning: --reshard-after-forward 8 ignored: it applies with FSDP2")
file(WRITE ${WORK}/llmfoundry-reshard-8.yaml "max_seq_len: 2048\nmodel:\n  name: hf_causal_lm\n  pretrained_model_name_or_path: meta-llama/Llama-3.1-8B\nprecision: amp_bf16\ndevice_train_microbatch_size: 1\nfsdp_config:\n  sharding_strategy: FULL_SHARD\n  reshard_after_forward: 8\n")
run_case(reshard_after_forward_llmfoundry 0 estimate llama-3.1-8b 16xH100 --fsdp-version 2
         --from ${WORK}/llmfoundry-reshard-8.yaml --json MATCH "\"reshard_after_forward\": 8")
file(WRITE ${WORK}/llmfoundry-reshard-false.yaml "max_seq_len: 2048\nmodel:\n  name: hf_causal_lm\n  pretrained_model_name_or_path: meta-llama/Llama-3.1-8B\nprecision: amp_bf16\ndevice_train_microbatch_size: 1\nfsdp_config:\n  reshard_after_forward: false\n")
run_case(reshard_after_forward_llmfoundry_false 0 estimate llama-3.1-8b 16xH100 --fsdp-version 2
         --from ${WORK}/llmfoundry-reshard-false.yaml MATCH "reshard-after-forward 1 +<- fsdp_config.reshard_after_forward = false")
# explain frees the post-forward copies (back to True) where the plan does not fit.
run_case(reshard_after_forward_explain 1 explain llama-3.1-70b 32xH100 --strategy fsdp-full --fsdp-version 2
         --reshard-after-forward 8 --seq 4096 --micro-batch 2 --checkpointing full
         MATCH "--reshard-after-forward 0 \\(was 8\\)")
# accelerate's FSDP2 takes reshard_after_forward as a bool, text included (str_to_bool).
file(WRITE ${WORK}/accelerate-fsdp2-reshard-text.yaml "distributed_type: FSDP\nnum_processes: 16\nfsdp_config:\n  fsdp_version: 2\n  fsdp_reshard_after_forward: \"False\"\n")
run_case(reshard_after_forward_accelerate_text 0 estimate llama-3.1-8b 16xH100 --from ${WORK}/accelerate-fsdp2-reshard-text.yaml
         MATCH "FSDP2 grad-op across 2 nodes")
# Hybrid sharding's group size from DeepSpeed MiCS's mics_shard_size and torchtitan's HSDP degrees.
file(WRITE ${WORK}/ds-mics-16.json "{\"train_micro_batch_size_per_gpu\": 1, \"bf16\": {\"enabled\": true}, \"zero_optimization\": {\"stage\": 3, \"mics_shard_size\": 16}}")
run_case(hybrid_shard_mics 0 estimate llama-3.1-8b 32xH100 --from ${WORK}/ds-mics-16.json
         MATCH "hybrid-shard \\(groups of 16\\) across 4 nodes" "hybrid-shard 16 +<- zero_optimization.mics_shard_size = 16")
file(WRITE ${WORK}/torchtitan-hsdp.toml "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[training]\nlocal_batch_size = 1\nseq_len = 4096\n[parallelism]\ndata_parallel_replicate_degree = 2\ndata_parallel_shard_degree = 16\n")
run_case(hybrid_shard_torchtitan 0 estimate llama-3.1-8b 32xH100 --from ${WORK}/torchtitan-hsdp.toml --json
         MATCH "\"hybrid_shard\": 16")
run_case(hybrid_shard_ignored 0 estimate llama-3.1-8b 32xH100 --strategy fsdp-full --hybrid-shard 16
         ERR "warning: --hybrid-shard 16 ignored: it applies with --strategy fsdp-hybrid")
file(WRITE ${WORK}/accelerate-hsdp.yaml "distributed_type: FSDP\nnum_machines: 4\nnum_processes: 32\nfsdp_config:\n  fsdp_version: 2\nparallelism_config:\n  parallelism_config_dp_replicate_size: 2\n  parallelism_config_dp_shard_size: 16\n")
run_case(hybrid_shard_accelerate 0 estimate llama-3.1-8b 32xH100 --from ${WORK}/accelerate-hsdp.yaml
         MATCH "FSDP2 hybrid-shard \\(groups of 16\\) across 4 nodes")
file(WRITE ${WORK}/axolotl-hsdp.yaml "base_model: meta-llama/Llama-3.1-8B\nmicro_batch_size: 1\nsequence_len: 4096\nbf16: true\nfsdp_version: 2\nfsdp_config:\n  reshard_after_forward: true\ndp_replicate_size: 2\ndp_shard_size: 16\n")
run_case(hybrid_shard_axolotl 0 estimate llama-3.1-8b 32xH100 --from ${WORK}/axolotl-hsdp.yaml
         MATCH "FSDP2 hybrid-shard \\(groups of 16\\) across 4 nodes")
# HSDP shards over dp_shard x cp (torchtitan's and accelerate's "dp_shard_cp" mesh dimension).
file(WRITE ${WORK}/torchtitan-hsdp-cp.toml "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[training]\nlocal_batch_size = 1\nseq_len = 8192\n[parallelism]\ndata_parallel_replicate_degree = 2\ndata_parallel_shard_degree = 8\ncontext_parallel_degree = 2\n")
run_case(hybrid_shard_torchtitan_cp 0 estimate llama-3.1-8b 32xH100 --from ${WORK}/torchtitan-hsdp-cp.toml
         MATCH "hybrid-shard \\(groups of 16\\)")
