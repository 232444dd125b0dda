// Files in and out: the model, training, cluster and profile files the window opens, and the
// charts, estimate and launch plans it exports.
#include <QComboBox>
#include <QFileInfo>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QListWidget>
#include <QPushButton>
#include <QShortcut>
#include <QVBoxLayout>
#include <algorithm>
#include <QFileDialog>
#include <QMessageBox>
#include <QStatusBar>
#include <QTabWidget>
#include <QtCharts/QChartView>

#include "charts.hpp"
#include "main_window.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/planner/emit.hpp"
#include "trainplan/reports/estimate_json.hpp"
#include "trainplan/request/files.hpp"

namespace trainplan::gui {
namespace {

// Writes the whole text or, naming why in `error`, nothing.
bool write_text(const QString& path, const QString& text, QString* error) {
  try {
    request::write_file_atomically(sstr(path), sstr(text));
  } catch (const std::exception& e) {
    if (error) *error = QString::fromUtf8(e.what());
    return false;
  }
  return true;
}

}  // namespace

// ---- Opening ----------------------------------------------------------------------------------

void MainWindow::openFile(const QString& title, const QString& filter,
                          const std::function<void(Settings&, const QString&)>& use) {
  const QString path = QFileDialog::getOpenFileName(this, title, {}, filter);
  if (path.isEmpty()) return;
  session_.reloadFiles();
  Settings s = session_.settings();
  use(s, path);
  editSettings(s);
}

void MainWindow::openModelConfig() {
  openFile(QStringLiteral("Open a Hugging Face config.json"),
           QStringLiteral("Model config (*.json);;All files (*)"), [this](Settings& s, const QString& path) {
             s.model = sstr(path);
             if (model_->findText(path) < 0) model_->addItem(path);
           });
}

void MainWindow::openTrainingConfig() {
  const QString path = QFileDialog::getOpenFileName(
      this, QStringLiteral("Open a training config"), {},
      QStringLiteral("Training configs (*.json *.yaml *.yml *.toml *.sh *.txt);;All files (*)"));
  if (path.isEmpty()) return;
  loadTrainingConfig(path);
}

bool MainWindow::loadTrainingConfig(const QString& path, QString* error) {
  std::vector<std::string> notes;
  try {
    const Settings s = session_.withConfigFile(session_.settings(), sstr(path), &notes);
    loaded_plan_.reset();
    applySettings(s);
  } catch (const std::exception& e) {
    if (error)
      *error = QString::fromUtf8(e.what());
    else
      QMessageBox::warning(this, QStringLiteral("Training config"), QString::fromUtf8(e.what()));
    return false;
  }
  QStringList lines;
  for (const std::string& n : notes) lines << qstr(n);
  statusBar()->showMessage(lines.join(QStringLiteral("; ")), 15000);
  return true;
}

void MainWindow::openClusterFile() {
  openFile(QStringLiteral("Open a cluster file"), QStringLiteral("Cluster JSON (*.json)"),
           [](Settings& s, const QString& path) {
             request::ClusterShape c = s.cluster();
             c.file = sstr(path);
             s.setCluster(c);
           });
}

void MainWindow::clearClusterFile() {
  Settings s = session_.settings();
  request::ClusterShape c = formCluster();  // the fields as they were before the file
  c.file.clear();
  s.setCluster(c);
  editSettings(s);
}

void MainWindow::openProfile() {
  openFile(QStringLiteral("Open a hardware profile"), QStringLiteral("Hardware profile (*.json)"),
           [](Settings& s, const QString& path) { s.profile = sstr(path); });
}

void MainWindow::clearProfile() {
  Settings s = session_.settings();
  s.profile.clear();
  applySettings(s);
}

// ---- Exporting --------------------------------------------------------------------------------

bool MainWindow::exportChart(const QString& chart, const QString& path, QString* error) {
  QChartView* v = chartView(chart);
  if (!v) {
    if (error) *error = QStringLiteral("unknown chart '%1'").arg(chart);
    return false;
  }
  // A chart in a hidden tab has never been laid out: give it the size it would have.
  if (!v->isVisible()) {
    v->resize(chart_tabs_->currentWidget() ? chart_tabs_->currentWidget()->size()
                                           : QSize(800, 500));
  }
  const bool svg = path.endsWith(QLatin1String(".svg"), Qt::CaseInsensitive);
  const bool ok = svg ? charts::save_svg(v, path, v->accessibleName()) : charts::save_png(v, path);
  if (!ok && error) *error = QStringLiteral("cannot write '%1'").arg(path);
  return ok;
}

void MainWindow::exportChartDialog(const QString& chart) {
  QString selected;
  const QString path = QFileDialog::getSaveFileName(
      this, QStringLiteral("Export chart"), chart + QStringLiteral(".png"),
      QStringLiteral("PNG image (*.png);;SVG drawing (*.svg)"), &selected);
  if (path.isEmpty()) return;
  QString target = path;
  if (!target.endsWith(QLatin1String(".png"), Qt::CaseInsensitive) &&
      !target.endsWith(QLatin1String(".svg"), Qt::CaseInsensitive))
    target +=
        selected.contains(QLatin1String("svg")) ? QStringLiteral(".svg") : QStringLiteral(".png");
  QString error;
  if (!exportChart(chart, target, &error))
    QMessageBox::warning(this, QStringLiteral("Export chart"), error);
  else
    statusBar()->showMessage(QStringLiteral("Wrote %1").arg(target), 5000);
}

QString MainWindow::estimateJson() const {
  const auto& cur = session_.current();
  if (!cur) return {};
  const Evaluation& e = *cur;
  request::Json j = reports::estimate_json(e.arch, e.params, e.cluster, e.estimate, e.tokens);
  j.update(e.request_json);  // the notes, warnings and provenance `trainplan estimate --json` writes
  return qstr(j.dump(2) + "\n");
}

bool MainWindow::exportEstimateJson(const QString& path, QString* error) {
  const QString text = estimateJson();
  if (text.isEmpty()) {
    if (error) *error = QStringLiteral("There is no estimate to export: %1").arg(session_.error());
    return false;
  }
  return write_text(path, text, error);
}

void MainWindow::exportEstimateDialog() {
  const QString path = QFileDialog::getSaveFileName(this, QStringLiteral("Export estimate"),
                                                    QStringLiteral("estimate.json"),
                                                    QStringLiteral("JSON (*.json)"));
  if (path.isEmpty()) return;
  QString error;
  if (!exportEstimateJson(path, &error))
    QMessageBox::warning(this, QStringLiteral("Export estimate"), error);
  else
    statusBar()->showMessage(QStringLiteral("Wrote %1").arg(path), 5000);
}

QString MainWindow::planText(const QString& kind, QStringList* notes, QString* error) const {
  const auto& cur = session_.current();
  if (!cur) {
    if (error) *error = QStringLiteral("There is no plan to export: %1").arg(session_.error());
    return {};
  }
  try {
    const planner::Emitted out = planner::emit(parse_enum<planner::EmitFormat>(sstr(kind)),
                                               cur->estimate, cur->cluster, cur->arch, cur->emit);
    if (notes)
      for (const std::string& n : out.notes)
        *notes << qstr(FieldError::render_with(n, field_label));
    return qstr(out.text);
  } catch (const FieldError& e) {
    if (error) *error = qstr(e.render(field_label));
    return {};
  } catch (const std::exception& e) {
    if (error) *error = QString::fromUtf8(e.what());
    return {};
  }
}

bool MainWindow::exportPlan(const QString& kind, const QString& path, QString* error) {
  const QString text = planText(kind, nullptr, error);
  if (text.isEmpty()) return false;
  return write_text(path, text, error);
}

void MainWindow::exportPlanDialog(const QString& kind) {
  QStringList notes;
  QString error;
  const QString text = planText(kind, &notes, &error);
  if (text.isEmpty()) {
    QMessageBox::warning(this, QStringLiteral("Export plan"), error);
    return;
  }
  const QString name = kind == QLatin1String("deepspeed") ? QStringLiteral("ds_config.json")
                       : kind == QLatin1String("accelerate")
                           ? QStringLiteral("accelerate_config.yaml")
                           : QStringLiteral("launch.sh");
  const QString path = QFileDialog::getSaveFileName(this, QStringLiteral("Export plan"), name);
  if (path.isEmpty()) return;
  if (!exportPlan(kind, path, &error)) {
    QMessageBox::warning(this, QStringLiteral("Export plan"), error);
    return;
  }
  if (!notes.isEmpty())
    QMessageBox::information(
        this, QStringLiteral("Export plan"),
        QStringLiteral("Wrote %1.\n\nWhat this format cannot say about the plan:\n• %2")
            .arg(path, notes.join(QStringLiteral("\n• "))));
  else
    statusBar()->showMessage(QStringLiteral("Wrote %1").arg(path), 5000);
}

// ---- Training configs in force -----------------------------------------------------------------

QGroupBox* MainWindow::buildConfigFilesBox() {
  auto* box = new QGroupBox(QStringLiteral("Training configs"));
  box->setToolTip(QStringLiteral(
      "The training config files in force, as trainplan fit --from reads them: a later file over an earlier "
      "one, and what you set in the window over both (as flags over --from on the command line)."));
  auto* layout = new QVBoxLayout(box);
  layout->setContentsMargins(6, 4, 6, 4);
  config_files_ = new QListWidget;
  config_files_->setObjectName(QStringLiteral("configFiles"));
  config_files_->setAccessibleName(QStringLiteral("Training configs in force"));
  config_files_->setMaximumHeight(4 * config_files_->fontMetrics().height() + 8);
  layout->addWidget(config_files_);
  auto* row = new QHBoxLayout;
  auto* open = new QPushButton(QStringLiteral("Open…"));
  open->setObjectName(QStringLiteral("openConfigFile"));
  connect(open, &QPushButton::clicked, this, &MainWindow::openTrainingConfig);
  auto* up = new QPushButton(QStringLiteral("Earlier"));
  up->setObjectName(QStringLiteral("earlierConfigFile"));
  up->setToolTip(QStringLiteral("Read the selected file before the one above it (a later file wins)"));
  connect(up, &QPushButton::clicked, this, [this] { moveConfigFile(config_files_->currentRow(), -1); });
  auto* remove = new QPushButton(QStringLiteral("Remove"));
  remove->setObjectName(QStringLiteral("removeConfigFile"));
  remove->setToolTip(QStringLiteral("Drop the selected file: what it set goes back to the window's values (Delete)"));
  connect(remove, &QPushButton::clicked, this, [this] { removeConfigFile(config_files_->currentRow()); });
  auto* del = new QShortcut(QKeySequence::Delete, config_files_);
  del->setContext(Qt::WidgetShortcut);
  connect(del, &QShortcut::activated, this, [this] { removeConfigFile(config_files_->currentRow()); });
  row->addWidget(open);
  row->addWidget(up);
  row->addWidget(remove);
  layout->addLayout(row);
  return box;
}

void MainWindow::syncConfigFiles(const Settings& s) {
  const int selected = config_files_->currentRow();
  config_files_->clear();
  for (const std::string& f : s.files) {
    auto* item = new QListWidgetItem(QFileInfo(qstr(f)).fileName(), config_files_);
    item->setToolTip(qstr(f));
  }
  if (s.files.empty()) {
    auto* none = new QListWidgetItem(QStringLiteral("none: File > Open training config"), config_files_);
    none->setFlags(Qt::NoItemFlags);
  } else {
    config_files_->setCurrentRow(std::clamp(selected, 0, static_cast<int>(s.files.size()) - 1));
  }
}

void MainWindow::setConfigFiles(std::vector<std::string> files) {
  try {
    loaded_plan_.reset();
    applySettings(session_.withConfigFiles(session_.settings(), std::move(files)));
  } catch (const std::exception& e) {
    statusBar()->showMessage(QString::fromUtf8(e.what()), 8000);
  }
}

void MainWindow::removeConfigFile(int i) {
  std::vector<std::string> files = session_.settings().files;
  if (i < 0 || i >= static_cast<int>(files.size())) return;
  const QString name = QFileInfo(qstr(files[static_cast<std::size_t>(i)])).fileName();
  files.erase(files.begin() + i);
  setConfigFiles(std::move(files));
  statusBar()->showMessage(QStringLiteral("Removed %1.").arg(name), 5000);
}

void MainWindow::moveConfigFile(int i, int by) {
  std::vector<std::string> files = session_.settings().files;
  const int j = i + by;
  if (i < 0 || j < 0 || i >= static_cast<int>(files.size()) || j >= static_cast<int>(files.size())) return;
  std::swap(files[static_cast<std::size_t>(i)], files[static_cast<std::size_t>(j)]);
  setConfigFiles(std::move(files));
  config_files_->setCurrentRow(j);
}

}  // namespace trainplan::gui
