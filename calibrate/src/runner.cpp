#include "runner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <thread>
#include <variant>

#include "attention.hpp"
#include "comm.hpp"
#include "cpu_adam.hpp"
#include "elementwise.hpp"
#include "gemm.hpp"
#include "gpu_error.hpp"
#include "launch_overhead.hpp"
#include "measurement.hpp"
#include "membw.hpp"
#include "optimizer.hpp"
#include "progress.hpp"
#include "provenance.hpp"
#include "system_info.hpp"
#include "trainplan/request/files.hpp"

namespace trainplan::calibrate {
namespace {

struct ComputePlan {
  std::vector<std::pair<GemmDtype, GemmShape>> gemms;
  std::vector<AttentionShape> attention;
  std::vector<std::int64_t> d2d_bytes;
  std::vector<std::int64_t> host_bytes;
  std::vector<std::int64_t> adam_params;
  std::vector<std::pair<OptimizerPrecision, std::int64_t>> optimizer;
  std::vector<std::pair<ElementwiseOp, std::int64_t>> elementwise;
  std::vector<std::pair<LaunchOp, std::int64_t>> launch;  // with m = n = k for GEMMs

  [[nodiscard]] std::size_t points() const {
    // Attention: forward and backward, each through cuDNN and unfused.
    return gemms.size() + 4 * attention.size() + d2d_bytes.size() + 2 * host_bytes.size() +
           adam_params.size() + optimizer.size() + elementwise.size() + launch.size();
  }
};

ComputePlan plan_compute(const Options& o, bool fp8_supported, const Progress& progress) {
  ComputePlan p;
  if (o.gemm) {
    std::vector<GemmShape> shapes = model_gemm_shapes(o.model, o.tp);
    const std::vector<GemmShape> generic = generic_gemm_shapes(o.quick);
    shapes.insert(shapes.end(), generic.begin(), generic.end());
    for (const GemmDtype dt : o.gemm_dtypes) {
      if (dt == GemmDtype::kFp8 && !fp8_supported) {
        progress.note("fp8 GEMMs skipped: the device is older than compute capability 8.9");
        continue;
      }
      for (const auto& s : shapes) p.gemms.emplace_back(dt, s);
    }
  }
  if (o.attention) p.attention = attention_shapes(o.quick);
  if (o.membw) {
    p.d2d_bytes = o.quick ? std::vector<std::int64_t>{kGiB}
                          : std::vector<std::int64_t>{64 * kMiB, 256 * kMiB, kGiB};
    p.host_bytes = o.quick ? std::vector<std::int64_t>{256 * kMiB}
                           : std::vector<std::int64_t>{64 * kMiB, 256 * kMiB, kGiB};
  }
  if (o.cpu_adam) {
    p.adam_params = o.quick ? std::vector<std::int64_t>{10'000'000}
                            : std::vector<std::int64_t>{10'000'000, 100'000'000};
  }
  if (o.optimizer) {
    for (const OptimizerPrecision precision : all_values<OptimizerPrecision>()) {
      for (const std::int64_t n : o.optimizer_params) p.optimizer.emplace_back(precision, n);
    }
  }
  if (o.elementwise) {
    for (const ElementwiseOp op : all_values<ElementwiseOp>()) {
      for (const std::int64_t n : elementwise_sizes(o.quick)) p.elementwise.emplace_back(op, n);
    }
  }
  if (o.launch) {
    p.launch.emplace_back(LaunchOp::kEmptyKernel, 0);
    for (const std::int64_t n : launch_gemm_sizes()) p.launch.emplace_back(LaunchOp::kGemm, n);
  }
  return p;
}

std::string shape_text(const GemmShape& g) { return fmt::format("{}x{}x{}", g.m, g.n, g.k); }

std::string shape_text(const AttentionShape& a) {
  return fmt::format("b{} h{}/{} d{} s{}{}", a.batch, a.heads, a.kv_heads, a.head_dim, a.seq,
                     a.causal ? " causal" : "");
}

// Why a point has no measurement, and which point, if any, stands in for it.
struct Skipped {
  std::string reason;
  std::optional<Json> fallback;
  std::string fallback_what;  // for the progress line
};
// A point's finished line and what the progress line says of it.
struct Measured {
  Json line;
  std::string summary;
};
// What measuring one point gave: its line, or why there is none.
using Outcome = std::variant<Measured, Skipped>;

// A memory-bound kernel's line, summarised by its time and bandwidth.
Measured timed_traffic(Json line) {
  std::string summary = fmt::format("{:.1f} us, {:.1f} GB/s", line.at("time_us").get<double>(),
                                    line.at("GBps").get<double>());
  return {std::move(line), std::move(summary)};
}

// Skips a point already in the log (--resume) or measures it and logs the line, or a "skipped"
// line saying why there is none.
template <class Measure>
void point(MeasurementLog& log, Progress& progress, const Json& params, const std::string& what,
           Measure&& measure) {
  if (log.contains(params)) {
    progress.skip(1);
    return;
  }
  const Outcome outcome = measure();
  std::string summary;
  if (const auto* measured = std::get_if<Measured>(&outcome)) {
    log.append(measured->line);
    summary = measured->summary;
  } else {
    const auto& skipped = std::get<Skipped>(outcome);
    log.append(skipped_line(params, skipped.reason, skipped.fallback));
    summary = "skipped: " + skipped.reason;
    if (skipped.fallback) summary += "; falls back to " + skipped.fallback_what;
  }
  progress.step(fmt::format("{}  {}", what, summary));
}

void run_gemm(const ComputePlan& plan, const Options& o, int device, MeasurementLog& log,
              Progress& progress) {
  if (plan.gemms.empty()) return;
  GemmBench bench(device);
  for (const auto& [dt, shape] : plan.gemms) {
    const Json params = gemm_params(dt, shape);
    point(log, progress, params,
          fmt::format("gemm {} {} {}", to_string(dt), to_string(shape.label), shape_text(shape)),
          [&]() -> Outcome {
            try {
              const double t = bench.time_us(shape, dt, o.warmup, o.iters);
              const Json line = with_gemm_result(params, shape, t);
              return Measured{line, fmt::format("{:.1f} TFLOP/s", line["tflops"].get<double>())};
            } catch (const Unsupported& e) {
              return Skipped{e.what(), std::nullopt, ""};
            }
          });
  }
}

void run_attention(const ComputePlan& plan, const Options& o, int device, MeasurementLog& log,
                   Progress& progress) {
  if (plan.attention.empty()) return;
  AttentionBench bench(device);
  for (const AttentionShape& shape : plan.attention) {
    bool prepared = false;
    const auto prepare = [&] {
      if (!prepared) bench.set_shape(shape);
      prepared = true;
    };
    for (const AttentionImpl impl : {AttentionImpl::kCudnn, AttentionImpl::kUnfused}) {
      for (const AttentionPass pass : {AttentionPass::kFwd, AttentionPass::kBwd}) {
        const Json params = attention_params(pass, impl, shape);
        point(
            log, progress, params,
            fmt::format("attention {} {} {}", to_string(pass), to_string(impl), shape_text(shape)),
            [&]() -> Outcome {
              prepare();
              std::optional<double> t;
              std::string graph;
              if (impl == AttentionImpl::kCudnn) {
                std::string why_not;
                t = bench.cudnn_us(pass, o.warmup, o.iters, why_not);
                // A refusal is logged with the unfused point of the same shape as the stand-in,
                // which this loop measures next: the fallback is explicit in the log.
                if (!t) {
                  return Skipped{"cuDNN refused: " + why_not,
                                 attention_params(pass, AttentionImpl::kUnfused, shape),
                                 "the unfused point"};
                }
                graph = pass == AttentionPass::kBwd || bench.cudnn_forward_graph() == "composite"
                            ? " (cuDNN composite graph)"
                            : " (cuDNN SDPA_FWD operation)";
              } else if (bench.unfused_fits()) {
                t = bench.unfused_us(pass, o.warmup, o.iters);
              } else {
                return Skipped{"the s x s score buffers do not fit in device memory", std::nullopt,
                               ""};
              }
              const Json line = with_attention_result(params, shape, pass, *t);
              return Measured{line,
                              fmt::format("{:.1f} TFLOP/s{}", line["tflops"].get<double>(), graph)};
            });
      }
    }
  }
}

void run_membw(const ComputePlan& plan, const Options& o, int device, MeasurementLog& log,
               Progress& progress) {
  if (plan.d2d_bytes.empty() && plan.host_bytes.empty()) return;
  MemoryBench bench(device);
  for (const std::int64_t bytes : plan.d2d_bytes) {
    const Json params = memory_params(MemDirection::kD2D, bytes);
    point(log, progress, params, fmt::format("membw d2d {}", format_bytes(bytes)),
          [&]() -> Outcome {
            const auto t = bench.d2d_us(static_cast<std::size_t>(bytes), o.warmup, o.iters);
            // A copy reads and writes every byte; the faster of the two paths is recorded.
            const double traffic = 2.0 * static_cast<double>(bytes);
            const Json line =
                with_memory_result(params, traffic, std::min(t.memcpy_us, t.kernel_us));
            return Measured{line, fmt::format("{:.1f} GB/s (copy engine {:.1f}, copy kernel {:.1f})",
                                              line["GBps"].get<double>(), traffic / t.memcpy_us * 1e-3,
                                              traffic / t.kernel_us * 1e-3)};
          });
  }
  for (const std::int64_t bytes : plan.host_bytes) {
    for (const MemDirection dir : {MemDirection::kH2D, MemDirection::kD2H}) {
      const Json params = memory_params(dir, bytes);
      point(log, progress, params,
            fmt::format("membw {} pinned {}", to_string(dir), format_bytes(bytes)),
            [&]() -> Outcome {
              const auto n = static_cast<std::size_t>(bytes);
              const double t = dir == MemDirection::kH2D ? bench.h2d_us(n, o.warmup, o.iters)
                                                         : bench.d2h_us(n, o.warmup, o.iters);
              const Json line = with_memory_result(params, static_cast<double>(bytes), t);
              return Measured{line, fmt::format("{:.1f} GB/s", line["GBps"].get<double>())};
            });
    }
  }
}

void run_cpu_adam(const ComputePlan& plan, const Options& o, MeasurementLog& log,
                  Progress& progress) {
  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (const std::int64_t n : plan.adam_params) {
    const Json params = cpu_adam_params(n);
    point(log, progress, params, fmt::format("cpu_adam {} params, {} threads", n, threads),
          [&]() -> Outcome {
            const double t = time_cpu_adam_us(n, std::min(o.warmup, 2), o.iters, threads);
            const Json line = with_cpu_adam_result(params, n, t);
            return Measured{line, fmt::format("{:.3g} params/s", line["params_per_s"].get<double>())};
          });
  }
}

void run_optimizer(const ComputePlan& plan, const Options& o, int device, MeasurementLog& log,
                   Progress& progress) {
  if (plan.optimizer.empty()) return;
  OptimizerBench bench(device);
  for (const auto& [precision, n] : plan.optimizer) {
    const std::vector<std::int64_t> sizes = optimizer_tensor_sizes(n);
    const Json params = optimizer_params(precision, n, static_cast<std::int64_t>(sizes.size()));
    point(log, progress, params,
          fmt::format("optimizer adamw {} {:.3g} params in {} tensors", to_string(precision),
                      static_cast<double>(n), sizes.size()),
          [&]() -> Outcome {
            if (const auto why_not = bench.prepare(precision, sizes)) {
              return Skipped{"does not fit: " + *why_not, std::nullopt, ""};
            }
            return timed_traffic(with_optimizer_result(params, bench.step_us(o.warmup, o.iters)));
          });
  }
}

void run_elementwise(const ComputePlan& plan, const Options& o, int device, MeasurementLog& log,
                     Progress& progress) {
  if (plan.elementwise.empty()) return;
  ElementwiseBench bench(device);
  for (const auto& [op, n] : plan.elementwise) {
    const Json params = elementwise_params(op, n);
    point(log, progress, params, fmt::format("elementwise {} {} elements", to_string(op), n),
          [&]() -> Outcome {
            return timed_traffic(
                with_elementwise_result(params, bench.time_us(op, n, o.warmup, o.iters)));
          });
  }
}

void run_launch(const ComputePlan& plan, const Options& o, int device, MeasurementLog& log,
                Progress& progress) {
  if (plan.launch.empty()) return;
  LaunchBench bench(device);
  const int warmup_rounds = std::clamp(o.warmup, 1, 2);
  for (const auto& [op, n] : plan.launch) {
    const Json params = launch_params(op, n, o.launches);
    const std::string what = op == LaunchOp::kGemm
                                 ? fmt::format("launch gemm bf16 {}^3 x {}", n, o.launches)
                                 : fmt::format("launch empty kernel x {}", o.launches);
    point(log, progress, params, what, [&]() -> Outcome {
      const double t = op == LaunchOp::kGemm
                           ? bench.gemm_us(n, o.launches, warmup_rounds, o.iters)
                           : bench.empty_kernel_us(o.launches, warmup_rounds, o.iters);
      return Measured{with_launch_result(params, t), fmt::format("{:.2f} us per launch", t)};
    });
  }
}

}  // namespace

int require_cuda_device() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    throw NoCudaDevice(
        fmt::format("no CUDA device found (cudaGetDeviceCount: {})", cudaGetErrorString(status)));
  }
  if (count == 0) throw NoCudaDevice("no CUDA device found (cudaGetDeviceCount: 0 devices)");
  return count;
}

void run_calibrate(const Options& o, Bootstrap& boot, const std::string& command) {
  const bool rank0 = boot.is_rank0();
  const int device = boot.devices().at(0);

  // NCCL also serves the host list of a multi-process job, even when --comm is not selected.
  std::unique_ptr<CommSuite> comm;
  if (o.comm || static_cast<int>(boot.devices().size()) < boot.world_size()) {
    comm = std::make_unique<CommSuite>(boot, o.timeout_s);
  }

  const std::filesystem::path dir = o.run_dir;
  std::unique_ptr<MeasurementLog> log;
  Provenance prov;
  if (rank0) {
    std::filesystem::create_directories(dir);
    prov = run_provenance(device, boot.world_size(), command);
    prov.hosts = comm ? comm->hosts() : std::vector<std::string>{local_hostname()};
    prov.nodes = comm ? comm->nodes() : 1;
    request::write_file_atomically((dir / "provenance.json").string(), to_json(prov).dump(2) + "\n");
    request::write_file_atomically((dir / "topology.txt").string(), topology_text());
    log = std::make_unique<MeasurementLog>(dir / "measurements.jsonl", o.resume);
  }

  Progress planning(0, rank0);
  std::vector<CommPoint> comm_points;
  if (comm && o.comm) comm_points = comm->plan(o, planning);
  ComputePlan compute;
  if (rank0) {
    int major = 0;
    int minor = 0;
    TP_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    TP_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
    compute = plan_compute(o, major * 10 + minor >= 89, planning);
  }
  Progress progress(comm_points.size() + compute.points(), rank0);
  if (rank0 && o.resume) {
    progress.note(fmt::format("--resume: {} points already in {}", log->resumed_count(),
                              (dir / "measurements.jsonl").string()));
  }

  if (comm) {
    comm->run(comm_points, o, log.get(), progress);
    comm->shutdown();
  }
  if (!rank0) return;
  run_membw(compute, o, device, *log, progress);
  run_gemm(compute, o, device, *log, progress);
  run_attention(compute, o, device, *log, progress);
  run_optimizer(compute, o, device, *log, progress);
  run_elementwise(compute, o, device, *log, progress);
  run_launch(compute, o, device, *log, progress);
  run_cpu_adam(compute, o, *log, progress);

  request::write_file_atomically((dir / "provenance.json").string(), to_json(prov).dump(2) + "\n");
  progress.note(fmt::format("{} points measured; results in {}", progress.done(),
                            (dir / "measurements.jsonl").string()));
}

}  // namespace trainplan::calibrate
