#include "session.hpp"

#include <QCommandLineParser>
#include <QElapsedTimer>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <exception>

#include "display.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/model/partial.hpp"
#include "trainplan/reports/estimate_json.hpp"
#include "trainplan/reports/text.hpp"
#include "trainplan/request/profile_json.hpp"
#include "trainplan/request/request_files.hpp"
#include "trainplan/model/lora.hpp"
#include "trainplan/planner/search.hpp"

namespace trainplan::gui {

QString Evaluation::title() const {
  const model::Training& t = estimate.training;
  QStringList parts{strategy_label(t)};
  if (t.method != Method::full) parts << qstr(to_string(t.method));
  if (t.tp > 1 || t.pp > 1) parts << QStringLiteral("TP%1 PP%2").arg(t.tp).arg(t.pp);
  parts << QStringLiteral("mb %1").arg(t.micro_batch);
  if (t.grad_accum > 1) parts << QStringLiteral("ga %1").arg(t.grad_accum);
  parts << QStringLiteral("seq %1").arg(t.seq);
  if (t.checkpointing != Checkpointing::none)
    parts << QStringLiteral("ckpt %1").arg(QString::fromStdString(model::checkpointing_text(t)));
  if (t.offload != Offload::none)
    parts << QStringLiteral("offload %1").arg(qstr(to_string(t.offload)));
  return parts.join(QStringLiteral(" · "));
}

QString Evaluation::plan_text() const { return qstr(planner::plan_label(estimate.training, estimate.layout)); }

QString Evaluation::cluster_text() const { return qstr(reports::cluster_words(cluster)); }

model::Training default_training() {
  model::Training t;
  t.strategy = Strategy::fsdp_full;
  return t;
}

Settings::Settings() {
  model = "llama-2-7b";
  cluster_spec = request::ClusterShape{}.spec();
  training = default_training();
}

namespace {

// The options a window holds beside the model and cluster (which are always its own).
bool window_option(const request::Option& o) {
  return o.in(request::command::gui) && !o.positional && o.group != "cluster";
}

// The nodes and GPUs per node a config file states (request::cluster_spec, as the CLI takes them),
// on the cluster `r` names or else on `gpu` (the window's).
request::ClusterShape stated_shape(const request::Catalog& catalog, request::Request r, const std::string& gpu) {
  if (!r.has("cluster")) r.cluster_spec = gpu;
  const std::string spec = request::cluster_spec(r);
  request::ClusterShape shape = request::cluster_shape(spec);
  if (!shape.file.empty()) return shape;
  const hardware::Cluster c = catalog.resolve_cluster(spec, std::nullopt).cluster;
  return {"", c.gpu.name, c.gpus_per_node, c.nodes};
}

// The request the files make over the window's own values, its edited options winning (as flags
// do over --from files); the model, the cluster and what only the window holds stay its own.
void compose(Settings& s) {
  if (s.files.empty()) return;
  std::vector<request::GivenValue> values;
  for (const request::Option& o : request::options())
    if (window_option(o) && s.edited.contains(o.name)) values.push_back({o.name, o.text(s.own), o.label});
  request::Request base = s.own;
  base.given.clear();
  base.overridden.clear();
  base.file_notes.clear();
  request::Request read = request::make_request(s.files, values, request::command::gui, base);
  read.model = s.own.model;
  read.cluster_spec = s.own.cluster_spec;
  read.inter_node = s.own.inter_node;
  read.host_memory_gib = s.own.host_memory_gib;
  read.profile = s.own.profile;
  static_cast<request::Request&>(s) = std::move(read);
}


}  // namespace

request::Request window_request(const Settings& s) {
  request::Request r = s;
  r.given.clear();
  for (const request::Option& o : request::options()) {
    if (!window_option(o) || (o.kind == request::OptionKind::text && o.text(r).empty()))
      continue;
    // A file's key stays the source of what it set; everything else is the window's field.
    const auto it = s.given.find(o.name);
    r.given[o.name] = it != s.given.end() && !it->second.starts_with("--") ? it->second : o.label;
  }
  return r;
}

std::string field_label(std::string_view field) {
  const request::Option* o = request::find_option(field);
  return o ? o->label : std::string(field);
}

// ---- QSettings ----------------------------------------------------------------------------------

// Every schema option the window shows, under its schema name, and the window's own.
void store_settings(QSettings& q, const Settings& s) {
  // The window's own values; the files in force are stored as a list and read again over them.
  const request::Request& own = s.files.empty() ? static_cast<const request::Request&>(s) : s.own;
  q.beginGroup(QStringLiteral("settings"));
  for (const request::Option& o : request::options())
    if (window_option(o))
      q.setValue(qstr(o.name), qstr(o.text(own)));
  q.setValue(QStringLiteral("model"), qstr(s.model));
  const request::ClusterShape c = s.cluster();
  q.setValue(QStringLiteral("cluster_file"), qstr(c.file));
  q.setValue(QStringLiteral("gpu"), qstr(c.gpu));
  q.setValue(QStringLiteral("gpus_per_node"), c.gpus_per_node);
  q.setValue(QStringLiteral("nodes"), c.nodes);
  q.setValue(QStringLiteral("inter_node"), qstr(s.inter_node.value_or("")));
  q.setValue(QStringLiteral("host_memory_gib"), s.host_memory_gib.value_or(0.0));
  q.setValue(QStringLiteral("sweep"), qstr(to_string(s.sweep)));
  QStringList files;
  for (const std::string& f : s.files) files << qstr(f);
  q.setValue(QStringLiteral("files"), files);
  QStringList edited;
  for (const std::string& e : s.edited) edited << qstr(e);
  q.setValue(QStringLiteral("edited"), edited);
  q.endGroup();
}

Settings restore_settings(const QSettings& stored) {
  Settings s;
  if (!stored.childGroups().contains(QStringLiteral("settings"))) return s;
  // QSettings::beginGroup needs a mutable object: read through prefixed keys.
  auto value = [&](const std::string& key) { return stored.value(QStringLiteral("settings/") + qstr(key)); };
  for (const request::Option& o : request::options()) {
    if (!window_option(o)) continue;
    const QVariant v = value(o.name);
    if (!v.isValid() || v.toString().isEmpty()) continue;
    try {
      o.parse(s, sstr(v.toString()));
    } catch (const InputError&) {
      // A stored value this version does not accept keeps its default.
    }
  }
  if (const QVariant v = value("model"); v.isValid() && !v.toString().isEmpty()) s.model = sstr(v.toString());
  request::ClusterShape c;
  c.file = sstr(value("cluster_file").toString());
  if (const QVariant v = value("gpu"); v.isValid() && !v.toString().isEmpty()) c.gpu = sstr(v.toString());
  bool ok = false;
  if (const int g = value("gpus_per_node").toInt(&ok); ok && g >= 1) c.gpus_per_node = g;
  if (const int n = value("nodes").toInt(&ok); ok && n >= 1) c.nodes = n;
  s.setCluster(c);
  if (const QString inter = value("inter_node").toString(); !inter.isEmpty()) s.inter_node = sstr(inter);
  if (const double host = value("host_memory_gib").toDouble(&ok); ok && host > 0.0) s.host_memory_gib = host;
  if (const auto axis = try_parse<SweepAxis>(sstr(value("sweep").toString()))) s.sweep = *axis;
  for (const QString& e : value("edited").toStringList()) s.edited.insert(sstr(e));
  // The files in force last time, read again over the window's own values; one that no longer reads
  // is left out, and the banner says so.
  const QStringList files = value("files").toStringList();
  if (!files.isEmpty()) s.own = static_cast<const request::Request&>(s);
  std::vector<std::string> left_out;
  for (const QString& f : files) {
    Settings with = s;
    with.files.push_back(sstr(f));
    try {
      compose(with);
      s = std::move(with);
    } catch (const InputError& e) {
      left_out.push_back("not opened again: " + sstr(f) + ": " + e.what());
    }
  }
  s.file_notes.insert(s.file_notes.end(), left_out.begin(), left_out.end());
  return s;
}

// ---- Command line -------------------------------------------------------------------------------

namespace {

// The schema's training options, as `trainplan fit` takes them, and the window's own.
void add_options(QCommandLineParser& p) {
  p.setApplicationDescription(QStringLiteral(
      "trainplan-gui: explore memory, step time and communication of LLM training. Options as in "
      "`trainplan fit`; an option left out keeps its default (the strategy, checkpointing and "
      "offload left out are the ones `trainplan fit` recommends)."));
  p.addHelpOption();
  for (const request::Option& o : request::options()) {
    if (!o.in(request::command::gui)) continue;
    const QString help = qstr(request::option_help(o, request::command::estimate));
    if (o.kind == request::OptionKind::flag)
      p.addOption(QCommandLineOption(qstr(o.name), help));
    else
      p.addOption(QCommandLineOption(qstr(o.name), help, qstr(o.value_name.empty() ? o.name : o.value_name)));
  }
  struct Own {
    const char* name;
    const char* value;  // nullptr: a switch
    const char* help;
  };
  static constexpr Own kOwn[] = {
      {"from", "FILE", "training options from a config file (as trainplan fit --from); repeatable"},
      {"sweep", "AXIS", "x axis of the sweep chart: micro-batch | seq"},
      {"screenshot", "FILE.png", "render the main window, write it to FILE.png and exit"},
      {"size", "WxH", "window size for --screenshot (default 1280x800)"},
      {"tab", "NAME", "table tab to show: memory, time, communication, strategies, sweep, plans, compare"},
      {"chart", "NAME", "chart tab to show beside the memory chart: time, sweep, plans"},
      {"dark", nullptr, "use a dark palette instead of the system's (for screenshots)"},
      {"search", nullptr, "run the plan search at start (before --screenshot)"},
  };
  for (const Own& o : kOwn)
    p.addOption(o.value ? QCommandLineOption(QString::fromUtf8(o.name), QString::fromUtf8(o.help),
                                             QString::fromUtf8(o.value))
                        : QCommandLineOption(QString::fromUtf8(o.name), QString::fromUtf8(o.help)));
}

// The settings the options and the files of --from give; the others keep their defaults.
Settings given_settings(const QCommandLineParser& p, const request::Catalog& catalog) {
  std::vector<request::GivenValue> values;
  for (const request::Option& o : request::options())
    if (o.in(request::command::gui) && p.isSet(qstr(o.name)))
      values.push_back({o.name, o.kind == request::OptionKind::flag ? std::string("true") : sstr(p.value(qstr(o.name))),
                        "--" + o.name});
  std::vector<std::string> files;
  for (const QString& f : p.values(QStringLiteral("from"))) files.push_back(sstr(f));
  Settings s;
  static_cast<request::Request&>(s) = request::make_request(files, values, request::command::gui, s);
  request::check_options(s, request::command::gui);
  if (s.has("cluster") || s.gpus || s.nodes) s.setCluster(stated_shape(catalog, s, Settings{}.cluster().gpu));
  if (!files.empty()) {
    // The files stay a list in the window; the flags are its own values and win over them.
    s.files = files;
    s.own = request::make_request({}, values, request::command::gui, Settings{});
    s.own.cluster_spec = s.cluster_spec;
    for (const request::GivenValue& v : values)
      if (const request::Option* o = request::find_option(v.option); o && window_option(*o)) s.edited.insert(o->name);
  }
  if (p.isSet(QStringLiteral("sweep")))
    try {
      s.sweep = parse_enum<SweepAxis>(sstr(p.value(QStringLiteral("sweep"))));
    } catch (const InputError& e) {
      throw InputError(std::string("--sweep: ") + e.what());
    }
  return s;
}

}  // namespace

CommandLine parse_command_line(const QStringList& arguments, const request::Catalog& catalog) {
  QCommandLineParser p;
  add_options(p);
  if (!p.parse(arguments)) throw InputError(sstr(p.errorText()));
  if (!p.positionalArguments().isEmpty())
    throw InputError("unexpected argument '" + sstr(p.positionalArguments().front()) +
                     "' (use --model and --cluster)");

  CommandLine out;
  if (p.isSet(QStringLiteral("help"))) {
    out.help = true;
    out.help_text = p.helpText();
    return out;
  }
  out.settings = given_settings(p, catalog);
  if (p.isSet(QStringLiteral("screenshot"))) out.screenshot = p.value(QStringLiteral("screenshot"));
  if (p.isSet(QStringLiteral("size"))) {
    const QString size = p.value(QStringLiteral("size"));
    const QStringList wh = size.split(QLatin1Char('x'));
    bool ok_w = false;
    bool ok_h = false;
    if (wh.size() == 2) out.size = QSize(wh[0].toInt(&ok_w), wh[1].toInt(&ok_h));
    if (!ok_w || !ok_h || out.size.width() < 320 || out.size.height() < 240)
      throw InputError("--size: expected WIDTHxHEIGHT, e.g. 1280x800 (got '" + sstr(size) + "')");
  }
  out.tab = p.value(QStringLiteral("tab"));
  out.chart = p.value(QStringLiteral("chart"));
  out.search = p.isSet(QStringLiteral("search"));
  out.dark = p.isSet(QStringLiteral("dark"));
  return out;
}

const request::ResolvedModel& SettingsResolver::model(const std::string& spec) {
  auto it = models_.find(spec);
  if (it == models_.end()) it = models_.emplace(spec, catalog_.resolve_model(spec)).first;
  return it->second;
}

const request::ResolvedCluster& SettingsResolver::cluster(const request::Request& r) {
  const std::string key =
      r.cluster_spec + "|" + r.inter_node.value_or("") + "|" + std::to_string(r.host_memory_gib.value_or(0.0));
  auto it = clusters_.find(key);
  if (it == clusters_.end()) {
    request::ResolvedCluster resolved;
    try {
      resolved = catalog_.resolve_cluster(r.cluster_spec, r.inter_node);
    } catch (const FieldError& e) {
      throw InputError(e.render([](std::string_view f) { return field_label(f); }));  // "Network '...'"
    }
    if (r.host_memory_gib) resolved.cluster.host_memory = gib(*r.host_memory_gib);
    it = clusters_.emplace(key, std::move(resolved)).first;
  }
  return it->second;
}

const hardware::HardwareProfile* SettingsResolver::profile(const std::string& path) {
  if (path.empty()) return nullptr;
  auto it = profiles_.find(path);
  if (it == profiles_.end()) {
    try {
      it = profiles_.emplace(path, request::read_profile(path)).first;
    } catch (const InputError& e) {
      throw InputError("hardware profile '" + path + "' is not usable: " + e.what());
    }
  }
  return &it->second;
}

Evaluation SettingsResolver::evaluate(const Settings& s) {
  const request::ResolvedModel& m = model(s.model);
  const request::ResolvedCluster& c = cluster(s);
  const request::Resolved r =
      request::resolve_with(m, c, window_request(s), request::command::gui, request::Irrelevant::ignore);
  Evaluation e;
  e.settings = s;
  e.arch = m.arch;
  e.params = model::count_parameters(m.arch);
  e.settings.training = r.search.base;
  const model::Training& t = e.settings.training;
  e.trainable = model::trainable_parameters(m.arch, e.params, t);
  e.cluster = r.cluster.cluster;
  const hardware::HardwareProfile* p = profile(s.profile);
  if (p) e.profile_name = p->name.empty() ? s.profile : p->name;
  e.estimate = planner::evaluate(m.arch, e.params, t, e.cluster, p);
  e.emit = request::emit_context(r);
  e.tokens = r.tokens;
  if (e.tokens) e.time_to_train = planner::time_to_train(e.estimate, *e.tokens);
  e.notes = r.notes;
  e.notes.insert(e.notes.end(), r.warnings.begin(), r.warnings.end());
  request::add_request_json(e.request_json, r);
  return e;
}

planner::Explanation SettingsResolver::explain(const Evaluation& e) {
  return planner::suggest_changes(e.arch, e.params, e.estimate.training, e.cluster, profile(e.settings.profile));
}

Sweep SettingsResolver::sweep(const Evaluation& e) {
  Sweep out;
  out.axis = e.settings.sweep;
  out.usable = e.usable();
  const model::Training& t = e.settings.training;
  std::vector<std::int64_t> xs;
  switch (out.axis) {
    case SweepAxis::micro_batch: {
      // Powers of two past the largest micro-batch that fits, and the points either side of it.
      const std::int64_t largest = e.estimate.max_micro_batch;
      const std::int64_t limit = std::min<std::int64_t>(
          4096, std::max<std::int64_t>({8, 2 * (largest + 1), t.micro_batch}));
      for (std::int64_t x = 1; x <= limit; x *= 2) xs.push_back(x);
      if (largest >= 1) xs.push_back(largest);
      if (largest < 4096) xs.push_back(largest + 1);
      xs.push_back(t.micro_batch);
      break;
    }
    case SweepAxis::seq: {
      const std::int64_t top = std::max(e.arch.max_seq, t.seq);
      for (std::int64_t x = 128; x <= top; x *= 2) xs.push_back(x);
      xs.push_back(e.arch.max_seq);
      xs.push_back(t.seq);
      break;
    }
  }
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  const request::ResolvedModel& m = model(e.settings.model);
  for (std::int64_t x : xs) {
    model::Training tx = t;
    (out.axis == SweepAxis::micro_batch ? tx.micro_batch : tx.seq) = x;
    try {
      out.points.push_back(
          {x, planner::evaluate(m.arch, e.params, tx, e.cluster, profile(e.settings.profile))});
    } catch (const InputError&) {
      continue;  // e.g. beyond a model's learned positions: no point there
    }
    const std::size_t i = out.points.size() - 1;
    if (x == (out.axis == SweepAxis::micro_batch ? t.micro_batch : t.seq)) out.current = i;
    if (!out.first_oom && !out.points[i].estimate.fits) out.first_oom = i;
  }
  return out;
}

planner::FitResult SettingsResolver::strategies(const Evaluation& e) {
  // `trainplan fit` with the window's values: what fit searches is left free, the rest (the
  // micro-batch, the margin, ...) as set.
  request::Request q = window_request(e.settings);
  for (const request::Option& o : request::options())
    if (o.searched == request::Searched::by_fit_and_plan) q.given.erase(o.name);
  try {
    const request::Resolved r = request::resolve_with(model(e.settings.model), cluster(e.settings), q,
                                            request::command::gui, request::Irrelevant::ignore);
    return planner::fit(e.arch, e.params, r.search, r.cluster.cluster, {}, profile(e.settings.profile));
  } catch (const InputError&) {
    return {};
  }
}

Session::Session(const request::Catalog& catalog, QObject* parent)
    : QObject(parent), catalog_(catalog), resolver_(catalog) {}

Session::~Session() {
  if (search_watcher_) {
    if (search_cancel_) search_cancel_->store(true);
    search_watcher_->waitForFinished();
  }
}

void Session::setSettings(const Settings& s) {
  QElapsedTimer timer;
  timer.start();
  settings_ = s;
  current_.reset();
  error_.clear();
  sweep_ = {};
  strategies_ = {};
  explanation_.reset();
  try {
    current_ = resolver_.evaluate(s);
    sweep_ = resolver_.sweep(*current_);
    strategies_ = resolver_.strategies(*current_);
    if (!current_->estimate.fits) explanation_ = resolver_.explain(*current_);
  } catch (const InputError& e) {
    current_.reset();
    error_ = QString::fromUtf8(e.what());
  } catch (const std::exception& e) {
    current_.reset();
    error_ = QStringLiteral("cannot evaluate: %1").arg(QString::fromUtf8(e.what()));
  }
  last_ms_ = static_cast<double>(timer.nsecsElapsed()) / 1e6;
  Q_EMIT changed();
}

Settings Session::recommended(const Settings& s, bool free_strategy, bool free_checkpointing,
                              bool free_offload) {
  request::Request q = window_request(s);
  if (free_strategy) q.given.erase("strategy");
  if (free_checkpointing) q.given.erase("checkpointing");
  if (free_offload) q.given.erase("offload");
  const request::Resolved r = request::resolve_with(resolver_.model(s.model), resolver_.cluster(s), q,
                                          request::command::gui, request::Irrelevant::ignore);
  const model::Training t = request::configuration(r);
  Settings out = s;
  out.training.strategy = t.strategy;
  out.training.checkpointing = t.checkpointing;
  out.training.offload = t.offload;
  return out;
}

Settings Session::completed(const Settings& s) {
  const request::Resolved r = request::resolve_with(resolver_.model(s.model), resolver_.cluster(s), s,
                                          request::command::gui, request::Irrelevant::ignore);
  Settings out = s;
  out.training = request::configuration(r);
  // What neither the files nor the flags gave is the window's own (the files are read over it).
  out.own.training.strategy = out.training.strategy;
  out.own.training.checkpointing = out.training.checkpointing;
  out.own.training.offload = out.training.offload;
  out.own.training.ep = out.training.ep;
  return out;
}


void Session::editSettings(const Settings& s) {
  Settings next = s;
  if (next.files.empty()) next.own = {};
  for (const request::Option& o : request::options()) {
    if (!o.in(request::command::gui)) continue;
    const std::string now = o.text(s);
    if (now == o.text(settings_)) continue;
    if (window_option(o)) {
      next.edited.insert(o.name);
      next.given[o.name] = o.label;
    }
    if (!next.files.empty()) {
      try {
        o.parse(next.own, now);
      } catch (const InputError&) {
        // A value the request shown could not hold is not the user's: it keeps the files'.
      }
    }
  }
  if (!next.files.empty()) {
    next.own.cluster_spec = s.cluster_spec;
    next.own.inter_node = s.inter_node;
    next.own.host_memory_gib = s.host_memory_gib;
    try {
      compose(next);
    } catch (const InputError& e) {  // a file that no longer reads: said, nothing evaluated
      settings_ = next;
      current_.reset();
      sweep_ = {};
      strategies_ = {};
      explanation_.reset();
      error_ = QString::fromUtf8(e.what());
      Q_EMIT changed();
      return;
    }
  }
  setSettings(next);
}

Settings Session::withConfigFile(const Settings& s, const std::string& path, std::vector<std::string>* notes) {
  Settings out = s;
  if (out.files.empty()) out.own = static_cast<const request::Request&>(s);
  out.files.push_back(path);
  const request::Request read = request::make_request({path}, {}, request::command::gui, request::Request{});
  if (read.gpus || read.nodes)
    out.own.cluster_spec = stated_shape(catalog_, read, resolver_.cluster(s).cluster.gpu.name).spec();
  compose(out);
  if (notes) {
    *notes = read.file_notes;
    for (const auto& [name, source] : read.given)
      if (const request::Option* o = request::find_option(name)) notes->push_back(source + ": " + name + " " + o->text(read));
  }
  (void)resolver_.evaluate(out);  // the file's values are checked now, naming the file
  return out;
}

Settings Session::withConfigFiles(const Settings& s, std::vector<std::string> files) {
  Settings out = s;
  if (out.files.empty()) out.own = static_cast<const request::Request&>(s);
  out.files = std::move(files);
  if (out.files.empty()) {
    const Settings kept = out;
    static_cast<request::Request&>(out) = kept.own;
    out.given.clear();
    out.overridden.clear();
    out.file_notes.clear();
    out.own = {};
  } else {
    compose(out);
  }
  return out;
}

std::optional<std::int64_t> Session::seqOn(const std::string& model, std::int64_t seq) {
  try {
    const model::Architecture& a = resolver_.model(model).arch;
    return seq <= a.max_seq ? seq : request::default_seq(a);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void Session::reloadFiles() { resolver_.forget_files(); }

bool Session::pinCurrent() {
  if (!current_ || pins_.size() >= kMaxPins) return false;
  pins_.push_back(*current_);
  Q_EMIT pinsChanged();
  return true;
}

void Session::unpin(std::size_t i) {
  if (i >= pins_.size()) return;
  pins_.erase(pins_.begin() + static_cast<std::ptrdiff_t>(i));
  Q_EMIT pinsChanged();
}

void Session::clearPins() {
  pins_.clear();
  Q_EMIT pinsChanged();
}

bool Session::searching() const { return search_watcher_ != nullptr; }

void Session::startSearch() {
  if (searching()) return;
  search_message_.clear();
  search_watcher_ = new QFutureWatcher<SearchOutcome>(this);
  search_cancel_ = std::make_shared<std::atomic<bool>>(false);
  connect(search_watcher_, &QFutureWatcher<SearchOutcome>::progressValueChanged, this,
          [this](int v) {
            Q_EMIT searchProgress(v, search_watcher_ ? search_watcher_->progressMaximum() : 0);
          });
  connect(search_watcher_, &QFutureWatcher<SearchOutcome>::finished, this, [this] {
    SearchOutcome r = search_watcher_->result();
    search_watcher_->deleteLater();
    search_watcher_ = nullptr;
    if (search_cancel_ && search_cancel_->load()) {
      search_message_ = QStringLiteral("Search cancelled; the previous plans stay.");
    } else {
      if (r.ok) {
        plans_ = std::move(r.plans);
        plans_settings_ = r.settings;
        plans_usable_ = r.usable;
      }
      search_message_ = r.message;
    }
    Q_EMIT searchFinished();
  });
  Q_EMIT searchStarted();
  const Settings s = settings_;
  const request::Catalog* catalog = &catalog_;
  const std::shared_ptr<std::atomic<bool>> cancel = search_cancel_;
  search_watcher_->setFuture(QtConcurrent::run([s, catalog, cancel](QPromise<SearchOutcome>& promise) {
    SearchOutcome out;
    out.settings = s;
    promise.setProgressRange(0, 0);
    try {
      QElapsedTimer timer;
      timer.start();
      SettingsResolver resolver(*catalog);
      const Evaluation e = resolver.evaluate(s);
      planner::SearchRequest req;
      req.base = e.settings.training;
      req.global_batch = e.estimate.global_batch;
      req.top = kSearchTop;
      req.threads = 0;
      req.progress = [&promise, cancel](std::size_t done, std::size_t total) {
        promise.setProgressRange(0, static_cast<int>(total));
        promise.setProgressValue(static_cast<int>(done));
        return !cancel->load();
      };
      const planner::PlanResult r =
          planner::search(e.arch, e.params, e.cluster, req, resolver.profile(s.profile));
      for (std::size_t i = 0; i < r.plans.size(); ++i)
        out.plans.push_back(
            {r.plans[i], false, i < r.why_slower.size() ? r.why_slower[i] : std::string()});
      mark_pareto_front(out.plans);
      out.usable = e.usable();
      out.ok = true;
      out.message =
          QStringLiteral(
              "%1 plans at global batch %2 (%3 configurations evaluated, %4 fit) in %5; "
              "bold: the Pareto front; click a plan to load it.")
              .arg(out.plans.size())
              .arg(e.estimate.global_batch)
              .arg(r.evaluated)
              .arg(r.fitting)
              .arg(seconds_text(Seconds(static_cast<double>(timer.nsecsElapsed()) / 1e9)));
      if (out.plans.empty()) out.message = QStringLiteral("No plan fits: ") + out.message;
    } catch (const std::exception& ex) {
      out.message = QStringLiteral("Search failed: %1").arg(QString::fromUtf8(ex.what()));
    }
    promise.addResult(std::move(out));
  }));
}

void Session::cancelSearch() {
  if (search_cancel_) search_cancel_->store(true);
}

QStringList Session::plansStaleBecause() const {
  QStringList out;
  if (plans_.empty()) return out;
  for (const request::Option& o : request::options()) {
    if (!o.in(request::command::gui) || o.searched != request::Searched::no) continue;
    const std::string was = o.text(plans_settings_);
    const std::string now = o.text(settings_);
    if (was != now)
      out << QStringLiteral("%1 %2 → %3")
                 .arg(qstr(o.label), was.empty() ? QStringLiteral("none") : qstr(was),
                      now.empty() ? QStringLiteral("none") : qstr(now));
  }
  return out;
}

bool Session::loadPlan(std::size_t i) {
  if (i >= plans_.size() || !plansStaleBecause().isEmpty()) return false;
  Settings s = plans_settings_;
  s.training = plans_[i].estimate.training;
  s.sweep = settings_.sweep;
  editSettings(s);
  return true;
}

void mark_pareto_front(std::vector<PlanPoint>& plans) {
  std::vector<planner::Estimate> estimates;
  estimates.reserve(plans.size());
  for (const PlanPoint& p : plans) estimates.push_back(p.estimate);
  const std::vector<bool> front = planner::pareto_front(estimates);
  for (std::size_t i = 0; i < plans.size(); ++i) plans[i].pareto = front[i];
}

}  // namespace trainplan::gui
