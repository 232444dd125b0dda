// Replay's input (estimate and plan JSON read back through the catalogue) and output
// (trainplan.replay/1): round trips, the options the files do not record, and bad input named by
// file and key.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../common/catalog.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/request/catalog.hpp"
#include "trainplan/reports/estimate_json.hpp"
#include "trainplan/reports/replay_json.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/planner/evaluator.hpp"

namespace trainplan::reports {

using namespace request;
namespace {

using test::catalog;

// What `trainplan estimate MODEL CLUSTER ... --json` writes.
Json estimate_file(const std::string& model, const std::string& cluster,
                   const model::Training& tr) {
  const model::Architecture a = catalog().resolve_model(model).arch;
  const model::ParameterCounts n = model::count_parameters(a);
  const hardware::Cluster c = catalog().resolve_cluster(cluster, std::nullopt).cluster;
  const planner::Evaluator ev(a, n, c);
  return estimate_json(a, n, c, ev.estimate(tr));
}

model::Training lora(std::vector<std::string> targets) {
  model::Training t;
  t.method = Method::lora;
  t.precision = Precision::bf16_true;
  t.lora.rank = 16;
  t.lora.targets = std::move(targets);
  return t;
}

std::string message_of(const Json& j, const std::vector<std::string>& settings = {},
                       std::size_t index = 0) {
  try {
    (void)replay_input_from_json(catalog(), j, "replay input 'x.json'", index, settings);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ReplayJson, EstimateRoundTripsThroughTheCatalogue) {
  model::Training tr;
  tr.strategy = Strategy::fsdp_full;
  tr.tp = 2;
  tr.micro_batch = 2;
  tr.grad_accum = 4;
  tr.seq = 4096;
  tr.checkpointing = Checkpointing::full;
  tr.sequence_parallel = true;
  const Json j = estimate_file("llama-3.1-8b", "2x8xH100-80GB", tr);
  const ReplayInput in = replay_input_from_json(catalog(), j, "replay input 'e.json'", 0, {});
  EXPECT_EQ(in.schema, "trainplan.estimate/1");
  EXPECT_EQ(in.arch.name, "llama-3.1-8b");
  EXPECT_EQ(in.cluster.nodes, 2);
  EXPECT_EQ(in.cluster.gpus_per_node, 8);
  EXPECT_EQ(in.cluster.gpu.name, "H100-80GB");
  const model::Training& t = in.training;
  EXPECT_EQ(t.strategy, Strategy::fsdp_full);
  EXPECT_EQ(t.tp, 2);
  EXPECT_EQ(t.micro_batch, 2);
  EXPECT_EQ(t.grad_accum, 4);
  EXPECT_EQ(t.seq, 4096);
  EXPECT_EQ(t.checkpointing, Checkpointing::full);
  EXPECT_TRUE(t.sequence_parallel);
  // Re-evaluated, the plan costs what the file says.
  ASSERT_TRUE(in.recorded_step_s.has_value());
  const planner::Evaluator ev(in.arch, in.counts, in.cluster);
  EXPECT_NEAR(ev.cost(t).time.step.value(), *in.recorded_step_s, 1e-9 * *in.recorded_step_s);
  // The plan records its attention kernel and wrap policy: read back, not assumed.
  EXPECT_EQ(t.attention, Attention::flash);
  EXPECT_EQ(std::find(in.assumed.begin(), in.assumed.end(), "attention=flash"), in.assumed.end());
  EXPECT_EQ(std::find(in.assumed.begin(), in.assumed.end(), "fsdp_wrap=block"), in.assumed.end());
  // A file written before it recorded them: what it does not say is listed as assumed.
  Json older = j;
  older["plan"].erase("attention");
  older["plan"].erase("fsdp_wrap");
  const ReplayInput o = replay_input_from_json(catalog(), older, "replay input 'e.json'", 0, {});
  EXPECT_NE(std::find(o.assumed.begin(), o.assumed.end(), "attention=flash"), o.assumed.end());
  EXPECT_NE(std::find(o.assumed.begin(), o.assumed.end(), "fsdp_wrap=block"), o.assumed.end());
}

TEST(ReplayJson, LoraTargetsTheFileDoesNotRecordMustAgreeWithItsTrainableCount) {
  // Files record the adapters; without them (older files), q,v at rank 16 are the defaults and
  // are read back without help.
  const Json qv_recorded = estimate_file("llama-2-7b", "1xH200", lora({"q", "v"}));
  Json qv = qv_recorded;
  for (const char* k : {"lora_rank", "lora_alpha", "lora_dropout", "lora_targets"}) qv["plan"].erase(k);
  const ReplayInput a = replay_input_from_json(catalog(), qv, "x", 0, {});
  EXPECT_EQ(a.training.lora.targets, (std::vector<std::string>{"q", "v"}));
  EXPECT_NE(std::find(a.assumed.begin(), a.assumed.end(), "lora_targets=q,v"), a.assumed.end());
  // all-linear recorded: read back as it is.
  const Json all_recorded = estimate_file("mistral-7b", "1xH200", lora({"all-linear"}));
  EXPECT_EQ(replay_input_from_json(catalog(), all_recorded, "x", 0, {}).training.lora.targets,
            (std::vector<std::string>{"all-linear"}));
  // all-linear not recorded: the defaults give the wrong adapter size, and the message says what
  // to pass.
  Json all = all_recorded;
  for (const char* k : {"lora_rank", "lora_alpha", "lora_dropout", "lora_targets"}) all["plan"].erase(k);
  const std::string msg = message_of(all);
  EXPECT_NE(msg.find("replay input 'x.json' model: key 'trainable_parameters'"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("--plan-set lora_targets="), std::string::npos) << msg;
  const ReplayInput b =
      replay_input_from_json(catalog(), all, "x", 0, {"lora_targets=all-linear", "lora_rank=16"});
  EXPECT_EQ(b.training.lora.targets, (std::vector<std::string>{"all-linear"}));
  EXPECT_EQ(b.settings.size(), 2u);
  // Settings override recorded keys too.
  const ReplayInput c =
      replay_input_from_json(catalog(), qv, "x", 0, {"micro_batch=4", "attention=sdpa"});
  EXPECT_EQ(c.training.micro_batch, 4);
  EXPECT_EQ(c.training.attention, Attention::sdpa);
}

TEST(ReplayJson, PicksOnePlanOfAPlanSearch) {
  model::Training t1;
  t1.strategy = Strategy::ddp;
  model::Training t2 = t1;
  t2.tp = 2;
  const Json e1 = estimate_file("llama-2-7b", "4xH100-80GB", t1);
  const Json e2 = estimate_file("llama-2-7b", "4xH100-80GB", t2);
  Json j{{"schema", "trainplan.plan/1"},
         {"model", e1["model"]},
         {"cluster", e1["cluster"]},
         {"plans", Json::array({e1["plan"], e2["plan"]})},
         {"rejected", Json::array()}};
  EXPECT_EQ(replay_input_from_json(catalog(), j, "x", 0, {}).training.tp, 1);
  EXPECT_EQ(replay_input_from_json(catalog(), j, "x", 1, {}).training.tp, 2);
  EXPECT_NE(message_of(j, {}, 2).find("--plan-index 2 is out of range: 'plans' holds 2 (0 to 1)"),
            std::string::npos);
  EXPECT_NE(message_of(e1, {}, 1).find("an estimate holds one plan"), std::string::npos);
}

TEST(ReplayJson, BadInputNamesTheFileAndTheKey) {
  model::Training tr;
  const Json good = estimate_file("llama-2-7b", "1xH200", tr);
  struct Row {
    std::string name;
    Json doc;
    std::vector<std::string> settings;
    std::string expected;
  };
  std::vector<Row> rows;
  auto edited = [&](auto&& edit) {
    Json j = good;
    edit(j);
    return j;
  };
  rows.push_back({"schema",
                  edited([](Json& j) { j["schema"] = "trainplan.fit/1"; }),
                  {},
                  "replay input 'x.json': key 'schema' is 'trainplan.fit/1'"});
  rows.push_back({"missing tp",
                  edited([](Json& j) { j["plan"].erase("tp"); }),
                  {},
                  "replay input 'x.json' plan: key 'tp' is missing"});
  rows.push_back({"typo in an enum",
                  edited([](Json& j) { j["plan"]["precision"] = "bf17"; }),
                  {},
                  "replay input 'x.json' plan: key 'precision': unknown precision 'bf17'"});
  rows.push_back({"wrong type",
                  edited([](Json& j) { j["plan"]["seq"] = "2048"; }),
                  {},
                  "replay input 'x.json' plan: key 'seq' must be an integer"});
  rows.push_back({"fsdp version",
                  edited([](Json& j) { j["plan"]["fsdp_version"] = 3; }),
                  {},
                  "replay input 'x.json' plan: key 'fsdp_version' must be 1 or 2"});
  rows.push_back({"checkpoint_every below 1",
                  edited([](Json& j) { j["plan"]["checkpoint_every"] = 0; }),
                  {},
                  "replay input 'x.json' plan: key 'checkpoint_every'"});
  rows.push_back({"checkpoint_layers negative",
                  edited([](Json& j) { j["plan"]["checkpoint_layers"] = -1; }),
                  {},
                  "replay input 'x.json' plan: key 'checkpoint_layers'"});
  rows.push_back({"unknown model",
                  edited([](Json& j) { j["model"]["name"] = "llama-9-7b"; }),
                  {},
                  "replay input 'x.json' model: key 'name':"});
  rows.push_back({"other model version",
                  edited([](Json& j) { j["model"]["parameters"] = 7000000000; }),
                  {},
                  "replay input 'x.json' model: key 'parameters' is 7000000000"});
  rows.push_back({"unknown gpu",
                  edited([](Json& j) { j["cluster"]["gpu"] = "Z100"; }),
                  {},
                  "replay input 'x.json' cluster: key 'gpu':"});
  rows.push_back({"gpus",
                  edited([](Json& j) { j["cluster"]["gpus"] = 2; }),
                  {},
                  "replay input 'x.json' cluster: key 'gpus' is 2 but nodes x gpus_per_node is 1"});
  rows.push_back({"dp",
                  edited([](Json& j) { j["plan"]["dp"] = 2; }),
                  {},
                  "replay input 'x.json' plan: key 'dp' is 2"});
  rows.push_back({"impossible layout",
                  edited([](Json& j) { j["plan"]["tp"] = 2; }),
                  {},
                  "replay input 'x.json' plan: "});
  rows.push_back({"unknown setting", good, {"rank=8"}, "setting 'rank=8': expected KEY=VALUE"});
  rows.push_back({"bad setting value",
                  good,
                  {"lora_rank=eight"},
                  "setting 'lora_rank=eight': lora_rank must be a whole number"});
  rows.push_back({"bad setting enum",
                  good,
                  {"attention=flash3"},
                  "replay input 'x.json' plan: key 'attention': unknown attention 'flash3'"});
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    const std::string msg = message_of(r.doc, r.settings);
    EXPECT_NE(msg.find(r.expected), std::string::npos) << msg;
  }
}

TEST(ReplayJson, ReadsTheFileAndNamesItWhenItCannot) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("trainplan_replay_json_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "estimate.json").string();
  {
    std::ofstream f(path);
    f << estimate_file("llama-2-7b", "1xH200", model::Training{}).dump(2);
  }
  const ReplayInput in = read_replay_input(catalog(), path, 0, {});
  EXPECT_EQ(in.file, path);
  EXPECT_EQ(in.arch.name, "llama-2-7b");
  {
    std::ofstream f(path);
    f << "{\"schema\": ";
  }
  try {
    (void)read_replay_input(catalog(), path, 0, {});
    ADD_FAILURE() << "truncated JSON accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("replay input '" + path + "': invalid JSON"),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove_all(dir);
  EXPECT_THROW((void)read_replay_input(catalog(), path, 0, {}), InputError);
}

TEST(ReplayJson, WritesComponentsTotalsAndProvenance) {
  const Json file = estimate_file("llama-2-7b", "1xH200", lora({"q", "v"}));
  const ReplayInput in = replay_input_from_json(catalog(), file, "x", 0, {});
  const planner::ReplayPlan plan =
      planner::replay_plan(in.arch, in.counts, in.training, in.cluster);
  // Predictions only.
  const Json dry = replay_json(in, plan, {}, nullptr);
  EXPECT_EQ(dry["schema"], "trainplan.replay/1");
  EXPECT_TRUE(dry["provenance"].is_null());
  ASSERT_EQ(dry["components"].size(), plan.components.size());
  EXPECT_TRUE(dry["components"][0]["measured_s"].is_null());
  EXPECT_NEAR(dry["totals"]["predicted_step_s"].get<double>(), plan.time.step.value(), 1e-12);
  EXPECT_NEAR(dry["totals"]["recorded_step_s"].get<double>(), plan.time.step.value(),
              1e-9 * plan.time.step.value());
  EXPECT_EQ(dry["training"]["lora_targets"], Json::array({"q", "v"}));
  // Every GEMM measured 10 % slower than predicted.
  std::vector<ReplayMeasurement> m(plan.components.size());
  double extra = 0.0;
  for (std::size_t i = 0; i < plan.components.size(); ++i) {
    const auto& c = plan.components[i];
    if (!std::holds_alternative<planner::GemmWork>(c.work)) continue;
    m[i] = {c.predicted * 1.1, "cuBLASLt", ""};
    extra += 0.1 * c.predicted_total().value();
  }
  const Json run = replay_json(in, plan, m, Json{{"gpu", "H200"}});
  EXPECT_EQ(run["provenance"]["gpu"], "H200");
  EXPECT_NEAR(run["totals"]["projected_step_s"].get<double>(), plan.time.step.value() + extra,
              1e-12);
  EXPECT_NEAR(run["by_kind"]["gemm"]["measured_s"].get<double>(),
              1.1 * run["by_kind"]["gemm"]["predicted_s"].get<double>(), 1e-12);
  const Json& q = run["components"][0];
  EXPECT_EQ(q["name"], "q forward");
  EXPECT_EQ(q["work"]["m"], 2048);
  EXPECT_NEAR(q["measured_over_predicted"].get<double>(), 1.1, 1e-12);
  EXPECT_EQ(q["method"], "cuBLASLt");
  EXPECT_THROW((void)replay_json(in, plan, std::vector<ReplayMeasurement>(2), nullptr),
               std::invalid_argument);
}

}  // namespace
}  // namespace trainplan::reports
