// The launch configurations: each emitted file parsed back and checked against the plan and against
// the rule its framework enforces, across twelve plans; and every plan a format cannot express
// refused with a message that names what is missing.
//
// The rules checked, with their sources:
// - DeepSpeed asserts train_batch_size == train_micro_batch_size_per_gpu x
//   gradient_accumulation_steps x data-parallel world size (deepspeed/runtime/config.py
//   DeepSpeedConfig._batch_assertion, deepspeedai/DeepSpeed v0.19.6 @edaa7221); ZeRO++ is
//   zero_quantized_weights, zero_hpz_partition_size = GPUs per node, zero_quantized_gradients
//   (deepspeed.ai/tutorials/zeropp/; runtime/zero/config.py); fp16 with "loss_scale": 0 scales the
//   loss dynamically (deepspeed.ai/docs/config-json/, "FP16 training options").
// - accelerate's config keys (ClusterConfig in src/accelerate/commands/config/config_args.py,
//   huggingface/accelerate @16cb6eb8): num_processes is the total over machines; distributed_type
//   FSDP / MULTI_GPU / DEEPSPEED / NO.
// - Megatron-LM's pretrain_gpt.py flags (megatron/training/arguments.py and the TransformerConfig
//   fields it exposes, NVIDIA/Megatron-LM @d98e8a64, core 0.20.0): --global-batch-size is
//   micro-batch x accumulation x data-parallel size; --num-layers-per-virtual-pipeline-stage is
//   layers / (PP x virtual stages); --optimizer-cpu-offload requires
//   --use-precision-aware-optimizer (validate_args).
// - Model shapes: the Hugging Face config.json of each catalogue model (data/models/*.json cite
//   them); GPT-3 175B from Brown et al. 2020 (arXiv:2005.14165) Table 2.1.
#include "emit_fixture.hpp"

namespace trainplan::planner {
namespace {

using namespace emit_test;

TEST(Emit, DenseFsdpOneNode) {
  Plan plan{"fsdp", "llama-2-7b", "8xA100-80GB", training(Strategy::fsdp_full, 2, 4), false, 64};
  plan.t.checkpointing = Checkpointing::full;
  const Emitting r = emitting(plan);

  const auto y = yaml_keys(emit(EmitFormat::accelerate, r.e, r.p.c, r.p.a, r.x).text);
  EXPECT_EQ(y.at("distributed_type"), "FSDP");
  EXPECT_EQ(y.at("fsdp_config.fsdp_sharding_strategy"), "FULL_SHARD");
  EXPECT_EQ(y.at("fsdp_config.fsdp_auto_wrap_policy"), "TRANSFORMER_BASED_WRAP");
  // transformers models/llama/modeling_llama.py: LlamaPreTrainedModel._no_split_modules.
  EXPECT_EQ(y.at("fsdp_config.fsdp_transformer_layer_cls_to_wrap"), "LlamaDecoderLayer");
  EXPECT_EQ(y.at("fsdp_config.fsdp_offload_params"), "false");
  EXPECT_EQ(y.at("fsdp_config.fsdp_activation_checkpointing"), "true");
  EXPECT_EQ(y.at("mixed_precision"), "bf16");
  EXPECT_EQ(y.at("num_machines"), "1");
  EXPECT_EQ(y.at("num_processes"), "8");
  EXPECT_EQ(y.count("main_process_ip"), 0u);

  const nlohmann::json ds = nlohmann::json::parse(emit(EmitFormat::deepspeed, r.e, r.p.c, r.p.a, r.x).text);
  EXPECT_EQ(ds["train_batch_size"], plan.global_batch);
  EXPECT_EQ(ds["zero_optimization"]["stage"], 3);  // FULL_SHARD = ZeRO-3
  EXPECT_TRUE(ds.contains("activation_checkpointing"));

  const std::string cmd = emit(EmitFormat::torchrun, r.e, r.p.c, r.p.a, r.x).text;
  EXPECT_EQ(flag(cmd, "--nproc_per_node"), "8");
  EXPECT_EQ(flag(cmd, "--model_name_or_path"), "meta-llama/Llama-2-7b-hf");
  EXPECT_EQ(flag(cmd, "--per_device_train_batch_size"), "2");
  EXPECT_EQ(flag(cmd, "--gradient_accumulation_steps"), "4");
  EXPECT_TRUE(contains(cmd, "--fsdp \"full_shard auto_wrap\"")) << cmd;
  EXPECT_TRUE(flag(cmd, "--bf16").has_value());
  EXPECT_TRUE(flag(cmd, "--gradient_checkpointing").has_value());
}

// --- 2. FSDP hybrid sharding across nodes ---------------------------------------------------

TEST(Emit, MultiNodeFsdpHybrid) {
  Plan plan{"hybrid", "llama-2-13b", "2x8xA100-80GB", training(Strategy::fsdp_hybrid, 1, 8), false,
            128};
  const Emitting r = emitting(plan);
  const Emitted acc = emit(EmitFormat::accelerate, r.e, r.p.c, r.p.a, r.x);
  const auto y = yaml_keys(acc.text);
  EXPECT_EQ(y.at("fsdp_config.fsdp_sharding_strategy"), "HYBRID_SHARD");
  EXPECT_EQ(y.at("num_machines"), "2");
  EXPECT_EQ(y.at("num_processes"), "16");  // total over machines
  EXPECT_EQ(y.at("main_process_ip"), "FILL_IN_MAIN_MACHINE_IP");
  EXPECT_TRUE(y.contains("main_process_port"));
  EXPECT_TRUE(contains(acc.text, "main_process_ip: FILL_IN_MAIN_MACHINE_IP  # FILL IN")) << acc.text;
  EXPECT_TRUE(any_note(acc, "fill in main_process_ip"));

  // DeepSpeed's hybrid sharding (MiCS) is gone: DeepSpeed 0.19.8's DeepSpeedConfig rejects
  // mics_shard_size as removed (deepspeed/runtime/config.py, issue deepspeedai/DeepSpeed#8489).
  const std::string ds = refusal([&] { (void)emit(EmitFormat::deepspeed, r.e, r.p.c, r.p.a, r.x); });
  EXPECT_TRUE(contains(ds, "no hybrid sharding")) << ds;
  EXPECT_TRUE(contains(ds, "plan with {strategy} zero3 ({zero-plus-plus} adds node-local gathers)"))
      << ds;

  const Emitted run = emit(EmitFormat::torchrun, r.e, r.p.c, r.p.a, r.x);
  EXPECT_EQ(flag(run.text, "--nnodes"), "2");
  EXPECT_EQ(flag(run.text, "--nproc_per_node"), "8");
  EXPECT_EQ(flag(run.text, "--node_rank"), "$NODE_RANK");
  EXPECT_TRUE(contains(run.text, "--fsdp \"hybrid_shard auto_wrap\"")) << run.text;
  EXPECT_TRUE(any_note(run, "MASTER_ADDR"));
}

// --- 3. ZeRO-2 ------------------------------------------------------------------------------

TEST(Emit, Zero2) {
  Plan plan{"zero2", "llama-2-7b", "8xA100-80GB", training(Strategy::zero2, 4, 2), false, 64};
  plan.t.framework = Framework::deepspeed;
  const Emitting r = emitting(plan);
  const nlohmann::json j = nlohmann::json::parse(emit(EmitFormat::deepspeed, r.e, r.p.c, r.p.a, r.x).text);
  EXPECT_EQ(j["train_batch_size"], plan.global_batch);
  EXPECT_EQ(j["train_micro_batch_size_per_gpu"], 4);
  EXPECT_EQ(j["gradient_accumulation_steps"], 2);
  EXPECT_EQ(j["zero_optimization"]["stage"], 2);
  EXPECT_FALSE(j["zero_optimization"].contains("offload_optimizer"));
  EXPECT_EQ(j["optimizer"]["type"], "AdamW");
  EXPECT_TRUE(j["bf16"]["enabled"]);
  EXPECT_FALSE(j.contains("fp16"));

  EXPECT_EQ(j["zero_optimization"]["overlap_comm"], true);
  // accelerate's inline keys leave overlap_comm to DeepSpeed, off below stage 3
  // (runtime/zero/config.py): the plan's overlapped reduction needs the full config.
  const auto y = yaml_keys(emit(EmitFormat::accelerate, r.e, r.p.c, r.p.a, r.x).text);
  EXPECT_EQ(y.at("distributed_type"), "DEEPSPEED");
  EXPECT_EQ(y.at("deepspeed_config.deepspeed_config_file"), "ds_config.json");
  Plan serial = plan;
  serial.t.no_overlap_comm = true;
  const Emitting rs = emitting(serial);
  const auto ys = yaml_keys(emit(EmitFormat::accelerate, rs.e, rs.p.c, rs.p.a, rs.x).text);
  EXPECT_EQ(ys.at("deepspeed_config.zero_stage"), "2");
  EXPECT_EQ(ys.at("deepspeed_config.gradient_accumulation_steps"), "2");
  EXPECT_EQ(ys.at("deepspeed_config.offload_optimizer_device"), "none");
  EXPECT_EQ(nlohmann::json::parse(emit(EmitFormat::deepspeed, rs.e, rs.p.c, rs.p.a, rs.x).text)["zero_optimization"]
                ["overlap_comm"],
            false);

  // DeepSpeed's bf16 master weights and moments are written back in its bf16 section; accelerate's
  // inline keys have none, so it points at the full config.
  Plan low = plan;
  low.t.bf16_master = low.t.bf16_optimizer_states = true;
  const Emitting rl = emitting(low);
  const auto jl = nlohmann::json::parse(emit(EmitFormat::deepspeed, rl.e, rl.p.c, rl.p.a, rl.x).text);
  EXPECT_EQ(jl["bf16"]["bf16_master_weights_and_grads"], true);
  EXPECT_EQ(jl["bf16"]["bf16_optimizer_states"], true);
  EXPECT_FALSE(j["bf16"].contains("bf16_master_weights_and_grads"));
  EXPECT_EQ(yaml_keys(emit(EmitFormat::accelerate, rl.e, rl.p.c, rl.p.a, rl.x).text)
                .at("deepspeed_config.deepspeed_config_file"),
            "ds_config.json");

  const std::string cmd = emit(EmitFormat::torchrun, r.e, r.p.c, r.p.a, r.x).text;
  EXPECT_EQ(flag(cmd, "--deepspeed"), "ds_config.json");
  EXPECT_FALSE(flag(cmd, "--optim").has_value()) << cmd;  // the DeepSpeed config's
}

// --- 4. ZeRO-3 with ZeRO++ across nodes ------------------------------------------------------

TEST(Emit, Zero3WithZeroPlusPlus) {
  Plan plan{"zero++", "llama-2-13b", "2x8xA100-80GB", training(Strategy::zero3, 1, 4), true, 64};
  plan.t.framework = Framework::deepspeed;
  const Emitting r = emitting(plan);
  const nlohmann::json j = nlohmann::json::parse(emit(EmitFormat::deepspeed, r.e, r.p.c, r.p.a, r.x).text);
  EXPECT_EQ(j["train_batch_size"], plan.global_batch);
  const nlohmann::json& z = j["zero_optimization"];
  EXPECT_EQ(z["stage"], 3);
  EXPECT_EQ(z["zero_quantized_weights"], true);
  EXPECT_EQ(z["zero_hpz_partition_size"], 8);  // GPUs per node
  EXPECT_EQ(z["zero_quantized_gradients"], true);

  // accelerate's inline DeepSpeed keys have no ZeRO++: it points at the full config.
  const Emitted acc = emit(EmitFormat::accelerate, r.e, r.p.c, r.p.a, r.x);
  const auto y = yaml_keys(acc.text);
  EXPECT_EQ(y.at("distributed_type"), "DEEPSPEED");
  EXPECT_EQ(y.at("deepspeed_config.deepspeed_config_file"), "ds_config.json");
  EXPECT_EQ(y.at("deepspeed_config.deepspeed_multinode_launcher"), "standard");
  EXPECT_TRUE(any_note(acc, "{emit} deepspeed"));

  // Without ZeRO++ the same plan has none of its keys.
  Plan plain = plan;
  plain.zero_plus_plus = false;
  const Emitting q = emitting(plain);
  const nlohmann::json k = nlohmann::json::parse(emit(EmitFormat::deepspeed, q.e, q.p.c, q.p.a, q.x).text);
  EXPECT_FALSE(k["zero_optimization"].contains("zero_quantized_weights"));
  EXPECT_FALSE(k["zero_optimization"].contains("zero_hpz_partition_size"));
}

// --- 5. ZeRO-3 with optimizer (and parameter) offload ----------------------------------------

TEST(Emit, Zero3WithOffload) {
  Plan plan{"offload", "llama-2-13b", "4xA100-80GB", training(Strategy::zero3, 2, 8), false, 64};
  plan.t.framework = Framework::deepspeed;
  plan.t.offload = Offload::optimizer;
  const Emitting r = emitting(plan);
  nlohmann::json j = nlohmann::json::parse(emit(EmitFormat::deepspeed, r.e, r.p.c, r.p.a, r.x).text);
  EXPECT_EQ(j["train_batch_size"], plan.global_batch);
  EXPECT_EQ(j["zero_optimization"]["offload_optimizer"]["device"], "cpu");
  EXPECT_EQ(j["zero_optimization"]["offload_optimizer"]["pin_memory"], true);
  EXPECT_FALSE(j["zero_optimization"].contains("offload_param"));

  plan.t.offload = Offload::optimizer_params;
  const Emitting q = emitting(plan);
  j = nlohmann::json::parse(emit(EmitFormat::deepspeed, q.e, q.p.c, q.p.a, q.x).text);
  EXPECT_EQ(j["zero_optimization"]["offload_param"]["device"], "cpu");
  EXPECT_EQ(j["zero_optimization"]["offload_param"]["pin_memory"], true);
  // accelerate: ZeRO-Offload needs DeepSpeed's CPU Adam, so the full config file.
  const auto y = yaml_keys(emit(EmitFormat::accelerate, q.e, q.p.c, q.p.a, q.x).text);
  EXPECT_EQ(y.at("deepspeed_config.deepspeed_config_file"), "ds_config.json");
}

// --- 6. LoRA with DDP -------------------------------------------------------------------------

TEST(Emit, LoraDdp) {
  Plan plan{"lora", "llama-2-13b", "4xA100-80GB", training(Strategy::ddp, 4, 2), false, 32};
  plan.t.method = Method::lora;
  const Emitting r = emitting(plan);
  const Emitted acc = emit(EmitFormat::accelerate, r.e, r.p.c, r.p.a, r.x);
  const auto y = yaml_keys(acc.text);
  EXPECT_EQ(y.at("distributed_type"), "MULTI_GPU");  // DDP, not FSDP
  EXPECT_EQ(y.count("fsdp_config"), 0u);
  EXPECT_EQ(y.at("num_processes"), "4");
  EXPECT_TRUE(any_note(acc, "configure PEFT"));
  EXPECT_TRUE(any_note(acc, "gradient_accumulation_steps=2"));

  const nlohmann::json j = nlohmann::json::parse(emit(EmitFormat::deepspeed, r.e, r.p.c, r.p.a, r.x).text);
  EXPECT_EQ(j["train_batch_size"], plan.global_batch);
  EXPECT_EQ(j["zero_optimization"]["stage"], 0);

  const std::string cmd = emit(EmitFormat::torchrun, r.e, r.p.c, r.p.a, r.x).text;
  EXPECT_FALSE(flag(cmd, "--fsdp").has_value()) << cmd;
  EXPECT_FALSE(flag(cmd, "--deepspeed").has_value()) << cmd;
  EXPECT_EQ(flag(cmd, "--optim"), "adamw_torch_fused");  // the Trainer's default from transformers 4.54
}

// --- 7. QLoRA on one GPU ----------------------------------------------------------------------

TEST(Emit, QloraOneGpu) {
  Plan plan{"qlora", "llama-2-7b", "1xA100-80GB", training(Strategy::single, 4, 4), false, 16};
  plan.t.method = Method::qlora;
  plan.t.optimizer = Optimizer::paged_adamw_8bit;
  const Emitting r = emitting(plan);
  const Emitted acc = emit(EmitFormat::accelerate, r.e, r.p.c, r.p.a, r.x);
  const auto y = yaml_keys(acc.text);
  EXPECT_EQ(y.at("distributed_type"), "NO");
  EXPECT_EQ(y.at("num_processes"), "1");
  EXPECT_TRUE(contains(acc.text, "distributed_type: 'NO'")) << acc.text;  // YAML 1.1 reads no as false
  EXPECT_TRUE(any_note(acc, "BitsAndBytesConfig(load_in_4bit=True"));

  const Emitted run = emit(EmitFormat::torchrun, r.e, r.p.c, r.p.a, r.x);
  EXPECT_EQ(flag(run.text, "--nproc_per_node"), "1");
  EXPECT_EQ(flag(run.text, "--optim"), "paged_adamw_8bit");  // transformers OptimizerNames

  const Emitted ds = emit(EmitFormat::deepspeed, r.e, r.p.c, r.p.a, r.x);
  const nlohmann::json j = nlohmann::json::parse(ds.text);
  EXPECT_EQ(j["train_batch_size"], plan.global_batch);
  EXPECT_FALSE(j.contains("optimizer"));  // bitsandbytes' is the client optimizer
  EXPECT_TRUE(any_note(ds, "PagedAdamW8bit"));
}

// --- 8. MoE with expert parallelism -----------------------------------------------------------

TEST(Emit, MoeWithExpertParallelism) {
  Plan plan{"moe", "mixtral-8x7b", "8xH100-80GB", training(Strategy::zero1, 1, 16), false, 128};
  plan.t.framework = Framework::megatron;
  plan.t.ep = 8;
  const Emitting r = emitting(plan);
  const std::string cmd = emit(EmitFormat::torchrun, r.e, r.p.c, r.p.a, r.x).text;
  EXPECT_EQ(flag(cmd, "--expert-model-parallel-size"), "8");
  // Mixtral-8x7B config.json: num_local_experts 8, num_experts_per_tok 2, 32 layers, 4096 hidden,
  // 14336 intermediate, 8 key/value heads.
  EXPECT_EQ(flag(cmd, "--num-experts"), "8");
  EXPECT_EQ(flag(cmd, "--moe-router-topk"), "2");
  EXPECT_EQ(flag(cmd, "--num-layers"), "32");
  EXPECT_EQ(flag(cmd, "--ffn-hidden-size"), "14336");
  EXPECT_EQ(flag(cmd, "--num-query-groups"), "8");
  EXPECT_EQ(flag(cmd, "--global-batch-size"), "128");
  EXPECT_TRUE(flag(cmd, "--use-distributed-optimizer").has_value());
  EXPECT_FALSE(flag(cmd, "--moe-expert-capacity-factor").has_value());  // dropless, Megatron's default

  // A capacity, and padding to it: Megatron-Core's flags (moe/README.md, "Token Dispatching").
  Plan capped = plan;
  capped.t.moe_capacity_factor = 1.25;
  capped.t.moe_pad_to_capacity = true;
  const Emitting c = emitting(capped);
  const std::string capped_cmd = emit(EmitFormat::torchrun, c.e, c.p.c, c.p.a, c.x).text;
  EXPECT_EQ(flag(capped_cmd, "--moe-expert-capacity-factor"), "1.25");
  EXPECT_TRUE(flag(capped_cmd, "--moe-pad-expert-input-to-capacity").has_value());

  // Neither a DeepSpeed nor an accelerate config can say where the experts go.
  Plan ds_plan = plan;
  ds_plan.t.framework = Framework::deepspeed;
  ds_plan.t.strategy = Strategy::zero3;
  const Emitting q = emitting(ds_plan);
  EXPECT_TRUE(contains(refusal([&] { (void)emit(EmitFormat::deepspeed, q.e, q.p.c, q.p.a, q.x); }),
                       "expert parallelism 8"));
  EXPECT_TRUE(contains(refusal([&] { (void)emit(EmitFormat::accelerate, q.e, q.p.c, q.p.a, q.x); }),
                       "expert parallelism 8"));
}

// --- 9. Megatron TP + PP ----------------------------------------------------------------------

TEST(Emit, MegatronTensorAndPipeline) {
  Plan plan{"tp+pp", "gpt3-175b", "8x8xA100-80GB", training(Strategy::ddp, 1, 64), false, 64};
  plan.t.framework = Framework::megatron;
  plan.t.tp = 8;
  plan.t.pp = 8;
  plan.t.checkpointing = Checkpointing::full;
  const Emitting r = emitting(plan);
  const Emitted run = emit(EmitFormat::torchrun, r.e, r.p.c, r.p.a, r.x);
  const std::string& cmd = run.text;
  EXPECT_EQ(flag(cmd, "--nnodes"), "8");
  EXPECT_EQ(flag(cmd, "--tensor-model-parallel-size"), "8");
  EXPECT_EQ(flag(cmd, "--pipeline-model-parallel-size"), "8");
  EXPECT_EQ(flag(cmd, "--micro-batch-size"), "1");
  EXPECT_EQ(flag(cmd, "--global-batch-size"), "64");  // DP 1: 1 x 64 x 1
  // Brown et al. 2020, Table 2.1: 96 layers, d_model 12288, 96 heads; MLP 4 x d_model.
  EXPECT_EQ(flag(cmd, "--num-layers"), "96");
  EXPECT_EQ(flag(cmd, "--hidden-size"), "12288");
  EXPECT_EQ(flag(cmd, "--num-attention-heads"), "96");
  EXPECT_EQ(flag(cmd, "--ffn-hidden-size"), "49152");
  EXPECT_EQ(flag(cmd, "--seq-length"), "2048");
  EXPECT_FALSE(flag(cmd, "--group-query-attention").has_value());
  EXPECT_FALSE(flag(cmd, "--swiglu").has_value());  // GPT: plain GELU MLP, learned positions
  EXPECT_FALSE(flag(cmd, "--position-embedding-type").has_value());
  EXPECT_EQ(flag(cmd, "--recompute-granularity"), "full");
  EXPECT_TRUE(flag(cmd, "--bf16").has_value());
  EXPECT_FALSE(flag(cmd, "--use-distributed-optimizer").has_value());
  // No Hub id for GPT-3: the tokenizer is the user's to add.
  EXPECT_FALSE(flag(cmd, "--tokenizer-model").has_value());
  EXPECT_TRUE(any_note(run, "tokenizer"));

  // DeepSpeed alone and accelerate cannot express TP/PP: refused, naming the degrees.
  const std::string ds = refusal([&] { (void)emit(EmitFormat::deepspeed, r.e, r.p.c, r.p.a, r.x); });
  EXPECT_TRUE(contains(ds, "{emit} deepspeed")) << ds;
  EXPECT_TRUE(contains(ds, "use {emit} torchrun with {framework} megatron")) << ds;
  EXPECT_TRUE(contains(ds, "tensor parallelism 8 / pipeline parallelism 8")) << ds;
  const std::string acc = refusal([&] { (void)emit(EmitFormat::accelerate, r.e, r.p.c, r.p.a, r.x); });
  EXPECT_TRUE(contains(acc, "tensor parallelism 8")) << acc;
  Estimate hf = r.e;
  hf.training.framework = Framework::pytorch;
  const std::string trainer = refusal([&] { (void)emit(EmitFormat::torchrun, hf, r.p.c, r.p.a, r.x); });
  EXPECT_TRUE(contains(trainer, "Hugging Face Trainer")) << trainer;
}

// --- 10. Megatron TP + PP + interleaving + sequence parallelism, optimizer offload ------------

TEST(Emit, MegatronInterleavedSequenceParallelOffload) {
  Plan plan{"vp", "llama-2-13b", "2x8xA100-80GB", training(Strategy::zero1, 1, 8), false, 8};
  plan.t.framework = Framework::megatron;
  plan.t.tp = 8;
  plan.t.pp = 2;
  plan.t.pp_virtual = 2;
  plan.t.sequence_parallel = true;
  plan.t.checkpointing = Checkpointing::selective;
  plan.t.offload = Offload::optimizer;
  const Emitting r = emitting(plan);
  const std::string cmd = emit(EmitFormat::torchrun, r.e, r.p.c, r.p.a, r.x).text;
  EXPECT_EQ(flag(cmd, "--num-layers-per-virtual-pipeline-stage"), "10");  // 40 / (2 x 2)
  EXPECT_TRUE(flag(cmd, "--sequence-parallel").has_value());
  EXPECT_EQ(flag(cmd, "--recompute-granularity"), "selective");
  EXPECT_EQ(flag(cmd, "--global-batch-size"), "8");
  EXPECT_TRUE(flag(cmd, "--use-distributed-optimizer").has_value());
  EXPECT_TRUE(flag(cmd, "--optimizer-cpu-offload").has_value());
  EXPECT_TRUE(flag(cmd, "--use-precision-aware-optimizer").has_value());
  // Llama-2-13b config.json: 40 layers, 5120 hidden, 40 heads (no GQA), 13824 intermediate,
  // SwiGLU, RMSNorm, rotary, untied embeddings, no biases.
  EXPECT_EQ(flag(cmd, "--hidden-size"), "5120");
  EXPECT_EQ(flag(cmd, "--ffn-hidden-size"), "13824");
  EXPECT_EQ(flag(cmd, "--max-position-embeddings"), "4096");
  EXPECT_TRUE(flag(cmd, "--swiglu").has_value());
  EXPECT_EQ(flag(cmd, "--normalization"), "RMSNorm");
  EXPECT_EQ(flag(cmd, "--position-embedding-type"), "rope");
  EXPECT_TRUE(flag(cmd, "--untie-embeddings-and-output-weights").has_value());
  EXPECT_TRUE(flag(cmd, "--disable-bias-linear").has_value());
  EXPECT_EQ(flag(cmd, "--tokenizer-model"), "meta-llama/Llama-2-13b-hf");
}

// --- 11. V100: fp16 everywhere ----------------------------------------------------------------

TEST(Emit, V100WritesFp16) {
  Plan plan{"v100", "llama-2-7b", "8xV100-32GB", training(Strategy::zero3, 1, 8), false, 64};
  plan.t.framework = Framework::deepspeed;
  plan.t.precision = Precision::fp16_mixed;
  plan.t.attention = Attention::sdpa;
  const Emitting r = emitting(plan);
  const nlohmann::json j = nlohmann::json::parse(emit(EmitFormat::deepspeed, r.e, r.p.c, r.p.a, r.x).text);
  EXPECT_EQ(j["fp16"]["enabled"], true);
  EXPECT_EQ(j["fp16"]["loss_scale"], 0);  // dynamic
  EXPECT_FALSE(j.contains("bf16"));
  EXPECT_EQ(j["train_batch_size"], plan.global_batch);
  const std::string yaml = emit(EmitFormat::accelerate, r.e, r.p.c, r.p.a, r.x).text;
  EXPECT_EQ(yaml_keys(yaml).at("mixed_precision"), "fp16");
  EXPECT_FALSE(contains(yaml, "bf16")) << yaml;
  const std::string cmd = emit(EmitFormat::torchrun, r.e, r.p.c, r.p.a, r.x).text;
  EXPECT_FALSE(contains(cmd, "bf16")) << cmd;
  EXPECT_EQ(flag(cmd, "--attn_implementation"), "sdpa");
  Estimate meg = r.e;
  meg.training.framework = Framework::megatron;
  meg.training.strategy = Strategy::zero1;
  const std::string mc = emit(EmitFormat::torchrun, meg, r.p.c, r.p.a, r.x).text;
  EXPECT_TRUE(flag(mc, "--fp16").has_value()) << mc;
  EXPECT_FALSE(flag(mc, "--bf16").has_value()) << mc;
  // A bf16 plan is not written for a V100 at all (hardware::require_supported).
  Estimate bf16 = r.e;
  bf16.training.precision = Precision::bf16_mixed;
  EXPECT_THROW((void)emit(EmitFormat::deepspeed, bf16, r.p.c, r.p.a, r.x), InputError);
}

// --- 12. DDP across nodes ---------------------------------------------------------------------

TEST(Emit, MultiNodeDdp) {
  Plan plan{"ddp", "llama-3.2-1b", "2x8xA100-80GB", training(Strategy::ddp, 4, 2), false, 128};
  const Emitting r = emitting(plan);
  const auto y = yaml_keys(emit(EmitFormat::accelerate, r.e, r.p.c, r.p.a, r.x).text);
  EXPECT_EQ(y.at("distributed_type"), "MULTI_GPU");
  EXPECT_EQ(y.at("num_machines"), "2");
  EXPECT_EQ(y.at("num_processes"), "16");
  EXPECT_EQ(y.at("machine_rank"), "0");
  EXPECT_EQ(y.at("main_process_ip"), "FILL_IN_MAIN_MACHINE_IP");
  const nlohmann::json j = nlohmann::json::parse(emit(EmitFormat::deepspeed, r.e, r.p.c, r.p.a, r.x).text);
  EXPECT_EQ(j["train_batch_size"], plan.global_batch);
  EXPECT_EQ(j["zero_optimization"]["stage"], 0);
  const std::string cmd = emit(EmitFormat::torchrun, r.e, r.p.c, r.p.a, r.x).text;
  EXPECT_EQ(flag(cmd, "--nnodes"), "2");
  EXPECT_EQ(flag(cmd, "--rdzv_endpoint"), "$MASTER_ADDR:29500");
  EXPECT_EQ(flag(cmd, "--model_name_or_path"), "meta-llama/Llama-3.2-1B");
}

// --- What the formats cannot express ----------------------------------------------------------

// --- a plan that does not fit gets no launch config, in any format, unless forced ---------------

// llama-2-7b, full fine-tune, ZeRO-2 on 2x A100-80GB at micro-batch 64 x 2,048 tokens without
// checkpointing: the activations alone are hundreds of GiB per GPU (Korthikanti et al. 2022,
// arXiv:2205.05198, Table 2: about 34 s b h bytes per layer with flash attention's s^2 term gone).

}  // namespace
}  // namespace trainplan::planner
