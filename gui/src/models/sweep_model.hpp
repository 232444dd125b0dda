#pragma once

#include "models/table_model.hpp"
#include "session.hpp"

namespace trainplan::gui {

// Memory and throughput along the sweep axis.
class SweepModel : public ColumnTableModel {
  Q_OBJECT
 public:
  enum Column {
    x,  // the swept value: micro-batch or sequence length
    device_total,
    fits,
    step,
    tokens_per_s,
    mfu,
    kColumns
  };
  explicit SweepModel(QObject* parent = nullptr);
  void setSweep(const Sweep& s);
  [[nodiscard]] const Sweep& sweep() const { return sweep_; }

 protected:
  [[nodiscard]] int rows() const override { return static_cast<int>(sweep_.points.size()); }
  [[nodiscard]] QVariant columnTitle(int column) const override;
  [[nodiscard]] QVariant columnTooltip(int column) const override;
  [[nodiscard]] QVariant cellText(int row, int column) const override;
  [[nodiscard]] QVariant cellValue(int row, int column) const override;
  [[nodiscard]] QVariant cellBrush(int row, int column) const override;
  [[nodiscard]] bool boldRow(int row) const override;

 private:
  Sweep sweep_;
};

}  // namespace trainplan::gui
