#include "candidate_space.hpp"

#include <algorithm>

namespace trainplan::planner {

std::vector<int> expert_parallel_degrees(const model::Architecture& a, int ranks) {
  std::vector<int> out;
  for (int e = 1; e <= ranks; ++e)
    if (ranks % e == 0 && a.experts % e == 0) out.push_back(e);
  return out;
}

std::vector<Strategy> candidate_strategies(Framework f, const hardware::Cluster& c) {
  if (c.world() == 1) return {Strategy::single};
  switch (f) {
    case Framework::pytorch:
      if (c.nodes > 1)
        return {Strategy::ddp, Strategy::fsdp_grad_op, Strategy::fsdp_hybrid, Strategy::fsdp_full};
      return {Strategy::ddp, Strategy::fsdp_grad_op, Strategy::fsdp_full};
    case Framework::deepspeed: return {Strategy::zero1, Strategy::zero2, Strategy::zero3};
    // Megatron-LM: DDP, the distributed optimizer and Megatron FSDP's default sharding
    // (optim_grads_params, zero3).
    case Framework::megatron: return {Strategy::ddp, Strategy::zero1, Strategy::zero3};
  }
  return {Strategy::single};
}

std::vector<Strategy> strategies_for(const SearchRequest& req, const hardware::Cluster& c, int replicas,
                                     Breadth b) {
  if (req.strategy) return {*req.strategy};
  // DeepSpeed's bf16 master weights run with ZeRO only, on one GPU too.
  std::vector<Strategy> all = req.base.bf16_master ? std::vector{Strategy::zero1, Strategy::zero2, Strategy::zero3}
                                                   : candidate_strategies(req.base.framework, c);
  // GaLore projects whole gradients: one GPU or DDP (memory.cpp validate_training).
  if (req.base.optimizer == Optimizer::galore_adamw) all = {c.world() == 1 ? Strategy::single : Strategy::ddp};
  if (b == Breadth::plan && replicas == 1) return {all.front()};
  return all;
}

std::vector<Checkpointing> checkpointings_for(const SearchRequest& req, Breadth b) {
  if (req.checkpointing) return {*req.checkpointing};
  if (b == Breadth::fit) return {Checkpointing::none, Checkpointing::full};
  // From the least memory saved to the most (explain offers the values after the given one).
  std::vector<Checkpointing> out{Checkpointing::none, Checkpointing::selective};
  // torchtitan's own per-op policy (its train configs' default), where torchtitan runs the job.
  if (req.base.library == Library::torchtitan) out.push_back(Checkpointing::selective_op);
  out.push_back(Checkpointing::full);
  if (req.base.framework != Framework::megatron) out.push_back(Checkpointing::full_offload);
  return out;
}

std::vector<Offload> offloads_for(const SearchRequest& req, Strategy s, Breadth b) {
  if (req.offload) return {*req.offload};
  std::vector<Offload> out{Offload::none, Offload::optimizer};
  const bool megatron = req.base.framework == Framework::megatron;
  if (b == Breadth::plan && megatron) return {Offload::none};
  // Megatron-LM offloads the optimizer (HybridDeviceOptimizer), never the parameters.
  if (b != Breadth::fit && !megatron && shards_parameters(s)) out.push_back(Offload::optimizer_params);
  std::erase_if(out, [&](Offload x) { return !optimizer_impl_allows(req.base.optimizer_impl, x); });
  return out;
}

bool in_space(const SearchRequest& req, const model::Training& t, const hardware::Cluster& c, Breadth b) {
  const auto has = [](const auto& values, auto v) { return std::find(values.begin(), values.end(), v) != values.end(); };
  const model::Training& given = req.base;
  return (t.strategy == given.strategy || has(strategies_for(req, c, 0, b), t.strategy)) &&
         (t.checkpointing == given.checkpointing || has(checkpointings_for(req, b), t.checkpointing)) &&
         ((t.offload == given.offload && t.strategy == given.strategy) ||
          has(offloads_for(req, t.strategy, b), t.offload));
}

void check_searchable(const hardware::Cluster& c, const SearchRequest& req) {
  hardware::require_supported(c.gpu, req.base.precision, req.base.attention);
}

}  // namespace trainplan::planner
