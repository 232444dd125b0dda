#include "trainplan/planner/fit.hpp"

#include <algorithm>

#include "candidate_space.hpp"
#include "fewest_blocks.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/planner/estimate.hpp"

namespace trainplan::planner {

namespace {

void add_candidate(const model::Architecture& a, const model::ParameterCounts& n, const model::Training& tr,
                   const Layout& l, const hardware::Cluster& c, const MemoryConventions& mc, const SearchRequest& req,
                   FitResult& out) {
  Candidate cand{tr, l, memory(a, n, tr, l, mc), {}, false, 0};
  cand.verdict = judge(cand.memory, c, req.margin, mc);
  cand.fits = cand.verdict.verdict != Verdict::no;
  cand.max_micro_batch = max_micro_batch(a, n, tr, l, c, mc, 4096, req.margin);
  // Where every block checkpointed fits and the library can checkpoint fewer, the fewest blocks
  // that fit at the micro-batch asked about (1 unless given) are a candidate too, ahead of it
  // (lighter checkpointing first): less replayed, a smaller largest micro-batch.
  if (cand.fits && !req.checkpointing && can_checkpoint_fewer(a, tr)) {
    const std::optional<model::Training> fewest = fewest_checkpointed_blocks(a, tr, [&](const model::Training& t) {
      return verdict_of(memory(a, n, t, l, mc), c, req.margin, mc) == Verdict::fits;
    });
    if (fewest) add_candidate(a, n, *fewest, l, c, mc, req, out);
  }
  out.candidates.push_back(std::move(cand));
}

}  // namespace

FitResult fit(const model::Architecture& a, const model::ParameterCounts& n, const SearchRequest& req,
              const hardware::Cluster& c, const MemoryConventions& mc,
              const hardware::HardwareProfile* profile) {
  {  // bad values are errors, not empty searches (the offload is searched unless given)
    check_searchable(c, req);
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
  const bool all_pinned = req.strategy && req.checkpointing && req.offload;
  for (Strategy s : strategies_for(req, c, 0, Breadth::fit)) {
    for (Checkpointing ck : checkpointings_for(req, Breadth::fit)) {
      for (Offload off : offloads_for(req, s, Breadth::fit)) {
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
          add_candidate(a, n, tr, l, c, mc, req, out);
        }
      }
    }
  }
  // Recommend the fastest plan that fits with the margin: each candidate's estimated throughput at
  // the largest micro-batch it allows (or the pinned one); when none does, the fastest tight one.
  // Plans within kTieShare of the fastest are a tie, below what the time model resolves: the first
  // of them in the enumeration's order (no offload before offload, lighter checkpointing first)
  // is recommended, so that an offload that changes nothing is never the advice.
  for (std::size_t i = 0; i < out.candidates.size(); ++i) {
    Candidate& k = out.candidates[i];
    if (!k.fits) continue;
    model::Training at = k.training;
    if (!req.micro_batch && k.max_micro_batch > 0) at.micro_batch = k.max_micro_batch;
    k.tokens_per_s = evaluate(a, n, at, c, profile, mc).throughput.tokens_per_s;
  }
  constexpr double kTieShare = 0.01;
  for (Verdict wanted : {Verdict::fits, Verdict::tight}) {
    double fastest = -1.0;
    for (const Candidate& k : out.candidates)
      if (k.verdict.verdict == wanted) fastest = std::max(fastest, k.tokens_per_s);
    for (std::size_t i = 0; i < out.candidates.size() && !out.recommended; ++i) {
      const Candidate& k = out.candidates[i];
      if (k.verdict.verdict == wanted && k.tokens_per_s >= (1.0 - kTieShare) * fastest) out.recommended = i;
    }
    if (out.recommended) break;
  }
  if (!out.recommended && !out.candidates.empty()) {
    double least = out.candidates.front().memory.device_total.value();
    for (const Candidate& k : out.candidates) least = std::min(least, k.memory.device_total.value());
    for (std::size_t i = 0; i < out.candidates.size() && !out.leanest; ++i)
      if (out.candidates[i].memory.device_total.value() <= (1.0 + kTieShare) * least) out.leanest = i;
  }
  return out;
}

}  // namespace trainplan::planner
