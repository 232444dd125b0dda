#include "display.hpp"

#include <QLocale>

#include "trainplan/reports/text.hpp"
#include <cmath>
#include <iterator>

namespace trainplan::gui {

QString gib_text(Bytes b, int decimals) {
  const double g = to_gib(b);
  if (std::abs(g) >= 1024.0 * 1024.0) return QStringLiteral("%1 PiB").arg(g / (1024.0 * 1024.0), 0, 'f', 1);
  if (std::abs(g) >= 1024.0) return QStringLiteral("%1 TiB").arg(g / 1024.0, 0, 'f', 1);
  return QStringLiteral("%1 GiB").arg(g, 0, 'f', decimals);
}

QString bytes_text(Bytes b) { return QString::fromStdString(reports::bytes_text(b)); }

QString seconds_text(Seconds s, std::optional<Seconds> scale) {
  const double v = s.value();
  const double a = std::abs(scale ? scale->value() : v);
  if (a >= 100) return QStringLiteral("%1 s").arg(v, 0, 'f', 0);
  if (a >= 1) return QStringLiteral("%1 s").arg(v, 0, 'f', 2);
  if (a >= 1e-3 || a == 0) return QStringLiteral("%1 ms").arg(v * 1e3, 0, 'f', a >= 0.1 || v == 0 ? 0 : 1);
  return QStringLiteral("%1 µs").arg(v * 1e6, 0, 'f', 0);
}

QString duration_text(Seconds s) {
  const double v = s.value();
  if (v >= 2.0 * 86400.0) return QStringLiteral("%1 days").arg(v / 86400.0, 0, 'f', 1);
  if (v >= 2.0 * 3600.0) return QStringLiteral("%1 hours").arg(v / 3600.0, 0, 'f', 1);
  if (v >= 120.0) return QStringLiteral("%1 minutes").arg(v / 60.0, 0, 'f', 0);
  return seconds_text(s);
}

QString rate_text(double per_s, const QString& unit) {
  const double a = std::abs(per_s);
  if (a >= 1e9) return QStringLiteral("%1G %2").arg(per_s / 1e9, 0, 'f', 2).arg(unit);
  if (a >= 1e6) return QStringLiteral("%1M %2").arg(per_s / 1e6, 0, 'f', 2).arg(unit);
  if (a >= 1e4) return QStringLiteral("%1k %2").arg(per_s / 1e3, 0, 'f', 1).arg(unit);
  return QStringLiteral("%1 %2").arg(per_s, 0, 'f', a >= 100 ? 0 : 2).arg(unit);
}

QString percent_text(double fraction) {
  return QStringLiteral("%1 %").arg(fraction * 100.0, 0, 'f', 1);
}

QString count_text(std::int64_t n) {
  const double v = static_cast<double>(n);
  if (v >= 1e9) return QStringLiteral("%1B").arg(v / 1e9, 0, 'f', 2);
  if (v >= 1e6) return QStringLiteral("%1M").arg(v / 1e6, 0, 'f', 1);
  if (v >= 1e3) return QStringLiteral("%1K").arg(v / 1e3, 0, 'f', 1);
  return QString::number(n);
}

QString thousands_text(std::int64_t n) {
  QLocale c(QLocale::English);
  return c.toString(static_cast<qlonglong>(n));
}

QString strategy_label(Strategy s) {
  const std::string_view name = display_name(s);
  return QString::fromUtf8(name.data(), static_cast<qsizetype>(name.size()));
}

QString strategy_label(const model::Training& t) { return QString::fromStdString(model::strategy_name(t)); }

namespace {

struct TermText {
  Term term;
  const char* label;
  const char* meaning;
  const char* source;
};

// Every term's label, meaning and source.
constexpr TermText kTerms[] = {
    {Term::weights, "weights",
     "Parameters held by one GPU at the memory peak, in the dtype they are stored in (fp32 under fp32 and "
     "the mixed precisions, 16-bit under *-true, 4/8-bit base weights under QLoRA), split by tensor and "
     "pipeline parallelism and sharded by ZeRO-3/FSDP.",
     "ZeRO, Rajbhandari et al. 2020 (arXiv:1910.02054) §3; QLoRA, Dettmers et al. 2023 (arXiv:2305.14314) "
     "§3; docs/formulas.md, Model states"},
    {Term::gradients, "gradients",
     "Gradients of the trainable parameters as they stand at the peak; sharded by ZeRO-2/3 and FSDP. Only "
     "adapters carry gradients under LoRA and QLoRA.",
     "ZeRO (arXiv:1910.02054) §3 and §5.2; LoRA, Hu et al. 2021 (arXiv:2106.09685); docs/formulas.md, Model "
     "states"},
    {Term::optimizer_state, "optimizer",
     "Optimizer state on the GPU: Adam(W) moments (two fp32 values per trainable parameter), 8-bit moments "
     "for the 8-bit optimizers, factored moments for Adafactor, one momentum for SGD with momentum, plus "
     "the fp32 master copy where the precision keeps one. Sharded by ZeRO-1/2/3 and FSDP; moved to the host "
     "by optimizer offload.",
     "ZeRO (arXiv:1910.02054) §3.1 (K = 12 bytes per parameter for mixed-precision Adam); Dettmers et al. "
     "2022, 8-bit optimizers (arXiv:2110.02861); Shazeer & Stern 2018, Adafactor (arXiv:1804.04235); "
     "docs/formulas.md, Model states"},
    {Term::activations, "activations",
     "Tensors autograd keeps from forward to backward for the micro-batches in flight, after the "
     "checkpointing policy, plus the embedding output, logits and the loss's fp32 upcast.",
     "Korthikanti et al. 2022 (arXiv:2205.05198) Table 2 (Megatron accounting); Hugging Face models op by "
     "op, checked against the PyTorch oracle (docs/formulas.md, Activations)"},
    {Term::buffers, "buffers",
     "Framework buffers alive at the peak: DDP gradient buckets, ZeRO/FSDP parameters gathered for compute "
     "and their gradients before the reduce-scatter, the optimizer step's temporary.",
     "Zhao et al. 2023, PyTorch FSDP (arXiv:2304.11277) §3; DeepSpeed zero/config.py bucket sizes; "
     "docs/formulas.md, Buffers, phases and the peak"},
    {Term::overhead, "overhead",
     "What nvidia-smi shows beyond the allocator's peak: the CUDA context, NCCL communicators (with more "
     "than one GPU) and the caching allocator's reserve above the peak.",
     "stas00/ml-engineering, training/performance (CUDA context, torch.distributed memory); "
     "MemoryConventions in planner/memory.hpp; docs/formulas.md, Buffers, phases and the peak"},
    {Term::peak_allocated, "peak allocated",
     "weights + gradients + optimizer + activations + buffers at the peak: what "
     "torch.cuda.max_memory_allocated() reports.",
     "PyTorch CUDA caching allocator documentation"},
    {Term::device_total, "device total",
     "Peak allocated + overhead: what nvidia-smi reports. Verdict: fits when this is at most the usable "
     "capacity; tight when only the peak and the cache the allocator cannot release fit (it frees cached "
     "blocks and retries before out-of-memory); no otherwise.",
     "docs/formulas.md, The verdict: fits / tight / no"},
    {Term::usable, "usable capacity",
     "Memory the framework can allocate on this GPU (torch.cuda.get_device_properties total), below the "
     "datasheet capacity.",
     "GPU catalogue, data/gpus/ (each number with its datasheet)"},
    {Term::headroom, "headroom",
     "Usable capacity minus device total: room left for a larger micro-batch or longer sequences. Negative "
     "means out of memory.",
     "definition: usable capacity (data/gpus/) minus the device total"},
    {Term::host, "host memory per node",
     "CPU memory per node for offloaded optimizer state and parameters (DeepSpeed's estimators add a 1.5x "
     "buffer).",
     "ZeRO-Offload, Ren et al. 2021 (arXiv:2101.06840); DeepSpeed stage3.py "
     "estimate_zero3_model_states_mem_needs"},
    {Term::max_micro_batch, "largest micro-batch",
     "The largest micro-batch whose device total still fits, with every other option as set.",
     "planner::max_micro_batch (planner/fit.hpp)"},
    {Term::step, "step time",
     "One optimizer step over all micro-batches: compute + memory-bound + host + recompute + exposed "
     "communication + bubble + optimizer + exposed offload transfers + DPO's reference forward.",
     "planner/estimate.hpp TimeBreakdown"},
    {Term::compute, "compute",
     "Forward and backward matrix multiplies and attention kernels of all micro-batches on this GPU: FLOPs "
     "over the achieved FLOP/s.",
     "Narayanan et al. 2021 (arXiv:2104.04473) eq. 3; Kaplan et al. 2020 (arXiv:2001.08361) §2.1 (6N FLOPs "
     "per token); planner/evaluator.hpp (docs/formulas.md, Time and communication)"},
    {Term::memory_bound, "memory-bound",
     "Elementwise, cast, copy, norm and loss kernels of forward and backward: the bytes each op of the "
     "implementation reads and writes over the bandwidth such kernels reach, each at least a minimum kernel "
     "time.",
     "Williams, Waterman & Patterson 2009 (roofline); torch tools/autograd/derivatives.yaml; "
     "model/block_ops.hpp (docs/formulas.md, Memory-bound work and host overhead)"},
    {Term::host_time, "host",
     "Time the GPU waits for the host to issue kernels: each phase takes the longer of its GPU work and its "
     "kernels times the host's cost per kernel (eager PyTorch).",
     "planner/evaluator.hpp stage_host (docs/formulas.md, Memory-bound work and host overhead)"},
    {Term::recompute, "recompute",
     "The extra forward work of activation checkpointing: the whole block for full, the attention core for "
     "selective, the block less the ops torchtitan's per-op policy keeps for selective-op.",
     "Korthikanti et al. 2022 (arXiv:2205.05198) §5; Chen et al. 2016 (arXiv:1604.06174); "
     "planner/evaluator.hpp (docs/formulas.md, Time and communication)"},
    {Term::communication_exposed, "exposed communication",
     "Communication not hidden behind compute, per collective and link tier, each priced with the "
     "latency-bandwidth (alpha-beta) model: alpha + bytes x bus factor / bus bandwidth.",
     "Thakur, Rabenseifner & Gropp 2005 (collective algorithms); nccl-tests doc/PERFORMANCE.md (bus "
     "bandwidth factors); hardware/collective.hpp; planner/evaluator.hpp (docs/formulas.md, Time and "
     "communication)"},
    {Term::overlap_slowdown, "overlap slowdown",
     "Compute slowed by the collectives it hides: NCCL's kernels hold SMs and share the memory while they "
     "run, so the overlapped compute runs 18.9 % slower on average; the step grows by hidden time x "
     "0.189 / 1.189.",
     "Lee et al. 2025 (arXiv:2507.03114); planner/step_comm.hpp overlap_slowdown (docs/formulas.md, "
     "Overlap)"},
    {Term::bubble, "pipeline bubble",
     "Pipeline fill and drain: (p - 1) / (v m) of the compute time for p stages, v interleaved chunks per "
     "stage and m micro-batches.",
     "Narayanan et al. 2021 (arXiv:2104.04473) §2.2; planner/evaluator.hpp (docs/formulas.md, Time and "
     "communication)"},
    {Term::optimizer_step, "optimizer step",
     "The parameter update: its kernels' bytes per parameter by implementation (foreach, fused, per-tensor "
     "loop) over the bandwidth they reach, plus the host's per-tensor work; on the CPU when the optimizer "
     "is offloaded.",
     "ZeRO-Offload, Ren et al. 2021 (arXiv:2101.06840) §4; planner/evaluator.hpp (docs/formulas.md, Time "
     "and communication)"},
    {Term::offload_time, "offload transfers",
     "PCIe transfers of offloaded gradients, optimizer state and parameters that compute does not hide.",
     "ZeRO-Offload (arXiv:2101.06840); ZeRO-Infinity, Rajbhandari et al. 2021 (arXiv:2104.07857); "
     "planner/evaluator.hpp (docs/formulas.md, Time and communication)"},
    {Term::reference_forward, "reference forward",
     "DPO's frozen reference model run over both sequences of every pair, no gradient, priced as the "
     "policy's forward; under ZeRO-3 or FSDP its parameters are gathered again. Zero for SFT, ORPO and "
     "SimPO, and with precomputed reference log-probabilities.",
     "Rafailov et al. 2023 (arXiv:2305.18290); TRL trl/trainer/dpo_trainer.py _compute_loss; "
     "planner/evaluator.hpp (docs/formulas.md, Preference training)"},
    {Term::tokens_per_s, "tokens/s",
     "Tokens trained per second by the whole cluster: global batch x sequence length / step time.",
     "planner/estimate.hpp Throughput"},
    {Term::samples_per_s, "samples/s",
     "Sequences per second by the whole cluster: global batch / step time.",
     "planner/estimate.hpp Throughput"},
    {Term::mfu, "MFU",
     "Model FLOPs utilisation: the model's FLOPs per step (no recomputation) over step time x GPUs x peak "
     "dense FLOP/s of the matmul dtype.",
     "Chowdhery et al. 2022, PaLM (arXiv:2204.02311) Appendix B"},
    {Term::hfu, "HFU",
     "Hardware FLOPs utilisation: like MFU, but counting the FLOPs of recomputation too.",
     "Korthikanti et al. 2022 (arXiv:2205.05198) §6; Chowdhery et al. 2022 Appendix B"},
    {Term::global_batch, "global batch",
     "Sequences per optimizer step: micro-batch x gradient accumulation x data-parallel degree.",
     "planner/estimate.hpp"},
    {Term::communication_bytes, "bytes per GPU per step",
     "Bytes each GPU sends per optimizer step for this collective (algorithm bytes times the bus factor of "
     "the ring).",
     "nccl-tests doc/PERFORMANCE.md"},
    {Term::collective, "collective",
     "all_reduce: 2(n-1)/n of the buffer per GPU on a ring; all_gather and reduce_scatter: (n-1)/n; "
     "all_to_all: (n-1)/n; send_recv: point to point between pipeline stages.",
     "nccl-tests doc/PERFORMANCE.md; Thakur et al. 2005"},
    {Term::link_tier, "link tier",
     "nvlink: inside a node over NVLink/NVSwitch; pcie: inside a node over PCIe; network: between nodes "
     "(InfiniBand, RoCE, Ethernet), bandwidth per GPU = NICs x rate / GPUs per node.",
     "GPU catalogue data/gpus/, cluster files data/clusters/"},
};

static_assert(std::size(kTerms) == static_cast<std::size_t>(Term::link_tier) + 1, "a row per term");

TermText term_text(Term t) {
  for (const TermText& x : kTerms)
    if (x.term == t) return x;
  return {t, "?", "", ""};
}

}  // namespace

QString term_label(Term t) { return QString::fromUtf8(term_text(t).label); }

QString term_tooltip(Term t) {
  const TermText x = term_text(t);
  return QStringLiteral("<p><b>%1</b> — %2</p><p><i>Source:</i> %3</p>")
      .arg(QString::fromUtf8(x.label).toHtmlEscaped(), QString::fromUtf8(x.meaning).toHtmlEscaped(),
           QString::fromUtf8(x.source).toHtmlEscaped());
}

// The window's own fields; the training options' explanations live in the option schema
// (request::Option::details).
QString option_tooltip(std::string_view option) {
  struct Entry {
    std::string_view key;
    const char* text;
  };
  static constexpr Entry kEntries[] = {
      {"model",
       "A catalogue name, a Hugging Face id of a catalogued model, a size alias (7b, 13b, 70b) "
       "or a path to a config.json (File > Open model config)."},
      {"gpu",
       "GPU type from the catalogue (data/gpus/): memory, usable capacity, peak FLOP/s, links."},
      {"gpus_per_node",
       "GPUs in each node; together with nodes this makes the data, tensor and pipeline "
       "parallel world."},
      {"nodes",
       "Number of nodes; more than one adds the inter-node network tier."},
      {"host_memory",
       "CPU memory per node, in GiB: offloaded optimizer states, parameters and checkpoints must "
       "fit in it. 0: not checked (a cluster file may state it as host_memory_GiB)."},
      {"inter_node",
       "Override the network per node, e.g. 8x200Gbps (NICs x line rate). Empty: the GPU's "
       "usual network."},
      {"sweep",
       "The x axis of the sweep chart: micro-batch or sequence length, every other option as set."},
  };
  for (const Entry& e : kEntries)
    if (e.key == option) return wrapped(QString::fromUtf8(e.text));
  return {};
}

QString wrapped(const QString& plain) { return QStringLiteral("<p>%1</p>").arg(plain.toHtmlEscaped()); }

}  // namespace trainplan::gui
