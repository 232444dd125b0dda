#include "trainplan/reports/verdict.hpp"

#include <fmt/format.h>

#include "trainplan/reports/text.hpp"

namespace trainplan::reports {

VerdictLook verdict_look(planner::Verdict v) {
  switch (v) {
    case planner::Verdict::fits: return {"fits", "Fits", 0x2e9e48};
    case planner::Verdict::tight: return {"tight", "Tight", 0xc88a1e};
    case planner::Verdict::no: return {"does not fit", "Does not fit", 0xd64541};
  }
  return {"does not fit", "Does not fit", 0xd64541};
}

namespace {

// The micro-batch clause: the largest that fits when it is the answer, else the one given and
// whether a smaller one fits with room.
std::string micro_batch_clause(const VerdictFacts& f) {
  const std::int64_t n = f.max_micro_batch;
  switch (f.verdict.verdict) {
    case planner::Verdict::fits:
      return f.micro_batch ? fmt::format("micro-batch {} (up to {})", *f.micro_batch, n)
                           : fmt::format("micro-batch up to {}", n);
    case planner::Verdict::tight:
      if (n > 0) return fmt::format("micro-batch {} fits with room", n);
      return f.micro_batch ? fmt::format("micro-batch {}", *f.micro_batch) : std::string();
    case planner::Verdict::no:
      return n > 0 ? fmt::format("micro-batch {} would fit", n) : std::string();
  }
  return {};
}

}  // namespace

VerdictSentence verdict_sentence(const VerdictSubject& s, const VerdictFacts& f) {
  const planner::Verdict v = f.verdict.verdict;
  VerdictSentence out{v, std::string(verdict_look(v).headline), {}};
  const std::string why =
      v == planner::Verdict::fits
          ? fmt::format("{} of {} GiB usable per GPU, {} GiB headroom", gib_text(f.device_total),
                        gib_text(f.usable), gib_text(f.usable - f.device_total))
          : f.verdict.reason;
  out.rest = fmt::format("{} on {} with {}: {}", s.what, s.where, s.plan, why);
  if (const std::string mb = micro_batch_clause(f); !mb.empty()) out.rest += "; " + mb;
  if (f.tokens_per_s > 0)
    out.rest += fmt::format(" (~{} tokens/s estimated)", count_text(whole(f.tokens_per_s)));
  return out;
}

}  // namespace trainplan::reports
