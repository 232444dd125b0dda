#include "models/communication_model.hpp"

namespace trainplan::gui {
namespace {

constexpr ColumnTableModel::Heading kHeadings[] = {
    {Term::collective},
    {"purpose",
     "What the collective moves: gradients, gathered parameters, tensor-parallel activations, "
     "pipeline activations."},
    {Term::link_tier},
    {"from",
     "What priced the collective: profile, a hardware profile's measured curve or its collective "
     "model (docs/calibration.md); datasheet, the links' catalogue rates."},
    {"bytes / GPU / step", Term::communication_bytes},
    {"time / step", Term::communication_exposed,
     "<p>Total time of these collectives in one optimizer step.</p>"},
    {"exposed", Term::communication_exposed},
};
static_assert(std::size(kHeadings) == CommunicationModel::kColumns);

}  // namespace

CommunicationModel::CommunicationModel(QObject* parent)
    : ColumnTableModel(kHeadings, bytes, parent) {}

void CommunicationModel::setEstimate(const planner::Estimate* e) {
  beginResetModel();
  items_ = e ? e->communication : std::vector<planner::CommunicationItem>{};
  endResetModel();
}

QVariant CommunicationModel::cellText(int row, int column) const {
  const planner::CommunicationItem& it = items_[static_cast<std::size_t>(row)];
  switch (static_cast<Column>(column)) {
    case collective:
      return qstr(it.collective);
    case purpose:
      return qstr(it.purpose);
    case tier:
      return qstr(it.tier);
    case source:
      return qstr(it.source);
    case bytes:
      return bytes_text(it.bytes);
    case time:
    case exposed:
      return seconds_text(column == time ? it.time : it.exposed);
    case kColumns:
      break;
  }
  return {};
}

QVariant CommunicationModel::cellValue(int row, int column) const {
  const planner::CommunicationItem& it = items_[static_cast<std::size_t>(row)];
  switch (static_cast<Column>(column)) {
    case bytes:
      return it.bytes.value();
    case time:
      return it.time.value();
    case exposed:
      return it.exposed.value();
    case collective:
    case purpose:
    case tier:
    case source:
    case kColumns:
      return {};
  }
  return {};
}

}  // namespace trainplan::gui
