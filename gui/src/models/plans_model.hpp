#pragma once

#include <vector>

#include "models/table_model.hpp"
#include "session.hpp"

namespace trainplan::gui {

// The plans of the search, best first.
class PlansModel : public ColumnTableModel {
  Q_OBJECT
 public:
  enum Column {
    rank,
    pareto,
    strategy,
    tp,
    pp,
    dp,
    micro_batch,
    grad_accum,
    checkpointing,
    offload,
    device_total,
    tokens_per_s,
    mfu,
    step,
    kColumns
  };
  explicit PlansModel(QObject* parent = nullptr);
  void setPlans(const std::vector<PlanPoint>& plans, Bytes usable = {});
  [[nodiscard]] const std::vector<PlanPoint>& plans() const { return plans_; }
  [[nodiscard]] Bytes usable() const { return usable_; }
  // Why the plans no longer answer the window's request (Session::plansStaleBecause); empty when
  // they do. Stale plans are greyed.
  void setStale(QStringList why);
  [[nodiscard]] const QStringList& staleBecause() const { return stale_; }

 protected:
  [[nodiscard]] int rows() const override { return static_cast<int>(plans_.size()); }
  // The rank column numbers the plans: no vertical header.
  [[nodiscard]] QVariant rowTitle(int /*row*/) const override { return {}; }
  [[nodiscard]] QVariant cellText(int row, int column) const override;
  [[nodiscard]] QVariant cellValue(int row, int column) const override;
  [[nodiscard]] QVariant cellTooltip(int row, int column) const override;
  [[nodiscard]] bool boldRow(int row) const override;
  [[nodiscard]] QVariant cellBrush(int row, int column) const override;

 private:
  [[nodiscard]] const PlanPoint& at(int row) const { return plans_[static_cast<std::size_t>(row)]; }
  std::vector<PlanPoint> plans_;
  Bytes usable_;
  QStringList stale_;
};

}  // namespace trainplan::gui
