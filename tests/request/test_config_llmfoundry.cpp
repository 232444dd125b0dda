// MosaicML llm-foundry train YAMLs beyond the real files of readings.json: OmegaConf's
// interpolations, llm-foundry's and Composer's defaults where a file is silent
// (llmfoundry/utils/config_utils.py TrainConfig, composer/utils/parallelism.py FSDPConfig), and
// bad values named.

#include <string>
#include <utility>
#include <vector>

#include "config_fixture.hpp"
#include "trainplan/request/request_files.hpp"

namespace trainplan::request {
namespace {

using namespace config_test;

ConfigRead yaml(const std::string& text) { return read_training_config_text(text, "train.yaml"); }

const std::string kModel =
    "model:\n  name: hf_causal_lm\n  pretrained_model_name_or_path: meta-llama/Meta-Llama-3-8B\n";

TEST(ConfigLlmFoundry, InterpolationsAndDefaults) {
  // Whole-value interpolations from variables (current files) and from the top level (v0.3).
  const ConfigRead r = yaml("variables:\n  max_seq_len: 4096\n  mb: 4\nmax_seq_len: ${variables.max_seq_len}\n" +
                            kModel + "device_train_microbatch_size: ${variables.mb}\n");
  EXPECT_EQ(r.kind, "llm-foundry config");
  EXPECT_EQ(option(r, "library"), "llm-foundry");
  EXPECT_EQ(option(r, "model"), "meta-llama/Meta-Llama-3-8B");
  EXPECT_EQ(option(r, "seq"), "4096");
  EXPECT_EQ(option(r, "micro-batch"), "4");
  EXPECT_EQ(option(r, "method"), "full");
  // llm-foundry's amp_bf16; Composer's DDP without an fsdp_config; eager without compile_config.
  EXPECT_EQ(option(r, "precision"), "bf16-mixed");
  EXPECT_EQ(option(r, "strategy"), "ddp");
  EXPECT_EQ(option(r, "checkpointing"), "none");
  EXPECT_EQ(option(r, "compile"), "false");
  EXPECT_EQ(option(r, "attention"), "sdpa");  // transformers' default without use_flash_attention_2
  const ConfigRead old = yaml("max_seq_len: 2048\nglobal_seed: 17\nmodel:\n  name: mpt_causal_lm\n  d_model: 4096\n"
                              "  n_heads: 32\n  n_layers: 32\n  expansion_ratio: 4\n  max_seq_len: ${max_seq_len}\n"
                              "  attn_config:\n    attn_impl: triton\n");
  EXPECT_EQ(option(old, "model"), "mpt-7b");
  EXPECT_EQ(option(old, "attention"), "triton");
  // device_train_microbatch_size "auto" (and its absence, the default) is Composer's search.
  for (const std::string& mb : {std::string("device_train_microbatch_size: auto\n"), std::string()}) {
    const ConfigRead a = yaml("max_seq_len: 2048\n" + kModel + mb);
    EXPECT_EQ(option(a, "micro-batch"), "") << mb;
    EXPECT_NE(std::find(a.unresolved_options.begin(), a.unresolved_options.end(), "micro-batch"),
              a.unresolved_options.end())
        << mb;
  }
}

TEST(ConfigLlmFoundry, FsdpPrecisionCompileAndAdapters) {
  const ConfigRead r = yaml(
      "max_seq_len: 2048\n" + kModel +
      "  peft_config:\n    peft_type: LORA\n    r: 16\n    lora_alpha: 32\n    lora_dropout: 0.05\n"
      "    target_modules: [q_proj, v_proj]\n"
      "precision: amp_fp8\nglobal_train_batch_size: 256\ndevice_train_microbatch_size: 2\n"
      "fsdp_config:\n  sharding_strategy: HYBRID_SHARD\n  activation_checkpointing: true\n"
      "  activation_cpu_offload: true\ncompile_config: {}\noptimizer:\n  name: decoupled_lionw\n");
  EXPECT_EQ(option(r, "method"), "lora");
  EXPECT_EQ(option(r, "lora-rank"), "16");
  EXPECT_EQ(option(r, "lora-targets"), "q_proj,v_proj");
  EXPECT_EQ(option(r, "precision"), "bf16-mixed");
  EXPECT_EQ(option(r, "fp8"), "te-delayed");  // Composer's amp_fp8: Transformer Engine's delayed scaling
  EXPECT_EQ(option(r, "global-batch"), "256");
  EXPECT_EQ(option(r, "strategy"), "fsdp-hybrid");
  EXPECT_EQ(option(r, "checkpointing"), "full-offload");
  EXPECT_EQ(option(r, "compile"), "true");  // an empty compile_config compiles with its defaults
  EXPECT_EQ(option(r, "optimizer"), "lion");
  // fsdp_config with nothing set: FULL_SHARD, no checkpointing.
  const ConfigRead d = yaml("max_seq_len: 2048\n" + kModel + "fsdp_config:\n  limit_all_gathers: true\n");
  EXPECT_EQ(option(d, "strategy"), "fsdp-full");
  EXPECT_EQ(option(d, "checkpointing"), "none");
  EXPECT_TRUE(has_warning(yaml("max_seq_len: 2048\n" + kModel + "fsdp_config:\n  mixed_precision: FULL\n"),
                          "mixed_precision FULL"));
  EXPECT_TRUE(has_warning(yaml("max_seq_len: 2048\n" + kModel + "max_seq_length: 4096\n"), "max_seq_length"));
}

TEST(ConfigLlmFoundry, BadValuesNameTheKey) {
  const std::vector<std::pair<std::string, std::string>> bad{
      {"precision: amp_bf8\n", "precision"},
      {"fsdp_config:\n  sharding_strategy: SHARD_EVERYTHING\n", "fsdp_config.sharding_strategy"},
      {"fsdp_config:\n  mixed_precision: HALF\n", "fsdp_config.mixed_precision"},
      {"device_train_microbatch_size: 0\n", "device_train_microbatch_size"},
      {"model:\n  name: hf_causal_lm\n  peft_config:\n    peft_type: IA3\n", "model.peft_config.peft_type"},
      {"model:\n  name: mpt_causal_lm\n  attn_config:\n    attn_impl: xformers\n", "model.attn_config.attn_impl"},
      // Interpolations that name each other inside what they name: refused, not expanded 4^8 times.
      {"variables:\n  a:\n  - ${variables.b}\n  - ${variables.b}\n  - ${variables.b}\n  - ${variables.b}\n"
       "  b:\n  - ${variables.a}\n  - ${variables.a}\n  - ${variables.a}\n  - ${variables.a}\n",
       "interpolations that expand past"},
  };
  for (const auto& [text, key] : bad) {
    const std::string m =
        refusal([&] { return yaml("max_seq_len: 2048\n" + (text.starts_with("model:") ? std::string() : kModel) + text); });
    EXPECT_NE(m.find(key), std::string::npos) << text << ": " << m;
    EXPECT_NE(m.find("train.yaml"), std::string::npos) << text << ": " << m;
  }
}

}  // namespace
}  // namespace trainplan::request
