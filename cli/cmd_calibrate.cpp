#include "cmd_calibrate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "format.hpp"
#include "trainplan/calibration/gemm_fit.hpp"
#include "trainplan/calibration/profile_fit.hpp"
#include "trainplan/core/checked.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/request/catalog.hpp"
#include "trainplan/request/collective_log.hpp"
#include "trainplan/request/measurements.hpp"
#include "trainplan/request/profile_json.hpp"

namespace trainplan::cli {
namespace {

// "8 B", "64 KiB", "4 GiB": message sizes as nccl-tests' -b/-e write them.
std::string size_text(double bytes) {
  constexpr std::array<const char*, 5> kUnits{"B", "KiB", "MiB", "GiB", "TiB"};
  std::size_t unit = 0;
  while (bytes >= 1024.0 && unit + 1 < kUnits.size()) {
    bytes /= 1024.0;
    ++unit;
  }
  return fmt::format("{:g} {}", bytes, kUnits[unit]);
}

std::string percent(double fraction) { return fmt::format("{:.1f}%", 100.0 * fraction); }

request::ImportHints hints_of(const CalibrateImportOptions& o) {
  request::ImportHints h;
  if (!o.collective.empty()) h.collective = parse_enum<hardware::Collective>(o.collective);
  // Given counts replace the log's, within what a cluster holds.
  const auto count = [](std::optional<int> v, const char* flag) -> std::optional<int> {
    if (v && (*v < 1 || *v > kMaxClusterGpus))
      throw InputError(std::string(flag) + " must be from 1 to " + std::to_string(kMaxClusterGpus) + " (got " +
                       std::to_string(*v) + ")");
    return v;
  };
  if (const auto ranks = count(o.ranks, "--ranks")) h.ranks = *ranks;
  if (const auto nodes = count(o.nodes, "--nodes")) h.nodes = *nodes;
  if (o.gpus_per_node < 1) {
    throw InputError("--gpus-per-node must be at least 1 (got " + std::to_string(o.gpus_per_node) +
                     ")");
  }
  h.gpus_per_node_if_unknown = o.gpus_per_node;
  return h;
}

void print_import_table(const std::vector<request::CollectiveLog>& logs, std::ostream& out) {
  Table t({"file", "tool", "collective", "dtype", "ranks", "nodes", "GPU", "points", "wrong",
           "sizes", "peak busbw GB/s"});
  for (const request::CollectiveLog& log : logs) {
    const std::string file = std::filesystem::path(log.source).filename().string();
    for (const request::LogBlock& b : log.blocks) {
      std::map<std::string, std::vector<const request::LogRow*>> by_dtype;
      for (const request::LogRow& row : b.rows) by_dtype[row.dtype].push_back(&row);
      for (const auto& [dtype, rows] : by_dtype) {
        int points = 0;
        int wrong = 0;
        double peak = 0.0;
        for (const request::LogRow* row : rows) {
          for (const auto& timing : {row->out_of_place, row->in_place}) {
            if (!timing) continue;
            ++points;
            if (!timing->valid()) {
              ++wrong;
            } else {
              peak = std::max(peak, timing->busbw_GBps);
            }
          }
        }
        const auto [lo, hi] = std::minmax_element(
            rows.begin(), rows.end(),
            [](const request::LogRow* a, const request::LogRow* c) { return a->bytes < c->bytes; });
        t.add({file, std::string(to_string(log.tool)), std::string(to_string(b.collective)), dtype,
               std::to_string(b.ranks), std::to_string(b.nodes) + (b.nodes_assumed ? "?" : ""),
               b.gpu.empty() ? "-" : b.gpu, std::to_string(points), std::to_string(wrong),
               size_text(static_cast<double>((*lo)->bytes)) + " .. " +
                   size_text(static_cast<double>((*hi)->bytes)),
               fmt::format("{:.2f}", peak)});
      }
    }
  }
  out << t.render();
  int skipped = 0;
  for (const request::CollectiveLog& log : logs) skipped += log.skipped_lines;
  out << "points: out-of-place and in-place timings; wrong: rows with #wrong > 0, kept as "
         "invalid.\n";
  if (skipped > 0) out << "Skipped " << skipped << " line(s) that were not benchmark output.\n";
}

// Dense peaks by dtype from --peak-tflops, then from the catalogue entry of the GPU.
std::vector<calibration::PeakThroughput> peaks_of(const CalibrateFitOptions& o,
                                                const std::optional<hardware::GpuSpec>& spec) {
  std::vector<calibration::PeakThroughput> peaks;
  for (const std::string& entry : o.peak_tflops) {
    const std::size_t eq = entry.find('=');
    if (eq == std::string::npos) {
      throw InputError("--peak-tflops '" + entry + "': expected DTYPE=TFLOPS, e.g. bf16=989");
    }
    const hardware::GemmDtype dtype = parse_enum<hardware::GemmDtype>(entry.substr(0, eq));
    double value = 0.0;
    try {
      std::size_t used = 0;
      value = std::stod(entry.substr(eq + 1), &used);
      if (used != entry.size() - eq - 1) value = 0.0;
    } catch (const std::exception&) {
      value = 0.0;
    }
    if (!(value > 0.0) || !std::isfinite(value)) {
      throw InputError("--peak-tflops '" + entry +
                       "': the peak must be a positive number of TFLOP/s");
    }
    if (tflops(value) < calibration::kMinGpuPeak || tflops(value) > calibration::kMaxGpuPeak)
      throw InputError(fmt::format("--peak-tflops '{}': {:g} TFLOP/s is outside what a GPU has ({:g} to {:g}){}",
                                   entry, value, to_tflops(calibration::kMinGpuPeak),
                                   to_tflops(calibration::kMaxGpuPeak),
                                   value < 1.0 ? fmt::format(" — in PFLOP/s? {:g} PFLOP/s is {:g} TFLOP/s", value,
                                                             value * 1000.0)
                                               : std::string()));
    peaks.push_back({dtype, tflops(value)});
  }
  if (spec) {
    const std::pair<hardware::GemmDtype, double> catalogue[] = {
        {hardware::GemmDtype::bf16, spec->peak.bf16},
        {hardware::GemmDtype::fp16, spec->peak.fp16},
        {hardware::GemmDtype::tf32, spec->peak.tf32},
        {hardware::GemmDtype::fp8, spec->peak.fp8}};
    for (const auto& [dtype, value] : catalogue) {
      const bool given =
          std::any_of(peaks.begin(), peaks.end(),
                      [&](const calibration::PeakThroughput& p) { return p.dtype == dtype; });
      if (!given && value > 0.0) peaks.push_back({dtype, tflops(value)});
    }
  }
  return peaks;
}

std::string quality_text(const std::optional<hardware::FitQuality>& q) {
  return q ? percent(q->median_rel_err) + " / " + percent(q->max_rel_err) : std::string("-");
}

// "tree/LL to 64 KiB, ring/Simple": the (algorithm, protocol) the model takes over a curve.
std::string choices_text(const std::vector<calibration::ChoiceSpan>& spans) {
  std::string out;
  for (std::size_t i = 0; i < spans.size(); ++i) {
    if (!out.empty()) out += ", ";
    out += spans[i].choice;
    if (i + 1 < spans.size()) out += " to " + size_text(spans[i].up_to.value());
  }
  return out.empty() ? "-" : out;
}

// The summary of `calibrate fit`, one table per kind of model.
void print_curves(const calibration::ProfileFit& fit, std::ostream& out) {
  if (fit.curves.empty()) return;
  Table t({"collective", "dtype", "scope", "ranks", "nodes", "points", "invalid", "alpha us",
           "busbw GB/s", "regimes", "profile", "model", "NCCL's choice (model)", "held-out scale"});
  for (std::size_t i = 0; i < fit.curves.size(); ++i) {
    const calibration::CurveReport& r = fit.curves[i];
    const hardware::CollectiveCurve& c = fit.profile.collectives[i];
    t.add({std::string(to_string(r.collective)), r.dtype.empty() ? "-" : r.dtype,
           std::string(to_string(r.scope)), std::to_string(r.ranks),
           std::to_string(r.nodes) + (r.hosts != r.nodes ? " (" + std::to_string(r.hosts) + " hosts)" : ""),
           std::to_string(r.points),
           std::to_string(r.invalid), fmt::format("{:.1f}", c.alpha.value() * 1e6),
           fmt::format("{:.1f}", to_gbps(c.busbw)), std::to_string(r.regimes),
           quality_text(r.profile), quality_text(r.model), choices_text(r.choices),
           quality_text(r.held_out_scale)});
  }
  out << t.render();
  out << "alpha, busbw: one alpha-beta line over the curve; regimes: alpha-beta lines kept for sizes "
         "beyond the measured ones; errors are median / max of |predicted - measured| / measured: "
         "profile: what the profile answers at the measured sizes; model: the scope's collective "
         "model alone; held-out scale: the profile without this curve (its model refitted to the "
         "others, their departure from it carried to this rank and node count).\n";
  if (fit.scopes.empty()) return;
  out << "\n";
  Table m({"collective model", "dtype", "scope", "curves", "latency x", "network latency x",
           "busbw GB/s", "tree bw x", "LL GB/s", "model", "held-out scale"});
  for (const calibration::ScopeReport& s : fit.scopes) {
    const hardware::CollectiveModel* model = fit.profile.find_model(s.collective, s.scope, s.dtype);
    if (model == nullptr) continue;
    m.add({std::string(to_string(s.collective)), s.dtype.empty() ? "-" : s.dtype,
           std::string(to_string(s.scope)),
           std::to_string(s.curves), fmt::format("{:.2f}", model->latency_scale),
           fmt::format("{:.2f}", model->network_latency_scale),
           fmt::format("{:.1f}", to_gbps(model->busbw)), fmt::format("{:.2f}", model->tree_bandwidth),
           fmt::format("{:.2f}", to_gbps(model->ll_bandwidth)), quality_text(model->fit),
           quality_text(s.held_out_scale)});
  }
  out << m.render();
  out << "NCCL's cost model (src/graph/tuning.cc) with its latencies x the two fitted factors, the "
         "ring's Simple bus bandwidth, the tree's relative to it and the LL cap fitted to all curves "
         "of the scope (docs/calibration.md); held-out scale: every curve's points predicted "
         "without that curve, pooled.\n";
}

void print_families(const calibration::ProfileFit& fit, std::ostream& out) {
  if (fit.families.empty()) return;
  out << "\n";
  Table t({"family", "source", "points", "model median", "model max", "profile median",
           "profile max", "held-out median", "held-out max"});
  for (const calibration::FamilyReport& f : fit.families) {
    const auto q = [](const std::optional<hardware::FitQuality>& v, bool max) {
      return v ? percent(max ? v->max_rel_err : v->median_rel_err) : std::string("-");
    };
    t.add({f.family, f.used ? f.source : f.source + " (not used)", std::to_string(f.points),
           percent(f.model.median_rel_err), percent(f.model.max_rel_err), q(f.profile, false),
           q(f.profile, true), q(f.leave_one_out, false), q(f.leave_one_out, true)});
  }
  out << t.render();
  out << "errors: |predicted - measured| / measured of the time. model: the compact model alone; "
         "profile: what the profile answers at the measured points (interpolation included); "
         "held-out: each point predicted from a fit to the others (leave-one-out).\n";
}

void print_gemm_models(const hardware::HardwareProfile& p, std::ostream& out) {
  if (p.gemm.empty()) return;
  out << "\n";
  Table t({"GEMM dtype", "points", "peak TFLOP/s", "eta_max", "K0", "SMs", "overhead us",
           "read GB/s", "write GB/s", "p"});
  for (const hardware::GemmModel& g : p.gemm) {
    const bool roof = g.roofline();
    t.add({std::string(to_string(g.dtype)), std::to_string(g.fit.points),
           fmt::format("{:g}", to_tflops(g.peak)), fmt::format("{:.3f}", g.peak_efficiency),
           fmt::format("{:.0f}", g.k0), g.sm_count > 0 ? std::to_string(g.sm_count) : "-",
           roof ? fmt::format("{:.2f}", g.overhead.value() * 1e6) : "-",
           roof ? fmt::format("{:.0f}", to_gbps(g.read_bandwidth)) : "-",
           roof ? fmt::format("{:.0f}", to_gbps(g.write_bandwidth)) : "-",
           roof ? fmt::format("{:.2f}", g.smoothness) : "-"});
  }
  out << t.render();
  out << "t = overhead + (compute^p + memory^p)^(1/p); compute at eta_max, tile, wave and "
         "K / (K + K0); measured shapes answer their measured time (docs/calibration.md).\n";
}

void print_attention_models(const hardware::HardwareProfile& p, std::ostream& out) {
  const std::pair<const char*, const std::optional<hardware::AttentionModel>*> attention[] = {
      {"fwd", &p.attention_fwd},
      {"bwd", &p.attention_bwd},
      {"fwd causal", &p.attention_fwd_causal},
      {"bwd causal", &p.attention_bwd_causal}};
  if (std::none_of(std::begin(attention), std::end(attention),
                   [](const auto& a) { return a.second->has_value(); })) {
    return;
  }
  out << "\n";
  Table t({"attention", "kernel", "points", "eta_max", "seq half"});
  for (const auto& [label, a] : attention) {
    if (!*a) continue;
    t.add({label, std::string(to_string((*a)->kernel)), std::to_string((*a)->fit.points),
           fmt::format("{:.3f}", (*a)->efficiency), fmt::format("{:.0f}", (*a)->seq_half)});
  }
  out << t.render();
}

// The models of one number each: bandwidths, rates and launch times.
void print_rates(const hardware::HardwareProfile& p, std::ostream& out) {
  const hardware::KernelBandwidths& k = p.kernels;
  if (!(p.memory.hbm || p.memory.h2d || p.memory.d2h || p.cpu_adam_params_per_s ||
        k.optimizer_fp32_states || k.optimizer_bf16_states || k.elementwise ||
        p.launch.empty_kernel || p.launch.small_gemm)) {
    return;
  }
  out << "\n";
  if (p.memory.hbm)
    out << fmt::format("HBM (device copy)              {:.1f} GB/s\n", to_gbps(*p.memory.hbm));
  if (p.memory.h2d)
    out << fmt::format("host to device                 {:.1f} GB/s\n", to_gbps(*p.memory.h2d));
  if (p.memory.d2h)
    out << fmt::format("device to host                 {:.1f} GB/s\n", to_gbps(*p.memory.d2h));
  if (p.cpu_adam_params_per_s) {
    out << fmt::format("CPU Adam                       {:.3g} parameters/s\n",
                       *p.cpu_adam_params_per_s);
  }
  if (k.optimizer_fp32_states) {
    out << fmt::format("GPU AdamW, fp32 states         {:.1f} GB/s\n",
                       to_gbps(*k.optimizer_fp32_states));
  }
  if (k.optimizer_bf16_states) {
    out << fmt::format("GPU AdamW, bf16 states         {:.1f} GB/s\n",
                       to_gbps(*k.optimizer_bf16_states));
  }
  if (k.elementwise) {
    std::string ops;
    for (const auto& [op, rate] : k.elementwise_by_op) {
      ops += fmt::format("{}{} {:.0f}", ops.empty() ? "" : ", ", op, to_gbps(rate));
    }
    out << fmt::format("elementwise                    {:.1f} GB/s ({})\n",
                       to_gbps(*k.elementwise), ops);
  }
  if (p.launch.empty_kernel) {
    out << fmt::format("launch, empty kernel           {:.2f} us\n",
                       p.launch.empty_kernel->value() * 1e6);
  }
  if (p.launch.small_gemm) {
    out << fmt::format("{:<31}{:.2f} us\n",
                       fmt::format("launch, bf16 GEMM {}^3", p.launch.small_gemm_size),
                       p.launch.small_gemm->value() * 1e6);
  }
}

void print_skipped(const calibration::ProfileFit& fit, std::ostream& out) {
  if (fit.skipped.empty()) return;
  out << "\n";
  Table t({"skipped in run", "family", "points", "reason", "measured instead"});
  for (const calibration::SkippedReport& r : fit.skipped) {
    t.add({r.run, r.family, std::to_string(r.count), r.reason,
           r.fallback.empty() ? "-" : r.fallback});
  }
  out << t.render();
  out << "Skipped points are never fitted.\n";
}

void print_fit_table(const calibration::ProfileFit& fit, std::ostream& out) {
  print_curves(fit, out);
  print_families(fit, out);
  print_gemm_models(fit.profile, out);
  print_attention_models(fit.profile, out);
  print_rates(fit.profile, out);
  print_skipped(fit, out);
}

}  // namespace

void run_calibrate_import(const CalibrateImportOptions& options, std::ostream& out,
                          std::ostream& err) {
  if (options.files.empty()) throw InputError("calibrate import: no log files given");
  const request::ImportHints hints = hints_of(options);
  std::vector<request::CollectiveLog> logs;
  for (const std::string& file : options.files) {
    logs.push_back(request::read_collective_log(file, hints));
    for (const request::LogBlock& b : logs.back().blocks) {
      for (const std::string& w : b.warnings) err << "warning: " << file << ": " << w << "\n";
      if (b.nodes_assumed) {
        err << "note: " << file << " does not say how many nodes ran; assuming " << b.nodes << " ("
            << hints.gpus_per_node_if_unknown << " GPUs per node); pass --nodes to say otherwise\n";
      }
    }
  }
  if (options.out_dir) {
    const std::string& dir = *options.out_dir;
    const calibration::Run run = request::imported_run(logs, dir);
    request::write_run_dir(dir, run);
    err << "wrote " << (std::filesystem::path(dir) / request::kMeasurementsFile).string()
        << " (" << run.measurements.size() << " measurements) and "
        << (std::filesystem::path(dir) / request::kProvenanceFile).string() << "\n";
  }
  if (options.json) {
    out << request::imported_logs_json(logs);
  } else {
    print_import_table(logs, out);
  }
}

void run_calibrate_fit(const CalibrateFitOptions& options, std::ostream& out, std::ostream& err) {
  if (options.run_dirs.empty()) throw InputError("calibrate fit: no run directories given");
  if (options.out.empty()) throw InputError("calibrate fit: -o PROFILE.json is required");
  std::vector<calibration::Run> runs;
  for (const std::string& dir : options.run_dirs) runs.push_back(request::read_run_dir(dir));

  // The GPU: as given, else as the runs name it; the catalogue supplies its name, peaks and SMs.
  std::optional<std::string> gpu_name;
  if (!options.gpu.empty()) {
    gpu_name = options.gpu;
  } else {
    for (const calibration::Run& r : runs) {
      if (r.provenance.gpu && !gpu_name) gpu_name = r.provenance.gpu;
    }
  }
  std::optional<hardware::GpuSpec> spec;
  if (gpu_name) {
    try {
      spec = request::Catalog::builtin().resolve_gpu(*gpu_name).spec;
    } catch (const InputError&) {
      err << "note: GPU '" << *gpu_name
          << "' is not in the catalogue; the profile names it as given\n";
    }
  }

  calibration::ProfileFitOptions fit_options;
  fit_options.name =
      options.name.empty() ? std::filesystem::path(options.out).stem().string() : options.name;
  if (spec) {
    fit_options.gpu = spec->name;
  } else if (gpu_name) {
    fit_options.gpu = gpu_name;
  }
  fit_options.peaks = peaks_of(options, spec);
  if (spec && spec->hbm_bandwidth.value() > 0.0) fit_options.hbm = spec->hbm_bandwidth;
  fit_options.sm_count = options.sm_count > 0 ? options.sm_count : (spec ? spec->sm_count : 0);
  fit_options.nvlink_domain_gpus = spec ? spec->nvlink_domain_gpus : 0;
  if (options.sm_count < 0) throw InputError("--sm-count must not be negative");

  // Say which flag supplies a missing peak before the fit fails on it.
  std::set<std::string> missing;
  auto need = [&](std::string_view dtype_name) {
    const auto dtype = try_parse<hardware::GemmDtype>(dtype_name);
    const bool have =
        dtype && std::any_of(fit_options.peaks.begin(), fit_options.peaks.end(),
                             [&](const calibration::PeakThroughput& p) { return p.dtype == *dtype; });
    if (!have) missing.insert(std::string(dtype_name));
  };
  for (const calibration::Run& r : runs) {
    for (const calibration::GemmMeasurement& g : r.measurements.gemms) need(to_string(g.dtype));
    for (const calibration::AttentionMeasurement& a : r.measurements.attention) need(a.dtype);
  }
  if (!missing.empty()) {
    std::string list;
    for (const std::string& m : missing) list += (list.empty() ? "" : ", ") + m;
    throw InputError("the runs measured GEMM or attention throughput in " + list +
                     ", but the peak of the GPU" +
                     (gpu_name ? " '" + *gpu_name + "'" : std::string()) +
                     " is not known: pass --gpu with a catalogue GPU or --peak-tflops " +
                     *missing.begin() + "=TFLOPS");
  }

  const calibration::ProfileFit fit = calibration::fit_profile(runs, fit_options);
  request::write_profile(options.out, fit.profile);
  for (const std::string& note : fit.notes) err << "note: " << note << "\n";
  if (options.json) {
    out << request::profile_to_json(fit.profile);
    return;
  }
  out << fmt::format("Profile '{}' for {} from {} run(s), written to {}\n\n", fit.profile.name,
                     fit.profile.gpu, runs.size(), options.out);
  print_fit_table(fit, out);
}

CLI::App* setup_calibrate(CLI::App& parent) {
  CLI::App* calibrate = parent.add_subcommand(
      "calibrate", "Turn benchmark measurements into a hardware profile (docs/calibration.md)");
  calibrate->require_subcommand(1);

  auto import_opts = std::make_shared<CalibrateImportOptions>();
  CLI::App* import = calibrate->add_subcommand(
      "import", "Read nccl-tests or all_reduce_bench.py logs into measurements");
  import->add_option("files", import_opts->files, "Benchmark logs (stdout of the tools, or nccl-tests -J JSON reports)")
      ->required();
  import->add_option("-o,--output", import_opts->out_dir,
                     "Write RUN_DIR/measurements.jsonl and RUN_DIR/provenance.json");
  import->add_flag("--json", import_opts->json, "Print JSON instead of a table");
  import->add_option(
      "--collective", import_opts->collective,
      "Collective, when the log does not say (" + enum_choices<hardware::Collective>() + ")");
  import->add_option("--ranks", import_opts->ranks, "Ranks that ran, replacing what the log says");
  import->add_option("--nodes", import_opts->nodes, "Nodes that ran, replacing what the log says");
  import->add_option("--gpus-per-node", import_opts->gpus_per_node,
                     "For logs that do not list their hosts: nodes = ranks / this (default 8)");
  import->callback([import_opts] { run_calibrate_import(*import_opts, std::cout, std::cerr);
});

auto fit_opts = std::make_shared<CalibrateFitOptions>();
CLI::App* fit = calibrate->add_subcommand("fit", "Fit a hardware profile to calibration runs");
fit->add_option("run_dirs", fit_opts->run_dirs,
                "Run directories (measurements.jsonl + provenance.json)")
    ->required();
fit->add_option("-o,--output", fit_opts->out, "Profile JSON to write")->required();
fit->add_option("--gpu", fit_opts->gpu, "GPU of the profile: catalogue name or device string");
fit->add_option("--name", fit_opts->name, "Profile name (default: the output file's stem)");
fit->add_option("--peak-tflops", fit_opts->peak_tflops,
                "Dense peak per dtype, e.g. bf16=989,fp8=1979 (default: from the catalogue GPU)")
    ->expected(1)
    ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
    ->delimiter(',');
fit->add_option("--sm-count", fit_opts->sm_count,
                "SMs of the GPU (default: from the catalogue GPU)");
fit->add_flag("--json", fit_opts->json, "Print the profile JSON instead of a table");
fit->callback([fit_opts] { run_calibrate_fit(*fit_opts, std::cout, std::cerr); });
return calibrate;
}  // namespace trainplan::cli

}  // namespace trainplan::cli
