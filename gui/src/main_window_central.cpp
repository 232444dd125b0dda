// The centre of the window: the charts, the plan search and the tables, each fed by its model.
#include <QAction>
#include <QFrame>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>
#include <QtCharts/QScatterSeries>
#include <initializer_list>
#include <utility>

#include "charts.hpp"
#include "main_window.hpp"

namespace trainplan::gui {
namespace {

QTableView* table(const char* name, QAbstractItemModel* model) {
  auto* t = new QTableView;
  t->setObjectName(QString::fromUtf8(name));
  t->setModel(model);
  t->setAlternatingRowColors(true);
  t->setSelectionBehavior(QAbstractItemView::SelectRows);
  t->setSelectionMode(QAbstractItemView::SingleSelection);
  t->setTabKeyNavigation(false);
  t->horizontalHeader()->setStretchLastSection(true);
  t->verticalHeader()->setDefaultSectionSize(t->fontMetrics().height() + 6);
  t->setWordWrap(false);
  return t;
}

QChartView* chart_view(const char* name, const QString& accessible) {
  auto* chart = new QChart;
  auto* v = new QChartView(chart);
  v->setObjectName(QString::fromUtf8(name));
  v->setRenderHint(QPainter::Antialiasing);
  v->setFocusPolicy(Qt::StrongFocus);
  v->setAccessibleName(accessible);
  v->setMinimumSize(320, 220);
  return v;
}

// Panes side by side, each with its share of what the window gains.
QSplitter* splitter(Qt::Orientation o, const char* name,
                    std::initializer_list<std::pair<QWidget*, int>> panes) {
  auto* s = new QSplitter(o);
  s->setObjectName(QString::fromUtf8(name));
  int i = 0;
  for (const auto& [pane, stretch] : panes) {
    s->addWidget(pane);
    s->setStretchFactor(i++, stretch);
  }
  return s;
}

// A tab page: a row of controls above what it controls.
QWidget* page(QHBoxLayout* controls, QWidget* content) {
  auto* p = new QWidget;
  auto* v = new QVBoxLayout(p);
  v->setContentsMargins(0, 4, 0, 0);
  v->addLayout(controls);
  v->addWidget(content, 1);
  return p;
}

}  // namespace

// ---- Building ---------------------------------------------------------------------------------

QWidget* MainWindow::buildCentral() {
  QFrame* banner = buildBanner();
  QWidget* charts = buildCharts();
  QWidget* tables = buildTables();
  auto* central = new QWidget;
  auto* v = new QVBoxLayout(central);
  v->setContentsMargins(6, 6, 6, 6);
  v->addWidget(banner);
  v->addWidget(splitter(Qt::Vertical, "mainSplitter", {{charts, 3}, {tables, 2}}), 1);
  return central;
}

// The memory chart beside the tabs of the others.
QWidget* MainWindow::buildCharts() {
  memory_view_ = chart_view("memoryChart", QStringLiteral("Memory per GPU by component"));
  time_view_ = chart_view("stepTimeChart", QStringLiteral("Step time breakdown"));
  sweep_view_ = chart_view("sweepChart", QStringLiteral("Memory and throughput sweep"));
  plans_view_ =
      chart_view("plansChart", QStringLiteral("Plan search: memory against tokens per second"));
  for (QChartView* cv : {memory_view_, time_view_, sweep_view_, plans_view_}) {
    cv->setContextMenuPolicy(Qt::ActionsContextMenu);
    const QString name = cv == memory_view_  ? QStringLiteral("memory")
                         : cv == time_view_  ? QStringLiteral("time")
                         : cv == sweep_view_ ? QStringLiteral("sweep")
                                             : QStringLiteral("plans");
    auto* save = new QAction(QStringLiteral("Save chart as PNG or SVG…"), cv);
    connect(save, &QAction::triggered, this, [this, name] { exportChartDialog(name); });
    cv->addAction(save);
  }

  QWidget* plans_page = buildPlansPage();
  chart_tabs_ = new QTabWidget;
  chart_tabs_->setObjectName(QStringLiteral("chartTabs"));
  chart_tabs_->addTab(time_view_, QStringLiteral("Step time"));
  chart_tabs_->addTab(sweep_view_, QStringLiteral("Sweep"));
  chart_tabs_->addTab(plans_page, QStringLiteral("Plan search"));
  QSplitter* top = splitter(Qt::Horizontal, "chartSplitter", {{memory_view_, 4}, {chart_tabs_, 5}});
  top->setSizes({400, 500});
  return top;
}

// The plan search: its button, its progress, and the chart of what it found.
QWidget* MainWindow::buildPlansPage() {
  auto* search_row = new QHBoxLayout;
  search_button_ = new QPushButton(QStringLiteral("Run search"));
  search_button_->setObjectName(QStringLiteral("runSearch"));
  search_button_->setToolTip(
      QStringLiteral("Search data, tensor and pipeline degrees, sharding, micro-batch, "
                     "checkpointing and offload for this model and cluster (Ctrl+R). "
                     "Click a point, or press Enter on a row of the Plans table, to "
                     "load that plan."));
  connect(search_button_, &QPushButton::clicked, this, [this] { session_.startSearch(); });
  cancel_button_ = new QPushButton(QStringLiteral("Cancel"));
  cancel_button_->setEnabled(false);
  connect(cancel_button_, &QPushButton::clicked, this, [this] { session_.cancelSearch(); });
  search_progress_ = new QProgressBar;
  search_progress_->setObjectName(QStringLiteral("searchProgress"));
  search_progress_->setVisible(false);
  search_label_ = new QLabel;
  search_label_->setObjectName(QStringLiteral("searchLabel"));
  search_label_->setWordWrap(true);
  search_row->addWidget(search_button_);
  search_row->addWidget(cancel_button_);
  search_row->addWidget(search_progress_, 1);
  search_row->addWidget(search_label_, 2);
  return page(search_row, plans_view_);
}

QWidget* MainWindow::buildTables() {
  table_tabs_ = new QTabWidget;
  table_tabs_->setObjectName(QStringLiteral("tableTabs"));
  table_tabs_->addTab(table("memoryTable", &memory_model_), QStringLiteral("Memory"));
  table_tabs_->addTab(table("stepTimeTable", &time_model_), QStringLiteral("Step time"));
  table_tabs_->addTab(table("communicationTable", &comm_model_), QStringLiteral("Communication"));
  auto* strategies = table("strategiesTable", &strategies_model_);
  connect(strategies, &QTableView::activated, this, &MainWindow::loadStrategy);
  table_tabs_->addTab(strategies, QStringLiteral("Strategies"));
  table_tabs_->addTab(table("sweepTable", &sweep_model_), QStringLiteral("Sweep"));
  auto* plans = table("plansTable", &plans_model_);
  connect(plans, &QTableView::activated, this, [this](const QModelIndex& i) { loadPlan(i.row()); });
  table_tabs_->addTab(plans, QStringLiteral("Plans"));
  table_tabs_->addTab(buildComparePage(), QStringLiteral("Compare"));
  return table_tabs_;
}

// The pins and the table that sets them side by side.
QWidget* MainWindow::buildComparePage() {
  auto* pin_row = new QHBoxLayout;
  auto* pin = new QPushButton(QStringLiteral("Pin current"));
  pin->setObjectName(QStringLiteral("pinCurrent"));
  pin->setToolTip(
      QStringLiteral("Keep this configuration to compare side by side, in the charts too (Ctrl+P); "
                     "up to three."));
  connect(pin, &QPushButton::clicked, this, [this] { pin_action_->trigger(); });
  auto* unpin = new QPushButton(QStringLiteral("Unpin last"));
  connect(unpin, &QPushButton::clicked, this, [this] {
    if (!session_.pins().empty()) session_.unpin(session_.pins().size() - 1);
  });
  auto* clear = new QPushButton(QStringLiteral("Clear pins"));
  connect(clear, &QPushButton::clicked, this, [this] { session_.clearPins(); });
  pin_row->addWidget(pin);
  pin_row->addWidget(unpin);
  pin_row->addWidget(clear);
  pin_row->addStretch(1);
  return page(pin_row, table("compareTable", &compare_model_));
}

// ---- Session -> view --------------------------------------------------------------------------

void MainWindow::refreshCharts() {
  const QPalette pal = palette();
  charts::build_memory(memory_view_->chart(), memory_model_, pal);
  charts::build_step_time(time_view_->chart(), time_model_, pal);
  charts::build_sweep(sweep_view_->chart(), sweep_model_, pal);
  charts::build_plans(plans_view_->chart(), plans_model_, loaded_plan_, pal);
  for (QAbstractSeries* s : plans_view_->chart()->series())
    if (auto* scatter = qobject_cast<QScatterSeries*>(s);
        scatter && scatter->property(charts::kPlanRowsProperty).isValid())
      connect(scatter, &QScatterSeries::clicked, this, &MainWindow::planClicked);
  if (!session_.current()) {
    const QString why = QStringLiteral("No estimate: see the message above.");
    for (QChartView* v : {memory_view_, time_view_, sweep_view_}) v->chart()->setTitle(why);
  }
}

// ---- Search -----------------------------------------------------------------------------------

void MainWindow::searchStarted() {
  search_started_.start();
  if (!search_clock_) {
    search_clock_ = new QTimer(this);
    search_clock_->setInterval(100);
    connect(search_clock_, &QTimer::timeout, this, [this] {
      search_label_->setText(
          QStringLiteral("Searching… %1 s")
              .arg(static_cast<double>(search_started_.elapsed()) / 1e3, 0, 'f', 1));
    });
  }
  search_clock_->start();
  search_button_->setEnabled(false);
  search_action_->setEnabled(false);
  cancel_button_->setEnabled(true);
  cancel_action_->setEnabled(true);
  search_progress_->setRange(0, 0);
  search_progress_->setVisible(true);
  search_label_->setText(QStringLiteral("Searching…"));
}

void MainWindow::searchProgress(int done, int total) {
  search_progress_->setRange(0, total);
  search_progress_->setValue(done);
}

void MainWindow::searchFinished() {
  if (search_clock_) search_clock_->stop();
  search_button_->setEnabled(true);
  search_action_->setEnabled(true);
  cancel_button_->setEnabled(false);
  cancel_action_->setEnabled(false);
  search_progress_->setVisible(false);
  plans_model_.setPlans(session_.plans(), session_.plansUsable());
  loaded_plan_.reset();
  refreshSearchState();
  refreshBanner();
  if (auto* t = findChild<QTableView*>(QStringLiteral("plansTable"))) t->resizeColumnsToContents();
  refreshCharts();
}

void MainWindow::planClicked(const QPointF& point) {
  auto* series = qobject_cast<QScatterSeries*>(sender());
  if (!series) return;
  const QVariantList rows = series->property(charts::kPlanRowsProperty).toList();
  const QList<QPointF> points = series->points();
  for (qsizetype i = 0; i < points.size() && i < rows.size(); ++i) {
    if (points[i] == point) {
      loadPlan(rows[i].toInt());
      return;
    }
  }
}

void MainWindow::refreshSearchState() {
  if (session_.searching()) return;
  const QStringList why = session_.plansStaleBecause();
  plans_model_.setStale(why);
  if (!why.isEmpty())
    search_label_->setText(QStringLiteral("Stale: these plans answer an earlier request (%1). Run the search "
                                          "again (Ctrl+R).")
                               .arg(why.join(QStringLiteral("; "))));
  else if (!session_.plans().empty() || !session_.searchMessage().isEmpty())
    search_label_->setText(session_.searchMessage().isEmpty()
                               ? QStringLiteral("%1 plans; bold: the Pareto front; click one to load it.")
                                     .arg(session_.plans().size())
                               : session_.searchMessage());
}

void MainWindow::loadPlan(int i) {
  const std::optional<int> before = loaded_plan_;
  loaded_plan_ = i;  // ringed in the chart the load redraws
  if (!session_.loadPlan(static_cast<std::size_t>(i))) {
    loaded_plan_ = before;
    statusBar()->showMessage(QStringLiteral("Not loaded: these plans answer an earlier request (%1). Run the "
                                            "search again (Ctrl+R).")
                                 .arg(session_.plansStaleBecause().join(QStringLiteral("; "))),
                             8000);
    return;
  }
  statusBar()->showMessage(QStringLiteral("Loaded plan #%1.").arg(i + 1), 5000);
}

}  // namespace trainplan::gui
