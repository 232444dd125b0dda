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
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "../common/catalog.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/request/catalog.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/planner/emit.hpp"
#include "trainplan/planner/evaluator.hpp"

namespace trainplan::planner {
namespace {

using test::catalog;

struct Problem {
  model::Architecture a;
  model::ParameterCounts n;
  hardware::Cluster c;
  std::optional<std::string> hf_id;
};

Problem problem(const std::string& model, const std::string& cluster) {
  const request::ResolvedModel m = catalog().resolve_model(model);
  Problem p{m.arch, model::count_parameters(m.arch),
            catalog().resolve_cluster(cluster, std::nullopt).cluster,
            m.entry ? m.entry->hf_id : std::nullopt};
  return p;
}

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

bool any_note(const Emitted& out, const std::string& what) {
  for (const auto& n : out.notes)
    if (contains(n, what)) return true;
  return false;
}

// A minimal YAML reader for the accelerate configs: "key: value" lines, nested one level by
// two-space indentation, comments and quotes stripped. Keys as "fsdp_config.fsdp_version".
std::map<std::string, std::string> yaml_keys(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string line;
  std::string parent;
  while (std::getline(in, line)) {
    if (const auto hash = line.find(" #"); hash != std::string::npos) line.resize(hash);
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const bool nested = line.rfind("  ", 0) == 0;
    std::string key = line.substr(nested ? 2 : 0, colon - (nested ? 2 : 0));
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(' '));
    value.erase(value.find_last_not_of(' ') + 1);
    if (value.size() >= 2 && value.front() == '\'' && value.back() == '\'')
      value = value.substr(1, value.size() - 2);
    if (!nested) parent = value.empty() ? key : "";
    out[nested ? parent + "." + key : key] = value;
  }
  return out;
}

// The value after a flag of a command line ("" when the flag is last or takes none).
std::vector<std::string> words(const std::string& cmd) {
  std::istringstream in(cmd);
  std::vector<std::string> w;
  for (std::string s; in >> s;) w.push_back(s);
  return w;
}
std::optional<std::string> flag(const std::string& cmd, const std::string& name) {
  const std::vector<std::string> w = words(cmd);
  for (std::size_t i = 0; i < w.size(); ++i) {
    if (w[i] == name) return i + 1 < w.size() ? w[i + 1] : "";
    if (w[i].rfind(name + "=", 0) == 0) return w[i].substr(name.size() + 1);
  }
  return std::nullopt;
}

// The refusal's template: options named as {field}, each front end words them (FieldError).
std::string refusal(const std::function<void()>& f) {
  try {
    f();
  } catch (const EmitRefused& e) {
    return e.message_template();
  } catch (const std::exception& e) {
    return std::string("not an EmitRefused: ") + e.what();
  }
  return "(not refused)";
}

struct Plan {
  std::string name;
  std::string model;
  std::string cluster;
  model::Training t;
  bool zero_plus_plus = false;
  std::int64_t global_batch = 0;  // by hand: micro-batch x accumulation x GPUs / (TP x PP)
};

struct Emitting {
  Problem p;
  Estimate e;
  EmitContext x;
};

Emitting emitting(const Plan& plan) {
  Emitting r{problem(plan.model, plan.cluster), {}, {}};
  EstimateOptions opt;
  opt.zero_plus_plus = plan.zero_plus_plus;
  r.e = Evaluator(r.p.a, r.p.n, r.p.c, nullptr, {}, {}, opt).estimate(plan.t);
  // These tests check how each format expresses a plan, whatever its memory: the gate that keeps
  // a plan that does not fit from getting a launch config is NoLaunchConfigForAPlanThatDoesNotFit.
  r.x = {r.p.hf_id, plan.zero_plus_plus, /*force=*/true};
  return r;
}

model::Training training(Strategy s, std::int64_t micro, std::int64_t accum) {
  model::Training t;
  t.strategy = s;
  t.micro_batch = micro;
  t.grad_accum = accum;
  t.seq = 2048;
  return t;
}

// --- 1. dense FSDP on one node -------------------------------------------------------------

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

  const auto y = yaml_keys(emit(EmitFormat::accelerate, r.e, r.p.c, r.p.a, r.x).text);
  EXPECT_EQ(y.at("distributed_type"), "DEEPSPEED");
  EXPECT_EQ(y.at("deepspeed_config.zero_stage"), "2");
  EXPECT_EQ(y.at("deepspeed_config.gradient_accumulation_steps"), "2");
  EXPECT_EQ(y.at("deepspeed_config.offload_optimizer_device"), "none");

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
  EXPECT_EQ(flag(cmd, "--optim"), "adamw_torch");
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
TEST(Emit, NoLaunchConfigForAPlanThatDoesNotFitUnlessForced) {
  Plan plan{"oom", "llama-2-7b", "2xA100-80GB", training(Strategy::zero2, 64, 1), false, 128};
  plan.t.framework = Framework::deepspeed;
  Emitting r = emitting(plan);
  r.x.force = false;
  ASSERT_FALSE(r.e.fits) << "the premise: this plan does not fit";
  for (const EmitFormat f : {EmitFormat::deepspeed, EmitFormat::accelerate, EmitFormat::torchrun}) {
    SCOPED_TRACE(std::string(to_string(f)));
    try {
      (void)emit(f, r.e, r.p.c, r.p.a, r.x);
      ADD_FAILURE() << "a launch config was written for a plan that does not fit";
    } catch (const EmitDoesNotFit& e) {
      EXPECT_TRUE(contains(e.message_template(), "{force}")) << e.message_template();
      EXPECT_TRUE(contains(e.message_template(), "does not fit")) << e.message_template();
    }
    EmitContext forced = r.x;
    forced.force = true;
    const Emitted out = emit(f, r.e, r.p.c, r.p.a, forced);
    EXPECT_TRUE(any_note(out, "does not fit"));
    if (f == EmitFormat::deepspeed) {
      const nlohmann::json j = nlohmann::json::parse(out.text);  // still valid JSON
      EXPECT_TRUE(contains(j.at("trainplan_warning").get<std::string>(), "does not fit"));
      EXPECT_EQ(j.at("train_batch_size"), plan.global_batch);
    } else {
      EXPECT_EQ(out.text.rfind("# WARNING: written with --force", 0), 0u) << out.text;
    }
  }
  // plan --emit only ever sees plans that fit; one that does not is refused the same way.
  EXPECT_THROW((void)emit_first_expressible(EmitFormat::deepspeed, {r.e}, r.p.c, r.p.a, r.x), EmitDoesNotFit);
}

TEST(Emit, RefusesWhatTheFormatCannotExpress) {
  struct Row {
    std::string name;
    std::string model;
    std::string cluster;
    EmitFormat format;
    std::function<void(model::Training&)> set;
    bool zero_plus_plus;
    std::string expected;  // in the message
  };
  const std::vector<Row> rows{
      {"FSDP cannot offload the optimizer alone", "llama-2-7b", "8xA100-80GB", EmitFormat::accelerate,
       [](model::Training& t) { t.strategy = Strategy::fsdp_full; t.offload = Offload::optimizer; },
       false, "FSDP cannot offload the optimizer alone"},
      {"same through the Trainer", "llama-2-7b", "8xA100-80GB", EmitFormat::torchrun,
       [](model::Training& t) { t.strategy = Strategy::fsdp_full; t.offload = Offload::optimizer; },
       false, "FSDP cannot offload the optimizer alone (its CPU offload moves parameters, gradients and the "
              "optimizer step together); plan with {offload} optimizer+params, or {strategy} zero2/zero3"},
      {"Megatron-LM trains no adapters", "llama-2-7b", "8xA100-80GB", EmitFormat::torchrun,
       [](model::Training& t) { t.framework = Framework::megatron; t.method = Method::lora; },
       false, "Megatron-LM cannot train lora adapters"},
      {"Megatron-LM offloads no parameters", "llama-2-7b", "8xA100-80GB", EmitFormat::torchrun,
       [](model::Training& t) {
         t.framework = Framework::megatron;
         t.strategy = Strategy::zero1;
         t.offload = Offload::optimizer_params;
       },
       false, "offload parameters"},
      {"ZeRO++ needs ZeRO-3", "llama-2-7b", "2x8xA100-80GB", EmitFormat::deepspeed,
       [](model::Training& t) { t.strategy = Strategy::zero2; t.framework = Framework::deepspeed; },
       true, "ZeRO++ needs ZeRO stage 3 ({strategy} zero3)"},
      {"ZeRO++ is not FSDP", "llama-2-7b", "2x8xA100-80GB", EmitFormat::accelerate,
       [](model::Training& t) { t.strategy = Strategy::fsdp_full; }, true,
       "ZeRO++ is DeepSpeed's: plan with {strategy} zero3"},
      {"DeepSpeed keeps fp32 master weights", "llama-2-7b", "8xA100-80GB", EmitFormat::deepspeed,
       [](model::Training& t) { t.strategy = Strategy::zero2; t.precision = Precision::bf16_true; },
       false, "cannot train in bf16-true"},
      {"selective recomputation is Megatron's", "llama-2-7b", "8xA100-80GB", EmitFormat::accelerate,
       [](model::Training& t) { t.strategy = Strategy::fsdp_full; t.checkpointing = Checkpointing::selective; },
       false, "selective recomputation (Megatron-LM's); plan with {checkpointing} full or none"},
      {"DDP offloads nothing", "llama-2-7b", "8xA100-80GB", EmitFormat::deepspeed,
       [](model::Training& t) { t.strategy = Strategy::ddp; t.offload = Offload::optimizer; },
       false, "ZeRO stage 1-3"},
      {"pretrain_gpt.py is decoder-only", "t5-3b", "8xA100-80GB", EmitFormat::torchrun,
       [](model::Training& t) { t.framework = Framework::megatron; }, false, "encoder-decoder"},
      {"no ALiBi in Megatron's GPT", "bloom-560m", "8xA100-80GB", EmitFormat::torchrun,
       [](model::Training& t) { t.framework = Framework::megatron; }, false, "ALiBi"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    const Problem p = problem(row.model, row.cluster);
    model::Training t = training(Strategy::ddp, 1, 1);
    row.set(t);
    // The estimate is built directly: some of these plans make_layout itself would refuse, and
    // the emitters must not rely on that.
    Estimate e;
    e.training = t;
    e.layout.world = p.c.world();
    e.layout.nodes = p.c.nodes;
    e.layout.gpus_per_node = p.c.gpus_per_node;
    e.layout.dp = p.c.world();
    e.layout.shard = p.c.world();
    e.global_batch = t.micro_batch * t.grad_accum * e.layout.dp;
    const EmitContext x{p.hf_id, row.zero_plus_plus};
    const std::string msg = refusal([&] { (void)emit(row.format, e, p.c, p.a, x); });
    EXPECT_TRUE(contains(msg, row.expected)) << msg;
    EXPECT_TRUE(contains(msg, "{emit} " + std::string(to_string(row.format)))) << msg;
    // The planner names fields, never a front end's flags or labels.
    for (const char* flag : {"--emit", "--strategy", "--offload", "--checkpointing", "--framework",
                             "--zero-plus-plus"})
      EXPECT_FALSE(contains(msg, flag)) << msg;
  }
}

// plan --emit writes the best-ranked plan the format can express and says what it skipped.
TEST(Emit, PlanEmitsTheBestExpressiblePlan) {
  Plan tp{"tp", "llama-2-13b", "8xA100-80GB", training(Strategy::ddp, 1, 8), false, 8};
  tp.t.framework = Framework::megatron;
  tp.t.tp = 8;
  Plan zero{"zero", "llama-2-13b", "8xA100-80GB", training(Strategy::zero3, 1, 1), false, 8};
  zero.t.framework = Framework::deepspeed;
  const Emitting a = emitting(tp);
  const Emitting b = emitting(zero);
  const RankedEmit r = emit_first_expressible(EmitFormat::deepspeed, {a.e, b.e}, a.p.c, a.p.a, a.x);
  EXPECT_EQ(r.index, 1u);
  EXPECT_EQ(nlohmann::json::parse(r.emitted.text)["zero_optimization"]["stage"], 3);
  ASSERT_FALSE(r.emitted.notes.empty());
  EXPECT_TRUE(contains(r.emitted.notes.front(), "plan #2 written")) << r.emitted.notes.front();
  EXPECT_TRUE(contains(r.emitted.notes.front(), "tensor parallelism 8")) << r.emitted.notes.front();
  // Megatron can express the first: it is written, with no such note.
  const RankedEmit m = emit_first_expressible(EmitFormat::torchrun, {a.e, b.e}, a.p.c, a.p.a, a.x);
  EXPECT_EQ(m.index, 0u);
  // None expressible: the first plan's refusal.
  EXPECT_TRUE(contains(refusal([&] {
                         (void)emit_first_expressible(EmitFormat::accelerate, {a.e}, a.p.c, a.p.a, a.x);
                       }),
                       "tensor parallelism 8"));
  EXPECT_THROW((void)emit_first_expressible(EmitFormat::accelerate, {}, a.p.c, a.p.a, a.x), InputError);
}

// A model without a Hub id gets a placeholder and a note, never its catalogue name as an id.
TEST(Emit, ModelIdOnlyWhenKnown) {
  Plan plan{"gpt3", "gpt3-175b", "8xA100-80GB", training(Strategy::fsdp_full, 1, 1), false, 8};
  const Emitting r = emitting(plan);
  ASSERT_FALSE(r.p.hf_id.has_value());
  const Emitted run = emit(EmitFormat::torchrun, r.e, r.p.c, r.p.a, r.x);
  EXPECT_EQ(flag(run.text, "--model_name_or_path"), "MODEL_NAME_OR_PATH");
  EXPECT_FALSE(contains(run.text, "gpt3-175b")) << run.text;
  EXPECT_TRUE(any_note(run, "MODEL_NAME_OR_PATH"));
  // gpt2 family (GPT-3 is written in GPT-2 form): transformers' GPT2Block.
  const auto y = yaml_keys(emit(EmitFormat::accelerate, r.e, r.p.c, r.p.a, r.x).text);
  EXPECT_EQ(y.at("fsdp_config.fsdp_transformer_layer_cls_to_wrap"), "GPT2Block");
}

// The optimizer implementation reaches each format: the Trainer's --optim names
// (transformers OptimizerNames: adamw_torch builds torch.optim.AdamW, foreach by default;
// adamw_torch_fused passes fused=True) and DeepSpeed's torch_adam switch (FusedAdam when false).
TEST(Emit, OptimizerImplementationInEachFormat) {
  const Problem p = problem("llama-2-7b", "8xA100-80GB");
  model::Training tr;
  tr.strategy = Strategy::fsdp_full;
  struct Row {
    OptimizerImpl impl;
    std::string optim;
  };
  for (const Row& r : {Row{OptimizerImpl::framework_default, "--optim adamw_torch "},
                       Row{OptimizerImpl::foreach, "--optim adamw_torch "},
                       Row{OptimizerImpl::fused, "--optim adamw_torch_fused "},
                       Row{OptimizerImpl::for_loop, "--optim adamw_torch --optim_args foreach=False"}}) {
    SCOPED_TRACE(std::string(to_string(r.impl)));
    tr.optimizer_impl = r.impl;
    const Estimate e = Evaluator(p.a, p.n, p.c).estimate(tr);
    const std::string cmd = emit_torchrun(e, p.c, p.a).text;
    EXPECT_TRUE(contains(cmd, r.optim)) << cmd;
  }
  tr.strategy = Strategy::zero3;
  tr.framework = Framework::deepspeed;
  tr.optimizer_impl = OptimizerImpl::deepspeed_fused;
  nlohmann::json j = nlohmann::json::parse(emit_deepspeed(Evaluator(p.a, p.n, p.c).estimate(tr)).text);
  EXPECT_EQ(j["optimizer"]["params"]["torch_adam"], false);
  tr.optimizer_impl = OptimizerImpl::foreach;
  j = nlohmann::json::parse(emit_deepspeed(Evaluator(p.a, p.n, p.c).estimate(tr)).text);
  EXPECT_EQ(j["optimizer"]["params"]["torch_adam"], true);
  tr.optimizer_impl = OptimizerImpl::framework_default;
  j = nlohmann::json::parse(emit_deepspeed(Evaluator(p.a, p.n, p.c).estimate(tr)).text);
  EXPECT_EQ(j["optimizer"]["type"], "AdamW");  // the plan's optimizer
  EXPECT_FALSE(j["optimizer"]["params"].contains("torch_adam"));  // DeepSpeed's own default
  EXPECT_THROW((void)parse_enum<EmitFormat>("slurm"), InputError);
}

}  // namespace
}  // namespace trainplan::planner
