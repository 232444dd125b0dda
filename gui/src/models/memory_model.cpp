#include "models/memory_model.hpp"

#include <utility>

namespace trainplan::gui {

void MemoryModel::setEvaluations(const std::vector<const Evaluation*>& configs,
                                 const QStringList& names) {
  using Get = Bytes (*)(const Evaluation&);
  struct Def {
    Term term;
    bool part;
    Get get;
  };
  static constexpr Def kDefs[] = {
      {Term::weights, true, [](const Evaluation& e) { return e.estimate.memory.weights; }},
      {Term::gradients, true, [](const Evaluation& e) { return e.estimate.memory.gradients; }},
      {Term::optimizer_state, true,
       [](const Evaluation& e) { return e.estimate.memory.optimizer; }},
      {Term::activations, true, [](const Evaluation& e) { return e.estimate.memory.activations; }},
      {Term::buffers, true, [](const Evaluation& e) { return e.estimate.memory.buffers; }},
      {Term::overhead, true, [](const Evaluation& e) { return e.estimate.memory.overhead; }},
      {Term::device_total, false,
       [](const Evaluation& e) { return e.estimate.memory.device_total; }},
      {Term::usable, false, [](const Evaluation& e) { return e.usable(); }},
      {Term::headroom, false,
       [](const Evaluation& e) { return e.usable() - e.estimate.memory.device_total; }},
      {Term::peak_allocated, false,
       [](const Evaluation& e) { return e.estimate.memory.peak_allocated; }},
      {Term::host, false, [](const Evaluation& e) { return e.estimate.memory.host; }},
  };
  std::vector<Row> rows;
  for (const Def& d : kDefs)
    rows.push_back(configRow(
        configs, d.term, d.part, [&](const Evaluation& e) { return gib_text(d.get(e), 2); },
        [&](const Evaluation& e) { return to_gib(d.get(e)); }));
  Row fits = configRow(
      configs, Term::device_total, false,
      [](const Evaluation& e) { return verdict_word(e.estimate.verdict.verdict); },
      [](const Evaluation& e) { return e.estimate.fits ? 1.0 : 0.0; });
  fits.label = QStringLiteral("verdict");
  fits.tooltip = term_tooltip(Term::device_total);
  for (const Evaluation* e : configs) fits.verdicts.push_back(e->estimate.verdict.verdict);
  rows.push_back(std::move(fits));
  rows.push_back(configRow(
      configs, Term::max_micro_batch, false,
      [](const Evaluation& e) { return QString::number(e.estimate.max_micro_batch); },
      [](const Evaluation& e) { return static_cast<double>(e.estimate.max_micro_batch); }));
  Row phase = configRow(
      configs, Term::device_total, false,
      [](const Evaluation& e) { return qstr(e.estimate.memory.peak_phase); },
      [](const Evaluation&) { return 0.0; });
  phase.label = QStringLiteral("peak phase");
  phase.tooltip = QStringLiteral(
      "The phase of the step where memory peaks: backward (activations alive) or the optimizer "
      "step (its temporaries).");
  rows.push_back(std::move(phase));
  reset(names, configTooltips(configs), std::move(rows));
}

}  // namespace trainplan::gui
