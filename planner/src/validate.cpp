#include "trainplan/planner/validate.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "trainplan/core/error.hpp"
#include "trainplan/model/activations.hpp"
#include "trainplan/model/flops.hpp"
#include "trainplan/model/lora.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/planner/estimate.hpp"

namespace trainplan::planner {
namespace {

bool is_memory(Metric m) {
  switch (m) {
    case Metric::gradient_bytes:
    case Metric::optimizer_state_bytes:
    case Metric::saved_for_backward_layer:
    case Metric::saved_for_backward_head:
    case Metric::peak_allocated:
    case Metric::reserved:
    case Metric::device_total:
      return true;
    case Metric::parameters:
    case Metric::trainable_parameters:
    case Metric::flops_forward:
    case Metric::flops_backward:
    case Metric::step_time:
    case Metric::tokens_per_s:
      return false;
  }
  return false;
}

// A layer index of the oracle's execution order: encoder blocks come first.
Bytes saved_per_layer(const model::Architecture& a, const model::Training& tr, int layer) {
  return model::kept_per_layer(a, tr, layer);
}

struct Predictor {
  Predictor(const ReferenceCase& rc, const MemoryConventions& conventions,
            const hardware::HardwareProfile* hw)
      : c(rc),
        mc(conventions),
        profile(hw != nullptr && hardware::profile_applies(*hw, rc.cluster.gpu) ? hw : nullptr),
        n(model::count_parameters(rc.arch)),
        layout(make_layout(rc.arch, rc.training, rc.cluster)) {}

  const ReferenceCase& c;
  const MemoryConventions& mc;
  const hardware::HardwareProfile* profile;
  model::ParameterCounts n;
  Layout layout;
  std::optional<MemoryBreakdown> mem;
  std::optional<model::StepFlops> flops;
  std::optional<Estimate> estimate;

  const MemoryBreakdown& memory_breakdown() {
    if (!mem) mem = memory(c.arch, n, c.training, layout, mc);
    return *mem;
  }
  const model::StepFlops& step_flops() {
    if (!flops) flops = model::micro_batch_flops(c.arch, c.training);
    return *flops;
  }

  // In base units.
  double predict(const Measurement& m) {
    const model::Architecture& a = c.arch;
    const model::Training& tr = c.training;
    switch (m.metric) {
      // The trained model's parameters: PEFT adds the adapters to the base model.
      case Metric::parameters:
        return static_cast<double>(n.total + adapters());
      case Metric::trainable_parameters:
        return static_cast<double>(model::trainable_parameters(a, n, tr));
      case Metric::flops_forward:
        return step_flops().forward.value();
      case Metric::flops_backward:
        return (step_flops().backward + step_flops().recompute).value();
      case Metric::gradient_bytes:
        return model_states(a, n, tr, layout, mc).gradients.value();
      case Metric::optimizer_state_bytes:
        return model_states(a, n, tr, layout, mc).optimizer.value();
      case Metric::saved_for_backward_layer:
        return saved_per_layer(a, tr, m.layer).value();
      case Metric::saved_for_backward_head:
        return model::head_activations(a, tr).saved.value();
      case Metric::peak_allocated:
        return memory_breakdown().peak_allocated.value();
      case Metric::reserved:
        return memory_breakdown().reserved.value();
      case Metric::device_total:
        return memory_breakdown().device_total.value();
      case Metric::step_time:
      case Metric::tokens_per_s:
        if (!estimate) estimate = evaluate(a, n, tr, c.cluster, profile, mc);
        return m.metric == Metric::step_time ? estimate->time.step.value()
                                             : estimate->throughput.tokens_per_s;
    }
    return 0.0;
  }
  std::int64_t adapters() const {
    return c.training.method == Method::full ? 0 : model::lora_parameters(c.arch, c.training.lora);
  }
};

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t k = v.size() / 2;
  return v.size() % 2 == 1 ? v[k] : 0.5 * (v[k - 1] + v[k]);
}

std::string label(const CaseResult& r, const Comparison& c) {
  return c.layer >= 0 ? r.name + " layer " + std::to_string(c.layer) : r.name;
}

}  // namespace

bool unit_fits(Metric m, Unit u) {
  switch (u) {
    case Unit::parameters:
      return m == Metric::parameters || m == Metric::trainable_parameters;
    case Unit::flop:
      return m == Metric::flops_forward || m == Metric::flops_backward;
    case Unit::bytes:
    case Unit::GiB:
    case Unit::GB:
    case Unit::MiB:
      return is_memory(m);
    case Unit::s:
    case Unit::ms:
      return m == Metric::step_time;
    case Unit::tokens_per_s:
      return m == Metric::tokens_per_s;
  }
  return false;
}

double unit_scale(Unit u) {
  switch (u) {
    case Unit::parameters:
    case Unit::flop:
    case Unit::bytes:
    case Unit::s:
    case Unit::tokens_per_s:
      return 1.0;
    case Unit::GiB:
      return kGiB;
    case Unit::GB:
      return kGB;
    case Unit::MiB:
      return kMiB;
    case Unit::ms:
      return 1e-3;
  }
  return 1.0;
}

std::string allowed_units(Metric m) {
  std::string out;
  for (const auto& [u, name] : EnumTable<Unit>::kEntries)
    if (unit_fits(m, u)) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

double Comparison::error_pct() const {
  if (predicted == measured) return 0.0;
  if (measured == 0.0) return std::numeric_limits<double>::infinity();
  return (predicted - measured) / measured * 100.0;
}

bool Comparison::within_tolerance() const { return std::abs(error_pct()) <= tolerance_pct; }

CaseResult validate_case(const ReferenceCase& c, const MemoryConventions& mc,
                         const hardware::HardwareProfile* profile) {
  CaseResult r{c.name, c.kind, c.file, c.source, {}, c.fitted_by};
  try {
    Predictor p(c, mc, profile);
    for (const Measurement& m : c.measurements) {
      Comparison cmp;
      cmp.metric = m.metric;
      cmp.layer = m.layer;
      cmp.unit = m.unit;
      cmp.measured = m.value;
      cmp.tolerance_pct = m.tolerance_pct;
      cmp.what = m.what;
      cmp.open = m.open;
      if (m.metric == Metric::saved_for_backward_layer &&
          (m.layer < 0 || m.layer >= c.arch.total_layers()))
        throw InputError("layer " + std::to_string(m.layer) + " does not exist (the model has " +
                         std::to_string(c.arch.total_layers()) + " blocks)");
      cmp.predicted = p.predict(m) / unit_scale(m.unit);
      r.comparisons.push_back(std::move(cmp));
    }
  } catch (const FieldError& e) {
    // A reference file names the options by its keys: micro_batch for micro-batch.
    const std::string msg = e.render([](std::string_view f) {
      std::string key(f);
      std::replace(key.begin(), key.end(), '-', '_');
      return "key '" + key + "'";
    });
    throw InputError("reference case '" + c.name + "' in '" + c.file + "': " + msg);
  } catch (const InputError& e) {
    throw InputError("reference case '" + c.name + "' in '" + c.file + "': " + e.what());
  }
  return r;
}

Summary summarise(std::span<const CaseResult> results, std::optional<CaseKind> only,
                  bool held_out_only) {
  Summary s;
  std::vector<double> all;
  struct Acc {
    std::vector<double> errors;
    MetricSummary out;
  };
  std::vector<Acc> per(EnumTable<Metric>::kEntries.size());
  for (const CaseResult& r : results) {
    if (only && r.kind != *only) continue;
    if (held_out_only && !r.fitted_by.empty()) continue;
    ++s.cases;
    for (const Comparison& c : r.comparisons) {
      const double abs_e = std::abs(c.error_pct());
      ++s.compared;
      all.push_back(abs_e);
      Acc& acc = per[static_cast<std::size_t>(c.metric)];
      acc.out.metric = c.metric;
      acc.errors.push_back(abs_e);
      if (abs_e > acc.out.max_abs_pct) {
        acc.out.max_abs_pct = abs_e;
        acc.out.worst = label(r, c);
      }
      if (c.open_gap()) {
        ++acc.out.open;
        ++s.open;
      } else if (!c.within_tolerance()) {
        ++acc.out.outside_tolerance;
        ++s.outside_tolerance;
      }
    }
  }
  s.median_abs_pct = median(all);
  s.max_abs_pct = all.empty() ? 0.0 : *std::max_element(all.begin(), all.end());
  for (Acc& acc : per) {
    if (acc.errors.empty()) continue;
    acc.out.count = acc.errors.size();
    acc.out.median_abs_pct = median(acc.errors);
    s.metrics.push_back(acc.out);
  }
  return s;
}

ValidationReport validate(std::span<const ReferenceCase> cases, const MemoryConventions& mc,
                          const hardware::HardwareProfile* profile) {
  ValidationReport rep;
  rep.cases.reserve(cases.size());
  for (const ReferenceCase& c : cases) rep.cases.push_back(validate_case(c, mc, profile));
  rep.all = summarise(rep.cases);
  rep.oracle = summarise(rep.cases, CaseKind::oracle);
  rep.measured = summarise(rep.cases, CaseKind::measured);
  rep.held_out = summarise(rep.cases, CaseKind::measured, true);
  return rep;
}

}  // namespace trainplan::planner
