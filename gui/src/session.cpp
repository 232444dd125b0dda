#include "session.hpp"

#include <QCommandLineParser>
#include <QElapsedTimer>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <exception>

#include "display.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/io/estimate_json.hpp"
#include "trainplan/io/profile_json.hpp"
#include "trainplan/model/lora.hpp"
#include "trainplan/planner/search.hpp"

namespace trainplan::gui {

std::string ClusterChoice::spec() const {
  if (!file.empty()) return file;
  return std::to_string(nodes) + "x" + std::to_string(gpus_per_node) + "x" + gpu;
}

QString Evaluation::title() const {
  const model::Training& t = estimate.training;
  QStringList parts{strategy_label(t.strategy)};
  if (t.method != Method::full) parts << qstr(to_string(t.method));
  if (t.tp > 1 || t.pp > 1) parts << QStringLiteral("TP%1 PP%2").arg(t.tp).arg(t.pp);
  parts << QStringLiteral("mb %1").arg(t.micro_batch);
  if (t.grad_accum > 1) parts << QStringLiteral("ga %1").arg(t.grad_accum);
  parts << QStringLiteral("seq %1").arg(t.seq);
  if (t.checkpointing != Checkpointing::none)
    parts << QStringLiteral("ckpt %1").arg(qstr(to_string(t.checkpointing)));
  if (t.offload != Offload::none)
    parts << QStringLiteral("offload %1").arg(qstr(to_string(t.offload)));
  return parts.join(QStringLiteral(" · "));
}

QString Evaluation::plan_text() const {
  const model::Training& t = estimate.training;
  QString s = strategy_label(t.strategy);
  if (t.tp > 1) s += QStringLiteral(" + TP%1").arg(t.tp);
  if (t.pp > 1) s += QStringLiteral(" + PP%1").arg(t.pp);
  if (t.checkpointing != Checkpointing::none)
    s += QStringLiteral(" + %1 checkpointing").arg(qstr(to_string(t.checkpointing)));
  if (t.offload != Offload::none)
    s += QStringLiteral(" + %1 offload").arg(qstr(to_string(t.offload)));
  return s;
}

QString Evaluation::cluster_text() const {
  const QString gpu = qstr(cluster.gpu.name);
  if (cluster.nodes == 1) return QStringLiteral("%1x %2").arg(cluster.gpus_per_node).arg(gpu);
  return QStringLiteral("%1 nodes x %2x %3").arg(cluster.nodes).arg(cluster.gpus_per_node).arg(gpu);
}

std::int64_t default_seq(const model::Architecture& a) {
  return std::min<std::int64_t>(2048, a.max_seq);
}

model::Training default_training() {
  model::Training t;
  t.strategy = Strategy::fsdp_full;
  return t;
}

// ---- QSettings ----------------------------------------------------------------------------------

namespace {

template <class E>
void restore_enum(const QSettings& q, const char* key, E& value) {
  if (const auto v = try_parse<E>(sstr(q.value(QString::fromUtf8(key)).toString()))) value = *v;
}

template <class T>
void restore_number(const QSettings& q, const char* key, T& value, T lowest) {
  bool ok = false;
  const qlonglong v = q.value(QString::fromUtf8(key)).toLongLong(&ok);
  if (ok && v >= lowest) value = static_cast<T>(v);
}

}  // namespace

void store_settings(QSettings& q, const Settings& s) {
  const model::Training& t = s.training;
  q.beginGroup(QStringLiteral("settings"));
  q.setValue(QStringLiteral("model"), qstr(s.model));
  q.setValue(QStringLiteral("cluster_file"), qstr(s.cluster.file));
  q.setValue(QStringLiteral("gpu"), qstr(s.cluster.gpu));
  q.setValue(QStringLiteral("gpus_per_node"), s.cluster.gpus_per_node);
  q.setValue(QStringLiteral("nodes"), s.cluster.nodes);
  q.setValue(QStringLiteral("inter_node"), qstr(s.cluster.inter_node));
  q.setValue(QStringLiteral("host_memory_gib"), s.cluster.host_memory_gib);
  q.setValue(QStringLiteral("profile"), qstr(s.profile));
  q.setValue(QStringLiteral("train_tokens"), qstr(s.train_tokens));
  q.setValue(QStringLiteral("method"), qstr(to_string(t.method)));
  q.setValue(QStringLiteral("precision"), qstr(to_string(t.precision)));
  q.setValue(QStringLiteral("optimizer"), qstr(to_string(t.optimizer)));
  q.setValue(QStringLiteral("strategy"), qstr(to_string(t.strategy)));
  q.setValue(QStringLiteral("framework"), qstr(to_string(t.framework)));
  q.setValue(QStringLiteral("tp"), t.tp);
  q.setValue(QStringLiteral("pp"), t.pp);
  q.setValue(QStringLiteral("pp_virtual"), t.pp_virtual);
  q.setValue(QStringLiteral("expert_parallel"), t.ep);
  q.setValue(QStringLiteral("sequence_parallel"), t.sequence_parallel);
  q.setValue(QStringLiteral("micro_batch"), static_cast<qlonglong>(t.micro_batch));
  q.setValue(QStringLiteral("grad_accum"), static_cast<qlonglong>(t.grad_accum));
  q.setValue(QStringLiteral("seq"), static_cast<qlonglong>(t.seq));
  q.setValue(QStringLiteral("checkpointing"), qstr(to_string(t.checkpointing)));
  q.setValue(QStringLiteral("attention"), qstr(to_string(t.attention)));
  q.setValue(QStringLiteral("offload"), qstr(to_string(t.offload)));
  q.setValue(QStringLiteral("lora_rank"), static_cast<qlonglong>(t.lora.rank));
  q.setValue(QStringLiteral("lora_alpha"), t.lora.alpha);
  q.setValue(QStringLiteral("lora_dropout"), t.lora.dropout);
  q.setValue(QStringLiteral("lora_targets"), qstr(s.lora_targets));
  q.setValue(QStringLiteral("quant"), qstr(to_string(t.quant)));
  q.setValue(QStringLiteral("quant_block"), static_cast<qlonglong>(t.quant_block));
  q.setValue(QStringLiteral("frozen_base_fp32"), t.frozen_base_fp32);
  q.setValue(QStringLiteral("fsdp_wrap"), qstr(to_string(t.fsdp_wrap)));
  q.setValue(QStringLiteral("optimizer_impl"), qstr(to_string(t.optimizer_impl)));
  q.setValue(QStringLiteral("sweep"), qstr(to_string(s.sweep)));
  q.endGroup();
}

Settings restore_settings(const QSettings& stored) {
  Settings s;
  if (!stored.childGroups().contains(QStringLiteral("settings"))) return s;
  // QSettings::beginGroup needs a mutable object: read through prefixed keys.
  const QSettings& q = stored;
  model::Training& t = s.training;
  auto str = [&](const char* key, std::string& out) {
    const QVariant v = q.value(QStringLiteral("settings/") + QString::fromUtf8(key));
    if (v.isValid()) out = sstr(v.toString());
  };
  str("model", s.model);
  str("cluster_file", s.cluster.file);
  str("gpu", s.cluster.gpu);
  str("inter_node", s.cluster.inter_node);
  str("profile", s.profile);
  str("train_tokens", s.train_tokens);
  str("lora_targets", s.lora_targets);
  restore_number(q, "settings/gpus_per_node", s.cluster.gpus_per_node, 1);
  restore_number(q, "settings/nodes", s.cluster.nodes, 1);
  if (const double host = q.value(QStringLiteral("settings/host_memory_gib")).toDouble(); host > 0.0)
    s.cluster.host_memory_gib = host;
  restore_enum(q, "settings/method", t.method);
  restore_enum(q, "settings/precision", t.precision);
  restore_enum(q, "settings/optimizer", t.optimizer);
  restore_enum(q, "settings/strategy", t.strategy);
  restore_enum(q, "settings/framework", t.framework);
  restore_number(q, "settings/tp", t.tp, 1);
  restore_number(q, "settings/pp", t.pp, 1);
  restore_number(q, "settings/pp_virtual", t.pp_virtual, 1);
  restore_number(q, "settings/expert_parallel", t.ep, 1);
  t.sequence_parallel = q.value(QStringLiteral("settings/sequence_parallel"), false).toBool();
  restore_number(q, "settings/micro_batch", t.micro_batch, std::int64_t{1});
  restore_number(q, "settings/grad_accum", t.grad_accum, std::int64_t{1});
  restore_number(q, "settings/seq", t.seq, std::int64_t{1});
  restore_enum(q, "settings/checkpointing", t.checkpointing);
  restore_enum(q, "settings/attention", t.attention);
  restore_enum(q, "settings/offload", t.offload);
  restore_number(q, "settings/lora_rank", t.lora.rank, std::int64_t{1});
  bool ok = false;
  const double alpha = q.value(QStringLiteral("settings/lora_alpha")).toDouble(&ok);
  if (ok && alpha > 0) t.lora.alpha = alpha;
  const double dropout = q.value(QStringLiteral("settings/lora_dropout")).toDouble(&ok);
  if (ok && dropout >= 0 && dropout < 1) t.lora.dropout = dropout;
  restore_enum(q, "settings/quant", t.quant);
  restore_number(q, "settings/quant_block", t.quant_block, std::int64_t{64});
  t.frozen_base_fp32 = q.value(QStringLiteral("settings/frozen_base_fp32"), false).toBool();
  restore_enum(q, "settings/fsdp_wrap", t.fsdp_wrap);
  restore_enum(q, "settings/optimizer_impl", t.optimizer_impl);
  restore_enum(q, "settings/sweep", s.sweep);
  return s;
}

// ---- Command line -------------------------------------------------------------------------------

namespace {

template <class E>
E option_enum(const QString& flag, const QString& value) {
  try {
    return parse_enum<E>(sstr(value));
  } catch (const InputError& e) {
    throw InputError("--" + sstr(flag) + ": " + e.what());
  }
}

std::int64_t option_integer(const QString& flag, const QString& value, std::int64_t lowest) {
  bool ok = false;
  const qlonglong v = value.toLongLong(&ok);
  if (!ok) throw InputError("--" + sstr(flag) + ": '" + sstr(value) + "' is not a whole number");
  if (v < lowest)
    throw InputError("--" + sstr(flag) + " must be at least " + std::to_string(lowest) + " (got " +
                     sstr(value) + ")");
  return v;
}

double option_real(const QString& flag, const QString& value) {
  bool ok = false;
  const double v = value.toDouble(&ok);
  if (!ok) throw InputError("--" + sstr(flag) + ": '" + sstr(value) + "' is not a number");
  return v;
}

}  // namespace

CommandLine parse_command_line(const QStringList& arguments, const io::Catalog& catalog) {
  QCommandLineParser p;
  p.setApplicationDescription(QStringLiteral(
      "trainplan-gui: explore memory, step time and communication of LLM training. Options as in "
      "`trainplan fit`; an option left out keeps its default (the strategy, checkpointing and "
      "offload "
      "left out are the ones `trainplan fit` recommends)."));
  p.addHelpOption();
  struct Opt {
    const char* name;
    const char* value;
    const char* help;
  };
  static constexpr Opt kOpts[] = {
      {"model", "MODEL", "catalogue name, Hugging Face id, size alias or config.json path"},
      {"cluster", "CLUSTER", "4xA100-80GB, A100-80GB, 2x8xH100-80GB, or a cluster JSON file"},
      {"method", "METHOD", "full | lora | qlora"},
      {"precision", "PRECISION", "fp32 | fp16-mixed | bf16-mixed | fp16-true | bf16-true"},
      {"optimizer", "OPTIMIZER",
       "adamw | adam | sgd | sgd-momentum | adamw-8bit | paged-adamw-8bit | adafactor"},
      {"strategy", "STRATEGY",
       "single | ddp | zero1 | zero2 | zero3 | fsdp-full | fsdp-grad-op | fsdp-hybrid"},
      {"framework", "FRAMEWORK", "pytorch | deepspeed | megatron"},
      {"tp", "N", "tensor-parallel degree"},
      {"pp", "N", "pipeline-parallel degree"},
      {"pp-virtual", "N", "interleaved pipeline chunks per stage"},
      {"expert-parallel", "N", "MoE: spread the experts over N data-parallel ranks"},
      {"micro-batch", "N", "sequences per GPU per step"},
      {"grad-accum", "N", "micro-batches per optimizer step"},
      {"seq", "N", "sequence length in tokens"},
      {"checkpointing", "MODE", "none | selective | full | full-offload"},
      {"attention", "KIND", "flash | sdpa | eager"},
      {"offload", "MODE", "none | optimizer | optimizer+params"},
      {"lora-rank", "N", "LoRA rank"},
      {"lora-alpha", "X", "LoRA alpha"},
      {"lora-dropout", "X", "LoRA dropout"},
      {"lora-targets", "LIST", "q,v | all-linear | module names"},
      {"quant", "KIND", "nf4 | nf4-dq | fp4 | int8"},
      {"quant-block", "N", "QLoRA 4-bit blocksize: weights per absmax constant (default 64)"},
      {"fsdp-wrap", "POLICY", "block | none"},
      {"optimizer-impl", "IMPL", "default | foreach | fused | for-loop | deepspeed-fused | deepspeed-cpu"},
      {"inter-node", "SPEC", "NICs per node x rate, e.g. 8x200Gbps"},
      {"host-memory", "GiB", "CPU memory per node for offloaded states and checkpoints"},
      {"profile", "PROFILE.json",
       "hardware profile from `trainplan calibrate fit` (default: datasheet numbers)"},
      {"sweep", "AXIS", "x axis of the sweep chart: micro-batch | seq"},
      {"tokens", "N", "training tokens (300B, 1T, 2.5e12): show the time to train them"},
      {"screenshot", "FILE.png", "render the main window, write it to FILE.png and exit"},
      {"size", "WxH", "window size for --screenshot (default 1280x800)"},
      {"tab", "NAME",
       "table tab to show: memory, time, communication, strategies, sweep, plans, compare"},
      {"chart", "NAME", "chart tab to show beside the memory chart: time, sweep, plans"},
  };
  for (const Opt& o : kOpts)
    p.addOption(QCommandLineOption(QString::fromUtf8(o.name), QString::fromUtf8(o.help),
                                   QString::fromUtf8(o.value)));
  p.addOption(QCommandLineOption(
      QStringLiteral("dark"),
      QStringLiteral("use a dark palette instead of the system's (for screenshots)")));
  p.addOption(
      QCommandLineOption(QStringLiteral("search"),
                         QStringLiteral("run the plan search at start (before --screenshot)")));
  p.addOption(
      QCommandLineOption(QStringLiteral("sequence-parallel"),
                         QStringLiteral("shard norms and dropout along the sequence (with --tp)")));
  p.addOption(QCommandLineOption(
      QStringLiteral("frozen-base-fp32"),
      QStringLiteral("adapters under *-mixed: keep the frozen base in fp32 (litgpt)")));
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
  Settings& s = out.settings;
  model::Training& t = s.training;
  auto has = [&](const char* k) { return p.isSet(QString::fromUtf8(k)); };
  auto val = [&](const char* k) { return p.value(QString::fromUtf8(k)); };
  auto name = [](const char* k) { return QString::fromUtf8(k); };
  if (has("model")) s.model = sstr(val("model"));
  if (has("cluster")) {
    const std::string spec = sstr(val("cluster"));
    if (spec.ends_with(".json")) {
      s.cluster.file = spec;
    } else {
      const io::ResolvedCluster c = catalog.resolve_cluster(spec, std::nullopt);
      s.cluster.file.clear();
      s.cluster.gpu = c.cluster.gpu.name;
      s.cluster.nodes = c.cluster.nodes;
      s.cluster.gpus_per_node = c.cluster.gpus_per_node;
    }
  }
  if (has("inter-node")) s.cluster.inter_node = sstr(val("inter-node"));
  if (has("host-memory")) {
    bool ok = false;
    s.cluster.host_memory_gib = val("host-memory").toDouble(&ok);
    if (!ok || !(s.cluster.host_memory_gib > 0.0))
      throw InputError("--host-memory must be a positive number of GiB per node (got '" +
                       sstr(val("host-memory")) + "')");
  }
  if (has("profile")) s.profile = sstr(val("profile"));
  if (has("tokens")) s.train_tokens = sstr(val("tokens"));
  if (has("method")) t.method = option_enum<Method>(name("method"), val("method"));
  if (has("precision")) t.precision = option_enum<Precision>(name("precision"), val("precision"));
  if (has("optimizer")) t.optimizer = option_enum<Optimizer>(name("optimizer"), val("optimizer"));
  if (has("framework")) t.framework = option_enum<Framework>(name("framework"), val("framework"));
  if (has("attention")) t.attention = option_enum<Attention>(name("attention"), val("attention"));
  if (has("quant")) t.quant = option_enum<Quant>(name("quant"), val("quant"));
  if (has("quant-block")) t.quant_block = option_integer(name("quant-block"), val("quant-block"), 64);
  t.frozen_base_fp32 = has("frozen-base-fp32");
  if (has("fsdp-wrap")) t.fsdp_wrap = option_enum<FsdpWrap>(name("fsdp-wrap"), val("fsdp-wrap"));
  if (has("optimizer-impl"))
    t.optimizer_impl = option_enum<OptimizerImpl>(name("optimizer-impl"), val("optimizer-impl"));
  if (has("sweep")) s.sweep = option_enum<SweepAxis>(name("sweep"), val("sweep"));
  // Left out, the precision and attention follow the GPU, as in `trainplan fit`.
  if (!has("precision") || !has("attention")) {
    std::optional<hardware::GpuSpec> gpu;
    if (s.cluster.file.empty()) {
      gpu = catalog.resolve_gpu(s.cluster.gpu).spec;
    } else {
      try {
        gpu = catalog.resolve_cluster(s.cluster.file, std::nullopt).cluster.gpu;
      } catch (const InputError&) {
        // The window names what is wrong with the file.
      }
    }
    if (gpu && !has("precision")) t.precision = hardware::default_precision(*gpu);
    if (gpu && !has("attention")) t.attention = hardware::default_attention(*gpu);
  }
  out.strategy_given = has("strategy");
  if (out.strategy_given) t.strategy = option_enum<Strategy>(name("strategy"), val("strategy"));
  out.checkpointing_given = has("checkpointing");
  if (out.checkpointing_given)
    t.checkpointing = option_enum<Checkpointing>(name("checkpointing"), val("checkpointing"));
  out.offload_given = has("offload");
  if (out.offload_given) t.offload = option_enum<Offload>(name("offload"), val("offload"));
  if (has("tp")) t.tp = static_cast<int>(option_integer(name("tp"), val("tp"), 1));
  if (has("pp")) t.pp = static_cast<int>(option_integer(name("pp"), val("pp"), 1));
  if (has("pp-virtual"))
    t.pp_virtual = static_cast<int>(option_integer(name("pp-virtual"), val("pp-virtual"), 1));
  if (has("expert-parallel"))
    t.ep = static_cast<int>(option_integer(name("expert-parallel"), val("expert-parallel"), 1));
  t.sequence_parallel = has("sequence-parallel");
  if (has("micro-batch"))
    t.micro_batch = option_integer(name("micro-batch"), val("micro-batch"), 1);
  if (has("grad-accum")) t.grad_accum = option_integer(name("grad-accum"), val("grad-accum"), 1);
  out.seq_given = has("seq");
  if (out.seq_given) t.seq = option_integer(name("seq"), val("seq"), 1);
  if (has("lora-rank")) t.lora.rank = option_integer(name("lora-rank"), val("lora-rank"), 1);
  if (has("lora-alpha")) t.lora.alpha = option_real(name("lora-alpha"), val("lora-alpha"));
  if (has("lora-dropout")) {
    t.lora.dropout = option_real(name("lora-dropout"), val("lora-dropout"));
    if (t.lora.dropout < 0 || t.lora.dropout >= 1)
      throw InputError("--lora-dropout must be in [0, 1)");
  }
  if (has("lora-targets")) s.lora_targets = sstr(val("lora-targets"));
  if (has("screenshot")) out.screenshot = val("screenshot");
  if (has("size")) {
    const QStringList wh = val("size").split(QLatin1Char('x'));
    bool ok_w = false;
    bool ok_h = false;
    if (wh.size() == 2) out.size = QSize(wh[0].toInt(&ok_w), wh[1].toInt(&ok_h));
    if (!ok_w || !ok_h || out.size.width() < 320 || out.size.height() < 240)
      throw InputError("--size: expected WIDTHxHEIGHT, e.g. 1280x800 (got '" + sstr(val("size")) +
                       "')");
  }
  if (has("tab")) out.tab = val("tab");
  if (has("chart")) out.chart = val("chart");
  out.search = has("search");
  out.dark = has("dark");
  return out;
}

const io::ResolvedModel& Evaluator::model(const std::string& spec) {
  auto it = models_.find(spec);
  if (it == models_.end()) it = models_.emplace(spec, catalog_.resolve_model(spec)).first;
  return it->second;
}

const io::ResolvedCluster& Evaluator::cluster(const ClusterChoice& c) {
  const std::string spec = c.spec();
  const std::string key = spec + "|" + c.inter_node + "|" + std::to_string(c.host_memory_gib);
  auto it = clusters_.find(key);
  if (it == clusters_.end()) {
    const std::optional<std::string> inter =
        c.inter_node.empty() ? std::nullopt : std::optional<std::string>(c.inter_node);
    io::ResolvedCluster resolved = catalog_.resolve_cluster(spec, inter);
    if (c.host_memory_gib > 0.0) resolved.cluster.host_memory = gib(c.host_memory_gib);
    it = clusters_.emplace(key, std::move(resolved)).first;
  }
  return it->second;
}

const hardware::HardwareProfile* Evaluator::profile(const std::string& path) {
  if (path.empty()) return nullptr;
  auto it = profiles_.find(path);
  if (it == profiles_.end()) {
    try {
      it = profiles_.emplace(path, io::read_profile(path)).first;
    } catch (const InputError& e) {
      throw InputError("hardware profile '" + path + "' is not usable: " + e.what());
    }
  }
  return &it->second;
}

Evaluation Evaluator::evaluate(const Settings& s) {
  const io::ResolvedModel& m = model(s.model);
  const io::ResolvedCluster& c = cluster(s.cluster);
  Evaluation e;
  e.settings = s;
  e.arch = m.arch;
  e.params = model::count_parameters(m.arch);
  e.settings.training.lora.targets = model::split_targets(s.lora_targets);
  const model::Training& t = e.settings.training;
  if (t.lora.rank < 1) throw InputError("LoRA rank must be at least 1");
  e.trainable = t.method == Method::full ? e.params.total : model::lora_parameters(m.arch, t.lora);
  e.cluster = c.cluster;
  hardware::require_supported(c.cluster.gpu, t.precision, t.attention);
  const hardware::HardwareProfile* p = profile(s.profile);
  if (p) e.profile_name = p->name.empty() ? s.profile : p->name;
  e.estimate = planner::evaluate(m.arch, e.params, t, c.cluster, p);
  if (!s.train_tokens.empty()) {
    e.tokens = io::parse_count(s.train_tokens, "tokens to train");
    e.time_to_train = planner::time_to_train(e.estimate, *e.tokens);
  }
  if (!m.note.empty()) e.notes.push_back(m.note);
  e.notes.insert(e.notes.end(), c.notes.begin(), c.notes.end());
  return e;
}

Sweep Evaluator::sweep(const Evaluation& e) {
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
  const io::ResolvedModel& m = model(e.settings.model);
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

planner::FitResult Evaluator::strategies(const Evaluation& e) {
  planner::FitRequest req;
  req.base = e.settings.training;
  req.micro_batch_pinned = true;
  try {
    return planner::fit(e.arch, e.params, req, e.cluster);
  } catch (const InputError&) {
    return {};
  }
}

Session::Session(const io::Catalog& catalog, QObject* parent)
    : QObject(parent), catalog_(catalog), evaluator_(catalog) {}

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
  try {
    current_ = evaluator_.evaluate(s);
    sweep_ = evaluator_.sweep(*current_);
    strategies_ = evaluator_.strategies(*current_);
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
  Settings out = s;
  const io::ResolvedModel& m = evaluator_.model(s.model);
  const io::ResolvedCluster& c = evaluator_.cluster(s.cluster);
  planner::FitRequest req;
  req.base = s.training;
  req.base.lora.targets = model::split_targets(s.lora_targets);
  req.micro_batch_pinned = true;
  if (!free_strategy) req.strategy = s.training.strategy;
  if (!free_checkpointing) req.checkpointing = s.training.checkpointing;
  if (!free_offload) req.offload = s.training.offload;
  const model::ParameterCounts n = model::count_parameters(m.arch);
  const planner::FitResult f = planner::fit(m.arch, n, req, c.cluster);
  if (f.candidates.empty()) return out;
  const planner::Candidate* pick = nullptr;
  if (f.recommended) {
    pick = &f.candidates[*f.recommended];
  } else {
    pick = &*std::min_element(
        f.candidates.begin(), f.candidates.end(),
        [](const auto& a, const auto& b) { return a.memory.device_total < b.memory.device_total; });
  }
  out.training.strategy = pick->training.strategy;
  out.training.checkpointing = pick->training.checkpointing;
  out.training.offload = pick->training.offload;
  return out;
}

std::optional<std::int64_t> Session::defaultSeq(const std::string& model) {
  try {
    return default_seq(evaluator_.model(model).arch);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void Session::reloadFiles() { evaluator_.forget_files(); }

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
  const io::Catalog* catalog = &catalog_;
  const std::shared_ptr<std::atomic<bool>> cancel = search_cancel_;
  search_watcher_->setFuture(QtConcurrent::run([s, catalog, cancel](QPromise<SearchOutcome>& promise) {
    SearchOutcome out;
    out.settings = s;
    promise.setProgressRange(0, 0);
    try {
      QElapsedTimer timer;
      timer.start();
      Evaluator ev(*catalog);
      const Evaluation e = ev.evaluate(s);
      planner::PlanRequest req;
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
          planner::search(e.arch, e.params, e.cluster, req, ev.profile(s.profile));
      for (std::size_t i = 0; i < r.plans.size(); ++i)
        out.plans.push_back(
            {r.plans[i], false, i < r.why_slower.size() ? r.why_slower[i] : std::string()});
      mark_pareto_front(out.plans);
      out.usable = e.usable();
      out.ok = true;
      out.message =
          QStringLiteral(
              "%1 plans at global batch %2 (%3 configurations evaluated, %4 fit) in %5; "
              "bold: the Pareto front.")
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

void Session::loadPlan(std::size_t i) {
  if (i >= plans_.size()) return;
  Settings s = plans_settings_;
  s.training = plans_[i].estimate.training;
  s.sweep = settings_.sweep;
  setSettings(s);
}

void mark_pareto_front(std::vector<PlanPoint>& plans) {
  std::vector<planner::Estimate> estimates;
  estimates.reserve(plans.size());
  for (const PlanPoint& p : plans) estimates.push_back(p.estimate);
  const std::vector<bool> front = planner::pareto_front(estimates);
  for (std::size_t i = 0; i < plans.size(); ++i) plans[i].pareto = front[i];
}

}  // namespace trainplan::gui
