#pragma once

#include "models/table_model.hpp"
#include "trainplan/planner/fit.hpp"

namespace trainplan::gui {

// planner::fit's candidates: every strategy x checkpointing x offload with the other options as
// set.
class StrategiesModel : public ColumnTableModel {
  Q_OBJECT
 public:
  enum Column {
    strategy,
    checkpointing,
    offload,
    fits,
    device_total,
    weights,
    gradients,
    optimizer,
    activations,
    buffers,
    overhead,
    max_micro_batch,
    kColumns
  };
  explicit StrategiesModel(QObject* parent = nullptr);
  void setResult(const planner::FitResult& r);
  [[nodiscard]] const planner::Candidate* candidate(int row) const;

 protected:
  [[nodiscard]] int rows() const override { return static_cast<int>(result_.candidates.size()); }
  [[nodiscard]] QVariant cellText(int row, int column) const override;
  [[nodiscard]] QVariant cellValue(int row, int column) const override;
  [[nodiscard]] QVariant cellTooltip(int row, int column) const override;
  [[nodiscard]] QVariant cellBrush(int row, int column) const override;
  [[nodiscard]] bool boldRow(int row) const override;

 private:
  [[nodiscard]] const planner::Candidate& at(int row) const {
    return result_.candidates[static_cast<std::size_t>(row)];
  }
  planner::FitResult result_;
};

}  // namespace trainplan::gui
