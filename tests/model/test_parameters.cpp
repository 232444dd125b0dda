// Exact parameter counts against published numbers.
#include <gtest/gtest.h>

#include "../common/catalog.hpp"
#include "trainplan/request/catalog.hpp"
#include "trainplan/request/files.hpp"
#include "trainplan/request/json_util.hpp"
#include "trainplan/model/parameters.hpp"

namespace trainplan {
namespace {

using test::catalog;

// Every catalogue model whose file carries a published exact count must match it to the parameter.
TEST(Parameters, CatalogueMatchesPublishedCounts) {
  int checked = 0;
  for (const auto& m : catalog().models()) {
    if (!m.parameters) continue;
    SCOPED_TRACE(m.name + " (" + m.parameters_source + ")");
    EXPECT_EQ(model::count_parameters(m.arch).total, *m.parameters);
    ++checked;
  }
  EXPECT_GE(checked, 20);
}

struct CountRow {
  const char* model;
  std::int64_t expected;
  const char* source;
};

// Counts computed from each model's Hugging Face config.json (the transformers model it builds),
// cross-checked against published numbers where they exist, for the models whose files carry no
// published count.
TEST(Parameters, ReferenceTableCounts) {
  const CountRow rows[] = {
      {"open-llama-3b", 3'426'473'600, "memory.md §5 (openlm-research/open_llama_3b)"},
      {"open-llama-7b", 6'738'415'616, "memory.md §5"},
      {"open-llama-13b", 13'015'864'320, "memory.md §5"},
      {"falcon-40b", 41'303'293'952, "memory.md §5 computed (published ~41.3B)"},
      {"gpt3-175b", 174'604'259'328, "memory.md §5 (Brown et al. 2020 rounds to 175.0B)"},
      {"codellama-7b", 6'738'546'688, "memory.md §5"},
      {"llama-3.1-405b", 405'853'388'800, "memory.md §5"},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(std::string(r.model) + ": " + r.source);
    EXPECT_EQ(model::count_parameters(catalog().resolve_model(r.model).arch).total, r.expected);
  }
}

// Mixtral-8x7B active parameters with top-2 routing (Jiang et al. 2024, arXiv:2401.04088: 13B
// active of 47B), counted from the Hugging Face config.json of mistralai/Mixtral-8x7B-v0.1.
TEST(Parameters, MixtralActive) {
  const auto n = model::count_parameters(catalog().resolve_model("mixtral-8x7b").arch);
  EXPECT_EQ(n.total, 46'702'792'704);
  EXPECT_EQ(n.active, 12'879'925'248);
}

// The families added after Llama 3.1 (Qwen3, Qwen3-MoE, OLMo 2, Phi-3, Gemma 2, Gemma 3, gpt-oss,
// Llama 4, DeepSeek-V2 and V3):
// every catalogue entry's total and routed-expert parameters equal what transformers builds from
// the same config on the meta device (tools/oracle/parameters.py wrote tests/model/data/
// hf_parameters.json); active parameters follow for the MoE models and are checked against the
// published ones (model cards; gpt-oss: arXiv:2508.10925 Table 1) to their precision.
TEST(Parameters, RecentFamiliesEqualTransformers) {
  const std::string path = std::string(TRAINPLAN_TEST_DATA) + "/hf_parameters.json";
  const request::Json doc = request::parse_json(request::read_text_file(path, "parameter counts", request::kMaxJsonFileBytes), path);
  int checked = 0;
  for (const auto& [name, row] : doc.at("models").items()) {
    SCOPED_TRACE(name);
    const auto n = model::count_parameters(catalog().resolve_model(name).arch);
    EXPECT_EQ(n.total, row.at("total").get<std::int64_t>());
    EXPECT_EQ(n.experts, row.value("routed_experts", std::int64_t{0}));
    ++checked;
  }
  EXPECT_GE(checked, 12);
  // Each publisher counts active parameters its own way: Qwen's model cards count every
  // parameter a token uses, embedding included, and give one decimal cut off (30B-A3B: 3.35 is
  // "3.3B"); the gpt-oss report (arXiv:2508.10925, Table 1) leaves out the embedding lookup,
  // which is no matmul, and rounds to two decimals; Meta's Llama 4 card gives "17B" active;
  // DeepSeek: "37B activated" of V3 (arXiv:2412.19437, abstract), "2.4B are activated" of V2-Lite
  // (arXiv:2405.04434, Appendix B), which leaves the embedding out as gpt-oss does.
  struct Active {
    const char* model;
    bool with_embedding;
    double lo, hi;  // billions: what the published figure allows
  };
  for (const Active& r : {Active{"qwen3-30b-a3b", true, 3.3, 3.4}, Active{"qwen3-235b-a22b", true, 22.0, 23.0},
                          Active{"gpt-oss-20b", false, 3.605, 3.615}, Active{"gpt-oss-120b", false, 5.125, 5.135},
                          Active{"llama-4-scout", true, 17.0, 18.0}, Active{"deepseek-v3", true, 37.0, 38.0},
                          Active{"deepseek-v2-lite", false, 2.4, 2.5}}) {
    SCOPED_TRACE(r.model);
    const auto n = model::count_parameters(catalog().resolve_model(r.model).arch);
    const double active = static_cast<double>(n.active - (r.with_embedding ? 0 : n.embedding)) / 1e9;
    EXPECT_GE(active, r.lo);
    EXPECT_LT(active, r.hi);
  }
}

// DeepSeek-V3's checkpoint (deepseek-ai/DeepSeek-V3) holds the main model, one multi-token
// prediction module (num_nextn_predict_layers 1, as Megatron-Core's --mtp-num-layers builds it:
// a block of the expert kind, eh_proj 2h -> h, enorm, hnorm and a final norm) and that module's own
// copies of the embedding and the output head, which training shares. Its safetensors metadata on
// the Hugging Face Hub (api/models/deepseek-ai/DeepSeek-V3?expand[]=safetensors: BF16 3,918,786,560,
// F8_E4M3 680,571,043,840 and F32 41,555,600, the F32 being the FP8 blocks' scales and the routers'
// score-correction buffers; recorded 2026-09-04 in public repositories) counts the weights exactly.
TEST(Parameters, DeepSeekV3WithItsPredictionModuleEqualsTheCheckpoint) {
  model::Architecture a = catalog().resolve_model("deepseek-v3").arch;
  const auto main = model::count_parameters(a);
  a.mtp_layers = 1;
  const auto n = model::count_parameters(a);
  EXPECT_EQ(n.total - main.total, n.mtp);
  EXPECT_EQ(n.total + 2 * a.vocab * a.hidden, std::int64_t{3'918'786'560} + std::int64_t{680'571'043'840});
  // The module's experts are of the main model's width and number (one more expert layer).
  EXPECT_EQ(n.mtp_experts, main.experts / (a.layers - a.dense_layers()));
}

// DeepSpeed's "largest layer" for t5-3b: the shared embedding 32128 x 1024 (memory.md §2.2).
TEST(Parameters, LargestModuleIsTheEmbedding) {
  EXPECT_EQ(model::count_parameters(catalog().resolve_model("t5-3b").arch).largest_module, 32'899'072);
}

}  // namespace
}  // namespace trainplan
