#pragma once

#include <QStringList>
#include <vector>

#include "models/table_model.hpp"
#include "session.hpp"

namespace trainplan::gui {

// Configurations side by side: the current one and the pinned ones.
class CompareModel : public TableModel {
  Q_OBJECT
 public:
  using TableModel::TableModel;
  void setEvaluations(const std::vector<const Evaluation*>& configs, const QStringList& names);

 protected:
  [[nodiscard]] int rows() const override { return static_cast<int>(rows_.size()); }
  [[nodiscard]] int columns() const override { return static_cast<int>(columns_.size()); }
  [[nodiscard]] QVariant columnTitle(int column) const override { return columns_[column]; }
  [[nodiscard]] QVariant columnTooltip(int /*column*/) const override { return {}; }
  [[nodiscard]] QVariant rowTitle(int row) const override { return at(row).label; }
  [[nodiscard]] QVariant rowTooltip(int row) const override;
  [[nodiscard]] QVariant cellText(int row, int column) const override;
  [[nodiscard]] QVariant cellTooltip(int row, int /*column*/) const override { return rowTooltip(row); }

 private:
  struct Row {
    QString label;
    QString tooltip;
    std::vector<QString> texts;
  };
  [[nodiscard]] const Row& at(int row) const { return rows_[static_cast<std::size_t>(row)]; }
  QStringList columns_;
  std::vector<Row> rows_;
};

}  // namespace trainplan::gui
