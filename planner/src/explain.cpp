#include "trainplan/planner/explain.hpp"

#include <algorithm>
#include <functional>
#include <optional>
#include <set>
#include <utility>

#include "candidate_space.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/model/library.hpp"
#include "trainplan/model/partial.hpp"

namespace trainplan::planner {
namespace {

// One way to change the configuration: the changed Training and what changed.
struct Candidate {
  model::Training training;
  std::vector<OptionChange> changes;
  int kind = 0;  // which family of change (never paired with itself)
};

enum Kind {
  kMicroBatch,
  kCheckpointing,
  kSharding,
  kOffload,
  kLoraRank,
  kQlora,
  kReference,
  kLiger,
  kCompile,
  kChunkedLoss,
  kReshard,
  kSomeBlocks  // full checkpointing of some blocks only: the checkpointing's field too
};

// Changes of one field are never paired.
[[nodiscard]] int field_of(int kind) { return kind == kSomeBlocks ? kCheckpointing : kind; }

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

// The values after `given` in the space's list (stronger checkpointing, more offload: each list
// runs from the least memory saved to the most).
template <typename T>
std::vector<T> after(const std::vector<T>& values, T given) {
  const auto at = std::find(values.begin(), values.end(), given);
  return at == values.end() ? std::vector<T>{} : std::vector<T>(at + 1, values.end());
}

void checkpointing_changes(const SearchRequest& space, std::vector<Candidate>& out) {
  const model::Training& t = space.base;
  for (Checkpointing ck : after(checkpointings_for(space, Breadth::explain), t.checkpointing)) {
    Candidate c{t, {}, kCheckpointing};
    c.training.checkpointing = ck;
    c.changes = {
        {"checkpointing", std::string(to_string(t.checkpointing)), std::string(to_string(ck))}};
    out.push_back(std::move(c));
  }
}

// Full checkpointing of some blocks only, where the library has it: torchtitan's layer-selective
// checkpointing (one block in N) and Megatron-LM's block method (the first K of each pipeline
// chunk); from the fewest blocks checkpointed, so the first that fits is the fastest. Offered from
// checkpointing that replays no whole block.
void some_blocks_changes(const model::Architecture& a, const SearchRequest& space, std::vector<Candidate>& out) {
  const model::Training& t = space.base;
  const model::SomeBlocksOffer offer = model::some_blocks_offer(a, t);
  if (offer.kind == model::SomeBlocks::none || t.checkpointing == Checkpointing::full ||
      t.checkpointing == Checkpointing::full_offload)
    return;
  const bool megatron = offer.kind == model::SomeBlocks::first_layers;
  const std::int64_t per_chunk = offer.blocks;
  const std::string from(to_string(t.checkpointing));
  auto add = [&](std::int64_t k, std::int64_t every) {
    Candidate c{t, {}, kSomeBlocks};
    c.training.checkpointing = Checkpointing::full;
    c.training.checkpoint_layers = k;
    c.training.checkpoint_every = every;
    c.training.checkpoint_group = 1;
    c.changes = {{"checkpointing", from, "full"},
                 megatron ? OptionChange{"checkpoint-layers", "0", str(k)}
                          : OptionChange{"checkpoint-every", "1", str(every)}};
    out.push_back(std::move(c));
  };
  if (megatron) {
    for (std::int64_t k = 1; k < per_chunk; ++k) add(k, 1);
  } else {  // one block in N wraps floor(L / N) of a stage's L: each count once, the largest N
    std::int64_t wrapped = 0;
    for (std::int64_t every = per_chunk; every >= 2; --every)
      if (per_chunk / every != wrapped) {
        wrapped = per_chunk / every;
        add(0, every);
      }
  }
}

// Sharding the framework offers beyond the given strategy (the space's strategies: ZeRO stages
// under DeepSpeed, FSDP under PyTorch, the distributed optimizer under Megatron-LM). Needs more
// than one data-parallel rank to change anything.
void sharding_changes(const SearchRequest& space, const hardware::Cluster& cl, std::vector<Candidate>& out) {
  const model::Training& t = space.base;
  if (cl.world() / (static_cast<std::int64_t>(t.tp) * t.pp) < 2) return;
  const auto rank = [](Strategy s) {
    return (shards_optimizer(s) ? 1 : 0) + (shards_gradients(s) ? 1 : 0) +
           (shards_parameters(s) ? 1 : 0);
  };
  for (Strategy s : strategies_for(space, cl, 0, Breadth::explain)) {
    if (s == t.strategy || rank(s) < rank(t.strategy)) continue;
    Candidate c{t, {}, kSharding};
    c.training.strategy = s;
    c.changes = {{"strategy", std::string(to_string(t.strategy)), std::string(to_string(s))}};
    out.push_back(std::move(c));
  }
}

// More offload than given: what the space offers under the given strategy or any it may change to
// (parameter offload needs sharded parameters; a pair with a sharding change can reach it).
void offload_changes(const SearchRequest& space, const hardware::Cluster& cl, std::vector<Candidate>& out) {
  const model::Training& t = space.base;
  std::vector<Offload> all{t.offload};
  for (Strategy s : strategies_for(space, cl, 0, Breadth::explain))
    for (Offload o : offloads_for(space, s, Breadth::explain))
      if (std::find(all.begin(), all.end(), o) == all.end()) all.push_back(o);
  std::sort(all.begin(), all.end());
  for (Offload o : after(all, t.offload)) {
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

// DPO holding a reference model: its log-probabilities computed in a pass before training instead
// (TRL's precompute_ref_log_probs), which frees the reference's weights and its forward.
void reference_changes(const model::Training& t, std::vector<Candidate>& out) {
  if (!t.runs_reference()) return;
  Candidate c{t, {}, kReference};
  c.training.reference_precomputed = true;
  c.changes = {{"precomputed-reference", "false", "true"}};
  out.push_back(std::move(c));
}

// Liger's kernels where the library runs transformers' modeling files and Liger patches the model
// type: the fused loss never keeps the logits, the fused norms and SwiGLU keep less.
void liger_changes(const model::Architecture& a, const model::Training& t, std::vector<Candidate>& out) {
  if (t.liger || t.framework == Framework::megatron || !model::runs_transformers_models(t.library) ||
      !model::liger_kernels(a).supported)
    return;
  Candidate c{t, {}, kLiger};
  c.training.liger = true;
  c.changes = {{"liger", "false", "true"}};
  out.push_back(std::move(c));
}

// torch.compile where the engine is PyTorch's: the compiled loss keeps no log-softmax, the norms
// no fp32 copies, the linears one input copy.
void compile_changes(const model::Training& t, std::vector<Candidate>& out) {
  if (t.compile || t.framework == Framework::megatron) return;
  Candidate c{t, {}, kCompile};
  c.training.compile = true;
  c.changes = {{"compile", "false", "true"}};
  out.push_back(std::move(c));
}

// The library's chunked output loss where it has one and it is off (torchtune's
// CEWithChunkedOutputLoss): one chunk's fp32 upcast at a time instead of the whole logits'.
void chunked_loss_changes(const model::Training& t, std::vector<Candidate>& out) {
  if (t.chunked_loss || model::library_traits(t.library).output_chunks == 0) return;
  Candidate c{t, {}, kChunkedLoss};
  c.training.chunked_loss = true;
  c.changes = {{"chunked-loss", "off", "on"}};
  out.push_back(std::move(c));
}

// FSDP2's post-forward copies of reshard_after_forward=N freed: each unit resharded over the
// whole group after forward (N back to True), its backward gathering over that group again.
void reshard_changes(const model::Training& t, std::vector<Candidate>& out) {
  if (!t.reshards_to_group()) return;
  Candidate c{t, {}, kReshard};
  c.training.fsdp_reshard_to = 0;
  c.changes = {{"reshard-after-forward", str(t.fsdp_reshard_to), "0"}};
  out.push_back(std::move(c));
}

std::vector<Candidate> single_changes(const model::Architecture& a, const SearchRequest& space,
                                      const hardware::Cluster& c) {
  std::vector<Candidate> out;
  micro_batch_changes(space.base, out);
  some_blocks_changes(a, space, out);
  checkpointing_changes(space, out);
  sharding_changes(space, c, out);
  offload_changes(space, c, out);
  adapter_changes(space.base, out);
  reference_changes(space.base, out);
  liger_changes(a, space.base, out);
  compile_changes(space.base, out);
  chunked_loss_changes(space.base, out);
  reshard_changes(space.base, out);
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
    case kSomeBlocks:
      t.checkpointing = u.checkpointing;
      t.checkpoint_layers = u.checkpoint_layers;
      t.checkpoint_every = u.checkpoint_every;
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
    case kReference:
      t.reference_precomputed = u.reference_precomputed;
      break;
    case kLiger:
      t.liger = u.liger;
      break;
    case kCompile:
      t.compile = u.compile;
      break;
    case kChunkedLoss:
      t.chunked_loss = u.chunked_loss;
      break;
    case kReshard:
      t.fsdp_reshard_to = u.fsdp_reshard_to;
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
  // The space around the configuration as given: nothing pinned, every value its framework runs.
  SearchRequest space;
  space.base = t;
  const auto price = [&](const Candidate& cand) -> std::optional<Suggestion> {
    if (!in_space(space, cand.training, c, Breadth::explain)) return std::nullopt;
    try {
      Estimate e = evaluate(a, n, cand.training, c, profile, mc);
      if (!e.fits) return std::nullopt;
      const double kept = base > 0 ? e.throughput.tokens_per_s / base : 0.0;
      return Suggestion{cand.changes, std::move(e), kept};
    } catch (const InputError&) {
      return std::nullopt;  // a combination the layout refuses (offload under TP, ...)
    }
  };
  // Micro-batch, LoRA rank and the blocks checkpointed are listed from the smallest change on: only
  // the first that fits counts, alone or in a pair, and a tight one before it (the peak fits, the
  // allocator's expected cache may not) is listed too.
  const auto key = [](const std::vector<Candidate>& v, std::size_t i) {
    const int k = v[i].kind;
    return k == kMicroBatch || k == kLoraRank || k == kSomeBlocks ? -1 - k : static_cast<int>(i);
  };
  const std::vector<Candidate> singles = single_changes(a, space, c);
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
      if (field_of(singles[i].kind) == field_of(singles[j].kind) || done.contains(k)) continue;
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
