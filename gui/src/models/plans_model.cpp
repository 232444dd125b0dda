#include "models/plans_model.hpp"

#include <QBrush>
#include <QColor>

#include "trainplan/model/partial.hpp"

namespace trainplan::gui {
namespace {

constexpr const char* kAbout = "Plans that fit, fastest first. Double-click or press Enter to load one.";

constexpr ColumnTableModel::Heading kHeadings[] = {
    {"#", kAbout},
    {"front", "On the Pareto front: no other plan is both faster and leaner in memory."},
    {"strategy", kAbout},
    {"TP", kAbout},
    {"PP", kAbout},
    {"DP", kAbout},
    {"micro-batch", kAbout},
    {"grad accum", kAbout},
    {"checkpointing", kAbout},
    {"offload", kAbout},
    {"GiB / GPU", Term::device_total},
    {Term::tokens_per_s},
    {Term::mfu},
    {Term::step},
};
static_assert(std::size(kHeadings) == PlansModel::kColumns);

// The training options of a plan, as the form shows them.
QVariant training_text(const planner::Estimate& e, PlansModel::Column column) {
  const model::Training& t = e.training;
  using C = PlansModel::Column;
  switch (column) {
    case C::strategy:
      return strategy_label(t);
    case C::tp:
      return t.tp;
    case C::pp:
      return t.pp;
    case C::dp:
      return e.layout.dp;
    case C::micro_batch:
      return static_cast<qlonglong>(t.micro_batch);
    case C::grad_accum:
      return static_cast<qlonglong>(t.grad_accum);
    case C::checkpointing:
      return QString::fromStdString(model::checkpointing_text(t));
    case C::offload:
      return qstr(to_string(t.offload));
    default:
      return {};
  }
}

}  // namespace

PlansModel::PlansModel(QObject* parent) : ColumnTableModel(kHeadings, device_total, parent) {}

void PlansModel::setPlans(const std::vector<PlanPoint>& plans, Bytes usable) {
  beginResetModel();
  plans_ = plans;
  usable_ = usable;
  endResetModel();
}

QVariant PlansModel::cellText(int row, int column) const {
  const PlanPoint& p = at(row);
  const planner::Estimate& e = p.estimate;
  switch (static_cast<Column>(column)) {
    case rank:
      return row + 1;
    case pareto:
      return p.pareto ? QStringLiteral("Pareto") : QString();
    case device_total:
      return gib_text(e.memory.device_total, 1);
    case tokens_per_s:
      return rate_text(e.throughput.tokens_per_s, QStringLiteral("tokens/s"));
    case mfu:
      return percent_text(e.throughput.mfu);
    case step:
      return seconds_text(e.time.step);
    default:
      return training_text(e, static_cast<Column>(column));
  }
}

QVariant PlansModel::cellValue(int row, int column) const {
  const PlanPoint& p = at(row);
  const planner::Estimate& e = p.estimate;
  switch (static_cast<Column>(column)) {
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

// A plan's note says why it ranks where it does.
void PlansModel::setStale(QStringList why) {
  if (why == stale_) return;
  beginResetModel();
  stale_ = std::move(why);
  endResetModel();
}

QVariant PlansModel::cellBrush(int /*row*/, int /*column*/) const {
  return stale_.isEmpty() ? QVariant() : QVariant(QBrush(QColor(0x9e, 0x9e, 0x9e)));
}

QVariant PlansModel::cellTooltip(int row, int column) const {
  const PlanPoint& p = at(row);
  if (!p.note.empty()) return qstr(p.note);
  return columnTooltip(column);
}

// The Pareto front stands out.
bool PlansModel::boldRow(int row) const { return at(row).pareto; }

}  // namespace trainplan::gui
