#pragma once
// Memory-bound work outside the op list of a block: autocast's weight casts. The block's own
// elementwise ops, casts, copies and reductions are in its op list (model/block_ops.hpp).

#include "trainplan/model/block_ops.hpp"
#include "trainplan/model/training.hpp"

namespace trainplan::planner {

using model::KernelWork;

// Weight casts of autocast (fp32 parameters to the compute dtype in forward, their gradients back
// to fp32 in backward), per parameter of the block: forward and backward bytes.
[[nodiscard]] KernelWork autocast_weight_cast(double params, const model::Training& tr, bool backward);

}  // namespace trainplan::planner
