#pragma once

#include <QStringList>
#include <vector>

#include "models/breakdown_model.hpp"

namespace trainplan::gui {

// Step time by part (seconds), then throughput.
class StepTimeModel : public BreakdownModel {
  Q_OBJECT
 public:
  using BreakdownModel::BreakdownModel;
  void setEvaluations(const std::vector<const Evaluation*>& configs, const QStringList& names);

 private:
  // Exposed communication by kind: one row per (purpose, collective, tier) any configuration has.
  static void addCommunicationRows(const std::vector<const Evaluation*>& configs, std::vector<Row>& rows);
  // Step time, throughput, utilisation and the global batch.
  static void addThroughputRows(const std::vector<const Evaluation*>& configs, std::vector<Row>& rows);
};

}  // namespace trainplan::gui
