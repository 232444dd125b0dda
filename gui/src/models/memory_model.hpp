#pragma once

#include <QStringList>
#include <vector>

#include "models/breakdown_model.hpp"

namespace trainplan::gui {

// Memory per GPU by component (GiB), against the usable capacity.
class MemoryModel : public BreakdownModel {
  Q_OBJECT
 public:
  using BreakdownModel::BreakdownModel;
  void setEvaluations(const std::vector<const Evaluation*>& configs, const QStringList& names);
};

}  // namespace trainplan::gui
