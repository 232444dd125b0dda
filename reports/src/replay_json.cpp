#include "trainplan/reports/replay_json.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <stdexcept>

#include "trainplan/core/error.hpp"
#include "trainplan/reports/estimate_json.hpp"
#include "trainplan/request/files.hpp"
#include "trainplan/reports/result_json.hpp"
#include "trainplan/model/lora.hpp"
#include "trainplan/planner/memory.hpp"
#include "trainplan/model/partial.hpp"

namespace trainplan::reports {

using namespace request;  // the JSON helpers, files and the catalogue this floor reads with
namespace {

enum class KeyType { text, integer, number, boolean };

struct TrainingKey {
  std::string_view name;
  KeyType type;
  bool recorded;  // written by estimate/plan --json; the others are assumed when absent
};

// The keys of PLAN that say how it trains (reports/src/result_json.cpp candidate_json, estimate_json.cpp
// plan_json), and those the files do not record but replay needs.
constexpr std::array kTrainingKeys{
    TrainingKey{"strategy", KeyType::text, true},
    TrainingKey{"tp", KeyType::integer, true},
    TrainingKey{"cp", KeyType::integer, true},
    TrainingKey{"cp_comm", KeyType::text, true},
    TrainingKey{"fp8", KeyType::text, false},
    TrainingKey{"fp8_param_gather", KeyType::boolean, false},
    TrainingKey{"bf16_master_weights", KeyType::boolean, false},
    TrainingKey{"bf16_optimizer_states", KeyType::boolean, false},
    TrainingKey{"optimizer_in_backward", KeyType::boolean, false},
    TrainingKey{"liger", KeyType::boolean, false},
    TrainingKey{"compile", KeyType::boolean, false},
    TrainingKey{"galore_rank", KeyType::integer, false},
    TrainingKey{"trainable", KeyType::text, false},
    TrainingKey{"pp", KeyType::integer, true},
    TrainingKey{"pp_virtual", KeyType::integer, true},
    TrainingKey{"sequence_parallel", KeyType::boolean, true},
    TrainingKey{"tp_comm_overlap", KeyType::boolean, false},
    TrainingKey{"expert_parallel", KeyType::integer, true},
    TrainingKey{"method", KeyType::text, true},
    TrainingKey{"objective", KeyType::text, false},
    TrainingKey{"reference_precomputed", KeyType::boolean, false},
    TrainingKey{"precision", KeyType::text, true},
    TrainingKey{"optimizer", KeyType::text, true},
    TrainingKey{"checkpointing", KeyType::text, true},
    TrainingKey{"offload", KeyType::text, true},
    TrainingKey{"framework", KeyType::text, true},
    TrainingKey{"frozen_base_fp32", KeyType::boolean, true},
    TrainingKey{"micro_batch", KeyType::integer, true},
    TrainingKey{"grad_accum", KeyType::integer, true},
    TrainingKey{"seq", KeyType::integer, true},
    TrainingKey{"attention", KeyType::text, false},
    TrainingKey{"optimizer_impl", KeyType::text, false},
    TrainingKey{"fsdp_wrap", KeyType::text, false},
    TrainingKey{"fsdp_version", KeyType::integer, false},
    TrainingKey{"checkpoint_every", KeyType::integer, false},
    TrainingKey{"checkpoint_layers", KeyType::integer, false},
    TrainingKey{"lora_rank", KeyType::integer, false},
    TrainingKey{"lora_alpha", KeyType::number, false},
    TrainingKey{"lora_dropout", KeyType::number, false},
    TrainingKey{"lora_targets", KeyType::text, false},
    TrainingKey{"quant", KeyType::text, false},
    TrainingKey{"quant_block", KeyType::integer, false},
};

const TrainingKey* training_key(std::string_view name) {
  for (const auto& k : kTrainingKeys)
    if (k.name == name) return &k;
  return nullptr;
}

std::string key_list() {
  std::string out;
  for (const auto& k : kTrainingKeys) out += (out.empty() ? "" : ", ") + std::string(k.name);
  return out;
}

// "key=value" typed as the key's value in a plan.
std::pair<std::string, Json> parse_setting(const std::string& setting) {
  const auto eq = setting.find('=');
  const std::string key = setting.substr(0, eq);
  const TrainingKey* k = training_key(key);
  if (eq == std::string::npos || k == nullptr)
    throw InputError(
        fmt::format("setting '{}': expected KEY=VALUE with KEY one of: {}", setting, key_list()));
  const std::string value = setting.substr(eq + 1);
  const auto bad = [&](std::string_view expected) {
    return InputError(fmt::format("setting '{}': {} must be {}", setting, key, expected));
  };
  switch (k->type) {
    case KeyType::text:
      if (value.empty()) throw bad("a non-empty value");
      return {key, Json(value)};
    case KeyType::integer: {
      std::size_t used = 0;
      long long v = 0;
      try {
        v = std::stoll(value, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != value.size()) throw bad("a whole number");
      return {key, Json(static_cast<std::int64_t>(v))};
    }
    case KeyType::number: {
      std::size_t used = 0;
      double v = 0.0;
      try {
        v = std::stod(value, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != value.size() || !std::isfinite(v)) throw bad("a number");
      return {key, Json(v)};
    }
    case KeyType::boolean:
      if (value == "true") return {key, Json(true)};
      if (value == "false") return {key, Json(false)};
      throw bad("true or false");
  }
  throw bad("a value");
}

int int_key(ObjectReader& r, const std::string& key, std::int64_t min_value) {
  const std::int64_t v = r.integer(key, min_value);
  if (v > 1'000'000'000) throw InputError(fmt::format("{}: key '{}' is too large", r.what(), key));
  return static_cast<int>(v);
}

std::vector<std::string> targets_key(ObjectReader& r, const std::string& key) {
  const Json& v = r.raw(key);
  std::vector<std::string> out;
  if (v.is_string()) {
    try {
      return model::split_targets(v.get<std::string>());
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}: key '{}': {}", r.what(), key, e.what()));
    }
  }
  if (v.is_array() && !v.empty()) {
    for (const Json& t : v) {
      if (!t.is_string()) break;
      out.push_back(t.get<std::string>());
    }
    if (out.size() == v.size()) return out;
  }
  throw InputError(
      fmt::format("{}: key '{}' must be a list like \"q,v\" or [\"q\", \"v\"]", r.what(), key));
}

// Context parallelism, absent from files written before it existed (none).
void read_context_parallel(ObjectReader& r, model::Training& t) {
  if (r.has("cp")) t.cp = int_key(r, "cp", 1);
  if (const auto k = r.optional_enumeration<CpComm>("cp_comm")) t.cp_comm = *k;
}

// The parallel degrees of one PLAN object, how the model-parallel ranks talk, and the FP8 recipe
// (whose all-gather is the data-parallel one).
void read_parallelism(ObjectReader& r, model::Training& t) {
  t.strategy = r.enumeration<Strategy>("strategy");
  t.tp = int_key(r, "tp", 1);
  read_context_parallel(r, t);
  t.pp = int_key(r, "pp", 1);
  if (r.has("pp_virtual")) t.pp_virtual = int_key(r, "pp_virtual", 1);
  if (const auto sp = r.optional_boolean("sequence_parallel")) t.sequence_parallel = *sp;
  if (const auto o = r.optional_boolean("tp_comm_overlap")) t.tp_comm_overlap = *o;
  if (r.has("expert_parallel")) t.ep = int_key(r, "expert_parallel", 1);
  if (const auto f = r.optional_enumeration<Fp8Recipe>("fp8")) t.fp8 = *f;
  if (const auto g = r.optional_boolean("fp8_param_gather")) t.fp8_param_gather = *g;
  if (const auto m = r.optional_boolean("bf16_master_weights")) t.bf16_master = *m;
  if (const auto m = r.optional_boolean("bf16_optimizer_states")) t.bf16_optimizer_states = *m;
  if (const auto m = r.optional_boolean("optimizer_in_backward")) t.optimizer_in_backward = *m;
  if (const auto m = r.optional_boolean("liger")) t.liger = *m;
  if (const auto m = r.optional_boolean("compile")) t.compile = *m;
  if (r.has("fsdp_version")) {
    t.fsdp_version = int_key(r, "fsdp_version", 1);
    if (t.fsdp_version > 2) throw InputError(fmt::format("{}: key 'fsdp_version' must be 1 or 2", r.what()));
  }
  if (r.has("galore_rank")) t.galore_rank = int_key(r, "galore_rank", 1);
  if (r.has("checkpoint_every")) t.checkpoint_every = int_key(r, "checkpoint_every", 1);
  if (r.has("checkpoint_layers")) t.checkpoint_layers = int_key(r, "checkpoint_layers", 0);
  if (const auto spec = r.optional_string("trainable")) t.partial = model::parse_trained_subset(*spec, "trainable");
}

// The training of one PLAN object (settings applied); `assumed` collects the options taken from the
// defaults because neither the file nor a setting gave them.
model::Training read_training(ObjectReader& r, std::vector<std::string>& assumed) {
  model::Training t;
  read_parallelism(r, t);
  t.method = r.enumeration<Method>("method");
  // Replay times the kernels of one supervised step; a preference pair and its reference forward
  // have no components there.
  if (const auto o = r.optional_enumeration<Objective>("objective"); o && *o != Objective::sft)
    throw InputError(fmt::format("{}: key 'objective' = \"{}\": replay times a supervised (sft) step; the "
                                 "preference objectives' pairs and reference forward are not replayed",
                                 r.what(), to_string(*o)));
  t.precision = r.enumeration<Precision>("precision");
  t.optimizer = r.enumeration<Optimizer>("optimizer");
  t.checkpointing = r.enumeration<Checkpointing>("checkpointing");
  t.offload = r.enumeration<Offload>("offload");
  if (const auto f = r.optional_enumeration<Framework>("framework")) t.framework = *f;
  if (const auto f = r.optional_boolean("frozen_base_fp32")) t.frozen_base_fp32 = *f;
  t.micro_batch = r.integer("micro_batch", 1);
  t.grad_accum = r.integer("grad_accum", 1);
  t.seq = r.integer("seq", 1);

  const auto assume = [&](const std::string& key, std::string_view value) {
    assumed.push_back(fmt::format("{}={}", key, value));
  };
  if (const auto a = r.optional_enumeration<Attention>("attention")) {
    t.attention = *a;
  } else {
    assume("attention", to_string(t.attention));
  }
  if (const auto o = r.optional_enumeration<OptimizerImpl>("optimizer_impl")) {
    t.optimizer_impl = *o;
  } else {
    assume("optimizer_impl", to_string(t.optimizer_impl));
  }
  if (const auto w = r.optional_enumeration<FsdpWrap>("fsdp_wrap")) {
    t.fsdp_wrap = *w;
  } else if (shards_parameters(t.strategy)) {
    assume("fsdp_wrap", to_string(t.fsdp_wrap));
  }
  const bool adapters = t.method != Method::full;
  if (r.has("lora_rank")) {
    t.lora.rank = r.integer("lora_rank", 1);
  } else {
    r.ignore({"lora_rank"});
    if (adapters) assume("lora_rank", std::to_string(t.lora.rank));
  }
  if (const auto alpha = r.optional_number("lora_alpha")) {
    t.lora.alpha = *alpha;
  } else if (adapters) {
    assume("lora_alpha", fmt::format("{:g}", t.lora.alpha));
  }
  if (const auto dropout = r.optional_number("lora_dropout")) {
    if (*dropout < 0.0 || *dropout >= 1.0)
      throw InputError(fmt::format("{}: key 'lora_dropout' must be in [0, 1)", r.what()));
    t.lora.dropout = *dropout;
  } else if (adapters) {
    assume("lora_dropout", fmt::format("{:g}", t.lora.dropout));
  }
  if (r.has("lora_targets")) {
    t.lora.targets = targets_key(r, "lora_targets");
  } else {
    r.ignore({"lora_targets"});
    if (adapters) {
      std::string joined;
      for (const auto& s : t.lora.targets) joined += (joined.empty() ? "" : ",") + s;
      assume("lora_targets", joined);
    }
  }
  if (const auto q = r.optional_enumeration<Quant>("quant")) {
    t.quant = *q;
  } else if (t.method == Method::qlora) {
    assume("quant", to_string(t.quant));
  }
  if (r.has("quant_block")) {
    t.quant_block = r.integer("quant_block", 1);
  } else {
    r.ignore({"quant_block"});
    if (t.method == Method::qlora) assume("quant_block", std::to_string(t.quant_block));
  }
  return t;
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

// The PLAN object a replay reads: an estimate's one plan, or plans[plan_index] of plan --json's;
// `what` names it in messages.
struct SelectedPlan {
  Json plan;
  std::string what;
};

SelectedPlan select_plan(ObjectReader& top, const std::string& schema, const std::string& what,
                         std::size_t plan_index) {
  SelectedPlan out;
  if (schema == kEstimateSchema) {
    if (plan_index != 0)
      throw InputError(fmt::format(
          "{}: an estimate holds one plan; --plan-index {} applies to the output of plan --json",
          what, plan_index));
    out.plan = top.raw("plan");
    out.what = what + " plan";
  } else if (schema == kPlanSchema) {
    const Json& plans = top.raw("plans");
    if (!plans.is_array()) throw InputError(what + ": key 'plans' must be an array");
    if (plans.empty()) throw InputError(what + ": key 'plans' is empty: the search found no plan");
    if (plan_index >= plans.size())
      throw InputError(
          fmt::format("{}: --plan-index {} is out of range: 'plans' holds {} (0 to {})", what,
                      plan_index, plans.size(), plans.size() - 1));
    out.plan = plans[plan_index];
    out.what = fmt::format("{} plans[{}]", what, plan_index);
  } else {
    throw InputError(
        fmt::format("{}: key 'schema' is '{}'; expected '{}' (trainplan estimate --json) or '{}' "
                    "(trainplan plan --json)",
                    what, schema, kEstimateSchema, kPlanSchema));
  }
  if (!out.plan.is_object()) throw InputError(out.what + ": expected a JSON object");
  return out;
}

// The model by its catalogue name; the file's parameter count must be the catalogue's.
void read_model(const Catalog& catalog, ObjectReader& m, const std::string& what, ReplayInput& in) {
  const std::string name = m.string("name");
  try {
    in.arch = catalog.resolve_model(name).arch;
  } catch (const InputError& e) {
    throw InputError(fmt::format("{} model: key 'name': {}", what, e.what()));
  }
  in.counts = model::count_parameters(in.arch);
  if (const auto p = m.optional_integer("parameters", 0); p && *p != in.counts.total)
    throw InputError(
        fmt::format("{} model: key 'parameters' is {} but '{}' has {} parameters here: the file "
                    "was written for another model or another version of it",
                    what, *p, name, in.counts.total));
}

hardware::Cluster read_cluster(const Catalog& catalog, ObjectReader& cl, const std::string& what) {
  const std::string gpu = cl.string("gpu");
  const std::int64_t nodes = cl.integer("nodes", 1);
  const std::int64_t per_node = cl.integer("gpus_per_node", 1);
  if (const auto g = cl.optional_integer("gpus", 1); g && *g != nodes * per_node)
    throw InputError(fmt::format("{} cluster: key 'gpus' is {} but nodes x gpus_per_node is {}",
                                 what, *g, nodes * per_node));
  hardware::Cluster cluster;
  try {
    cluster =
        catalog.resolve_cluster(fmt::format("{}x{}x{}", nodes, per_node, gpu), std::nullopt)
            .cluster;
  } catch (const InputError& e) {
    throw InputError(fmt::format("{} cluster: key 'gpu': {}", what, e.what()));
  }
  if (const auto host = cl.optional_number("host_memory_bytes")) cluster.host_memory = Bytes(*host);
  if (const auto d = cl.optional_integer("gpus_per_nvlink_domain", 1)) {
    if (*d % per_node != 0)
      throw InputError(fmt::format("{} cluster: key 'gpus_per_nvlink_domain' {} is not a whole "
                                   "number of nodes of {}",
                                   what, *d, per_node));
    cluster.nvlink_domain = static_cast<int>(*d);
  }
  return cluster;
}

// The training must lay out on the cluster as the file says (its dp) and its adapters fit the model.
void check_layout(ObjectReader& r, const std::string& plan_what, const ReplayInput& in) {
  try {
    const planner::Layout l = planner::make_layout(in.arch, in.training, in.cluster);
    if (const auto dp = r.optional_integer("dp", 1); dp && *dp != l.dp)
      throw InputError(fmt::format("key 'dp' is {} but tp {} x pp {} on {} GPUs leaves {}", *dp,
                                   l.tp, l.pp, l.world, l.dp));
    if (in.training.method != Method::full) (void)model::lora_parameters(in.arch, in.training.lora);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", plan_what, e.what()));
  }
}

// The LoRA rank and targets are not in the file: the adapters' size must agree with them.
void check_trainable(ObjectReader& m, const std::string& what, const ReplayInput& in) {
  const auto trainable = m.optional_integer("trainable_parameters", 0);
  if (!trainable) return;
  const std::int64_t here = model::trainable_parameters(in.arch, in.counts, in.training);
  if (*trainable != here && in.training.method != Method::full)
    throw InputError(fmt::format(
        "{} model: key 'trainable_parameters' is {} but LoRA rank {} on {} gives {}: the file "
        "does not record the adapters; give them with --plan-set lora_rank=R --plan-set "
        "lora_targets=LIST",
        what, *trainable, in.training.lora.rank, joined(in.training.lora.targets), here));
  if (*trainable != here)
    throw InputError(
        fmt::format("{} model: key 'trainable_parameters' is {} but a full fine-tune trains {}",
                    what, *trainable, here));
}

}  // namespace

const std::vector<std::string_view>& replay_training_keys() {
  static const std::vector<std::string_view> keys = [] {
    std::vector<std::string_view> out;
    for (const auto& k : kTrainingKeys) out.push_back(k.name);
    return out;
  }();
  return keys;
}

ReplayInput replay_input_from_json(const Catalog& catalog, const Json& j, const std::string& what,
                                   std::size_t plan_index,
                                   const std::vector<std::string>& settings) {
  ReplayInput in;
  in.plan_index = plan_index;
  ObjectReader top(j, what);
  in.schema = top.string("schema");
  SelectedPlan selected = select_plan(top, in.schema, what, plan_index);
  ObjectReader m(top.raw("model"), what + " model");
  read_model(catalog, m, what, in);
  ObjectReader cl(top.raw("cluster"), what + " cluster");
  in.cluster = read_cluster(catalog, cl, what);

  // ---- Training ---------------------------------------------------------------------------------
  for (const std::string& s : settings) {
    auto [key, value] = parse_setting(s);
    selected.plan[key] = std::move(value);
    in.settings.push_back(s);
  }
  ObjectReader r(selected.plan, selected.what);
  in.training = read_training(r, in.assumed);
  check_layout(r, selected.what, in);
  check_trainable(m, what, in);
  if (r.has("time")) {
    ObjectReader t(r.raw("time"), selected.what + " time");
    if (const auto step = t.optional_number("step_s")) in.recorded_step_s = *step;
  }
  return in;
}

ReplayInput read_replay_input(const Catalog& catalog, const std::string& path,
                              std::size_t plan_index, const std::vector<std::string>& settings) {
  const std::string what = "replay input '" + path + "'";
  ReplayInput in = replay_input_from_json(
      catalog, parse_json(read_text_file(path, "replay input", kMaxJsonFileBytes), what), what, plan_index, settings);
  in.file = path;
  return in;
}

namespace {

Json work_json(const planner::ReplayWork& w) {
  struct Visit {
    Json operator()(const planner::GemmWork& g) const {
      return Json{{"m", g.m},
                  {"n", g.n},
                  {"k", g.k},
                  {"batch", g.batch},
                  {"a_transposed", g.a_transposed},
                  {"b_transposed", g.b_transposed},
                  {"dtype", std::string(g.dtype)},
                  {"flops", g.flops().value()}};
    }
    Json operator()(const planner::AttentionWork& a) const {
      return Json{{"batch", a.batch},       {"heads", a.heads},        {"kv_heads", a.kv_heads},
                  {"seq", a.seq},           {"head_dim", a.head_dim},  {"causal", a.causal},
                  {"backward", a.backward}, {"flops", a.flops.value()}};
    }
    Json operator()(const planner::StreamWork& s) const {
      return Json{{"bytes", s.bytes.value()}, {"kernels", s.kernels}};
    }
    Json operator()(const planner::OptimizerWork& o) const {
      return Json{{"optimizer", std::string(to_string(o.optimizer))},
                  {"implementation", std::string(to_string(o.implementation))},
                  {"params", o.params},
                  {"tensors", o.tensors},
                  {"state_bytes", o.state_bytes},
                  {"grad_bytes", o.grad_bytes},
                  {"bytes_per_param", o.bytes_per_param}};
    }
    Json operator()(const planner::CollectiveWork& c) const {
      return Json{{"collective", std::string(to_string(c.collective))},
                  {"purpose", std::string(to_string(c.purpose))},
                  {"bytes", c.size.value()},
                  {"ranks", c.group.ranks},
                  {"ranks_per_node", c.group.per_node},
                  {"nodes", c.group.nodes},
                  {"stride", c.stride},
                  {"tier", std::string(to_string(c.tier))}};
    }
    Json operator()(const planner::ModelOnlyWork& m) const { return Json{{"why", m.why}}; }
  };
  return std::visit(Visit{}, w);
}

Json training_json(const model::Training& t) {
  return Json{{"strategy", std::string(to_string(t.strategy))},
              {"tp", t.tp},
              {"cp", t.cp},
              {"cp_comm", std::string(to_string(t.cp_comm))},
              {"fp8", std::string(to_string(t.fp8))},
              {"fp8_param_gather", t.fp8_param_gather},
              {"bf16_master_weights", t.bf16_master},
              {"bf16_optimizer_states", t.bf16_optimizer_states},
              {"pp", t.pp},
              {"pp_virtual", t.pp_virtual},
              {"sequence_parallel", t.sequence_parallel},
              {"tp_comm_overlap", t.tp_comm_overlap},
              {"expert_parallel", t.ep},
              {"method", std::string(to_string(t.method))},
              {"precision", std::string(to_string(t.precision))},
              {"optimizer", std::string(to_string(t.optimizer))},
              {"optimizer_impl", std::string(to_string(t.optimizer_impl))},
              {"checkpointing", std::string(to_string(t.checkpointing))},
              {"offload", std::string(to_string(t.offload))},
              {"framework", std::string(to_string(t.framework))},
              {"attention", std::string(to_string(t.attention))},
              {"fsdp_wrap", std::string(to_string(t.fsdp_wrap))},
              {"fsdp_version", t.fsdp_version},
              {"checkpoint_every", t.checkpoint_every},
              {"checkpoint_layers", t.checkpoint_layers},
              {"frozen_base_fp32", t.frozen_base_fp32},
              {"micro_batch", t.micro_batch},
              {"grad_accum", t.grad_accum},
              {"seq", t.seq},
              {"lora_rank", t.lora.rank},
              {"lora_alpha", t.lora.alpha},
              {"lora_dropout", t.lora.dropout},
              {"lora_targets", t.lora.targets},
              {"quant", std::string(to_string(t.quant))},
              {"quant_block", t.quant_block}};
}

Json seconds_or_null(const std::optional<Seconds>& s) {
  return s ? Json(s->value()) : Json(nullptr);
}

}  // namespace

Json replay_json(const ReplayInput& in, const planner::ReplayPlan& plan,
                 const std::vector<ReplayMeasurement>& measured, const Json& provenance) {
  if (!measured.empty() && measured.size() != plan.components.size())
    throw std::invalid_argument(fmt::format("replay_json: {} measurements for {} components",
                                            measured.size(), plan.components.size()));
  std::vector<std::optional<Seconds>> times(plan.components.size());
  for (std::size_t i = 0; i < measured.size(); ++i) times[i] = measured[i].time;
  const planner::ReplayProjection p = planner::project(plan, times);

  Json components = Json::array();
  std::map<std::string, std::pair<double, double>> by_kind;  // predicted, measured (serial)
  for (std::size_t i = 0; i < plan.components.size(); ++i) {
    const planner::ReplayComponent& c = plan.components[i];
    const std::optional<Seconds>& t = times[i];
    const std::string kind(planner::kind_name(c.work));
    auto& k = by_kind[kind];
    k.first += c.predicted_total().value();
    k.second += (t ? *t * c.count : c.predicted_total()).value();
    Json j{{"name", c.name},
           {"kind", kind},
           {"phase", std::string(to_string(c.phase))},
           {"work", work_json(c.work)},
           {"count", c.count},
           {"recomputed", c.recomputed},
           {"exposed_fraction", c.exposed_fraction},
           {"predicted_s", c.predicted.value()},
           {"predicted_total_s", c.predicted_total().value()},
           {"measured_s", seconds_or_null(t)},
           {"measured_total_s", t ? Json((*t * c.count).value()) : Json(nullptr)},
           {"measured_over_predicted",
            t && c.predicted.value() > 0.0 ? Json(*t / c.predicted) : Json(nullptr)}};
    if (i < measured.size()) {
      j["method"] = measured[i].method;
      j["note"] = measured[i].note;
    }
    components.push_back(std::move(j));
  }
  Json kinds = Json::object();
  for (const auto& [kind, v] : by_kind)
    kinds[kind] = Json{{"predicted_s", v.first}, {"measured_s", v.second}};

  return Json{{"schema", kReplaySchema},
              {"input",
               {{"file", in.file},
                {"schema", in.schema},
                {"plan_index", in.plan_index},
                {"settings", in.settings},
                {"assumed", in.assumed}}},
              {"model", model_json(in.arch, in.counts,
                                   model::trainable_parameters(in.arch, in.counts, in.training))},
              {"cluster", cluster_json(in.cluster)},
              {"training", training_json(in.training)},
              {"layout",
               {{"world", plan.layout.world},
                {"tp", plan.layout.tp},
                {"pp", plan.layout.pp},
                {"dp", plan.layout.dp},
                {"shard", plan.layout.shard},
                {"expert_parallel", plan.layout.ep},
                {"layers_replayed", plan.layers},
                {"micro_batches", plan.micro_batches}}},
              {"provenance", provenance},
              {"components", components},
              {"by_kind", kinds},
              {"totals",
               {{"predicted_serial_s", p.predicted_serial.value()},
                {"measured_serial_s", p.measured_serial.value()},
                {"predicted_step_s", p.predicted_step.value()},
                {"projected_step_s", p.projected_step.value()},
                {"recorded_step_s", in.recorded_step_s ? Json(*in.recorded_step_s) : Json(nullptr)},
                {"components_measured", p.measured},
                {"components_unmeasured", p.unmeasured}}},
              {"notes", plan.notes}};
}

}  // namespace trainplan::reports
