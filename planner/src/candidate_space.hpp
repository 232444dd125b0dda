#pragma once
// The candidate space fit, search and explain walk: the values each searched option takes, in the
// order they are tried. `fit` asks the coarse question at the given layout (no or full
// checkpointing, the optimizer offloaded or not); `search` walks the whole space (selective
// checkpointing and activation offload, parameter offload under sharding); `explain` takes, around
// one configuration, every value its framework runs (Megatron-LM's optimizer offload too). A pinned
// option takes its one value.

#include <vector>

#include "trainplan/hardware/gpu.hpp"
#include "trainplan/planner/search_request.hpp"

namespace trainplan::planner {

enum class Breadth { fit, plan, explain };

// The strategies for `replicas` ranks holding the same weights, data- and context-parallel (plan:
// with one the variants coincide, so only the simplest is tried; fit does not know the layout
// yet and tries them all, and so does explain).
[[nodiscard]] std::vector<Strategy> strategies_for(const SearchRequest& req, const hardware::Cluster& c,
                                                   int replicas, Breadth b);
[[nodiscard]] std::vector<Checkpointing> checkpointings_for(const SearchRequest& req, Breadth b);
// An optimizer implementation that runs on the GPU rules out offloading it; the CPU one needs it.
[[nodiscard]] std::vector<Offload> offloads_for(const SearchRequest& req, Strategy s, Breadth b);

// What both searches refuse before searching: a precision or attention the GPU cannot run (they
// are never searched).
// Whether every option `t` changes from req.base (strategy, checkpointing, offload) takes a value of
// the space at this breadth; what req.base already has stands (explain prices no change outside the
// space, and never refuses the configuration as given).
[[nodiscard]] bool in_space(const SearchRequest& req, const model::Training& t, const hardware::Cluster& c,
                            Breadth b);

void check_searchable(const hardware::Cluster& c, const SearchRequest& req);

}  // namespace trainplan::planner
