#include "main_window.hpp"

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QCloseEvent>
#include <QComboBox>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QKeySequence>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSettings>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QTextDocument>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>
#include <QtCharts/QScatterSeries>

#include "charts.hpp"
#include "display.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/reports/estimate_json.hpp"
#include "trainplan/request/files.hpp"
#include "trainplan/reports/result_json.hpp"
#include "trainplan/planner/emit.hpp"

namespace trainplan::gui {
namespace {

const QString kSettingsGroupWindow = QStringLiteral("window");

QSpinBox* spin(const char* name, int lo, int hi, const char* tip_key) {
  auto* s = new QSpinBox;
  s->setObjectName(QString::fromUtf8(name));
  s->setRange(lo, hi);
  s->setAccelerated(true);
  s->setToolTip(option_tooltip(tip_key));
  return s;
}

template <class E>
QComboBox* enum_combo(const char* name, const char* tip_key) {
  auto* c = new QComboBox;
  c->setObjectName(QString::fromUtf8(name));
  fill_enum_combo<E>(c);
  c->setToolTip(option_tooltip(tip_key));
  return c;
}

// "micro-batch" -> "microBatch": the object name of an option's field.
QString object_name(const std::string& option) {
  QString out;
  bool upper = false;
  for (const char ch : option) {
    if (ch == '-') {
      upper = true;
      continue;
    }
    out += upper ? QChar::fromLatin1(ch).toUpper() : QChar::fromLatin1(ch);
    upper = false;
  }
  return out;
}

// A field for one schema option: a combo box for a choice, a spin box for a number, a check box
// for a flag, a line edit for text.
QWidget* option_widget(const request::Option& o) {
  QWidget* w = nullptr;
  switch (o.kind) {
    case request::OptionKind::choice: {
      auto* c = new QComboBox;
      for (const std::string& choice : o.choices) c->addItem(qstr(choice));
      w = c;
      break;
    }
    case request::OptionKind::integer: {
      auto* sb = new QSpinBox;
      sb->setRange(static_cast<int>(std::max(o.lowest, 0.0)), static_cast<int>(std::min(o.highest, 1e9)));
      sb->setAccelerated(true);
      w = sb;
      break;
    }
    case request::OptionKind::real: {
      auto* d = new QDoubleSpinBox;
      d->setRange(o.lowest, std::min(o.highest, 1e9));
      d->setDecimals(2);
      d->setSingleStep(o.highest <= 1.0 ? 0.05 : 1.0);
      w = d;
      break;
    }
    case request::OptionKind::flag:
      w = new QCheckBox(qstr(o.label));
      break;
    case request::OptionKind::text:
      w = new QLineEdit;
      break;
  }
  w->setObjectName(object_name(o.name));
  w->setToolTip(qstr(o.details.empty() ? request::option_help(o, request::command::estimate) : o.details));
  return w;
}

QString widget_text(const QWidget* w) {
  if (const auto* c = qobject_cast<const QComboBox*>(w)) return c->currentText();
  if (const auto* sb = qobject_cast<const QSpinBox*>(w)) return QString::number(sb->value());
  if (const auto* d = qobject_cast<const QDoubleSpinBox*>(w)) return QString::number(d->value(), 'g', 10);
  if (const auto* b = qobject_cast<const QCheckBox*>(w)) return b->isChecked() ? QStringLiteral("true") : QStringLiteral("false");
  if (const auto* e = qobject_cast<const QLineEdit*>(w)) return e->text().trimmed();
  return {};
}

void set_widget_text(QWidget* w, const QString& text) {
  if (auto* c = qobject_cast<QComboBox*>(w)) {
    c->setCurrentIndex(c->findText(text));
  } else if (auto* sb = qobject_cast<QSpinBox*>(w)) {
    sb->setValue(text.toInt());
  } else if (auto* d = qobject_cast<QDoubleSpinBox*>(w)) {
    d->setValue(text.toDouble());
  } else if (auto* b = qobject_cast<QCheckBox*>(w)) {
    b->setChecked(text == QStringLiteral("true"));
  } else if (auto* e = qobject_cast<QLineEdit*>(w)) {
    if (e->text() != text) e->setText(text);
  }
}

QLabel* buddy_label(const QString& text, QWidget* buddy) {
  auto* l = new QLabel(text);
  l->setBuddy(buddy);
  l->setToolTip(buddy->toolTip());
  return l;
}

QTableView* table(const char* name, QAbstractItemModel* model) {
  auto* t = new QTableView;
  t->setObjectName(QString::fromUtf8(name));
  t->setModel(model);
  t->setAlternatingRowColors(true);
  t->setSelectionBehavior(QAbstractItemView::SelectRows);
  t->setSelectionMode(QAbstractItemView::SingleSelection);
  t->setTabKeyNavigation(false);
  t->horizontalHeader()->setStretchLastSection(true);
  t->verticalHeader()->setDefaultSectionSize(t->fontMetrics().height() + 6);
  t->setWordWrap(false);
  return t;
}

QChartView* chart_view(const char* name, const QString& accessible) {
  auto* chart = new QChart;
  auto* v = new QChartView(chart);
  v->setObjectName(QString::fromUtf8(name));
  v->setRenderHint(QPainter::Antialiasing);
  v->setFocusPolicy(Qt::StrongFocus);
  v->setAccessibleName(accessible);
  v->setMinimumSize(320, 220);
  return v;
}

QString plain(const QString& rich) {
  QTextDocument d;
  d.setHtml(rich);
  return d.toPlainText();
}

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

// ---- Building ---------------------------------------------------------------------------------

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

QWidget* MainWindow::buildForm() {
  auto* content = new QWidget;
  auto* outer = new QVBoxLayout(content);
  outer->setContentsMargins(6, 6, 6, 6);

  // Model.
  auto* model_box = new QGroupBox(QStringLiteral("Model"));
  auto* mf = new QFormLayout(model_box);
  model_ = new QComboBox;
  model_->setObjectName(QStringLiteral("model"));
  model_->setEditable(true);
  model_->setInsertPolicy(QComboBox::NoInsert);
  model_->setToolTip(option_tooltip("model"));
  for (const request::CatalogModel& m : session_.catalog().models()) {
    model_->addItem(qstr(m.name));
    if (m.parameters)
      model_->setItemData(model_->count() - 1,
                          QStringLiteral("%1: %2 parameters. %3")
                              .arg(qstr(m.name), thousands_text(*m.parameters), qstr(m.source)),
                          Qt::ToolTipRole);
  }
  auto* open_model = new QToolButton;
  open_model->setText(QStringLiteral("…"));
  open_model->setToolTip(QStringLiteral("Open a Hugging Face config.json (Ctrl+O)"));
  open_model->setAccessibleName(QStringLiteral("Open model config"));
  connect(open_model, &QToolButton::clicked, this, &MainWindow::openModelConfig);
  auto* model_row = new QHBoxLayout;
  model_row->addWidget(model_, 1);
  model_row->addWidget(open_model);
  mf->addRow(buddy_label(QStringLiteral("&Model"), model_), model_row);
  model_info_ = new QLabel;
  model_info_->setObjectName(QStringLiteral("modelInfo"));
  model_info_->setWordWrap(true);
  model_info_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  mf->addRow(model_info_);
  outer->addWidget(model_box);

  // Cluster.
  auto* cluster_box = new QGroupBox(QStringLiteral("Cluster"));
  auto* cf = new QFormLayout(cluster_box);
  gpu_ = new QComboBox;
  gpu_->setObjectName(QStringLiteral("gpu"));
  gpu_->setToolTip(option_tooltip("gpu"));
  for (const request::CatalogGpu& g : session_.catalog().gpus()) {
    gpu_->addItem(qstr(g.spec.name));
    gpu_->setItemData(
        gpu_->count() - 1,
        QStringLiteral("%1: %2 (%3 usable), %4. %5")
            .arg(qstr(g.spec.name), gib_text(g.spec.memory), gib_text(g.spec.usable_memory),
                 qstr(g.spec.intra_node.link), qstr(g.source)),
        Qt::ToolTipRole);
  }
  cf->addRow(buddy_label(QStringLiteral("&GPU"), gpu_), gpu_);
  gpus_per_node_ = spin("gpusPerNode", 1, 64, "gpus_per_node");
  cf->addRow(buddy_label(QStringLiteral("GPUs per &node"), gpus_per_node_), gpus_per_node_);
  nodes_ = spin("nodes", 1, 8192, "nodes");
  cf->addRow(buddy_label(QStringLiteral("N&odes"), nodes_), nodes_);
  inter_node_ = new QLineEdit;
  inter_node_->setObjectName(QStringLiteral("interNode"));
  inter_node_->setPlaceholderText(QStringLiteral("GPU default, e.g. 8x200Gbps"));
  inter_node_->setToolTip(option_tooltip("inter_node"));
  cf->addRow(buddy_label(QStringLiteral("Net&work"), inter_node_), inter_node_);
  host_memory_ = new QDoubleSpinBox;
  host_memory_->setObjectName(QStringLiteral("hostMemory"));
  host_memory_->setRange(0.0, 1e6);
  host_memory_->setDecimals(0);
  host_memory_->setSingleStep(256.0);
  host_memory_->setSuffix(QStringLiteral(" GiB"));
  host_memory_->setSpecialValueText(QStringLiteral("not checked"));
  host_memory_->setToolTip(option_tooltip("host_memory"));
  cf->addRow(buddy_label(QStringLiteral("Host memory"), host_memory_), host_memory_);
  cluster_file_ = new QLabel(QStringLiteral("none"));
  cluster_file_->setObjectName(QStringLiteral("clusterFile"));
  cluster_file_->setWordWrap(true);
  auto* open_cluster = new QToolButton;
  open_cluster->setText(QStringLiteral("…"));
  open_cluster->setToolTip(
      QStringLiteral("Open a cluster JSON file (data/clusters/ shows the format)"));
  open_cluster->setAccessibleName(QStringLiteral("Open cluster file"));
  connect(open_cluster, &QToolButton::clicked, this, &MainWindow::openClusterFile);
  clear_cluster_file_ = new QToolButton;
  clear_cluster_file_->setText(QStringLiteral("✕"));
  clear_cluster_file_->setToolTip(
      QStringLiteral("Use the GPU, GPUs per node and nodes above instead of the file"));
  clear_cluster_file_->setAccessibleName(QStringLiteral("Clear cluster file"));
  connect(clear_cluster_file_, &QToolButton::clicked, this, &MainWindow::clearClusterFile);
  auto* file_row = new QHBoxLayout;
  file_row->addWidget(cluster_file_, 1);
  file_row->addWidget(open_cluster);
  file_row->addWidget(clear_cluster_file_);
  cf->addRow(QStringLiteral("Cluster file"), file_row);
  profile_file_ = new QLabel;
  profile_file_->setObjectName(QStringLiteral("profileFile"));
  profile_file_->setWordWrap(true);
  auto* open_profile = new QToolButton;
  open_profile->setText(QStringLiteral("…"));
  open_profile->setToolTip(
      QStringLiteral("Open a hardware profile measured by trainplan-calibrate and fitted by "
                     "`trainplan calibrate fit`: measured collective, GEMM and attention "
                     "speeds replace the datasheet defaults in the time model."));
  open_profile->setAccessibleName(QStringLiteral("Open hardware profile"));
  connect(open_profile, &QToolButton::clicked, this, &MainWindow::openProfile);
  clear_profile_ = new QToolButton;
  clear_profile_->setText(QStringLiteral("✕"));
  clear_profile_->setToolTip(QStringLiteral("Use the datasheet defaults"));
  clear_profile_->setAccessibleName(QStringLiteral("Clear hardware profile"));
  connect(clear_profile_, &QToolButton::clicked, this, &MainWindow::clearProfile);
  auto* profile_row = new QHBoxLayout;
  profile_row->addWidget(profile_file_, 1);
  profile_row->addWidget(open_profile);
  profile_row->addWidget(clear_profile_);
  cf->addRow(QStringLiteral("Profile"), profile_row);
  outer->addWidget(cluster_box);

  // The training options, group by group, as the schema lists them.
  auto group_box = [&](const QString& title, const char* group) {
    auto* box = new QGroupBox(title);
    auto* form = new QFormLayout(box);
    addOptionRows(form, group);
    outer->addWidget(box);
    return std::pair{box, form};
  };
  group_box(QStringLiteral("Method and precision"), "method");
  lora_box_ = group_box(QStringLiteral("LoRA / QLoRA"), "adapters").first;
  group_box(QStringLiteral("Parallelism"), "parallelism");
  group_box(QStringLiteral("Batch"), "batch");
  auto* sf = group_box(QStringLiteral("Activations and offload"), "memory").second;
  sweep_axis_ = enum_combo<SweepAxis>("sweepAxis", "sweep");
  sf->addRow(buddy_label(QStringLiteral("Sweep over"), sweep_axis_), sweep_axis_);
  outer->addStretch(1);

  for (QFormLayout* f : content->findChildren<QFormLayout*>()) {
    f->setVerticalSpacing(3);
    f->setContentsMargins(6, 4, 6, 4);
  }
  outer->setSpacing(4);
  auto* scroll = new QScrollArea;
  scroll->setWidget(content);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setMinimumWidth(content->sizeHint().width() + 24);
  return scroll;
}

QWidget* MainWindow::buildCentral() {
  auto* central = new QWidget;
  auto* v = new QVBoxLayout(central);
  v->setContentsMargins(6, 6, 6, 6);

  banner_ = new QFrame;
  banner_->setObjectName(QStringLiteral("banner"));
  auto* bl = new QVBoxLayout(banner_);
  bl->setContentsMargins(10, 6, 10, 6);
  bl->setSpacing(2);
  verdict_label_ = new QLabel;
  verdict_label_->setObjectName(QStringLiteral("verdict"));
  verdict_label_->setWordWrap(true);
  verdict_label_->setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::TextSelectableByKeyboard);
  verdict_label_->setFocusPolicy(Qt::StrongFocus);
  verdict_label_->setAccessibleName(QStringLiteral("Verdict"));
  details_label_ = new QLabel;
  details_label_->setObjectName(QStringLiteral("details"));
  details_label_->setWordWrap(true);
  details_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  bl->addWidget(verdict_label_);
  bl->addWidget(details_label_);
  v->addWidget(banner_);

  memory_view_ = chart_view("memoryChart", QStringLiteral("Memory per GPU by component"));
  time_view_ = chart_view("stepTimeChart", QStringLiteral("Step time breakdown"));
  sweep_view_ = chart_view("sweepChart", QStringLiteral("Memory and throughput sweep"));
  plans_view_ =
      chart_view("plansChart", QStringLiteral("Plan search: memory against tokens per second"));
  for (QChartView* cv : {memory_view_, time_view_, sweep_view_, plans_view_}) {
    cv->setContextMenuPolicy(Qt::ActionsContextMenu);
    const QString name = cv == memory_view_  ? QStringLiteral("memory")
                         : cv == time_view_  ? QStringLiteral("time")
                         : cv == sweep_view_ ? QStringLiteral("sweep")
                                             : QStringLiteral("plans");
    auto* save = new QAction(QStringLiteral("Save chart as PNG or SVG…"), cv);
    connect(save, &QAction::triggered, this, [this, name] { exportChartDialog(name); });
    cv->addAction(save);
  }

  auto* plans_page = new QWidget;
  auto* pv = new QVBoxLayout(plans_page);
  pv->setContentsMargins(0, 4, 0, 0);
  auto* search_row = new QHBoxLayout;
  search_button_ = new QPushButton(QStringLiteral("Run search"));
  search_button_->setObjectName(QStringLiteral("runSearch"));
  search_button_->setToolTip(
      QStringLiteral("Search data, tensor and pipeline degrees, sharding, micro-batch, "
                     "checkpointing and offload for this model and cluster (Ctrl+R). "
                     "Click a point, or press Enter on a row of the Plans table, to "
                     "load that plan."));
  connect(search_button_, &QPushButton::clicked, this, [this] { session_.startSearch(); });
  cancel_button_ = new QPushButton(QStringLiteral("Cancel"));
  cancel_button_->setEnabled(false);
  connect(cancel_button_, &QPushButton::clicked, this, [this] { session_.cancelSearch(); });
  search_progress_ = new QProgressBar;
  search_progress_->setObjectName(QStringLiteral("searchProgress"));
  search_progress_->setVisible(false);
  search_label_ = new QLabel;
  search_label_->setWordWrap(true);
  search_row->addWidget(search_button_);
  search_row->addWidget(cancel_button_);
  search_row->addWidget(search_progress_, 1);
  search_row->addWidget(search_label_, 2);
  pv->addLayout(search_row);
  pv->addWidget(plans_view_, 1);

  chart_tabs_ = new QTabWidget;
  chart_tabs_->setObjectName(QStringLiteral("chartTabs"));
  chart_tabs_->addTab(time_view_, QStringLiteral("Step time"));
  chart_tabs_->addTab(sweep_view_, QStringLiteral("Sweep"));
  chart_tabs_->addTab(plans_page, QStringLiteral("Plan search"));

  auto* top = new QSplitter(Qt::Horizontal);
  top->setObjectName(QStringLiteral("chartSplitter"));
  top->addWidget(memory_view_);
  top->addWidget(chart_tabs_);
  top->setStretchFactor(0, 4);
  top->setStretchFactor(1, 5);
  top->setSizes({400, 500});

  table_tabs_ = new QTabWidget;
  table_tabs_->setObjectName(QStringLiteral("tableTabs"));
  table_tabs_->addTab(table("memoryTable", &memory_model_), QStringLiteral("Memory"));
  table_tabs_->addTab(table("stepTimeTable", &time_model_), QStringLiteral("Step time"));
  table_tabs_->addTab(table("communicationTable", &comm_model_), QStringLiteral("Communication"));
  auto* strategies = table("strategiesTable", &strategies_model_);
  connect(strategies, &QTableView::activated, this, &MainWindow::loadStrategy);
  table_tabs_->addTab(strategies, QStringLiteral("Strategies"));
  table_tabs_->addTab(table("sweepTable", &sweep_model_), QStringLiteral("Sweep"));
  auto* plans = table("plansTable", &plans_model_);
  connect(plans, &QTableView::activated, this, [this](const QModelIndex& i) {
    loaded_plan_ = i.row();
    session_.loadPlan(static_cast<std::size_t>(i.row()));
  });
  table_tabs_->addTab(plans, QStringLiteral("Plans"));
  auto* compare_page = new QWidget;
  auto* cv = new QVBoxLayout(compare_page);
  cv->setContentsMargins(0, 4, 0, 0);
  auto* pin_row = new QHBoxLayout;
  auto* pin = new QPushButton(QStringLiteral("Pin current"));
  pin->setObjectName(QStringLiteral("pinCurrent"));
  pin->setToolTip(
      QStringLiteral("Keep this configuration to compare side by side, in the charts too (Ctrl+P); "
                     "up to three."));
  connect(pin, &QPushButton::clicked, this, [this] { pin_action_->trigger(); });
  auto* unpin = new QPushButton(QStringLiteral("Unpin last"));
  connect(unpin, &QPushButton::clicked, this, [this] {
    if (!session_.pins().empty()) session_.unpin(session_.pins().size() - 1);
  });
  auto* clear = new QPushButton(QStringLiteral("Clear pins"));
  connect(clear, &QPushButton::clicked, this, [this] { session_.clearPins(); });
  pin_row->addWidget(pin);
  pin_row->addWidget(unpin);
  pin_row->addWidget(clear);
  pin_row->addStretch(1);
  cv->addLayout(pin_row);
  cv->addWidget(table("compareTable", &compare_model_), 1);
  table_tabs_->addTab(compare_page, QStringLiteral("Compare"));

  auto* split = new QSplitter(Qt::Vertical);
  split->setObjectName(QStringLiteral("mainSplitter"));
  split->addWidget(top);
  split->addWidget(table_tabs_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  v->addWidget(split, 1);
  return central;
}

void MainWindow::addOptionRows(QFormLayout* form, const char* group) {
  for (const request::Option& o : request::options()) {
    if (!o.in(request::command::gui) || o.positional || o.group != group) continue;
    QWidget* w = option_widget(o);
    option_widgets_.emplace_back(&o, w);
    if (o.kind == request::OptionKind::flag) {
      form->addRow(QString(), w);
    } else if (o.name == "strategy") {
      auto* recommend_button = new QPushButton(QStringLiteral("Recommend"));
      recommend_button->setObjectName(QStringLiteral("recommend"));
      recommend_button->setToolTip(
          QStringLiteral("Use the strategy, checkpointing and offload that planner::fit "
                         "recommends for this model and cluster (Ctrl+M)."));
      connect(recommend_button, &QPushButton::clicked, this, &MainWindow::recommend);
      auto* row = new QHBoxLayout;
      row->addWidget(w, 1);
      row->addWidget(recommend_button);
      form->addRow(buddy_label(qstr(o.label), w), row);
    } else {
      form->addRow(buddy_label(qstr(o.label), w), w);
    }
  }
}

void MainWindow::connectForm() {
  auto edited = [this] { formEdited(); };
  for (const auto& [option, w] : option_widgets_) {
    if (auto* c = qobject_cast<QComboBox*>(w)) connect(c, &QComboBox::currentIndexChanged, this, edited);
    if (auto* sb = qobject_cast<QSpinBox*>(w)) connect(sb, &QSpinBox::valueChanged, this, edited);
    if (auto* d = qobject_cast<QDoubleSpinBox*>(w)) connect(d, &QDoubleSpinBox::valueChanged, this, edited);
    if (auto* b = qobject_cast<QCheckBox*>(w)) connect(b, &QCheckBox::toggled, this, edited);
    if (auto* e = qobject_cast<QLineEdit*>(w)) connect(e, &QLineEdit::editingFinished, this, edited);
  }
  connect(sweep_axis_, &QComboBox::currentIndexChanged, this, edited);
  connect(model_, &QComboBox::activated, this, [this] { modelEdited(); });
  connect(model_->lineEdit(), &QLineEdit::editingFinished, this, [this] { modelEdited(); });
  connect(gpu_, &QComboBox::currentIndexChanged, this, [this] { clusterEdited(); });
  connect(gpus_per_node_, &QSpinBox::valueChanged, this, [this] { clusterEdited(); });
  connect(nodes_, &QSpinBox::valueChanged, this, [this] { clusterEdited(); });
  connect(inter_node_, &QLineEdit::editingFinished, this, [this] { clusterEdited(); });
  connect(host_memory_, &QDoubleSpinBox::valueChanged, this, [this] { clusterEdited(); });
}

// ---- Form <-> settings ------------------------------------------------------------------------

Settings MainWindow::formSettings() const {
  Settings s = session_.settings();
  s.model = sstr(model_->currentText().trimmed());
  s.cluster.gpu = sstr(gpu_->currentText());
  s.cluster.gpus_per_node = gpus_per_node_->value();
  s.cluster.nodes = nodes_->value();
  s.cluster.inter_node = sstr(inter_node_->text().trimmed());
  s.cluster.host_memory_gib = host_memory_->value();
  for (const auto& [option, w] : option_widgets_) {
    try {
      option->parse(s, sstr(widget_text(w)));
    } catch (const InputError&) {
      // A field that does not parse keeps the value evaluated last; the spin boxes and combo
      // boxes only offer valid ones.
    }
  }
  s.sweep = combo_enum<SweepAxis>(sweep_axis_);
  return s;
}

void MainWindow::syncForm(const Settings& s) {
  syncing_ = true;
  QList<QWidget*> widgets{model_, gpu_, gpus_per_node_, nodes_, inter_node_, host_memory_, sweep_axis_};
  for (const auto& [option, w] : option_widgets_) widgets << w;
  std::vector<std::unique_ptr<QSignalBlocker>> blockers;
  for (QWidget* w : widgets) blockers.push_back(std::make_unique<QSignalBlocker>(w));
  blockers.push_back(std::make_unique<QSignalBlocker>(model_->lineEdit()));
  const QString model = qstr(s.model);
  if (model_->currentText() != model) {
    const int i = model_->findText(model);
    if (i >= 0)
      model_->setCurrentIndex(i);
    else
      model_->setEditText(model);
  }
  const int g = gpu_->findText(qstr(s.cluster.gpu));
  if (g >= 0) gpu_->setCurrentIndex(g);
  gpus_per_node_->setValue(s.cluster.gpus_per_node);
  nodes_->setValue(s.cluster.nodes);
  if (inter_node_->text() != qstr(s.cluster.inter_node))
    inter_node_->setText(qstr(s.cluster.inter_node));
  host_memory_->setValue(s.cluster.host_memory_gib);
  cluster_file_->setText(s.cluster.file.empty() ? QStringLiteral("none")
                                                : QFileInfo(qstr(s.cluster.file)).fileName());
  cluster_file_->setToolTip(qstr(s.cluster.file));
  profile_file_->setText(s.profile.empty() ? QStringLiteral("datasheet defaults")
                                           : QFileInfo(qstr(s.profile)).fileName());
  profile_file_->setToolTip(qstr(s.profile));
  for (const auto& [option, w] : option_widgets_) set_widget_text(w, qstr(option->text(s)));
  set_combo_enum(sweep_axis_, s.sweep);
  blockers.clear();
  syncing_ = false;
  updateEnabled();
}

void MainWindow::updateEnabled() {
  const Settings& s = session_.settings();
  const bool file = !s.cluster.file.empty();
  for (QWidget* w : std::initializer_list<QWidget*>{gpu_, gpus_per_node_, nodes_})
    w->setEnabled(!file);
  clear_cluster_file_->setEnabled(file);
  clear_profile_->setEnabled(!s.profile.empty());
  lora_box_->setVisible(is_adapter(s.training.method));
  const bool moe = session_.current() && session_.current()->arch.is_moe();
  for (const auto& [option, w] : option_widgets_) {
    bool on = !option->applies || option->applies(s, request::command::gui);
    if (option->name == "expert-parallel") on = moe || s.training.ep > 1;
    w->setEnabled(on);
  }
}

void MainWindow::applySettings(const Settings& s) {
  syncForm(s);
  session_.setSettings(s);
}

void MainWindow::formEdited() {
  if (syncing_) return;
  loaded_plan_.reset();
  session_.setSettings(formSettings());
}

void MainWindow::modelEdited() {
  if (syncing_) return;
  Settings s = formSettings();
  if (s.model == session_.settings().model) return;
  loaded_plan_.reset();
  // A shorter model (GPT-2's 1024 learned positions) would make the sequence length invalid: start
  // it at the model's default, as the CLI does.
  if (const auto seq = session_.defaultSeq(s.model); seq && s.training.seq > *seq)
    s.training.seq = *seq;
  session_.setSettings(s);
}

void MainWindow::clusterEdited() {
  if (syncing_) return;
  loaded_plan_.reset();
  Settings s = formSettings();
  auto world = [](const ClusterChoice& c) {
    hardware::Cluster k;
    k.nodes = c.nodes;
    k.gpus_per_node = c.gpus_per_node;
    return k.world();
  };
  const int before = world(session_.settings().cluster);
  const int after = world(s.cluster);
  // A GPU without bf16 or FlashAttention-2 (V100) takes its own defaults for what it lacks.
  if (s.cluster.file.empty() && s.cluster.gpu != session_.settings().cluster.gpu) {
    try {
      const hardware::GpuSpec g = session_.catalog().resolve_gpu(s.cluster.gpu).spec;
      QStringList changed;
      if (!hardware::supports(g, s.training.precision)) {
        s.training.precision = hardware::default_precision(g);
        changed << QStringLiteral("precision %1 (%2 has no bf16 tensor cores)")
                       .arg(qstr(to_string(s.training.precision)), qstr(g.name));
      }
      if (!hardware::supports(g, s.training.attention)) {
        s.training.attention = hardware::default_attention(g);
        changed << QStringLiteral("attention %1 (%2 cannot run FlashAttention-2)")
                       .arg(qstr(to_string(s.training.attention)), qstr(g.name));
      }
      if (!changed.isEmpty())
        statusBar()->showMessage(
            QStringLiteral("Set %1.").arg(changed.join(QStringLiteral("; "))), 6000);
    } catch (const InputError&) {
      // The evaluation below names the unknown GPU.
    }
  }
  // From one GPU to many, "single" stops making sense: take the recommended strategy.
  if (before != after && ((after > 1 && s.training.strategy == Strategy::single) ||
                          (after == 1 && s.training.strategy != Strategy::single))) {
    try {
      s = session_.recommended(s, true, false, false);
      statusBar()->showMessage(QStringLiteral("Strategy set to %1, the recommendation for %2 GPUs.")
                                   .arg(strategy_label(s.training.strategy))
                                   .arg(after),
                               6000);
    } catch (const std::exception&) {
      // The evaluation below names the problem.
    }
  }
  session_.setSettings(s);
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
    model_info_->clear();
  }
  if (auto* t = findChild<QTableView*>(QStringLiteral("memoryTable"))) t->resizeColumnsToContents();
  if (auto* t = findChild<QTableView*>(QStringLiteral("stepTimeTable")))
    t->resizeColumnsToContents();
  if (auto* t = findChild<QTableView*>(QStringLiteral("compareTable")))
    t->resizeColumnsToContents();
  if (auto* t = findChild<QTableView*>(QStringLiteral("strategiesTable")))
    t->resizeColumnsToContents();
  if (auto* t = findChild<QTableView*>(QStringLiteral("communicationTable")))
    t->resizeColumnsToContents();
  if (auto* t = findChild<QTableView*>(QStringLiteral("sweepTable"))) t->resizeColumnsToContents();
}

void MainWindow::refreshCharts() {
  const QPalette pal = palette();
  charts::build_memory(memory_view_->chart(), memory_model_, pal);
  charts::build_step_time(time_view_->chart(), time_model_, pal);
  charts::build_sweep(sweep_view_->chart(), sweep_model_, pal);
  charts::build_plans(plans_view_->chart(), plans_model_, loaded_plan_, pal);
  for (QAbstractSeries* s : plans_view_->chart()->series())
    if (auto* scatter = qobject_cast<QScatterSeries*>(s);
        scatter && scatter->property(charts::kPlanRowsProperty).isValid())
      connect(scatter, &QScatterSeries::clicked, this, &MainWindow::planClicked);
  if (!session_.current()) {
    const QString why = QStringLiteral("No estimate: see the message above.");
    for (QChartView* v : {memory_view_, time_view_, sweep_view_}) v->chart()->setTitle(why);
  }
}

void MainWindow::refreshBanner() {
  const auto& cur = session_.current();
  QString verdict;
  QString details;
  if (!cur) {
    verdict_ = Verdict::invalid;
    verdict = QStringLiteral("<b>Cannot evaluate</b> — %1").arg(session_.error().toHtmlEscaped());
    details = QStringLiteral(
        "Change the option it names; hover any option for what it means and its valid values.");
  } else {
    const Evaluation& e = *cur;
    const planner::Estimate& est = e.estimate;
    const QString what = QStringLiteral("%1 (%2 parameters, %3)")
                             .arg(qstr(e.arch.name).toHtmlEscaped(), count_text(e.params.total),
                                  qstr(to_string(est.training.method)));
    const QString where = e.cluster_text().toHtmlEscaped();
    const Bytes headroom = e.usable() - est.memory.device_total;
    if (est.fits && est.verdict.verdict == planner::Verdict::tight) {
      // The peak fits but the allocator's cache may not (planner::judge): it says why.
      verdict_ = Verdict::fits;
      verdict = QStringLiteral("<b>Tight</b> — %1 on %2 with %3: %4.%5")
                    .arg(what, where, e.plan_text().toHtmlEscaped(), qstr(est.verdict.reason).toHtmlEscaped(),
                         est.max_micro_batch > 0
                             ? QStringLiteral(" Micro-batch %1 fits with room.").arg(est.max_micro_batch)
                             : QString());
    } else if (est.fits) {
      verdict_ = Verdict::fits;
      verdict =
          QStringLiteral(
              "<b>Fits</b> — %1 on %2 with %3: <b>%4</b> of %5 usable per GPU, <b>%6 headroom</b>; "
              "largest micro-batch %7.")
              .arg(what, where, e.plan_text().toHtmlEscaped(), gib_text(est.memory.device_total),
                   gib_text(e.usable()), gib_text(headroom))
              .arg(est.max_micro_batch);
    } else {
      verdict_ = Verdict::does_not_fit;
      QString hint;
      if (est.max_micro_batch > 0)
        hint = QStringLiteral(" Micro-batch %1 would fit.").arg(est.max_micro_batch);
      else if (session_.strategies().recommended)
        hint =
            QStringLiteral(" %1 would fit: press Recommend (Ctrl+M) or see the Strategies table.")
                .arg(strategy_label(session_.strategies()
                                        .candidates[*session_.strategies().recommended]
                                        .training.strategy));
      if (headroom.value() >= 0.0)  // the GPUs have room: the nodes' CPU memory does not
        verdict = QStringLiteral(
                      "<b>Does not fit</b> — %1 on %2 with %3 fits the GPUs but needs <b>%4</b> of "
                      "CPU memory per node of %5 for what it offloads.%6")
                      .arg(what, where, e.plan_text().toHtmlEscaped(), gib_text(est.memory.host),
                           gib_text(e.cluster.host_memory), hint);
      else
        verdict =
            QStringLiteral(
                "<b>Does not fit</b> — %1 on %2 with %3 needs <b>%4</b> per GPU of %5 usable "
                "(<b>%6 over</b>).%7")
                .arg(what, where, e.plan_text().toHtmlEscaped(), gib_text(est.memory.device_total),
                     gib_text(e.usable()), gib_text(-headroom), hint);
    }
    const Bytes sent = est.communication_bytes();
    details =
        QStringLiteral(
            "Step %1 · %2 · MFU %3 · global batch %4 sequences · memory peaks in %5 · %6")
            .arg(seconds_text(est.time.step),
                 rate_text(est.throughput.tokens_per_s, QStringLiteral("tokens/s")),
                 percent_text(est.throughput.mfu))
            .arg(est.global_batch)
            .arg(est.memory.peak_stage.empty()
                     ? qstr(est.memory.peak_phase)
                     : QStringLiteral("%1 (%2 pipeline stage)").arg(qstr(est.memory.peak_phase), qstr(est.memory.peak_stage)),
                 sent.value() > 0 ? QStringLiteral("%1 sent per GPU per step").arg(bytes_text(sent))
                                  : QStringLiteral("no communication"));
    if (e.time_to_train)
      details +=
          QStringLiteral(" · %1 tokens in <b>%2</b>")
              .arg(qstr(e.settings.tokens).toHtmlEscaped(), duration_text(*e.time_to_train));
    details += e.profile_name.empty()
                   ? QStringLiteral(" · datasheet hardware numbers")
                   : QStringLiteral(" · profile %1").arg(qstr(e.profile_name).toHtmlEscaped());
    for (const std::string& n : e.notes)
      details += QStringLiteral("<br><i>Note:</i> %1").arg(qstr(n).toHtmlEscaped());
  }
  verdict_label_->setText(verdict);
  details_label_->setText(details);
  verdict_label_->setProperty("verdict", verdict_ == Verdict::fits ? QStringLiteral("fits")
                                         : verdict_ == Verdict::does_not_fit
                                             ? QStringLiteral("does-not-fit")
                                             : QStringLiteral("invalid"));
  restyle();
}

void MainWindow::restyle() {
  const bool dark = charts::is_dark(palette());
  QString bg;
  QString border;
  switch (verdict_) {
    case Verdict::fits:
      bg = dark ? QStringLiteral("#1f3a27") : QStringLiteral("#e3f4e8");
      border = dark ? QStringLiteral("#4caf50") : QStringLiteral("#2e7d32");
      break;
    case Verdict::does_not_fit:
      bg = dark ? QStringLiteral("#4a1f1f") : QStringLiteral("#fdecea");
      border = dark ? QStringLiteral("#ef5350") : QStringLiteral("#c62828");
      break;
    case Verdict::invalid:
      bg = dark ? QStringLiteral("#4a3418") : QStringLiteral("#fff4e5");
      border = dark ? QStringLiteral("#ffa726") : QStringLiteral("#ef6c00");
      break;
  }
  banner_->setStyleSheet(
      QStringLiteral(
          "QFrame#banner { background: %1; border: 1px solid %2; border-left: 6px solid %2; "
          "border-radius: 3px; } QFrame#banner QLabel { background: transparent; "
          "border: none; color: %3; }")
          .arg(bg, border, palette().color(QPalette::WindowText).name()));
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

// ---- Search -----------------------------------------------------------------------------------

void MainWindow::searchStarted() {
  search_started_.start();
  if (!search_clock_) {
    search_clock_ = new QTimer(this);
    search_clock_->setInterval(100);
    connect(search_clock_, &QTimer::timeout, this, [this] {
      search_label_->setText(
          QStringLiteral("Searching… %1 s")
              .arg(static_cast<double>(search_started_.elapsed()) / 1e3, 0, 'f', 1));
    });
  }
  search_clock_->start();
  search_button_->setEnabled(false);
  search_action_->setEnabled(false);
  cancel_button_->setEnabled(true);
  cancel_action_->setEnabled(true);
  search_progress_->setRange(0, 0);
  search_progress_->setVisible(true);
  search_label_->setText(QStringLiteral("Searching…"));
}

void MainWindow::searchProgress(int done, int total) {
  search_progress_->setRange(0, total);
  search_progress_->setValue(done);
}

void MainWindow::searchFinished() {
  if (search_clock_) search_clock_->stop();
  search_button_->setEnabled(true);
  search_action_->setEnabled(true);
  cancel_button_->setEnabled(false);
  cancel_action_->setEnabled(false);
  search_progress_->setVisible(false);
  plans_model_.setPlans(session_.plans(), session_.plansUsable());
  loaded_plan_.reset();
  search_label_->setText(
      session_.searchMessage().isEmpty()
          ? QStringLiteral("%1 plans; bold: the Pareto front.").arg(session_.plans().size())
          : session_.searchMessage());
  if (auto* t = findChild<QTableView*>(QStringLiteral("plansTable"))) t->resizeColumnsToContents();
  refreshCharts();
}

void MainWindow::planClicked(const QPointF& point) {
  auto* series = qobject_cast<QScatterSeries*>(sender());
  if (!series) return;
  const QVariantList rows = series->property(charts::kPlanRowsProperty).toList();
  const QList<QPointF> points = series->points();
  for (qsizetype i = 0; i < points.size() && i < rows.size(); ++i) {
    if (points[i] == point) {
      loaded_plan_ = rows[i].toInt();
      session_.loadPlan(static_cast<std::size_t>(*loaded_plan_));
      statusBar()->showMessage(QStringLiteral("Loaded plan #%1.").arg(*loaded_plan_ + 1), 5000);
      return;
    }
  }
}

void MainWindow::loadStrategy(const QModelIndex& index) {
  const planner::Candidate* k = strategies_model_.candidate(index.row());
  if (!k) return;
  Settings s = session_.settings();
  s.training.strategy = k->training.strategy;
  s.training.checkpointing = k->training.checkpointing;
  s.training.offload = k->training.offload;
  applySettings(s);
}

void MainWindow::recommend() {
  try {
    const Settings s = session_.recommended(session_.settings());
    applySettings(s);
    statusBar()->showMessage(
        QStringLiteral("Recommended: %1, checkpointing %2, offload %3.")
            .arg(strategy_label(s.training.strategy), qstr(to_string(s.training.checkpointing)),
                 qstr(to_string(s.training.offload))),
        6000);
  } catch (const std::exception& e) {
    statusBar()->showMessage(QString::fromUtf8(e.what()), 8000);
  }
}

// ---- Files and exports ------------------------------------------------------------------------

void MainWindow::openModelConfig() {
  const QString path =
      QFileDialog::getOpenFileName(this, QStringLiteral("Open a Hugging Face config.json"), {},
                                   QStringLiteral("Model config (*.json);;All files (*)"));
  if (path.isEmpty()) return;
  session_.reloadFiles();
  Settings s = session_.settings();
  s.model = sstr(path);
  if (model_->findText(path) < 0) model_->addItem(path);
  applySettings(s);
}

void MainWindow::openTrainingConfig() {
  const QString path = QFileDialog::getOpenFileName(
      this, QStringLiteral("Open a training config"), {},
      QStringLiteral("Training configs (*.json *.yaml *.yml *.sh *.txt);;All files (*)"));
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
  const QString path = QFileDialog::getOpenFileName(this, QStringLiteral("Open a cluster file"), {},
                                                    QStringLiteral("Cluster JSON (*.json)"));
  if (path.isEmpty()) return;
  session_.reloadFiles();
  Settings s = session_.settings();
  s.cluster.file = sstr(path);
  applySettings(s);
}

void MainWindow::clearClusterFile() {
  Settings s = session_.settings();
  s.cluster.file.clear();
  applySettings(s);
}

void MainWindow::openProfile() {
  const QString path =
      QFileDialog::getOpenFileName(this, QStringLiteral("Open a hardware profile"), {},
                                   QStringLiteral("Hardware profile (*.json)"));
  if (path.isEmpty()) return;
  session_.reloadFiles();
  Settings s = session_.settings();
  s.profile = sstr(path);
  applySettings(s);
}

void MainWindow::clearProfile() {
  Settings s = session_.settings();
  s.profile.clear();
  applySettings(s);
}

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

QString MainWindow::verdictText() const { return plain(verdict_label_->text()); }

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
  return qstr(reports::estimate_json(e.arch, e.params, e.cluster, e.estimate, e.tokens).dump(2) + "\n");
}

bool MainWindow::exportEstimateJson(const QString& path, QString* error) {
  const QString text = estimateJson();
  if (text.isEmpty()) {
    if (error) *error = QStringLiteral("There is no estimate to export: %1").arg(session_.error());
    return false;
  }
  try {
    request::write_file_atomically(sstr(path), sstr(text));
  } catch (const std::exception& e) {
    if (error) *error = QString::fromUtf8(e.what());
    return false;
  }
  return true;
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
  try {
    request::write_file_atomically(sstr(path), sstr(text));
  } catch (const std::exception& e) {
    if (error) *error = QString::fromUtf8(e.what());
    return false;
  }
  return true;
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

void MainWindow::showAbout() {
  QMessageBox::about(
      this, QStringLiteral("About trainplan-gui"),
      QStringLiteral(
          "<p><b>trainplan-gui</b> — explore memory, step time and communication of LLM training "
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
          .arg(QString::fromLatin1(qVersion())));
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
