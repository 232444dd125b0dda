#include "trainplan/planner/estimate.hpp"

#include "trainplan/planner/evaluator.hpp"

namespace trainplan::planner {

Estimate evaluate(const model::Architecture& a, const model::ParameterCounts& n,
                  const model::Training& tr, const hardware::Cluster& c,
                  const hardware::HardwareProfile* profile, const MemoryConventions& mc) {
  const Evaluator ev(a, n, c, profile, mc);
  return ev.estimate(tr);
}

}  // namespace trainplan::planner
