// The family table (model/family.hpp) is the one place a model family is described: a family
// defined only through it is read, named, dispatched and priced like a built-in one.
#include <gtest/gtest.h>

#include <algorithm>

#include "../common/catalog.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/request/catalog.hpp"
#include "trainplan/request/hf_config.hpp"
#include "trainplan/model/family.hpp"
#include "trainplan/model/lora.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/planner/emit.hpp"
#include "trainplan/planner/estimate.hpp"

namespace trainplan {
namespace {

using test::catalog;

// A family transformers does not have: a Qwen3-style block (q/k RMSNorm per head) under its own
// model_type, configuration class, module names and block class, read with Qwen3's keys.
model::Family acme() {
  model::Family f;
  f.model_type = "acme_lm";
  f.aliases = {"acme"};
  f.config_class = "AcmeConfig";
  f.source = "tests/model/test_family.cpp";
  f.keys = model::ConfigKeys::qwen3;
  f.defaults = {32000, 1024, 4, 8, 2816, 4, 128, 4096, false};
  f.traits.qk_norm = model::QkNorm::per_head;
  f.names.q = "wq";
  f.names.k = "wk";
  f.names.v = "wv";
  f.names.o = "wo";
  f.block_class = "AcmeDecoderLayer";
  return f;
}

request::Json config(const char* model_type) {
  return request::Json{{"model_type", model_type}, {"hidden_size", 1024},      {"num_hidden_layers", 8},
                  {"num_attention_heads", 8}, {"num_key_value_heads", 2}, {"head_dim", 128},
                  {"intermediate_size", 2816}, {"vocab_size", 32000},    {"max_position_embeddings", 4096}};
}

TEST(Family, DefinedThroughTheTableGetsAFullEstimate) {
  model::add_family(acme());
  const request::HfArchitecture mine = request::hf_architecture(config("acme"), "acme-1b", "test config");
  const request::HfArchitecture qwen = request::hf_architecture(config("qwen3"), "qwen3-1b", "test config");
  EXPECT_EQ(mine.arch.family, "acme_lm");  // the alias resolves to the family
  EXPECT_EQ(mine.arch.qk_norm, model::QkNorm::per_head);
  // Its own defaults and class name in the notes (rope_parameters etc. are not read; tie is).
  bool noted = false;
  for (const auto& n : mine.notes) noted = noted || n.find("AcmeConfig default false") != std::string::npos;
  EXPECT_TRUE(noted);
  // Its module names are what LoRA targets match.
  model::LoraConfig lora;
  lora.targets = {"wq", "wv"};
  EXPECT_TRUE(model::lora_adapts(mine.arch, lora, model::Role::q));
  EXPECT_FALSE(model::lora_adapts(mine.arch, lora, model::Role::k));
  EXPECT_THROW((void)model::lora_parameters(qwen.arch, lora), InputError);  // qwen3 has no "wq"
  EXPECT_EQ(planner::hf_block_class("acme_lm").value_or(""), "AcmeDecoderLayer");
  // Priced end to end, it is the same block as Qwen3's.
  const auto n = model::count_parameters(mine.arch);
  EXPECT_EQ(n.total, model::count_parameters(qwen.arch).total);
  model::Training tr;
  tr.seq = 2048;
  tr.micro_batch = 2;
  tr.attention = Attention::sdpa;
  const hardware::Cluster cl = catalog().resolve_cluster("1xH100-80GB", std::nullopt).cluster;
  const planner::Estimate e = planner::evaluate(mine.arch, n, tr, cl);
  const planner::Estimate q = planner::evaluate(qwen.arch, n, tr, cl);
  EXPECT_GT(e.memory.peak_allocated.value(), 0.0);
  EXPECT_GT(e.time.step.value(), 0.0);
  EXPECT_DOUBLE_EQ(e.memory.peak_allocated.value(), q.memory.peak_allocated.value());
  EXPECT_DOUBLE_EQ(e.time.step.value(), q.time.step.value());
  // Every name the reader accepts, aliases included, is in the table.
  const auto types = model::family_names();
  EXPECT_NE(std::find(types.begin(), types.end(), "acme"), types.end());
  EXPECT_NE(std::find(types.begin(), types.end(), "RefinedWeb"), types.end());
}

TEST(Family, EveryBuiltInFamilyHasItsTraitsInTheTable) {
  for (const std::string& t : model::family_names()) {
    SCOPED_TRACE(t);
    const model::Family* f = model::find_family(t);
    ASSERT_NE(f, nullptr);
    EXPECT_FALSE(f->config_class.empty());
    EXPECT_FALSE(f->source.empty());
    if (f->text_config_family.empty()) {
      EXPECT_GT(f->defaults.vocab, 0);
      EXPECT_FALSE(f->block_class.empty());
    } else {
      EXPECT_NE(model::find_family(f->text_config_family), nullptr);
    }
  }
  EXPECT_EQ(model::find_family("no_such_model"), nullptr);
}

// What a family's block does beyond its Architecture is its row's op-list variant, never its name:
// the same row under another model_type prices every shape alike. Falcon repeats grouped K/V on the
// eager path (one sequence: other families do not), GPT-NeoX splits q, k, v into contiguous copies,
// T5 keeps its norms' model-dtype input, drops out inside its feed-forward and takes its loss in the
// model dtype, Gemma 2 and OLMo 2 keep fp32 normalised inputs (OLMo 2 fp32 rotary tables too),
// DeepSeek-V2 a complex rotary table (in fp32 larger than cos and sin).
TEST(Family, AFamilyIsItsRowNotItsName) {
  const hardware::Cluster cl = catalog().resolve_cluster("1xH100-80GB", std::nullopt).cluster;
  const request::Json neox{{"model_type", "gpt_neox"},   {"hidden_size", 1024},       {"num_hidden_layers", 4},
                      {"num_attention_heads", 8},   {"intermediate_size", 4096}, {"vocab_size", 50304},
                      {"max_position_embeddings", 2048}, {"rotary_pct", 0.25}};
  std::vector<model::Architecture> models{request::hf_architecture(neox, "neox-tiny", "test config").arch};
  for (const char* name : {"falcon-7b", "t5-3b", "gemma-2-2b", "olmo-2-7b", "deepseek-v2-lite"})
    models.push_back(catalog().resolve_model(name).arch);
  for (const model::Architecture& a : models) {
    SCOPED_TRACE(a.family);
    model::Family copy = model::family_of(a);
    copy.model_type = "renamed_" + a.family;
    copy.aliases.clear();
    model::add_family(copy);
    model::Architecture renamed = a;
    renamed.family = copy.model_type;
    const auto n = model::count_parameters(a);
    for (const Method method : {Method::full, Method::lora}) {
      for (const Attention attention : {Attention::eager, Attention::sdpa}) {
        for (const Precision precision : {Precision::bf16_true, Precision::fp32}) {
          model::Training tr;
          tr.method = method;
          tr.attention = attention;
          tr.precision = precision;
          tr.seq = 512;
          tr.micro_batch = 1;
          const planner::Estimate e = planner::evaluate(a, n, tr, cl);
          const planner::Estimate r = planner::evaluate(renamed, n, tr, cl);
          const model::ActivationMemory& ea = e.memory.activation_detail;
          const model::ActivationMemory& ra = r.memory.activation_detail;
          EXPECT_GT(ea.per_block.value(), 0.0);
          EXPECT_DOUBLE_EQ(ra.per_block.value(), ea.per_block.value());
          EXPECT_DOUBLE_EQ(ra.embedding.value(), ea.embedding.value());
          EXPECT_DOUBLE_EQ(ra.head.value(), ea.head.value());
          EXPECT_DOUBLE_EQ(r.memory.peak_allocated.value(), e.memory.peak_allocated.value());
          EXPECT_DOUBLE_EQ(r.time.step.value(), e.time.step.value());
        }
      }
    }
  }
}

}  // namespace
}  // namespace trainplan
