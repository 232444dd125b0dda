#include "main_window.hpp"

#include <QApplication>
#include <QCloseEvent>
#include <QDockWidget>
#include <QLabel>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>

#include "display.hpp"

namespace trainplan::gui {
namespace {

const QString kSettingsGroupWindow = QStringLiteral("window");

}  // namespace

MainWindow::MainWindow(Session& session, Options options, QWidget* parent)
    : QMainWindow(parent), session_(session), options_(options) {
  setWindowTitle(QStringLiteral("trainplan-gui"));
  setObjectName(QStringLiteral("trainplanMainWindow"));
  auto* dock = new QDockWidget(QStringLiteral("Training options"), this);
  dock->setObjectName(QStringLiteral("optionsDock"));
  dock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable);
  dock->setWidget(buildForm());
  addDockWidget(Qt::LeftDockWidgetArea, dock);
  setCentralWidget(buildCentral());
  buildActions();
  connectForm();
  connect(&session_, &Session::changed, this, &MainWindow::sessionChanged);
  connect(&session_, &Session::pinsChanged, this, &MainWindow::pinsChanged);
  connect(&session_, &Session::searchStarted, this, &MainWindow::searchStarted);
  connect(&session_, &Session::searchProgress, this, &MainWindow::searchProgress);
  connect(&session_, &Session::searchFinished, this, &MainWindow::searchFinished);
  timing_label_ = new QLabel;
  statusBar()->addPermanentWidget(timing_label_);
  resize(1280, 800);
  if (options_.remember) {
    QSettings q;
    restoreGeometry(q.value(kSettingsGroupWindow + QStringLiteral("/geometry")).toByteArray());
    restoreState(q.value(kSettingsGroupWindow + QStringLiteral("/state")).toByteArray());
  }
  syncForm(session_.settings());
  sessionChanged();
}

MainWindow::~MainWindow() {
  // Closing moves the focus, and a line edit losing it reports an edit: ignore everything from now.
  syncing_ = true;
  disconnect(&session_, nullptr, this, nullptr);
}

// ---- Session -> view --------------------------------------------------------------------------

std::vector<const Evaluation*> MainWindow::columns(QStringList* names) const {
  std::vector<const Evaluation*> out;
  if (session_.current()) {
    out.push_back(&*session_.current());
    *names << QStringLiteral("Current");
  }
  for (std::size_t i = 0; i < session_.pins().size(); ++i) {
    out.push_back(&session_.pins()[i]);
    *names << QStringLiteral("Pin %1").arg(QChar(u'A' + static_cast<char16_t>(i)));
  }
  return out;
}

void MainWindow::sessionChanged() {
  if (!syncing_) syncForm(session_.settings());
  updateEnabled();
  refreshModels();
  refreshBanner();
  refreshSearchState();
  refreshCharts();
  timing_label_->setText(
      QStringLiteral("evaluated in %1 ms").arg(session_.lastEvaluationMs(), 0, 'f', 1));
}

void MainWindow::pinsChanged() {
  refreshModels();
  refreshCharts();
  pin_action_->setEnabled(session_.pins().size() < Session::kMaxPins);
}

void MainWindow::refreshModels() {
  QStringList names;
  const std::vector<const Evaluation*> cols = columns(&names);
  memory_model_.setEvaluations(cols, names);
  time_model_.setEvaluations(cols, names);
  compare_model_.setEvaluations(cols, names);
  comm_model_.setEstimate(session_.current() ? &session_.current()->estimate : nullptr);
  strategies_model_.setResult(session_.strategies());
  sweep_model_.setSweep(session_.sweep());
  if (const auto& e = session_.current()) {
    model_info_->setMinimumHeight(0);
    model_info_->setText(
        QStringLiteral("%1: %2 parameters, %3 trainable · %4 layers · hidden %5 · %6 heads "
                       "(%7 KV) · vocab %8 · max seq %9")
            .arg(qstr(e->arch.family), count_text(e->params.total), count_text(e->trainable))
            .arg(e->arch.total_layers())
            .arg(e->arch.hidden)
            .arg(e->arch.heads)
            .arg(e->arch.kv_heads)
            .arg(e->arch.vocab)
            .arg(e->arch.max_seq));
  } else {
    // The line keeps its height: the fields below stay where the next click expects them.
    model_info_->setMinimumHeight(model_info_->height());
    model_info_->clear();
  }
  for (const char* name : {"memoryTable", "stepTimeTable", "compareTable", "strategiesTable",
                           "communicationTable", "sweepTable"})
    if (auto* t = findChild<QTableView*>(QString::fromUtf8(name))) t->resizeColumnsToContents();
}

void MainWindow::changeEvent(QEvent* event) {
  QMainWindow::changeEvent(event);
  if (event->type() == QEvent::PaletteChange || event->type() == QEvent::ApplicationPaletteChange) {
    if (banner_) {
      restyle();
      refreshCharts();
    }
  }
}

// ---- Charts and tabs by name ------------------------------------------------------------------

QChartView* MainWindow::chartView(const QString& name) const {
  if (name == QLatin1String("memory")) return memory_view_;
  if (name == QLatin1String("time")) return time_view_;
  if (name == QLatin1String("sweep")) return sweep_view_;
  if (name == QLatin1String("plans")) return plans_view_;
  return nullptr;
}

QChart* MainWindow::memoryChart() const { return memory_view_->chart(); }
QChart* MainWindow::stepTimeChart() const { return time_view_->chart(); }
QChart* MainWindow::sweepChart() const { return sweep_view_->chart(); }
QChart* MainWindow::plansChart() const { return plans_view_->chart(); }

bool MainWindow::showTableTab(const QString& name) {
  static const QStringList kNames{QStringLiteral("memory"),        QStringLiteral("time"),
                                  QStringLiteral("communication"), QStringLiteral("strategies"),
                                  QStringLiteral("sweep"),         QStringLiteral("plans"),
                                  QStringLiteral("compare")};
  const qsizetype i = kNames.indexOf(name.toLower());
  if (i < 0) return false;
  table_tabs_->setCurrentIndex(static_cast<int>(i));
  return true;
}

bool MainWindow::showChartTab(const QString& name) {
  static const QStringList kNames{QStringLiteral("time"), QStringLiteral("sweep"),
                                  QStringLiteral("plans")};
  const qsizetype i = kNames.indexOf(name.toLower());
  if (i < 0) return false;
  chart_tabs_->setCurrentIndex(static_cast<int>(i));
  return true;
}

bool MainWindow::saveScreenshot(const QString& path, QSize size) {
  resize(size);
  show();
  for (int i = 0; i < 5; ++i) QApplication::processEvents();
  return grab().save(path, "PNG");
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (options_.remember) {
    QSettings q;
    store_settings(q, session_.settings());
    q.setValue(kSettingsGroupWindow + QStringLiteral("/geometry"), saveGeometry());
    q.setValue(kSettingsGroupWindow + QStringLiteral("/state"), saveState());
  }
  QMainWindow::closeEvent(event);
}

}  // namespace trainplan::gui
