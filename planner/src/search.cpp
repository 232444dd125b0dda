#include "trainplan/planner/search.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

#include "candidate_space.hpp"
#include "fewest_blocks.hpp"
#include "trainplan/core/checked.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/model/partial.hpp"

namespace trainplan::planner {
namespace {

constexpr std::int64_t kMaxMicroBatch = 4096;
constexpr std::size_t kMaxSlowerRejections = 20;
constexpr std::size_t kMaxInfeasibleRejections = 20;
constexpr std::size_t kMaxInvalidRejections = 10;
constexpr std::array kVirtualStages{1, 2, 3, 4};
// Throughput differences below this are within any model's error: reported as "as fast".
constexpr double kAsFast = 0.005;

std::string tier_words(LinkTier t) {
  switch (t) {
    case LinkTier::nvlink:
      return "NVLink";
    case LinkTier::xgmi:
      return "xGMI";
    case LinkTier::pcie:
      return "PCIe";
    case LinkTier::network:
      return "inter-node";
  }
  return "?";
}

std::string kind_words(Transfer t) {
  switch (t) {
    case Transfer::all_reduce:
      return "all-reduce";
    case Transfer::all_gather:
      return "all-gather";
    case Transfer::reduce_scatter:
      return "reduce-scatter";
    case Transfer::all_to_all:
      return "all-to-all";
    case Transfer::send_recv:
      return "send/recv";
    case Transfer::device_to_host:
      return "device-to-host copy";
    case Transfer::host_to_device:
      return "host-to-device copy";
  }
  return "?";
}

std::string seconds_words(Seconds s) {
  const double v = s.value();
  if (v >= 1.0) return fmt::format("{:.1f} s", v);
  if (v >= 1e-3) return fmt::format("{:.0f} ms", v * 1e3);
  return fmt::format("{:.0f} us", v * 1e6);
}

std::vector<int> divisors(int n) {
  std::vector<int> d;
  for (int i = 1; i <= n; ++i)
    if (n % i == 0) d.push_back(i);
  return d;
}

struct Found {
  model::Training training;
  StepCost cost;
};

struct Infeasible {
  model::Training training;
  Layout layout;
  Bytes needed;       // per GPU
  Bytes host_needed;  // per node
};

// One way to cut the model over the ranks a replica spans: tensor, context and pipeline degrees.
struct ModelSplit {
  int tp = 1;
  int cp = 1;
  int pp = 1;
};
// Context parallelism searched down to this many tokens of a sequence per rank (model_splits).
constexpr std::int64_t kMinSearchedCpTokens = 4096;

struct PairResult {
  std::vector<Found> best;             // per group that fits
  std::vector<Infeasible> infeasible;  // per group that never fits (smallest micro-batch)
  std::vector<Rejection> invalid;
  std::int64_t evaluated = 0;
  std::int64_t fitting = 0;
};

// Better first: more tokens per second, then less memory.
bool faster(const Found& x, const Found& y) {
  if (x.cost.tokens_per_s != y.cost.tokens_per_s) return x.cost.tokens_per_s > y.cost.tokens_per_s;
  return x.cost.memory.device_total < y.cost.memory.device_total;
}

// (micro-batch, grad-accum) pairs for one data-parallel degree, smallest micro-batch first.
std::vector<std::pair<std::int64_t, std::int64_t>> batches_for(const SearchRequest& req, int dp) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  if (req.global_batch) {
    const std::int64_t per_replica = *req.global_batch / dp;
    for (std::int64_t b = 1; b <= std::min(per_replica, kMaxMicroBatch); ++b) {
      if (per_replica % b != 0) continue;
      if (req.micro_batch && b != *req.micro_batch) continue;
      const std::int64_t m = per_replica / b;
      if (req.grad_accum && m != *req.grad_accum) continue;
      if (req.base.optimizer_in_backward && m != 1) continue;  // gradients cannot accumulate
      out.emplace_back(b, m);
    }
    return out;
  }
  const std::int64_t m = req.grad_accum.value_or(1);
  if (req.micro_batch) return {{*req.micro_batch, m}};
  for (std::int64_t b = 1; b <= kMaxMicroBatch; b *= 2) out.emplace_back(b, m);
  return out;
}

// Why the global batch cannot be split over `dp` replicas of this (TP, PP) layout, if it cannot.
std::optional<Rejection> batch_split_rejection(const SearchRequest& req, int tp, int pp, int dp,
                                               bool no_batches) {
  const std::int64_t gb = req.global_batch.value_or(0);
  std::string why;
  if (req.global_batch && gb % dp != 0)
    why = fmt::format("global batch {} is not divisible by the data-parallel degree {}", gb, dp);
  else if (no_batches)
    why = fmt::format("global batch {} cannot be split into {} replicas of the pinned "
                      "micro-batch x grad-accum",
                      gb, dp);
  else
    return std::nullopt;
  return Rejection{fmt::format("TP {}, PP {}, DP {}", tp, pp, dp), why, RejectionCode::batch_split,
                   {{"global_batch", static_cast<double>(gb)}, {"data_parallel", static_cast<double>(dp)}}};
}

// The degrees searched inside one (TP, PP) layout: interleaving, sequence and expert parallelism.
struct InnerDegrees {
  std::vector<int> pp_virtual;
  std::vector<bool> sequence_parallel;
  std::vector<int> expert_parallel;
};

InnerDegrees inner_degrees(const model::Architecture& a, const SearchRequest& req, int tp, int pp, int dp) {
  InnerDegrees d;
  if (req.pp_virtual)
    d.pp_virtual = {*req.pp_virtual};
  else
    for (int v : kVirtualStages)
      if (v == 1 || (pp > 1 && a.total_layers() % (pp * v) == 0)) d.pp_virtual.push_back(v);
  if (req.sequence_parallel)
    d.sequence_parallel = {*req.sequence_parallel};
  else
    d.sequence_parallel = tp > 1 ? std::vector<bool>{false, true} : std::vector<bool>{false};
  d.expert_parallel =
      req.expert_parallel ? std::vector<int>{*req.expert_parallel} : expert_parallel_degrees(a, dp);
  return d;
}

// A plan that checkpoints every block where the library can checkpoint fewer: the fewest that
// still fit at its batch split (fewest_blocks.hpp) replace it where faster. Only where the request
// leaves checkpointing to the search.
void try_fewer_checkpointed_blocks(const Evaluator& ev, const SearchRequest& req, Found& best, PairResult& out) {
  if (req.checkpointing || !can_checkpoint_fewer(ev.architecture(), best.training)) return;
  std::optional<StepCost> last;
  const std::optional<model::Training> fewest =
      fewest_checkpointed_blocks(ev.architecture(), best.training, [&](const model::Training& t) {
        ++out.evaluated;
        try {
          StepCost c = ev.cost(t, false);
          if (!c.fits) return false;
          last = std::move(c);
          return true;
        } catch (const InputError&) {
          return false;
        }
      });
  if (!fewest) return;
  Found f{*fewest, std::move(*last)};
  if (faster(f, best)) best = std::move(f);
}

// One configuration but its batch split: the fastest (micro-batch, grad-accum) that fits goes to
// out.best; when none fits, the smallest micro-batch's needs go to out.infeasible.
void walk_micro_batches(const Evaluator& ev, const SearchRequest& req, model::Training tr,
                        const std::vector<std::pair<std::int64_t, std::int64_t>>& batches, PairResult& out) {
  const hardware::Cluster& c = ev.cluster();
  std::optional<Found> best;
  std::optional<Infeasible> leanest;
  for (const auto& [b, m] : batches) {
    // Interleaved 1F1B needs the micro-batches to fill every stage (Megatron asserts it).
    if (tr.pp_virtual > 1 && m % tr.pp != 0) continue;
    tr.micro_batch = b;
    tr.grad_accum = m;
    ++out.evaluated;
    StepCost cost;
    try {
      cost = ev.cost(tr, false);
    } catch (const InputError& e) {
      // A searched degree the strategy's shard group cannot split is not worth a line.
      if (!req.expert_parallel && tr.ep > 1) break;
      const int dp = c.world() / (tr.tp * tr.cp * tr.pp);
      const Layout l{.world = c.world(), .nodes = c.nodes, .gpus_per_node = c.gpus_per_node, .tp = tr.tp,
                     .pp = tr.pp, .dp = dp, .cp = tr.cp, .shard = dp * tr.cp,
                     .gpus_per_domain = c.gpus_per_domain()};
      out.invalid.push_back({plan_label(tr, l),
                             e.what(), RejectionCode::invalid, {}});
      break;
    }
    if (!cost.fits) {
      if (!best && !leanest) leanest = Infeasible{tr, cost.layout, cost.memory.device_total, cost.memory.host};
      break;  // memory grows with the micro-batch
    }
    ++out.fitting;
    Found f{tr, cost};
    if (!best || faster(f, *best)) best = f;
  }
  if (best) {
    try_fewer_checkpointed_blocks(ev, req, *best, out);
    out.best.push_back(std::move(*best));
  } else if (leanest)
    out.infeasible.push_back(std::move(*leanest));
}

PairResult explore(const Evaluator& ev, const SearchRequest& req, const ModelSplit& split,
                   const std::atomic<bool>& stop) {
  PairResult out;
  const hardware::Cluster& c = ev.cluster();
  const auto [tp, cp, pp] = split;
  const int dp = c.world() / (tp * cp * pp);
  const bool splits = !req.global_batch || *req.global_batch % dp == 0;
  const auto batches = splits ? batches_for(req, dp) : std::vector<std::pair<std::int64_t, std::int64_t>>{};
  if (auto why = batch_split_rejection(req, tp, pp, dp, batches.empty())) {
    out.invalid.push_back(std::move(*why));
    return out;
  }
  const InnerDegrees d = inner_degrees(ev.architecture(), req, tp, pp, dp * cp);
  const std::vector<Checkpointing> ckpts = checkpointings_for(req, Breadth::plan);
  for (Strategy s : strategies_for(req, c, dp * cp, Breadth::plan)) {
    if (stop.load(std::memory_order_relaxed)) break;
    for (int ep : d.expert_parallel)
      for (Offload off : offloads_for(req, s, Breadth::plan))
        for (int v : d.pp_virtual)
          for (bool sp : d.sequence_parallel)
            for (Checkpointing ck : ckpts) {
              model::Training tr = req.base;
              tr.strategy = s;
              tr.tp = tp;
              tr.cp = cp;
              tr.pp = pp;
              tr.pp_virtual = v;
              tr.sequence_parallel = sp;
              tr.checkpointing = ck;
              tr.offload = off;
              tr.ep = ep;
              walk_micro_batches(ev, req, tr, batches, out);
            }
  }
  return out;
}

}  // namespace

std::int64_t grad_accum_for(std::int64_t global_batch, std::int64_t micro_batch, int dp,
                            std::optional<std::int64_t> pinned_grad_accum) {
  if (global_batch < 1)
    throw FieldError(fmt::format("{{global-batch}} must be at least 1 (got {})", global_batch));
  std::int64_t per_step = 0;
  if (!product_within({micro_batch, dp}, global_batch, per_step))
    throw FieldError(fmt::format("{{global-batch}} {} is smaller than {{micro-batch}} {} x data-parallel degree {}",
                                 global_batch, micro_batch, dp));
  if (pinned_grad_accum) {
    std::int64_t total = 0;
    if (!product_within({per_step, *pinned_grad_accum}, global_batch, total) || total != global_batch)
      throw FieldError(fmt::format(
          "{{global-batch}} {} is not {{micro-batch}} {} x {{grad-accum}} {} x data-parallel "
          "degree {}",
          global_batch, micro_batch, *pinned_grad_accum, dp));
    return *pinned_grad_accum;
  }
  if (global_batch % per_step != 0)
    throw FieldError(fmt::format(
        "{{global-batch}} {} is not divisible by {{micro-batch}} {} x data-parallel degree {} "
        "= {}",
        global_batch, micro_batch, dp, per_step));
  return global_batch / per_step;
}

std::string plan_label(const model::Training& tr, const Layout& l) {
  std::string s = l.world == 1 ? "single GPU" : model::strategy_name(tr);
  const Placement dpg = data_parallel_group(l);
  if (l.dp > 1 && dpg.nodes > 1)
    s += fmt::format(" across {} {}", dpg.nodes,
                     l.gpus_per_domain > l.gpus_per_node ? "NVLink domains" : "nodes");
  if (l.tp > 1) s += fmt::format(", TP {}{}", l.tp, tr.sequence_parallel ? "+SP" : "");
  if (l.cp > 1) s += fmt::format(", CP {} ({})", l.cp, to_string(tr.cp_comm));
  if (l.pp > 1)
    s += tr.pp_virtual > 1 ? fmt::format(", PP {}x{}", l.pp, tr.pp_virtual)
                           : fmt::format(", PP {}", l.pp);
  if (l.ep > 1) s += fmt::format(", EP {}", l.ep);
  if (tr.checkpointing != Checkpointing::none)
    s += fmt::format(", {} checkpointing", model::checkpointing_text(tr));
  if (tr.offload != Offload::none) s += fmt::format(", {} offload", to_string(tr.offload));
  return s;
}

std::string why_slower(const StepCost& best, const StepCost& other) {
  if (!(other.tokens_per_s > 0.0) || !(best.tokens_per_s > 0.0)) return "not priced";
  const double slower = best.tokens_per_s / other.tokens_per_s - 1.0;
  if (slower < kAsFast) return "as fast (within 0.5 %)";
  // Parts of the other's step beyond what the best needs for as many tokens.
  const double scale =
      (other.tokens_per_s * other.time.step.value()) / (best.tokens_per_s * best.time.step.value());
  const TimeBreakdown& o = other.time;
  const TimeBreakdown& b = best.time;
  enum class Part { compute, memory_bound, host, recompute, communication, bubble, optimizer, offload };
  struct Delta {
    Seconds delta;
    Part part;
  };
  const std::array<Delta, 8> deltas{
      Delta{o.compute + o.reference - (b.compute + b.reference) * scale, Part::compute},
      Delta{o.memory_bound - b.memory_bound * scale, Part::memory_bound},
      Delta{o.host - b.host * scale, Part::host},
      Delta{o.recompute - b.recompute * scale, Part::recompute},
      Delta{o.communication_exposed + o.overlap_slowdown - (b.communication_exposed + b.overlap_slowdown) * scale,
            Part::communication},
      Delta{o.bubble - b.bubble * scale, Part::bubble},
      Delta{o.optimizer - b.optimizer * scale, Part::optimizer},
      Delta{o.offload - b.offload * scale, Part::offload}};
  const Delta worst =
      *std::max_element(deltas.begin(), deltas.end(),
                        [](const Delta& x, const Delta& y) { return x.delta < y.delta; });
  std::string what;
  switch (worst.part) {
    case Part::compute:
      what = "more compute on the slowest GPU (uneven stages, smaller or split GEMMs)";
      break;
    case Part::memory_bound:
      what = "memory-bound kernels (elementwise, casts, copies)";
      break;
    case Part::host:
      what = "exposed host work (kernel launches)";
      break;
    case Part::recompute:
      what = "activation recomputation";
      break;
    case Part::communication: {
      // Waited for, or hidden but slowing the compute beside it: whichever grew more.
      const bool slowed = o.overlap_slowdown - b.overlap_slowdown * scale >
                          o.communication_exposed - b.communication_exposed * scale;
      auto weight = [&](const CommTerm& t) { return slowed ? t.time - t.exposed : t.exposed; };
      const CommTerm* top = nullptr;
      for (std::size_t i = 0; i < other.comm_count; ++i)
        if (top == nullptr || weight(other.comm[i]) > weight(*top)) top = &other.comm[i];
      const char* how = slowed ? "compute slowed beside hidden" : "exposed";
      what = top == nullptr ? fmt::format("{} communication", how)
                            : fmt::format("{} {} {} ({})", how, tier_words(top->tier),
                                          kind_words(top->kind), to_string(top->purpose));
      break;
    }
    case Part::bubble:
      what = "pipeline bubble";
      break;
    case Part::optimizer:
      what = "optimizer step";
      break;
    case Part::offload:
      what = "exposed PCIe offload transfers";
      break;
  }
  return fmt::format("{:.0f} % slower, {}/step of {}", 100.0 * slower,
                     seconds_words(std::max(worst.delta, Seconds(0.0))), what);
}

namespace {

// Requests no layout can honour are the user's error: say why before searching.
void check_plan_request(const model::Architecture& a, const hardware::Cluster& c,
                        const SearchRequest& req) {
  if (req.global_batch && *req.global_batch < 1)
    throw FieldError("{global-batch} must be at least 1 (got " + std::to_string(*req.global_batch) +
                     ")");
  if (req.top < 1) throw FieldError("{top} must be at least 1");
  check_searchable(c, req);
  // A pinned degree that no layout can honour is the user's error: say why.
  if (req.expert_parallel) {
    model::Training probe = req.base;
    probe.ep = *req.expert_parallel;
    validate_training(a, probe);
  }
  if (req.tp || req.cp || req.pp || req.pp_virtual) {
    model::Training probe = req.base;
    probe.tp = req.tp.value_or(1);
    probe.cp = req.cp.value_or(1);
    probe.pp = req.pp.value_or(1);
    probe.pp_virtual = req.pp_virtual.value_or(1);
    probe.strategy = req.strategy.value_or(c.world() == 1 ? Strategy::single : Strategy::ddp);
    if (probe.strategy == Strategy::single && c.world() > 1) probe.strategy = Strategy::ddp;
    if (req.base.framework == Framework::deepspeed && !req.strategy)
      probe.strategy = Strategy::zero1;
    (void)make_layout(a, probe, c);
    if (req.tp && req.pp && req.micro_batch && req.global_batch) {
      const int dp = c.world() / (probe.tp * probe.cp * probe.pp);
      std::int64_t per_step = 0;
      if (!product_within({*req.micro_batch, dp}, *req.global_batch, per_step) || *req.global_batch % per_step != 0)
        throw FieldError(
            fmt::format("{{global-batch}} {} is not divisible by {{micro-batch}} {} x data-parallel "
                        "degree {}",
                        *req.global_batch, *req.micro_batch, dp));
    }
  }
}

// The outer loop's (TP, CP, PP) splits: divisors of the world the request and the model allow.
// Context parallelism is searched where each rank keeps at least kMinSearchedCpTokens tokens of a
// sequence (below that the K/V exchange outlasts the attention blocks that hide it: Ring Attention's
// block-size condition, Liu et al. 2023, Sec. 3); --cp asks for any degree.
std::vector<ModelSplit> model_splits(const model::Architecture& a, const hardware::Cluster& c,
                                     const SearchRequest& req) {
  std::vector<ModelSplit> splits;
  const int world = c.world();
  const model::Training& t = req.base;
  for (int tp : divisors(world)) {
    if (req.tp && tp != *req.tp) continue;
    if (a.heads % tp != 0) continue;
    if (!req.tp && !req.tp_across_nodes && tp > c.gpus_per_domain()) continue;
    for (int cp : divisors(world / tp)) {
      if (req.cp ? cp != *req.cp : cp > 1 && t.seq / cp < kMinSearchedCpTokens) continue;
      model::Training probe = t;
      probe.tp = tp;
      probe.cp = cp;
      if (!req.cp && context_parallel_problem(a, probe)) continue;
      for (int pp : divisors(world / (tp * cp))) {
        if (req.pp && pp != *req.pp) continue;
        if (pp > a.total_layers()) continue;
        splits.push_back({tp, cp, pp});
      }
    }
  }
  return splits;
}

// Explores every pair on up to req.threads threads, each with its own copy of the evaluator;
// sets `cancelled` when the progress callback asked to stop.
std::vector<PairResult> explore_pairs(const Evaluator& prototype, const SearchRequest& req,
                                      const std::vector<ModelSplit>& pairs, bool& cancelled) {
  unsigned threads =
      req.threads == 0 ? std::max(1u, std::thread::hardware_concurrency()) : req.threads;
  threads = std::max(
      1u,
      std::min<unsigned>(threads, static_cast<unsigned>(std::max<std::size_t>(1, pairs.size()))));
  std::vector<PairResult> results(pairs.size());
  std::atomic<bool> stop{false};
  std::mutex report;
  std::size_t done = 0;
  auto work = [&](unsigned k) {
    const Evaluator ev = prototype;  // its own shape cache
    for (std::size_t i = k; i < pairs.size(); i += threads) {
      if (stop.load()) break;
      results[i] = explore(ev, req, pairs[i], stop);
      if (req.progress) {
        const std::lock_guard<std::mutex> lock(report);
        if (!stop.load() && !req.progress(++done, pairs.size())) stop.store(true);
      }
    }
  };
  std::vector<std::future<void>> futures;
  for (unsigned k = 1; k < threads; ++k) futures.push_back(std::async(std::launch::async, work, k));
  work(0);
  for (auto& f : futures) f.get();
  cancelled = stop.load();
  return results;
}

using Coarse = std::tuple<Strategy, int, int, int, int>;

Coarse coarse(const model::Training& t) { return Coarse{t.strategy, t.tp, t.cp, t.pp, t.ep}; }

// Runners-up: the best of each (strategy, TP, PP) shape not already shown.
void add_slower_rejections(PlanResult& out, const std::vector<Found>& found, std::size_t k,
                           std::set<Coarse>& shown) {
  for (std::size_t i = 0; i < k; ++i) shown.insert(coarse(found[i].training));
  std::size_t slower = 0;
  for (std::size_t i = k; i < found.size() && slower < kMaxSlowerRejections; ++i) {
    if (!shown.insert(coarse(found[i].training)).second) continue;
    ++slower;
    out.rejected.push_back({plan_label(found[i].training, found[i].cost.layout) +
                                fmt::format(", micro-batch {} x {}", found[i].training.micro_batch,
                                            found[i].training.grad_accum),
                            why_slower(found[0].cost, found[i].cost), RejectionCode::slower,
                            {{"tokens_per_s", found[i].cost.tokens_per_s},
                             {"best_tokens_per_s", found[0].cost.tokens_per_s},
                             {"step_s", found[i].cost.time.step.value()}}});
  }
}

// The shapes where nothing fits, leanest first, with what they would need.
void add_unfit_rejections(PlanResult& out, std::vector<Infeasible>& infeasible,
                          const std::vector<Found>& found, const hardware::Cluster& c,
                          std::set<Coarse>& shown) {
  std::stable_sort(infeasible.begin(), infeasible.end(),
                   [](const Infeasible& x, const Infeasible& y) { return x.needed < y.needed; });
  for (const Found& f : found) shown.insert(coarse(f.training));  // shapes that fit somehow
  std::size_t unfit = 0;
  for (std::size_t i = 0; i < infeasible.size() && unfit < kMaxInfeasibleRejections; ++i) {
    if (!shown.insert(coarse(infeasible[i].training)).second) continue;
    ++unfit;
    const Infeasible& x = infeasible[i];
    const bool gpu_fits = x.needed <= c.gpu.usable_memory;
    out.rejected.push_back(
        {plan_label(x.training, x.layout),
         gpu_fits ? fmt::format("does not fit: needs {:.1f} GiB of host memory per node at "
                                "micro-batch {} of {:.1f} GiB",
                                to_gib(x.host_needed), x.training.micro_batch, to_gib(c.host_memory))
                  : fmt::format("does not fit: needs {:.1f} GiB per GPU at micro-batch {} of {:.1f} "
                                "GiB usable",
                                to_gib(x.needed), x.training.micro_batch,
                                to_gib(c.gpu.usable_memory)),
         gpu_fits ? RejectionCode::host_memory : RejectionCode::gpu_memory,
         gpu_fits ? std::vector<std::pair<std::string, double>>{
                        {"needed_bytes", x.host_needed.value()},
                        {"available_bytes", c.host_memory.value()},
                        {"micro_batch", static_cast<double>(x.training.micro_batch)}}
                  : std::vector<std::pair<std::string, double>>{
                        {"needed_bytes", x.needed.value()},
                        {"available_bytes", c.gpu.usable_memory.value()},
                        {"micro_batch", static_cast<double>(x.training.micro_batch)}}});
  }
}

}  // namespace

PlanResult search(const model::Architecture& a, const model::ParameterCounts& n,
                  const hardware::Cluster& c, const SearchRequest& req,
                  const hardware::HardwareProfile* profile, const MemoryConventions& mc,
                  const TimeConventions& tc) {
  check_plan_request(a, c, req);
  const std::vector<ModelSplit> pairs = model_splits(a, c, req);
  const Evaluator prototype(a, n, c, profile, mc, tc, req.options);
  bool cancelled = false;
  std::vector<PairResult> results = explore_pairs(prototype, req, pairs, cancelled);

  // Merge in pair order: the result does not depend on the number of threads.
  PlanResult out;
  out.cancelled = cancelled;
  std::vector<Found> found;
  std::vector<Infeasible> infeasible;
  std::vector<Rejection> invalid;
  for (auto& r : results) {
    out.evaluated += r.evaluated;
    out.fitting += r.fitting;
    for (auto& f : r.best) found.push_back(std::move(f));
    for (auto& f : r.infeasible) infeasible.push_back(std::move(f));
    for (auto& f : r.invalid) invalid.push_back(std::move(f));
  }
  std::stable_sort(found.begin(), found.end(), faster);
  const std::size_t k = std::min(req.top, found.size());
  for (std::size_t i = 0; i < k; ++i) {
    out.plans.push_back(
        prototype.to_estimate(found[i].training, prototype.cost(found[i].training)));
    out.why_slower.push_back(i == 0 ? std::string() : why_slower(found[0].cost, found[i].cost));
  }
  // Runners-up: the best of each (strategy, TP, PP) shape not already shown, and the shapes where
  // nothing fits, leanest first.
  std::set<Coarse> shown;
  add_slower_rejections(out, found, k, shown);
  add_unfit_rejections(out, infeasible, found, c, shown);
  std::map<std::string, bool> seen;
  for (const auto& r : invalid) {
    if (seen.size() >= kMaxInvalidRejections) break;
    if (seen.emplace(r.reason, true).second) out.rejected.push_back(r);
  }
  return out;
}

std::vector<bool> pareto_front(const std::vector<Estimate>& plans) {
  std::vector<bool> front(plans.size(), false);
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const Bytes m = plans[i].memory.device_total;
    const double t = plans[i].throughput.tokens_per_s;
    front[i] = std::none_of(plans.begin(), plans.end(), [&](const Estimate& q) {
      const Bytes qm = q.memory.device_total;
      const double qt = q.throughput.tokens_per_s;
      return qm <= m && qt >= t && (qm < m || qt > t);
    });
  }
  return front;
}

}  // namespace trainplan::planner
