#include "trainplan/planner/fit.hpp"

#include "trainplan/core/error.hpp"
#include "trainplan/planner/estimate.hpp"

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
    case Framework::megatron: return {Strategy::ddp, Strategy::zero1};
  }
  return {Strategy::single};
}

std::int64_t max_micro_batch(const model::Architecture& a, const model::ParameterCounts& n,
                             model::Training tr, const Layout& l, const hardware::Cluster& c,
                             const MemoryConventions& mc, std::int64_t limit, double margin) {
  auto ok = [&](std::int64_t b) {
    tr.micro_batch = b;
    return verdict_of(memory(a, n, tr, l, mc), c, margin, mc) == Verdict::fits;
  };
  if (!ok(1)) return 0;
  // Memory grows with the micro-batch: double until it no longer fits, then bisect.
  std::int64_t lo = 1;
  std::int64_t hi = 2;
  while (hi <= limit && ok(hi)) {
    lo = hi;
    hi *= 2;
  }
  if (hi > limit) return lo;
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    (ok(mid) ? lo : hi) = mid;
  }
  return lo;
}

FitResult fit(const model::Architecture& a, const model::ParameterCounts& n, const FitRequest& req,
              const hardware::Cluster& c, const MemoryConventions& mc,
              const hardware::HardwareProfile* profile) {
  {  // bad values are errors, not empty searches (the offload is searched unless given)
    // Precision and attention are never searched: the GPU must run the ones asked for.
    hardware::require_supported(c.gpu, req.base.precision, req.base.attention);
    model::Training probe = req.base;
    if (!req.offload && probe.optimizer_impl == OptimizerImpl::deepspeed_cpu)
      probe.offload = Offload::optimizer;
    validate_training(a, probe);
    if (!(req.margin >= 0.0 && req.margin < 1.0))
      throw FieldError("{margin} must be a fraction from 0 to below 1 of the usable GPU memory (got " +
                       std::to_string(req.margin) + ")");
  }
  FitResult out;
  out.usable = c.gpu.usable_memory;
  const std::vector<Strategy> strategies =
      req.strategy ? std::vector<Strategy>{*req.strategy} : candidate_strategies(req.base.framework, c);
  const std::vector<Checkpointing> ckpts =
      req.checkpointing ? std::vector<Checkpointing>{*req.checkpointing}
                        : std::vector<Checkpointing>{Checkpointing::none, Checkpointing::full};
  std::vector<Offload> offloads = req.offload ? std::vector<Offload>{*req.offload}
                                              : std::vector<Offload>{Offload::none, Offload::optimizer};
  if (!req.offload)
    std::erase_if(offloads,
                  [&](Offload x) { return !optimizer_impl_allows(req.base.optimizer_impl, x); });
  const bool all_pinned = req.strategy && req.checkpointing && req.offload;
  for (Strategy s : strategies) {
    for (Checkpointing ck : ckpts) {
      for (Offload off : offloads) {
        model::Training tr = req.base;
        tr.strategy = s;
        tr.checkpointing = ck;
        tr.offload = off;
        Layout l;
        try {
          l = make_layout(a, tr, c);
        } catch (const InputError&) {
          if (all_pinned || req.strategy) throw;  // the user's own choice is impossible: say why
          continue;
        }
        std::vector<int> eps{tr.ep};
        if (const int widest = expert_parallel_degrees(a, l.shard).back();
            !req.expert_parallel && widest > 1)
          eps.push_back(widest);
        for (int ep : eps) {
          tr.ep = ep;
          l = make_layout(a, tr, c);
          Candidate cand{tr, l, memory(a, n, tr, l, mc), {}, false, 0};
          cand.verdict = judge(cand.memory, c, req.margin, mc);
          cand.fits = cand.verdict.verdict != Verdict::no;
          cand.max_micro_batch = max_micro_batch(a, n, tr, l, c, mc, 4096, req.margin);
          out.candidates.push_back(std::move(cand));
        }
      }
    }
  }
  // Recommend the fastest plan that fits with the margin: each candidate's estimated throughput at
  // the largest micro-batch it allows (or the pinned one); when none does, the fastest tight one.
  for (std::size_t i = 0; i < out.candidates.size(); ++i) {
    Candidate& k = out.candidates[i];
    if (!k.fits) continue;
    model::Training at = k.training;
    if (!req.micro_batch_pinned && k.max_micro_batch > 0) at.micro_batch = k.max_micro_batch;
    k.tokens_per_s = evaluate(a, n, at, c, profile, mc).throughput.tokens_per_s;
  }
  for (Verdict wanted : {Verdict::fits, Verdict::tight}) {
    for (std::size_t i = 0; i < out.candidates.size(); ++i) {
      const Candidate& k = out.candidates[i];
      if (k.verdict.verdict != wanted) continue;
      if (!out.recommended || k.tokens_per_s > out.candidates[*out.recommended].tokens_per_s) out.recommended = i;
    }
    if (out.recommended) break;
  }
  return out;
}

}  // namespace trainplan::planner
