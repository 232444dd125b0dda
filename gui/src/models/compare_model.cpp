#include "models/compare_model.hpp"

#include <optional>
#include <utility>

#include "trainplan/model/partial.hpp"

namespace trainplan::gui {

void CompareModel::setEvaluations(const std::vector<const Evaluation*>& configs,
                                  const QStringList& names) {
  using Text = QString (*)(const Evaluation&);
  struct Def {
    const char* label;
    std::optional<Term> term;
    Text text;
  };
  static constexpr Def kDefs[] = {
      {"model", std::nullopt, [](const Evaluation& e) { return qstr(e.arch.name); }},
      {"parameters", std::nullopt, [](const Evaluation& e) { return count_text(e.params.total); }},
      {"trainable", std::nullopt, [](const Evaluation& e) { return count_text(e.trainable); }},
      {"cluster", std::nullopt, [](const Evaluation& e) { return e.cluster_text(); }},
      {"method", std::nullopt,
       [](const Evaluation& e) { return qstr(to_string(e.estimate.training.method)); }},
      {"precision", std::nullopt,
       [](const Evaluation& e) { return qstr(to_string(e.estimate.training.precision)); }},
      {"optimizer", std::nullopt,
       [](const Evaluation& e) { return qstr(to_string(e.estimate.training.optimizer)); }},
      {"strategy", std::nullopt,
       [](const Evaluation& e) { return strategy_label(e.estimate.training); }},
      {"TP x PP x DP", std::nullopt,
       [](const Evaluation& e) {
         return QStringLiteral("%1 x %2 x %3")
             .arg(e.estimate.layout.tp)
             .arg(e.estimate.layout.pp)
             .arg(e.estimate.layout.dp);
       }},
      {"micro-batch x accumulation", std::nullopt,
       [](const Evaluation& e) {
         return QStringLiteral("%1 x %2")
             .arg(e.estimate.training.micro_batch)
             .arg(e.estimate.training.grad_accum);
       }},
      {"sequence length", std::nullopt,
       [](const Evaluation& e) { return QString::number(e.estimate.training.seq); }},
      {"checkpointing", std::nullopt,
       [](const Evaluation& e) { return QString::fromStdString(model::checkpointing_text(e.estimate.training)); }},
      {"offload", std::nullopt,
       [](const Evaluation& e) { return qstr(to_string(e.estimate.training.offload)); }},
      {"GiB / GPU", Term::device_total,
       [](const Evaluation& e) { return gib_text(e.estimate.memory.device_total, 2); }},
      {"usable", Term::usable, [](const Evaluation& e) { return gib_text(e.usable(), 2); }},
      {"verdict", Term::device_total,
       [](const Evaluation& e) { return verdict_word(e.estimate.verdict.verdict); }},
      {"largest micro-batch", Term::max_micro_batch,
       [](const Evaluation& e) { return QString::number(e.estimate.max_micro_batch); }},
      {"step time", Term::step,
       [](const Evaluation& e) { return seconds_text(e.estimate.time.step); }},
      {"tokens/s", Term::tokens_per_s,
       [](const Evaluation& e) {
         return rate_text(e.estimate.throughput.tokens_per_s, QStringLiteral("tokens/s"));
       }},
      {"MFU", Term::mfu,
       [](const Evaluation& e) { return percent_text(e.estimate.throughput.mfu); }},
      {"communication / GPU / step", Term::communication_bytes,
       [](const Evaluation& e) { return bytes_text(e.estimate.communication_bytes()); }},
      {"host memory per node", Term::host,
       [](const Evaluation& e) { return gib_text(e.estimate.memory.host, 1); }},
  };
  beginResetModel();
  columns_ = names;
  rows_.clear();
  for (const Def& d : kDefs) {
    Row r{QString::fromUtf8(d.label), d.term ? term_tooltip(*d.term) : QString(), {}};
    for (const Evaluation* e : configs) r.texts.push_back(d.text(*e));
    rows_.push_back(std::move(r));
  }
  endResetModel();
}

QVariant CompareModel::rowTooltip(int row) const {
  const Row& r = at(row);
  return r.tooltip.isEmpty() ? QVariant() : QVariant(r.tooltip);
}

QVariant CompareModel::cellText(int row, int column) const {
  const Row& r = at(row);
  const auto c = static_cast<std::size_t>(column);
  return c < r.texts.size() ? r.texts[c] : QString();
}

}  // namespace trainplan::gui
