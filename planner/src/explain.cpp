#include "trainplan/planner/explain.hpp"

#include <algorithm>
#include <functional>
#include <optional>
#include <set>
#include <utility>

#include "trainplan/core/error.hpp"

namespace trainplan::planner {
namespace {

// One way to change the configuration: the changed Training and what changed.
struct Candidate {
  model::Training training;
  std::vector<OptionChange> changes;
  int kind = 0;  // which family of change (never paired with itself)
};

enum Kind { kMicroBatch, kCheckpointing, kSharding, kOffload, kLoraRank, kQlora };

std::string str(std::int64_t v) { return std::to_string(v); }

// The divisors of n below n, largest first; found up to sqrt(n), so a micro-batch of 2^36 costs
// 2^18 steps, not 2^36.
std::vector<std::int64_t> proper_divisors_descending(std::int64_t n) {
  std::vector<std::int64_t> small;
  std::vector<std::int64_t> large;
  for (std::int64_t d = 1; d <= n / d; ++d) {
    if (n % d != 0) continue;
    small.push_back(d);
    if (d != n / d) large.push_back(n / d);
  }
  std::vector<std::int64_t> out;
  for (auto it = large.begin(); it != large.end(); ++it)
    if (*it != n) out.push_back(*it);
  for (auto it = small.rbegin(); it != small.rend(); ++it)
    if (*it != n) out.push_back(*it);
  return out;
}

// Smaller micro-batches that keep micro-batch x accumulation, i.e. the global batch.
void micro_batch_changes(const model::Training& t, std::vector<Candidate>& out) {
  for (const std::int64_t m : proper_divisors_descending(t.micro_batch)) {
    Candidate c{t, {}, kMicroBatch};
    c.training.micro_batch = m;
    c.training.grad_accum = t.grad_accum * (t.micro_batch / m);
    c.changes = {{"micro-batch", str(t.micro_batch), str(m)},
                 {"grad-accum", str(t.grad_accum), str(c.training.grad_accum)}};
    out.push_back(std::move(c));
  }
}

void checkpointing_changes(const model::Training& t, std::vector<Candidate>& out) {
  std::vector<Checkpointing> stronger;
  switch (t.checkpointing) {
    case Checkpointing::none:
      stronger = {Checkpointing::selective, Checkpointing::full, Checkpointing::full_offload};
      break;
    case Checkpointing::selective:
      stronger = {Checkpointing::full, Checkpointing::full_offload};
      break;
    case Checkpointing::full:
      stronger = {Checkpointing::full_offload};
      break;
    case Checkpointing::full_offload:
      break;
  }
  for (Checkpointing ck : stronger) {
    Candidate c{t, {}, kCheckpointing};
    c.training.checkpointing = ck;
    c.changes = {
        {"checkpointing", std::string(to_string(t.checkpointing)), std::string(to_string(ck))}};
    out.push_back(std::move(c));
  }
}

// Sharding the framework offers beyond the given strategy: ZeRO stages under DeepSpeed, FSDP under
// PyTorch, the distributed optimizer (zero1) under Megatron-LM. Needs more than one data-parallel
// rank to change anything.
void sharding_changes(const model::Training& t, const hardware::Cluster& cl,
                      std::vector<Candidate>& out) {
  if (cl.world() / (static_cast<std::int64_t>(t.tp) * t.pp) < 2) return;
  std::vector<Strategy> options;
  switch (t.framework) {
    case Framework::deepspeed:
      options = {Strategy::zero1, Strategy::zero2, Strategy::zero3};
      break;
    case Framework::pytorch:
      options = {Strategy::fsdp_grad_op, Strategy::fsdp_hybrid, Strategy::fsdp_full};
      break;
    case Framework::megatron:
      options = {Strategy::zero1};
      break;
  }
  const auto rank = [](Strategy s) {
    return (shards_optimizer(s) ? 1 : 0) + (shards_gradients(s) ? 1 : 0) +
           (shards_parameters(s) ? 1 : 0);
  };
  for (Strategy s : options) {
    if (s == t.strategy || rank(s) < rank(t.strategy)) continue;
    Candidate c{t, {}, kSharding};
    c.training.strategy = s;
    c.changes = {{"strategy", std::string(to_string(t.strategy)), std::string(to_string(s))}};
    out.push_back(std::move(c));
  }
}

void offload_changes(const model::Training& t, std::vector<Candidate>& out) {
  std::vector<Offload> more;
  switch (t.offload) {
    case Offload::none:
      more = {Offload::optimizer, Offload::optimizer_params};
      break;
    case Offload::optimizer:
      more = {Offload::optimizer_params};
      break;
    case Offload::optimizer_params:
      break;
  }
  for (Offload o : more) {
    Candidate c{t, {}, kOffload};
    c.training.offload = o;
    c.changes = {{"offload", std::string(to_string(t.offload)), std::string(to_string(o))}};
    out.push_back(std::move(c));
  }
}

void adapter_changes(const model::Training& t, std::vector<Candidate>& out) {
  if (t.method == Method::full) return;
  for (std::int64_t r = t.lora.rank / 2; r >= 1; r /= 2) {
    Candidate c{t, {}, kLoraRank};
    c.training.lora.rank = r;
    c.changes = {{"lora-rank", str(t.lora.rank), str(r)}};
    out.push_back(std::move(c));
  }
  // QLoRA computes in 16 bits: only from a 16-bit (or mixed) LoRA.
  if (t.method == Method::lora && t.precision != Precision::fp32) {
    Candidate c{t, {}, kQlora};
    c.training.method = Method::qlora;
    c.training.quant = Quant::nf4;
    c.changes = {{"method", "lora", "qlora"}, {"quant", "", "nf4"}};
    out.push_back(std::move(c));
  }
}

std::vector<Candidate> single_changes(const model::Training& t, const hardware::Cluster& c) {
  std::vector<Candidate> out;
  micro_batch_changes(t, out);
  checkpointing_changes(t, out);
  sharding_changes(t, c, out);
  offload_changes(t, out);
  adapter_changes(t, out);
  return out;
}

// Applies b's change on top of a's configuration (they are of different kinds, so they touch
// different fields).
Candidate combine(const Candidate& a, const Candidate& b) {
  Candidate c = a;
  c.kind = -1;
  model::Training& t = c.training;
  const model::Training& u = b.training;
  switch (b.kind) {
    case kMicroBatch:
      t.micro_batch = u.micro_batch;
      t.grad_accum = u.grad_accum;
      break;
    case kCheckpointing:
      t.checkpointing = u.checkpointing;
      break;
    case kSharding:
      t.strategy = u.strategy;
      break;
    case kOffload:
      t.offload = u.offload;
      break;
    case kLoraRank:
      t.lora.rank = u.lora.rank;
      break;
    case kQlora:
      t.method = u.method;
      t.quant = u.quant;
      break;
    default:
      break;
  }
  c.changes.insert(c.changes.end(), b.changes.begin(), b.changes.end());
  return c;
}

}  // namespace

Explanation suggest_changes(const model::Architecture& a, const model::ParameterCounts& n,
                            const model::Training& t, const hardware::Cluster& c,
                            const hardware::HardwareProfile* profile, const MemoryConventions& mc) {
  Explanation out;
  out.given = evaluate(a, n, t, c, profile, mc);
  if (out.given.fits) return out;
  const double base = out.given.throughput.tokens_per_s;
  const auto price = [&](const Candidate& cand) -> std::optional<Suggestion> {
    try {
      Estimate e = evaluate(a, n, cand.training, c, profile, mc);
      if (!e.fits) return std::nullopt;
      const double kept = base > 0 ? e.throughput.tokens_per_s / base : 0.0;
      return Suggestion{cand.changes, std::move(e), kept};
    } catch (const InputError&) {
      return std::nullopt;  // a combination the layout refuses (offload under TP, ...)
    }
  };
  // Micro-batch and LoRA rank are listed from the smallest change on: only the first that fits
  // counts, alone or in a pair, and a tight one before it (the peak fits, the allocator's expected
  // cache may not) is listed too.
  const auto key = [](const std::vector<Candidate>& v, std::size_t i) {
    const int k = v[i].kind;
    return k == kMicroBatch || k == kLoraRank ? -1 - k : static_cast<int>(i);
  };
  const std::vector<Candidate> singles = single_changes(t, c);
  std::set<std::pair<int, int>> done;
  for (std::size_t i = 0; i < singles.size(); ++i) {
    if (done.contains({key(singles, i), 0})) continue;
    if (auto s = price(singles[i])) {
      if (s->estimate.verdict.verdict == Verdict::fits) done.insert({key(singles, i), 0});
      out.suggestions.push_back(std::move(*s));
    }
  }
  // Pairs of changes neither of which fits alone: all of them when no single change fits, else
  // those faster than every single change (a smaller micro-batch with QLoRA can beat offloading).
  double fastest_single = 0.0;
  for (const Suggestion& s : out.suggestions)
    fastest_single = std::max(fastest_single, s.estimate.throughput.tokens_per_s);
  out.pairs = out.suggestions.empty();
  for (std::size_t i = 0; i < singles.size(); ++i) {
    for (std::size_t j = i + 1; j < singles.size(); ++j) {
      const std::pair<int, int> k{key(singles, i), key(singles, j)};
      if (singles[i].kind == singles[j].kind || done.contains(k)) continue;
      if (done.contains({key(singles, i), 0}) || done.contains({key(singles, j), 0})) continue;
      if (auto s = price(combine(singles[i], singles[j]))) {
        if (s->estimate.verdict.verdict == Verdict::fits) done.insert(k);
        s->pair = true;
        if (out.pairs || s->estimate.throughput.tokens_per_s > fastest_single) out.suggestions.push_back(std::move(*s));
      }
    }
  }
  std::stable_sort(out.suggestions.begin(), out.suggestions.end(),
                   [](const Suggestion& x, const Suggestion& y) {
                     return x.estimate.throughput.tokens_per_s > y.estimate.throughput.tokens_per_s;
                   });
  return out;
}

}  // namespace trainplan::planner
