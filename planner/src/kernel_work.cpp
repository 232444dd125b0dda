#include "trainplan/planner/kernel_work.hpp"

namespace trainplan::planner {

KernelWork autocast_weight_cast(double params, const model::Training& tr, bool backward) {
  constexpr double kFp32 = 4.0;
  // FSDP gathers the weights in the compute dtype: autocast has nothing to cast.
  if (!is_mixed(tr.precision) || tr.computes_in_gathered_16bit()) return {};
  const bool full = tr.method == Method::full;
  if (!full && !tr.frozen_base_fp32) return {};
  if (backward && !full) return {};
  return {params * (kFp32 + compute_bytes(tr.precision)), 0.0};
}

}  // namespace trainplan::planner
