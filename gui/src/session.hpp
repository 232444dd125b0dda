#pragma once
// The explorer's state: the settings the user chose and everything the library answered for them.
// Evaluation is synchronous (the memory and time models answer in milliseconds); the plan search
// runs on a worker thread and reports progress.

#include <QFutureWatcher>
#include <QObject>
#include <QSettings>
#include <QSize>
#include <QString>
#include <QStringList>
#include <atomic>
#include <cstdint>
#include <map>
#include <set>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainplan/hardware/gpu.hpp"
#include "trainplan/hardware/profile.hpp"
#include "trainplan/request/catalog.hpp"
#include "trainplan/request/cluster_shape.hpp"
#include "trainplan/request/request.hpp"
#include "trainplan/model/architecture.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/model/training.hpp"
#include "trainplan/planner/emit.hpp"
#include "trainplan/planner/estimate.hpp"
#include "trainplan/planner/explain.hpp"
#include "trainplan/planner/fit.hpp"

namespace trainplan::gui {

enum class SweepAxis { micro_batch, seq };

}  // namespace trainplan::gui

namespace trainplan {
template <>
struct EnumTable<gui::SweepAxis> {
  static constexpr std::string_view kWhat = "sweep axis";
  static constexpr std::array kEntries{
      std::pair{gui::SweepAxis::micro_batch, std::string_view{"micro-batch"}},
      std::pair{gui::SweepAxis::seq, std::string_view{"seq"}}};
};
}  // namespace trainplan

namespace trainplan::gui {

// The first start: a 7B model on one 8-GPU node, sharded with FSDP.
[[nodiscard]] model::Training default_training();

// The request as the window holds it (request::Request: the library's option schema reads and writes
// it), and the sweep axis. The cluster is the request's alone (cluster_spec, inter_node,
// host_memory_gib); the form's GPU, GPUs-per-node and node fields read and write its spec.
//
// Training config files opened in the window stay a list (`files`, in the order opened: a later
// file over an earlier one) over the window's own values (`own`); the options the user set in the
// window (`edited`) win over every file, as flags do on the command line. With files, the request
// above is request::make_request over them (Session::editSettings, withConfigFile,
// withoutConfigFile keep it so); without, it is the window's own values and `own` is not used.
struct Settings : request::Request {
  Settings();
  SweepAxis sweep = SweepAxis::micro_batch;
  std::vector<std::string> files;
  request::Request own;
  std::set<std::string, std::less<>> edited;
  [[nodiscard]] request::ClusterShape cluster() const { return request::cluster_shape(cluster_spec); }
  void setCluster(const request::ClusterShape& c) { cluster_spec = c.spec(); }
};

// The settings as the window remembers them (QSettings); unknown or invalid values keep defaults.
void store_settings(QSettings& q, const Settings& s);
[[nodiscard]] Settings restore_settings(const QSettings& q);

// trainplan-gui's command line: the schema's training options, --from, and the window's own.
struct CommandLine {
  Settings settings;  // settings.given: the options given (the others take defaults at start)
  QString screenshot;  // write the window to this PNG and exit
  QSize size{1280, 800};
  QString tab;  // table tab to show: memory, time, communication, strategies, sweep, plans, compare
  QString chart;        // chart tab to show: time, sweep, plans
  bool search = false;  // run the plan search at start (and wait for it before --screenshot)
  bool dark = false;    // a dark Fusion palette instead of the system's (screenshots of dark mode)
  bool help = false;
  QString help_text;
};
// Throws InputError naming the bad option.
[[nodiscard]] CommandLine parse_command_line(const QStringList& arguments,
                                             const request::Catalog& catalog);

// The window's request for the library: every option given in the window's words (its labels).
[[nodiscard]] request::Request window_request(const Settings& s);

// How the window names a field of a FieldError template or an emitter's note: the option's label
// in the schema ("Strategy"), or the field itself when the schema has no such option.
[[nodiscard]] std::string field_label(std::string_view field);

// One fully specified configuration and what the library says about it.
struct Evaluation {
  Settings settings;
  model::Architecture arch;
  model::ParameterCounts params;
  std::int64_t trainable = 0;
  hardware::Cluster cluster;
  planner::Estimate estimate;
  std::vector<std::string> notes;
  request::Json request_json;  // notes, warnings and provenance, as the CLI's JSON gives them
  std::string profile_name;              // empty: datasheet defaults
  planner::EmitContext emit;             // for the launch configs: the Hub id where known
  std::optional<double> tokens;          // to train, when asked
  std::optional<Seconds> time_to_train;  // planner::time_to_train for them
  [[nodiscard]] Bytes usable() const { return cluster.gpu.usable_memory; }
  [[nodiscard]] QString title() const;         // "FSDP full shard · mb 4 · seq 4096"
  [[nodiscard]] QString plan_text() const;     // "ZeRO-3 + TP2 + PP2 + full checkpointing"
  [[nodiscard]] QString cluster_text() const;  // reports::cluster_words: "16x H100-80GB (2 nodes x 8)"
};

struct SweepPoint {
  std::int64_t x = 0;
  planner::Estimate estimate;
};

struct Sweep {
  SweepAxis axis = SweepAxis::micro_batch;
  std::vector<SweepPoint> points;        // ascending x
  std::optional<std::size_t> current;    // the point of the current setting
  std::optional<std::size_t> first_oom;  // the first point that does not fit
  Bytes usable;
};

// A plan found by the search, with whether it is on the memory/throughput Pareto front.
struct PlanPoint {
  planner::Estimate estimate;
  bool pareto = false;
  std::string note;  // why it ranks where it does, when the search says
};

// Marks the plans no other plan beats on both memory per GPU (less) and tokens/s (more).
void mark_pareto_front(std::vector<PlanPoint>& plans);

// Resolves the window's settings through the catalogue, keeping the model, cluster and profile
// files it has read until forget_files(), and evaluates them. Qt-free, unlike the class below.
// Throws InputError.
class SettingsResolver {
 public:
  explicit SettingsResolver(const request::Catalog& catalog) : catalog_(catalog) {}
  [[nodiscard]] const request::ResolvedModel& model(const std::string& spec);
  [[nodiscard]] const request::ResolvedCluster& cluster(const request::Request& r);
  // The profile read from `path` (nullptr for an empty path), kept for the resolver's lifetime.
  [[nodiscard]] const hardware::HardwareProfile* profile(const std::string& path);
  [[nodiscard]] Evaluation evaluate(const Settings& s);
  [[nodiscard]] Sweep sweep(const Evaluation& e);
  // Every strategy x checkpointing x offload with the other options as set: planner::fit of the
  // request `trainplan fit` makes of them (request::resolve_with), the margin included.
  [[nodiscard]] planner::FitResult strategies(const Evaluation& e);
  // The smallest changes that make it fit, as `trainplan explain` finds them.
  [[nodiscard]] planner::Explanation explain(const Evaluation& e);
  void forget_files() {
    models_.clear();
    clusters_.clear();
    profiles_.clear();
  }

 private:
  const request::Catalog& catalog_;
  std::map<std::string, request::ResolvedModel> models_;
  std::map<std::string, request::ResolvedCluster> clusters_;
  std::map<std::string, hardware::HardwareProfile> profiles_;
};


class Session : public QObject {
  Q_OBJECT
 public:
  static constexpr std::size_t kMaxPins = 3;

  explicit Session(const request::Catalog& catalog, QObject* parent = nullptr);
  ~Session() override;

  [[nodiscard]] const request::Catalog& catalog() const { return catalog_; }
  [[nodiscard]] const Settings& settings() const { return settings_; }
  // Evaluates at once (current, sweep, strategies) and emits changed(); bad input leaves an error.
  void setSettings(const Settings& s);
  // The user changed the window to `s`: each option that differs from the settings shown becomes
  // the window's own and edited (it then wins over the files), the files are read again under it,
  // and the result is set as above.
  void editSettings(const Settings& s);
  // The settings with the strategy, checkpointing and offload planner::fit recommends among those
  // left free (the leanest candidate when none fits). Throws InputError.
  [[nodiscard]] Settings recommended(const Settings& s, bool free_strategy = true,
                                     bool free_checkpointing = true, bool free_offload = true);
  // Settings from a request in which only s.given holds what was asked (the command line, an
  // opened config file): the rest as `trainplan estimate` takes them (request::configuration).
  [[nodiscard]] Settings completed(const Settings& s);
  // The settings with a training config file (DeepSpeed JSON, accelerate YAML, PEFT
  // adapter_config.json, ... as `trainplan fit --from`) added to their files; `notes` gets what the
  // file was read as and each option it set. A file that states its nodes and processes sets the
  // window's cluster to that shape. Throws InputError naming the file and key.
  [[nodiscard]] Settings withConfigFile(const Settings& s, const std::string& path,
                                        std::vector<std::string>* notes);
  // The settings with these files in force instead (one dropped, or the order changed): what a
  // dropped file set goes back to the window's own values or to the files left. Throws InputError
  // when the files no longer read.
  [[nodiscard]] Settings withConfigFiles(const Settings& s, std::vector<std::string> files);
  // The sequence length `seq` becomes on `model`: kept where the model takes it, else the model's
  // default (request::default_seq), as the CLI starts it; nullopt when the model cannot be resolved.
  [[nodiscard]] std::optional<std::int64_t> seqOn(const std::string& model, std::int64_t seq);
  void reloadFiles();

  [[nodiscard]] const std::optional<Evaluation>& current() const { return current_; }
  [[nodiscard]] const QString& error() const { return error_; }
  [[nodiscard]] const Sweep& sweep() const { return sweep_; }
  [[nodiscard]] const planner::FitResult& strategies() const { return strategies_; }
  // When the current settings do not fit: the changes that make them fit (planner::suggest_changes,
  // as `trainplan explain` finds them).
  [[nodiscard]] const std::optional<planner::Explanation>& explanation() const { return explanation_; }
  [[nodiscard]] double lastEvaluationMs() const { return last_ms_; }

  [[nodiscard]] const std::vector<Evaluation>& pins() const { return pins_; }
  bool pinCurrent();
  void unpin(std::size_t i);
  void clearPins();

  // The plan search (planner/search.hpp) on a worker thread: every degree, sharding, checkpointing,
  // offload and micro-batch split of the current global batch, with method, precision, optimizer
  // and sequence length as set.
  static constexpr std::size_t kSearchTop = 40;
  [[nodiscard]] bool searching() const;
  void startSearch();
  void cancelSearch();
  [[nodiscard]] const std::vector<PlanPoint>& plans() const { return plans_; }
  [[nodiscard]] Bytes plansUsable() const {
    return plans_usable_;
  }  // the GPU's capacity in that search
  [[nodiscard]] const QString& searchMessage() const { return search_message_; }
  // What the settings ask differently from the request the plans were found for, one entry per
  // option the search does not choose ("Model llama-2-7b → llama-2-13b"); empty when the plans
  // answer the settings as they are (or there are none).
  [[nodiscard]] QStringList plansStaleBecause() const;
  // Loads the training options of a found plan; false, loading nothing, when the plans are stale.
  bool loadPlan(std::size_t i);

 Q_SIGNALS:
  void changed();
  void pinsChanged();
  void searchStarted();
  void searchProgress(int done, int total);
  void searchFinished();

 private:
  struct SearchOutcome {
    Settings settings;  // what was searched: a plan loads into these
    Bytes usable;
    std::vector<PlanPoint> plans;
    QString message;
    bool ok = false;
  };
  const request::Catalog& catalog_;
  SettingsResolver resolver_;
  Settings settings_;
  std::optional<Evaluation> current_;
  QString error_;
  Sweep sweep_;
  planner::FitResult strategies_;
  std::optional<planner::Explanation> explanation_;
  double last_ms_ = 0;
  std::vector<Evaluation> pins_;
  std::vector<PlanPoint> plans_;
  Settings plans_settings_;
  Bytes plans_usable_;
  QString search_message_;
  QFutureWatcher<SearchOutcome>* search_watcher_ = nullptr;
  std::shared_ptr<std::atomic<bool>> search_cancel_;
};

}  // namespace trainplan::gui
