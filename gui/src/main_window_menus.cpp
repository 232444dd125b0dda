// The menus: files and exports, pins, the plan search, the view, and help.
#include <QAction>
#include <QDockWidget>
#include <QKeySequence>
#include <QMenuBar>
#include <QMessageBox>
#include <QStatusBar>
#include <utility>

#include "main_window.hpp"

namespace trainplan::gui {

void MainWindow::buildActions() {
  QMenu* file = menuBar()->addMenu(QStringLiteral("&File"));
  QAction* open_model = file->addAction(QStringLiteral("Open &model config.json…"), this,
                                        &MainWindow::openModelConfig);
  open_model->setShortcut(QKeySequence::Open);
  file->addAction(QStringLiteral("Open &training config…"), this, &MainWindow::openTrainingConfig);
  file->addAction(QStringLiteral("Open &cluster file…"), this, &MainWindow::openClusterFile);
  file->addAction(QStringLiteral("Open hardware &profile…"), this, &MainWindow::openProfile);
  QAction* reload = file->addAction(QStringLiteral("&Reload files"), this, [this] {
    session_.reloadFiles();
    session_.setSettings(session_.settings());
  });
  reload->setShortcut(QKeySequence::Refresh);
  file->addSeparator();
  QMenu* charts_menu = file->addMenu(QStringLiteral("Export c&hart"));
  const std::pair<const char*, const char*> kCharts[] = {{"memory", "&Memory per GPU…"},
                                                         {"time", "&Step time…"},
                                                         {"sweep", "S&weep…"},
                                                         {"plans", "&Plan search…"}};
  for (const auto& [name, label] : kCharts) {
    const QString n = QString::fromUtf8(name);
    charts_menu->addAction(QString::fromUtf8(label), this, [this, n] { exportChartDialog(n); });
  }
  QAction* json = file->addAction(QStringLiteral("Export &estimate as JSON…"), this,
                                  &MainWindow::exportEstimateDialog);
  json->setShortcut(QKeySequence(QStringLiteral("Ctrl+E")));
  QMenu* plan = file->addMenu(QStringLiteral("Export p&lan"));
  const std::pair<const char*, const char*> kPlans[] = {{"deepspeed", "&DeepSpeed JSON…"},
                                                        {"accelerate", "&accelerate YAML…"},
                                                        {"torchrun", "&torchrun command…"}};
  for (const auto& [name, label] : kPlans) {
    const QString n = QString::fromUtf8(name);
    QAction* a =
        plan->addAction(QString::fromUtf8(label), this, [this, n] { exportPlanDialog(n); });
    plan_export_actions_ << a;
  }
  file->addSeparator();
  QAction* quit = file->addAction(QStringLiteral("&Quit"), this, &QWidget::close);
  quit->setShortcut(QKeySequence::Quit);

  QMenu* compare = menuBar()->addMenu(QStringLiteral("&Compare"));
  pin_action_ = compare->addAction(QStringLiteral("&Pin current configuration"), this, [this] {
    if (!session_.pinCurrent())
      statusBar()->showMessage(
          QStringLiteral("Nothing to pin, or %1 pinned already: unpin one first.")
              .arg(Session::kMaxPins),
          5000);
  });
  pin_action_->setShortcut(QKeySequence(QStringLiteral("Ctrl+P")));
  QAction* unpin = compare->addAction(QStringLiteral("&Unpin last"), this, [this] {
    if (!session_.pins().empty()) session_.unpin(session_.pins().size() - 1);
  });
  unpin->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+P")));
  compare->addAction(QStringLiteral("&Clear pins"), this, [this] { session_.clearPins(); });

  QMenu* search = menuBar()->addMenu(QStringLiteral("&Search"));
  search_action_ = search->addAction(QStringLiteral("&Run plan search"), this,
                                     [this] { session_.startSearch(); });
  search_action_->setShortcut(QKeySequence(QStringLiteral("Ctrl+R")));
  cancel_action_ = search->addAction(QStringLiteral("&Cancel search"), this,
                                     [this] { session_.cancelSearch(); });
  cancel_action_->setShortcut(QKeySequence(Qt::Key_Escape));
  cancel_action_->setEnabled(false);
  QAction* rec = search->addAction(QStringLiteral("Use the &recommended strategy"), this,
                                   &MainWindow::recommend);
  rec->setShortcut(QKeySequence(QStringLiteral("Ctrl+M")));

  QMenu* view = menuBar()->addMenu(QStringLiteral("&View"));
  if (auto* dock = findChild<QDockWidget*>(QStringLiteral("optionsDock")))
    view->addAction(dock->toggleViewAction());
  view->addAction(QStringLiteral("&Reset options to defaults"), this,
                  [this] { applySettings(Settings{}); });

  QMenu* help = menuBar()->addMenu(QStringLiteral("&Help"));
  help->addAction(QStringLiteral("&About trainplan-gui"), this, &MainWindow::showAbout);
}

void MainWindow::showAbout() {
  QMessageBox::about(
      this, QStringLiteral("About trainplan-gui"),
      QStringLiteral(
          "<p><b>trainplan-gui %2</b> — explore memory, step time and communication of LLM training "
          "before booking a cluster.</p><p>Every number comes from the trainplan library; hover "
          "any "
          "term for its meaning and source.</p><p>trainplan-gui is free software: you can "
          "redistribute "
          "it and/or modify it under the terms of the GNU General Public License as published by "
          "the "
          "Free Software Foundation, either version 3 of the License, or (at your option) any "
          "later "
          "version. It comes with ABSOLUTELY NO WARRANTY. See gui/LICENSE and "
          "<a "
          "href=\"https://www.gnu.org/licenses/gpl-3.0.html\">https://www.gnu.org/licenses/"
          "gpl-3.0.html</a>."
          "</p><p>Built with Qt %1 and Qt Charts.</p>")
          .arg(QString::fromLatin1(qVersion()), QStringLiteral(TRAINPLAN_VERSION)));
}

}  // namespace trainplan::gui
