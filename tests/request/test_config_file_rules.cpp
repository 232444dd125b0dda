// The readers' rules beyond the real files: bad files refused by name, unknown keys as warnings,
// "auto" left open, what needs ZeRO-3, commands behind comments, the kind read from the content,
// YAML scalars as PyYAML reads them, and each framework's defaults and special cases (the sources
// are cited beside each test and in request/src/config_*.cpp).
#include "config_fixture.hpp"

namespace trainplan::request {
namespace {

using namespace config_test;

struct BadRow {
  std::string file;
  std::vector<std::string> message_parts;
};

TEST(ConfigFile, BadFilesAreRefusedByName) {
  const std::vector<BadRow> bad{
      {"bad-wrong-kind.json", {"bad-wrong-kind.json", "not a training config"}},
      {"bad-peft-ia3.json", {"bad-peft-ia3.json", "peft_type", "\"IA3\"", "LoRA"}},
      {"bad-ds-fp16-and-bf16.json",
       {"bad-ds-fp16-and-bf16.json", "bf16.enabled", "fp16.enabled", "contradicts"}},
      {"bad-ds-wrong-type.json",
       {"bad-ds-wrong-type.json", "train_micro_batch_size_per_gpu", "\"four\"", "integer"}},
      {"bad-ds-batch-arithmetic.json",
       {"bad-ds-batch-arithmetic.json", "train_batch_size", "10", "multiple"}},
      {"bad-ds-offload-param-stage2.json",
       {"bad-ds-offload-param-stage2.json", "offload_param", "stage 3"}},
      {"bad-accelerate-tpu.yaml", {"bad-accelerate-tpu.yaml", "distributed_type", "\"TPU\""}},
      {"bad-torchtitan-syntax.toml", {"bad-torchtitan-syntax.toml", "line 3", "a string is not closed"}},
      {"bad-torchtitan-ac.toml",
       {"bad-torchtitan-ac.toml", "activation_checkpoint.mode", "\"partial\"", "must be none, selective, full"}},
      {"bad-accelerate-fsdp-version.yaml",
       {"bad-accelerate-fsdp-version.yaml", "fsdp_config.fsdp_version", "3", "must be 1"}},
      {"bad-litgpt-batch.yaml",
       {"bad-litgpt-batch.yaml", "train.global_batch_size", "6", "micro_batch_size"}},
      {"bad-yaml-syntax.yaml", {"bad-yaml-syntax.yaml", "invalid YAML", "line"}},
      {"bad-litgpt-qlora-multi-gpu.yaml",
       {"bad-litgpt-qlora-multi-gpu.yaml", "quantize", "\"bnb.nf4\"", "one device"}},
      {"bad-megatron-granularity.sh",
       {"bad-megatron-granularity.sh", "--recompute-granularity", "partial"}},
      {"bad-megatron-fp8-recipe.sh",
       {"bad-megatron-fp8-recipe.sh", "--fp8-recipe", "nvfp4", "delayed, tensorwise, mxfp8 or blockwise"}},
      {"bad-megatron-fp8-format.sh", {"bad-megatron-fp8-format.sh", "--fp8-format", "e5m2", "e4m3 or hybrid"}},
      {"bad-megatron-fsdp-sharding.sh",
       {"bad-megatron-fsdp-sharding.sh", "--data-parallel-sharding-strategy", "optim_params",
        "no_shard, optim, optim_grads or optim_grads_params"}},
      {"no-such-file.json", {"no-such-file.json"}},
  };
  for (const BadRow& row : bad) {
    SCOPED_TRACE(row.file);
    try {
      (void)read_training_config(config_path(row.file));
      ADD_FAILURE() << "accepted";
    } catch (const InputError& e) {
      for (const std::string& part : row.message_parts)
        EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  }
}

TEST(ConfigFile, UnknownKeysAreNamedWarnings) {
  const ConfigRead ds = read_training_config(config_path("bad-ds-unknown-keys.json"));
  ASSERT_EQ(ds.warnings.size(), 2u);
  EXPECT_NE(ds.warnings[0].find("'fp16.loss_scal' is not a DeepSpeed key"), std::string::npos)
      << ds.warnings[0];
  EXPECT_NE(ds.warnings[1].find("'zero_optimisation' is not a DeepSpeed key"), std::string::npos)
      << ds.warnings[1];
  // The misspelt section is not read: DeepSpeed's default, stage 0, applies (said in the source).
  ASSERT_NE(ds.find("strategy"), nullptr);
  EXPECT_EQ(ds.find("strategy")->value, "ddp");
  EXPECT_NE(ds.find("strategy")->source.find("DeepSpeed's default"), std::string::npos);
  const ConfigRead ax = read_training_config(config_path("bad-axolotl-typos.yml"));
  ASSERT_EQ(ax.warnings.size(), 2u);
  EXPECT_NE(ax.warnings[0].find("'gradient_acumulation_steps' is not an axolotl key"),
            std::string::npos);
  EXPECT_NE(ax.warnings[1].find("'micro_batchsize' is not an axolotl key"), std::string::npos);
}

// "auto" with nothing to resolve it leaves the option open (a valid file is answered): each entry
// names the file, the key and the option; a flag or another file that gives the value closes it.
TEST(ConfigFile, AutoWithNothingToResolveItIsLeftOpen) {
  const std::vector<ConfigRead> reads{read_training_config(config_path("bad-ds-auto-only.json"))};
  EXPECT_EQ(reads[0].unresolved_options, (std::vector<std::string>{"micro-batch", "grad-accum"}));
  const std::vector<LeftOpen> open = left_open(reads, {});
  ASSERT_EQ(open.size(), 2u);
  EXPECT_EQ(open[0].option, "micro-batch");
  EXPECT_NE(open[0].text.find("bad-ds-auto-only.json"), std::string::npos) << open[0].text;
  EXPECT_NE(open[0].text.find("train_micro_batch_size_per_gpu"), std::string::npos) << open[0].text;
  EXPECT_EQ(open[1].option, "grad-accum");
  EXPECT_TRUE(left_open(reads, {"micro-batch", "grad-accum"}).empty());
  // Another file that gives the value resolves it too (a Trainer JSON next to a DeepSpeed "auto").
  std::vector<ConfigRead> with_trainer = reads;
  with_trainer.push_back(read_training_config_text(
      R"({"per_device_train_batch_size": 4, "gradient_accumulation_steps": 8})", "args.json"));
  EXPECT_TRUE(left_open(with_trainer, {}).empty());
}

TEST(ConfigFile, ZeroPlusPlusAndMicsNeedStage3) {
  // DeepSpeed runtime/zero/config.py: ZeRO++ and MiCS extend stage 3.
  EXPECT_THROW(
      (void)read_training_config_text(
          R"({"zero_optimization": {"stage": 2, "zero_quantized_weights": true}})", "z.json"),
      InputError);
  const ConfigRead mics = read_training_config_text(
      R"({"zero_optimization": {"stage": 3, "mics_shard_size": 8}})", "mics.json");
  EXPECT_EQ(mics.find("strategy")->value, "fsdp-hybrid");
  const ConfigRead part = read_training_config_text(
      R"({"zero_optimization": {"stage": 3, "zero_quantized_gradients": true}})", "qgz.json");
  EXPECT_EQ(part.find("zero-plus-plus")->value, "true");
  ASSERT_EQ(part.warnings.size(), 1u);
  EXPECT_NE(part.warnings[0].find("only part of ZeRO++"), std::string::npos);
}

TEST(ConfigFile, CommandLinesBehindComments) {
  const ConfigRead r = read_training_config_text(
      "# launch on one node\n# (8 GPUs)\ntorchrun --nproc_per_node=8 train.py "
      "--per_device_train_batch_size 2 --gradient_accumulation_steps 4 --bf16\n",
      "launch.sh");
  EXPECT_EQ(r.kind, "torchrun command");
  EXPECT_EQ(r.find("gpus")->value, "8");
  EXPECT_EQ(r.find("strategy")->value, "ddp");
  EXPECT_EQ(r.find("micro-batch")->value, "2");
}

TEST(ConfigFile, KindComesFromContentNotName) {
  // A DeepSpeed config saved as .yaml is still JSON and still DeepSpeed.
  const ConfigRead r =
      read_training_config_text(R"({"zero_optimization": {"stage": 1}})", "odd.yaml");
  EXPECT_EQ(r.kind, "DeepSpeed config");
  EXPECT_EQ(r.find("strategy")->value, "zero1");
  EXPECT_THROW((void)read_training_config_text("just: a\nmapping: 1\n", "x.json"), InputError);
}

TEST(ConfigFile, YamlScalarsFollowPyYaml) {
  // Unquoted `no` is a boolean in PyYAML; accelerate writes 'no' quoted: both mean no autocast,
  // which leaves fp32 or pure 16-bit to the script.
  for (const char* text : {"distributed_type: MULTI_GPU\nmixed_precision: no\n",
                           "distributed_type: MULTI_GPU\nmixed_precision: 'no'\n"}) {
    SCOPED_TRACE(text);
    EXPECT_EQ(read_training_config_text(text, "a.yaml").unresolved_options,
              (std::vector<std::string>{"precision"}));
  }
  EXPECT_EQ(
      read_training_config_text("distributed_type: MULTI_GPU\nmixed_precision: fp16\n", "a.yaml")
          .find("precision")
          ->value,
      "fp16-mixed");
  // A quoted number is a string: a wrong type for a count.
  EXPECT_THROW((void)read_training_config_text("distributed_type: MULTI_GPU\nnum_processes: '8'\n",
                                               "a.yaml"),
               InputError);
}

// axolotl takes the union of lora_target_modules and every linear layer when lora_target_linear is
// set (src/axolotl/loaders/adapter.py): all-linear, not a contradiction.
TEST(ConfigFile, AxolotlTargetLinearWithModulesIsTheUnion) {
  const ConfigRead r = read_training_config_text(
      "base_model: NousResearch/Llama-2-7b-hf\nadapter: lora\nlora_r: 8\nlora_target_linear: true\n"
      "lora_target_modules:\n  - q_proj\n  - v_proj\nmicro_batch_size: 1\n",
      "ax.yaml");
  const Setting* t = r.find("lora-targets");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->value, "all-linear");
  EXPECT_NE(t->source.find("the union"), std::string::npos) << t->source;
}

// bitsandbytes' paged 32-bit AdamW is its own optimizer (fp32 moments in paged memory); Apex's fused
// AdamW keeps torch AdamW's states and is priced as AdamW, with a warning saying so.
TEST(ConfigFile, PagedAdamW32BitAndApexFused) {
  const auto read = [](const char* optim) {
    return read_training_config_text(
        std::string(R"({"per_device_train_batch_size": 2, "output_dir": "x", "optim": ")") + optim + "\"}", "args.json");
  };
  const ConfigRead paged = read("paged_adamw_32bit");
  ASSERT_NE(paged.find("optimizer"), nullptr);
  EXPECT_EQ(paged.find("optimizer")->value, "paged-adamw");
  EXPECT_TRUE(paged.warnings.empty());
  const ConfigRead apex = read("adamw_apex_fused");
  ASSERT_NE(apex.find("optimizer"), nullptr);
  EXPECT_EQ(apex.find("optimizer")->value, "adamw");
  ASSERT_EQ(apex.warnings.size(), 1u);
  EXPECT_NE(apex.warnings[0].find("priced as AdamW"), std::string::npos) << apex.warnings[0];
}

// Launch scripts keep their flags in variables, often quoted over several lines (Megatron-LM's
// examples: GPT_ARGS="..."), with defaults from the environment (${GPUS_PER_NODE:-8}): bash
// expands them, unquoted, into separate words, and so does the reader. A flag hidden in a variable
// is read, never taken as absent.
TEST(ConfigFile, LaunchScriptVariablesExpandAsBashExpandsThem) {
  const std::string script =
      "#!/bin/bash\n"
      "GPUS_PER_NODE=${GPUS_PER_NODE:-8}\n"
      "export NNODES=1\n"
      "GPT_ARGS=\"\n"
      "    --tensor-model-parallel-size 2 \\\n"
      "    --micro-batch-size 4\n"
      "    --global-batch-size 32\n"
      "    --bf16\n"
      "\"\n"
      "DIST='--nproc_per_node '$GPUS_PER_NODE\" --nnodes $NNODES\"  # a comment\n"
      "torchrun $DIST pretrain_gpt.py \\\n"
      "    $GPT_ARGS --seq-length \"${SEQ:-4096}\" --use-distributed-optimizer\n";
  const ConfigRead r = read_training_config_text(script, "pretrain.sh");
  EXPECT_EQ(r.kind, "Megatron command");
  const auto value = [&r](const char* option) {
    const Setting* s = r.find(option);
    return s ? s->value : std::string("(absent)");
  };
  EXPECT_EQ(value("precision"), "bf16-mixed");  // not "fp32 <- (no --bf16 or --fp16)"
  EXPECT_EQ(value("tp"), "2");
  EXPECT_EQ(value("micro-batch"), "4");
  EXPECT_EQ(value("gpus"), "8");
  EXPECT_EQ(value("nodes"), "1");
  EXPECT_EQ(value("seq"), "4096");
  EXPECT_EQ(value("strategy"), "zero1");
  EXPECT_EQ(value("grad-accum"), "2");  // 32 / (4 x 8 / 2)
  // A quoted expansion stays one word; what the script does not define stays as written.
  const ConfigRead q = read_training_config_text(
      "torchrun --nproc_per_node \"$NPROC\" train.py --per_device_train_batch_size 2\n", "t.sh");
  EXPECT_EQ(q.find("gpus"), nullptr);
  ASSERT_FALSE(q.unresolved.empty());
  EXPECT_NE(q.unresolved[0].find("$NPROC"), std::string::npos) << q.unresolved[0];
}

// Megatron-Core's token dropping and padding (moe/README.md, "Token Dispatching", at d98e8a6) are
// the expert capacity options.
TEST(ConfigFile, MegatronExpertCapacityFlagsAreRead) {
  const ConfigRead r = read_training_config_text(
      "torchrun --nproc_per_node 8 pretrain_gpt.py --expert-model-parallel-size 4 "
      "--moe-expert-capacity-factor 1.25 --moe-pad-expert-input-to-capacity\n",
      "moe.sh");
  ASSERT_NE(r.find("moe-capacity-factor"), nullptr);
  EXPECT_EQ(r.find("moe-capacity-factor")->value, "1.25");
  ASSERT_NE(r.find("moe-pad-to-capacity"), nullptr);
  EXPECT_EQ(r.find("moe-pad-to-capacity")->value, "true");
}

// A DeepSpeed JSON decides what it leaves out (deepspeed/runtime/zero/config.py: stage 0, no
// offload; runtime/config.py: fp32 without an enabled fp16 or bf16 section), so fit does not
// search those; "auto" stays open. Keys it reads but does not model are named warnings.
TEST(ConfigFile, DeepSpeedOmittedKeysTakeDeepSpeedsDefaults) {
  const ConfigRead bare = read_training_config_text(R"({"train_micro_batch_size_per_gpu": 2})", "ds.json");
  const auto value = [](const ConfigRead& r, const char* option) {
    const Setting* s = r.find(option);
    return s ? s->value + " <- " + s->source : std::string("(absent)");
  };
  EXPECT_EQ(value(bare, "strategy"), "ddp <- ds.json: (no zero_optimization: DeepSpeed's default, stage 0)");
  EXPECT_EQ(value(bare, "offload"), "none <- ds.json: (no offload_optimizer or offload_param: DeepSpeed's default)");
  EXPECT_EQ(value(bare, "precision"), "fp32 <- ds.json: (no fp16 or bf16 enabled: DeepSpeed's default, fp32)");
  const ConfigRead autos = read_training_config_text(
      R"({"train_micro_batch_size_per_gpu": 2, "bf16": {"enabled": "auto", "bf16_master_weights_and_grads": true}})",
      "ds.json");
  EXPECT_EQ(autos.find("precision"), nullptr);  // "auto": left open, not fp32
  EXPECT_EQ(value(autos, "bf16-master-weights"), "true <- ds.json: bf16.bf16_master_weights_and_grads = true");
  EXPECT_TRUE(autos.warnings.empty());
  const ConfigRead fp16 = read_training_config_text(
      R"({"train_micro_batch_size_per_gpu": 2, "fp16": {"enabled": true, "fp16_master_weights_and_grads": true}})",
      "ds.json");
  ASSERT_EQ(fp16.warnings.size(), 1u);
  EXPECT_NE(fp16.warnings[0].find("fp16.fp16_master_weights_and_grads = true"), std::string::npos)
      << fp16.warnings[0];
  // AutoTP's degree is tensor parallelism; Ulysses' sequence parallelism is named, not dropped.
  const ConfigRead tp = read_training_config_text(
      R"({"train_micro_batch_size_per_gpu": 1, "tensor_parallel": {"autotp_size": 4}, "sequence_parallel_size": 2})",
      "ds.json");
  EXPECT_EQ(value(tp, "tp"), "4 <- ds.json: tensor_parallel.autotp_size = 4");
  // LAMB is an optimizer of its own (DeepSpeed's FusedLamb), read without a warning.
  const ConfigRead lamb = read_training_config_text(
      R"({"train_micro_batch_size_per_gpu": 1, "optimizer": {"type": "Lamb", "params": {"lr": 1e-3}}})", "ds.json");
  EXPECT_EQ(value(lamb, "optimizer"), "lamb <- ds.json: optimizer.type = \"Lamb\"");
  EXPECT_TRUE(lamb.warnings.empty());
  ASSERT_EQ(tp.warnings.size(), 1u);
  EXPECT_NE(tp.warnings[0].find("sequence_parallel_size = 2"), std::string::npos) << tp.warnings[0];
}

}  // namespace
}  // namespace trainplan::request
