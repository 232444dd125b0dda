#pragma once
// Replay's input and output. Input: the JSON of `trainplan estimate --json` (trainplan.estimate/1)
// or one plan of `trainplan plan --json` (trainplan.plan/1), read back into the model, the cluster
// and the training options through the built-in catalogue. Options these files do not record
// (attention kernel, LoRA rank and targets, quantization, FSDP wrap, optimizer implementation) come
// from "key=value" settings, else from the defaults, and the input says which defaults it assumed.
// Output: trainplan.replay/1, every component with its shape, count, predicted and measured time,
// and the step totals:
//   {"schema", "input":{"file","schema","plan_index","settings","assumed"}, "model", "cluster",
//    "training":{...}, "layout":{...}, "provenance":{...}|null, "components":[...],
//    "by_kind":{...}, "totals":{...}, "notes":[...]}

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainplan/hardware/gpu.hpp"
#include "trainplan/request/catalog.hpp"
#include "trainplan/request/json_util.hpp"
#include "trainplan/model/architecture.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/model/training.hpp"
#include "trainplan/planner/replay.hpp"

namespace trainplan::reports {

using request::Catalog;
using request::Json;

inline constexpr std::string_view kReplaySchema = "trainplan.replay/1";

struct ReplayInput {
  std::string file;
  std::string schema;  // of the file read
  std::size_t plan_index = 0;
  model::Architecture arch;
  model::ParameterCounts counts;
  hardware::Cluster cluster;
  model::Training training;
  std::optional<double> recorded_step_s;  // the plan's "time.step_s"
  std::vector<std::string> settings;      // the "key=value" settings applied
  std::vector<std::string> assumed;       // options neither the file nor a setting gave
};

// The training keys a plan holds or a setting may give, in the plan's spelling.
[[nodiscard]] const std::vector<std::string_view>& replay_training_keys();

// Reads `path`; `plan_index` picks a plan of plan --json (an estimate has only plan 0); each
// setting "key=value" gives or overrides one training key. Throws InputError naming the file and
// the key (or the setting) for anything unreadable, unknown to the catalogue or inconsistent.
[[nodiscard]] ReplayInput read_replay_input(const Catalog& catalog, const std::string& path,
                                            std::size_t plan_index,
                                            const std::vector<std::string>& settings);
// The same from parsed JSON; `what` names it in messages.
[[nodiscard]] ReplayInput replay_input_from_json(const Catalog& catalog, const Json& j,
                                                 const std::string& what, std::size_t plan_index,
                                                 const std::vector<std::string>& settings);

// What running one component gave: its time per occurrence, or why there is none.
struct ReplayMeasurement {
  std::optional<Seconds> time;
  std::string method;  // how it ran: "cuBLASLt", "cuDNN SDPA", "copy kernels", "NCCL 8 ranks", ...
  std::string note;    // why it was not measured, or what stood in for it
};

// `measured` has one entry per component (or is empty: predictions only); `provenance` is the run's
// (null when nothing ran). Throws std::invalid_argument on a count mismatch.
[[nodiscard]] Json replay_json(const ReplayInput& in, const planner::ReplayPlan& plan,
                               const std::vector<ReplayMeasurement>& measured,
                               const Json& provenance);

}  // namespace trainplan::reports
