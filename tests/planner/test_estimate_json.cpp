// The estimate, plan and fit JSON against golden shapes (keys may be added, never renamed), their
// values against the estimate, units in the names, rejections as structured reasons, and the inputs
// estimate and plan parse (--tokens, --profile).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "../common/catalog.hpp"
#include "trainplan/request/profile_json.hpp"
#include "trainplan/request/request.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/request/catalog.hpp"
#include "trainplan/reports/estimate_json.hpp"
#include "trainplan/reports/result_json.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/planner/evaluator.hpp"
#include "trainplan/planner/fit.hpp"
#include "trainplan/planner/search.hpp"

namespace trainplan::reports {

using namespace request;
namespace {

const std::string kData = TRAINPLAN_PLANNER_TEST_DATA;

// The shape of a document: objects keep their keys, arrays the shape of their first element,
// scalars become their type name.
Json shape(const Json& j) {
  switch (j.type()) {
    case Json::value_t::object: {
      Json out = Json::object();
      for (const auto& [k, v] : j.items()) out[k] = shape(v);
      return out;
    }
    case Json::value_t::array:
      return j.empty() ? Json::array() : Json::array({shape(j.front())});
    case Json::value_t::string:
      return "string";
    case Json::value_t::boolean:
      return "boolean";
    case Json::value_t::null:
      return "null";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "integer";
    case Json::value_t::number_float:
      return "number";
    case Json::value_t::binary:
    case Json::value_t::discarded:
      return "?";
  }
  return "?";
}

// Every key of `golden` is in `actual` with the same shape (keys may be added, never renamed or
// retyped); `where` names the first difference.
bool contains_shape(const Json& actual, const Json& golden, std::string& where) {
  if (golden.is_object()) {
    if (!actual.is_object()) return false;
    for (const auto& [k, v] : golden.items()) {
      if (!actual.contains(k)) {
        where += "/" + k + " (missing)";
        return false;
      }
      std::string sub = where + "/" + k;
      if (!contains_shape(actual[k], v, sub)) {
        where = sub;
        return false;
      }
    }
    return true;
  }
  if (golden.is_array()) {
    if (!actual.is_array()) return false;
    if (golden.empty() || actual.empty()) return true;
    std::string sub = where + "[0]";
    if (!contains_shape(actual.front(), golden.front(), sub)) {
      where = sub;
      return false;
    }
    return true;
  }
  return actual == golden;
}

// Compares with data/<name>; TRAINPLAN_UPDATE_GOLDEN=1 rewrites it.
void expect_golden(const Json& actual, const std::string& name) {
  const std::string path = kData + "/" + name;
  if (std::getenv("TRAINPLAN_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(path) << actual.dump(2) << "\n";
    return;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in) << "missing golden file " << path;
  std::stringstream text;
  text << in.rdbuf();
  const Json golden = Json::parse(text.str());
  std::string where;
  EXPECT_TRUE(contains_shape(actual, golden, where))
      << "shape differs from " << path << " at " << where << ":\n"
      << actual.dump(2);
}

struct Problem {
  model::Architecture a;
  model::ParameterCounts n;
  hardware::Cluster c;
};

Problem problem(const std::string& model, const std::string& cluster) {
  const Catalog& cat = test::catalog();
  Problem p{cat.resolve_model(model).arch, {}, cat.resolve_cluster(cluster, std::nullopt).cluster};
  p.n = model::count_parameters(p.a);
  return p;
}

TEST(EstimateJson, GoldenShapeAndValues) {
  const Problem p = problem("llama-2-70b", "4x8xH100-80GB");
  model::Training tr;
  tr.strategy = Strategy::fsdp_full;
  tr.micro_batch = 2;
  tr.seq = 4096;
  tr.checkpointing = Checkpointing::full;
  const planner::Estimate e = planner::Evaluator(p.a, p.n, p.c).estimate(tr);
  const Json j = estimate_json(p.a, p.n, p.c, e, 1e12);
  expect_golden(shape(j), "estimate_shape.json");
  EXPECT_EQ(j["schema"], "trainplan.estimate/1");
  const Json& plan = j["plan"];
  EXPECT_EQ(plan["strategy"], "fsdp-full");
  EXPECT_EQ(plan["dp"], 32);
  EXPECT_EQ(plan["grad_accum"], 1);
  EXPECT_EQ(plan["global_batch"], 64);
  EXPECT_DOUBLE_EQ(plan["time"]["step_s"].get<double>(), e.time.step.value());
  EXPECT_DOUBLE_EQ(plan["throughput"]["mfu"].get<double>(), e.throughput.mfu);
  EXPECT_DOUBLE_EQ(plan["time_to_train_s"].get<double>(), 1e12 / e.throughput.tokens_per_s);
  std::int64_t sum = 0;
  for (const auto& [k, v] : plan["communication"]["by_collective"].items())
    sum += v.get<std::int64_t>();
  EXPECT_NEAR(static_cast<double>(sum),
              plan["communication"]["bytes_per_gpu_per_step"].get<double>(), 4.0);
  EXPECT_EQ(plan["communication"]["items"].size(), e.communication.size());
  // One block's saved tensors add up to the block; the kept parts are the memory model's.
  const Json& act = plan["activations"];
  std::int64_t saved = 0;
  for (const auto& t : act["block_saved_for_backward"][0]["saved"]) saved += t["bytes"].get<std::int64_t>();
  EXPECT_NEAR(static_cast<double>(saved),
              model::block_activations(p.a, e.training, model::Stack::decoder).saved.value(),
              static_cast<double>(act["block_saved_for_backward"][0]["saved"].size()));
  EXPECT_EQ(act["per_block_kept_bytes"].get<std::int64_t>(),
            std::llround(e.memory.activation_detail.per_block.value()));
}

TEST(EstimateJson, PlanGoldenShape) {
  const Problem p = problem("llama-2-13b", "2x8xA100-80GB");
  planner::SearchRequest req;
  req.global_batch = 128;
  req.top = 3;
  const planner::PlanResult r = planner::search(p.a, p.n, p.c, req);
  const Json j = plan_result_json(p.a, p.n, p.c, r);
  expect_golden(shape(j), "plan_shape.json");
  EXPECT_EQ(j["schema"], "trainplan.plan/1");
  ASSERT_EQ(j["plans"].size(), 3u);
  EXPECT_EQ(j["plans"][0]["rank"], 1);
  EXPECT_TRUE(j["plans"][0]["why_slower"].is_null());
  EXPECT_TRUE(j["plans"][1]["why_slower"].is_string());
  for (const auto& plan : j["plans"]) EXPECT_EQ(plan["global_batch"], 128);
  EXPECT_FALSE(j["rejected"].empty());
}

// Every number a script reads carries its unit in its name (_bytes, _s, _per_s) unless it is a
// count or a ratio named as one. The schema-/1 names without a unit stay beside their unit-named
// copies, so only the copies are checked.
bool unit_free_allowed(const std::string& key) {
  static const std::set<std::string> kCounts{
      "tp", "cp", "pp", "dp", "pp_virtual", "expert_parallel", "micro_batch", "seq", "grad_accum",
      "global_batch", "max_micro_batch", "rank", "gpus", "nodes", "gpus_per_node", "gpus_per_nvlink_domain", "parameters",
      "active_parameters", "trainable_parameters", "lora_rank", "lora_alpha", "lora_dropout",
      "quant_block", "mfu", "hfu", "tokens", "forward", "backward", "micro_batches_in_flight",
      "evaluated", "fitting", "recommended", "global_batch", "data_parallel", "fsdp_version",
      "checkpoint_every", "checkpoint_layers", "checkpoint_group", "offload_activations"};
  static const std::set<std::string> kLegacy{"weights",     "gradients", "optimizer", "activations",
                                             "buffers",     "overhead",  "by_collective", "by_tier"};
  return kCounts.contains(key) || kLegacy.contains(key) || key.ends_with("_bytes") ||
         key.ends_with("_s") || key.ends_with("_per_s") || key == "bytes" ||
         key.starts_with("bytes_");
}

void expect_units_in_names(const Json& j, const std::string& where) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      if (k == "by_collective" || k == "by_tier" || k == "bytes_by_collective" ||
          k == "bytes_by_tier")
        continue;  // keyed by collective or link name; the values are bytes
      if (v.is_number()) {
        EXPECT_TRUE(unit_free_allowed(k)) << where << "/" << k << " has no unit";
      }
      expect_units_in_names(v, where + "/" + k);
    }
  } else if (j.is_array()) {
    for (const auto& v : j) expect_units_in_names(v, where + "[]");
  }
}

TEST(EstimateJson, QuantitiesCarryTheirUnitInTheName) {
  const Problem p = problem("llama-2-13b", "2x8xA100-80GB");
  model::Training tr;
  tr.strategy = Strategy::fsdp_full;
  const planner::Estimate e = planner::Evaluator(p.a, p.n, p.c).estimate(tr);
  const Json j = estimate_json(p.a, p.n, p.c, e, 1e12);
  expect_units_in_names(j, "");
  // The unit-named breakdown is the memory model's, part by part.
  const Json& b = j["plan"]["memory"]["breakdown"];
  EXPECT_EQ(b["weights_bytes"].get<std::int64_t>(), std::llround(e.memory.weights.value()));
  EXPECT_EQ(b["optimizer_bytes"].get<std::int64_t>(), std::llround(e.memory.optimizer.value()));
  EXPECT_EQ(b["activations_bytes"].get<std::int64_t>(), std::llround(e.memory.activations.value()));
  for (const char* part : {"weights", "gradients", "optimizer", "activations", "buffers", "overhead"})
    EXPECT_EQ(b[part], b[std::string(part) + "_bytes"]) << part;
  EXPECT_EQ(j["plan"]["communication"]["bytes_by_tier"], j["plan"]["communication"]["by_tier"]);
}

// plan --json: every rejection has a code a script can switch on, the message, and the numbers
// behind it; the numbers agree with the code (a memory rejection needs more than there is, a
// slower one has fewer tokens/s than the best).
TEST(EstimateJson, RejectionsAreStructured) {
  const Problem p = problem("llama-2-70b", "8xA100-80GB");
  planner::SearchRequest req;
  req.global_batch = 64;
  req.top = 1;
  const planner::PlanResult r = planner::search(p.a, p.n, p.c, req);
  const Json j = plan_result_json(p.a, p.n, p.c, r);
  expect_units_in_names(j, "");
  ASSERT_FALSE(j["rejected"].empty());
  const std::set<std::string> codes{"slower", "gpu_memory", "host_memory", "batch_split", "invalid"};
  std::set<std::string> seen;
  for (const Json& x : j["rejected"]) {
    SCOPED_TRACE(x.dump());
    const std::string code = x["code"].get<std::string>();
    seen.insert(code);
    EXPECT_TRUE(codes.contains(code));
    EXPECT_FALSE(x["message"].get<std::string>().empty());
    EXPECT_TRUE(x["plan"].is_string());
    const Json& v = x["values"];
    ASSERT_TRUE(v.is_object());
    if (code == "gpu_memory" || code == "host_memory") {
      EXPECT_GT(v["needed_bytes"].get<double>(), v["available_bytes"].get<double>());
    }
    if (code == "slower") {
      EXPECT_LE(v["tokens_per_s"].get<double>(), v["best_tokens_per_s"].get<double>());
    }
  }
  EXPECT_TRUE(seen.contains("slower") || seen.contains("gpu_memory")) << j["rejected"].dump(2);
}

// fit --json: tokens/s per candidate where the time is known (those that fit), null otherwise; the
// recommended one is the fastest that fits (planner::fit's rule).
TEST(EstimateJson, FitCandidatesCarryTokensPerSecond) {
  const Problem p = problem("llama-2-13b", "8xA100-80GB");
  planner::SearchRequest req;
  const planner::FitResult f = planner::fit(p.a, p.n, req, p.c);
  const Json j = fit_json(p.a, p.n, p.c, f, "summary");
  ASSERT_TRUE(j["verdict"]["recommended"].is_number());
  double best = 0.0;
  for (const Json& k : j["candidates"]) {
    SCOPED_TRACE(k.dump());
    if (k["max_micro_batch"].get<std::int64_t>() > 0) {
      ASSERT_TRUE(k["tokens_per_s"].is_number());
      EXPECT_GT(k["tokens_per_s"].get<double>(), 0.0);
      best = std::max(best, k["tokens_per_s"].get<double>());
    } else {
      EXPECT_TRUE(k["tokens_per_s"].is_null());
    }
  }
  const Json& rec = j["candidates"][j["verdict"]["recommended"].get<std::size_t>()];
  EXPECT_DOUBLE_EQ(rec["tokens_per_s"].get<double>(), best);
  expect_units_in_names(j, "");
}

struct CountRow {
  const char* text;
  double value;
};

TEST(EstimateJson, TokenCountsAcceptDecimalSuffixes) {
  for (const CountRow& r : {CountRow{"1T", 1e12}, CountRow{"300B", 3e11},
                            CountRow{"2.5e12", 2.5e12}, CountRow{"7M", 7e6}, CountRow{"10k", 1e4},
                            CountRow{"1.4G", 1.4e9}, CountRow{"123", 123.0}}) {
    SCOPED_TRACE(r.text);
    EXPECT_DOUBLE_EQ(parse_count(r.text, "--tokens"), r.value);
  }
  for (const char* bad : {"", "T", "1X", "-5B", "0", "1TB", "abc"}) {
    SCOPED_TRACE(bad);
    try {
      (void)parse_count(bad, "--tokens");
      FAIL() << "expected InputError";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("--tokens"), std::string::npos) << e.what();
    }
  }
}

TEST(EstimateJson, AProfileThatDoesNotParseIsAnInputErrorNamingTheFile) {
  const std::string path = ::testing::TempDir() + "/broken_profile.json";
  std::ofstream(path) << "{\"schema\": \"trainplan.profile/1\", \"gemm\": [";
  try {
    (void)read_profile_option(path);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--profile"), std::string::npos) << m;
    EXPECT_NE(m.find(path), std::string::npos) << m;
  }
  EXPECT_THROW((void)read_profile_option(::testing::TempDir() + "/no_such_profile.json"),
               InputError);
}

}  // namespace
}  // namespace trainplan::reports
