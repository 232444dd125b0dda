// The journeys that once left the window in a state no one had asked for, each driven the way a
// user drives it (keyboard and mouse, headless): a model change that reset the sequence length,
// results of an earlier request shown as current, verdicts that disagreed between the banner, the
// charts and the tables.
#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QMessageBox>
#include <QTimer>
#include <QComboBox>
#include <QtCharts/QBarSet>
#include <QtCharts/QHorizontalStackedBarSeries>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableView>
#include <QLineEdit>
#include <QSpinBox>
#include <QStatusBar>

#include "main_window.hpp"
#include "session.hpp"
#include "window_fixture.hpp"

using namespace trainplan;
using namespace trainplan::gui;

class TestGuiJourneys : public WindowFixture {
  Q_OBJECT
 private Q_SLOTS:
  void changing_the_model_keeps_the_sequence_length();
  void plans_of_an_earlier_request_are_marked_stale();
  void loaded_configs_are_a_list_one_can_drop_from();
  void the_windows_fields_win_over_a_file();
  void six_files_in_turn_keep_the_model_and_the_window_on_screen();
  void advice_names_the_change_that_fits_and_the_plan_found();
  void numbers_and_colours_read_alike();
  void layout_holds_at_1024x700();
  void errors_speak_of_the_windows_fields();
  void about_shows_the_version();
};

namespace {
QString config(const char* name) { return QStringLiteral(TRAINPLAN_CONFIGS_DIR "/") + QString::fromUtf8(name); }
}  // namespace

// llama-2-7b at 4096 tokens, then llama-2-13b, which takes 4096 too: the length stays (it once
// fell back to 2048, the default of a request without one). GPT-2 takes 1024 positions: there the
// length starts at GPT-2's default, as the CLI would.
void TestGuiJourneys::changing_the_model_keeps_the_sequence_length() {
  Settings s = base_settings(QStringLiteral("llama-2-7b"), 8, Strategy::fsdp_full, 1);
  s.training.seq = 4096;
  window_->applySettings(s);
  auto* model = child<QComboBox>("model");
  type_into(model->lineEdit(), QStringLiteral("llama-2-13b"));
  // Typed, not yet entered: the results are still the 7B's, and the status bar says so.
  QCOMPARE(session_->settings().model, std::string("llama-2-7b"));
  QVERIFY2(window_->statusBar()->currentMessage().contains(QStringLiteral("results are for llama-2-7b until")),
           qPrintable(window_->statusBar()->currentMessage()));
  QTest::keyClick(model->lineEdit(), Qt::Key_Return);
  QCOMPARE(session_->settings().model, std::string("llama-2-13b"));
  QCOMPARE(session_->settings().training.seq, std::int64_t{4096});
  QCOMPARE(child<QSpinBox>("seq")->value(), 4096);
  type_into(model->lineEdit(), QStringLiteral("gpt2"));
  QTest::keyClick(model->lineEdit(), Qt::Key_Return);
  QCOMPARE(QString::fromStdString(session_->settings().model), QStringLiteral("gpt2"));
  QCOMPARE(session_->settings().training.seq, std::int64_t{1024});
  QVERIFY(session_->current().has_value());
}

// A plan search on llama-2-7b, then the model changed to llama-2-13b: the plans, found for the 7B,
// are marked stale in the search line, the chart and the table, and loading one does nothing but
// say why (it once switched the model back to the 7B without a word). Back on the 7B they answer
// the request again, and a loaded plan (whose TP, sequence parallelism and batch the search chose)
// leaves them current.
void TestGuiJourneys::plans_of_an_earlier_request_are_marked_stale() {
  Settings s = base_settings(QStringLiteral("llama-2-7b"), 8, Strategy::fsdp_full, 1);
  s.training.grad_accum = 4;
  window_->applySettings(s);
  QSignalSpy finished(session_.get(), &Session::searchFinished);
  QTest::mouseClick(child<QPushButton>("runSearch"), Qt::LeftButton);
  QVERIFY(finished.count() == 1 || finished.wait(60000));
  QVERIFY2(!session_->plans().empty(), qPrintable(session_->searchMessage()));
  QVERIFY(session_->plansStaleBecause().isEmpty());
  auto* label = child<QLabel>("searchLabel");
  QVERIFY(!label->text().startsWith(QStringLiteral("Stale")));

  auto* model = child<QComboBox>("model");
  type_into(model->lineEdit(), QStringLiteral("llama-2-13b"));
  QTest::keyClick(model->lineEdit(), Qt::Key_Return);
  QCOMPARE(session_->settings().model, std::string("llama-2-13b"));
  QCOMPARE(session_->plansStaleBecause(), QStringList{QStringLiteral("Model llama-2-7b → llama-2-13b")});
  QVERIFY2(label->text().startsWith(QStringLiteral("Stale")), qPrintable(label->text()));
  QVERIFY2(label->text().contains(QStringLiteral("llama-2-7b → llama-2-13b")), qPrintable(label->text()));
  QVERIFY(window_->plansChart()->title().contains(QStringLiteral("stale")));
  const QAbstractItemModel& plans = window_->plansModel();
  QVERIFY(plans.index(0, 0).data(Qt::ForegroundRole).isValid());
  auto* table = child<QTableView>("plansTable");
  QVERIFY(window_->showTableTab(QStringLiteral("plans")));
  table->setCurrentIndex(plans.index(0, 0));
  QTest::keyClick(table, Qt::Key_Return);
  QCOMPARE(session_->settings().model, std::string("llama-2-13b"));  // not switched back

  type_into(model->lineEdit(), QStringLiteral("llama-2-7b"));
  QTest::keyClick(model->lineEdit(), Qt::Key_Return);
  QVERIFY(session_->plansStaleBecause().isEmpty());
  QVERIFY(!plans.index(0, 0).data(Qt::ForegroundRole).isValid());
  for (std::size_t i = 0; i < session_->plans().size(); ++i) {
    QVERIFY(session_->loadPlan(i));
    QVERIFY2(session_->plansStaleBecause().isEmpty(), qPrintable(session_->plansStaleBecause().join(QStringLiteral("; "))));
  }
}

// Three training configs opened in turn stay a list, in order, each visible; dropping one undoes
// what it set (to the file before it, or to the window's own value) and leaves the others in
// force. They once piled up, invisible and beyond removal but by View > Reset.
void TestGuiJourneys::loaded_configs_are_a_list_one_can_drop_from() {
  window_->applySettings(base_settings(QStringLiteral("llama-2-7b"), 8, Strategy::ddp, 2));
  QString error;
  QVERIFY2(window_->loadTrainingConfig(config("ds-accelerate-zero_stage3_offload.json"), &error), qPrintable(error));
  QVERIFY2(window_->loadTrainingConfig(config("peft-lora-r8.json"), &error), qPrintable(error));
  QVERIFY2(window_->loadTrainingConfig(config("ds-transformers-zero2.json"), &error), qPrintable(error));
  auto* list = child<QListWidget>("configFiles");
  QCOMPARE(list->count(), 3);
  QCOMPARE(list->item(0)->text(), QStringLiteral("ds-accelerate-zero_stage3_offload.json"));
  QCOMPARE(list->item(2)->text(), QStringLiteral("ds-transformers-zero2.json"));
  QCOMPARE(session_->settings().training.strategy, Strategy::zero2);  // the later file wins
  QCOMPARE(session_->settings().training.method, Method::lora);

  // Drop the last: the strategy is the first file's again; the adapter stays.
  list->setCurrentRow(2);
  QTest::mouseClick(child<QPushButton>("removeConfigFile"), Qt::LeftButton);
  QCOMPARE(list->count(), 2);
  QCOMPARE(session_->settings().training.strategy, Strategy::zero3);
  QCOMPARE(session_->settings().training.offload, Offload::optimizer_params);
  QCOMPARE(session_->settings().training.method, Method::lora);
  QCOMPARE(child<QComboBox>("strategy")->currentText(), QStringLiteral("zero3"));
  // Drop the adapter with the keyboard: full fine-tuning again.
  list->setCurrentRow(1);
  list->setFocus();
  QTest::keyClick(list, Qt::Key_Delete);
  QCOMPARE(list->count(), 1);
  QCOMPARE(session_->settings().training.method, Method::full);
  // Drop the last file: the window's own settings come back (DDP, micro-batch 2).
  list->setCurrentRow(0);
  QTest::mouseClick(child<QPushButton>("removeConfigFile"), Qt::LeftButton);
  QVERIFY(session_->settings().files.empty());
  QCOMPARE(session_->settings().training.strategy, Strategy::ddp);
  QCOMPARE(session_->settings().training.micro_batch, std::int64_t{2});
  QVERIFY(session_->current().has_value());
}

// What the user sets in the window wins over a file, as a flag wins over --from on the command
// line: the model field over an axolotl file's Hub id (which once replaced it and failed), a
// micro-batch typed in the form over the file's, each said in a note; the file stays in force for
// the rest.
void TestGuiJourneys::the_windows_fields_win_over_a_file() {
  window_->applySettings(base_settings(QStringLiteral("llama-2-7b"), 8, Strategy::fsdp_full, 1));
  QString error;
  QVERIFY2(window_->loadTrainingConfig(config("axolotl-llama-3-lora-8b.yml"), &error), qPrintable(error));
  QCOMPARE(session_->settings().model, std::string("llama-2-7b"));
  QCOMPARE(session_->settings().training.method, Method::qlora);  // LoRA over an 8-bit base
  QVERIFY2(session_->current().has_value(), qPrintable(session_->error()));

  auto* micro_batch = child<QSpinBox>("microBatch");
  type_into(micro_batch, QStringLiteral("3"));
  QTest::keyClick(micro_batch, Qt::Key_Return);
  QCOMPARE(session_->settings().training.micro_batch, std::int64_t{3});
  QCOMPARE(session_->settings().training.method, Method::qlora);  // the file still in force
  QCOMPARE(child<QListWidget>("configFiles")->count(), 1);
  bool said = false;
  for (const std::string& n : session_->current()->notes)
    said = said || (n.find("overrides") != std::string::npos && n.find("axolotl-llama-3-lora-8b.yml") != std::string::npos);
  QVERIFY(said);

  // The file leaves precision to other inputs and says so; once the window sets it, the note goes
  // (it once stayed after the precision was changed).
  const auto noted = [&](const char* what) {
    for (const std::string& n : session_->current()->notes)
      if (n.find(what) != std::string::npos) return true;
    return false;
  };
  QVERIFY(noted("bf16 = \"auto\""));
  auto* precision = child<QComboBox>("precision");
  precision->setCurrentIndex(precision->findText(QStringLiteral("fp16-mixed")));
  QCOMPARE(session_->settings().training.precision, Precision::fp16_mixed);
  QVERIFY(!noted("bf16 = \"auto\""));
}

// The sequence: a DeepSpeed JSON, a litgpt YAML, a torchtune YAML, a PEFT adapter, an
// accelerate FSDP file and a Megatron script (last: it states the 4 GPUs its TP x PP needs) opened in
// turn on mistral-7b. Each opens (the
// torchtune and litgpt files name Hub models: the window's model stays, as the CLI's argument
// does), all six are listed, and the window still fits a 1000-px screen (the banner's notes once
// made its minimum taller than that).
void TestGuiJourneys::six_files_in_turn_keep_the_model_and_the_window_on_screen() {
  window_->resize(1600, 1000);
  window_->applySettings(base_settings(QStringLiteral("mistral-7b"), 8, Strategy::fsdp_full, 1));
  QString error;
  for (const char* f : {"ds-transformers-zero2.json", "litgpt-llama-3.1-8b-lora.yaml", "torchtune-llama3_1-8B_lora.yaml",
                        "peft-lora-r8.json", "accelerate-fsdp.yaml", "megatron-ds-llama2-pretrain.sh"}) {
    QVERIFY2(window_->loadTrainingConfig(config(f), &error), qPrintable(QString::fromUtf8(f) + QStringLiteral(": ") + error));
    QCOMPARE(session_->settings().model, std::string("mistral-7b"));
  }
  QCOMPARE(child<QListWidget>("configFiles")->count(), 6);
  QTest::qWait(20);
  QVERIFY2(window_->minimumSizeHint().height() <= 1000, qPrintable(QString::number(window_->minimumSizeHint().height())));
}

// What does not fit is followed by what would: the fastest change `trainplan explain` finds for
// these very settings (the banner once offered "FSDP full-shard would fit" when it was already
// FSDP full-shard), and after a plan search on them, the plans it found.
void TestGuiJourneys::advice_names_the_change_that_fits_and_the_plan_found() {
  Settings s = base_settings(QStringLiteral("llama-2-7b"), 8, Strategy::ddp, 1);
  s.training.checkpointing = Checkpointing::none;
  s.training.offload = Offload::none;
  window_->applySettings(s);
  QCOMPARE(window_->verdict(), MainWindow::Verdict::does_not_fit);
  QVERIFY(session_->explanation().has_value());
  QVERIFY(!session_->explanation()->suggestions.empty());
  const planner::OptionChange& first = session_->explanation()->suggestions.front().changes.front();
  const QString change = QStringLiteral("It fits with %1 %2").arg(QString::fromStdString(field_label(first.option)),
                                                                  QString::fromStdString(first.to));
  QVERIFY2(window_->verdictText().contains(change), qPrintable(window_->verdictText()));
  QVERIFY(!window_->verdictText().contains(QStringLiteral("plan search found")));
  QSignalSpy finished(session_.get(), &Session::searchFinished);
  QTest::mouseClick(child<QPushButton>("runSearch"), Qt::LeftButton);
  QVERIFY(finished.count() == 1 || finished.wait(60000));
  QVERIFY(!session_->plans().empty());
  QVERIFY2(window_->verdictText().contains(QStringLiteral("The plan search found plans that fit")),
           qPrintable(window_->verdictText()));
}

// Readability defects a user met, each now held: a micro-batch of 99,999,999 read "310423013.4 GiB";
// the step-time table mixed s, ms and a bare 0 down one column; two communication parts shared a
// colour; sequence parallelism stayed ticked under TP 1; an option's tooltip ran 1,400 px on one
// line.
void TestGuiJourneys::numbers_and_colours_read_alike() {
  Settings s = base_settings(QStringLiteral("llama-2-70b"), 8, Strategy::fsdp_full, 1);
  s.cluster_spec = "2x8xH100-80GB";
  s.training.tp = 2;
  s.training.pp = 2;
  s.training.sequence_parallel = true;
  s.training.grad_accum = 8;
  window_->applySettings(s);
  QVERIFY2(session_->current().has_value(), qPrintable(session_->error()));

  // One unit down the step-time column: the step's.
  QVERIFY(window_->showTableTab(QStringLiteral("time")));
  const QAbstractItemModel* time = child<QTableView>("stepTimeTable")->model();
  const QString unit = session_->current()->estimate.time.step.value() >= 1.0 ? QStringLiteral(" s") : QStringLiteral(" ms");
  int seconds_rows = 0;
  for (int r = 0; r < time->rowCount(); ++r) {
    const QString text = time->index(r, 0).data().toString();
    if (text.endsWith(QStringLiteral(" s")) || text.endsWith(QStringLiteral(" ms")) || text.endsWith(QStringLiteral(" µs")) ||
        text == QLatin1String("0")) {
      ++seconds_rows;
      QVERIFY2(text.endsWith(unit), qPrintable(time->headerData(r, Qt::Vertical).toString() + QStringLiteral(": ") + text));
    }
  }
  QVERIFY(seconds_rows >= 5);
  // Every part of the step its own colour, and a legend label that differs from the others'
  // within the first 24 characters (where a narrow legend cuts them).
  QStringList colours;
  QStringList starts;
  for (QAbstractSeries* series : window_->stepTimeChart()->series())
    if (auto* bars = qobject_cast<QHorizontalStackedBarSeries*>(series))
      for (QBarSet* set : bars->barSets()) {
        QVERIFY2(!colours.contains(set->color().name()), qPrintable(set->label()));
        QVERIFY2(!starts.contains(set->label().left(24)), qPrintable(set->label()));
        colours << set->color().name();
        starts << set->label().left(24);
      }
  QVERIFY(colours.size() >= 5);

  // TP back to 1: sequence parallelism goes off with it.
  auto* tp = child<QSpinBox>("tp");
  type_into(tp, QStringLiteral("1"));
  QTest::keyClick(tp, Qt::Key_Return);
  QCOMPARE(session_->settings().training.tp, 1);
  QVERIFY(!session_->settings().training.sequence_parallel);
  QVERIFY(!child<QCheckBox>("sequenceParallel")->isChecked());
  QVERIFY(child<QSpinBox>("microBatch")->toolTip().startsWith(QStringLiteral("<p>")));

  // A micro-batch past any GPU is refused naming the field; a large one reads in TiB or PiB, not
  // a nine-digit GiB figure.
  auto* micro_batch = child<QSpinBox>("microBatch");
  micro_batch->setValue(99999999);
  QVERIFY(!session_->current().has_value());
  QVERIFY2(session_->error().startsWith(QStringLiteral("Micro-batch")), qPrintable(session_->error()));
  micro_batch->setValue(60000);
  QVERIFY2(session_->current().has_value(), qPrintable(session_->error()));
  QVERIFY(window_->showTableTab(QStringLiteral("memory")));
  const QAbstractItemModel* memory = child<QTableView>("memoryTable")->model();
  int checked = 0;
  for (int r = 0; r < memory->rowCount(); ++r)
    if (memory->headerData(r, Qt::Vertical).toString() == term_label(Term::device_total)) {
      const QString text = memory->index(r, 0).data().toString();
      QVERIFY2((text.endsWith(QStringLiteral(" TiB")) || text.endsWith(QStringLiteral(" PiB"))) && text.size() < 12,
               qPrintable(text));
      ++checked;
    }
  QCOMPARE(checked, 1);
}

// At 1024x700 the window fits the screen (its minimum no larger), and an error leaves the side
// panel where it was (it once moved 42 px, and the next click landed in another field).
void TestGuiJourneys::layout_holds_at_1024x700() {
  window_->resize(1024, 700);
  QTest::qWait(20);
  QVERIFY2(window_->minimumSizeHint().width() <= 1024 && window_->minimumSizeHint().height() <= 700,
           qPrintable(QStringLiteral("%1x%2").arg(window_->minimumSizeHint().width()).arg(window_->minimumSizeHint().height())));
  QCOMPARE(window_->size(), QSize(1024, 700));
  window_->applySettings(base_settings(QStringLiteral("llama-2-7b"), 8, Strategy::fsdp_full, 1));
  QTest::qWait(20);
  auto* seq = child<QSpinBox>("seq");
  const QPoint before = seq->mapTo(window_.get(), QPoint(0, 0));
  auto* tp = child<QSpinBox>("tp");
  type_into(tp, QStringLiteral("3"));  // 8 GPUs: TP 3 does not divide them
  QTest::keyClick(tp, Qt::Key_Return);
  QVERIFY(!session_->current().has_value());
  QTest::qWait(20);
  QCOMPARE(seq->mapTo(window_.get(), QPoint(0, 0)), before);
}

// A bad network spec is named by its field, Network, not by the command line's --inter-node.
void TestGuiJourneys::errors_speak_of_the_windows_fields() {
  Settings s = base_settings(QStringLiteral("llama-2-7b"), 8, Strategy::fsdp_full, 1);
  s.cluster_spec = "2x8xA100-80GB";
  window_->applySettings(s);
  auto* network = child<QLineEdit>("interNode");
  type_into(network, QStringLiteral("fast"));
  QTest::keyClick(network, Qt::Key_Return);
  QVERIFY(!session_->current().has_value());
  QVERIFY2(session_->error().startsWith(QStringLiteral("Network 'fast'")), qPrintable(session_->error()));
  QVERIFY2(window_->verdictText().contains(QStringLiteral("Network 'fast'")), qPrintable(window_->verdictText()));
  QVERIFY(!window_->verdictText().contains(QStringLiteral("--")));
}

// Help > About names the version the CLI's --version prints (one, project()'s).
void TestGuiJourneys::about_shows_the_version() {
  QAction* about = nullptr;
  for (QAction* a : window_->findChildren<QAction*>())
    if (a->text() == QLatin1String("&About trainplan-gui")) about = a;
  QVERIFY(about);
  QString text;
  QTimer::singleShot(0, [&text] {
    for (QWidget* w : QApplication::topLevelWidgets())
      if (auto* box = qobject_cast<QMessageBox*>(w)) {
        text = box->text();
        box->accept();
      }
  });
  about->trigger();
  QVERIFY2(text.contains(QStringLiteral("trainplan-gui " TRAINPLAN_VERSION)), qPrintable(text));
}

QTEST_MAIN(TestGuiJourneys)
#include "tst_gui_journeys.moc"
