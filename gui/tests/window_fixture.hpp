#pragma once
// What the window's tests share: a fresh session and window for every test function, the settings
// they start from, the library's own estimate to hold the window to, and the keyboard. A test
// class derives from WindowFixture; QtTest runs its init() and cleanup() around each test.
#include <QObject>
#include <QString>
#include <QStringList>
#include <QWidget>
#include <QtCharts/QBarCategoryAxis>
#include <QtCharts/QChart>
#include <QtCharts/QStackedBarSeries>
#include <QtTest>
#include <cstdint>
#include <memory>

#include "main_window.hpp"
#include "session.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/planner/estimate.hpp"
#include "trainplan/request/catalog.hpp"

namespace trainplan::gui {

class WindowFixture : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void init() {
    session_ = std::make_unique<Session>(catalog_);
    window_ = std::make_unique<MainWindow>(*session_, MainWindow::Options{false});
    window_->resize(1280, 800);
    window_->show();
    QVERIFY(QTest::qWaitForWindowExposed(window_.get()));
  }

  void cleanup() {
    window_.reset();
    session_.reset();
  }

 protected:
  static Settings base_settings(const QString& model, int gpus, Strategy strategy,
                                std::int64_t micro_batch) {
    Settings s;
    s.model = model.toStdString();
    s.setCluster({"", "A100-80GB", gpus, 1});
    s.training.strategy = strategy;
    s.training.micro_batch = micro_batch;
    return s;
  }

  static planner::Estimate library_estimate(const request::Catalog& catalog, const Settings& s) {
    const model::Architecture a = catalog.resolve_model(s.model).arch;
    const hardware::Cluster c = catalog.resolve_cluster(s.cluster_spec, std::nullopt).cluster;
    model::Training t = s.training;
    t.lora.targets = model::split_targets(s.lora_targets);
    return planner::evaluate(a, model::count_parameters(a), t, c);
  }

  static QStackedBarSeries* memory_bars(QChart* chart) {
    for (QAbstractSeries* s : chart->series())
      if (auto* b = qobject_cast<QStackedBarSeries*>(s)) return b;
    return nullptr;
  }

  static QStringList categories(QChart* chart) {
    for (QAbstractAxis* a : chart->axes(Qt::Horizontal))
      if (auto* c = qobject_cast<QBarCategoryAxis*>(a)) return c->categories();
    return {};
  }

  static void type_into(QWidget* w, const QString& text) {
    w->setFocus();
    QTest::keyClick(w, Qt::Key_A, Qt::ControlModifier);
    QTest::keyClicks(w, text);
  }

  template <class T>
  T* child(const char* name) {
    T* w = window_->findChild<T*>(QString::fromUtf8(name));
    if (!w) qFatal("no child %s", name);
    return w;
  }

  request::Catalog catalog_ = request::Catalog::builtin();
  std::unique_ptr<Session> session_;
  std::unique_ptr<MainWindow> window_;
};

}  // namespace trainplan::gui
