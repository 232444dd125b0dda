// GaLore's AdamW (--optimizer galore-adamw): the memory of weights and optimizer states against the
// estimates the GaLore paper publishes, and what it refuses.
//
// Zhao et al. 2024, "GaLore: Memory-Efficient LLM Training by Gradient Low-Rank Projection"
// (arXiv:2403.03507v2), Table 2: pre-training LLaMA 60M/130M/350M/1B on C4 with ranks
// 128/256/256/512, "memory estimate" of weights and optimizer states in BF16: full-rank Adam
// 0.36/0.76/2.06/7.80 G, GaLore 0.24/0.52/1.22/4.38 G. The models are GaLore's configs
// (github.com/jiaweizzhao/GaLore configs/llama_60m.json ... llama_1b.json: hidden 512/768/1024/2048,
// intermediate 1376/2048/2736/5461, layers 8/12/24/24, heads 8/12/16/32, vocabulary 32000, untied).
// trainplan counts the states galore_torch allocates (GaLoreProjector: an r x min(m, n) projection
// and two max(m, n) x r moments per matrix); the paper's estimate is 1 to 10 % below that, a
// convention it does not spell out, so the band is 11 %. Full-rank Adam is held to 11 % too (the
// 60M row is 10 % above trainplan's count of the same parameters).

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <string>

#include "../common/catalog.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/model/model_states.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/planner/estimate.hpp"
#include "trainplan/request/hf_config.hpp"

namespace trainplan::planner {
namespace {

struct PaperRow {
  const char* name;
  std::int64_t hidden, intermediate, layers, heads, rank;
  double full_gib, galore_gib;
};

model::Architecture galore_llama(const PaperRow& row) {
  const request::Json config = {{"model_type", "llama"},
                                {"hidden_size", row.hidden},
                                {"intermediate_size", row.intermediate},
                                {"num_hidden_layers", row.layers},
                                {"num_attention_heads", row.heads},
                                {"num_key_value_heads", row.heads},
                                {"vocab_size", 32000},
                                {"max_position_embeddings", 1024},
                                {"tie_word_embeddings", false}};
  return request::architecture_from_hf_config(config, row.name, std::string("GaLore configs/") + row.name);
}

// Weights and optimizer states of one GPU training in bf16 (the paper's "BF16 format").
double states_gib(const model::Architecture& a, Optimizer o, std::int64_t rank) {
  model::Training t;
  t.method = Method::full;
  t.precision = Precision::bf16_true;
  t.optimizer = o;
  t.galore_rank = rank;
  t.strategy = Strategy::single;
  t.seq = 256;
  const hardware::Cluster c = test::catalog().resolve_cluster("1xH100", std::nullopt).cluster;
  const Estimate e = evaluate(a, model::count_parameters(a), t, c);
  return (e.memory.states.weights + e.memory.states.optimizer).value() / std::pow(2.0, 30);
}

TEST(Galore, WeightsAndStatesAgainstThePapersTable2) {
  const std::array<PaperRow, 4> rows{{{"llama_60m", 512, 1376, 8, 8, 128, 0.36, 0.24},
                                      {"llama_130m", 768, 2048, 12, 12, 256, 0.76, 0.52},
                                      {"llama_350m", 1024, 2736, 24, 16, 256, 2.06, 1.22},
                                      {"llama_1b", 2048, 5461, 24, 32, 512, 7.80, 4.38}}};
  for (const PaperRow& row : rows) {
    SCOPED_TRACE(row.name);
    const model::Architecture a = galore_llama(row);
    const double full = states_gib(a, Optimizer::adamw, row.rank);
    const double galore = states_gib(a, Optimizer::galore_adamw, row.rank);
    EXPECT_NEAR(full / row.full_gib, 1.0, 0.11) << full;
    EXPECT_NEAR(galore / row.galore_gib, 1.0, 0.11) << galore;
    EXPECT_LT(galore, full);  // the point of GaLore: about 40 % less at these ranks
  }
}

TEST(Galore, RefusedWhereItCannotRun) {
  const model::Architecture a = test::catalog().resolve_model("llama-3.2-1b").arch;
  const model::ParameterCounts n = model::count_parameters(a);
  const hardware::Cluster one = test::catalog().resolve_cluster("1xH100", std::nullopt).cluster;
  const hardware::Cluster eight = test::catalog().resolve_cluster("8xH100", std::nullopt).cluster;
  model::Training t;
  t.optimizer = Optimizer::galore_adamw;
  t.strategy = Strategy::single;
  t.method = Method::lora;
  EXPECT_THROW((void)evaluate(a, n, t, one), InputError);  // not an adapter's optimizer
  t.method = Method::full;
  t.strategy = Strategy::fsdp_full;
  EXPECT_THROW((void)evaluate(a, n, t, eight), InputError);  // FSDP's flat shards are not matrices
  t.strategy = Strategy::ddp;
  EXPECT_NO_THROW((void)evaluate(a, n, t, eight));
}

}  // namespace
}  // namespace trainplan::planner
