// The journeys that once left the window in a state no one had asked for, each driven the way a
// user drives it (keyboard and mouse, headless): a model change that reset the sequence length,
// results of an earlier request shown as current, verdicts that disagreed between the banner, the
// charts and the tables.
#include <QComboBox>
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableView>
#include <QLineEdit>
#include <QSpinBox>

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
};

// llama-2-7b at 4096 tokens, then llama-2-13b, which takes 4096 too: the length stays (it once
// fell back to 2048, the default of a request without one). GPT-2 takes 1024 positions: there the
// length starts at GPT-2's default, as the CLI would.
void TestGuiJourneys::changing_the_model_keeps_the_sequence_length() {
  Settings s = base_settings(QStringLiteral("llama-2-7b"), 8, Strategy::fsdp_full, 1);
  s.training.seq = 4096;
  window_->applySettings(s);
  auto* model = child<QComboBox>("model");
  type_into(model->lineEdit(), QStringLiteral("llama-2-13b"));
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

QTEST_MAIN(TestGuiJourneys)
#include "tst_gui_journeys.moc"
