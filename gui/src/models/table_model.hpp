#pragma once
// What every table model of the window shares: the roles a cell answers (the text, the raw number
// behind it, a tooltip, the alignment, bold rows, a colour) and the headers, answered once here.
// A model says how many rows and columns it has and what each cell and heading holds.

#include <QAbstractTableModel>
#include <QString>
#include <QVariant>
#include <optional>
#include <span>

#include "display.hpp"
#include "trainplan/planner/memory.hpp"

namespace trainplan::gui {

// The raw number behind a cell (GiB, seconds, tokens/s, ...), for the charts and the tests.
inline constexpr int kValueRole = Qt::UserRole + 1;

// The verdict's word and colour in a cell (reports::verdict_look: the CLI's words, the banner's colour).
[[nodiscard]] QString verdict_word(planner::Verdict v);  // "fits", "tight", "does not fit"
[[nodiscard]] QVariant verdict_brush(planner::Verdict v);  // green, amber or red

class TableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  using QAbstractTableModel::QAbstractTableModel;

  [[nodiscard]] int rowCount(const QModelIndex& parent = {}) const final;
  [[nodiscard]] int columnCount(const QModelIndex& parent = {}) const final;
  [[nodiscard]] QVariant data(const QModelIndex& index, int role) const final;
  [[nodiscard]] QVariant headerData(int section, Qt::Orientation o, int role) const final;

 protected:
  [[nodiscard]] virtual int rows() const = 0;
  [[nodiscard]] virtual int columns() const = 0;
  [[nodiscard]] virtual QVariant columnTitle(int column) const = 0;
  [[nodiscard]] virtual QVariant columnTooltip(int column) const = 0;
  // The vertical header: the row's number unless the model names its rows.
  [[nodiscard]] virtual QVariant rowTitle(int row) const { return row + 1; }
  [[nodiscard]] virtual QVariant rowTooltip(int /*row*/) const { return {}; }

  [[nodiscard]] virtual QVariant cellText(int row, int column) const = 0;
  [[nodiscard]] virtual QVariant cellValue(int /*row*/, int /*column*/) const { return {}; }
  // A cell explains its column unless the model knows better.
  [[nodiscard]] virtual QVariant cellTooltip(int /*row*/, int column) const { return columnTooltip(column); }
  [[nodiscard]] virtual QVariant cellBrush(int /*row*/, int /*column*/) const { return {}; }
  [[nodiscard]] virtual bool rightAligned(int /*column*/) const { return false; }
  [[nodiscard]] virtual bool boldRow(int /*row*/) const { return false; }
};

// A table of records under a fixed list of columns, each heading a title and a tooltip: `text`
// (rich), then the term's explanation.
class ColumnTableModel : public TableModel {
  Q_OBJECT
 public:
  struct Heading {
    const char* title = nullptr;  // none: the term's label
    std::optional<Term> term;
    const char* text = nullptr;
    constexpr Heading(Term t) : term(t) {}  // implicit: a table row of one term
    constexpr Heading(const char* label, Term t, const char* explanation = nullptr)
        : title(label), term(t), text(explanation) {}
    constexpr Heading(const char* label, const char* explanation) : title(label), text(explanation) {}
  };
  // `headings` outlives the model (a static table); cells right-aligned from `first_number` on.
  ColumnTableModel(std::span<const Heading> headings, int first_number, QObject* parent = nullptr)
      : TableModel(parent), headings_(headings), first_number_(first_number) {}

 protected:
  [[nodiscard]] int columns() const override { return static_cast<int>(headings_.size()); }
  [[nodiscard]] QVariant columnTitle(int column) const override;
  [[nodiscard]] QVariant columnTooltip(int column) const override;
  [[nodiscard]] bool rightAligned(int column) const override { return column >= first_number_; }

 private:
  std::span<const Heading> headings_;
  int first_number_;
};

}  // namespace trainplan::gui
