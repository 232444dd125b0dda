#pragma once
// Checkpointing the fewest blocks that still fit, where the library can checkpoint some blocks
// only (model::some_blocks_offer: Megatron-LM's first K layers of each pipeline chunk, torchtitan's
// one block in N). Memory falls and time rises with each block checkpointed, so the fewest that fit
// run fastest among them: found by bisection. Shared by plan (at each plan's batch split) and fit
// (at the micro-batch it asks about).

#include <cstdint>
#include <optional>

#include "trainplan/model/partial.hpp"
#include "trainplan/model/training.hpp"

namespace trainplan::planner {

// Whether `given`, full checkpointing of every block, can be checkpointing fewer: the library
// offers it and neither some blocks (--checkpoint-every, --checkpoint-layers) nor groups of blocks
// (--checkpoint-group) were asked for.
inline bool can_checkpoint_fewer(const model::Architecture& a, const model::Training& given) {
  return given.checkpointing == Checkpointing::full && !model::picks_some_blocks(given) &&
         given.checkpoint_group <= 1 && model::some_blocks_offer(a, given).kind != model::SomeBlocks::none;
}

// The fewest blocks checkpointed for which fits(training) holds, or nullopt where only every block
// does (which the caller knows fits). Candidate i, from the fewest: K = i + 1, or N = blocks - i.
template <class Fits>
std::optional<model::Training> fewest_checkpointed_blocks(const model::Architecture& a, const model::Training& given,
                                                          Fits&& fits) {
  const model::SomeBlocksOffer offer = model::some_blocks_offer(a, given);
  const bool first_layers = offer.kind == model::SomeBlocks::first_layers;
  auto at = [&](std::int64_t i) {
    model::Training t = given;
    if (first_layers)
      t.checkpoint_layers = i + 1;
    else
      t.checkpoint_every = offer.blocks - i;
    return t;
  };
  std::int64_t lo = 0;
  std::int64_t hi = offer.blocks - 1;  // i = blocks - 1 is every block again
  std::optional<model::Training> fewest;
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    model::Training t = at(mid);
    if (fits(t)) {
      fewest = std::move(t);
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return fewest;  // the last that fitted: index lo
}

}  // namespace trainplan::planner
