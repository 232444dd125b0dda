// Partial fine-tuning (--trainable, model/partial.hpp): the blocks below every trained one, which
// the PyTorch oracle measures as saving nothing (their per_layer 0 has no relative error for the
// validation report to take), and the --trainable text as a user writes it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "paths.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/model/activations.hpp"
#include "trainplan/model/partial.hpp"
#include "trainplan/planner/memory.hpp"

namespace trainplan {
namespace {

using nlohmann::json;

// Every oracle case of partial fine-tuning, its blocks that saved nothing compared with the
// planner's blocks of that layer.
TEST(PartialOracle, BlocksBelowEveryTrainedOneSaveNothing) {
  std::size_t zeros = 0;
  std::size_t cases = 0;
  for (const auto& c : test::reference_cases()) {
    if (c.kind != planner::CaseKind::oracle || !c.training.partial.active) continue;
    ++cases;
    std::ifstream in(c.file);
    const json j = json::parse(in);
    const json& per_layer = j.at("saved_for_backward_bytes").at("per_layer");
    SCOPED_TRACE(c.name);
    for (std::size_t i = 0; i < per_layer.size(); ++i) {
      const auto layer = static_cast<std::int64_t>(i);
      const double predicted = model::kept_per_layer(c.arch, c.training, layer).value();
      if (per_layer[i].get<double>() == 0.0) {
        ++zeros;
        EXPECT_EQ(predicted, 0.0) << "layer " << i;
        EXPECT_EQ(model::layer_state(c.arch, c.training, layer), model::LayerState::no_backward);
      } else {
        EXPECT_GT(predicted, 0.0) << "layer " << i;
      }
    }
  }
  EXPECT_EQ(cases, 6u);
  EXPECT_EQ(zeros, 5u);  // layers 0-1 of both 2-3 cases without checkpointing, layer 0 of 1,mlp,head
}

// The oracle's checkpointed case keeps every block's input, the ones below the trained blocks too
// (transformers 5 makes the embedding's output require a gradient under checkpointing): no block
// there runs without backward.
TEST(PartialOracle, CheckpointingMakesEveryBlockPassTheGradient) {
  bool seen = false;
  for (const auto& c : test::reference_cases()) {
    if (c.kind != planner::CaseKind::oracle || !c.training.partial.active ||
        c.training.checkpointing != Checkpointing::full)
      continue;
    seen = true;
    for (std::int64_t i = 0; i < c.arch.layers; ++i)
      EXPECT_NE(model::layer_state(c.arch, c.training, i), model::LayerState::no_backward) << c.name << " layer " << i;
  }
  EXPECT_TRUE(seen);
}

// LLaMA-Factory's checkpointing of the trained layers only (--checkpoint-trained-only), from the
// oracle's uncheckpointed 1,mlp,head case: the layer below keeps nothing, the trained one only its
// checkpointed input, the frozen ones above it run plain and keep what the oracle measured them to
// keep without checkpointing.
TEST(PartialOracle, CheckpointingTrainedLayersOnlyKeepsTheFrozenOnesPlain) {
  bool seen = false;
  for (const auto& c : test::reference_cases()) {
    if (c.kind != planner::CaseKind::oracle || c.name != "llama-gqa-4l-sdpa-s128-b2-fp32-part1_mlp_head") continue;
    seen = true;
    std::ifstream in(c.file);
    const json per_layer = json::parse(in).at("saved_for_backward_bytes").at("per_layer");
    model::Training tr = c.training;
    tr.checkpointing = Checkpointing::full;
    tr.checkpoint_trained_only = true;
    EXPECT_EQ(model::kept_per_layer(c.arch, tr, 0).value(), 0.0);
    EXPECT_EQ(model::kept_per_layer(c.arch, tr, 1).value(), model::checkpoint_bytes(c.arch, tr).value());
    for (std::int64_t i : {2, 3}) {
      const double measured = per_layer[static_cast<std::size_t>(i)].get<double>();
      EXPECT_NEAR(model::kept_per_layer(c.arch, tr, i).value(), measured, 0.05 * measured) << "layer " << i;
    }
  }
  EXPECT_TRUE(seen);
}

TEST(TrainableSpec, ReadsLayersPartsEmbeddingAndHead) {
  const model::TrainedSubset s = model::parse_trained_subset("44-47, 50,router,gate,up,down,embedding,head", "x");
  EXPECT_TRUE(s.active);
  EXPECT_EQ(s.layers.count(), 5u);
  EXPECT_TRUE(s.layers.test(44) && s.layers.test(47) && s.layers.test(50));
  EXPECT_FALSE(s.layers.test(48));
  EXPECT_EQ(s.roles, model::kMlpRoles);
  EXPECT_FALSE(s.norms);
  EXPECT_TRUE(s.embedding && s.head);
  // Written back in the same form, and read again to the same subset.
  EXPECT_EQ(model::trained_subset_text(s), "44-47,50,mlp,embedding,head");
  EXPECT_EQ(model::parse_trained_subset(model::trained_subset_text(s), "x"), s);
  // Layers alone train all of them, norms included.
  const model::TrainedSubset all = model::parse_trained_subset("24-31", "x");
  EXPECT_TRUE(all.norms);
  EXPECT_EQ(all.roles & model::kAttentionRoles, model::kAttentionRoles);
  EXPECT_EQ(model::trained_subset_text(all), "24-31");
}

TEST(TrainableSpec, BadTextIsRefusedNamingTheTerm) {
  const auto message = [](const std::string& text) {
    try {
      (void)model::parse_trained_subset(text, "--trainable");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message("24-31,feathers").find("unknown term 'feathers'"), std::string::npos);
  EXPECT_NE(message("31-24").find("ends before it starts"), std::string::npos);
  EXPECT_NE(message("mlp").find("names nothing to train"), std::string::npos);
  EXPECT_NE(message("3,,4").find("an empty term"), std::string::npos);
  EXPECT_NE(message("-3").find("unknown term '-3'"), std::string::npos);
  EXPECT_NE(message("3-x").find("'x' is not a layer index"), std::string::npos);
  EXPECT_NE(message("300").find("beyond the 256 layers"), std::string::npos);
  EXPECT_NE(message("lm_head").find("unknown term 'lm_head'"), std::string::npos);
}

}  // namespace
}  // namespace trainplan
