#include "models/table_model.hpp"

#include <QBrush>
#include <QFont>

#include "trainplan/reports/verdict.hpp"

namespace trainplan::gui {

QString verdict_word(planner::Verdict v) { return qstr(reports::verdict_look(v).word); }

QVariant verdict_brush(planner::Verdict v) { return QBrush(QColor(QRgb(reports::verdict_look(v).rgb))); }

int TableModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : rows(); }

int TableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : columns();
}

QVariant TableModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const int row = index.row();
  const int column = index.column();
  switch (role) {
    case Qt::DisplayRole:
      return cellText(row, column);
    case kValueRole:
      return cellValue(row, column);
    case Qt::ToolTipRole:
      return cellTooltip(row, column);
    case Qt::ForegroundRole:
      return cellBrush(row, column);
    case Qt::TextAlignmentRole:
      if (!rightAligned(column)) return {};
      return QVariant::fromValue(Qt::Alignment(Qt::AlignRight | Qt::AlignVCenter));
    case Qt::FontRole: {
      if (!boldRow(row)) return {};
      QFont f;
      f.setBold(true);
      return f;
    }
    default:
      return {};
  }
}

QVariant TableModel::headerData(int section, Qt::Orientation o, int role) const {
  if (role != Qt::DisplayRole && role != Qt::ToolTipRole) return {};
  const bool horizontal = o == Qt::Horizontal;
  if (section < 0 || section >= (horizontal ? columns() : rows())) return {};
  if (horizontal) return role == Qt::DisplayRole ? columnTitle(section) : columnTooltip(section);
  return role == Qt::DisplayRole ? rowTitle(section) : rowTooltip(section);
}

QVariant ColumnTableModel::columnTitle(int column) const {
  const Heading& h = headings_[static_cast<std::size_t>(column)];
  return h.title ? QString::fromUtf8(h.title) : term_label(*h.term);
}

QVariant ColumnTableModel::columnTooltip(int column) const {
  const Heading& h = headings_[static_cast<std::size_t>(column)];
  QString tip = h.text ? QString::fromUtf8(h.text) : QString();
  if (h.term) tip += term_tooltip(*h.term);
  return tip;
}

}  // namespace trainplan::gui
