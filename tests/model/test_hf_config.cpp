// Reading Hugging Face config.json files: what is ignored, and what is an error naming the key.
#include <gtest/gtest.h>

#include "trainplan/core/error.hpp"
#include "trainplan/io/hf_config.hpp"
#include "trainplan/model/parameters.hpp"

namespace trainplan {
namespace {

const std::string kData = TRAINPLAN_TEST_DATA;

std::string error_of(const std::string& file) {
  try {
    (void)io::read_hf_config_file(kData + "/" + file);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(HfConfig, FolderWithConfigAndUnrelatedKeys) {
  const auto a = io::read_hf_config_file(kData + "/tiny-llama");
  EXPECT_EQ(a.family, "llama");
  EXPECT_EQ(a.kv_heads, 2);
  EXPECT_EQ(a.head_dim, 64);
  // 4 x (q 512x512 + k,v 512x128 + o 512x512 + mlp 3x512x1376 + 2 norms) + 2 x 32000x512 + norm
  EXPECT_EQ(model::count_parameters(a).total,
            4 * (512 * 512 * 2 + 2 * 512 * 128 + 3 * 512 * 1376 + 2 * 512) + 2 * 32000 * 512 + 512);
}

struct BadConfig {
  const char* file;
  std::vector<const char*> must_mention;
};

TEST(HfConfig, BadFilesNameTheFileAndTheKey) {
  const BadConfig cases[] = {
      {"truncated_config.json", {"truncated_config.json", "invalid JSON"}},
      {"missing_vocab.json", {"missing_vocab.json", "'vocab_size'", "missing"}},
      {"heads_not_dividing.json", {"heads_not_dividing.json", "500", "8 attention heads"}},
      {"bad_kv_heads.json", {"not divisible by 3"}},
      {"negative_layers.json", {"num_hidden_layers", "positive"}},
      {"unknown_type.json", {"model_type 'mamba'", "supported"}},
      {"does_not_exist.json", {"cannot read", "does_not_exist.json"}},
      {"", {"holds no config.json"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.file);
    const std::string msg = error_of(c.file);
    ASSERT_FALSE(msg.empty()) << "expected an error";
    for (const char* m : c.must_mention) EXPECT_NE(msg.find(m), std::string::npos) << msg;
  }
}

TEST(HfConfig, FamilyRulesFromTheImplementations) {
  auto read = [](const char* json) { return io::architecture_from_hf_config(io::Json::parse(json), "x", "x"); };
  // Falcon's old decoder: multi-query (one K/V head) whatever num_kv_heads says, one shared norm.
  const auto falcon = read(R"({"model_type":"falcon","hidden_size":256,"num_hidden_layers":2,"num_attention_heads":4,
                               "num_kv_heads":4,"vocab_size":100,"multi_query":true,"parallel_attn":true})");
  EXPECT_EQ(falcon.kv_heads, 1);
  EXPECT_EQ(falcon.norms_per_layer, 1);
  // Qwen2 always has q/k/v biases and none on o.
  const auto qwen = read(R"({"model_type":"qwen2","hidden_size":256,"intermediate_size":512,"num_hidden_layers":2,
                             "num_attention_heads":4,"num_key_value_heads":2,"vocab_size":100})");
  EXPECT_TRUE(qwen.qkv_bias);
  EXPECT_FALSE(qwen.out_bias);
  // GPT-2's position table defaults to GPT2Config's 1024.
  EXPECT_EQ(read(R"({"model_type":"gpt2","n_embd":64,"n_layer":2,"n_head":4,"vocab_size":100})").max_seq, 1024);
}

// Partial rotary: transformers' defaults (PhiConfig 0.5, GPTNeoXConfig rotary_pct 0.25), the
// top-level keys of v4 configs and v5's rope_parameters.
TEST(HfConfig, PartialRotaryFactor) {
  auto read = [](const std::string& json) {
    return io::architecture_from_hf_config(io::Json::parse(json), "x", "rope.json");
  };
  const std::string phi = R"({"model_type":"phi","hidden_size":256,"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":100)";
  const std::string neox = R"({"model_type":"gpt_neox","hidden_size":256,"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":100)";
  EXPECT_DOUBLE_EQ(read(phi + "}").rotary_fraction, 0.5);
  EXPECT_EQ(read(phi + "}").rotary_dim(), 32);
  EXPECT_DOUBLE_EQ(read(phi + R"(,"partial_rotary_factor":0.4})").rotary_fraction, 0.4);
  EXPECT_DOUBLE_EQ(read(neox + "}").rotary_fraction, 0.25);
  EXPECT_DOUBLE_EQ(read(neox + R"(,"rotary_pct":1.0})").rotary_fraction, 1.0);
  EXPECT_DOUBLE_EQ(read(neox + R"(,"rope_parameters":{"partial_rotary_factor":0.5,"rope_type":"default"}})").rotary_fraction, 0.5);
  EXPECT_DOUBLE_EQ(read(R"({"model_type":"llama","hidden_size":256,"intermediate_size":512,"num_hidden_layers":2,
                            "num_attention_heads":4,"vocab_size":100})").rotary_fraction, 1.0);
  try {
    (void)read(phi + R"(,"partial_rotary_factor":1.5})");
    ADD_FAILURE() << "a factor above 1 must be refused";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("rope.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("partial rotary factor"), std::string::npos) << e.what();
  }
}

TEST(HfConfig, MixtralExpertsImplementation) {
  const std::string base = R"({"model_type":"mixtral","hidden_size":128,"intermediate_size":256,
      "num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"vocab_size":100,
      "num_local_experts":4,"num_experts_per_tok":2)";
  auto read = [&](const std::string& extra) {
    return io::architecture_from_hf_config(io::Json::parse(base + extra + "}"), "x", "moe.json");
  };
  EXPECT_FALSE(read("").experts_loop);  // transformers' default, grouped_mm
  EXPECT_FALSE(read(R"(,"experts_implementation":"grouped_mm")").experts_loop);
  EXPECT_TRUE(read(R"(,"experts_implementation":"eager")").experts_loop);
  try {
    (void)read(R"(,"experts_implementation":"megablocks")");
    ADD_FAILURE() << "an unmodelled experts implementation must be refused";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("moe.json"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'megablocks'"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace trainplan
