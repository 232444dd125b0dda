#include "trainplan/reports/estimate_json.hpp"

#include <cmath>
#include <map>
#include <stdexcept>

#include "trainplan/core/error.hpp"
#include "trainplan/request/profile_json.hpp"
#include "trainplan/reports/result_json.hpp"
#include "trainplan/model/activations.hpp"
#include "trainplan/model/library.hpp"
#include "trainplan/model/lora.hpp"
#include "trainplan/planner/evaluator.hpp"
#include "trainplan/model/partial.hpp"

namespace trainplan::reports {

using namespace request;  // the JSON helpers, files and the catalogue this floor reads with
namespace {

std::int64_t bytes(Bytes b) { return static_cast<std::int64_t>(std::llround(b.value())); }

Json time_json(const planner::TimeBreakdown& t) {
  return Json{{"step_s", t.step.value()},
              {"compute_s", t.compute.value()},
              {"memory_bound_s", t.memory_bound.value()},
              {"host_s", t.host.value()},
              {"recompute_s", t.recompute.value()},
              {"communication_exposed_s", t.communication_exposed.value()},
              {"overlap_slowdown_s", t.overlap_slowdown.value()},
              {"bubble_s", t.bubble.value()},
              {"optimizer_s", t.optimizer.value()},
              {"offload_s", t.offload.value()},
              {"reference_s", t.reference.value()},
              {"kernels", {{"forward", t.kernels_forward}, {"backward", t.kernels_backward}}},
              {"phases", {{"forward_s", t.forward_phase.value()},
                          {"backward_s", t.backward_phase.value()},
                          {"optimizer_s", t.optimizer.value()}}}};
}

Json communication_json(const planner::Estimate& e) {
  std::map<std::string, std::int64_t> by_collective;
  std::map<std::string, std::int64_t> by_tier;
  Json items = Json::array();
  for (const auto& c : e.communication) {
    by_collective[c.collective] += bytes(c.bytes);
    by_tier[c.tier] += bytes(c.bytes);
    items.push_back(Json{{"collective", c.collective},
                         {"purpose", c.purpose},
                         {"tier", c.tier},
                         {"bytes", bytes(c.bytes)},
                         {"time_s", c.time.value()},
                         {"exposed_s", c.exposed.value()},
                         {"source", c.source}});
  }
  return Json{{"bytes_per_gpu_per_step", bytes(e.communication_bytes())},
              {"bytes_by_collective", by_collective},
              {"bytes_by_tier", by_tier},
              {"by_collective", by_collective},  // schema-/1 names, kept for existing readers
              {"by_tier", by_tier},
              {"items", items}};
}

// {"plan", "code", "message", "values": {name_with_unit: number}}; "reason" repeats the message
// under its schema-/1 name.
Json rejection_json(const planner::Rejection& x) {
  Json values = Json::object();
  for (const auto& [name, v] : x.values) values[name] = v;
  return Json{{"plan", x.plan},
              {"code", std::string(to_string(x.code))},
              {"message", x.reason},
              {"values", values},
              {"reason", x.reason}};
}

}  // namespace

Json plan_json(const planner::Estimate& e, std::optional<double> tokens) {
  const planner::Candidate cand{e.training, e.layout, e.memory, e.verdict, e.fits, e.max_micro_batch};
  Json j = candidate_json(cand);
  j["tokens_per_s"] = e.throughput.tokens_per_s;
  j["pp_virtual"] = e.training.pp_virtual;
  j["sequence_parallel"] = e.training.sequence_parallel;
  j["tp_comm_overlap"] = e.training.tp_comm_overlap;
  j["offload_activations"] = e.training.offload_activation_layers;
  j["fp8_param_gather"] = e.training.fp8_param_gather;
  j["bf16_master_weights"] = e.training.bf16_master;
  j["bf16_optimizer_states"] = e.training.bf16_optimizer_states;
  j["optimizer_in_backward"] = e.training.optimizer_in_backward;
  j["liger"] = e.training.liger;
  j["compile"] = e.training.compile;
  j["expandable_segments"] = e.training.expandable_segments;
  j["chunked_loss"] = e.training.chunked_loss;
  if (e.training.optimizer == Optimizer::galore_adamw) j["galore_rank"] = e.training.galore_rank;
  if (model::trains_subset(e.training)) j["trainable"] = model::trained_subset_text(e.training.partial);
  j["grad_accum"] = e.training.grad_accum;
  // How it trains beyond the candidate's columns, so that the plan can be read back (replay).
  const model::Training& t = e.training;
  j["attention"] = std::string(to_string(t.attention));
  j["optimizer_impl"] = std::string(to_string(t.optimizer_impl));
  j["optimizer_impl_resolved"] = std::string(to_string(t.optimizer_implementation()));
  j["fsdp_wrap"] = std::string(to_string(t.fsdp_wrap));
  if (t.gathers_parameters()) j["fsdp_version"] = t.fsdp_version;
  if (t.strategy == Strategy::fsdp_hybrid) j["hybrid_shard"] = e.layout.shard;
  if (t.reshards_to_group())
    j["reshard_after_forward"] = t.fsdp_reshard_to;
  if (t.method != Method::full) {
    std::string targets;
    for (const auto& x : t.lora.targets) targets += (targets.empty() ? "" : ",") + x;
    j["lora_rank"] = t.lora.rank;
    j["lora_alpha"] = t.lora.alpha;
    j["lora_dropout"] = t.lora.dropout;
    j["lora_targets"] = targets;
  }
  if (t.method == Method::qlora) {
    j["quant"] = std::string(to_string(t.quant));
    j["quant_block"] = t.quant_block;
    j["qlora_stack"] = std::string(to_string(t.qlora_stack));
    j["bitsandbytes"] = model::package_release_text(model::bitsandbytes_release(t));
  }
  if (t.library_version != 0) j["library_version"] = model::package_release_text(t.library_version);
  if (model::holds_previous_micro_batch(t)) j["previous_share"] = t.previous_share;
  j["global_batch"] = e.global_batch;
  j["time"] = time_json(e.time);
  j["throughput"] = Json{{"tokens_per_s", e.throughput.tokens_per_s},
                         {"samples_per_s", e.throughput.samples_per_s},
                         {"mfu", e.throughput.mfu},
                         {"hfu", e.throughput.hfu},
                         {"peak_flops_per_s", e.throughput.peak.value()},
                         {"mfu_formula", e.throughput.mfu_formula}};
  j["communication"] = communication_json(e);
  if (tokens) {
    j["tokens"] = *tokens;
    j["time_to_train_s"] = planner::time_to_train(e, *tokens).value();
  }
  return j;
}

// The activation memory's parts and, per stack, one block's saved tensors by name.
Json activations_json(const model::Architecture& /*a*/, const planner::Estimate& e) {
  const model::ActivationMemory& m = e.memory.activation_detail;
  auto b = [](Bytes x) { return static_cast<std::int64_t>(std::llround(x.value())); };
  Json stacks = Json::array();
  for (const model::StackActivationTerms& part : m.block_terms) {
    Json terms = Json::array();
    for (const auto& t : part.terms)
      terms.push_back(Json{{"tensor", std::string(t.name)}, {"bytes", b(t.bytes)}});
    stacks.push_back(
        Json{{"stack", part.stack == model::Stack::encoder ? "encoder" : "decoder"}, {"saved", terms}});
  }
  return Json{{"per_block_kept_bytes", b(m.per_block)},
              {"blocks_bytes", b(m.blocks)},
              {"recompute_peak_bytes", b(m.recompute_peak)},
              {"context_exchange_forward_bytes", b(m.exchange.forward)},
              {"context_exchange_backward_bytes", b(m.exchange.backward)},
              {"embedding_bytes", b(m.embedding)},
              {"head_bytes", b(m.head)},
              {"host_bytes", b(m.host)},
              {"micro_batches_in_flight", m.in_flight},
              {"block_saved_for_backward", stacks}};
}

Json estimate_json(const model::Architecture& a, const model::ParameterCounts& n,
                   const hardware::Cluster& c, const planner::Estimate& e,
                   std::optional<double> tokens) {
  Json plan = plan_json(e, tokens);
  plan["activations"] = activations_json(a, e);
  return Json{{"schema", kEstimateSchema},
              {"model", model_json(a, n, model::trainable_parameters(a, n, e.training))},
              {"cluster", cluster_json(c)},
              {"plan", plan}};
}

Json explain_json(const model::Architecture& a, const model::ParameterCounts& n,
                  const hardware::Cluster& c, const planner::Explanation& x) {
  Json suggestions = Json::array();
  for (const planner::Suggestion& s : x.suggestions) {
    Json changes = Json::array();
    for (const planner::OptionChange& o : s.changes)
      changes.push_back({{"option", o.option}, {"from", o.from.empty() ? Json(nullptr) : Json(o.from)}, {"to", o.to}});
    suggestions.push_back({{"changes", std::move(changes)},
                           {"pair", s.pair},
                           {"throughput_kept", s.throughput_kept},
                           {"plan", plan_json(s.estimate)}});
  }
  return Json{{"schema", kExplainSchema},
              {"model", model_json(a, n, model::trainable_parameters(a, n, x.given.training))},
              {"cluster", cluster_json(c)},
              {"given", plan_json(x.given)},
              {"fits", x.given.fits},
              {"suggestions", std::move(suggestions)}};
}

Json plan_result_json(const model::Architecture& a, const model::ParameterCounts& n,
                      const hardware::Cluster& c, const planner::PlanResult& r,
                      std::optional<double> tokens) {
  Json plans = Json::array();
  for (std::size_t i = 0; i < r.plans.size(); ++i) {
    Json p = plan_json(r.plans[i], tokens);
    p["rank"] = i + 1;
    p["label"] = planner::plan_label(r.plans[i].training, r.plans[i].layout);
    p["why_slower"] = r.why_slower[i].empty() ? Json(nullptr) : Json(r.why_slower[i]);
    plans.push_back(std::move(p));
  }
  Json rejected = Json::array();
  for (const auto& x : r.rejected) rejected.push_back(rejection_json(x));
  const std::int64_t trainable =
      r.plans.empty() ? n.total : model::trainable_parameters(a, n, r.plans.front().training);
  return Json{{"schema", kPlanSchema},
              {"model", model_json(a, n, trainable)},
              {"cluster", cluster_json(c)},
              {"search", {{"evaluated", r.evaluated}, {"fitting", r.fitting}}},
              {"plans", plans},
              {"rejected", rejected}};
}

}  // namespace trainplan::reports
