#pragma once

#include <vector>

#include "models/table_model.hpp"
#include "trainplan/planner/estimate.hpp"

namespace trainplan::gui {

// Communication per collective and link tier of one configuration.
class CommunicationModel : public ColumnTableModel {
  Q_OBJECT
 public:
  enum Column { collective, purpose, tier, source, bytes, time, exposed, kColumns };
  explicit CommunicationModel(QObject* parent = nullptr);
  void setEstimate(const planner::Estimate* e);

 protected:
  [[nodiscard]] int rows() const override { return static_cast<int>(items_.size()); }
  [[nodiscard]] QVariant cellText(int row, int column) const override;
  [[nodiscard]] QVariant cellValue(int row, int column) const override;

 private:
  std::vector<planner::CommunicationItem> items_;
};

}  // namespace trainplan::gui
