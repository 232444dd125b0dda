#pragma once
// Megatron-LM with the distributed optimizer and TP 2 with sequence parallelism: the run the
// planner tests of Megatron's own features start from.
#include "trainplan/model/training.hpp"

namespace trainplan::test {

inline model::Training megatron_tp2() {
  model::Training t;
  t.framework = Framework::megatron;
  t.library = Library::megatron;
  t.strategy = Strategy::zero1;
  t.tp = 2;
  t.sequence_parallel = true;
  return t;
}

}  // namespace trainplan::test
