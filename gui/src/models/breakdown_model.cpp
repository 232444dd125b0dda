#include "models/breakdown_model.hpp"

#include <utility>

namespace trainplan::gui {

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
  const Row& r = at(row);
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

QStringList BreakdownModel::configTooltips(const std::vector<const Evaluation*>& configs) {
  QStringList tips;
  for (const Evaluation* e : configs)
    tips << QStringLiteral("%1 on %2: %3").arg(qstr(e->arch.name), e->cluster_text(), e->title());
  return tips;
}

QVariant BreakdownModel::columnTooltip(int column) const {
  if (column < column_tooltips_.size()) return column_tooltips_[column];
  return {};
}

QVariant BreakdownModel::rowTooltip(int row) const {
  const Row& r = at(row);
  return r.tooltip.isEmpty() ? term_tooltip(r.term) : r.tooltip;
}

QVariant BreakdownModel::cellText(int row, int column) const {
  const Row& r = at(row);
  const auto c = static_cast<std::size_t>(column);
  return c < r.texts.size() ? r.texts[c] : QString();
}

QVariant BreakdownModel::cellValue(int row, int column) const {
  const Row& r = at(row);
  const auto c = static_cast<std::size_t>(column);
  return c < r.values.size() ? QVariant(r.values[c]) : QVariant();
}

std::optional<planner::Verdict> BreakdownModel::verdict(int column) const {
  const auto c = static_cast<std::size_t>(column);
  for (const Row& r : rows_)
    if (c < r.verdicts.size()) return r.verdicts[c];
  return std::nullopt;
}

QVariant BreakdownModel::cellBrush(int row, int column) const {
  const auto c = static_cast<std::size_t>(column);
  return c < at(row).verdicts.size() ? verdict_brush(at(row).verdicts[c]) : QVariant();
}

// The first row after the parts (the total) stands out.
bool BreakdownModel::boldRow(int row) const { return !at(row).part && row == partRows(); }

}  // namespace trainplan::gui
