#pragma once

#include <QStringList>
#include <optional>
#include <vector>

#include "models/table_model.hpp"
#include "session.hpp"

namespace trainplan::gui {

// Parts of a whole by configuration: one row per part (then the totals and context rows), one
// column per configuration (the current one, then the pinned ones).
class BreakdownModel : public TableModel {
  Q_OBJECT
 public:
  struct Row {
    Term term;
    QString label;
    bool part = false;           // stacked in the chart
    std::vector<double> values;  // per column, in the model's unit
    std::vector<QString> texts;  // per column, as displayed
    QString tooltip;             // defaults to the term's
    std::vector<planner::Verdict> verdicts{};  // per column, for the verdict row: coloured by it
  };
  using TableModel::TableModel;

  [[nodiscard]] int partRows() const;  // the part rows come first
  [[nodiscard]] std::optional<int> rowOf(Term t) const;
  [[nodiscard]] Term term(int row) const { return rows_[static_cast<std::size_t>(row)].term; }
  [[nodiscard]] double value(int row, int column) const;
  [[nodiscard]] const QStringList& columnTitles() const { return columns_; }
  // The verdict row's verdict of a column (the memory table's), if the model has one.
  [[nodiscard]] std::optional<planner::Verdict> verdict(int column) const;

 protected:
  void reset(QStringList columns, QStringList column_tooltips, std::vector<Row> rows);
  // A row of `term`: `text_of` and `value_of` each configuration.
  template <class Text, class Value>
  [[nodiscard]] static Row configRow(const std::vector<const Evaluation*>& configs, Term term, bool part,
                                     Text text_of, Value value_of) {
    Row r{term, term_label(term), part, {}, {}, {}};
    for (const Evaluation* e : configs) {
      r.values.push_back(value_of(*e));
      r.texts.push_back(text_of(*e));
    }
    return r;
  }
  // What each column is: "llama-2-7b on 8x A100-80GB: FSDP full shard · mb 4 · seq 4096".
  [[nodiscard]] static QStringList configTooltips(const std::vector<const Evaluation*>& configs);

  [[nodiscard]] int rows() const override { return static_cast<int>(rows_.size()); }
  [[nodiscard]] int columns() const override { return static_cast<int>(columns_.size()); }
  [[nodiscard]] QVariant columnTitle(int column) const override { return columns_[column]; }
  [[nodiscard]] QVariant columnTooltip(int column) const override;
  [[nodiscard]] QVariant rowTitle(int row) const override { return at(row).label; }
  [[nodiscard]] QVariant rowTooltip(int row) const override;
  [[nodiscard]] QVariant cellText(int row, int column) const override;
  [[nodiscard]] QVariant cellValue(int row, int column) const override;
  [[nodiscard]] QVariant cellTooltip(int row, int /*column*/) const override { return rowTooltip(row); }
  [[nodiscard]] bool rightAligned(int /*column*/) const override { return true; }
  [[nodiscard]] bool boldRow(int row) const override;
  [[nodiscard]] QVariant cellBrush(int row, int column) const override;

 private:
  [[nodiscard]] const Row& at(int row) const { return rows_[static_cast<std::size_t>(row)]; }
  QStringList columns_;
  QStringList column_tooltips_;
  std::vector<Row> rows_;
};

}  // namespace trainplan::gui
