#include "models/sweep_model.hpp"

namespace trainplan::gui {
namespace {

constexpr ColumnTableModel::Heading kHeadings[] = {
    {"", nullptr},  // x: titled and explained after the axis (columnTitle, columnTooltip)
    {"GiB / GPU", Term::device_total},
    {"verdict", Term::device_total},
    {Term::step},
    {Term::tokens_per_s},
    {Term::mfu},
};
static_assert(std::size(kHeadings) == SweepModel::kColumns);

}  // namespace

SweepModel::SweepModel(QObject* parent) : ColumnTableModel(kHeadings, x, parent) {}

void SweepModel::setSweep(const Sweep& s) {
  beginResetModel();
  sweep_ = s;
  endResetModel();
}

QVariant SweepModel::columnTitle(int column) const {
  if (column != x) return ColumnTableModel::columnTitle(column);
  return sweep_.axis == SweepAxis::micro_batch ? QStringLiteral("micro-batch")
                                               : QStringLiteral("sequence length");
}

QVariant SweepModel::columnTooltip(int column) const {
  if (column != x) return ColumnTableModel::columnTooltip(column);
  return option_tooltip("sweep");
}

QVariant SweepModel::cellText(int row, int column) const {
  const SweepPoint& p = sweep_.points[static_cast<std::size_t>(row)];
  const planner::Estimate& e = p.estimate;
  switch (static_cast<Column>(column)) {
    case x:
      return boldRow(row) ? QStringLiteral("%1 (current)").arg(p.x) : QString::number(p.x);
    case device_total:
      return gib_text(e.memory.device_total, 2);
    case fits:
      return verdict_word(e.verdict.verdict);
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

QVariant SweepModel::cellValue(int row, int column) const {
  const SweepPoint& p = sweep_.points[static_cast<std::size_t>(row)];
  const planner::Estimate& e = p.estimate;
  switch (static_cast<Column>(column)) {
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

QVariant SweepModel::cellBrush(int row, int column) const {
  if (column == fits) return verdict_brush(sweep_.points[static_cast<std::size_t>(row)].estimate.verdict.verdict);
  return {};
}

// The point of the current setting stands out.
bool SweepModel::boldRow(int row) const { return sweep_.current == static_cast<std::size_t>(row); }

}  // namespace trainplan::gui
