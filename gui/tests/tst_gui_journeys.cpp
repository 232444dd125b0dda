// The journeys that once left the window in a state no one had asked for, each driven the way a
// user drives it (keyboard and mouse, headless): a model change that reset the sequence length,
// results of an earlier request shown as current, verdicts that disagreed between the banner, the
// charts and the tables.
#include <QComboBox>
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

QTEST_MAIN(TestGuiJourneys)
#include "tst_gui_journeys.moc"
