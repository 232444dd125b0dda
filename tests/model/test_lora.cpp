// Exact LoRA trainable-parameter counts: published prints (Lightning-AI/litgpt
// tutorials/resource-tables.md at 8641822; huggingface/peft README `trainable params: 2359296 ||
// all params: 1231940608` for mt0-large) and counts derived by hand from the HF configs.
#include <gtest/gtest.h>

#include "../common/catalog.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/request/catalog.hpp"
#include "trainplan/request/hf_config.hpp"
#include "trainplan/model/flops.hpp"
#include "trainplan/model/lora.hpp"
#include "trainplan/model/parameters.hpp"

namespace trainplan {
namespace {

model::Architecture from_config(const char* json) {
  return request::architecture_from_hf_config(request::Json::parse(json), "inline", "test config");
}

model::Architecture named(const char* name) {
  return test::catalog().resolve_model(name).arch;
}

// Hugging Face configs of models outside the catalogue, as published on the Hub.
constexpr const char* kPhi15 =
    R"({"model_type":"phi","hidden_size":2048,"intermediate_size":8192,"num_hidden_layers":24,
        "num_attention_heads":32,"vocab_size":51200,"max_position_embeddings":2048,"partial_rotary_factor":0.5})";
constexpr const char* kStableLmAlpha3b =
    R"({"model_type":"gpt_neox","hidden_size":4096,"intermediate_size":16384,"num_hidden_layers":16,
        "num_attention_heads":32,"vocab_size":50688,"max_position_embeddings":4096})";
constexpr const char* kMt0Large =
    R"({"model_type":"mt5","d_model":1024,"d_ff":2816,"num_layers":24,"num_decoder_layers":24,
        "num_heads":16,"d_kv":64,"vocab_size":250112,"feed_forward_proj":"gated-gelu","tie_word_embeddings":false})";
constexpr const char* kLlama65b =
    R"({"model_type":"llama","hidden_size":8192,"intermediate_size":22016,"num_hidden_layers":80,
        "num_attention_heads":64,"vocab_size":32000,"max_position_embeddings":2048})";

struct LoraRow {
  const char* what;
  model::Architecture arch;
  std::int64_t rank;
  std::vector<std::string> targets;
  std::int64_t expected;
  const char* source;
};

TEST(Lora, TrainableCounts) {
  const std::vector<LoraRow> rows = {
      {"Llama-2-7B r8 q,v", named("llama-2-7b"), 8, {"q", "v"}, 4'194'304,
       "A16: PEFT/torchtune print_trainable_parameters; litgpt resource-tables.md"},
      {"Llama-2-13B r8 q,v", named("llama-2-13b"), 8, {"q_proj", "v_proj"}, 6'553'600, "A16: litgpt resource-tables.md"},
      {"phi-1.5 r8 q,v", from_config(kPhi15), 8, {"q", "v"}, 1'572'864, "A16: litgpt resource-tables.md"},
      {"StableLM-alpha-3B r8 q,v (fused QKV)", from_config(kStableLmAlpha3b), 8, {"q", "v"}, 2'097'152,
       "A16: litgpt resource-tables.md"},
      {"Falcon-40B r8 q,v (fused QKV, GQA)", named("falcon-40b"), 8, {"q", "v"}, 12'042'240,
       "A16: litgpt resource-tables.md"},
      {"mt0-large r8 q,v incl. cross-attention", from_config(kMt0Large), 8, {"q", "v"}, 2'359'296,
       "A16: PEFT README 'trainable params: 2359296'"},
      {"Llama-3-8B r8 q,v", named("llama-3.1-8b"), 8, {"q_proj", "v_proj"}, 3'407'872, "A17 (formula)"},
      {"Llama-3-8B r16 all-linear", named("llama-3.1-8b"), 16, {"all-linear"}, 41'943'040, "A17 (formula)"},
      {"Llama-2-7B r64 all-linear", named("llama-2-7b"), 64, {"all-linear"}, 159'907'840, "A17 (formula)"},
      {"LLaMA-65B r64 all-linear", from_config(kLlama65b), 64, {"all-linear"}, 799'539'200,
       "A17 (formula); QLoRA paper Guanaco-65B setting"},
      {"Llama-2-7B r32 q,v", named("llama-2-7b"), 32, {"q", "v"}, 16'777'216, "A17: litgpt config_hub"},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(std::string(r.what) + " — " + r.source);
    model::LoraConfig c;
    c.rank = r.rank;
    c.targets = r.targets;
    EXPECT_EQ(model::lora_parameters(r.arch, c), r.expected);
  }
}

// PEFT on the fused projection adapts the whole Linear(h, 3h): r * (h + 3h) per layer.
TEST(Lora, FusedModuleNameAdaptsTheWholeProjection) {
  const auto gpt2 = named("gpt2");
  model::LoraConfig c;
  c.rank = 8;
  c.targets = {"c_attn"};
  EXPECT_EQ(model::lora_parameters(gpt2, c), 12 * 8 * (768 + 3 * 768));
}

TEST(Lora, UnknownTargetNamesTheTargetAndTheValidOnes) {
  model::LoraConfig c;
  c.targets = {"qkv_proj"};
  try {
    (void)model::lora_parameters(named("llama-2-7b"), c);
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'qkv_proj'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("q_proj"), std::string::npos) << e.what();
  }
}

TEST(Lora, TargetListParsing) {
  EXPECT_EQ(model::split_targets(" q, v ,o"), (std::vector<std::string>{"q", "v", "o"}));
  EXPECT_THROW((void)model::split_targets(" , "), InputError);
}

// T0_3B (T5 v1.1: gated GELU, untied head): DeepSpeed prints 2783M for T5Model; with the LM head
// 2,849,757,184 (DeepSpeed estimate_zero3_model_states_mem_needs_all_live, which counts
// AutoModel parameters; the head adds vocab x d_model).
TEST(Parameters, T5v11WithHead) {
  const auto t0 = from_config(
      R"({"model_type":"t5","d_model":2048,"d_ff":5120,"num_layers":24,"num_decoder_layers":24,
          "num_heads":32,"d_kv":64,"vocab_size":32128,"feed_forward_proj":"gated-gelu","tie_word_embeddings":false})");
  const auto n = model::count_parameters(t0);
  EXPECT_EQ(n.total, 2'849'757'184);
  EXPECT_EQ(n.total - n.lm_head, 2'783'959'040);
  EXPECT_EQ(n.largest_module, 65'798'144);
}

// A multi-token prediction module is one more block of the model's own kind: PEFT's target names
// match its linears as they match the model's, so each module carries one layer's adapters
// (Qwen3-30B-A3B: every layer alike), and their FLOPs follow.
TEST(Lora, PredictionModulesCarryOneLayersAdapters) {
  model::Architecture a = test::catalog().resolve_model("qwen3-30b-a3b").arch;
  model::LoraConfig c;
  c.targets = {"all-linear"};
  const std::int64_t model_only = model::lora_parameters(a, c);
  model::Training tr;
  tr.method = Method::lora;
  tr.lora = c;
  const double adapter_flops = model::flop_coefficients(a, tr).adapters;
  a.mtp_layers = 2;
  ASSERT_EQ(model_only % a.layers, 0);
  EXPECT_EQ(model::lora_parameters(a, c), model_only + 2 * model_only / a.layers);
  EXPECT_DOUBLE_EQ(model::flop_coefficients(a, tr).adapters, adapter_flops * (1.0 + 2.0 / static_cast<double>(a.layers)));
}

}  // namespace
}  // namespace trainplan
