#include "trainplan/reports/result_json.hpp"

#include <cmath>

#include "trainplan/model/lora.hpp"

namespace trainplan::reports {

using namespace request;  // the JSON helpers, files and the catalogue this floor reads with
namespace {

std::int64_t bytes(Bytes b) { return static_cast<std::int64_t>(std::llround(b.value())); }

// Each part as "<part>_bytes", and under its schema-/1 name without the unit for existing readers.
Json breakdown_json(const planner::MemoryBreakdown& m) {
  const std::pair<const char*, Bytes> parts[] = {
      {"weights", m.weights},         {"gradients", m.gradients}, {"optimizer", m.optimizer},
      {"activations", m.activations}, {"buffers", m.buffers},     {"overhead", m.overhead}};
  Json j = Json::object();
  for (const auto& [name, b] : parts) j[std::string(name) + "_bytes"] = bytes(b);
  for (const auto& [name, b] : parts) j[name] = bytes(b);
  j["fp8_weight_cache_bytes"] = bytes(m.states.fp8_weights);  // of weights (model/fp8.hpp)
  j["reference_weights_bytes"] = bytes(m.states.reference);   // of weights: DPO's reference model
  return j;
}

}  // namespace

Json model_json(const model::Architecture& a, const model::ParameterCounts& n, std::int64_t trainable) {
  return Json{{"name", a.name},
              {"family", a.family},
              {"parameters", n.total},
              {"active_parameters", n.active},
              {"trainable_parameters", trainable}};
}

Json cluster_json(const hardware::Cluster& c) {
  return Json{{"gpu", c.gpu.name},
              {"gpus", c.world()},
              {"nodes", c.nodes},
              {"gpus_per_node", c.gpus_per_node},
              {"gpus_per_nvlink_domain", c.gpus_per_domain()},
              {"gpu_memory_bytes", bytes(c.gpu.memory)},
              {"usable_memory_bytes", bytes(c.gpu.usable_memory)},
              {"host_memory_bytes", c.host_memory.value() > 0.0 ? Json(bytes(c.host_memory)) : Json(nullptr)}};
}

Json memory_json(const planner::MemoryBreakdown& m) {
  return Json{{"peak_allocated_bytes", bytes(m.peak_allocated)},
              {"reserved_bytes", bytes(m.reserved)},
              {"device_total_bytes", bytes(m.device_total)},
              {"host_bytes", bytes(m.host)},
              {"peak_phase", std::string(m.peak_phase)},
              {"peak_stage", m.peak_stage.empty() ? Json(nullptr) : Json(std::string(m.peak_stage))},
              {"breakdown", breakdown_json(m)}};
}

Json candidate_json(const planner::Candidate& c) {
  const model::Training& t = c.training;
  return Json{{"strategy", std::string(to_string(t.strategy))},
              {"tp", t.tp},
              {"cp", t.cp},
              {"cp_comm", std::string(to_string(t.cp_comm))},
              {"fp8", std::string(to_string(t.fp8))},
              {"pp", t.pp},
              {"dp", c.layout.dp},
              {"method", std::string(to_string(t.method))},
              {"objective", std::string(to_string(t.objective))},
              {"reference_precomputed", t.reference_precomputed},
              {"precision", std::string(to_string(t.precision))},
              {"optimizer", std::string(to_string(t.optimizer))},
              {"checkpointing", std::string(to_string(t.checkpointing))},
              {"checkpoint_every", t.checkpoint_every},
              {"checkpoint_layers", t.checkpoint_layers},
              {"checkpoint_group", t.checkpoint_group},
              {"offload", std::string(to_string(t.offload))},
              {"framework", std::string(to_string(t.framework))},
              {"library", std::string(to_string(t.library))},
              {"expert_parallel", t.ep},
              {"frozen_base_fp32", t.frozen_base_fp32},
              {"micro_batch", t.micro_batch},
              {"seq", t.seq},
              {"fits", c.fits},
              {"tokens_per_s", c.tokens_per_s > 0.0 ? Json(c.tokens_per_s) : Json(nullptr)},
              {"verdict", std::string(to_string(c.verdict.verdict))},
              {"verdict_reason", c.verdict.reason},
              {"max_micro_batch", c.max_micro_batch},
              {"memory", memory_json(c.memory)}};
}

Json fit_json(const model::Architecture& a, const model::ParameterCounts& n, const hardware::Cluster& c,
              const planner::FitResult& r, const std::string& summary) {
  Json cands = Json::array();
  for (const auto& k : r.candidates) cands.push_back(candidate_json(k));
  const std::int64_t trainable =
      r.candidates.empty() ? n.total : model::trainable_parameters(a, n, r.candidates.front().training);
  Json j{{"schema", "trainplan.fit/1"},
         {"model", model_json(a, n, trainable)},
         {"cluster", cluster_json(c)},
         {"verdict",
          {{"fits", r.recommended.has_value()},
           {"recommended", r.recommended ? Json(*r.recommended) : Json(nullptr)},
           {"summary", summary}}},
         {"candidates", cands}};
  return j;
}

}  // namespace trainplan::reports
