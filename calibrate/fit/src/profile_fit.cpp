#include "trainplan/calibrate/profile_fit.hpp"

#include <algorithm>
#include <compare>
#include <map>
#include <string>
#include <string_view>

#include "trainplan/core/error.hpp"

namespace trainplan::calibrate {
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
  friend auto operator<=>(const CurveKey&, const CurveKey&) = default;
};

struct CurveGroup {
  std::vector<const CollectiveMeasurement*> measurements;
  std::vector<std::string> runs;
};

void fit_collectives(std::span<const Run> runs, const ProfileFitOptions& options, ProfileFit& out) {
  std::map<CurveKey, CurveGroup> groups;
  for (const Run& run : runs) {
    for (const CollectiveMeasurement& m : run.measurements.collectives) {
      CurveGroup& g = groups[{m.collective, m.ranks, m.nodes}];
      g.measurements.push_back(&m);
      add_unique(g.runs, run.name);
    }
  }
  for (const auto& [key, group] : groups) {
    const std::string name = curve_name(key.collective, key.ranks, key.nodes);
    if (key.ranks < 2) {
      out.notes.push_back(name + ": one rank does not communicate; not fitted");
      continue;
    }
    CurveReport report;
    report.collective = key.collective;
    report.ranks = key.ranks;
    report.nodes = key.nodes;
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

    hardware::CollectiveCurve curve;
    curve.collective = key.collective;
    curve.scope = report.scope;
    curve.ranks = key.ranks;
    curve.nodes = key.nodes;
    curve.alpha = line.alpha;
    curve.busbw = line.busbw;
    curve.regimes = pieces.regimes;
    curve.points = std::move(points);
    curve.fit = pieces.quality;
    out.profile.collectives.push_back(std::move(curve));

    report.points = pieces.quality.points;
    report.outliers = static_cast<int>(std::count(line.dropped.begin(), line.dropped.end(), true));
    report.line = line.quality;
    report.piecewise = pieces.quality;
    report.regimes = static_cast<int>(pieces.regimes.size());
    out.curves.push_back(report);
  }
}

void fit_gemms(std::span<const Run> runs, const ProfileFitOptions& options, ProfileFit& out) {
  std::map<hardware::GemmDtype, std::vector<hardware::GemmPoint>> by_dtype;
  for (const Run& run : runs) {
    for (const GemmMeasurement& g : run.measurements.gemms) {
      by_dtype[g.dtype].push_back({g.m, g.n, g.k, g.rate});
    }
  }
  for (auto& [dtype, points] : by_dtype) {
    const std::string name = "GEMM " + std::string(to_string(dtype));
    const std::optional<FlopsPerSecond> peak = peak_of(options, dtype);
    if (!peak) {
      throw InputError(name + ": " +
                       plural(static_cast<int>(points.size()), "measurement", "measurements") +
                       " but no peak " + std::string(to_string(dtype)) +
                       " throughput of the GPU to measure efficiency against");
    }
    if (static_cast<int>(points.size()) < kMinSaturationPoints) {
      throw InputError(
          name + " has " + plural(static_cast<int>(points.size()), "measurement", "measurements") +
          "; its efficiency fit needs at least " + std::to_string(kMinSaturationPoints));
    }
    GemmFitOptions fit_options;
    fit_options.peak = *peak;
    fit_options.sm_count = options.sm_count;
    const GemmFit fit = fit_gemm(points, fit_options);
    hardware::GemmModel model;
    model.dtype = dtype;
    model.peak_efficiency = fit.peak_efficiency;
    model.k0 = fit.k0;
    model.tile_m = fit_options.tile_m;
    model.tile_n = fit_options.tile_n;
    model.sm_count = options.sm_count;
    model.peak = *peak;
    model.points = std::move(points);
    model.fit = fit.quality;
    out.profile.gemm.push_back(std::move(model));
  }
}

void fit_attention(std::span<const Run> runs, const ProfileFitOptions& options, ProfileFit& out) {
  for (const AttentionPass pass : {AttentionPass::fwd, AttentionPass::bwd}) {
    std::vector<const AttentionMeasurement*> chosen;
    bool any_cudnn = false;
    for (const Run& run : runs) {
      for (const AttentionMeasurement& a : run.measurements.attention) {
        if (a.pass == pass && a.impl == AttentionImpl::cudnn) any_cudnn = true;
      }
    }
    // The fused kernel is what training uses; the unfused proxy only when nothing else was run.
    const AttentionImpl impl = any_cudnn ? AttentionImpl::cudnn : AttentionImpl::unfused;
    for (const Run& run : runs) {
      for (const AttentionMeasurement& a : run.measurements.attention) {
        if (a.pass == pass && a.impl == impl) chosen.push_back(&a);
      }
    }
    if (chosen.empty()) continue;
    const std::string name = "attention " + std::string(to_string(pass));
    if (static_cast<int>(chosen.size()) < kMinSaturationPoints) {
      throw InputError(
          name + " has " + plural(static_cast<int>(chosen.size()), "measurement", "measurements") +
          "; its efficiency fit needs at least " + std::to_string(kMinSaturationPoints));
    }
    hardware::AttentionModel model;
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
      model.points.push_back({a->seq, a->rate});
      seq.push_back(static_cast<double>(a->seq));
      eta.push_back(a->rate / *peak);
    }
    const SaturationFit fit = fit_saturation(seq, eta);
    model.efficiency = fit.efficiency;
    model.seq_half = fit.half;
    model.fit = fit.quality;
    if (!any_cudnn) out.notes.push_back(name + ": fitted to the unfused proxy (no cuDNN runs)");
    (pass == AttentionPass::fwd ? out.profile.attention_fwd : out.profile.attention_bwd) =
        std::move(model);
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
      case CopyDirection::d2d: out.profile.memory.hbm = rate; break;
      case CopyDirection::h2d: out.profile.memory.h2d = rate; break;
      case CopyDirection::d2h: out.profile.memory.d2h = rate; break;
    }
  }
  std::vector<double> adam;
  for (const Run& run : runs) {
    for (const CpuAdamMeasurement& a : run.measurements.cpu_adam) adam.push_back(a.params_per_s);
  }
  if (!adam.empty()) out.profile.cpu_adam_params_per_s = median(std::move(adam));
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
  if (options.gpu && !options.gpu->empty()) {
    out.profile.gpu = *options.gpu;
  } else if (out.profile.provenance.gpu) {
    out.profile.gpu = *out.profile.provenance.gpu;
  } else {
    out.profile.gpu = "unknown";
    out.notes.push_back("the runs do not say which GPU they measured; the profile says 'unknown'");
  }

  fit_collectives(runs, options, out);
  fit_gemms(runs, options, out);
  fit_attention(runs, options, out);
  summarise_bandwidth(runs, out);
  return out;
}

}  // namespace trainplan::calibrate
