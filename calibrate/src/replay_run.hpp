// trainplan-calibrate --replay ESTIMATE.json: runs on the GPUs what one GPU does in a plan
// (planner::replay_plan: its GEMMs at their TP-sharded shapes, the attention kernel, the
// memory-bound traffic, the optimizer step over its parameters, the collectives among the job's
// ranks), prints measured vs predicted per component with the projected step time, and writes
// RUN_DIR/replay.json (schema trainplan.replay/1, reports/replay_json.hpp) with the run's provenance.
#pragma once

#include <string>

#include "bootstrap.hpp"
#include "options.hpp"

namespace trainplan::calibrate {

// Prints the components and their predictions; runs nothing and needs no GPU. With -o, writes
// RUN_DIR/replay.json without measurements. Throws trainplan::InputError for bad input.
void run_replay_dry(const Options& o);

// Collectives on every rank of the job (where it holds the ranks their groups need), the kernels on
// world rank 0's first GPU. Throws trainplan::InputError for bad input, GpuError for failures that
// stop the run (a component that cannot run is reported and skipped).
void run_replay(const Options& o, Bootstrap& boot, const std::string& command);

}  // namespace trainplan::calibrate
