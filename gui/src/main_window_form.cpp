// The form of the window: the model, the cluster and every training option of the schema, and
// how it maps to and from the settings.
#include <QCheckBox>
#include <QComboBox>
#include <QCompleter>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QStatusBar>
#include <QToolButton>
#include <QVBoxLayout>
#include <algorithm>
#include <memory>

#include "display.hpp"
#include "main_window.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/model/partial.hpp"

namespace trainplan::gui {
namespace {

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
  w->setToolTip(wrapped(qstr(o.details.empty() ? request::option_help(o, request::command::estimate) : o.details)));
  return w;
}

QString widget_text(const QWidget* w) {
  if (const auto* c = qobject_cast<const QComboBox*>(w)) return c->currentText();
  if (const auto* sb = qobject_cast<const QSpinBox*>(w)) return QString::number(sb->value());
  if (const auto* d = qobject_cast<const QDoubleSpinBox*>(w)) return QString::number(d->value(), 'g', 10);
  if (const auto* b = qobject_cast<const QCheckBox*>(w))
    return b->isChecked() ? QStringLiteral("true") : QStringLiteral("false");
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

// A titled box of labelled rows.
struct FormBox {
  QGroupBox* box;
  QFormLayout* form;
};
FormBox form_box(const QString& title) {
  auto* box = new QGroupBox(title);
  return {box, new QFormLayout(box)};
}

// A small button beside a field: "…" opens a file, "✕" clears it.
QToolButton* tool_button(const QString& text, const QString& tooltip, const QString& accessible) {
  auto* b = new QToolButton;
  b->setText(text);
  b->setToolTip(tooltip);
  b->setAccessibleName(accessible);
  return b;
}

// A file's name, then the buttons that open and clear it.
QHBoxLayout* file_row(QLabel* name, QToolButton* open, QToolButton* clear) {
  auto* row = new QHBoxLayout;
  row->addWidget(name, 1);
  row->addWidget(open);
  row->addWidget(clear);
  return row;
}

}  // namespace

// ---- Building ---------------------------------------------------------------------------------

QWidget* MainWindow::buildForm() {
  auto* content = new QWidget;
  auto* outer = new QVBoxLayout(content);
  outer->setContentsMargins(6, 6, 6, 6);
  outer->addWidget(buildModelBox());
  outer->addWidget(buildClusterBox());
  outer->addWidget(buildConfigFilesBox());

  // The training options, group by group, as the schema lists them.
  auto group_box = [&](const QString& title, const char* group) {
    const FormBox b = form_box(title);
    addOptionRows(b.form, group);
    outer->addWidget(b.box);
    return b;
  };
  group_box(QStringLiteral("Method and precision"), "method");
  lora_box_ = group_box(QStringLiteral("LoRA / QLoRA"), "adapters").box;
  group_box(QStringLiteral("Parallelism"), "parallelism");
  group_box(QStringLiteral("Batch"), "batch");
  QFormLayout* sf = group_box(QStringLiteral("Activations and offload"), "memory").form;
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

QGroupBox* MainWindow::buildModelBox() {
  const auto [model_box, mf] = form_box(QStringLiteral("Model"));
  model_ = new QComboBox;
  model_->setObjectName(QStringLiteral("model"));
  model_->setEditable(true);
  model_->setInsertPolicy(QComboBox::NoInsert);
  // Matches in a list below the field, never written into it: "gpt2" stays gpt2 (inline completion
  // made it gpt2-large, the first name it starts).
  model_->completer()->setCompletionMode(QCompleter::PopupCompletion);
  model_->setToolTip(option_tooltip("model"));
  for (const request::CatalogModel& m : session_.catalog().models()) {
    model_->addItem(qstr(m.name));
    if (m.parameters)
      model_->setItemData(model_->count() - 1,
                          QStringLiteral("%1: %2 parameters. %3")
                              .arg(qstr(m.name), thousands_text(*m.parameters), qstr(m.source)),
                          Qt::ToolTipRole);
  }
  auto* open_model =
      tool_button(QStringLiteral("…"), QStringLiteral("Open a Hugging Face config.json (Ctrl+O)"),
                  QStringLiteral("Open model config"));
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
  return model_box;
}

QGroupBox* MainWindow::buildClusterBox() {
  const auto [cluster_box, cf] = form_box(QStringLiteral("Cluster"));
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
  addFileRows(cf);
  return cluster_box;
}

void MainWindow::addFileRows(QFormLayout* form) {
  cluster_file_ = new QLabel(QStringLiteral("none"));
  cluster_file_->setObjectName(QStringLiteral("clusterFile"));
  cluster_file_->setWordWrap(true);
  auto* open_cluster =
      tool_button(QStringLiteral("…"),
                  QStringLiteral("Open a cluster JSON file (data/clusters/ shows the format)"),
                  QStringLiteral("Open cluster file"));
  connect(open_cluster, &QToolButton::clicked, this, &MainWindow::openClusterFile);
  clear_cluster_file_ =
      tool_button(QStringLiteral("✕"),
                  QStringLiteral("Use the GPU, GPUs per node and nodes above instead of the file"),
                  QStringLiteral("Clear cluster file"));
  connect(clear_cluster_file_, &QToolButton::clicked, this, &MainWindow::clearClusterFile);
  form->addRow(QStringLiteral("Cluster file"), file_row(cluster_file_, open_cluster, clear_cluster_file_));
  profile_file_ = new QLabel;
  profile_file_->setObjectName(QStringLiteral("profileFile"));
  profile_file_->setWordWrap(true);
  auto* open_profile = tool_button(
      QStringLiteral("…"),
      QStringLiteral("Open a hardware profile measured by trainplan-calibrate and fitted by "
                     "`trainplan calibrate fit`: measured collective, GEMM and attention "
                     "speeds replace the datasheet defaults in the time model."),
      QStringLiteral("Open hardware profile"));
  connect(open_profile, &QToolButton::clicked, this, &MainWindow::openProfile);
  clear_profile_ = tool_button(QStringLiteral("✕"), QStringLiteral("Use the datasheet defaults"),
                               QStringLiteral("Clear hardware profile"));
  connect(clear_profile_, &QToolButton::clicked, this, &MainWindow::clearProfile);
  form->addRow(QStringLiteral("Profile"), file_row(profile_file_, open_profile, clear_profile_));
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
  // While a model name is being typed the results are still the last model's: say so.
  connect(model_->lineEdit(), &QLineEdit::textEdited, this, [this](const QString& text) {
    if (sstr(text.trimmed()) != session_.settings().model)
      statusBar()->showMessage(QStringLiteral("The results are for %1 until you press Enter (or leave the field).")
                                   .arg(qstr(session_.settings().model)));
  });
  connect(gpu_, &QComboBox::currentIndexChanged, this, [this] { clusterEdited(); });
  connect(gpus_per_node_, &QSpinBox::valueChanged, this, [this] { clusterEdited(); });
  connect(nodes_, &QSpinBox::valueChanged, this, [this] { clusterEdited(); });
  connect(inter_node_, &QLineEdit::editingFinished, this, [this] { clusterEdited(); });
  connect(host_memory_, &QDoubleSpinBox::valueChanged, this, [this] { clusterEdited(); });
}

// ---- Form <-> settings ------------------------------------------------------------------------

// The cluster the form's fields spell, with the cluster file the settings hold (when one is open the
// fields keep what they showed before it, for when it is closed).
request::ClusterShape MainWindow::formCluster() const {
  return {session_.settings().cluster().file, sstr(gpu_->currentText()), gpus_per_node_->value(), nodes_->value()};
}

Settings MainWindow::formSettings() const {
  Settings s = session_.settings();
  s.model = sstr(model_->currentText().trimmed());
  s.setCluster(formCluster());
  const std::string inter = sstr(inter_node_->text().trimmed());
  s.inter_node = inter.empty() ? std::nullopt : std::optional(inter);
  s.host_memory_gib = host_memory_->value() > 0.0 ? std::optional(host_memory_->value()) : std::nullopt;
  for (const auto& [option, w] : option_widgets_) {
    try {
      option->parse(s, sstr(widget_text(w)));
    } catch (const InputError&) {
      // A field that does not parse keeps the value evaluated last; the spin boxes and combo
      // boxes only offer valid ones.
    }
  }
  // A switch the other options make meaningless (sequence parallelism without TP) goes off rather
  // than staying ticked under a disabled box.
  for (const auto& [option, w] : option_widgets_)
    if (option->kind == request::OptionKind::flag && option->applies && !option->applies(s, request::command::gui))
      option->parse(s, "false");
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
  const request::ClusterShape c = s.cluster();
  if (c.file.empty()) {
    const int g = gpu_->findText(qstr(c.gpu));
    if (g >= 0) gpu_->setCurrentIndex(g);
    gpus_per_node_->setValue(c.gpus_per_node);
    nodes_->setValue(c.nodes);
  }
  const QString inter = qstr(s.inter_node.value_or(""));
  if (inter_node_->text() != inter) inter_node_->setText(inter);
  host_memory_->setValue(s.host_memory_gib.value_or(0.0));
  cluster_file_->setText(c.file.empty() ? QStringLiteral("none") : QFileInfo(qstr(c.file)).fileName());
  cluster_file_->setToolTip(qstr(c.file));
  profile_file_->setText(s.profile.empty() ? QStringLiteral("datasheet defaults")
                                           : QFileInfo(qstr(s.profile)).fileName());
  profile_file_->setToolTip(qstr(s.profile));
  for (const auto& [option, w] : option_widgets_) set_widget_text(w, qstr(option->text(s)));
  set_combo_enum(sweep_axis_, s.sweep);
  syncConfigFiles(s);
  blockers.clear();
  syncing_ = false;
  updateEnabled();
}

void MainWindow::updateEnabled() {
  const Settings& s = session_.settings();
  const bool file = !s.cluster().file.empty();
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

void MainWindow::editSettings(const Settings& s) {
  syncForm(s);
  session_.editSettings(s);
}

void MainWindow::formEdited() {
  if (syncing_) return;
  loaded_plan_.reset();
  session_.editSettings(formSettings());
}

void MainWindow::modelEdited() {
  if (syncing_) return;
  Settings s = formSettings();
  if (s.model == session_.settings().model) return;
  loaded_plan_.reset();
  // The sequence length carries over; one the new model cannot take (GPT-2's 1024 learned
  // positions) starts at the model's default, as the CLI does.
  if (const auto seq = session_.seqOn(s.model, s.training.seq)) s.training.seq = *seq;
  session_.editSettings(s);
}

void MainWindow::clusterEdited() {
  if (syncing_) return;
  loaded_plan_.reset();
  Settings s = formSettings();
  auto world = [](const request::ClusterShape& c) {
    hardware::Cluster k;
    k.nodes = c.nodes;
    k.gpus_per_node = c.gpus_per_node;
    return k.world();
  };
  const request::ClusterShape was = session_.settings().cluster();
  const request::ClusterShape now = s.cluster();
  const int before = world(was);
  const int after = world(now);
  // A GPU without bf16 or FlashAttention-2 (V100) takes its own defaults for what it lacks.
  if (now.file.empty() && now.gpu != was.gpu) {
    try {
      const hardware::GpuSpec g = session_.catalog().resolve_gpu(now.gpu).spec;
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
  session_.editSettings(s);
}

void MainWindow::loadStrategy(const QModelIndex& index) {
  const planner::Candidate* k = strategies_model_.candidate(index.row());
  if (!k) return;
  Settings s = session_.settings();
  s.training.strategy = k->training.strategy;
  s.training.checkpointing = k->training.checkpointing;
  s.training.offload = k->training.offload;
  editSettings(s);
}

void MainWindow::recommend() {
  try {
    const Settings s = session_.recommended(session_.settings());
    editSettings(s);
    statusBar()->showMessage(
        QStringLiteral("Recommended: %1, checkpointing %2, offload %3.")
            .arg(strategy_label(s.training.strategy), QString::fromStdString(model::checkpointing_text(s.training)),
                 qstr(to_string(s.training.offload))),
        6000);
  } catch (const std::exception& e) {
    statusBar()->showMessage(QString::fromUtf8(e.what()), 8000);
  }
}

}  // namespace trainplan::gui
