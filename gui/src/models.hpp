#pragma once
// Table models over the library's result structs. Each model keeps a copy of what it shows, so it
// stays valid while the session moves on; the charts read these same models.

#include <QAbstractTableModel>
#include <QStringList>
#include <optional>
#include <vector>

#include "display.hpp"
#include "session.hpp"

namespace trainplan::gui {

// The raw number behind a cell (GiB, seconds, tokens/s, ...), for the charts and the tests.
inline constexpr int kValueRole = Qt::UserRole + 1;

// Parts of a whole by configuration: one row per part (then the totals and context rows), one
// column per configuration (the current one, then the pinned ones).
class BreakdownModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  struct Row {
    Term term;
    QString label;
    bool part = false;           // stacked in the chart
    std::vector<double> values;  // per column, in the model's unit
    std::vector<QString> texts;  // per column, as displayed
    QString tooltip;             // defaults to the term's
    bool verdict = false;        // values are 1 (fits) or 0 (out of memory): coloured
  };
  using QAbstractTableModel::QAbstractTableModel;

  [[nodiscard]] int rowCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] int columnCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] QVariant data(const QModelIndex& index, int role) const override;
  [[nodiscard]] QVariant headerData(int section, Qt::Orientation o, int role) const override;

  [[nodiscard]] int partRows() const;  // the part rows come first
  [[nodiscard]] std::optional<int> rowOf(Term t) const;
  [[nodiscard]] Term term(int row) const { return rows_[static_cast<std::size_t>(row)].term; }
  [[nodiscard]] double value(int row, int column) const;
  [[nodiscard]] const QStringList& columnTitles() const { return columns_; }

 protected:
  void reset(QStringList columns, QStringList column_tooltips, std::vector<Row> rows);

 private:
  QStringList columns_;
  QStringList column_tooltips_;
  std::vector<Row> rows_;
};

// Memory per GPU by component (GiB), against the usable capacity.
class MemoryModel : public BreakdownModel {
  Q_OBJECT
 public:
  using BreakdownModel::BreakdownModel;
  void setEvaluations(const std::vector<const Evaluation*>& configs, const QStringList& names);
};

// Step time by part (seconds), then throughput.
class StepTimeModel : public BreakdownModel {
  Q_OBJECT
 public:
  using BreakdownModel::BreakdownModel;
  void setEvaluations(const std::vector<const Evaluation*>& configs, const QStringList& names);
};

// Communication per collective and link tier of one configuration.
class CommunicationModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { collective, purpose, tier, bytes, time, exposed, kColumns };
  using QAbstractTableModel::QAbstractTableModel;
  void setEstimate(const planner::Estimate* e);
  [[nodiscard]] int rowCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] int columnCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] QVariant data(const QModelIndex& index, int role) const override;
  [[nodiscard]] QVariant headerData(int section, Qt::Orientation o, int role) const override;

 private:
  std::vector<planner::CommunicationItem> items_;
};

// planner::fit's candidates: every strategy x checkpointing x offload with the other options as
// set.
class StrategiesModel : public QAbstractTableModel {
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
  using QAbstractTableModel::QAbstractTableModel;
  void setResult(const planner::FitResult& r);
  [[nodiscard]] const planner::Candidate* candidate(int row) const;
  [[nodiscard]] int rowCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] int columnCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] QVariant data(const QModelIndex& index, int role) const override;
  [[nodiscard]] QVariant headerData(int section, Qt::Orientation o, int role) const override;

 private:
  planner::FitResult result_;
};

// Memory and throughput along the sweep axis.
class SweepModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { x, device_total, fits, step, tokens_per_s, mfu, kColumns };
  using QAbstractTableModel::QAbstractTableModel;
  void setSweep(const Sweep& s);
  [[nodiscard]] const Sweep& sweep() const { return sweep_; }
  [[nodiscard]] int rowCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] int columnCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] QVariant data(const QModelIndex& index, int role) const override;
  [[nodiscard]] QVariant headerData(int section, Qt::Orientation o, int role) const override;

 private:
  Sweep sweep_;
};

// The plans of the search, best first.
class PlansModel : public QAbstractTableModel {
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
  using QAbstractTableModel::QAbstractTableModel;
  void setPlans(const std::vector<PlanPoint>& plans, Bytes usable = {});
  [[nodiscard]] const std::vector<PlanPoint>& plans() const { return plans_; }
  [[nodiscard]] Bytes usable() const { return usable_; }
  [[nodiscard]] int rowCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] int columnCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] QVariant data(const QModelIndex& index, int role) const override;
  [[nodiscard]] QVariant headerData(int section, Qt::Orientation o, int role) const override;

 private:
  std::vector<PlanPoint> plans_;
  Bytes usable_;
};

// Configurations side by side: the current one and the pinned ones.
class CompareModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  using QAbstractTableModel::QAbstractTableModel;
  void setEvaluations(const std::vector<const Evaluation*>& configs, const QStringList& names);
  [[nodiscard]] int rowCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] int columnCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] QVariant data(const QModelIndex& index, int role) const override;
  [[nodiscard]] QVariant headerData(int section, Qt::Orientation o, int role) const override;

 private:
  struct Row {
    QString label;
    QString tooltip;
    std::vector<QString> texts;
  };
  QStringList columns_;
  std::vector<Row> rows_;
};

}  // namespace trainplan::gui
