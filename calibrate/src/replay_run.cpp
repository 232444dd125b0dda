#include "replay_run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "attention.hpp"
#include "cpu_adam.hpp"
#include "device.hpp"
#include "gpu_error.hpp"
#include "kernels.hpp"
#include "lt_matmul.hpp"
#include "optimizer.hpp"
#include "progress.hpp"
#include "provenance.hpp"
#include "replay_comm.hpp"
#include "sweep.hpp"
#include "system_info.hpp"
#include "trainplan/request/profile_json.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/request/catalog.hpp"
#include "trainplan/request/files.hpp"
#include "trainplan/reports/estimate_json.hpp"
#include "trainplan/reports/replay_json.hpp"
#include "trainplan/planner/replay.hpp"

namespace trainplan::calibrate {
namespace {

using reports::ReplayMeasurement;

struct Loaded {
  request::Catalog catalog;
  reports::ReplayInput in;
  std::optional<hardware::HardwareProfile> profile;
  planner::ReplayPlan plan;
};

Loaded load(const Options& o) {
  Loaded l{request::Catalog::builtin(), {}, std::nullopt, {}};
  l.in = reports::read_replay_input(l.catalog, o.replay_file, o.plan_index, o.plan_settings);
  if (!o.profile_file.empty()) l.profile = request::read_profile_option(o.profile_file);
  l.plan = planner::replay_plan(l.in.arch, l.in.counts, l.in.training, l.in.cluster,
                                l.profile ? &*l.profile : nullptr);
  return l;
}

// ---- Text ---------------------------------------------------------------------------------------

std::string bytes_text(double b) {
  return format_bytes(static_cast<std::int64_t>(std::llround(b)));
}

std::string shape_text(const planner::ReplayWork& w) {
  struct Visit {
    std::string operator()(const planner::GemmWork& g) const {
      return fmt::format("{}x{}x{}{} {}", g.m, g.n, g.k,
                         g.batch > 1 ? fmt::format(" x{}", g.batch) : "", g.dtype);
    }
    std::string operator()(const planner::AttentionWork& a) const {
      return fmt::format("b{} h{}/{} s{} d{}{}", a.batch, a.heads, a.kv_heads, a.seq, a.head_dim,
                         a.causal ? " causal" : "");
    }
    std::string operator()(const planner::StreamWork& s) const {
      return fmt::format("{} in {:.0f} kernels", bytes_text(s.bytes.value()),
                         std::max(1.0, std::round(s.kernels)));
    }
    std::string operator()(const planner::OptimizerWork& o) const {
      return fmt::format("{} {} {:.3g} params", trainplan::to_string(o.optimizer),
                         trainplan::to_string(o.implementation), o.params);
    }
    std::string operator()(const planner::CollectiveWork& c) const {
      return fmt::format("{} x{} ranks {}", bytes_text(c.size.value()), c.group.ranks,
                         trainplan::to_string(c.tier));
    }
    std::string operator()(const planner::ModelOnlyWork&) const { return "(model only)"; }
  };
  return std::visit(Visit{}, w);
}

std::string duration(Seconds s) {
  const double v = s.value();
  if (v >= 1.0) return fmt::format("{:.2f} s", v);
  if (v >= 1e-3) return fmt::format("{:.2f} ms", v * 1e3);
  return fmt::format("{:.1f} us", v * 1e6);
}

std::string signed_percent(double ratio) { return fmt::format("{:+.1f} %", 100.0 * (ratio - 1.0)); }

void print_report(const Loaded& l, const std::vector<ReplayMeasurement>& m) {
  const reports::ReplayInput& in = l.in;
  const planner::ReplayPlan& p = l.plan;
  const model::Training& t = in.training;
  fmt::print(
      "Replay of {} on {} ({} x {}): {} {} {}, tp {} pp {} dp {}, micro-batch {} x {} accumulated, "
      "seq {}, checkpointing {}\n",
      in.arch.name, in.cluster.gpu.name, in.cluster.nodes, in.cluster.gpus_per_node,
      trainplan::to_string(t.method), trainplan::to_string(t.precision),
      trainplan::to_string(t.strategy), p.layout.tp, p.layout.pp, p.layout.dp, t.micro_batch,
      t.grad_accum, t.seq, trainplan::to_string(t.checkpointing));
  fmt::print("{:<50} {:<28} {:>7} {:>10} {:>10} {:>8} {:>10}\n", "component", "shape", "count",
             "predicted", "measured", "error", "total");
  for (std::size_t i = 0; i < p.components.size(); ++i) {
    const planner::ReplayComponent& c = p.components[i];
    const std::optional<Seconds> t_meas = i < m.size() ? m[i].time : std::nullopt;
    const std::string measured = t_meas ? duration(*t_meas) : std::string("-");
    const std::string error =
        t_meas && c.predicted.value() > 0.0 ? signed_percent(*t_meas / c.predicted) : "";
    const Seconds total = t_meas ? *t_meas * c.count : c.predicted_total();
    fmt::print("{:<50} {:<28} {:>7.4g} {:>10} {:>10} {:>8} {:>10}\n", c.name, shape_text(c.work),
               c.count, duration(c.predicted), measured, error, duration(total));
  }
  std::vector<std::optional<Seconds>> times;
  for (const auto& x : m) times.push_back(x.time);
  times.resize(p.components.size());
  const planner::ReplayProjection pr = planner::project(p, times);
  fmt::print("\nstep, predicted (trainplan's time model):        {}\n",
             duration(pr.predicted_step));
  if (pr.measured > 0)
    fmt::print("step, projected with the measured components:    {}  ({} vs predicted)\n",
               duration(pr.projected_step), signed_percent(pr.projected_step / pr.predicted_step));
  if (pr.measured > 0)
    fmt::print("components one after another: predicted {}, measured {}\n",
               duration(pr.predicted_serial), duration(pr.measured_serial));
  else
    fmt::print("components one after another: predicted {}\n", duration(pr.predicted_serial));
  if (in.recorded_step_s) {
    const double recorded = *in.recorded_step_s;
    if (std::abs(recorded / pr.predicted_step.value() - 1.0) > 0.005)
      fmt::print(
          "warning: the file's step time is {} but this re-evaluation gives {}: they differ in "
          "options the file does not record (a hardware profile, --inter-node, the attention "
          "kernel, ...); --profile and --plan-set give them\n",
          duration(Seconds(recorded)), duration(pr.predicted_step));
  }
  if (!m.empty())
    fmt::print("{} components measured, {} run on GPUs not measured, {} model only\n", pr.measured,
               pr.unmeasured, p.components.size() - pr.measured - pr.unmeasured);
  if (!in.assumed.empty()) {
    std::string a;
    for (const auto& s : in.assumed) a += (a.empty() ? "" : ", ") + s;
    fmt::print("assumed (not in the file; --plan-set KEY=VALUE to change): {}\n", a);
  }
  for (const auto& n : p.notes) fmt::print("note: {}\n", n);
  // One line per distinct note, naming the components it concerns.
  std::vector<std::pair<std::string, std::string>> notes;
  for (std::size_t i = 0; i < m.size(); ++i) {
    if (m[i].note.empty()) continue;
    auto it = std::find_if(notes.begin(), notes.end(),
                           [&](const auto& n) { return n.first == m[i].note; });
    if (it == notes.end()) {
      notes.emplace_back(m[i].note, p.components[i].name);
    } else {
      it->second += ", " + p.components[i].name;
    }
  }
  for (const auto& [note, names] : notes) fmt::print("note: {}: {}\n", names, note);
  std::fflush(stdout);
}

// ---- Kernels ------------------------------------------------------------------------------------

constexpr std::size_t kStreamRegion = std::size_t{1} << 30;  // > any L2: copies stream from HBM

// Copy kernels moving `traffic` bytes (reads plus writes) in about `kernels` launches, each over
// the next slice of a region larger than the L2 cache.
class Streamer {
 public:
  Streamer(double traffic, double kernels) {
    const double launches = std::max(1.0, std::round(kernels));
    double per = std::max(16.0, traffic / (2.0 * launches));
    // A launch above the region is split into several.
    const double splits = std::ceil(per / static_cast<double>(kStreamRegion));
    per /= splits;
    per_ = static_cast<std::size_t>(per) / 16 * 16;
    per_ = std::max<std::size_t>(per_, 16);
    launches_ = static_cast<std::size_t>(launches * splits);
    const std::size_t slots =
        std::clamp<std::size_t>(kStreamRegion / per_, 1, std::max<std::size_t>(launches_, 1));
    region_ = slots * per_;
    src_ = DeviceBuffer(region_);
    dst_ = DeviceBuffer(region_);
  }
  [[nodiscard]] static double memory(double traffic) {
    return 2.0 * std::min(traffic / 2.0 + 16.0, static_cast<double>(kStreamRegion));
  }
  void prepare(cudaStream_t st) const { TP_CUDA(cudaMemsetAsync(src_.get(), 1, region_, st)); }
  void enqueue(cudaStream_t st) const {
    for (std::size_t i = 0; i < launches_; ++i) {
      const std::size_t off = (i * per_) % region_;
      copy_kernel(dst_.as<char>() + off, src_.as<char>() + off, per_, st);
    }
  }
  [[nodiscard]] std::string what() const {
    return fmt::format("{} copy kernels of {}", launches_,
                       format_bytes(static_cast<std::int64_t>(per_)));
  }

 private:
  std::size_t per_ = 16;
  std::size_t launches_ = 1;
  std::size_t region_ = 16;
  DeviceBuffer src_, dst_;
};

class Kernels {
 public:
  Kernels(int device, const Options& o) : ctx_(device), warmup_(o.warmup), iters_(o.iters) {}

  ReplayMeasurement gemm(const planner::GemmWork& g) {
    const DeviceGuard guard(ctx_.device);
    cudaDataType_t type = CUDA_R_16BF;
    cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
    ElemType elem = ElemType::kBf16;
    std::size_t size = 2;
    if (g.dtype == "fp16") {
      type = CUDA_R_16F;
      elem = ElemType::kF16;
    } else if (g.dtype == "tf32") {
      type = CUDA_R_32F;
      compute = CUBLAS_COMPUTE_32F_FAST_TF32;
      elem = ElemType::kF32;
      size = 4;
    }
    const auto count = [](std::int64_t a, std::int64_t b, std::int64_t batch) {
      return static_cast<std::size_t>(a) * static_cast<std::size_t>(b) *
             static_cast<std::size_t>(batch);
    };
    const std::size_t na = count(g.m, g.k, g.batch);
    const std::size_t nb = count(g.k, g.n, g.batch);
    const std::size_t nc = count(g.m, g.n, g.batch);
    const double need = static_cast<double>((na + nb + nc) * size);
    if (const auto why = too_big(need)) return {std::nullopt, "", *why};
    const DeviceBuffer a(na * size), b(nb * size), c(nc * size);
    cudaStream_t st = ctx_.stream.get();
    fill_random(a.get(), na, elem, 61, 1.0f, st);
    fill_random(b.get(), nb, elem, 62, 1.0f, st);
    MatmulSpec spec;
    spec.a = {type, g.a_transposed ? g.k : g.m, g.a_transposed ? g.m : g.k, g.a_transposed,
              g.m * g.k};
    spec.b = {type, g.b_transposed ? g.n : g.k, g.b_transposed ? g.k : g.n, g.b_transposed,
              g.k * g.n};
    spec.c = {type, g.m, g.n, false, g.m * g.n};
    spec.batch = static_cast<int>(g.batch);
    spec.compute = compute;
    try {
      const LtMatmul mm(ctx_.lt.get(), spec, ctx_.workspace.bytes());
      const double us = time_on_stream_us(
          st, warmup_, iters_, [&] { mm.run(a.get(), b.get(), c.get(), ctx_.workspace.get(), st); });
      return {Seconds(us * 1e-6),
              fmt::format("cuBLASLt {}{}", g.dtype, g.batch > 1 ? ", strided batch" : ""), ""};
    } catch (const Unsupported& e) {
      return {std::nullopt, "", e.what()};
    }
  }

  ReplayMeasurement attention(const planner::AttentionWork& w, Precision precision) {
    const DeviceGuard guard(ctx_.device);
    const AttentionShape shape{w.batch, w.heads, w.kv_heads, w.head_dim, w.seq, w.causal};
    if (!attention_) attention_ = std::make_unique<AttentionBench>(ctx_.device);
    if (!shape_ || *shape_ != shape) {
      shape_.reset();
      attention_->set_shape(shape);
      shape_ = shape;
    }
    const AttentionPass pass = w.backward ? AttentionPass::kBwd : AttentionPass::kFwd;
    const bool bf16 = precision == Precision::bf16_mixed || precision == Precision::bf16_true;
    const std::string note = bf16 ? "" : "run in bf16 (the attention benchmark's dtype)";
    std::string why_not;
    if (const auto us = attention_->cudnn_us(pass, warmup_, iters_, why_not)) {
      const std::string graph =
          pass == AttentionPass::kBwd || attention_->cudnn_forward_graph() == "composite"
              ? "composite graph"
              : "SDPA_FWD operation";
      return {Seconds(*us * 1e-6), "cuDNN SDPA (" + graph + ")", note};
    }
    const std::string refused = "cuDNN refused: " + why_not;
    if (!attention_->unfused_fits())
      return {std::nullopt, "", refused + "; the unfused stand-in does not fit in memory"};
    const double us = attention_->unfused_us(pass, warmup_, iters_);
    return {Seconds(us * 1e-6), "unfused stand-in (cuBLASLt + softmax)",
            refused + (note.empty() ? "" : "; " + note)};
  }

  ReplayMeasurement stream(const planner::StreamWork& w) {
    const DeviceGuard guard(ctx_.device);
    if (const auto why = too_big(Streamer::memory(w.bytes.value())))
      return {std::nullopt, "", *why};
    const Streamer s(w.bytes.value(), w.kernels);
    cudaStream_t st = ctx_.stream.get();
    s.prepare(st);
    const double us = time_on_stream_us(st, warmup_, iters_, [&] { s.enqueue(st); });
    // The model prices eager PyTorch's kernels, many strided or small, below streaming bandwidth.
    return {
        Seconds(us * 1e-6), s.what(),
        "full-width copies of the same bytes and launches: a floor for the framework's kernels"};
  }

  ReplayMeasurement optimizer(const planner::OptimizerWork& w) {
    const DeviceGuard guard(ctx_.device);
    const OptimizerSlice x = optimizer_slice(w);
    if (x.params < 1.0) return {std::nullopt, "", "does not fit in device memory"};
    if (!x.fused && x.stream_bytes <= 0.0)
      return {std::nullopt, "", "the step moves no bytes on the GPU"};
    const double scale = w.params / x.params;
    cudaStream_t st = ctx_.stream.get();

    std::optional<Streamer> streamer;
    // Non-fused implementations make several passes over the states (one per foreach op): one
    // launch per two state-widths of traffic.
    if (x.stream_bytes > 0.0)
      streamer.emplace(x.params * x.stream_bytes,
                       x.fused ? 1.0 : std::ceil(w.bytes_per_param / (2.0 * x.state_width)));
    if (streamer) streamer->prepare(st);
    std::string method;
    double us = 0.0;
    if (x.fused) {
      std::tie(us, method) = fused_adamw_us(w, x, streamer);
    } else {
      us = time_on_stream_us(st, warmup_, iters_, [&] { streamer->enqueue(st); });
      method = streamer->what() + " moving the step's bytes";
    }
    std::string note;
    if (scale > 1.0 + 1e-9)
      note = fmt::format("run on {:.3g} parameters (device memory), time scaled x{:.3g}", x.params,
                         scale);
    return {Seconds(us * 1e-6 * scale), method, note};
  }

 private:
  // What of an optimizer step runs on the GPU: a fused AdamW kernel (and copies for the rest of
  // its bytes), or copies alone, over as many parameters as fit; the time is scaled to the whole
  // step (it is memory-bound).
  struct OptimizerSlice {
    bool fused = false;
    ElemType state = ElemType::kF32;
    ElemType grad = ElemType::kF32;
    double state_width = 4.0;
    double params = 0.0;
    double stream_bytes = 0.0;  // per parameter, moved by copy kernels
  };

  [[nodiscard]] static OptimizerSlice optimizer_slice(const planner::OptimizerWork& w) {
    OptimizerSlice x;
    const bool adam = w.optimizer == Optimizer::adam || w.optimizer == Optimizer::adamw;
    x.fused = adam && (w.implementation == OptimizerImpl::fused ||
                       w.implementation == OptimizerImpl::deepspeed_fused);
    x.state = w.state_bytes >= 4.0 ? ElemType::kF32 : ElemType::kBf16;
    x.grad = x.state == ElemType::kBf16 ? ElemType::kBf16
                                        : (w.grad_bytes >= 4.0 ? ElemType::kF32 : ElemType::kBf16);
    x.state_width = x.state == ElemType::kF32 ? 4.0 : 2.0;
    const double gb = x.grad == ElemType::kF32 ? 4.0 : 2.0;
    const double per_param = x.fused ? 3.0 * x.state_width + gb : 0.0;
    const double kernel_bytes = x.fused ? 6.0 * x.state_width + gb : 0.0;  // p, m, v read and written; g read
    x.stream_bytes = std::max(0.0, w.bytes_per_param - kernel_bytes);
    const double free_bytes = 0.8 * static_cast<double>(free_device_memory());
    x.params = w.params;
    const double need = x.params * per_param + Streamer::memory(x.params * x.stream_bytes);
    if (need > free_bytes) x.params = std::floor(x.params * free_bytes / need);
    return x;
  }

  // One multi-tensor AdamW launch over the slice's parameters, split into the step's tensors,
  // then the streamer's copies: its time and how it ran.
  [[nodiscard]] std::pair<double, std::string> fused_adamw_us(const planner::OptimizerWork& w,
                                                             const OptimizerSlice& x,
                                                             const std::optional<Streamer>& streamer) {
    cudaStream_t st = ctx_.stream.get();
    const auto n = static_cast<std::int64_t>(x.params);
    const auto tensors = static_cast<std::int64_t>(std::clamp(std::round(w.tensors), 1.0, x.params));
    const std::vector<std::int64_t> sizes = optimizer_tensor_sizes(n, (n + tensors - 1) / tensors);
    const std::vector<TensorChunk> chunks = chunk_table(sizes);
    const auto elems = static_cast<std::size_t>(n);
    const auto width = [](ElemType t) { return t == ElemType::kF32 ? std::size_t{4} : 2; };
    const DeviceBuffer p(elems * width(x.state)), g(elems * width(x.grad)),
        m(elems * width(x.state)), v(elems * width(x.state)),
        table(chunks.size() * sizeof(TensorChunk));
    TP_CUDA(cudaMemcpyAsync(table.get(), chunks.data(), table.bytes(), cudaMemcpyHostToDevice, st));
    fill_random(p.get(), elems, x.state, 71, 0.02f, st);
    fill_random(g.get(), elems, x.grad, 72, 1e-3f, st);
    TP_CUDA(cudaMemsetAsync(m.get(), 0, m.bytes(), st));
    TP_CUDA(cudaMemsetAsync(v.get(), 0, v.bytes(), st));
    TP_CUDA(cudaStreamSynchronize(st));
    const AdamWConfig cfg;
    int step = 0;
    const double us = time_on_stream_us(st, warmup_, iters_, [&] {
      adamw_multi_tensor(x.state, x.grad, x.state, p.get(), g.get(), m.get(), v.get(),
                         table.as<TensorChunk>(), chunks.size(), adamw_kernel_scalars(cfg, ++step),
                         st);
      if (streamer) streamer->enqueue(st);
    });
    return {us, fmt::format("multi-tensor AdamW kernel ({} tensors){}", sizes.size(),
                            streamer ? " + " + streamer->what() : "")};
  }

  [[nodiscard]] static std::optional<std::string> too_big(double need) {
    const auto free_bytes = static_cast<double>(free_device_memory());
    if (need <= 0.85 * free_bytes) return std::nullopt;
    return fmt::format("does not fit: {:.2f} GB of buffers, {:.2f} GB free", need / 1e9,
                       free_bytes / 1e9);
  }

  LtContext ctx_;
  int warmup_;
  int iters_;
  std::unique_ptr<AttentionBench> attention_;
  std::optional<AttentionShape> shape_;
};

Collective bench_collective(hardware::Collective c) {
  switch (c) {
    case hardware::Collective::all_reduce:
      return Collective::kAllReduce;
    case hardware::Collective::all_gather:
      return Collective::kAllGather;
    case hardware::Collective::reduce_scatter:
      return Collective::kReduceScatter;
    case hardware::Collective::all_to_all:
      return Collective::kAllToAll;
    case hardware::Collective::broadcast:
      return Collective::kBroadcast;
    case hardware::Collective::send_recv:
      return Collective::kSendRecv;
  }
  return Collective::kAllReduce;
}

request::Json provenance_json(const Provenance& p) { return request::Json::parse(to_json(p).dump()); }

void write_result(const Options& o, const Loaded& l, const std::vector<ReplayMeasurement>& m,
                  const request::Json& provenance) {
  if (o.run_dir.empty()) return;
  const std::filesystem::path dir = o.run_dir;
  std::filesystem::create_directories(dir);
  const request::Json j = reports::replay_json(l.in, l.plan, m, provenance);
  request::write_file_atomically((dir / "replay.json").string(), j.dump(2) + "\n");
  fmt::print(stderr, "wrote {}\n", (dir / "replay.json").string());
}

// Where the job is not the plan's (another GPU, another world size), said before anything runs.
void note_differences(const Loaded& l, const Bootstrap& boot, int device, const Progress& progress) {
  const std::string here = gpu_name(device);
  std::string here_catalogued = here;
  try {
    here_catalogued = l.catalog.resolve_gpu(here).spec.name;
  } catch (const InputError&) {
  }
  if (here_catalogued != l.in.cluster.gpu.name)
    progress.note(
        fmt::format("the plan is for {}, this GPU is {}: the measurements are this GPU's, the "
                    "predictions the plan's",
                    l.in.cluster.gpu.name, here));
  if (boot.world_size() != l.plan.layout.world)
    progress.note(
        fmt::format("the plan runs on {} GPUs, this job has {} ranks: collectives whose groups "
                    "do not fit in the job are not measured",
                    l.plan.layout.world, boot.world_size()));
}

// The plan's collectives among the job's ranks, each where the job holds its groups, into `m`.
// Collective over all ranks. Returns the job's hosts.
std::vector<std::string> measure_collectives(const planner::ReplayPlan& plan, const Options& o,
                                             const Bootstrap& boot, std::size_t collectives,
                                             std::vector<ReplayMeasurement>& m, Progress& progress) {
  if (boot.world_size() <= 1 || collectives == 0) {
    for (std::size_t i = 0; i < plan.components.size(); ++i) {
      const auto* w = std::get_if<planner::CollectiveWork>(&plan.components[i].work);
      if (w == nullptr) continue;
      m[i].note = fmt::format(
          "one GPU in the job: launch the replay on {} ranks (mpirun, srun or torchrun) to measure "
          "it",
          w->stride * w->group.ranks);
      progress.step(fmt::format("{}  not measured: one GPU in the job", plan.components[i].name));
    }
    return {local_hostname()};
  }
  ReplayComm comm(boot, o.timeout_s);
  for (std::size_t i = 0; i < plan.components.size(); ++i) {
    const auto* w = std::get_if<planner::CollectiveWork>(&plan.components[i].work);
    if (w == nullptr) continue;
    const std::string what = plan.components[i].name;
    if (!comm.fits(w->group.ranks, w->stride)) {
      m[i].note = fmt::format("needs {} ranks {} apart; the job has {}", w->group.ranks,
                              w->stride, comm.world());
      progress.step(fmt::format("{}  not measured: {}", what, m[i].note));
      continue;
    }
    const double us = comm.time_us(bench_collective(w->collective),
                                   static_cast<std::int64_t>(std::llround(w->size.value())),
                                   w->group.ranks, w->stride, o.warmup, o.iters);
    m[i] = {
        Seconds(us * 1e-6),
        fmt::format("NCCL, groups of {} ranks {} apart, all at once", w->group.ranks, w->stride),
        ""};
    progress.step(fmt::format("{}  {}  (predicted {})", what, duration(*m[i].time),
                              duration(plan.components[i].predicted)));
  }
  comm.shutdown();
  return comm.hosts();
}

// The plan's kernels on this process's first GPU, into `m`; one that fails is reported, not fatal.
void measure_kernels(const Loaded& l, const Options& o, int device,
                     std::vector<ReplayMeasurement>& m, Progress& progress) {
  const planner::ReplayPlan& plan = l.plan;
  Kernels k(device, o);
  for (std::size_t i = 0; i < plan.components.size(); ++i) {
    const planner::ReplayComponent& c = plan.components[i];
    if (!c.runs_on_gpu() || std::holds_alternative<planner::CollectiveWork>(c.work)) continue;
    try {
      if (const auto* g = std::get_if<planner::GemmWork>(&c.work)) {
        m[i] = k.gemm(*g);
      } else if (const auto* a = std::get_if<planner::AttentionWork>(&c.work)) {
        m[i] = k.attention(*a, l.in.training.precision);
      } else if (const auto* s = std::get_if<planner::StreamWork>(&c.work)) {
        m[i] = k.stream(*s);
      } else if (const auto* op = std::get_if<planner::OptimizerWork>(&c.work)) {
        m[i] = k.optimizer(*op);
      }
    } catch (const GpuError& e) {
      m[i] = {std::nullopt, "", std::string("failed: ") + e.what()};
    }
    progress.step(fmt::format(
        "{}  {}  {}", c.name, shape_text(c.work),
        m[i].time ? fmt::format("{} (predicted {})", duration(*m[i].time), duration(c.predicted))
                  : "not measured: " + m[i].note));
  }
}

}  // namespace

void run_replay_dry(const Options& o) {
  const Loaded l = load(o);
  print_report(l, {});
  write_result(o, l, {}, nullptr);
}

void run_replay(const Options& o, Bootstrap& boot, const std::string& command) {
  const Loaded l = load(o);
  const planner::ReplayPlan& plan = l.plan;
  const bool rank0 = boot.is_rank0();
  const int device = boot.devices().at(0);
  std::vector<ReplayMeasurement> m(plan.components.size());
  std::size_t collectives = 0;
  std::size_t kernels = 0;
  for (const auto& c : plan.components) {
    if (std::holds_alternative<planner::CollectiveWork>(c.work))
      ++collectives;
    else if (c.runs_on_gpu())
      ++kernels;
  }
  Progress progress(collectives + kernels, rank0);
  if (rank0) note_differences(l, boot, device, progress);
  const std::vector<std::string> hosts = measure_collectives(plan, o, boot, collectives, m, progress);
  if (!rank0) return;
  measure_kernels(l, o, device, m, progress);

  Provenance prov = run_provenance(device, boot.world_size(), command);
  prov.hosts = hosts;
  prov.nodes = static_cast<int>(hosts.size());
  prov.sources = {fmt::format("replay of {} (plan {})", o.replay_file, o.plan_index)};
  print_report(l, m);
  write_result(o, l, m, provenance_json(prov));
}

}  // namespace trainplan::calibrate
