// The table models over the library's results: structurally sound (QAbstractItemModelTester) and
// showing exactly the library's numbers; settings persistence and the command line.
#include <QAbstractItemModelTester>
#include <QSettings>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <memory>

#include "models.hpp"
#include "session.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/request/catalog.hpp"
#include "trainplan/planner/estimate.hpp"
#include "trainplan/planner/fit.hpp"

using namespace trainplan;
using namespace trainplan::gui;

namespace {

Settings settings_for(const QString& model, int gpus, Strategy strategy, std::int64_t micro_batch) {
  Settings s;
  s.model = model.toStdString();
  s.setCluster({"", "A100-80GB", gpus, 1});
  s.training.strategy = strategy;
  s.training.micro_batch = micro_batch;
  return s;
}

// What the library says for these settings, computed here without the GUI.
struct Expected {
  model::Architecture arch;
  model::ParameterCounts params;
  hardware::Cluster cluster;
  model::Training training;
  planner::Estimate estimate;
};

Expected library(const request::Catalog& catalog, const Settings& s) {
  Expected x;
  x.arch = catalog.resolve_model(s.model).arch;
  x.params = model::count_parameters(x.arch);
  x.cluster = catalog.resolve_cluster(s.cluster_spec, std::nullopt).cluster;
  x.training = s.training;
  x.training.lora.targets = model::split_targets(s.lora_targets);
  x.estimate = planner::evaluate(x.arch, x.params, x.training, x.cluster);
  return x;
}

}  // namespace

class TestGuiModels : public QObject {
  Q_OBJECT
 private:
  request::Catalog catalog_ = request::Catalog::builtin();

 private Q_SLOTS:
  void models_pass_the_item_model_tester_data();
  void models_pass_the_item_model_tester();
  void memory_model_shows_the_library_numbers_data();
  void memory_model_shows_the_library_numbers();
  void step_time_model_shows_the_library_numbers();
  void step_time_model_shows_the_reference_forward_for_dpo_only();
  void communication_and_strategies_follow_the_library();
  void sweep_marks_the_first_out_of_memory_point();
  void pins_add_columns();
  void bad_input_is_an_error_message_data();
  void bad_input_is_an_error_message();
  void seventy_b_on_32_gpus_evaluates_each_micro_batch();
  void settings_round_trip_through_qsettings();
  void command_line_parses_training_options();
  void command_line_rejects_bad_options_data();
  void command_line_rejects_bad_options();
};

void TestGuiModels::models_pass_the_item_model_tester_data() {
  QTest::addColumn<QString>("model");
  QTest::addColumn<int>("gpus");
  QTest::addColumn<int>("strategy");
  QTest::addColumn<int>("tp");
  QTest::newRow("7B single GPU") << "llama-2-7b" << 1 << int(Strategy::single) << 1;
  QTest::newRow("7B FSDP on 8") << "llama-2-7b" << 8 << int(Strategy::fsdp_full) << 1;
  QTest::newRow("13B ZeRO-3 TP2 on 8") << "llama-2-13b" << 8 << int(Strategy::zero3) << 2;
  QTest::newRow("Mixtral DDP on 8") << "mixtral-8x7b" << 8 << int(Strategy::ddp) << 1;
  QTest::newRow("invalid: TP 3") << "llama-2-7b" << 8 << int(Strategy::ddp) << 3;
}

void TestGuiModels::models_pass_the_item_model_tester() {
  QFETCH(QString, model);
  QFETCH(int, gpus);
  QFETCH(int, strategy);
  QFETCH(int, tp);
  MemoryModel memory;
  StepTimeModel time;
  CommunicationModel comm;
  StrategiesModel strategies;
  SweepModel sweep;
  PlansModel plans;
  CompareModel compare;
  std::vector<std::unique_ptr<QAbstractItemModelTester>> testers;
  for (QAbstractItemModel* m : std::initializer_list<QAbstractItemModel*>{
           &memory, &time, &comm, &strategies, &sweep, &plans, &compare})
    testers.push_back(std::make_unique<QAbstractItemModelTester>(
        m, QAbstractItemModelTester::FailureReportingMode::QtTest));

  Session session(catalog_);
  Settings s = settings_for(model, gpus, static_cast<Strategy>(strategy), 2);
  s.training.tp = tp;
  session.setSettings(s);
  session.pinCurrent();
  std::vector<const Evaluation*> cols;
  QStringList names;
  if (session.current()) {
    cols = {&*session.current(), &session.pins().front()};
    names = {QStringLiteral("Current"), QStringLiteral("Pin A")};
  }
  memory.setEvaluations(cols, names);
  time.setEvaluations(cols, names);
  compare.setEvaluations(cols, names);
  comm.setEstimate(session.current() ? &session.current()->estimate : nullptr);
  strategies.setResult(session.strategies());
  sweep.setSweep(session.sweep());
  std::vector<PlanPoint> points;
  for (const SweepPoint& p : session.sweep().points)
    points.push_back({p.estimate, p.estimate.fits, {}});
  plans.setPlans(points);
  // Every cell of every role once, as a view would ask.
  for (QAbstractItemModel* m : std::initializer_list<QAbstractItemModel*>{
           &memory, &time, &comm, &strategies, &sweep, &plans, &compare})
    for (int r = 0; r < m->rowCount(); ++r)
      for (int c = 0; c < m->columnCount(); ++c)
        for (int role : {int(Qt::DisplayRole), int(Qt::ToolTipRole), kValueRole, int(Qt::FontRole),
                         int(Qt::TextAlignmentRole)})
          (void)m->data(m->index(r, c), role);
  // And empty again.
  memory.setEvaluations({}, {});
  time.setEvaluations({}, {});
  compare.setEvaluations({}, {});
  comm.setEstimate(nullptr);
  strategies.setResult({});
  sweep.setSweep({});
  plans.setPlans({});
  QCOMPARE(memory.rowCount() > 0, true);
  QCOMPARE(memory.columnCount(), 0);
}

void TestGuiModels::memory_model_shows_the_library_numbers_data() {
  QTest::addColumn<QString>("model");
  QTest::addColumn<int>("gpus");
  QTest::addColumn<int>("strategy");
  QTest::addColumn<int>("micro_batch");
  QTest::addColumn<int>("method");
  QTest::newRow("7B FSDP mb 1") << "llama-2-7b" << 8 << int(Strategy::fsdp_full) << 1
                                << int(Method::full);
  QTest::newRow("7B FSDP mb 8") << "llama-2-7b" << 8 << int(Strategy::fsdp_full) << 8
                                << int(Method::full);
  QTest::newRow("7B DDP mb 2") << "llama-2-7b" << 8 << int(Strategy::ddp) << 2 << int(Method::full);
  QTest::newRow("7B LoRA one GPU")
      << "llama-2-7b" << 1 << int(Strategy::single) << 4 << int(Method::lora);
  QTest::newRow("13B QLoRA one GPU")
      << "llama-2-13b" << 1 << int(Strategy::single) << 1 << int(Method::qlora);
  QTest::newRow("70B one GPU (out of memory)")
      << "llama-2-70b" << 1 << int(Strategy::single) << 1 << int(Method::full);
}

void TestGuiModels::memory_model_shows_the_library_numbers() {
  QFETCH(QString, model);
  QFETCH(int, gpus);
  QFETCH(int, strategy);
  QFETCH(int, micro_batch);
  QFETCH(int, method);
  Settings s = settings_for(model, gpus, static_cast<Strategy>(strategy), micro_batch);
  s.training.method = static_cast<Method>(method);
  Session session(catalog_);
  session.setSettings(s);
  QVERIFY2(session.current().has_value(), qPrintable(session.error()));
  const Expected x = library(catalog_, s);
  const planner::MemoryBreakdown& m = x.estimate.memory;

  MemoryModel mm;
  QAbstractItemModelTester tester(&mm, QAbstractItemModelTester::FailureReportingMode::QtTest);
  mm.setEvaluations({&*session.current()}, {QStringLiteral("Current")});
  QCOMPARE(mm.columnCount(), 1);
  QCOMPARE(mm.partRows(), 6);
  const std::pair<Term, Bytes> expected[] = {{Term::weights, m.weights},
                                             {Term::gradients, m.gradients},
                                             {Term::optimizer_state, m.optimizer},
                                             {Term::activations, m.activations},
                                             {Term::buffers, m.buffers},
                                             {Term::overhead, m.overhead},
                                             {Term::device_total, m.device_total},
                                             {Term::usable, x.cluster.gpu.usable_memory},
                                             {Term::peak_allocated, m.peak_allocated},
                                             {Term::host, m.host}};
  for (const auto& [term, bytes] : expected) {
    const auto row = mm.rowOf(term);
    QVERIFY(row.has_value());
    QCOMPARE(mm.index(*row, 0).data(kValueRole).toDouble(), to_gib(bytes));
    QVERIFY(!mm.index(*row, 0).data(Qt::ToolTipRole).toString().isEmpty());
  }
  // The stacked parts add up to the device total the library reports.
  double parts = 0;
  for (int r = 0; r < mm.partRows(); ++r) parts += mm.value(r, 0);
  QVERIFY(std::abs(parts - to_gib(m.device_total)) < 1e-9 * std::max(1.0, parts));
  const auto max_mb = mm.rowOf(Term::max_micro_batch);
  QVERIFY(max_mb);
  QCOMPARE(mm.index(*max_mb, 0).data().toString(), QString::number(x.estimate.max_micro_batch));
  QCOMPARE(session.current()->estimate.fits, x.estimate.fits);
}

void TestGuiModels::step_time_model_shows_the_library_numbers() {
  const Settings s = settings_for(QStringLiteral("llama-2-13b"), 8, Strategy::zero3, 2);
  Session session(catalog_);
  session.setSettings(s);
  QVERIFY2(session.current(), qPrintable(session.error()));
  const Expected x = library(catalog_, s);
  StepTimeModel tm;
  QAbstractItemModelTester tester(&tm, QAbstractItemModelTester::FailureReportingMode::QtTest);
  tm.setEvaluations({&*session.current()}, {QStringLiteral("Current")});
  const std::pair<Term, double> expected[] = {
      {Term::step, x.estimate.time.step.value()},
      {Term::compute, x.estimate.time.compute.value()},
      {Term::recompute, x.estimate.time.recompute.value()},
      {Term::bubble, x.estimate.time.bubble.value()},
      {Term::optimizer_step, x.estimate.time.optimizer.value()},
      {Term::offload_time, x.estimate.time.offload.value()},
      {Term::tokens_per_s, x.estimate.throughput.tokens_per_s},
      {Term::mfu, x.estimate.throughput.mfu},
      {Term::hfu, x.estimate.throughput.hfu}};
  for (const auto& [term, value] : expected) {
    const auto row = tm.rowOf(term);
    QVERIFY(row);
    QCOMPARE(tm.value(*row, 0), value);
  }
  // One exposed-communication row per collective kind, carrying the library's exposed time.
  int comm_rows = 0;
  for (int r = 0; r < tm.partRows(); ++r)
    comm_rows += tm.term(r) == Term::communication_exposed ? 1 : 0;
  QCOMPARE(comm_rows, static_cast<int>(x.estimate.communication.size()));
}

// DPO's reference forward is a row of its own, with the library's time; SFT has no such row.
void TestGuiModels::step_time_model_shows_the_reference_forward_for_dpo_only() {
  Settings s = settings_for(QStringLiteral("llama-2-7b"), 8, Strategy::zero3, 1);
  s.training.checkpointing = Checkpointing::full;
  Session session(catalog_);
  session.setSettings(s);
  QVERIFY2(session.current(), qPrintable(session.error()));
  StepTimeModel tm;
  tm.setEvaluations({&*session.current()}, {QStringLiteral("SFT")});
  QVERIFY(!tm.rowOf(Term::reference_forward));

  s.training.objective = Objective::dpo;
  session.setSettings(s);
  QVERIFY2(session.current(), qPrintable(session.error()));
  const Expected x = library(catalog_, s);
  QVERIFY(x.estimate.time.reference.value() > 0.0);
  tm.setEvaluations({&*session.current()}, {QStringLiteral("DPO")});
  const auto row = tm.rowOf(Term::reference_forward);
  QVERIFY(row);
  QCOMPARE(tm.value(*row, 0), x.estimate.time.reference.value());
}

void TestGuiModels::communication_and_strategies_follow_the_library() {
  const Settings s = settings_for(QStringLiteral("llama-2-7b"), 8, Strategy::fsdp_full, 2);
  Session session(catalog_);
  session.setSettings(s);
  QVERIFY(session.current());
  const Expected x = library(catalog_, s);
  CommunicationModel cm;
  QAbstractItemModelTester t1(&cm, QAbstractItemModelTester::FailureReportingMode::QtTest);
  cm.setEstimate(&session.current()->estimate);
  QCOMPARE(cm.rowCount(), static_cast<int>(x.estimate.communication.size()));
  for (int r = 0; r < cm.rowCount(); ++r) {
    const planner::CommunicationItem& it = x.estimate.communication[static_cast<std::size_t>(r)];
    QCOMPARE(cm.index(r, CommunicationModel::collective).data().toString(),
             QString::fromStdString(it.collective));
    QCOMPARE(cm.index(r, CommunicationModel::tier).data().toString(),
             QString::fromStdString(it.tier));
    QCOMPARE(cm.index(r, CommunicationModel::source).data().toString(), QStringLiteral("datasheet"));
    QCOMPARE(cm.index(r, CommunicationModel::bytes).data(kValueRole).toDouble(), it.bytes.value());
    QCOMPARE(cm.index(r, CommunicationModel::exposed).data(kValueRole).toDouble(),
             it.exposed.value());
  }

  planner::SearchRequest req;
  req.base = x.training;
  req.micro_batch = req.base.micro_batch;
  const planner::FitResult f = planner::fit(x.arch, x.params, req, x.cluster);
  StrategiesModel sm;
  QAbstractItemModelTester t2(&sm, QAbstractItemModelTester::FailureReportingMode::QtTest);
  sm.setResult(session.strategies());
  QCOMPARE(sm.rowCount(), static_cast<int>(f.candidates.size()));
  for (int r = 0; r < sm.rowCount(); ++r) {
    const planner::Candidate& k = f.candidates[static_cast<std::size_t>(r)];
    QCOMPARE(sm.index(r, StrategiesModel::device_total).data(kValueRole).toDouble(),
             to_gib(k.memory.device_total));
    QCOMPARE(sm.index(r, StrategiesModel::fits).data(kValueRole).toBool(), k.fits);
    QCOMPARE(sm.index(r, StrategiesModel::max_micro_batch).data(kValueRole).toDouble(),
             static_cast<double>(k.max_micro_batch));
  }
}

void TestGuiModels::sweep_marks_the_first_out_of_memory_point() {
  const Settings s = settings_for(QStringLiteral("llama-2-7b"), 8, Strategy::fsdp_full, 4);
  Session session(catalog_);
  session.setSettings(s);
  QVERIFY(session.current());
  const Sweep& sw = session.sweep();
  QVERIFY(sw.current);
  QCOMPARE(sw.points[*sw.current].x, std::int64_t{4});
  const std::int64_t largest = session.current()->estimate.max_micro_batch;
  QVERIFY(largest >= 1);
  QVERIFY(sw.first_oom);
  QCOMPARE(sw.points[*sw.first_oom].x, largest + 1);
  for (std::size_t i = 0; i < *sw.first_oom; ++i) QVERIFY(sw.points[i].estimate.fits);
  SweepModel m;
  QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
  m.setSweep(sw);
  QCOMPARE(m.rowCount(), static_cast<int>(sw.points.size()));
  QCOMPARE(m.index(static_cast<int>(*sw.first_oom), SweepModel::fits).data(kValueRole).toBool(),
           false);
}

void TestGuiModels::pins_add_columns() {
  Session session(catalog_);
  QSignalSpy pins(&session, &Session::pinsChanged);
  Settings s = settings_for(QStringLiteral("llama-2-7b"), 8, Strategy::fsdp_full, 1);
  for (std::int64_t mb : {1, 2, 4, 8}) {
    s.training.micro_batch = mb;
    session.setSettings(s);
    const bool pinned = session.pinCurrent();
    QCOMPARE(pinned, mb != 8);  // three at most
  }
  QCOMPARE(session.pins().size(), Session::kMaxPins);
  QCOMPARE(pins.count(), 3);
  QCOMPARE(session.pins()[1].estimate.training.micro_batch, std::int64_t{2});
  session.unpin(0);
  QCOMPARE(session.pins().front().estimate.training.micro_batch, std::int64_t{2});
  session.clearPins();
  QVERIFY(session.pins().empty());
}

void TestGuiModels::bad_input_is_an_error_message_data() {
  QTest::addColumn<QString>("model");
  QTest::addColumn<int>("tp");
  QTest::addColumn<QString>("targets");
  QTest::addColumn<QString>("expected");
  QTest::newRow("tp does not divide heads") << "llama-2-7b" << 3 << "q,v"
                                            << "does not divide";
  QTest::newRow("unknown model") << "llama-9-7b" << 1 << "q,v"
                                 << "unknown model";
  QTest::newRow("unreadable config") << "/nonexistent/config.json" << 1 << "q,v"
                                     << "/nonexistent";
  QTest::newRow("unknown LoRA target") << "llama-2-7b" << 1 << "q,nonsense"
                                       << "nonsense";
  QTest::newRow("empty LoRA targets") << "llama-2-7b" << 1 << " "
                                      << "";
}

void TestGuiModels::bad_input_is_an_error_message() {
  QFETCH(QString, model);
  QFETCH(int, tp);
  QFETCH(QString, targets);
  QFETCH(QString, expected);
  Settings s = settings_for(model, 8, Strategy::ddp, 1);
  s.training.tp = tp;
  s.training.method = Method::lora;
  s.lora_targets = targets.toStdString();
  Session session(catalog_);
  QSignalSpy changed(&session, &Session::changed);
  session.setSettings(s);
  QCOMPARE(changed.count(), 1);
  QVERIFY(!session.current());
  QVERIFY(!session.error().isEmpty());
  QVERIFY2(session.error().contains(expected), qPrintable(session.error()));
  QVERIFY(session.sweep().points.empty());
}

void TestGuiModels::seventy_b_on_32_gpus_evaluates_each_micro_batch() {
  Session session(catalog_);
  Settings s = settings_for(QStringLiteral("llama-2-70b"), 8, Strategy::fsdp_full, 1);
  s.cluster_spec = "4x8xA100-80GB";
  s.training.tp = 2;
  s.training.pp = 2;
  double worst = 0;
  for (std::int64_t mb : {1, 2, 3, 4}) {
    s.training.micro_batch = mb;
    session.setSettings(s);
    QVERIFY2(session.current(), qPrintable(session.error()));
    worst = std::max(worst, session.lastEvaluationMs());
  }
  // Speed is measured in bench/ (BM_EvaluateEstimate, BM_Fit13bOn4xA100), not asserted here.
  qInfo("worst evaluation (estimate, sweep, strategies): %.2f ms", worst);
}

void TestGuiModels::settings_round_trip_through_qsettings() {
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  Settings s = settings_for(QStringLiteral("mistral-7b"), 4, Strategy::zero2, 3);
  s.cluster_spec = "2x4xA100-80GB";
  s.inter_node = "4x400Gbps";
  s.training.method = Method::qlora;
  s.training.precision = Precision::fp16_mixed;
  s.training.optimizer = Optimizer::paged_adamw_8bit;
  s.training.tp = 2;
  s.training.grad_accum = 16;
  s.training.seq = 8192;
  s.training.checkpointing = Checkpointing::selective;
  s.training.offload = Offload::optimizer;
  s.training.lora.rank = 64;
  s.training.lora.alpha = 128;
  s.training.quant = Quant::nf4_dq;
  s.lora_targets = "all-linear";
  s.sweep = SweepAxis::seq;
  {
    QSettings q(dir.filePath(QStringLiteral("t.ini")), QSettings::IniFormat);
    store_settings(q, s);
  }
  QSettings q(dir.filePath(QStringLiteral("t.ini")), QSettings::IniFormat);
  const Settings r = restore_settings(q);
  QCOMPARE(r.model, s.model);
  QCOMPARE(r.cluster_spec, s.cluster_spec);
  QCOMPARE(r.inter_node, s.inter_node);
  QCOMPARE(r.training.method, s.training.method);
  QCOMPARE(r.training.precision, s.training.precision);
  QCOMPARE(r.training.optimizer, s.training.optimizer);
  QCOMPARE(r.training.strategy, s.training.strategy);
  QCOMPARE(r.training.tp, 2);
  QCOMPARE(r.training.micro_batch, std::int64_t{3});
  QCOMPARE(r.training.grad_accum, std::int64_t{16});
  QCOMPARE(r.training.seq, std::int64_t{8192});
  QCOMPARE(r.training.checkpointing, s.training.checkpointing);
  QCOMPARE(r.training.offload, s.training.offload);
  QCOMPARE(r.training.lora.rank, std::int64_t{64});
  QCOMPARE(r.training.lora.alpha, 128.0);
  QCOMPARE(r.training.quant, s.training.quant);
  QCOMPARE(r.lora_targets, s.lora_targets);
  QCOMPARE(r.sweep, SweepAxis::seq);

  // A corrupted value keeps the default rather than failing.
  QSettings bad(dir.filePath(QStringLiteral("bad.ini")), QSettings::IniFormat);
  bad.setValue(QStringLiteral("settings/method"), QStringLiteral("fulll"));
  bad.setValue(QStringLiteral("settings/tp"), QStringLiteral("-4"));
  const Settings d = restore_settings(bad);
  QCOMPARE(d.training.method, Method::full);
  QCOMPARE(d.training.tp, 1);
}

void TestGuiModels::command_line_parses_training_options() {
  const QStringList args{QStringLiteral("trainplan-gui"),
                         QStringLiteral("--model"),
                         QStringLiteral("llama-2-13b"),
                         QStringLiteral("--cluster"),
                         QStringLiteral("2x8xH100-80GB"),
                         QStringLiteral("--method"),
                         QStringLiteral("lora"),
                         QStringLiteral("--strategy"),
                         QStringLiteral("zero3"),
                         QStringLiteral("--tp"),
                         QStringLiteral("2"),
                         QStringLiteral("--micro-batch"),
                         QStringLiteral("4"),
                         QStringLiteral("--lora-targets"),
                         QStringLiteral("all-linear"),
                         QStringLiteral("--screenshot"),
                         QStringLiteral("out.png"),
                         QStringLiteral("--sequence-parallel")};
  const CommandLine cl = parse_command_line(args, catalog_);
  QCOMPARE(cl.settings.model, std::string("llama-2-13b"));
  QCOMPARE(cl.settings.cluster(), (request::ClusterShape{"", "H100-80GB", 8, 2}));
  QCOMPARE(cl.settings.training.method, Method::lora);
  QCOMPARE(cl.settings.training.strategy, Strategy::zero3);
  QVERIFY(cl.settings.has("strategy"));
  QVERIFY(!cl.settings.has("checkpointing"));
  QCOMPARE(cl.settings.training.tp, 2);
  QCOMPARE(cl.settings.training.micro_batch, std::int64_t{4});
  QVERIFY(cl.settings.training.sequence_parallel);
  QCOMPARE(cl.settings.lora_targets, std::string("all-linear"));
  QCOMPARE(cl.screenshot, QStringLiteral("out.png"));
  QCOMPARE(cl.size, QSize(1280, 800));
}

void TestGuiModels::command_line_rejects_bad_options_data() {
  QTest::addColumn<QStringList>("args");
  QTest::addColumn<QString>("expected");
  QTest::newRow("unknown method") << QStringList{QStringLiteral("--method"), QStringLiteral("ful")}
                                  << "unknown method 'ful'";
  QTest::newRow("tp not a number")
      << QStringList{QStringLiteral("--tp"), QStringLiteral("two")} << "--tp";
  QTest::newRow("micro-batch zero")
      << QStringList{QStringLiteral("--micro-batch"), QStringLiteral("0")} << "--micro-batch";
  QTest::newRow("unknown option") << QStringList{QStringLiteral("--tpp"), QStringLiteral("2")}
                                  << "tpp";
  QTest::newRow("unknown GPU") << QStringList{QStringLiteral("--cluster"), QStringLiteral("8xR100")}
                               << "R100";
  QTest::newRow("bad size") << QStringList{QStringLiteral("--size"), QStringLiteral("big")}
                            << "--size";
}

void TestGuiModels::command_line_rejects_bad_options() {
  QFETCH(QStringList, args);
  QFETCH(QString, expected);
  args.prepend(QStringLiteral("trainplan-gui"));
  try {
    (void)parse_command_line(args, catalog_);
    QFAIL("expected an InputError");
  } catch (const InputError& e) {
    QVERIFY2(QString::fromUtf8(e.what()).contains(expected), e.what());
  }
}

QTEST_MAIN(TestGuiModels)
#include "tst_gui_models.moc"
