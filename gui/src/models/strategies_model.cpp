#include "models/strategies_model.hpp"

#include <QBrush>
#include <utility>

#include "trainplan/model/partial.hpp"

namespace trainplan::gui {
namespace {

constexpr const char* kAbout =
    "planner::fit tries every strategy for this cluster, with and without checkpointing and "
    "optimizer offload; the other options stay as set. Double-click or press Enter to load a row.";

constexpr ColumnTableModel::Heading kHeadings[] = {
    {"strategy", kAbout},
    {"checkpointing", kAbout},
    {"offload", kAbout},
    {"verdict", Term::device_total},
    {"GiB / GPU", Term::device_total},
    {Term::weights},
    {Term::gradients},
    {Term::optimizer_state},
    {Term::activations},
    {Term::buffers},
    {Term::overhead},
    {Term::max_micro_batch},
};
static_assert(std::size(kHeadings) == StrategiesModel::kColumns);

// The memory columns, each a part of the candidate's breakdown.
using Part = Bytes planner::MemoryBreakdown::*;
constexpr std::pair<StrategiesModel::Column, Part> kParts[] = {
    {StrategiesModel::device_total, &planner::MemoryBreakdown::device_total},
    {StrategiesModel::weights, &planner::MemoryBreakdown::weights},
    {StrategiesModel::gradients, &planner::MemoryBreakdown::gradients},
    {StrategiesModel::optimizer, &planner::MemoryBreakdown::optimizer},
    {StrategiesModel::activations, &planner::MemoryBreakdown::activations},
    {StrategiesModel::buffers, &planner::MemoryBreakdown::buffers},
    {StrategiesModel::overhead, &planner::MemoryBreakdown::overhead},
};

std::optional<Bytes> bytes_of(const planner::MemoryBreakdown& m, int column) {
  for (const auto& [c, part] : kParts)
    if (c == column) return m.*part;
  return std::nullopt;
}

}  // namespace

StrategiesModel::StrategiesModel(QObject* parent) : ColumnTableModel(kHeadings, device_total, parent) {}

void StrategiesModel::setResult(const planner::FitResult& r) {
  beginResetModel();
  result_ = r;
  endResetModel();
}

const planner::Candidate* StrategiesModel::candidate(int row) const {
  if (row < 0 || row >= rowCount()) return nullptr;
  return &at(row);
}

QVariant StrategiesModel::cellText(int row, int column) const {
  const planner::Candidate& k = at(row);
  const auto col = static_cast<Column>(column);
  if (auto b = bytes_of(k.memory, column)) return gib_text(*b, 1);
  switch (col) {
    case strategy: {
      QString s = strategy_label(k.training);
      if (boldRow(row)) s += QStringLiteral("  (recommended)");
      return s;
    }
    case checkpointing:
      return QString::fromStdString(model::checkpointing_text(k.training));
    case offload:
      return qstr(to_string(k.training.offload));
    case fits:
      return verdict_word(k.verdict.verdict);
    case max_micro_batch:
      return QString::number(k.max_micro_batch);
    default:
      return {};
  }
}

QVariant StrategiesModel::cellValue(int row, int column) const {
  const planner::Candidate& k = at(row);
  const auto col = static_cast<Column>(column);
  if (auto b = bytes_of(k.memory, column)) return to_gib(*b);
  if (col == fits) return k.fits;
  if (col == max_micro_batch) return static_cast<double>(k.max_micro_batch);
  return {};
}

QVariant StrategiesModel::cellTooltip(int row, int column) const {
  if (column == fits) return qstr(at(row).verdict.reason);
  return columnTooltip(column);
}

QVariant StrategiesModel::cellBrush(int row, int column) const {
  if (column == fits) return verdict_brush(at(row).verdict.verdict);
  return {};
}

// The recommended candidate stands out.
bool StrategiesModel::boldRow(int row) const {
  return result_.recommended == static_cast<std::size_t>(row);
}

}  // namespace trainplan::gui
