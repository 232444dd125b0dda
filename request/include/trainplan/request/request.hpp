#pragma once
// The one request layer of every front end. A Request is what a user asked for, option by option,
// each value with where it came from (a command-line flag, a GUI field, a key of a config file);
// the option schema (options()) says how each option is spelt, parsed, checked and documented, and
// resolve() turns a request into what the planner takes, applying the catalogue, the GPU's defaults
// and every check that involves more than one option. The CLI and the GUI build their options,
// help, tooltips and stored settings from the schema: adding a training option means a field in
// model::Training, an entry in options() and, where it depends on other options, a check in
// resolve() — nothing in cli/ or gui/.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainplan/hardware/profile.hpp"
#include "trainplan/request/catalog.hpp"
#include "trainplan/request/config_file.hpp"
#include "trainplan/request/json_util.hpp"
#include "trainplan/model/training.hpp"
#include "trainplan/planner/emit.hpp"
#include "trainplan/planner/fit.hpp"
#include "trainplan/planner/search.hpp"

namespace trainplan::request {

// Where an option applies: a bit per front-end command. `from_file` marks options only config files
// set (a cluster shape to check against the cluster given).
namespace command {
inline constexpr unsigned fit = 1;
inline constexpr unsigned estimate = 2;
inline constexpr unsigned plan = 4;
inline constexpr unsigned gui = 8;
inline constexpr unsigned from_file = 16;
inline constexpr unsigned explain = 32;
inline constexpr unsigned training = fit | estimate | plan | gui | explain;
}  // namespace command

struct Request {
  std::string model;    // catalogue name, Hugging Face id, size alias or config.json path
  std::string cluster_spec;  // "4xA100-80GB", "2x8xH100-80GB", "A100" or a cluster JSON path
  model::Training training;         // model::Training's defaults until an option sets a field
  std::string lora_targets = "q,v";  // as given: roles, module names or all-linear
  // --trainable's match:PATTERN terms: parameter-name patterns, as axolotl's unfrozen_parameters
  // reads them (request/src/unfrozen.cpp), resolved against the model's parameter names.
  std::vector<std::string> trainable_patterns;
  std::int64_t mtp_layers = 0;       // multi-token prediction modules (Megatron's --mtp-num-layers)
  std::optional<std::string> inter_node;
  std::optional<double> host_memory_gib;
  std::optional<std::int64_t> global_batch;         // sequences per optimizer step
  std::optional<std::int64_t> global_batch_tokens;  // tokens per optimizer step
  std::string profile;  // hardware profile JSON; empty: datasheet numbers
  std::string tokens;   // tokens to train ("300B"); empty: not asked
  std::optional<planner::EmitFormat> emit;
  bool force = false;   // --force: emit a launch config even for a plan that does not fit
  std::string output;   // --output FILE: where the launch config goes (standard output if empty)
  std::int64_t top = 5;
  double margin = 0;  // fit: a share of usable memory a recommendation leaves free
  bool tp_across_nodes = false;
  bool zero_plus_plus = false;
  bool activations = false;
  bool json = false;
  // `--precision fp8` named no recipe: the library's own (model::default_fp8_recipe) once it is known.
  bool fp8_library_default = false;
  // A file's model loaded in the checkpoint's own dtype: the precision once the model is known,
  // unless an input gives one (ConfigRead::precision_from_checkpoint).
  std::optional<CheckpointPrecision> precision_from_checkpoint;
  std::optional<std::int64_t> nodes;  // the cluster shape a config file states
  std::optional<std::int64_t> gpus;   // total processes a config file states
  // Option name -> where its value came from ("--micro-batch", "ds.json: zero_optimization.stage").
  std::map<std::string, std::string, std::less<>> given;
  std::vector<std::string> overridden;  // "--seq 4096 overrides ds.json: ... = 2048"
  std::vector<std::string> file_notes;  // what each config file was read as, and its warnings

  [[nodiscard]] bool has(std::string_view option) const { return given.find(option) != given.end(); }
  // How to name an option in a message: where its value came from, or "--name" when not given.
  [[nodiscard]] std::string label(std::string_view option) const;
};

// The largest parallel degree (tp, pp, virtual stages, expert parallel) and the largest count
// (micro-batch, accumulation, sequence length, global batch) any input may give; the products the
// planner forms from them are bounded again there (planner::validate_training).
inline constexpr std::int64_t kMaxDegree = std::int64_t{1} << 16;
inline constexpr std::int64_t kMaxCount = std::int64_t{1} << 40;

enum class OptionKind { text, choice, integer, real, flag };
enum class Searched { no, by_plan, by_fit_and_plan };

struct Option {
  std::string name;        // "micro-batch": the CLI's --micro-batch, the GUI's microBatch field
  std::string value_name;  // "N", "MODE"
  std::string label;       // "Micro-batch"
  std::string group;       // where the GUI shows it: model, cluster, method, adapters, parallelism,
                           // batch, memory, output
  std::string help;
  std::string default_text;  // what applies when it is omitted
  std::string details;       // a longer explanation with its sources (the GUI's tooltip)
  OptionKind kind = OptionKind::text;
  std::vector<std::string> choices;  // kind choice: the valid spellings
  double lowest = 0, highest = 0;    // kind integer/real: the valid range (closed)
  unsigned commands = command::training;
  Searched searched = Searched::no;
  bool positional = false;  // the CLI takes it as an argument rather than a flag
  // Parses and checks one value and sets the field; throws FieldError naming "{name}".
  std::function<void(Request&, std::string_view)> parse;
  // The field's value as the option takes it ("4", "zero3", "true").
  std::function<std::string(const Request&)> text;
  // When it has an effect (null: always), and in words; set where it has none, it is refused.
  std::function<bool(const Request&, unsigned command)> applies;
  std::string applies_text;

  [[nodiscard]] bool in(unsigned cmd) const { return (commands & cmd) != 0; }
};

// Every option, in the order help shows them.
[[nodiscard]] const std::vector<Option>& options();
// nullptr for an unknown name.
[[nodiscard]] const Option* find_option(std::string_view name);
// What leaving the option out means under this command: "searched when omitted", "default 1", or
// empty (a flag that is off).
[[nodiscard]] std::string when_omitted(const Option& o, unsigned cmd);
// Help for one option under one command: its text, its choices, and its default or that it is
// searched when omitted.
[[nodiscard]] std::string option_help(const Option& o, unsigned cmd);

// Parses `value` into the request, recording `source` ("--seq", "ds.json: key"). Throws InputError
// naming the source: an unknown option, a bad value.
void set_option(Request& r, std::string_view name, std::string_view value, const std::string& source);

// The file a value came from ("ds.json" of "ds.json: key = value"); empty for a flag or argument.
[[nodiscard]] std::string source_file(const std::string& source);

// What a value in the finished answer came from, for the provenance list.
struct Provenance {
  std::string option;
  std::string value;
  std::string source;  // "--micro-batch", "ds.json: train_micro_batch_size_per_gpu", "default"
};

struct Resolved {
  ResolvedModel model;
  ResolvedCluster cluster;
  planner::SearchRequest search;  // base training and what is pinned, for fit and plan alike
  std::optional<hardware::HardwareProfile> profile;
  bool force_emit = false;                   // --force: a launch config even for a plan that does not fit
  std::optional<double> tokens;              // to train
  std::optional<std::int64_t> global_batch;  // sequences per optimizer step
  std::vector<std::string> notes;     // defaults taken for the user (the GPU's precision, ...)
  std::vector<std::string> warnings;  // legal but suspicious requests
  std::vector<Provenance> provenance;  // every option given, with its source

  // How to name an option in a later error: where its value came from, or "--name".
  [[nodiscard]] std::string label(std::string_view option) const;
};

// What to do with an option set where it has no effect: the CLI answers with a warning naming it
// ("--lora-rank 16 ignored: it applies with --method lora or qlora"); the GUI, whose every field
// always holds a value, ignores it. Either way the option takes its default.
enum class Irrelevant { warn, ignore };

// Applies the catalogue, the GPU's defaults and every cross-option check; throws InputError naming
// the options in the words of their sources.
[[nodiscard]] Resolved resolve(const Catalog& catalog, const Request& r, unsigned cmd,
                               Irrelevant irrelevant = Irrelevant::warn);

// The checks that need neither the catalogue nor the GPU: an option of another command. Throws
// InputError.
void check_options(const Request& r, unsigned cmd);

// The same with the model and cluster already looked up (the GUI keeps them between edits).
[[nodiscard]] Resolved resolve_with(const ResolvedModel& model, const ResolvedCluster& cluster, const Request& r,
                                    unsigned cmd, Irrelevant irrelevant = Irrelevant::warn);

// The cluster spec to look up: the request's, or a bare GPU name given the shape a config file
// states ("A100-80GB" with 2 nodes of 8 processes: "2x8xA100-80GB").
[[nodiscard]] std::string cluster_spec(const Request& r);

// The one configuration estimate, explain and the GUI evaluate: the strategy, checkpointing and
// offload given, and for those omitted what planner::fit recommends at the request's micro-batch
// (the leanest candidate when none fits); the gradient accumulation the global batch asks for.
[[nodiscard]] model::Training configuration(const Resolved& r);

// What the emitters need beyond the plan: the model's Hub id where the catalogue knows it, ZeRO++.
[[nodiscard]] planner::EmitContext emit_context(const Resolved& r);

// Adds to an answer's JSON what the request resolved from: "notes" and "warnings" (lists of
// strings) and "provenance" (a list of {option, value, source}).
void add_request_json(Json& j, const Resolved& r);

// The sequence length a request without one takes: min(2048, the model's maximum), what the
// options schema documents for --seq.
[[nodiscard]] std::int64_t default_seq(const model::Architecture& a);

// A count as people write it: "300B" = 3e11, "1T" = 1e12, "2.5e12", "7M", "10K" (decimal
// prefixes K, M, B or G, T). Throws InputError naming `what` for anything else or a value <= 0.
[[nodiscard]] double parse_count(const std::string& text, const std::string& what);

}  // namespace trainplan::request
