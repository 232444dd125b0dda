#include "models.hpp"

#include <QBrush>
#include <QFont>
#include <map>
#include <utility>

namespace trainplan::gui {
namespace {

QVariant right_aligned() {
  return QVariant::fromValue(Qt::Alignment(Qt::AlignRight | Qt::AlignVCenter));
}

QString fits_text(bool fits) {
  return fits ? QStringLiteral("fits") : QStringLiteral("out of memory");
}

// Mid-tone green and red: readable on light and dark bases alike.
QVariant fits_brush(bool fits) {
  return QBrush(fits ? QColor(0x2e, 0x9e, 0x48) : QColor(0xd6, 0x45, 0x41));
}

// fit's three verdicts (planner::judge): tight runs, but inside the margin or on the allocator's
// cache PyTorch can release.
QString verdict_text(planner::Verdict v) {
  switch (v) {
    case planner::Verdict::fits:
      return QStringLiteral("fits");
    case planner::Verdict::tight:
      return QStringLiteral("tight");
    case planner::Verdict::no:
      return QStringLiteral("out of memory");
  }
  return {};
}

QVariant verdict_brush(planner::Verdict v) {
  if (v == planner::Verdict::tight) return QBrush(QColor(0xc8, 0x8a, 0x1e));  // amber
  return fits_brush(v != planner::Verdict::no);
}

QString yes_no_tooltip() {
  return QStringLiteral(
      "Fits when the device total (what nvidia-smi shows) is at most the GPU's usable "
      "capacity.");
}

}  // namespace

// ---- BreakdownModel ---------------------------------------------------------------------------

int BreakdownModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int BreakdownModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(columns_.size());
}

QVariant BreakdownModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const Row& r = rows_[static_cast<std::size_t>(index.row())];
  const auto c = static_cast<std::size_t>(index.column());
  switch (role) {
    case Qt::DisplayRole:
      return c < r.texts.size() ? r.texts[c] : QString();
    case kValueRole:
      return c < r.values.size() ? QVariant(r.values[c]) : QVariant();
    case Qt::ToolTipRole:
      return r.tooltip.isEmpty() ? term_tooltip(r.term) : r.tooltip;
    case Qt::TextAlignmentRole:
      return right_aligned();
    case Qt::FontRole:
      if (!r.part && index.row() == partRows()) {
        QFont f;
        f.setBold(true);
        return f;
      }
      return {};
    default:
      return {};
  }
}

QVariant BreakdownModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o == Qt::Horizontal) {
    if (section < 0 || section >= columns_.size()) return {};
    if (role == Qt::DisplayRole) return columns_[section];
    if (role == Qt::ToolTipRole && section < column_tooltips_.size())
      return column_tooltips_[section];
    return {};
  }
  if (section < 0 || section >= rowCount()) return {};
  const Row& r = rows_[static_cast<std::size_t>(section)];
  if (role == Qt::DisplayRole) return r.label;
  if (role == Qt::ToolTipRole) return r.tooltip.isEmpty() ? term_tooltip(r.term) : r.tooltip;
  return {};
}

int BreakdownModel::partRows() const {
  int n = 0;
  for (const Row& r : rows_) n += r.part ? 1 : 0;
  return n;
}

std::optional<int> BreakdownModel::rowOf(Term t) const {
  for (std::size_t i = 0; i < rows_.size(); ++i)
    if (rows_[i].term == t) return static_cast<int>(i);
  return std::nullopt;
}

double BreakdownModel::value(int row, int column) const {
  if (row < 0 || row >= rowCount()) return 0.0;
  const Row& r = rows_[static_cast<std::size_t>(row)];
  const auto c = static_cast<std::size_t>(column);
  return column >= 0 && c < r.values.size() ? r.values[c] : 0.0;
}

void BreakdownModel::reset(QStringList columns, QStringList column_tooltips,
                           std::vector<Row> rows) {
  beginResetModel();
  columns_ = std::move(columns);
  column_tooltips_ = std::move(column_tooltips);
  rows_ = std::move(rows);
  endResetModel();
}

// ---- MemoryModel ------------------------------------------------------------------------------

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
  for (const Def& d : kDefs) {
    Row r{d.term, term_label(d.term), d.part, {}, {}, {}};
    for (const Evaluation* e : configs) {
      const Bytes b = d.get(*e);
      r.values.push_back(to_gib(b));
      r.texts.push_back(gib_text(b, 2));
    }
    rows.push_back(std::move(r));
  }
  Row mb{Term::max_micro_batch, term_label(Term::max_micro_batch), false, {}, {}, {}};
  Row phase{Term::device_total,
            QStringLiteral("peak phase"),
            false,
            {},
            {},
            QStringLiteral(
                "The phase of the step where memory peaks: backward (activations alive) or the "
                "optimizer step (its temporaries).")};
  Row fits{Term::device_total, QStringLiteral("verdict"), false, {}, {}, yes_no_tooltip()};
  QStringList tips;
  for (const Evaluation* e : configs) {
    mb.values.push_back(static_cast<double>(e->estimate.max_micro_batch));
    mb.texts.push_back(QString::number(e->estimate.max_micro_batch));
    phase.values.push_back(0);
    phase.texts.push_back(qstr(e->estimate.memory.peak_phase));
    fits.values.push_back(e->estimate.fits ? 1 : 0);
    fits.texts.push_back(fits_text(e->estimate.fits));
    tips << QStringLiteral("%1 on %2: %3").arg(qstr(e->arch.name), e->cluster_text(), e->title());
  }
  fits.verdict = true;
  rows.push_back(std::move(fits));
  rows.push_back(std::move(mb));
  rows.push_back(std::move(phase));
  reset(names, tips, std::move(rows));
}

// ---- StepTimeModel ----------------------------------------------------------------------------

void StepTimeModel::setEvaluations(const std::vector<const Evaluation*>& configs,
                                   const QStringList& names) {
  using Get = Seconds (*)(const planner::Estimate&);
  struct Def {
    Term term;
    Get get;
  };
  static constexpr Def kBefore[] = {
      {Term::compute, [](const planner::Estimate& e) { return e.time.compute; }},
      {Term::memory_bound, [](const planner::Estimate& e) { return e.time.memory_bound; }},
      {Term::host_time, [](const planner::Estimate& e) { return e.time.host; }},
      {Term::recompute, [](const planner::Estimate& e) { return e.time.recompute; }},
  };
  static constexpr Def kAfter[] = {
      {Term::bubble, [](const planner::Estimate& e) { return e.time.bubble; }},
      {Term::optimizer_step, [](const planner::Estimate& e) { return e.time.optimizer; }},
      {Term::offload_time, [](const planner::Estimate& e) { return e.time.offload; }},
  };
  const std::size_t n = configs.size();
  auto part_row = [&](const Def& d) {
    Row r{d.term, term_label(d.term), true, {}, {}, {}};
    for (const Evaluation* e : configs) {
      const Seconds s = d.get(e->estimate);
      r.values.push_back(s.value());
      r.texts.push_back(seconds_text(s));
    }
    return r;
  };
  std::vector<Row> rows;
  for (const Def& d : kBefore) rows.push_back(part_row(d));
  // Exposed communication by kind: one row per (purpose, collective, tier) any configuration has.
  std::map<QString, std::size_t> kinds;
  for (std::size_t c = 0; c < n; ++c) {
    const planner::Estimate& est = configs[c]->estimate;
    if (est.communication.empty() && est.time.communication_exposed.value() > 0) {
      const QString key = term_label(Term::communication_exposed);
      auto [it, added] = kinds.emplace(key, rows.size());
      if (added)
        rows.push_back({Term::communication_exposed,
                        key,
                        true,
                        std::vector<double>(n, 0.0),
                        std::vector<QString>(n, QStringLiteral("0")),
                        {}});
      rows[it->second].values[c] = est.time.communication_exposed.value();
      rows[it->second].texts[c] = seconds_text(est.time.communication_exposed);
    }
    std::map<QString, int> seen;  // the same kind twice in one configuration gets its own row
    for (const planner::CommunicationItem& item : est.communication) {
      QString key = QStringLiteral("%1|%2|%3")
                        .arg(qstr(item.purpose), qstr(item.collective), qstr(item.tier));
      if (const int k = ++seen[key]; k > 1) key += QStringLiteral("#%1").arg(k);
      auto [it, added] = kinds.emplace(key, rows.size());
      if (added)
        rows.push_back(
            {Term::communication_exposed, QStringLiteral("comm: %1").arg(qstr(item.purpose)), true,
             std::vector<double>(n, 0.0), std::vector<QString>(n, QStringLiteral("0")),
             term_tooltip(Term::communication_exposed) +
                 QStringLiteral("<p>This row: the exposed part of the %1 %2 on the %3 tier.</p>")
                     .arg(qstr(item.purpose).toHtmlEscaped(), qstr(item.collective),
                          qstr(item.tier))});
      rows[it->second].values[c] = item.exposed.value();
      rows[it->second].texts[c] = seconds_text(item.exposed);
    }
  }
  // Two kinds with one purpose (e.g. intra- and inter-node parts of a hybrid collective): say
  // which.
  std::map<QString, int> label_count;
  for (const Row& r : rows) ++label_count[r.label];
  for (const auto& [key, row] : kinds) {
    Row& r = rows[row];
    const QStringList k = key.split(QLatin1Char('|'));
    if (label_count[r.label] > 1 && k.size() == 3)
      r.label += QStringLiteral(" (%1, %2)").arg(k[1], k[2].section(QLatin1Char('#'), 0, 0));
  }
  for (const Def& d : kAfter) rows.push_back(part_row(d));

  Row step{Term::step, term_label(Term::step), false, {}, {}, {}};
  Row tokens{Term::tokens_per_s, term_label(Term::tokens_per_s), false, {}, {}, {}};
  Row samples{Term::samples_per_s, term_label(Term::samples_per_s), false, {}, {}, {}};
  Row mfu{Term::mfu, term_label(Term::mfu), false, {}, {}, {}};
  Row hfu{Term::hfu, term_label(Term::hfu), false, {}, {}, {}};
  Row gb{Term::global_batch, term_label(Term::global_batch), false, {}, {}, {}};
  QStringList tips;
  for (const Evaluation* e : configs) {
    const planner::Estimate& est = e->estimate;
    step.values.push_back(est.time.step.value());
    step.texts.push_back(seconds_text(est.time.step));
    tokens.values.push_back(est.throughput.tokens_per_s);
    tokens.texts.push_back(rate_text(est.throughput.tokens_per_s, QStringLiteral("tokens/s")));
    samples.values.push_back(est.throughput.samples_per_s);
    samples.texts.push_back(rate_text(est.throughput.samples_per_s, QStringLiteral("samples/s")));
    mfu.values.push_back(est.throughput.mfu);
    mfu.texts.push_back(percent_text(est.throughput.mfu));
    hfu.values.push_back(est.throughput.hfu);
    hfu.texts.push_back(percent_text(est.throughput.hfu));
    gb.values.push_back(static_cast<double>(est.global_batch));
    gb.texts.push_back(QString::number(est.global_batch));
    tips << QStringLiteral("%1 on %2: %3").arg(qstr(e->arch.name), e->cluster_text(), e->title());
  }
  if (!configs.empty() && !configs.front()->estimate.throughput.mfu_formula.empty())
    mfu.tooltip = term_tooltip(Term::mfu) +
                  QStringLiteral("<p>As computed: %1.</p>")
                      .arg(qstr(configs.front()->estimate.throughput.mfu_formula).toHtmlEscaped());
  for (Row* r : {&step, &tokens, &samples, &mfu, &hfu, &gb}) rows.push_back(std::move(*r));
  reset(names, tips, std::move(rows));
}

// ---- CommunicationModel -----------------------------------------------------------------------

void CommunicationModel::setEstimate(const planner::Estimate* e) {
  beginResetModel();
  items_ = e ? e->communication : std::vector<planner::CommunicationItem>{};
  endResetModel();
}

int CommunicationModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(items_.size());
}

int CommunicationModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kColumns;
}

QVariant CommunicationModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const planner::CommunicationItem& it = items_[static_cast<std::size_t>(index.row())];
  const auto col = static_cast<Column>(index.column());
  if (role == Qt::DisplayRole) {
    switch (col) {
      case collective:
        return qstr(it.collective);
      case purpose:
        return qstr(it.purpose);
      case tier:
        return qstr(it.tier);
      case bytes:
        return bytes_text(it.bytes);
      case time:
        return seconds_text(it.time);
      case exposed:
        return seconds_text(it.exposed);
      case kColumns:
        break;
    }
    return {};
  }
  if (role == kValueRole) {
    switch (col) {
      case bytes:
        return it.bytes.value();
      case time:
        return it.time.value();
      case exposed:
        return it.exposed.value();
      case collective:
      case purpose:
      case tier:
      case kColumns:
        return {};
    }
    return {};
  }
  if (role == Qt::TextAlignmentRole && col >= bytes) return right_aligned();
  if (role == Qt::ToolTipRole) return headerData(index.column(), Qt::Horizontal, Qt::ToolTipRole);
  return {};
}

QVariant CommunicationModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal) {
    if (role == Qt::DisplayRole && section >= 0 && section < rowCount()) return section + 1;
    return {};
  }
  if (section < 0 || section >= kColumns) return {};
  const auto col = static_cast<Column>(section);
  if (role == Qt::DisplayRole) {
    switch (col) {
      case collective:
        return QStringLiteral("collective");
      case purpose:
        return QStringLiteral("purpose");
      case tier:
        return QStringLiteral("link tier");
      case bytes:
        return QStringLiteral("bytes / GPU / step");
      case time:
        return QStringLiteral("time / step");
      case exposed:
        return QStringLiteral("exposed");
      case kColumns:
        break;
    }
    return {};
  }
  if (role == Qt::ToolTipRole) {
    switch (col) {
      case collective:
        return term_tooltip(Term::collective);
      case purpose:
        return QStringLiteral(
            "What the collective moves: gradients, gathered parameters, "
            "tensor-parallel activations, pipeline activations.");
      case tier:
        return term_tooltip(Term::link_tier);
      case bytes:
        return term_tooltip(Term::communication_bytes);
      case time:
        return QStringLiteral("<p>Total time of these collectives in one optimizer step.</p>") +
               term_tooltip(Term::communication_exposed);
      case exposed:
        return term_tooltip(Term::communication_exposed);
      case kColumns:
        break;
    }
  }
  return {};
}

// ---- StrategiesModel --------------------------------------------------------------------------

void StrategiesModel::setResult(const planner::FitResult& r) {
  beginResetModel();
  result_ = r;
  endResetModel();
}

const planner::Candidate* StrategiesModel::candidate(int row) const {
  if (row < 0 || row >= rowCount()) return nullptr;
  return &result_.candidates[static_cast<std::size_t>(row)];
}

int StrategiesModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(result_.candidates.size());
}

int StrategiesModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kColumns;
}

QVariant StrategiesModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const auto row = static_cast<std::size_t>(index.row());
  const planner::Candidate& k = result_.candidates[row];
  const planner::MemoryBreakdown& m = k.memory;
  const auto col = static_cast<Column>(index.column());
  auto bytes_of = [&]() -> std::optional<Bytes> {
    switch (col) {
      case device_total:
        return m.device_total;
      case weights:
        return m.weights;
      case gradients:
        return m.gradients;
      case optimizer:
        return m.optimizer;
      case activations:
        return m.activations;
      case buffers:
        return m.buffers;
      case overhead:
        return m.overhead;
      case strategy:
      case checkpointing:
      case offload:
      case fits:
      case max_micro_batch:
      case kColumns:
        return std::nullopt;
    }
    return std::nullopt;
  };
  if (role == Qt::DisplayRole) {
    if (auto b = bytes_of()) return gib_text(*b, 1);
    switch (col) {
      case strategy: {
        QString s = strategy_label(k.training.strategy);
        if (result_.recommended == row) s += QStringLiteral("  (recommended)");
        return s;
      }
      case checkpointing:
        return qstr(to_string(k.training.checkpointing));
      case offload:
        return qstr(to_string(k.training.offload));
      case fits:
        return verdict_text(k.verdict.verdict);
      case max_micro_batch:
        return QString::number(k.max_micro_batch);
      default:
        return {};
    }
  }
  if (role == kValueRole) {
    if (auto b = bytes_of()) return to_gib(*b);
    if (col == fits) return k.fits;
    if (col == max_micro_batch) return static_cast<double>(k.max_micro_batch);
    return {};
  }
  if (role == Qt::ForegroundRole && col == fits) return verdict_brush(k.verdict.verdict);
  if (role == Qt::FontRole && result_.recommended == row) {
    QFont f;
    f.setBold(true);
    return f;
  }
  if (role == Qt::TextAlignmentRole && col >= device_total) return right_aligned();
  if (role == Qt::ToolTipRole && col == fits) return qstr(k.verdict.reason);
  if (role == Qt::ToolTipRole) return headerData(index.column(), Qt::Horizontal, Qt::ToolTipRole);
  return {};
}

QVariant StrategiesModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal) {
    if (role == Qt::DisplayRole && section >= 0 && section < rowCount()) return section + 1;
    return {};
  }
  if (section < 0 || section >= kColumns) return {};
  const auto col = static_cast<Column>(section);
  struct H {
    const char* label;
    std::optional<Term> term;
  };
  auto h = [&]() -> H {
    switch (col) {
      case strategy:
        return {"strategy", std::nullopt};
      case checkpointing:
        return {"checkpointing", std::nullopt};
      case offload:
        return {"offload", std::nullopt};
      case fits:
        return {"verdict", Term::device_total};
      case device_total:
        return {"GiB / GPU", Term::device_total};
      case weights:
        return {"weights", Term::weights};
      case gradients:
        return {"gradients", Term::gradients};
      case optimizer:
        return {"optimizer", Term::optimizer_state};
      case activations:
        return {"activations", Term::activations};
      case buffers:
        return {"buffers", Term::buffers};
      case overhead:
        return {"overhead", Term::overhead};
      case max_micro_batch:
        return {"largest micro-batch", Term::max_micro_batch};
      case kColumns:
        break;
    }
    return {"", std::nullopt};
  }();
  if (role == Qt::DisplayRole) return QString::fromUtf8(h.label);
  if (role == Qt::ToolTipRole) {
    if (h.term) return term_tooltip(*h.term);
    return QStringLiteral(
        "planner::fit tries every strategy for this cluster, with and without "
        "checkpointing and optimizer offload; the other options stay as set. "
        "Double-click or press Enter to load a row.");
  }
  return {};
}

// ---- SweepModel -------------------------------------------------------------------------------

void SweepModel::setSweep(const Sweep& s) {
  beginResetModel();
  sweep_ = s;
  endResetModel();
}

int SweepModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(sweep_.points.size());
}

int SweepModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kColumns;
}

QVariant SweepModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const auto row = static_cast<std::size_t>(index.row());
  const SweepPoint& p = sweep_.points[row];
  const planner::Estimate& e = p.estimate;
  const auto col = static_cast<Column>(index.column());
  if (role == Qt::DisplayRole) {
    switch (col) {
      case x:
        return sweep_.current == row ? QStringLiteral("%1 (current)").arg(p.x)
                                     : QString::number(p.x);
      case device_total:
        return gib_text(e.memory.device_total, 2);
      case fits:
        return fits_text(e.fits);
      case step:
        return seconds_text(e.time.step);
      case tokens_per_s:
        return rate_text(e.throughput.tokens_per_s, QStringLiteral("tokens/s"));
      case mfu:
        return percent_text(e.throughput.mfu);
      case kColumns:
        break;
    }
    return {};
  }
  if (role == kValueRole) {
    switch (col) {
      case x:
        return static_cast<double>(p.x);
      case device_total:
        return to_gib(e.memory.device_total);
      case fits:
        return e.fits;
      case step:
        return e.time.step.value();
      case tokens_per_s:
        return e.throughput.tokens_per_s;
      case mfu:
        return e.throughput.mfu;
      case kColumns:
        break;
    }
    return {};
  }
  if (role == Qt::ForegroundRole && col == fits) return fits_brush(e.fits);
  if (role == Qt::FontRole && sweep_.current == row) {
    QFont f;
    f.setBold(true);
    return f;
  }
  if (role == Qt::TextAlignmentRole) return right_aligned();
  if (role == Qt::ToolTipRole) return headerData(index.column(), Qt::Horizontal, Qt::ToolTipRole);
  return {};
}

QVariant SweepModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal) {
    if (role == Qt::DisplayRole && section >= 0 && section < rowCount()) return section + 1;
    return {};
  }
  if (section < 0 || section >= kColumns) return {};
  const auto col = static_cast<Column>(section);
  if (role == Qt::DisplayRole) {
    switch (col) {
      case x:
        return sweep_.axis == SweepAxis::micro_batch ? QStringLiteral("micro-batch")
                                                     : QStringLiteral("sequence length");
      case device_total:
        return QStringLiteral("GiB / GPU");
      case fits:
        return QStringLiteral("verdict");
      case step:
        return QStringLiteral("step time");
      case tokens_per_s:
        return QStringLiteral("tokens/s");
      case mfu:
        return QStringLiteral("MFU");
      case kColumns:
        break;
    }
    return {};
  }
  if (role == Qt::ToolTipRole) {
    switch (col) {
      case x:
        return option_tooltip("sweep");
      case device_total:
      case fits:
        return term_tooltip(Term::device_total);
      case step:
        return term_tooltip(Term::step);
      case tokens_per_s:
        return term_tooltip(Term::tokens_per_s);
      case mfu:
        return term_tooltip(Term::mfu);
      case kColumns:
        break;
    }
  }
  return {};
}

// ---- PlansModel -------------------------------------------------------------------------------

void PlansModel::setPlans(const std::vector<PlanPoint>& plans, Bytes usable) {
  beginResetModel();
  plans_ = plans;
  usable_ = usable;
  endResetModel();
}

int PlansModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(plans_.size());
}

int PlansModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kColumns;
}

QVariant PlansModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const PlanPoint& p = plans_[static_cast<std::size_t>(index.row())];
  const planner::Estimate& e = p.estimate;
  const model::Training& t = e.training;
  const auto col = static_cast<Column>(index.column());
  if (role == Qt::DisplayRole) {
    switch (col) {
      case rank:
        return index.row() + 1;
      case pareto:
        return p.pareto ? QStringLiteral("Pareto") : QString();
      case strategy:
        return strategy_label(t.strategy);
      case tp:
        return t.tp;
      case pp:
        return t.pp;
      case dp:
        return e.layout.dp;
      case micro_batch:
        return static_cast<qlonglong>(t.micro_batch);
      case grad_accum:
        return static_cast<qlonglong>(t.grad_accum);
      case checkpointing:
        return qstr(to_string(t.checkpointing));
      case offload:
        return qstr(to_string(t.offload));
      case device_total:
        return gib_text(e.memory.device_total, 1);
      case tokens_per_s:
        return rate_text(e.throughput.tokens_per_s, QStringLiteral("tokens/s"));
      case mfu:
        return percent_text(e.throughput.mfu);
      case step:
        return seconds_text(e.time.step);
      case kColumns:
        break;
    }
    return {};
  }
  if (role == kValueRole) {
    switch (col) {
      case device_total:
        return to_gib(e.memory.device_total);
      case tokens_per_s:
        return e.throughput.tokens_per_s;
      case mfu:
        return e.throughput.mfu;
      case step:
        return e.time.step.value();
      case pareto:
        return p.pareto;
      default:
        return {};
    }
  }
  if (role == Qt::ToolTipRole) {
    if (!p.note.empty()) return qstr(p.note);
    return headerData(index.column(), Qt::Horizontal, Qt::ToolTipRole);
  }
  if (role == Qt::FontRole && p.pareto) {
    QFont f;
    f.setBold(true);
    return f;
  }
  if (role == Qt::TextAlignmentRole && col >= device_total) return right_aligned();
  return {};
}

QVariant PlansModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal) return {};
  if (section < 0 || section >= kColumns) return {};
  const auto col = static_cast<Column>(section);
  if (role == Qt::DisplayRole) {
    switch (col) {
      case rank:
        return QStringLiteral("#");
      case pareto:
        return QStringLiteral("front");
      case strategy:
        return QStringLiteral("strategy");
      case tp:
        return QStringLiteral("TP");
      case pp:
        return QStringLiteral("PP");
      case dp:
        return QStringLiteral("DP");
      case micro_batch:
        return QStringLiteral("micro-batch");
      case grad_accum:
        return QStringLiteral("grad accum");
      case checkpointing:
        return QStringLiteral("checkpointing");
      case offload:
        return QStringLiteral("offload");
      case device_total:
        return QStringLiteral("GiB / GPU");
      case tokens_per_s:
        return QStringLiteral("tokens/s");
      case mfu:
        return QStringLiteral("MFU");
      case step:
        return QStringLiteral("step time");
      case kColumns:
        break;
    }
    return {};
  }
  if (role == Qt::ToolTipRole) {
    switch (col) {
      case pareto:
        return QStringLiteral(
            "On the Pareto front: no other plan is both faster and leaner in memory.");
      case device_total:
        return term_tooltip(Term::device_total);
      case tokens_per_s:
        return term_tooltip(Term::tokens_per_s);
      case mfu:
        return term_tooltip(Term::mfu);
      case step:
        return term_tooltip(Term::step);
      default:
        return QStringLiteral(
            "Plans that fit, fastest first. Double-click or press Enter to load one.");
    }
  }
  return {};
}

// ---- CompareModel -----------------------------------------------------------------------------

void CompareModel::setEvaluations(const std::vector<const Evaluation*>& configs,
                                  const QStringList& names) {
  using Text = QString (*)(const Evaluation&);
  struct Def {
    const char* label;
    std::optional<Term> term;
    Text text;
  };
  static constexpr Def kDefs[] = {
      {"model", std::nullopt, [](const Evaluation& e) { return qstr(e.arch.name); }},
      {"parameters", std::nullopt, [](const Evaluation& e) { return count_text(e.params.total); }},
      {"trainable", std::nullopt, [](const Evaluation& e) { return count_text(e.trainable); }},
      {"cluster", std::nullopt, [](const Evaluation& e) { return e.cluster_text(); }},
      {"method", std::nullopt,
       [](const Evaluation& e) { return qstr(to_string(e.estimate.training.method)); }},
      {"precision", std::nullopt,
       [](const Evaluation& e) { return qstr(to_string(e.estimate.training.precision)); }},
      {"optimizer", std::nullopt,
       [](const Evaluation& e) { return qstr(to_string(e.estimate.training.optimizer)); }},
      {"strategy", std::nullopt,
       [](const Evaluation& e) { return strategy_label(e.estimate.training.strategy); }},
      {"TP x PP x DP", std::nullopt,
       [](const Evaluation& e) {
         return QStringLiteral("%1 x %2 x %3")
             .arg(e.estimate.layout.tp)
             .arg(e.estimate.layout.pp)
             .arg(e.estimate.layout.dp);
       }},
      {"micro-batch x accumulation", std::nullopt,
       [](const Evaluation& e) {
         return QStringLiteral("%1 x %2")
             .arg(e.estimate.training.micro_batch)
             .arg(e.estimate.training.grad_accum);
       }},
      {"sequence length", std::nullopt,
       [](const Evaluation& e) { return QString::number(e.estimate.training.seq); }},
      {"checkpointing", std::nullopt,
       [](const Evaluation& e) { return qstr(to_string(e.estimate.training.checkpointing)); }},
      {"offload", std::nullopt,
       [](const Evaluation& e) { return qstr(to_string(e.estimate.training.offload)); }},
      {"GiB / GPU", Term::device_total,
       [](const Evaluation& e) { return gib_text(e.estimate.memory.device_total, 2); }},
      {"usable", Term::usable, [](const Evaluation& e) { return gib_text(e.usable(), 2); }},
      {"verdict", Term::device_total,
       [](const Evaluation& e) { return fits_text(e.estimate.fits); }},
      {"largest micro-batch", Term::max_micro_batch,
       [](const Evaluation& e) { return QString::number(e.estimate.max_micro_batch); }},
      {"step time", Term::step,
       [](const Evaluation& e) { return seconds_text(e.estimate.time.step); }},
      {"tokens/s", Term::tokens_per_s,
       [](const Evaluation& e) {
         return rate_text(e.estimate.throughput.tokens_per_s, QStringLiteral("tokens/s"));
       }},
      {"MFU", Term::mfu,
       [](const Evaluation& e) { return percent_text(e.estimate.throughput.mfu); }},
      {"communication / GPU / step", Term::communication_bytes,
       [](const Evaluation& e) { return bytes_text(e.estimate.communication_bytes()); }},
      {"host memory per node", Term::host,
       [](const Evaluation& e) { return gib_text(e.estimate.memory.host, 1); }},
  };
  beginResetModel();
  columns_ = names;
  rows_.clear();
  for (const Def& d : kDefs) {
    Row r{QString::fromUtf8(d.label), d.term ? term_tooltip(*d.term) : QString(), {}};
    for (const Evaluation* e : configs) r.texts.push_back(d.text(*e));
    rows_.push_back(std::move(r));
  }
  endResetModel();
}

int CompareModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int CompareModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(columns_.size());
}

QVariant CompareModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const Row& r = rows_[static_cast<std::size_t>(index.row())];
  const auto c = static_cast<std::size_t>(index.column());
  if (role == Qt::DisplayRole) return c < r.texts.size() ? r.texts[c] : QString();
  if (role == Qt::ToolTipRole && !r.tooltip.isEmpty()) return r.tooltip;
  return {};
}

QVariant CompareModel::headerData(int section, Qt::Orientation o, int role) const {
  if (role != Qt::DisplayRole && role != Qt::ToolTipRole) return {};
  if (o == Qt::Horizontal) {
    if (section < 0 || section >= columns_.size() || role != Qt::DisplayRole) return {};
    return columns_[section];
  }
  if (section < 0 || section >= rowCount()) return {};
  const Row& r = rows_[static_cast<std::size_t>(section)];
  if (role == Qt::DisplayRole) return r.label;
  return r.tooltip.isEmpty() ? QVariant() : QVariant(r.tooltip);
}

}  // namespace trainplan::gui
