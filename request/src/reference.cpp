#include "trainplan/request/reference.hpp"
#include "trainplan/request/request.hpp"

#include <algorithm>
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "trainplan/core/error.hpp"
#include "trainplan/request/files.hpp"
#include "trainplan/request/hf_config.hpp"
#include "trainplan/model/activations.hpp"
#include "trainplan/model/library.hpp"
#include "trainplan/model/lora.hpp"
#include "trainplan/model/partial.hpp"

namespace trainplan::request {
namespace {

using planner::CaseKind;
using planner::Measurement;
using planner::Metric;
using planner::ReferenceCase;
using planner::Unit;

std::vector<std::string> string_list(const Json& v, const std::string& what,
                                     const std::string& key) {
  if (!v.is_array() || v.empty())
    throw InputError(what + ": key '" + key + "' must be a non-empty list of strings");
  std::vector<std::string> out;
  for (const auto& e : v) {
    if (!e.is_string())
      throw InputError(what + ": key '" + key + "' must be a non-empty list of strings");
    out.push_back(e.get<std::string>());
  }
  return out;
}

// LoRA targets: a list of module names or roles, or the single string "all-linear" (PEFT's form).
std::vector<std::string> lora_targets(ObjectReader& r) {
  const Json& v = r.raw("targets");
  if (v.is_string()) {
    if (v.get<std::string>() != "all-linear")
      throw InputError(r.what() +
                       ": key 'targets' must be a list of module names or \"all-linear\"");
    return {"all-linear"};
  }
  return string_list(v, r.what(), "targets");
}

// ---- measured runs: trainplan.reference/1
// --------------------------------------------------------

// A model defined inline: {"name", "source", "hf_config"} (or, in the file's "models" table, the
// same without "name").
model::Architecture inline_model(const Json& v, const std::string& what,
                                 std::optional<std::string> name) {
  ObjectReader r(v, what);
  if (!name) name = r.string("name");
  if (!r.has("source"))
    throw InputError(what + ": key 'source' is missing (say where the config comes from)");
  r.ignore({"source"});
  model::Architecture a =
      architecture_from_hf_config(r.raw("hf_config"), *name, what + " hf_config");
  r.reject_unknown();
  return a;
}

using FileModels = std::vector<std::pair<std::string, model::Architecture>>;

// "model": a name from the file's "models" table or the catalogue, or an inline definition.
model::Architecture read_model(const Json& v, const std::string& what,
                               const FileModels& file_models, const Catalog& catalog) {
  if (!v.is_string()) return inline_model(v, what + " model", std::nullopt);
  const std::string name = v.get<std::string>();
  for (const auto& [n, a] : file_models)
    if (n == name) return a;
  for (const auto& m : catalog.models())
    if (m.name == name) return m.arch;
  throw InputError(
      what + ": key 'model': '" + name +
      "' is neither in the file's \"models\" table nor a catalogue name (`trainplan models` lists "
      "them)");
}

hardware::Cluster read_hardware(const Json& v, const std::string& what, const Catalog& catalog) {
  ObjectReader r(v, what + " hardware");
  const std::string gpu = r.string("gpu");
  const std::int64_t count = r.integer("count", 1);
  const auto nodes = r.optional_integer("nodes", 1);
  const auto inter = r.optional_string("inter_node");
  r.reject_unknown();
  std::string spec = std::to_string(count) + "x" + gpu;
  if (nodes) {
    if (count % *nodes != 0)
      throw InputError(r.what() + ": key 'count' (" + std::to_string(count) +
                       ") is not a multiple of 'nodes' (" + std::to_string(*nodes) + ")");
    spec = std::to_string(*nodes) + "x" + std::to_string(count / *nodes) + "x" + gpu;
  }
  try {
    return catalog.resolve_cluster(spec, inter).cluster;
  } catch (const InputError& e) {
    throw InputError(r.what() + ": " + e.what());
  }
}

// QLoRA's keys: the 4-bit format and block, the stack (the library's unless named) and the
// bitsandbytes release; each refused by name without method qlora.
void read_quantization(ObjectReader& r, model::Training& t) {
  const bool quantized = t.method == Method::qlora;
  if (quantized && !r.has("quant"))
    throw InputError(r.what() +
                     ": key 'quant' is missing (method 'qlora' needs nf4, nf4-dq, fp4 or int8)");
  if (!quantized && r.has("quant"))
    throw InputError(r.what() + ": key 'quant' is given but method is not 'qlora'");
  if (quantized) t.quant = r.enumeration<Quant>("quant");
  r.ignore({"quant"});
  if (const auto block = r.optional_integer("quant_block", 64)) {
    if (!quantized) throw InputError(r.what() + ": key 'quant_block' is given but method is not 'qlora'");
    t.quant_block = *block;
  }
  // The stack the library runs (litgpt: lightning Fabric's) unless the case names one.
  t.qlora_stack = model::library_traits(t.library).qlora_stack;
  for (const char* key : {"qlora_stack", "bitsandbytes"})
    if (r.has(key) && !quantized)
      throw InputError(r.what() + ": key '" + key + "' is given but method is not 'qlora'");
  if (r.has("qlora_stack")) t.qlora_stack = r.enumeration<QloraStack>("qlora_stack");
  if (const auto release = r.optional_string("bitsandbytes"))
    t.bitsandbytes = model::parse_package_release(*release, "bitsandbytes", r.what() + ": key 'bitsandbytes'");
  r.ignore({"qlora_stack"});
  if (const auto previous = r.optional_number("previous_share")) {
    if (!(*previous >= 0.0 && *previous <= 1.0))
      throw InputError(r.what() + ": key 'previous_share' must be a share from 0 to 1 (got " +
                       fmt::format("{}", *previous) + ")");
    if (!model::holds_previous_micro_batch(t))
      throw InputError(r.what() +
                       ": key 'previous_share' is given but no previous micro-batch's graph is held (it needs "
                       "library 'litgpt', method 'qlora' and bitsandbytes before 0.43.2)");
    t.previous_share = *previous;
  }
}

// Dropout set for the run (--hidden-dropout, --attention-dropout): a probability, and only where
// the library's model code has dropout layers.
void read_dropout(ObjectReader& r, model::Training& t) {
  for (const char* key : {"hidden_dropout", "attention_dropout"})
    if (const auto p = r.optional_number(key)) {
      if (!(*p >= 0.0 && *p < 1.0))
        throw InputError(r.what() + ": key '" + key + "' must be a probability from 0 to below 1 (got " +
                         fmt::format("{}", *p) + ")");
      if (model::library_traits(t.library).model_without_dropout)
        throw InputError(r.what() + ": key '" + key + "' is given but library '" + std::string(to_string(t.library)) +
                         "' runs model code without dropout layers");
      (std::string_view(key) == "hidden_dropout" ? t.hidden_dropout : t.attention_dropout) = *p;
    }
}

// What runs of the library's kernels (TF32, Liger, torch.compile) and how its allocator is set: the
// library's release read first, for its default.
void read_kernels(ObjectReader& r, model::Training& t) {
  t.tf32 = r.optional_boolean("tf32").value_or(false);
  t.liger = r.optional_boolean("liger").value_or(false);
  t.compile = r.optional_boolean("compile").value_or(false);
  t.expandable_segments =
      r.optional_boolean("expandable_segments").value_or(model::expandable_segments_by_default(t));
  const int chunks = model::library_traits(t.library).output_chunks;
  const std::optional<bool> chunked = r.optional_boolean("chunked_loss");
  if (chunked && chunks == 0)
    throw InputError(r.what() + ": key 'chunked_loss' is given but library '" + std::string(to_string(t.library)) +
                     "' has no chunked output loss");
  t.chunked_loss = chunked.value_or(chunks > 0);
}

// How the optimizer runs: its implementation, and stepped in backward (torchtune's optimizer_in_bwd).
void read_optimizer_run(ObjectReader& r, model::Training& t) {
  if (const auto i = r.optional_enumeration<OptimizerImpl>("optimizer_impl")) t.optimizer_impl = *i;
  t.optimizer_in_backward = r.optional_boolean("optimizer_in_backward").value_or(false);
  if (t.optimizer_in_backward && t.grad_accum != 1)
    throw InputError(r.what() + ": key 'optimizer_in_backward' needs grad_accum 1 (each gradient is stepped and freed "
                     "as soon as it is complete)");
}

model::Training read_training(const Json& v, const std::string& what,
                              const model::Architecture& a) {
  ObjectReader r(v, what + " training");
  model::Training t;
  t.method = r.enumeration<Method>("method");
  t.precision = r.enumeration<Precision>("precision");
  t.optimizer = r.enumeration<Optimizer>("optimizer");
  t.strategy = r.enumeration<Strategy>("strategy");
  t.tp = static_cast<int>(r.integer("tp", 1, kMaxDegree));
  t.pp = static_cast<int>(r.integer("pp", 1, kMaxDegree));
  t.micro_batch = r.integer("micro_batch", 1, kMaxCount);
  t.grad_accum = r.integer("grad_accum", 1, kMaxCount);
  t.seq = r.integer("seq", 1, kMaxCount);
  t.checkpointing = r.enumeration<Checkpointing>("checkpointing");
  t.attention = r.enumeration<Attention>("attention");
  t.offload = r.enumeration<Offload>("offload");
  t.framework = r.enumeration<Framework>("framework");
  if (const auto l = r.optional_enumeration<Library>("library")) t.library = *l;
  if (const auto release = r.optional_string("library_version")) {
    if (!model::has_versioned_traits(t.library))
      throw InputError(r.what() + ": key 'library_version' is given but library '" +
                       std::string(to_string(t.library)) + "' has no release-dependent traits");
    t.library_version = model::parse_package_release(*release, "library", r.what() + ": key 'library_version'");
  }
  read_kernels(r, t);
  t.pp_virtual = static_cast<int>(r.optional_integer("pp_virtual", 1, kMaxDegree).value_or(1));
  t.sequence_parallel = r.optional_boolean("sequence_parallel").value_or(false);
  t.tp_comm_overlap = r.optional_boolean("tp_comm_overlap").value_or(false);
  t.offload_activation_layers =
      static_cast<int>(r.optional_integer("offload_activations", 0, kMaxDegree).value_or(0));
  read_dropout(r, t);
  t.ep = static_cast<int>(r.optional_integer("expert_parallel", 1, kMaxDegree).value_or(1));
  t.cp = static_cast<int>(r.optional_integer("cp", 1, kMaxDegree).value_or(1));
  if (const auto k = r.optional_enumeration<CpComm>("cp_comm")) t.cp_comm = *k;
  if (const auto f = r.optional_enumeration<Fp8Recipe>("fp8")) t.fp8 = *f;
  t.fp8_param_gather = r.optional_boolean("fp8_param_gather").value_or(false);
  if (const auto w = r.optional_enumeration<FsdpWrap>("fsdp_wrap")) t.fsdp_wrap = *w;
  // PyTorch's FSDP: the library's (torchtitan and torchtune run fully_shard) unless the case says.
  t.fsdp_version = model::library_traits(t.library).fsdp_version;
  if (const auto version = r.optional_integer("fsdp_version", 1, 2)) {
    if (!t.gathers_parameters())
      throw InputError(r.what() + ": key 'fsdp_version' is given but PyTorch does not shard the parameters " +
                       "(strategy '" + std::string(to_string(t.strategy)) + "', framework '" +
                       std::string(to_string(t.framework)) + "')");
    t.fsdp_version = static_cast<int>(*version);
  }
  read_optimizer_run(r, t);
  t.zero_init = r.optional_boolean("zero_init").value_or(true);
  t.frozen_base_fp32 = r.optional_boolean("frozen_base_fp32").value_or(false);
  if (const auto release = r.optional_string("transformers"))
    t.transformers = model::parse_transformers_release(*release, r.what() + ": key 'transformers'");

  const bool adapter = t.method != Method::full;
  if (adapter && !r.has("lora"))
    throw InputError(r.what() + ": key 'lora' is missing (method '" +
                     std::string(to_string(t.method)) +
                     "' needs rank, alpha, dropout and targets)");
  if (!adapter && r.has("lora"))
    throw InputError(r.what() + ": key 'lora' is given but method is 'full'");
  r.ignore({"lora"});
  if (adapter) {
    ObjectReader l(r.raw("lora"), r.what() + " lora");
    t.lora.rank = l.integer("rank", 1, kMaxDegree);
    t.lora.alpha = l.number("alpha");
    t.lora.dropout = l.number("dropout");
    if (t.lora.dropout < 0.0 || t.lora.dropout >= 1.0)
      throw InputError(l.what() + ": key 'dropout' must be in [0, 1)");
    t.lora.targets = lora_targets(l);
    l.reject_unknown();
    try {
      (void)model::lora_parameters(a, t.lora);  // checks the targets against the model
    } catch (const InputError& e) {
      throw InputError(l.what() + ": key 'targets': " + e.what());
    }
  }
  read_quantization(r, t);
  r.reject_unknown();
  return t;
}

Measurement read_measurement(const Json& v, const std::string& what) {
  ObjectReader r(v, what);
  Measurement m;
  m.metric = r.enumeration<Metric>("metric");
  m.value = r.number("value");
  if (m.value <= 0.0) throw InputError(what + ": key 'value' must be positive");
  if (!r.has("unit"))
    throw InputError(what + ": key 'unit' is missing: state the unit the value is written in (" +
                     planner::allowed_units(m.metric) + ")");
  m.unit = r.enumeration<Unit>("unit");
  if (!planner::unit_fits(m.metric, m.unit))
    throw InputError(what + ": key 'unit': '" + std::string(to_string(m.unit)) +
                     "' is not a unit of metric '" + std::string(to_string(m.metric)) + "' (use " +
                     planner::allowed_units(m.metric) + ")");
  if (!r.has("what"))
    throw InputError(what +
                     ": key 'what' is missing: say what the number is (e.g. "
                     "\"torch.cuda.max_memory_allocated() / 1e9\", \"nvidia-smi memory.used\")");
  m.what = r.string("what");
  m.tolerance_pct = r.number("tolerance_pct");
  if (m.tolerance_pct < 0.0) throw InputError(what + ": key 'tolerance_pct' must not be negative");
  if (m.metric == Metric::saved_for_backward_layer)
    m.layer = static_cast<int>(r.integer("layer", 0, kMaxDegree));
  if (const auto open = r.optional_string("open")) {
    if (open->empty()) throw InputError(what + ": key 'open' must say why the band is not met yet");
    m.open = *open;
  }
  r.reject_unknown();
  return m;
}

std::string read_source(const Json& v, const std::string& what) {
  ObjectReader r(v, what + " source");
  std::string s = r.string("document");
  if (auto t = r.optional_string("table")) s += ", " + *t;
  if (auto row = r.optional_string("row")) s += ", " + *row;
  r.reject_unknown();
  return s;
}

ReferenceCase read_case(const Json& v, const std::string& file, std::size_t index,
                        const FileModels& models, const Catalog& catalog) {
  const std::string at = "reference file '" + file + "', case " + std::to_string(index + 1);
  if (!v.is_object()) throw InputError(at + ": expected a JSON object");
  ObjectReader r(v, at);
  ReferenceCase c;
  c.kind = CaseKind::measured;
  c.file = file;
  c.name = r.string("name");
  const std::string what = "reference file '" + file + "', case '" + c.name + "'";
  ObjectReader named(v, what);  // the same object, for messages that name the case
  named.ignore({"name"});
  c.source = read_source(named.raw("source"), what);
  c.note = named.optional_string("note").value_or("");
  c.fitted_by = named.optional_string("fitted_by").value_or("");
  c.arch = read_model(named.raw("model"), what, models, catalog);
  c.cluster = read_hardware(named.raw("hardware"), what, catalog);
  c.training = read_training(named.raw("training"), what, c.arch);
  c.arch = model::as_built_by(c.arch, c.training.library);
  const Json& ms = named.raw("measured");
  if (!ms.is_array() || ms.empty())
    throw InputError(what + ": key 'measured' must be a non-empty list of measurements");
  for (std::size_t i = 0; i < ms.size(); ++i) {
    const std::string at_i = what + " measured[" + std::to_string(i) + "]";
    c.measurements.push_back(read_measurement(ms[i], at_i));
    const int layer = c.measurements.back().layer;
    if (layer >= c.arch.total_layers())
      throw InputError(at_i + ": key 'layer': block " + std::to_string(layer) +
                       " does not exist (the model has " + std::to_string(c.arch.total_layers()) +
                       ")");
  }
  named.reject_unknown();
  return c;
}

std::vector<ReferenceCase> parse_measured(const Json& j, const std::string& file,
                                          const Catalog& catalog) {
  ObjectReader r(j, "reference file '" + file + "'");
  r.ignore({"schema", "description"});
  FileModels models;
  if (r.has("models")) {
    const Json& table = r.raw("models");
    if (!table.is_object())
      throw InputError(r.what() + ": key 'models' must map model names to definitions");
    for (const auto& [name, def] : table.items())
      models.emplace_back(name, inline_model(def, r.what() + " models['" + name + "']", name));
  }
  r.ignore({"models"});
  const Json& cases = r.raw("cases");
  if (!cases.is_array() || cases.empty())
    throw InputError(r.what() + ": key 'cases' must be a non-empty list of cases");
  r.reject_unknown();
  std::vector<ReferenceCase> out;
  for (std::size_t i = 0; i < cases.size(); ++i)
    out.push_back(read_case(cases[i], file, i, models, catalog));
  for (std::size_t i = 0; i < out.size(); ++i)
    for (std::size_t k = 0; k < i; ++k)
      if (out[i].name == out[k].name)
        throw InputError(r.what() + ": case name '" + out[i].name + "' is used twice");
  return out;
}

// ---- oracle outputs: trainplan.oracle/1
// ----------------------------------------------------------

model::Training read_oracle_training(const Json& v, const std::string& what,
                                     const model::Architecture& a) {
  ObjectReader r(v, what + " training");
  model::Training t;
  // What tools/oracle/run.py does: one GPU-free step with torch AdamW, no parallelism.
  t.optimizer = Optimizer::adamw;
  t.strategy = Strategy::single;
  t.framework = Framework::pytorch;
  t.grad_accum = 1;
  const std::string dtype = r.string("dtype");
  if (dtype == "float32")
    t.precision = Precision::fp32;
  else if (dtype == "bfloat16")
    t.precision = Precision::bf16_true;  // model.to(bfloat16): no autocast
  else
    throw InputError(r.what() + ": key 'dtype' must be \"float32\" or \"bfloat16\" (got \"" +
                     dtype + "\")");
  t.attention = r.enumeration<Attention>("attention");
  t.checkpointing = r.enumeration<Checkpointing>("checkpointing");
  t.method = r.enumeration<Method>("method");
  t.micro_batch = r.integer("micro_batch", 1);
  t.seq = r.integer("seq", 1);
  if (t.method != Method::full) {
    ObjectReader l(r.raw("lora"), r.what() + " lora");
    t.lora.rank = l.integer("rank", 1, kMaxDegree);
    t.lora.alpha = l.number("alpha");
    t.lora.dropout = 0.0;  // the oracle's peft config: lora_dropout=0
    t.lora.targets = lora_targets(l);
    l.reject_unknown();
    (void)model::lora_parameters(a, t.lora);
  } else {
    r.ignore({"lora"});
    // Partial fine-tuning: run.py freezes every parameter the spec does not name.
    if (const auto spec = r.optional_string("trainable")) {
      t.partial = model::resolve_trained_subset(a, model::parse_trained_subset(*spec, r.what() + " trainable"),
                                                r.what() + " trainable");
      model::check_trained_subset(a, t.partial, r.what() + " trainable");
    }
  }
  r.reject_unknown();
  return t;
}

std::vector<ReferenceCase> parse_oracle(const Json& j, const std::string& file) {
  const std::string at = "oracle file '" + file + "'";
  ObjectReader r(j, at);
  ReferenceCase c;
  c.kind = CaseKind::oracle;
  c.file = file;
  c.name = r.string("case");
  const std::string what = at + ", case '" + c.name + "'";
  r.ignore({"schema"});
  {
    std::string versions;
    if (r.has("versions") && r.raw("versions").is_object())
      for (const auto& [k, v] : r.raw("versions").items())
        if (v.is_string())
          versions += (versions.empty() ? "" : ", ") + k + " " + v.get<std::string>();
    r.ignore({"versions"});
    c.source = r.string("source") + (versions.empty() ? "" : " (" + versions + ")");
  }
  c.arch = architecture_from_hf_config(r.raw("config"), c.name, what + " config");
  c.training = read_oracle_training(r.raw("training"), what, c.arch);
  c.cluster.description = "the oracle (one device)";

  auto add = [&](Metric m, Unit u, double value, const char* how, double tol, int layer = -1) {
    if (value <= 0.0)
      throw InputError(what + ": " + std::string(to_string(m)) + " must be positive");
    c.measurements.push_back({m, u, value, how, tol, layer, ""});
  };
  // Parameters, FLOPs and model-state bytes are exact; the activation formulas are held to 5 %.
  constexpr double kExact = 0.0;
  constexpr double kActivationTolerancePct = 5.0;
  const double params = static_cast<double>(r.integer("parameters", 1));
  add(Metric::parameters, Unit::parameters, params, "sum of numel over unique parameters", kExact);
  add(Metric::trainable_parameters, Unit::parameters,
      static_cast<double>(r.integer("trainable_parameters", 1)),
      "sum of numel over parameters with requires_grad", kExact);
  {
    ObjectReader f(r.raw("flops"), what + " flops");
    add(Metric::flops_forward, Unit::flop, static_cast<double>(f.integer("forward", 1)),
        "torch.utils.flop_counter.FlopCounterMode around the forward and loss", kExact);
    add(Metric::flops_backward, Unit::flop, static_cast<double>(f.integer("backward", 1)),
        "torch.utils.flop_counter.FlopCounterMode around loss.backward() (recomputation included)",
        kExact);
    f.reject_unknown();
  }
  add(Metric::gradient_bytes, Unit::bytes, static_cast<double>(r.integer("gradient_bytes", 1)),
      "sum of p.grad.nbytes after backward", kExact);
  add(Metric::optimizer_state_bytes, Unit::bytes,
      static_cast<double>(r.integer("optimizer_state_bytes", 1)),
      "nbytes of AdamW state tensors after one step, step scalars excluded", kExact);
  {
    ObjectReader s(r.raw("saved_for_backward_bytes"), what + " saved_for_backward_bytes");
    // Not compared: the embedding region (token ids, a few kilobytes, which the planner does not
    // count), T5's "other" region (its stacks' final norms) and the total of all regions.
    s.ignore({"embedding", "other", "total"});
    const Json& per_layer = s.raw("per_layer");
    if (!per_layer.is_array() ||
        per_layer.size() != static_cast<std::size_t>(c.arch.total_layers()))
      throw InputError(s.what() + ": key 'per_layer' must list one value per block (" +
                       std::to_string(c.arch.total_layers()) + ")");
    for (std::size_t i = 0; i < per_layer.size(); ++i) {
      if (!per_layer[i].is_number_integer())
        throw InputError(s.what() + ": key 'per_layer' must hold integers");
      // A block below every trained one (partial fine-tuning) saves nothing: no relative error
      // to take (tests/model/test_partial.cpp holds those at zero).
      if (per_layer[i].get<double>() == 0.0 && c.training.partial.active) continue;
      add(Metric::saved_for_backward_layer, Unit::bytes, per_layer[i].get<double>(),
          "storages saved by autograd in the block (saved_tensors_hooks)", kActivationTolerancePct,
          static_cast<int>(i));
    }
    add(Metric::saved_for_backward_head, Unit::bytes, static_cast<double>(s.integer("head", 1)),
        "storages saved by autograd after the last block (final norm, LM head, loss)",
        kActivationTolerancePct);
    s.reject_unknown();
  }
  r.reject_unknown();
  return {c};
}

}  // namespace

std::vector<ReferenceCase> parse_reference(const Json& j, const std::string& file,
                                           const Catalog& catalog) {
  if (!j.is_object()) throw InputError("reference file '" + file + "': expected a JSON object");
  if (!j.contains("schema") || !j.at("schema").is_string())
    throw InputError("reference file '" + file + "': key 'schema' is missing (expected \"" +
                     std::string(kReferenceSchema) + "\" or \"" + std::string(kOracleSchema) +
                     "\")");
  const std::string schema = j.at("schema").get<std::string>();
  if (schema == kReferenceSchema) return parse_measured(j, file, catalog);
  if (schema == kOracleSchema) return parse_oracle(j, file);
  throw InputError("reference file '" + file + "': unknown schema '" + schema + "' (expected \"" +
                   std::string(kReferenceSchema) + "\" or \"" + std::string(kOracleSchema) + "\")");
}

std::vector<ReferenceCase> read_reference_file(const std::string& path, const Catalog& catalog) {
  const std::string text = read_text_file(path, "reference file", kMaxJsonFileBytes);
  return parse_reference(parse_json(text, "reference file '" + path + "'"), path, catalog);
}

std::vector<ReferenceCase> read_reference_paths(const std::vector<std::string>& paths,
                                                const Catalog& catalog) {
  namespace fs = std::filesystem;
  if (paths.empty()) throw InputError("no reference files given");
  std::vector<ReferenceCase> out;
  for (const std::string& p : paths) {
    std::error_code ec;
    std::vector<std::string> files;
    if (fs::is_directory(p, ec)) {
      for (fs::recursive_directory_iterator it(p, ec), end; !ec && it != end; it.increment(ec))
        if (it->is_regular_file(ec) && it->path().extension() == ".json")
          files.push_back(it->path().string());
      if (ec) throw InputError("cannot read reference folder '" + p + "': " + ec.message());
      if (files.empty()) throw InputError("reference folder '" + p + "' holds no .json files");
      std::sort(files.begin(), files.end());
    } else {
      files.push_back(p);
    }
    for (const auto& f : files) {
      auto cases = read_reference_file(f, catalog);
      out.insert(out.end(), std::make_move_iterator(cases.begin()),
                 std::make_move_iterator(cases.end()));
    }
  }
  return out;
}

}  // namespace trainplan::request
