#include "models/step_time_model.hpp"

#include <algorithm>
#include <map>
#include <utility>

namespace trainplan::gui {
namespace {

using Get = Seconds (*)(const planner::Estimate&);
struct Def {
  Term term;
  Get get;
};
constexpr Def kBefore[] = {
    {Term::compute, [](const planner::Estimate& e) { return e.time.compute; }},
    {Term::memory_bound, [](const planner::Estimate& e) { return e.time.memory_bound; }},
    {Term::host_time, [](const planner::Estimate& e) { return e.time.host; }},
    {Term::recompute, [](const planner::Estimate& e) { return e.time.recompute; }},
};
constexpr Def kAfter[] = {
    {Term::overlap_slowdown, [](const planner::Estimate& e) { return e.time.overlap_slowdown; }},
    {Term::bubble, [](const planner::Estimate& e) { return e.time.bubble; }},
    {Term::optimizer_step, [](const planner::Estimate& e) { return e.time.optimizer; }},
    {Term::offload_time, [](const planner::Estimate& e) { return e.time.offload; }},
    {Term::reference_forward, [](const planner::Estimate& e) { return e.time.reference; }},
};

// A communication row, every configuration at zero until it says otherwise.
StepTimeModel::Row zero_row(QString label, std::size_t n, QString tooltip) {
  return {Term::communication_exposed,
          std::move(label),
          true,
          std::vector<double>(n, 0.0),
          std::vector<QString>(n),  // the zeros are written in each column's unit once all rows are known
          std::move(tooltip)};
}

}  // namespace

void StepTimeModel::setEvaluations(const std::vector<const Evaluation*>& configs,
                                   const QStringList& names) {
  auto part_row = [&](const Def& d) {
    return configRow(
        configs, d.term, true, [&](const Evaluation& e) { return seconds_text(d.get(e.estimate), e.estimate.time.step); },
        [&](const Evaluation& e) { return d.get(e.estimate).value(); });
  };
  std::vector<Row> rows;
  for (const Def& d : kBefore) rows.push_back(part_row(d));
  addCommunicationRows(configs, rows);
  const bool reference = std::any_of(configs.begin(), configs.end(), [](const Evaluation* e) {
    return e->estimate.training.runs_reference();
  });
  for (const Def& d : kAfter)
    if (d.term != Term::reference_forward || reference) rows.push_back(part_row(d));
  addThroughputRows(configs, rows);
  reset(names, configTooltips(configs), std::move(rows));
}

void StepTimeModel::addCommunicationRows(const std::vector<const Evaluation*>& configs,
                                         std::vector<Row>& rows) {
  const std::size_t n = configs.size();
  std::map<QString, std::size_t> kinds;
  for (std::size_t c = 0; c < n; ++c) {
    const planner::Estimate& est = configs[c]->estimate;
    if (est.communication.empty() && est.time.communication_exposed.value() > 0) {
      const QString key = term_label(Term::communication_exposed);
      auto [it, added] = kinds.emplace(key, rows.size());
      if (added) rows.push_back(zero_row(key, n, {}));
      rows[it->second].values[c] = est.time.communication_exposed.value();
      rows[it->second].texts[c] = seconds_text(est.time.communication_exposed, est.time.step);
    }
    std::map<QString, int> seen;  // the same kind twice in one configuration gets its own row
    for (const planner::CommunicationItem& item : est.communication) {
      QString key = QStringLiteral("%1|%2|%3")
                        .arg(qstr(item.purpose), qstr(item.collective), qstr(item.tier));
      if (const int k = ++seen[key]; k > 1) key += QStringLiteral("#%1").arg(k);
      auto [it, added] = kinds.emplace(key, rows.size());
      if (added)
        rows.push_back(zero_row(
            QStringLiteral("comm: %1").arg(qstr(item.purpose)), n,
            term_tooltip(Term::communication_exposed) +
                QStringLiteral("<p>This row: the exposed part of the %1 %2 on the %3 tier.</p>")
                    .arg(qstr(item.purpose).toHtmlEscaped(), qstr(item.collective), qstr(item.tier))));
      rows[it->second].values[c] = item.exposed.value();
      rows[it->second].texts[c] = seconds_text(item.exposed, est.time.step);
    }
  }
  // A configuration without this kind: zero, in its column's unit.
  for (const auto& [key, row] : kinds)
    for (std::size_t c = 0; c < n; ++c)
      if (rows[row].values[c] == 0.0) rows[row].texts[c] = seconds_text(Seconds(0.0), configs[c]->estimate.time.step);
  // Two kinds with one purpose (e.g. intra- and inter-node parts of a hybrid collective): say
  // which.
  std::map<QString, int> label_count;
  for (const Row& r : rows) ++label_count[r.label];
  for (const auto& [key, row] : kinds) {
    Row& r = rows[row];
    const QStringList k = key.split(QLatin1Char('|'));
    // What tells them apart goes first: a legend cuts long labels at their end.
    if (label_count[r.label] > 1 && k.size() == 3)
      r.label = QStringLiteral("comm %1, %2: %3").arg(k[1], k[2].section(QLatin1Char('#'), 0, 0), k[0]);
  }
}

void StepTimeModel::addThroughputRows(const std::vector<const Evaluation*>& configs,
                                      std::vector<Row>& rows) {
  using E = const Evaluation&;
  rows.push_back(configRow(
      configs, Term::step, false, [](E e) { return seconds_text(e.estimate.time.step); },
      [](E e) { return e.estimate.time.step.value(); }));
  rows.push_back(configRow(
      configs, Term::tokens_per_s, false,
      [](E e) { return rate_text(e.estimate.throughput.tokens_per_s, QStringLiteral("tokens/s")); },
      [](E e) { return e.estimate.throughput.tokens_per_s; }));
  rows.push_back(configRow(
      configs, Term::samples_per_s, false,
      [](E e) { return rate_text(e.estimate.throughput.samples_per_s, QStringLiteral("samples/s")); },
      [](E e) { return e.estimate.throughput.samples_per_s; }));
  Row mfu = configRow(
      configs, Term::mfu, false, [](E e) { return percent_text(e.estimate.throughput.mfu); },
      [](E e) { return e.estimate.throughput.mfu; });
  if (!configs.empty() && !configs.front()->estimate.throughput.mfu_formula.empty())
    mfu.tooltip = term_tooltip(Term::mfu) +
                  QStringLiteral("<p>As computed: %1.</p>")
                      .arg(qstr(configs.front()->estimate.throughput.mfu_formula).toHtmlEscaped());
  rows.push_back(std::move(mfu));
  rows.push_back(configRow(
      configs, Term::hfu, false, [](E e) { return percent_text(e.estimate.throughput.hfu); },
      [](E e) { return e.estimate.throughput.hfu; }));
  rows.push_back(configRow(
      configs, Term::global_batch, false, [](E e) { return QString::number(e.estimate.global_batch); },
      [](E e) { return static_cast<double>(e.estimate.global_batch); }));
}

}  // namespace trainplan::gui
