// Reading Hugging Face config.json files: what is ignored, and what is an error naming the key.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "../common/catalog.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/request/catalog.hpp"
#include "trainplan/request/files.hpp"
#include "trainplan/request/hf_config.hpp"
#include "trainplan/model/parameters.hpp"

namespace trainplan {
namespace {

const std::string kData = TRAINPLAN_TEST_DATA;

std::string error_of(const std::string& file) {
  try {
    (void)request::read_hf_config_file(kData + "/" + file);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(HfConfig, FolderWithConfigAndUnrelatedKeys) {
  const auto a = request::read_hf_config_file(kData + "/tiny-llama");
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
      {"missing_model_type.json", {"missing_model_type.json", "'model_type'", "missing"}},
      {"heads_not_dividing.json", {"heads_not_dividing.json", "500", "8 attention heads"}},
      {"bad_kv_heads.json", {"bad_kv_heads.json", "not divisible by 3"}},
      {"negative_layers.json", {"negative_layers.json", "'num_hidden_layers'", "from 1 to 10000", "got -2"}},
      {"unknown_type.json", {"model_type \"mamba\"", "supported"}},
      {"does_not_exist.json", {"cannot read", "does_not_exist.json"}},
      {"", {"holds no config.json"}},
      // nlohmann's out_of_range for a number beyond double, once an internal error without the file.
      {"number_overflow.json", {"number_overflow.json", "invalid JSON", "1e400"}},
      // Once a float that truncated to a negative parameter count, with exit 0.
      {"layers_1e12.json", {"layers_1e12.json", "'num_hidden_layers'", "an integer from 1 to 10000", "got 1000000000000.0"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.file);
    const std::string msg = error_of(c.file);
    ASSERT_FALSE(msg.empty()) << "expected an error";
    for (const char* m : c.must_mention) EXPECT_NE(msg.find(m), std::string::npos) << msg;
  }
}

TEST(HfConfig, FamilyRulesFromTheImplementations) {
  auto read = [](const char* json) { return request::architecture_from_hf_config(request::Json::parse(json), "x", "x"); };
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
    return request::architecture_from_hf_config(request::Json::parse(json), "x", "rope.json");
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

// The weights' dtype a config declares, what from_pretrained(dtype="auto") loads: transformers 5
// writes `dtype`, earlier releases `torch_dtype`; none declared is unknown.
TEST(HfConfig, DeclaredDtype) {
  auto read = [](const std::string& extra) {
    return request::architecture_from_hf_config(
        request::Json::parse(R"({"model_type":"llama","hidden_size":256,"intermediate_size":512,"num_hidden_layers":2,)"
                             R"("num_attention_heads":4,"vocab_size":100)" + extra + "}"),
        "x", "dtype.json");
  };
  EXPECT_EQ(read(R"(,"dtype":"bfloat16")").checkpoint_dtype, model::CheckpointDtype::bf16);
  EXPECT_EQ(read(R"(,"torch_dtype":"float32")").checkpoint_dtype, model::CheckpointDtype::fp32);
  EXPECT_EQ(read(R"(,"torch_dtype":"float16")").checkpoint_dtype, model::CheckpointDtype::fp16);
  EXPECT_EQ(read("").checkpoint_dtype, model::CheckpointDtype::unknown);
  EXPECT_EQ(test::catalog().resolve_model("qwen3-8b").arch.checkpoint_dtype, model::CheckpointDtype::bf16);
}

TEST(HfConfig, MixtralExpertsImplementation) {
  const std::string base = R"({"model_type":"mixtral","hidden_size":128,"intermediate_size":256,
      "num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"vocab_size":100,
      "num_local_experts":4,"num_experts_per_tok":2)";
  auto read = [&](const std::string& extra) {
    return request::architecture_from_hf_config(request::Json::parse(base + extra + "}"), "x", "moe.json");
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

std::string error_of_json(const std::string& json) {
  try {
    (void)request::hf_architecture(request::Json::parse(json), "x", "cfg.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

using test::catalog;

bool has_note(const request::HfArchitecture& h, const std::string& text) {
  for (const auto& n : h.notes)
    if (n == text) return true;
  return false;
}

// Llama-2-7b's config.json without intermediate_size: LlamaConfig's default 11008 gives the published
// 6,738,415,616 parameters (the catalogue's llama-2-7b count, with its source); the old fallback,
// 4 x hidden, gave 8.9B.
TEST(HfConfig, MissingIntermediateSizeTakesLlamaConfigDefault) {
  const request::HfArchitecture h = request::read_hf_config(kData + "/llama-2-7b-no-intermediate");
  EXPECT_EQ(h.arch.intermediate, 11008);
  EXPECT_EQ(model::count_parameters(h.arch).total, *catalog().resolve_model("llama-2-7b").entry->parameters);
  EXPECT_TRUE(has_note(h, "intermediate_size missing: LlamaConfig default 11008")) << request::joined_notes(h.notes);
  // The user sees the note where the model is resolved.
  const auto r = catalog().resolve_model(kData + "/llama-2-7b-no-intermediate");
  EXPECT_NE(r.note.find("intermediate_size missing: LlamaConfig default 11008"), std::string::npos) << r.note;
  EXPECT_EQ(r.arch.name, "llama-2-7b-no-intermediate");
}

// A config.json with nothing but model_type is the Hugging Face class's default model. Each class's
// docstring names the checkpoint its defaults reproduce; the published count of that checkpoint
// (the catalogue's, with its source) is the expected total.
TEST(HfConfig, EmptyConfigIsTheClassDefaultModel) {
  struct Row {
    const char* model_type;
    const char* checkpoint;  // catalogue name of the model the class defaults describe
  };
  for (const Row& r : {Row{"llama", "llama-2-7b"},      // LlamaConfig: "llama-7b style"
                       Row{"mistral", "mistral-7b"},    // MistralConfig: Mistral-7B-v0.1
                       Row{"mixtral", "mixtral-8x7b"},  // MixtralConfig: Mixtral-8x7B-v0.1
                       Row{"gemma", "gemma-7b"},        // GemmaConfig: google/gemma-7b
                       Row{"falcon", "falcon-7b"},      // FalconConfig: tiiuae/falcon-7b
                       Row{"gpt2", "gpt2"}}) {          // GPT2Config: openai-community/gpt2
    SCOPED_TRACE(r.model_type);
    const request::HfArchitecture h =
        request::hf_architecture(request::Json{{"model_type", r.model_type}}, r.model_type, "defaults.json");
    const auto& entry = *catalog().resolve_model(r.checkpoint).entry;
    ASSERT_TRUE(entry.parameters.has_value());
    EXPECT_EQ(model::count_parameters(h.arch).total, *entry.parameters) << entry.parameters_source;
    EXPECT_FALSE(h.notes.empty());
  }
}

// Every size key is range-checked: the message names the file, the key, the value and the range.
TEST(HfConfig, SizesOutOfRangeNameKeyValueAndRange) {
  struct Row {
    const char* key;
    const char* value;
    const char* expected;
  };
  const std::string base = R"("model_type":"llama","hidden_size":256,"intermediate_size":512,"num_hidden_layers":2,)"
                           R"("num_attention_heads":4,"vocab_size":100,"max_position_embeddings":2048)";
  for (const Row& r : {Row{"num_hidden_layers", "0", "from 1 to 10000"},
                       Row{"num_hidden_layers", "1000000000000", "from 1 to 10000"},
                       Row{"num_hidden_layers", "1e12", "an integer from 1 to 10000"},
                       Row{"num_hidden_layers", "18446744073709551615", "from 1 to 10000"},
                       Row{"num_hidden_layers", "\"32\"", "an integer"},
                       Row{"num_hidden_layers", "true", "an integer"},
                       Row{"hidden_size", "-4096", "from 1 to 1048576"},
                       Row{"hidden_size", "4096.5", "an integer"},
                       Row{"num_attention_heads", "0", "from 1 to 65536"},
                       Row{"num_key_value_heads", "-1", "from 1 to 65536"},
                       Row{"intermediate_size", "99999999999", "from 1 to 16777216"},
                       Row{"vocab_size", "0", "from 1 to 16777216"},
                       Row{"max_position_embeddings", "0", "from 1 to 1073741824"},
                       Row{"head_dim", "0", "from 1 to 1048576"},
                       Row{"attention_dropout", "1.5", "from 0 to 1"},
                       Row{"tie_word_embeddings", "\"yes\"", "true or false"},
                       Row{"hidden_act", "42", "must be a string"},
                       Row{"hidden_act", "\"swiglu\"", "unsupported activation 'swiglu'"}}) {
    SCOPED_TRACE(std::string(r.key) + "=" + r.value);
    std::string json = "{" + base + "}";
    const std::string key = std::string("\"") + r.key + "\":";
    if (const auto at = json.find(key); at != std::string::npos) {
      const auto end = json.find_first_of(",}", at);
      json = json.substr(0, at) + key + r.value + json.substr(end);
    } else {
      json = "{" + base + "," + key + r.value + "}";
    }
    const std::string msg = error_of_json(json);
    EXPECT_NE(msg.find("cfg.json"), std::string::npos) << msg;
    if (std::string(r.key) != "hidden_act") {
      EXPECT_NE(msg.find(std::string("'") + r.key + "'"), std::string::npos) << msg;
    }
    EXPECT_NE(msg.find(r.expected), std::string::npos) << msg;
  }
}

// Each size within its bound, together beyond what int64 arithmetic downstream can hold: refused.
TEST(HfConfig, ParameterCountsThatWouldOverflowAreRefused) {
  const std::string msg = error_of_json(R"({"model_type":"mixtral","hidden_size":1048576,"intermediate_size":16777216,
      "num_hidden_layers":10000,"num_attention_heads":1024,"num_key_value_heads":1024,"vocab_size":16777216,
      "num_local_experts":65536,"num_experts_per_tok":2})");
  EXPECT_NE(msg.find("cfg.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("at most 100 trillion"), std::string::npos) << msg;
  // The largest published models pass.
  EXPECT_NO_THROW((void)catalog().resolve_model("llama-3.1-405b"));
}

// Defaults that make a shape invalid say which defaults were used: Qwen2Config's num_key_value_heads
// is 32, whatever num_attention_heads says.
TEST(HfConfig, ValidationErrorsListTheDefaultsUsed) {
  const std::string msg = error_of_json(R"({"model_type":"qwen2","hidden_size":3584,"intermediate_size":18944,
      "num_hidden_layers":28,"num_attention_heads":28,"vocab_size":152064})");
  EXPECT_NE(msg.find("cfg.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("num_key_value_heads missing: Qwen2Config default 32"), std::string::npos) << msg;
}

// A null sliding_window is full attention (MistralConfig sets the window only when given); an
// absent one is the class default 4096.
TEST(HfConfig, NullIsNotMissingForSlidingWindow) {
  const std::string base = R"({"model_type":"mistral","hidden_size":256,"intermediate_size":512,"num_hidden_layers":2,
      "num_attention_heads":4,"num_key_value_heads":2,"vocab_size":100)";
  EXPECT_EQ(request::hf_architecture(request::Json::parse(base + "}"), "x", "x").arch.sliding_window, 4096);
  EXPECT_EQ(request::hf_architecture(request::Json::parse(base + R"(,"sliding_window":null})"), "x", "x").arch.sliding_window, 0);
  // GemmaConfig's head_dim is 256 whatever hidden_size / heads gives (gemma-7b: 3072 / 16 = 192).
  EXPECT_EQ(request::hf_architecture(request::Json{{"model_type", "gemma"}}, "x", "x").arch.head_dim, 256);
}

// A config.json is named after its folder, any other file after itself; never "." or "configs".
TEST(HfConfig, NameFromThePath) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "trainplan-test-name" / "my-model";
  fs::create_directories(dir);
  fs::copy_file(kData + "/tiny-llama/config.json", dir / "config.json", fs::copy_options::overwrite_existing);
  fs::copy_file(kData + "/tiny-llama/config.json", dir / "small.json", fs::copy_options::overwrite_existing);
  EXPECT_EQ(request::read_hf_config_file((dir / "config.json").string()).name, "my-model");
  EXPECT_EQ(request::read_hf_config_file(dir.string()).name, "my-model");
  EXPECT_EQ(request::read_hf_config_file((dir / "small.json").string()).name, "small");
  const fs::path cwd = fs::current_path();
  fs::current_path(dir);
  EXPECT_EQ(request::read_hf_config_file("./config.json").name, "my-model");
  EXPECT_EQ(request::read_hf_config_file(".").name, "my-model");
  fs::current_path(cwd);
  fs::remove_all(dir.parent_path());
}

// Only regular files are read, up to a bound: a device that never ends (or a pipe nobody writes
// to) is an error, and so is a file beyond the bound for its kind, before any of it is read.
TEST(HfConfig, EndlessFileIsRefused) {
  if (!std::filesystem::exists("/dev/zero")) GTEST_SKIP() << "no /dev/zero";
  try {
    (void)request::read_text_file("/dev/zero", "model config");
    ADD_FAILURE() << "reading /dev/zero must stop";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/dev/zero"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
  }
  const std::filesystem::path big = std::filesystem::temp_directory_path() /
                                    ("trainplan-big-" + std::to_string(::getpid()) + ".json");
  { std::ofstream touch(big); }
  std::filesystem::resize_file(big, request::kMaxJsonFileBytes + 1);  // sparse: nothing is written
  try {
    (void)request::read_text_file(big.string(), "model config", request::kMaxJsonFileBytes);
    ADD_FAILURE() << "a file beyond the bound was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("larger than 16 MiB (the limit for a model config)"), std::string::npos)
        << e.what();
  }
  std::filesystem::remove(big);
  const std::string msg = error_of_json("[1, 2]");
  EXPECT_NE(msg.find("expected a JSON object"), std::string::npos) << msg;
}

// Our own JSON readers: numbers beyond double and integers beyond int64 are named, never wrapped.
TEST(HfConfig, StrictReaderRefusesOverflow) {
  try {
    (void)request::parse_json(R"({"a": 1e400})", "profile 'p.json'");
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("profile 'p.json': invalid JSON"), std::string::npos) << e.what();
  }
  const request::Json j = request::Json::parse(R"({"n": 18446744073709551615, "m": 3000000000})");
  request::ObjectReader r(j, "cluster file 'c.json'");
  try {
    (void)r.integer("n", 1);
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'n' is too large"), std::string::npos) << e.what();
  }
  try {
    (void)r.integer("m", 1, 1'000'000);
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'m' must be at most 1000000 (got 3000000000)"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace trainplan

namespace trainplan {
namespace {

// The 2025-26 families: what a config leaves to its class is derived as the class derives it, and
// what cannot be read is refused with the file, the key and the value.
TEST(HfConfig, RecentFamiliesDeriveWindowsAndRefuseWhatIsNotModelled) {
  auto arch = [](const std::string& json) {
    return request::hf_architecture(request::Json::parse(json), "x", "cfg.json").arch;
  };
  const std::string gemma2 = R"({"model_type":"gemma2","hidden_size":256,"num_hidden_layers":5,
      "num_attention_heads":4,"num_key_value_heads":2,"head_dim":64,"intermediate_size":512,"vocab_size":100)";
  // Gemma2Config: every other layer windowed, the first included (3 of 5), soft-capping 50 / 30.
  const model::Architecture g = arch(gemma2 + "}");
  EXPECT_EQ(g.sliding_layers, 3);
  EXPECT_EQ(g.sliding_window, 4096);
  EXPECT_EQ(g.attention_softcap, 50.0);
  EXPECT_EQ(g.logit_softcap, 30.0);
  EXPECT_EQ(arch(gemma2 + R"(,"final_logit_softcapping":null})").logit_softcap, 0.0);
  // layer_types, when given, decide.
  EXPECT_EQ(arch(gemma2 + R"(,"layer_types":["full_attention","full_attention","full_attention",
      "full_attention","sliding_attention"]})").sliding_layers, 1);
  // Gemma3TextConfig: five of six layers windowed.
  EXPECT_EQ(arch(R"({"model_type":"gemma3_text","num_hidden_layers":12,"vocab_size":100})").sliding_layers, 10);
  // Qwen3: no window unless use_sliding_window; then from max_window_layers on.
  const std::string qwen3 = R"({"model_type":"qwen3","hidden_size":256,"num_hidden_layers":8,"num_attention_heads":4,
      "num_key_value_heads":2,"head_dim":64,"intermediate_size":512,"vocab_size":100)";
  EXPECT_EQ(arch(qwen3 + "}").sliding_window, 0);
  EXPECT_EQ(arch(qwen3 + R"(,"use_sliding_window":true,"sliding_window":128,"max_window_layers":6})").sliding_layers, 2);
  // Llama 4: NoPE layers one in four, chunked attention on the others.
  const model::Architecture l4 = arch(R"({"model_type":"llama4_text","num_hidden_layers":8,"vocab_size":100,
      "hidden_size":256,"num_attention_heads":4,"num_key_value_heads":2,"head_dim":64,"intermediate_size":128})");
  EXPECT_EQ(l4.nope_interval, 4);
  EXPECT_EQ(l4.sliding_layers, 6);
  EXPECT_EQ(l4.shared_intermediate, 128);
  EXPECT_TRUE(l4.experts_dense);
  EXPECT_EQ(l4.dense_layers(), 0);
  // Llama 4 Maverick's interleaving: experts on every other layer (the second of each pair), the
  // others Llama4TextMLP of intermediate_size_mlp.
  const model::Architecture mav = arch(R"({"model_type":"llama4_text","num_hidden_layers":8,"vocab_size":100,
      "hidden_size":256,"num_attention_heads":4,"num_key_value_heads":2,"head_dim":64,"intermediate_size":128,
      "interleave_moe_layer_step":2,"intermediate_size_mlp":512})");
  EXPECT_EQ(mav.dense_layers(), 4);
  EXPECT_TRUE(mav.dense_layer(0) && !mav.dense_layer(1));
  EXPECT_EQ(mav.dense_intermediate, 512);
  // Qwen3-MoE: mlp_only_layers and decoder_sparse_step.
  const std::string qmoe = R"({"model_type":"qwen3_moe","num_hidden_layers":6,"vocab_size":100,"intermediate_size":640)";
  EXPECT_EQ(arch(qmoe + R"(,"mlp_only_layers":[0,5]})").dense_layers(), 2);
  EXPECT_EQ(arch(qmoe + R"(,"decoder_sparse_step":3})").dense_layers(), 4);  // experts on layers 2 and 5
  EXPECT_EQ(arch(qmoe + "}").dense_layers(), 0);
  // DeepSeek-V3 (DeepseekV3Config defaults): latent attention with a query compression,
  // first_k_dense_replace dense layers, a shared expert, group-limited sigmoid routing.
  const model::Architecture v3 = arch(R"({"model_type":"deepseek_v3","num_hidden_layers":5,"vocab_size":100})");
  EXPECT_TRUE(v3.mla());
  EXPECT_EQ(v3.q_lora_rank, 1536);
  EXPECT_EQ(v3.head_dim, 192);  // qk_nope_head_dim + qk_rope_head_dim
  EXPECT_EQ(v3.value_head_dim(), 128);
  EXPECT_EQ(v3.dense_layers(), 3);
  EXPECT_TRUE(v3.dense_layer(2) && !v3.dense_layer(3));
  EXPECT_EQ(v3.dense_intermediate, 18432);
  EXPECT_EQ(v3.intermediate, 2048);
  EXPECT_EQ(v3.shared_intermediate, 2048);
  EXPECT_EQ(v3.expert_groups, 8);
  EXPECT_EQ(v3.router, model::RouterKind::deepseek_v3);
  // Its FP8 checkpoint's quantization_config is named in a note, not read as the training's.
  const request::HfArchitecture v3_fp8 = request::hf_architecture(
      request::Json::parse(R"({"model_type":"deepseek_v3","num_hidden_layers":5,"vocab_size":100,
          "quantization_config":{"quant_method":"fp8","fmt":"e4m3"},"num_nextn_predict_layers":1})"),
      "x", "cfg.json");
  const std::string notes = request::joined_notes(v3_fp8.notes);
  EXPECT_NE(notes.find("quantization_config (quant_method \"fp8\")"), std::string::npos) << notes;
  EXPECT_NE(notes.find("num_nextn_predict_layers"), std::string::npos) << notes;
  // DeepSeek-V2: q_lora_rank null is one query projection; greedy routing has no groups.
  const model::Architecture v2 = arch(R"({"model_type":"deepseek_v2","num_hidden_layers":4,"vocab_size":100,
      "q_lora_rank":null,"num_experts_per_tok":6,"first_k_dense_replace":1})");
  EXPECT_EQ(v2.q_lora_rank, 0);
  EXPECT_EQ(v2.dense_layers(), 1);
  EXPECT_EQ(v2.expert_groups, 0);
  EXPECT_EQ(v2.shared_intermediate, 2 * 1407);

  struct Bad {
    std::string json;
    std::vector<std::string> says;
  };
  for (const Bad& b : std::vector<Bad>{
           {gemma2 + R"(,"layer_types":["sliding_attention"]})", {"cfg.json", "'layer_types'", "one entry per layer (5)"}},
           {gemma2 + R"(,"layer_types":["sliding_attention","full_attention","local","full_attention","full_attention"]})",
            {"cfg.json", "'layer_types'", "\"local\""}},
           {gemma2 + R"(,"attn_logit_softcapping":-1})", {"cfg.json", "soft-capping"}},
           {R"({"model_type":"gemma3","vision_config":{}})", {"cfg.json", "gemma3", "'text_config'"}},
           {R"({"model_type":"qwen3_moe","num_hidden_layers":4,"mlp_only_layers":[4]})",
            {"cfg.json", "'mlp_only_layers'", "4", "from 0 to 3"}},
           {R"({"model_type":"qwen3_moe","mlp_only_layers":"all"})", {"cfg.json", "'mlp_only_layers'", "list"}},
           {R"({"model_type":"llama4_text","num_hidden_layers":4,"moe_layers":[1,"3"]})",
            {"cfg.json", "'moe_layers'", "\"3\""}},
           {R"({"model_type":"deepseek_v2","num_experts_per_tok":2,"topk_method":"noaux"})",
            {"cfg.json", "topk_method 'noaux'", "greedy, group_limited_greedy"}},
           {R"({"model_type":"deepseek_v3","n_group":3})", {"cfg.json", "n_group 3", "must divide"}},
           {R"({"model_type":"deepseek_v3","qk_rope_head_dim":0})", {"cfg.json", "'qk_rope_head_dim'", "from 1"}},
           {R"({"model_type":"llama4_text","num_hidden_layers":4,"no_rope_layers":[1,1,2,0]})",
            {"cfg.json", "'no_rope_layers'", "2"}},
           {R"({"model_type":"gpt_oss","experts_implementation":"triton"})", {"cfg.json", "'triton'"}},
           {R"({"model_type":"mamba"})", {"cfg.json", "unsupported model_type \"mamba\"", "deepseek_v3"}}}) {
    SCOPED_TRACE(b.json);
    std::string msg;
    try {
      (void)arch(b.json);
    } catch (const InputError& e) {
      msg = e.what();
    }
    ASSERT_FALSE(msg.empty()) << "must be refused";
    for (const auto& s : b.says) EXPECT_NE(msg.find(s), std::string::npos) << msg;
  }
}

// A multimodal config's language model is read from its text_config, with a note that the vision
// tower is not counted.
TEST(HfConfig, MultimodalWrappersReadTheirTextConfig) {
  const request::HfArchitecture h = request::hf_architecture(
      request::Json::parse(R"({"model_type":"gemma3","text_config":{"hidden_size":1152,"num_hidden_layers":26,
          "num_attention_heads":4,"num_key_value_heads":1,"head_dim":256,"intermediate_size":6912,
          "vocab_size":262144,"max_position_embeddings":32768,"sliding_window":512},
          "vision_config":{"hidden_size":1152}})"),
      "g3", "cfg.json");
  EXPECT_EQ(h.arch.family, "gemma3_text");
  EXPECT_EQ(model::count_parameters(h.arch).total,
            model::count_parameters(catalog().resolve_model("gemma-3-1b").arch).total);
  bool noted = false;
  for (const auto& n : h.notes) noted = noted || n.find("vision tower") != std::string::npos;
  EXPECT_TRUE(noted);
}

}  // namespace
}  // namespace trainplan
