// The front ends agree: for the same request, `trainplan estimate`, `trainplan fit` and the GUI
// (started with the same options, as trainplan-gui's command line takes them) give the same
// configuration for what the request leaves out, the same verdict, the same memory and tokens/s,
// and say the verdict in the same words. The CLI runs as a separate process, as a user runs it.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QtTest>
#include <cmath>
#include <memory>

#include "main_window.hpp"
#include "session.hpp"
#include "trainplan/reports/verdict.hpp"
#include "trainplan/request/catalog.hpp"

namespace trainplan::gui {
namespace {

struct Cli {
  int exit = -1;
  QJsonObject json;
};

// The CLI's answer as JSON, and its exit status (0 fits, 1 does not; 2 would be a refusal).
Cli run_cli(const QString& command, const QStringList& request) {
  QProcess p;
  p.start(QStringLiteral(TRAINPLAN_CLI), QStringList{command} + request + QStringList{QStringLiteral("--json")});
  if (!p.waitForFinished(120000)) return {};
  return {p.exitCode(), QJsonDocument::fromJson(p.readAllStandardOutput()).object()};
}

QString words(const std::string_view s) { return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size())); }

// The sentence up to its first "; ": the verdict, the subject and why (what follows, the micro-batch
// clause and the speed, is each front end's own).
QString opening(const QString& sentence) { return sentence.section(QStringLiteral("; "), 0, 0); }

}  // namespace

class TestGuiAgreement : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void same_answer_data();
  void same_answer();

 private:
  request::Catalog catalog_ = request::Catalog::builtin();
};

void TestGuiAgreement::same_answer_data() {
  QTest::addColumn<QString>("model");
  QTest::addColumn<QString>("cluster");
  QTest::addColumn<QStringList>("options");
  const auto row = [](const char* name, const char* model, const char* cluster, QStringList options) {
    QTest::newRow(name) << QString::fromUtf8(model) << QString::fromUtf8(cluster) << options;
  };
  row("7B on 8 A100", "llama-2-7b", "8xA100-80GB", {});
  row("13B on 4 A100", "llama-2-13b", "4xA100-80GB", {});
  row("13B ZeRO-3 seq 4096 mb 6", "llama-2-13b", "4xA100-80GB",
      {"--framework", "deepspeed", "--strategy", "zero3", "--checkpointing", "full", "--seq", "4096", "--micro-batch", "6"});
  row("70B on 8 A100", "llama-2-70b", "8xA100-80GB", {});
  row("70B on 2 nodes of H100", "llama-2-70b", "2x8xH100-80GB", {"--seq", "4096"});
  row("7B LoRA on one A100-40GB", "llama-2-7b", "1xA100-40GB", {"--method", "lora"});
  row("7B QLoRA mb 4", "llama-2-7b", "1xA100-40GB", {"--method", "qlora", "--micro-batch", "4"});
  row("Mistral LoRA mb 8", "mistral-7b", "2xA100-80GB", {"--method", "lora", "--micro-batch", "8"});
  row("Mixtral on 8 H100", "mixtral-8x7b", "8xH100-80GB", {});
  row("Llama 3.1 8B DeepSpeed", "llama-3.1-8b", "8xH100-80GB", {"--framework", "deepspeed"});
  row("Llama 3.1 70B Megatron TP8", "llama-3.1-70b", "4x8xH100-80GB", {"--framework", "megatron", "--tp", "8"});
  row("Qwen3 8B seq 8192", "qwen3-8b", "8xH100-80GB", {"--seq", "8192"});
  row("Gemma 2 9B LoRA", "gemma-2-9b", "4xA100-80GB", {"--method", "lora"});
  row("GPT-2 mb 16", "gpt2", "1xA100-80GB", {"--micro-batch", "16"});
  row("Falcon 40B on 8 A100-40GB", "falcon-40b", "8xA100-40GB", {});
  row("405B TP8 PP4 Megatron", "llama-3.1-405b", "16x8xH100-80GB", {"--framework", "megatron", "--tp", "8", "--pp", "4"});
  row("Phi-3 mini on one H100", "phi-3-mini-4k", "1xH100-80GB", {});
  row("Qwen3 30B-A3B on 8 H100", "qwen3-30b-a3b", "8xH100-80GB", {});
  row("TinyLlama on 4 A100-40GB", "tinyllama-1.1b", "4xA100-40GB", {"--micro-batch", "8"});
  row("70B on one A100-40GB", "llama-2-70b", "1xA100-40GB", {});
}

void TestGuiAgreement::same_answer() {
  QFETCH(QString, model);
  QFETCH(QString, cluster);
  QFETCH(QStringList, options);
  const QStringList request = QStringList{model, cluster} + options;
  const Cli estimate = run_cli(QStringLiteral("estimate"), request);
  const Cli fit = run_cli(QStringLiteral("fit"), request);
  QVERIFY2(estimate.exit == 0 || estimate.exit == 1, qPrintable(request.join(QLatin1Char(' '))));
  QVERIFY2(fit.exit == 0 || fit.exit == 1, qPrintable(request.join(QLatin1Char(' '))));

  // The GUI as `trainplan-gui --model M --cluster C OPTIONS` starts it (gui/src/main.cpp).
  CommandLine cl = parse_command_line(
      QStringList{QStringLiteral("trainplan-gui"), QStringLiteral("--model"), model, QStringLiteral("--cluster"), cluster} +
          options,
      catalog_);
  Session session(catalog_);
  MainWindow window(session, MainWindow::Options{false});
  window.applySettings(session.completed(cl.settings));
  QVERIFY(session.current().has_value());
  const planner::Estimate& g = session.current()->estimate;

  // One configuration for what the request leaves out.
  const QJsonObject plan = estimate.json.value(QStringLiteral("plan")).toObject();
  QCOMPARE(plan.value(QStringLiteral("strategy")).toString(), words(to_string(g.training.strategy)));
  QCOMPARE(plan.value(QStringLiteral("checkpointing")).toString(), words(to_string(g.training.checkpointing)));
  QCOMPARE(plan.value(QStringLiteral("offload")).toString(), words(to_string(g.training.offload)));
  QCOMPARE(plan.value(QStringLiteral("micro_batch")).toInteger(), g.training.micro_batch);
  QCOMPARE(plan.value(QStringLiteral("tp")).toInteger(), std::int64_t{g.training.tp});
  QCOMPARE(plan.value(QStringLiteral("pp")).toInteger(), std::int64_t{g.training.pp});
  // One verdict and the same numbers.
  QCOMPARE(plan.value(QStringLiteral("verdict")).toString(), words(to_string(g.verdict.verdict)));
  QCOMPARE(estimate.exit, g.fits ? 0 : 1);
  const QJsonObject memory = plan.value(QStringLiteral("memory")).toObject();
  QCOMPARE(memory.value(QStringLiteral("device_total_bytes")).toDouble(), std::round(g.memory.device_total.value()));
  const double tokens = plan.value(QStringLiteral("tokens_per_s")).toDouble();
  QVERIFY2(std::abs(tokens - g.throughput.tokens_per_s) <= 1e-9 * tokens,
           qPrintable(QStringLiteral("%1 vs %2").arg(tokens).arg(g.throughput.tokens_per_s)));
  QVERIFY2(window.verdictText().startsWith(words(reports::verdict_look(g.verdict.verdict).headline) + QStringLiteral(" — ")),
           qPrintable(window.verdictText()));

  // fit's table holds the same configuration with the same verdict and memory; what it
  // recommends is what estimate and the GUI chose, said in the same words as the banner.
  const QJsonArray candidates = fit.json.value(QStringLiteral("candidates")).toArray();
  int same = -1;
  for (int i = 0; i < candidates.size(); ++i) {
    const QJsonObject k = candidates[i].toObject();
    if (k.value(QStringLiteral("strategy")) == plan.value(QStringLiteral("strategy")) &&
        k.value(QStringLiteral("checkpointing")) == plan.value(QStringLiteral("checkpointing")) &&
        k.value(QStringLiteral("offload")) == plan.value(QStringLiteral("offload")) &&
        k.value(QStringLiteral("expert_parallel")) == plan.value(QStringLiteral("expert_parallel")))
      same = i;
  }
  QVERIFY2(same >= 0, "fit lists the configuration estimate and the GUI chose");
  const QJsonObject k = candidates[same].toObject();
  QCOMPARE(k.value(QStringLiteral("verdict")).toString(), words(to_string(g.verdict.verdict)));
  QCOMPARE(k.value(QStringLiteral("memory")).toObject().value(QStringLiteral("device_total_bytes")).toDouble(),
           std::round(g.memory.device_total.value()));
  const QJsonObject verdict = fit.json.value(QStringLiteral("verdict")).toObject();
  if (verdict.value(QStringLiteral("recommended")).isDouble()) {
    QCOMPARE(verdict.value(QStringLiteral("recommended")).toInt(), same);
    QCOMPARE(opening(window.verdictText()), opening(verdict.value(QStringLiteral("summary")).toString()));
  }
}

}  // namespace trainplan::gui

QTEST_MAIN(trainplan::gui::TestGuiAgreement)
#include "tst_gui_agreement.moc"
