#include "trainplan/calibration/profile_fit.hpp"

#include <algorithm>
#include <cmath>
#include <compare>
#include <map>
#include <string>
#include <string_view>

#include "trainplan/core/error.hpp"

namespace trainplan::calibration {
namespace {

using hardware::Collective;
using hardware::LinkScope;

[[nodiscard]] std::string plural(int n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

[[nodiscard]] std::string curve_name(Collective c, int ranks, int nodes) {
  return std::string(to_string(c)) + " over " + plural(ranks, "rank", "ranks") + " on " +
         plural(nodes, "node", "nodes");
}

[[nodiscard]] std::string quoted_list(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) {
    if (!out.empty()) out += ", ";
    out += "'" + n + "'";
  }
  return out;
}

void add_unique(std::vector<std::string>& list, const std::string& value) {
  if (std::find(list.begin(), list.end(), value) == list.end()) list.push_back(value);
}

// Strings of several runs: the common value, or the distinct values joined.
void merge_string(std::optional<std::string>& into, const std::optional<std::string>& value,
                  std::string_view separator) {
  if (!value || value->empty()) return;
  if (!into) {
    into = value;
    return;
  }
  // Compare against each part already joined, so that a value is listed once.
  std::string_view rest = *into;
  while (true) {
    const std::size_t at = rest.find(separator);
    if (rest.substr(0, at) == *value) return;
    if (at == std::string_view::npos) break;
    rest.remove_prefix(at + separator.size());
  }
  *into += std::string(separator) + *value;
}

void merge_max(std::optional<int>& into, const std::optional<int>& value) {
  if (value && (!into || *value > *into)) into = value;
}

void check_runs(std::span<const Run> runs) {
  const Run* world_run = nullptr;
  int world_ranks = 0;
  int world_nodes = 0;
  for (const Run& run : runs) {
    for (const CollectiveMeasurement& m : run.measurements.collectives) {
      const std::string what = "run '" + run.name + "': " + std::string(to_string(m.collective));
      if (m.ranks < 1 || m.nodes < 1 || m.ranks < m.nodes) {
        throw InputError(what + " measurement with " + plural(m.ranks, "rank", "ranks") + " on " +
                         plural(m.nodes, "node", "nodes") + " is not a possible job");
      }
      if (m.scope == LinkScope::intra_node && m.nodes != 1) {
        throw InputError(what + " measurement claims scope 'intra_node' but spans " +
                         plural(m.nodes, "node", "nodes"));
      }
      if (m.scope != LinkScope::world) continue;
      if (run.provenance.ranks && *run.provenance.ranks != m.ranks) {
        throw InputError(
            "run '" + run.name + "' ran " + plural(*run.provenance.ranks, "rank", "ranks") +
            " (provenance.json) but its scope 'world' measurements use " + std::to_string(m.ranks));
      }
      if (world_run == nullptr) {
        world_run = &run;
        world_ranks = m.ranks;
        world_nodes = m.nodes;
      } else if (m.ranks != world_ranks || m.nodes != world_nodes) {
        const std::string runs_named = world_run == &run ? "run '" + run.name + "' measures"
                                                         : "runs '" + world_run->name + "' and '" +
                                                               run.name + "' both measure";
        throw InputError(
            runs_named + " scope 'world' with different world sizes: " +
            plural(world_ranks, "rank", "ranks") + " on " + plural(world_nodes, "node", "nodes") +
            " vs " + plural(m.ranks, "rank", "ranks") + " on " + plural(m.nodes, "node", "nodes"));
      }
    }
  }
}

[[nodiscard]] std::optional<FlopsPerSecond> peak_of(const ProfileFitOptions& options,
                                                    hardware::GemmDtype dtype) {
  for (const PeakThroughput& p : options.peaks) {
    if (p.dtype == dtype && p.peak.value() > 0.0) return p.peak;
  }
  return std::nullopt;
}

struct CurveKey {
  Collective collective;
  int ranks;
  int nodes;
  std::string dtype;
  friend auto operator<=>(const CurveKey&, const CurveKey&) = default;
};

struct CurveGroup {
  std::vector<const CollectiveMeasurement*> measurements;
  std::vector<std::string> runs;
  int hosts = 0;  // nodes the benchmark ran on
};

// The nodes NCCL sees: an NVLink domain spanning several nodes counts as one
// (ProfileFitOptions::nvlink_domain_gpus).
[[nodiscard]] int nccl_nodes(int ranks, int nodes, int nvlink_domain_gpus) {
  if (nodes <= 1 || nvlink_domain_gpus <= 0) return nodes;
  const int per_node = (ranks + nodes - 1) / nodes;
  const int nodes_per_domain = std::max(1, nvlink_domain_gpus / std::max(1, per_node));
  return (nodes + nodes_per_domain - 1) / nodes_per_domain;
}

// nccl-tests' name of a data type (what the estimate asks a profile for): trainplan-calibrate
// writes "bf16" where nccl-tests writes "bfloat16"; other spellings of the same types likewise.
[[nodiscard]] std::string nccl_tests_dtype(const std::string& name) {
  for (const auto& [other, ours] : {std::pair{"bf16", "bfloat16"}, {"fp16", "half"},
                                     {"float16", "half"}, {"fp32", "float"}, {"float32", "float"}})
    if (name == other) return ours;
  return name;
}

// Said of a curve whose nodes are NVLink domains (nccl_nodes).
[[nodiscard]] std::string domain_note(const CurveKey& key, int hosts, int domain_gpus) {
  return curve_name(key.collective, key.ranks, hosts) + ": the nodes make " +
         plural(key.nodes, "NVLink domain", "NVLink domains") + " of " + std::to_string(domain_gpus) +
         " GPUs; NCCL takes a domain as one node (MNNVL), and so does the profile";
}

void fit_collectives(std::span<const Run> runs, const ProfileFitOptions& options, ProfileFit& out) {
  std::map<CurveKey, CurveGroup> groups;
  for (const Run& run : runs) {
    for (const CollectiveMeasurement& m : run.measurements.collectives) {
      const CurveKey key{m.collective, m.ranks,
                         nccl_nodes(m.ranks, m.nodes, options.nvlink_domain_gpus),
                         nccl_tests_dtype(m.dtype)};
      CurveGroup& g = groups[key];
      g.measurements.push_back(&m);
      add_unique(g.runs, run.name);
      g.hosts = std::max(g.hosts, m.nodes);
    }
  }
  for (const auto& [key, group] : groups) {
    const std::string name = curve_name(key.collective, key.ranks, key.nodes) +
                             (key.dtype.empty() ? "" : " (" + key.dtype + ")");
    if (key.ranks < 2) {
      out.notes.push_back(name + ": one rank does not communicate; not fitted");
      continue;
    }
    CurveReport report;
    report.collective = key.collective;
    report.ranks = key.ranks;
    report.nodes = key.nodes;
    report.hosts = group.hosts;
    report.dtype = key.dtype;
    if (report.hosts != report.nodes)
      out.notes.push_back(domain_note(key, report.hosts, options.nvlink_domain_gpus));
    bool all_world = true;
    bool any_out_of_place = false;
    for (const CollectiveMeasurement* m : group.measurements) {
      all_world = all_world && m->scope == LinkScope::world;
      if (!m->valid) ++report.invalid;
      if (m->valid && !m->in_place) any_out_of_place = true;
    }
    report.scope = all_world ? LinkScope::world
                             : (key.nodes == 1 ? LinkScope::intra_node : LinkScope::inter_node);

    // Out-of-place timings when there are any (nccl-tests' primary column), else in-place ones;
    // repeated sizes (several runs, dtypes or cycles) merge to their median time.
    std::map<double, std::vector<double>> by_size;
    for (const CollectiveMeasurement* m : group.measurements) {
      if (!m->valid || m->in_place == any_out_of_place) continue;
      if (!(m->bytes.value() > 0.0) || !(m->time.value() > 0.0)) continue;
      by_size[m->bytes.value()].push_back(m->time.value());
    }
    std::vector<hardware::TimedSize> points;
    for (auto& [bytes, times] : by_size) {
      points.push_back({Bytes(bytes), Seconds(median(times))});
    }
    if (static_cast<int>(points.size()) < kMinAlphaBetaPoints) {
      throw InputError(name + " (run " + quoted_list(group.runs) + ") has " +
                       plural(static_cast<int>(points.size()), "valid size", "valid sizes") +
                       "; its alpha-beta fit needs at least " +
                       std::to_string(kMinAlphaBetaPoints));
    }
    const double factor = hardware::bus_factor(key.collective, key.ranks);
    const AlphaBetaFit line = fit_alpha_beta(points, factor);
    const PiecewiseFit pieces = fit_piecewise(points, factor, options.piecewise);

    out.profile.collectives.push_back({.collective = key.collective,
                                       .scope = report.scope,
                                       .ranks = key.ranks,
                                       .nodes = key.nodes,
                                       .dtype = key.dtype,
                                       .alpha = line.alpha,
                                       .busbw = line.busbw,
                                       .regimes = pieces.regimes,
                                       .points = std::move(points),
                                       .fit = pieces.quality});

    report.points = pieces.quality.points;
    report.outliers = static_cast<int>(std::count(line.dropped.begin(), line.dropped.end(), true));
    report.line = line.quality;
    report.piecewise = pieces.quality;
    report.regimes = static_cast<int>(pieces.regimes.size());
    out.curves.push_back(report);
  }
}

// The (algorithm, protocol) the model takes over a curve's sizes, each with the largest measured
// size it takes.
[[nodiscard]] std::vector<ChoiceSpan> choice_spans(const hardware::CollectiveModel& m,
                                                   const hardware::CollectiveCurve& c) {
  std::vector<ChoiceSpan> out;
  for (const hardware::TimedSize& p : c.points) {
    const std::string now = hardware::choice_text(hardware::nccl_choice(m, c.ranks, c.nodes, p.bytes));
    if (out.empty() || out.back().choice != now) out.push_back({now, p.bytes});
    out.back().up_to = p.bytes;
  }
  return out;
}

// Each curve's measured sizes as the profile answers them, as the scope's model alone answers
// them, and as the profile without that curve answers them (its model refitted to the other
// curves): its error at a rank and node count nobody measured.
void report_curve_answers(ProfileFit& out) {
  out.profile.collective_models = fit_collective_models(out.profile.collectives);
  for (std::size_t i = 0; i < out.curves.size(); ++i) {
    const hardware::CollectiveCurve& c = out.profile.collectives[i];
    hardware::HardwareProfile rest = out.profile;
    rest.collectives.erase(rest.collectives.begin() + static_cast<std::ptrdiff_t>(i));
    rest.collective_models = fit_collective_models(rest.collectives);
    const hardware::CollectiveModel* model =
        out.profile.find_model(c.collective, hardware::scope_of(c.nodes), c.dtype);
    std::vector<double> in_sample, alone, held_out;  // relative errors at the measured sizes
    for (const hardware::TimedSize& p : c.points) {
      const double measured = p.time.value();
      if (const auto t = out.profile.collective_time(c.collective, c.ranks, c.nodes, p.bytes, c.dtype))
        in_sample.push_back(t->value() / measured - 1.0);
      if (model != nullptr)
        alone.push_back(hardware::nccl_choice(*model, c.ranks, c.nodes, p.bytes).time.value() /
                            measured - 1.0);
      if (const auto t = rest.collective_time(c.collective, c.ranks, c.nodes, p.bytes, c.dtype))
        held_out.push_back(t->value() / measured - 1.0);
    }
    CurveReport& r = out.curves[i];
    r.profile = fit_quality(in_sample);
    if (model != nullptr) {
      r.model = fit_quality(alone);
      r.choices = choice_spans(*model, c);
    }
    if (!held_out.empty()) {
      r.held_out_scale = fit_quality(held_out);
      r.held_out_errors = std::move(held_out);
    }
  }
  for (const hardware::CollectiveModel& m : out.profile.collective_models) {
    ScopeReport s{m.collective, m.scope, m.dtype, 0, std::nullopt};
    std::vector<double> pooled;
    for (const CurveReport& r : out.curves) {
      if (r.collective != m.collective || hardware::scope_of(r.nodes) != m.scope ||
          r.dtype != m.dtype)
        continue;
      ++s.curves;
      pooled.insert(pooled.end(), r.held_out_errors.begin(), r.held_out_errors.end());
    }
    if (!pooled.empty()) s.held_out_scale = fit_quality(pooled);
    out.scopes.push_back(s);
  }
}

void fit_gemms(std::span<const Run> runs, const ProfileFitOptions& options, ProfileFit& out) {
  std::vector<GemmMeasurement> points;
  for (const Run& run : runs) {
    points.insert(points.end(), run.measurements.gemms.begin(), run.measurements.gemms.end());
  }
  if (points.empty()) return;
  GemmRooflineOptions gemm = options.gemm;
  gemm.dtypes.clear();
  for (const hardware::GemmDtype dtype : {hardware::GemmDtype::bf16, hardware::GemmDtype::fp16,
                                          hardware::GemmDtype::tf32, hardware::GemmDtype::fp8}) {
    const auto count = std::count_if(points.begin(), points.end(),
                                     [&](const GemmMeasurement& g) { return g.dtype == dtype; });
    if (count == 0) continue;
    const std::optional<FlopsPerSecond> peak = peak_of(options, dtype);
    if (!peak) {
      throw InputError("GEMM " + std::string(to_string(dtype)) + ": " +
                       plural(static_cast<int>(count), "measurement", "measurements") +
                       " but no peak " + std::string(to_string(dtype)) +
                       " throughput of the GPU to measure efficiency against");
    }
    gemm.dtypes.push_back({dtype, *peak});
  }
  gemm.sm_count = options.sm_count;
  if (out.profile.memory.hbm) {
    gemm.bandwidth_prior = *out.profile.memory.hbm;
  } else if (options.hbm) {
    gemm.bandwidth_prior = *options.hbm;
  }
  out.profile.gemm = fit_gemm_roofline(points, gemm);
  for (const hardware::GemmModel& g : out.profile.gemm) {
    FamilyReport r;
    r.family = "GEMM " + std::string(to_string(g.dtype));
    r.source = "cuBLASLt, roofline + interpolation";
    r.points = g.fit.points;
    r.model = g.model_fit;
    r.profile = g.fit;
    if (g.leave_one_out.points > 0) r.leave_one_out = g.leave_one_out;
    out.families.push_back(r);
  }
}

[[nodiscard]] std::string attention_family(AttentionPass pass, bool causal) {
  return "attention " + std::string(to_string(pass)) + (causal ? " causal" : "");
}

void report_skipped(std::span<const Run> runs, ProfileFit& out) {
  for (const Run& run : runs) {
    for (const SkippedPoint& s : run.measurements.skipped) {
      std::string family = s.kind;
      if (s.attention) {
        family = "attention " + std::string(to_string(s.attention->pass)) + " " +
                 std::string(to_string(s.attention->impl)) + (s.attention->causal ? " causal" : "");
      }
      std::string fallback = s.fallback_kind;
      if (s.fallback_attention)
        fallback += " " + std::string(to_string(s.fallback_attention->impl));
      auto it = std::find_if(out.skipped.begin(), out.skipped.end(), [&](const SkippedReport& r) {
        return r.run == run.name && r.family == family && r.reason == s.reason &&
               r.fallback == fallback;
      });
      if (it == out.skipped.end()) {
        out.skipped.push_back({run.name, family, 1, s.reason, fallback});
      } else {
        ++it->count;
      }
    }
  }
}

[[nodiscard]] int skipped_count(std::span<const Run> runs, AttentionPass pass, bool causal) {
  int n = 0;
  for (const Run& run : runs) {
    for (const SkippedPoint& s : run.measurements.skipped) {
      if (s.attention && s.attention->pass == pass && s.attention->causal == causal &&
          s.attention->impl == AttentionImpl::cudnn) {
        ++n;
      }
    }
  }
  return n;
}

// eta_max and seq_half of the chosen points against the dtype's peak, with the time errors of the
// saturating model and of what the profile answers (interpolation included).
[[nodiscard]] hardware::AttentionModel attention_model(
    const std::string& name, const std::vector<const AttentionMeasurement*>& chosen, bool fused,
    const ProfileFitOptions& options) {
  hardware::AttentionModel model;
  model.kernel = fused ? hardware::AttentionKernel::fused : hardware::AttentionKernel::unfused;
  std::vector<double> seq;
  std::vector<double> eta;
  for (const AttentionMeasurement* a : chosen) {
    const std::optional<hardware::GemmDtype> dtype = try_parse<hardware::GemmDtype>(a->dtype);
    const std::optional<FlopsPerSecond> peak = dtype ? peak_of(options, *dtype) : std::nullopt;
    if (!peak) {
      throw InputError(name + ": no peak " + a->dtype +
                       " throughput of the GPU to measure efficiency against");
    }
    model.peak = *peak;
    model.points.push_back({a->seq, a->rate, a->head_dim});
    seq.push_back(static_cast<double>(a->seq));
    eta.push_back(a->rate / *peak);
  }
  const SaturationFit fit = fit_saturation(seq, eta);
  model.efficiency = fit.efficiency;
  model.seq_half = fit.half;
  // Errors of the time: measured eta / predicted eta - 1.
  std::vector<double> model_err;
  std::vector<double> profile_err;
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    const double saturating =
        hardware::saturating_efficiency(model.efficiency, seq[i], model.seq_half);
    const double interpolated =
        hardware::attention_model_efficiency(model, chosen[i]->seq, chosen[i]->head_dim);
    model_err.push_back(eta[i] / saturating - 1.0);
    profile_err.push_back(eta[i] / interpolated - 1.0);
  }
  model.fit = fit_quality(model_err);
  model.interpolated = fit_quality(profile_err);
  return model;
}

// One pass and mask. The fused kernel is what training runs. The unfused proxy is kept only as a
// labelled fallback, which fused-kernel queries do not use.
void fit_attention_family(std::span<const Run> runs, AttentionPass pass, bool causal,
                          const ProfileFitOptions& options, ProfileFit& out) {
  std::vector<const AttentionMeasurement*> cudnn;
  std::vector<const AttentionMeasurement*> unfused;
  for (const Run& run : runs) {
    for (const AttentionMeasurement& a : run.measurements.attention) {
      if (a.pass != pass || a.causal != causal) continue;
      (a.impl == AttentionImpl::cudnn ? cudnn : unfused).push_back(&a);
    }
  }
  const std::string name = attention_family(pass, causal);
  const int skipped = skipped_count(runs, pass, causal);
  const bool fused = !cudnn.empty();
  const std::vector<const AttentionMeasurement*>& chosen = fused ? cudnn : unfused;
  if (!fused) {
    std::string note = name + ": no cuDNN point in the runs";
    if (skipped > 0) {
      note += " (" + plural(skipped, "cuDNN point", "cuDNN points") + " skipped, see above)";
    }
    if (chosen.empty()) {
      if (skipped > 0) out.notes.push_back(note + "; not fitted");
      return;
    }
    note +=
        "; the unfused proxy is fitted and kept as kernel 'unfused', which predictions "
        "of the fused kernel do not use";
    if (causal) {
      note += " (causal queries use the non-causal fused model where there is one)";
    } else {
      note += " (they fall back to datasheet defaults)";
    }
    out.notes.push_back(note);
  }
  if (static_cast<int>(chosen.size()) < kMinSaturationPoints) {
    throw InputError(name + " has " +
                     plural(static_cast<int>(chosen.size()), "measurement", "measurements") +
                     "; its efficiency fit needs at least " + std::to_string(kMinSaturationPoints));
  }
  hardware::AttentionModel model = attention_model(name, chosen, fused, options);

  FamilyReport r;
  r.family = name;
  r.source = fused ? "cuDNN" : "unfused proxy";
  r.used = fused;
  r.points = model.fit.points;
  r.model = model.fit;
  r.profile = model.interpolated;
  out.families.push_back(r);

  std::optional<hardware::AttentionModel>& slot =
      pass == AttentionPass::fwd
          ? (causal ? out.profile.attention_fwd_causal : out.profile.attention_fwd)
          : (causal ? out.profile.attention_bwd_causal : out.profile.attention_bwd);
  slot = std::move(model);
}

void fit_attention(std::span<const Run> runs, const ProfileFitOptions& options, ProfileFit& out) {
  for (const AttentionPass pass : {AttentionPass::fwd, AttentionPass::bwd}) {
    for (const bool causal : {false, true}) fit_attention_family(runs, pass, causal, options, out);
  }
}

void summarise_bandwidth(std::span<const Run> runs, ProfileFit& out) {
  for (const CopyDirection dir : {CopyDirection::d2d, CopyDirection::h2d, CopyDirection::d2h}) {
    std::vector<BandwidthMeasurement> points;
    for (const Run& run : runs) {
      for (const BandwidthMeasurement& b : run.measurements.bandwidth) {
        if (b.direction == dir) points.push_back(b);
      }
    }
    if (points.empty()) continue;
    const BytesPerSecond rate = plateau_bandwidth(points);
    switch (dir) {
      case CopyDirection::d2d:
        out.profile.memory.hbm = rate;
        break;
      case CopyDirection::h2d:
        out.profile.memory.h2d = rate;
        break;
      case CopyDirection::d2h:
        out.profile.memory.d2h = rate;
        break;
    }
  }
  std::vector<double> adam;
  for (const Run& run : runs) {
    for (const CpuAdamMeasurement& a : run.measurements.cpu_adam) adam.push_back(a.params_per_s);
  }
  if (!adam.empty()) out.profile.cpu_adam_params_per_s = median(std::move(adam));
}

// |rate_i / rate - 1|: the time error of predicting each point with one rate.
[[nodiscard]] hardware::FitQuality rate_quality(std::span<const double> rates, double rate) {
  std::vector<double> err;
  for (const double r : rates) err.push_back(r / rate - 1.0);
  return fit_quality(err);
}

void fit_optimizer(std::span<const Run> runs, ProfileFit& out) {
  for (const ElementDtype states : {ElementDtype::fp32, ElementDtype::bf16, ElementDtype::fp16}) {
    std::vector<BandwidthMeasurement> points;
    for (const Run& run : runs) {
      for (const OptimizerMeasurement& o : run.measurements.optimizer) {
        if (o.state_dtype == states)
          points.push_back({CopyDirection::d2d, o.bytes, o.time, o.rate});
      }
    }
    if (points.empty()) continue;
    const std::string family = "optimizer " + std::string(to_string(states)) + " states";
    if (states == ElementDtype::fp16) {
      out.notes.push_back(family + ": the time model prices fp32 and bf16 states only; " +
                          plural(static_cast<int>(points.size()), "point", "points") + " not used");
      continue;
    }
    const BytesPerSecond rate = plateau_bandwidth(points);
    Bytes largest(0.0);
    for (const BandwidthMeasurement& p : points) largest = std::max(largest, p.bytes);
    std::vector<double> used;
    for (const BandwidthMeasurement& p : points) {
      if (p.bytes >= largest / 8.0) used.push_back(p.rate.value());
    }
    (states == ElementDtype::fp32 ? out.profile.kernels.optimizer_fp32_states
                                  : out.profile.kernels.optimizer_bf16_states) = rate;
    FamilyReport r;
    r.family = family;
    r.source = "AdamW, sizes >= 1/8 of the largest";
    r.points = static_cast<int>(used.size());
    r.model = rate_quality(used, rate.value());
    out.families.push_back(r);
  }
}

void fit_elementwise(std::span<const Run> runs, const ProfileFitOptions& options, ProfileFit& out) {
  std::vector<double> rates;
  std::map<ElementwiseOp, std::vector<double>> by_op;
  int small = 0;
  for (const Run& run : runs) {
    for (const ElementwiseMeasurement& e : run.measurements.elementwise) {
      if (e.bytes < options.elementwise_min_bytes) {
        ++small;
        continue;
      }
      rates.push_back(e.rate.value());
      by_op[e.op].push_back(e.rate.value());
    }
  }
  if (rates.empty()) {
    if (small > 0) {
      out.notes.push_back("elementwise: every point is smaller than " +
                          std::to_string(static_cast<std::int64_t>(
                              options.elementwise_min_bytes.value() / (1024 * 1024))) +
                          " MiB and so measures the L2 cache; not fitted");
    }
    return;
  }
  const double rate = median(rates);
  out.profile.kernels.elementwise = BytesPerSecond(rate);
  out.profile.kernels.elementwise_min_bytes = options.elementwise_min_bytes;
  for (auto& [op, op_rates] : by_op) {
    out.profile.kernels.elementwise_by_op.emplace_back(std::string(to_string(op)),
                                                       BytesPerSecond(median(op_rates)));
  }
  FamilyReport r;
  r.family = "elementwise";
  r.source = "median over ops, sizes >= " +
             std::to_string(
                 static_cast<std::int64_t>(options.elementwise_min_bytes.value() / (1024 * 1024))) +
             " MiB";
  r.points = static_cast<int>(rates.size());
  r.model = rate_quality(rates, rate);
  out.families.push_back(r);
  if (small > 0) {
    out.notes.push_back("elementwise: " + plural(small, "point", "points") + " below " +
                        std::to_string(static_cast<std::int64_t>(
                            options.elementwise_min_bytes.value() / (1024 * 1024))) +
                        " MiB left out (the L2 cache serves them)");
  }
}

void fit_launch(std::span<const Run> runs, ProfileFit& out) {
  std::vector<double> empty;
  std::map<std::int64_t, std::vector<double>> gemm_by_size;  // by M N K
  std::map<std::int64_t, std::int64_t> side;
  for (const Run& run : runs) {
    for (const LaunchMeasurement& l : run.measurements.launch) {
      switch (l.op) {
        case LaunchOp::empty_kernel:
          empty.push_back(l.time.value());
          break;
        case LaunchOp::gemm: {
          const std::int64_t volume = l.m * l.n * l.k;
          gemm_by_size[volume].push_back(l.time.value());
          side[volume] = l.m;
          break;
        }
      }
    }
  }
  if (!empty.empty()) {
    const double t = median(empty);
    out.profile.launch.empty_kernel = Seconds(t);
    FamilyReport r;
    r.family = "launch empty kernel";
    r.source = "median";
    r.points = static_cast<int>(empty.size());
    r.model = rate_quality(empty, t);
    out.families.push_back(r);
  }
  if (!gemm_by_size.empty()) {
    // The smallest GEMM: its work is negligible, what remains is the launch.
    const auto& [volume, times] = *gemm_by_size.begin();
    const double t = median(times);
    out.profile.launch.small_gemm = Seconds(t);
    out.profile.launch.small_gemm_size = side[volume];
    FamilyReport r;
    r.family = "launch small GEMM";
    r.source = "median at " + std::to_string(side[volume]) + "^3";
    r.points = static_cast<int>(times.size());
    r.model = rate_quality(times, t);
    out.families.push_back(r);
  }
}

}  // namespace

hardware::RunProvenance merge_provenance(std::span<const hardware::RunProvenance> runs) {
  hardware::RunProvenance m;
  for (const hardware::RunProvenance& p : runs) {
    merge_string(m.tool, p.tool, "+");
    merge_string(m.gpu, p.gpu, ", ");
    merge_max(m.gpu_count, p.gpu_count);
    for (const std::string& h : p.hosts) add_unique(m.hosts, h);
    merge_max(m.nodes, p.nodes);
    merge_max(m.ranks, p.ranks);
    merge_string(m.driver, p.driver, ", ");
    merge_string(m.cuda, p.cuda, ", ");
    merge_string(m.nccl, p.nccl, ", ");
    merge_string(m.cublas, p.cublas, ", ");
    merge_string(m.cudnn, p.cudnn, ", ");
    merge_string(m.command, p.command, " ; ");
    if (p.date && (!m.date || *p.date > *m.date)) m.date = p.date;
    for (const std::string& s : p.sources) add_unique(m.sources, s);
  }
  return m;
}

ProfileFit fit_profile(std::span<const Run> runs, const ProfileFitOptions& options) {
  std::vector<std::string> names;
  std::size_t total = 0;
  for (const Run& run : runs) {
    names.push_back(run.name);
    total += run.measurements.size();
  }
  if (runs.empty()) throw InputError("no calibration runs given");
  if (total == 0) throw InputError("no measurements in " + quoted_list(names));
  check_runs(runs);

  ProfileFit out;
  out.profile.name = options.name;
  std::vector<hardware::RunProvenance> provenances;
  for (const Run& run : runs) provenances.push_back(run.provenance);
  out.profile.provenance = merge_provenance(provenances);
  // The profile names the runs it was fitted from.
  for (const Run& run : runs) add_unique(out.profile.provenance.sources, run.name);
  if (options.gpu && !options.gpu->empty()) {
    out.profile.gpu = *options.gpu;
  } else if (out.profile.provenance.gpu) {
    out.profile.gpu = *out.profile.provenance.gpu;
  } else {
    out.profile.gpu = "unknown";
    out.notes.push_back("the runs do not say which GPU they measured; the profile says 'unknown'");
  }

  report_skipped(runs, out);
  fit_collectives(runs, options, out);
  report_curve_answers(out);
  summarise_bandwidth(runs, out);
  fit_gemms(runs, options, out);
  fit_attention(runs, options, out);
  fit_optimizer(runs, out);
  fit_elementwise(runs, options, out);
  fit_launch(runs, out);
  return out;
}

}  // namespace trainplan::calibration
