// The window's files in and out, driven as a user drives it (headless): charts, the estimate and
// launch plans exported, training configs, cluster files and hardware profiles opened, the
// settings remembered, the window rendered to a file.
#include <QDoubleSpinBox>
#include <QFile>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QSettings>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QToolButton>
#include <QtTest>
#include <cmath>

#include "charts.hpp"
#include "main_window.hpp"
#include "session.hpp"
#include "trainplan/hardware/profile.hpp"
#include "trainplan/request/profile_json.hpp"
#include "window_fixture.hpp"

using namespace trainplan;
using namespace trainplan::gui;

class TestGuiWindowFiles : public WindowFixture {
  Q_OBJECT
 private Q_SLOTS:
  void plan_refusal_names_the_windows_fields();
  void exports_write_files();
  void host_memory_of_a_cluster_file_is_checked();
  void plan_exports_through_the_emitters_data();
  void plan_exports_through_the_emitters();
  void time_to_train_and_profile();
  void screenshot_is_the_whole_window();
  void opens_a_training_config();
  void settings_are_remembered();
};

void TestGuiWindowFiles::plan_refusal_names_the_windows_fields() {
  // DeepSpeed has no hybrid sharding: the refusal suggests fields in the window's labels, not the
  // command line's flags.
  window_->applySettings(base_settings(QStringLiteral("llama-2-7b"), 8, Strategy::fsdp_hybrid, 2));
  QString error;
  QVERIFY(window_->planText(QStringLiteral("deepspeed"), nullptr, &error).isEmpty());
  QVERIFY2(
      error.contains(QStringLiteral("plan with Strategy zero3 (ZeRO++ adds node-local gathers)")),
      qPrintable(error));
  QVERIFY2(!error.contains(QStringLiteral("--")), qPrintable(error));
}

void TestGuiWindowFiles::exports_write_files() {
  window_->applySettings(base_settings(QStringLiteral("llama-2-7b"), 8, Strategy::fsdp_full, 2));
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  for (const char* chart : {"memory", "time", "sweep", "plans"}) {
    const QString png = dir.filePath(QString::fromUtf8(chart) + QStringLiteral(".png"));
    const QString svg = dir.filePath(QString::fromUtf8(chart) + QStringLiteral(".svg"));
    QString error;
    QVERIFY2(window_->exportChart(QString::fromUtf8(chart), png, &error), qPrintable(error));
    QVERIFY2(window_->exportChart(QString::fromUtf8(chart), svg, &error), qPrintable(error));
    QImage image(png);
    QVERIFY(!image.isNull());
    QVERIFY(image.width() > 100 && image.height() > 100);
    QFile f(svg);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QVERIFY(f.readAll().contains("<svg"));
  }
  // The memory chart really draws its first part in its colour somewhere.
  QImage memory(dir.filePath(QStringLiteral("memory.png")));
  bool found = false;
  const QColor want = charts::color_for(0);
  for (int y = 0; y < memory.height() && !found; y += 2)
    for (int x = 0; x < memory.width() && !found; x += 2) found = memory.pixelColor(x, y) == want;
  QVERIFY(found);

  const QString json_path = dir.filePath(QStringLiteral("estimate.json"));
  QString error;
  QVERIFY2(window_->exportEstimateJson(json_path, &error), qPrintable(error));
  QFile jf(json_path);
  QVERIFY(jf.open(QIODevice::ReadOnly));
  const QJsonObject j = QJsonDocument::fromJson(jf.readAll()).object();
  QCOMPARE(j.value(QStringLiteral("schema")).toString(), QStringLiteral("trainplan.estimate/1"));
  const planner::Estimate e = library_estimate(catalog_, session_->settings());
  const QJsonObject plan = j.value(QStringLiteral("plan")).toObject();
  QCOMPARE(plan.value(QStringLiteral("memory"))
               .toObject()
               .value(QStringLiteral("device_total_bytes"))
               .toDouble(),
           std::round(e.memory.device_total.value()));
  QCOMPARE(plan.value(QStringLiteral("strategy")).toString(), QStringLiteral("fsdp-full"));
  // What `trainplan estimate --json` adds to the estimate: where each option came from, the notes
  // and the warnings (the window's fields speak by their labels).
  QVERIFY(j.value(QStringLiteral("notes")).isArray());
  QVERIFY(j.value(QStringLiteral("warnings")).isArray());
  bool micro_batch = false;
  for (const QJsonValue& p : j.value(QStringLiteral("provenance")).toArray())
    micro_batch = micro_batch || (p.toObject().value(QStringLiteral("option")).toString() == QLatin1String("micro-batch") &&
                                  p.toObject().value(QStringLiteral("source")).toString() == QLatin1String("Micro-batch"));
  QVERIFY(micro_batch);

  // Nothing to export while the input is bad: a message, not a crash.
  Settings bad = session_->settings();
  bad.training.tp = 3;
  window_->applySettings(bad);
  QVERIFY(!window_->exportEstimateJson(json_path, &error));
  QVERIFY(error.contains(QStringLiteral("does not divide")));
}

// A cluster file that states its nodes' CPU memory: offloading more than that does not fit, and the
// verdict says it is the host, not the GPUs.
void TestGuiWindowFiles::host_memory_of_a_cluster_file_is_checked() {
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  const QString path = dir.filePath(QStringLiteral("small-ram.json"));
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write(R"({"name": "small-ram", "gpu": "A100-80GB", "nodes": 1, "gpus_per_node": 8,
              "host_memory_GiB": 100})");
  f.close();
  Settings s = base_settings(QStringLiteral("llama-2-70b"), 8, Strategy::fsdp_full, 1);
  s.cluster_spec = "1x8xH100-80GB";
  window_->applySettings(s);  // the fields show 8 H100s, the file then names 8 A100s
  const std::string fields = s.cluster_spec;
  s.cluster_spec = path.toStdString();
  s.training.seq = 8192;
  s.training.checkpointing = Checkpointing::full_offload;
  s.training.offload = Offload::optimizer;
  window_->applySettings(s);
  QCOMPARE(window_->verdict(), MainWindow::Verdict::does_not_fit);
  QVERIFY2(window_->verdictText().contains(QStringLiteral("CPU memory per node")),
           qPrintable(window_->verdictText()));
  QVERIFY(!session_->current()->estimate.fits);
  // The same through the form's own field, without a file; a generous node fits. Closing the file
  // brings back the cluster the fields spelled before it (the request's spec is the one place the
  // cluster is held; the fields are only its view).
  QToolButton* clear = nullptr;
  for (QToolButton* b : window_->findChildren<QToolButton*>())
    if (b->accessibleName() == QLatin1String("Clear cluster file")) clear = b;
  QVERIFY(clear && clear->isEnabled());
  QTest::mouseClick(clear, Qt::LeftButton);
  QCOMPARE(session_->settings().cluster_spec, fields);
  QVERIFY(!clear->isEnabled());
  QVERIFY(session_->current()->estimate.fits);  // not stated: not checked
  type_into(child<QDoubleSpinBox>("hostMemory"), QStringLiteral("100"));
  QTest::keyClick(child<QDoubleSpinBox>("hostMemory"), Qt::Key_Return);
  QCOMPARE(session_->settings().host_memory_gib, std::optional(100.0));
  QCOMPARE(window_->verdict(), MainWindow::Verdict::does_not_fit);
  type_into(child<QDoubleSpinBox>("hostMemory"), QStringLiteral("4096"));
  QTest::keyClick(child<QDoubleSpinBox>("hostMemory"), Qt::Key_Return);
  QCOMPARE(window_->verdict(), MainWindow::Verdict::fits);
}

void TestGuiWindowFiles::plan_exports_through_the_emitters_data() {
  QTest::addColumn<QString>("kind");
  QTest::addColumn<QString>("expected");
  QTest::newRow("deepspeed") << "deepspeed"
                             << "\"zero_optimization\"";
  QTest::newRow("accelerate") << "accelerate"
                              << "distributed_type";
  QTest::newRow("torchrun") << "torchrun"
                            << "torchrun";
}

void TestGuiWindowFiles::plan_exports_through_the_emitters() {
  QFETCH(QString, kind);
  QFETCH(QString, expected);
  Settings s = base_settings(QStringLiteral("llama-2-7b"), 8, Strategy::zero3, 2);
  s.training.framework = Framework::deepspeed;
  window_->applySettings(s);
  QString error;
  QStringList notes;
  const QString text = window_->planText(kind, &notes, &error);
  QVERIFY2(!text.isEmpty(), qPrintable(error));
  QVERIFY2(text.contains(expected), qPrintable(text));
  QTemporaryDir dir;
  const QString path = dir.filePath(QStringLiteral("plan.out"));
  QVERIFY2(window_->exportPlan(kind, path, &error), qPrintable(error));
  QFile f(path);
  QVERIFY(f.open(QIODevice::ReadOnly));
  QCOMPARE(QString::fromUtf8(f.readAll()), text);
  if (kind == QLatin1String("deepspeed")) QVERIFY(!QJsonDocument::fromJson(text.toUtf8()).isNull());
}

void TestGuiWindowFiles::time_to_train_and_profile() {
  window_->applySettings(base_settings(QStringLiteral("llama-2-7b"), 8, Strategy::fsdp_full, 2));
  auto* tokens = child<QLineEdit>("tokens");
  type_into(tokens, QStringLiteral("300B"));
  QTest::keyClick(tokens, Qt::Key_Return);
  QVERIFY(session_->current() && session_->current()->time_to_train);
  const QString details = child<QLabel>("details")->text();
  QVERIFY2(details.contains(QStringLiteral("300B tokens in")), qPrintable(details));
  type_into(tokens, QStringLiteral("lots"));
  QTest::keyClick(tokens, Qt::Key_Return);
  QCOMPARE(window_->verdict(), MainWindow::Verdict::invalid);
  QVERIFY2(window_->verdictText().contains(QStringLiteral("lots")),
           qPrintable(window_->verdictText()));
  tokens->clear();
  QTest::keyClick(tokens, Qt::Key_Return);
  QCOMPARE(window_->verdict(), MainWindow::Verdict::fits);

  // A profile file: an empty one keeps the datasheet numbers but is named; a broken one is a
  // message.
  QTemporaryDir dir;
  hardware::HardwareProfile profile;
  profile.name = "test-cluster";
  const std::string good = dir.filePath(QStringLiteral("profile.json")).toStdString();
  request::write_profile(good, profile);
  Settings s = session_->settings();
  s.profile = good;
  window_->applySettings(s);
  QVERIFY2(session_->current(), qPrintable(session_->error()));
  QVERIFY(child<QLabel>("details")->text().contains(QStringLiteral("profile test-cluster")));
  QFile broken(dir.filePath(QStringLiteral("broken.json")));
  QVERIFY(broken.open(QIODevice::WriteOnly));
  broken.write("{\"schema\": \"trainplan.profile/1\", \"colectives\": []}");
  broken.close();
  s.profile = broken.fileName().toStdString();
  window_->applySettings(s);
  QCOMPARE(window_->verdict(), MainWindow::Verdict::invalid);
  QVERIFY2(window_->verdictText().contains(QStringLiteral("broken.json")),
           qPrintable(window_->verdictText()));
}

void TestGuiWindowFiles::screenshot_is_the_whole_window() {
  window_->applySettings(base_settings(QStringLiteral("llama-2-7b"), 8, Strategy::fsdp_full, 4));
  QTemporaryDir dir;
  const QString path = dir.filePath(QStringLiteral("shot.png"));
  QVERIFY(window_->saveScreenshot(path, QSize(1280, 800)));
  const QImage image(path);
  QVERIFY(!image.isNull());
  QVERIFY(image.width() >= 1280 && image.height() >= 800);
}

void TestGuiWindowFiles::opens_a_training_config() {
  // DeepSpeed's own ZeRO-3 example (tests/request/configs/ds-accelerate-zero_stage3_offload.json) leaves
  // its batch to "auto": the window's micro-batch fills it; stage 3 with CPU offload of optimizer and
  // parameters become the strategy and offload.
  window_->applySettings(base_settings(QStringLiteral("llama-2-7b"), 8, Strategy::ddp, 2));
  QString error;
  QVERIFY2(window_->loadTrainingConfig(QStringLiteral(TRAINPLAN_CONFIGS_DIR "/ds-accelerate-zero_stage3_offload.json"), &error),
           qPrintable(error));
  QCOMPARE(session_->settings().training.strategy, Strategy::zero3);
  QCOMPARE(session_->settings().training.offload, Offload::optimizer_params);
  QCOMPARE(child<QComboBox>("strategy")->currentText(), QStringLiteral("zero3"));
  QCOMPARE(session_->settings().training.micro_batch, std::int64_t{2});
  // Not a training config: a message naming the file, the settings unchanged.
  QVERIFY(!window_->loadTrainingConfig(QStringLiteral(TRAINPLAN_CONFIGS_DIR "/bad-wrong-kind.json"), &error));
  QVERIFY2(error.contains(QStringLiteral("bad-wrong-kind.json")), qPrintable(error));
  QCOMPARE(session_->settings().training.strategy, Strategy::zero3);
  // accelerate's FSDP example starts 2 processes on one machine: the cluster takes that shape.
  QVERIFY2(window_->loadTrainingConfig(QStringLiteral(TRAINPLAN_CONFIGS_DIR "/accelerate-fsdp.yaml"), &error),
           qPrintable(error));
  QCOMPARE(session_->settings().cluster().nodes, 1);
  QCOMPARE(session_->settings().cluster().gpus_per_node, 2);
  QCOMPARE(session_->settings().training.strategy, Strategy::fsdp_full);
}

void TestGuiWindowFiles::settings_are_remembered() {
  QStandardPaths::setTestModeEnabled(true);
  QCoreApplication::setOrganizationName(QStringLiteral("trainplan-test"));
  QCoreApplication::setApplicationName(QStringLiteral("tst_gui_window"));
  QSettings().clear();
  Settings s = base_settings(QStringLiteral("mistral-7b"), 4, Strategy::zero2, 3);
  s.training.checkpointing = Checkpointing::selective;
  s.lora_targets = "all-linear";
  s.tokens = "1T";
  {
    Session session(catalog_);
    MainWindow remembering(session, MainWindow::Options{true});
    remembering.applySettings(s);
    remembering.show();
    remembering.close();
  }
  const Settings r = restore_settings(QSettings());
  QCOMPARE(r.model, s.model);
  QCOMPARE(r.cluster_spec, s.cluster_spec);
  QCOMPARE(r.training.strategy, Strategy::zero2);
  QCOMPARE(r.training.micro_batch, std::int64_t{3});
  QCOMPARE(r.training.checkpointing, Checkpointing::selective);
  QCOMPARE(r.lora_targets, s.lora_targets);
  QCOMPARE(r.tokens, s.tokens);
  QVERIFY(r.files.empty());

  // The training configs in force are remembered as a list over the window's own values: the
  // DeepSpeed file's stage 3 comes back from the file, and dropping it brings back ZeRO-2.
  QTemporaryDir dir;
  const QString copy = dir.filePath(QStringLiteral("zero3.json"));
  QVERIFY(QFile::copy(QStringLiteral(TRAINPLAN_CONFIGS_DIR "/ds-accelerate-zero_stage3_offload.json"), copy));
  {
    Session session(catalog_);
    MainWindow remembering(session, MainWindow::Options{true});
    remembering.applySettings(s);
    QString error;
    QVERIFY2(remembering.loadTrainingConfig(copy, &error), qPrintable(error));
    QCOMPARE(session.settings().training.strategy, Strategy::zero3);
    remembering.show();
    remembering.close();
  }
  const Settings again = restore_settings(QSettings());
  QCOMPARE(again.files, std::vector<std::string>{copy.toStdString()});
  QCOMPARE(again.training.strategy, Strategy::zero3);
  QCOMPARE(again.own.training.strategy, Strategy::zero2);
  // A file gone since is left out, and the banner's notes say so.
  QVERIFY(QFile::remove(copy));
  const Settings gone = restore_settings(QSettings());
  QVERIFY(gone.files.empty());
  QCOMPARE(gone.training.strategy, Strategy::zero2);
  QVERIFY(!gone.file_notes.empty() && gone.file_notes.back().find("not opened again") != std::string::npos);
  QSettings().clear();
}

QTEST_MAIN(TestGuiWindowFiles)
#include "tst_gui_window_files.moc"
