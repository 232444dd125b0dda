#include "trainplan/planner/replay.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

#include "trainplan/core/error.hpp"
#include "trainplan/model/flops.hpp"
#include "trainplan/model/library.hpp"
#include "trainplan/model/model_states.hpp"
#include "trainplan/model/partial.hpp"
#include "trainplan/planner/compute.hpp"
#include "trainplan/planner/kernel_work.hpp"
#include "trainplan/planner/optimizer_step.hpp"

#include "replay_components.hpp"

namespace trainplan::planner {
namespace {

using namespace replay_detail;

// (full) or the attention core (selective and full).
struct BlockRepeats {
  double blocks = 0.0;
  double replay_all = 0.0;
  double replay_core = 0.0;
  double forward_all = 0.0;
  double forward_core = 0.0;
};

BlockRepeats block_repeats(const model::Training& tr, double blocks) {
  BlockRepeats r;
  r.blocks = blocks;
  r.replay_all = recomputes_blocks(tr.checkpointing) ? blocks : 0.0;
  r.replay_core = tr.checkpointing == Checkpointing::none ? 0.0 : blocks;
  r.forward_all = blocks + r.replay_all;
  r.forward_core = blocks + r.replay_core;
  return r;
}

// What the linears leave for the rest of the block: QLoRA's dequantize traffic and one block's
// backward GEMM time (for the attention kernel's share of backward).
struct LinearsAdded {
  double dequant_bytes = 0.0;
  double dequant_kernels = 0.0;
  Seconds linear_backward;
};

// Linears: forward Y = X W^T, backward dX = dY W and dW = X^T dY (full), adapters.
LinearsAdded add_block_linears(Components& out, const model::BlockOps& ops, const ComputeDevice& d,
                               const BlockRepeats& rep, const std::string& prefix) {
  const double blocks = rep.blocks;
  const double forward_all = rep.forward_all;
  const double replay_all = rep.replay_all;
  const auto fwd = ReplayPhase::forward;
  const auto bwd = ReplayPhase::backward;
  LinearsAdded added;
  Seconds& linear_backward = added.linear_backward;
  for (const model::Op& op : ops.ops) {
    if (op.kind != model::OpKind::gemm) continue;
    const model::GemmShape& g = op.gemm;
    const std::int64_t m = g.m;
    const std::int64_t e = g.count;
    const std::string name = prefix + std::string(to_string(g.role)) + (g.expert() ? " experts" : "");
    out.gemm(name + " forward", fwd, d, {m, g.n, g.k, e, false, true}, forward_all, replay_all);
    linear_backward += out.gemm(name + " backward dX", bwd, d, {m, g.k, g.n, e, false, false}, blocks, 0.0);
    if (g.weight_grad)
      linear_backward += out.gemm(name + " backward dW", bwd, d, {g.k, g.n, m, e, true, false}, blocks, 0.0);
    if (g.dequant_bytes > 0.0) {
      added.dequant_bytes += g.dequant_bytes;
      added.dequant_kernels += dbl(e);
    }
    if (!g.adapted) continue;
    // H = X A^T (rank r), Y += H B^T; backward dH = dY B, dX += dH A, dB = dY^T H, dA = dH^T X.
    const std::int64_t r = g.rank;
    const std::string lora = name + " lora";
    out.gemm(lora + " A forward", fwd, d, {m, r, g.k, e, false, true}, forward_all, replay_all);
    out.gemm(lora + " B forward", fwd, d, {m, g.n, r, e, false, true}, forward_all, replay_all);
    linear_backward += out.gemm(lora + " B backward dX", bwd, d, {m, r, g.n, e, false, false}, blocks, 0.0);
    linear_backward += out.gemm(lora + " A backward dX", bwd, d, {m, g.k, r, e, false, false}, blocks, 0.0);
    linear_backward += out.gemm(lora + " B backward dW", bwd, d, {r, g.n, m, e, true, false}, blocks, 0.0);
    linear_backward += out.gemm(lora + " A backward dW", bwd, d, {g.k, r, m, e, true, false}, blocks, 0.0);
  }
  return added;
}

// The attention core, fused or as its GEMMs; returns the unfused path's two forward products (for
// Megatron's softmax), zero when fused.
Seconds add_attention_core(Components& out, const model::BlockOps& ops, const ComputeDevice& d,
                           const BlockCompute& blk, Seconds linear_backward, const BlockRepeats& rep,
                           const std::string& prefix) {
  const double blocks = rep.blocks;
  const double forward_core = rep.forward_core;
  const double replay_core = rep.replay_core;
  const auto fwd = ReplayPhase::forward;
  const auto bwd = ReplayPhase::backward;
  Seconds core_gemms_forward;  // the unfused path's two products, for Megatron's softmax below
  if (ops.run.fused) {
    // The evaluator's kernel times: the attention core of forward, and what backward has beyond
    // its GEMMs and memory-bound work; shared between self- and cross-attention by their FLOPs
    // at the efficiency each reaches.
    const Seconds core_forward = blk.attention_forward;
    const Seconds core_backward = blk.backward - linear_backward - blk.elementwise_backward;
    struct Kernel {
      std::string name;
      AttentionWork w;
      Seconds forward, backward;
    };
    std::vector<Kernel> kernels;
    for (const model::Op& op : ops.ops) {
      if (op.kind != model::OpKind::attention_core) continue;
      const model::AttentionShape& at = op.attention;
      const std::int64_t s = at.seq;
      const bool skips = at.causal && !at.explicit_mask;  // a materialised mask skips nothing
      const double share = skips ? model::causal_fraction(s) : 1.0;
      const Flops f(2.0 * dbl(at.batch) * dbl(at.query_seq) * dbl(s) * at.heads_per_gpu *
                    dbl(at.head_dim + at.v_head_dim) * share);
      const AttentionWork w{at.batch, at.heads, at.kv_heads, s, at.head_dim, skips, false, f};
      kernels.push_back(
          {prefix + std::string(op.name), w, f / (d.peak * attention_efficiency(d, false, s)),
           f * model::kFusedAttentionBackwardRatio / (d.peak * attention_efficiency(d, true, s))});
    }
    Seconds sum_f, sum_b;
    for (const Kernel& k : kernels) {
      sum_f += k.forward;
      sum_b += k.backward;
    }
    for (Kernel& k : kernels) {
      out.add(k.name + " forward", fwd, k.w, forward_core, replay_core, core_forward * (k.forward / sum_f));
      k.w.backward = true;
      k.w.flops = k.w.flops * model::kFusedAttentionBackwardRatio;
      out.add(k.name + " backward", bwd, k.w, blocks, 0.0, core_backward * (k.backward / sum_b));
    }
    return core_gemms_forward;
  }
  // Scores Q K^T (s x d by d x s) and P V (s x s by s x d); backward dP = dO V^T (like the
  // scores), dV = P^T dO, dQ = dS K and dK = dS^T Q (like P V).
  for (const model::Op& op : ops.ops) {
    if (op.kind != model::OpKind::attention_core) continue;
    const model::AttentionShape& at = op.attention;
    const std::int64_t s = at.seq;
    const std::int64_t hd = at.head_dim;
    const std::int64_t hv = at.v_head_dim;
    const std::int64_t batch = at.batch * at.heads;
    const std::string name = prefix + std::string(op.name);
    out.gemm(name + " scores QK^T forward", fwd, d, {s, s, hd, batch, false, true}, forward_core, replay_core);
    out.gemm(name + " context PV forward", fwd, d, {s, hv, s, batch, false, false}, forward_core, replay_core);
    out.gemm(name + " dP = dO V^T backward", bwd, d, {s, s, hv, batch, false, true}, blocks, 0.0);
    out.gemm(name + " dV = P^T dO backward", bwd, d, {s, hv, s, batch, true, false}, blocks, 0.0);
    out.gemm(name + " dQ = dS K backward", bwd, d, {s, hd, s, batch, false, false}, blocks, 0.0);
    out.gemm(name + " dK = dS^T Q backward", bwd, d, {s, hd, s, batch, true, false}, blocks, 0.0);
    const double heads = dbl(at.batch) * at.heads_per_gpu;
    core_gemms_forward += gemm_time(d, s, s, hd, heads) + gemm_time(d, s, hv, s, heads);
  }
  return core_gemms_forward;
}

// Memory-bound work. Times are the evaluator's (block_compute); the bytes and kernels are what the
// replay streams.
void add_block_memory_bound(Components& out, const model::StackOps& ops, const BlockShape& shape,
                            const model::Training& tr, const ComputeDevice& d, const TimeConventions& tc,
                            const BlockCompute& blk, const LinearsAdded& lin,
                            Seconds core_gemms_forward, const BlockRepeats& rep,
                            const std::string& prefix) {
  const int t = tr.tp;
  const double blocks = rep.blocks;
  const double instances = shape.cross_attention ? 2.0 : 1.0;
  const double dequant_bytes = lin.dequant_bytes;
  const double dequant_kernels = lin.dequant_kernels;
  const double forward_all = rep.forward_all;
  const double replay_all = rep.replay_all;
  const double forward_core = rep.forward_core;
  const double replay_core = rep.replay_core;
  const auto fwd = ReplayPhase::forward;
  const auto bwd = ReplayPhase::backward;
  const Seconds dequant = memory_bound_time(d, Bytes(dequant_bytes));
  const Seconds ew_f = blk.elementwise_forward - dequant;
  const Seconds ew_b = blk.elementwise_backward - dequant;
  if (fused_kernels(tr.framework)) {
    // Megatron's fused kernels: the bytes the model prices, recovered from its times at the
    // bandwidth it assumed (memory_bound_time = bytes / hbm).
    out.add(prefix + "fused elementwise forward", fwd,
            StreamWork{d.hbm * ew_f, tc.fused_block_kernels}, forward_all, replay_all, ew_f);
    out.add(prefix + "fused elementwise backward", bwd,
            StreamWork{d.hbm * ew_b, tc.fused_block_kernels}, blocks, 0.0, ew_b);
    const Seconds softmax = blk.attention_forward - core_gemms_forward;
    if (!ops.block.run.fused && softmax.value() > 0.0)
      out.add(prefix + "fused softmax forward", fwd, StreamWork{d.hbm * softmax, instances},
              forward_core, replay_core, softmax);
  } else {
    // Eager PyTorch op by op (the block's op list), with autocast's weight casts.
    const double params = stack_parameters_per_gpu(shape, ops, t);
    const model::EagerWork w = ops.eager_work();
    const KernelWork f = w.forward + autocast_weight_cast(params, tr, false);
    const KernelWork g = w.backward + autocast_weight_cast(params, tr, true);
    out.add(prefix + "memory-bound forward", fwd, StreamWork{Bytes(f.bytes), f.kernels},
            forward_all, replay_all, ew_f);
    out.add(prefix + "memory-bound backward", bwd, StreamWork{Bytes(g.bytes), g.kernels}, blocks,
            0.0, ew_b);
  }
  if (dequant_bytes > 0.0) {
    // QLoRA dequantizes each base weight before its forward and again before its backward GEMM.
    const StreamWork w{Bytes(dequant_bytes), dequant_kernels};
    out.add(prefix + "QLoRA dequantize forward", fwd, w, forward_all, replay_all, dequant);
    out.add(prefix + "QLoRA dequantize backward", bwd, w, blocks, 0.0, dequant);
  }
}

// One block's kernels for one micro-batch, `blocks` times per step (layers of this stack on the
// stage x micro-batches): the block's op list (model/block_ops.hpp) with the evaluator's times
// (block_compute): linears, attention core, memory-bound work.
void add_block(Components& out, const model::Architecture& a, const BlockShape& shape,
               const model::Training& tr, const ComputeDevice& d, const TimeConventions& tc,
               double blocks, const std::string& prefix) {
  model::Training on_gpu = tr;
  on_gpu.cuda_sm = d.cuda_sm;
  const model::StackOps ops = model::stack_ops(a, on_gpu, shape.stack);
  const BlockRepeats rep = block_repeats(tr, blocks);
  // Each kind of layer's linears on its share of the blocks; what they leave for the rest of the
  // block is the average layer's.
  LinearsAdded lin = add_block_linears(out, ops.block, d, block_repeats(tr, blocks * ops.block_share), prefix);
  if (!ops.variants.empty()) {
    lin.dequant_bytes *= ops.block_share;
    lin.dequant_kernels *= ops.block_share;
    lin.linear_backward = lin.linear_backward * ops.block_share;
    for (const model::LayerVariant& v : ops.variants) {
      const std::string kind = prefix + std::string(v.kind) + ": ";
      const LinearsAdded more = add_block_linears(out, v.ops, d, block_repeats(tr, blocks * v.share), kind);
      lin.dequant_bytes += more.dequant_bytes * v.share;
      lin.dequant_kernels += more.dequant_kernels * v.share;
      lin.linear_backward += more.linear_backward * v.share;
    }
  }
  const BlockCompute blk = block_compute(a, shape, tr, d, tc);
  const Seconds core_gemms_forward = add_attention_core(out, ops.block, d, blk, lin.linear_backward, rep, prefix);
  add_block_memory_bound(out, ops, shape, tr, d, tc, blk, lin, core_gemms_forward, rep, prefix);
}

// The LM head with its loss (last stage) and the embedding (first stage): edge_compute.
void add_edges(Components& out, const model::Architecture& a, const model::Training& tr,
               const ComputeDevice& d, const TimeConventions& tc, double micro_batches,
               bool first_stage) {
  const std::int64_t T = tr.tokens_per_micro_batch();
  const std::int64_t v = std::max<std::int64_t>(1, a.vocab / tr.tp);
  const std::int64_t h = a.hidden;
  const double c = compute_bytes(tr.precision);
  const bool full = tr.method == Method::full;
  const auto fwd = ReplayPhase::forward;
  const auto bwd = ReplayPhase::backward;
  // The evaluator's times; the GEMMs priced alike, the rest is the loss and the embedding.
  const EdgeCompute e = edge_compute(a, tr, d, tc);
  const GemmWork head{T, v, h, 1, false, true};
  const GemmWork head_dx{T, h, v, 1, false, false};
  const GemmWork head_dw{h, v, T, 1, true, false};
  // Multi-token prediction runs the head and the loss once more per module, after its projection
  // 2h -> h (edge_compute).
  const double mtp = dbl(a.mtp_layers);
  const double heads = 1.0 + mtp;
  const Seconds head_f = out.gemm("lm_head forward", fwd, d, head, micro_batches * heads, 0.0);
  Seconds head_b = out.gemm("lm_head backward dX", bwd, d, head_dx, micro_batches * heads, 0.0);
  if (full) head_b += out.gemm("lm_head backward dW", bwd, d, head_dw, micro_batches * heads, 0.0);
  Seconds proj_f;
  Seconds proj_b;
  if (a.mtp_layers > 0) {
    const std::int64_t h_tp = std::max<std::int64_t>(1, h / tr.tp);
    proj_f = out.gemm("mtp projection forward", fwd, d, {T, h_tp, 2 * h, 1, false, true}, micro_batches * mtp, 0.0);
    proj_b = out.gemm("mtp projection backward dX", bwd, d, {T, 2 * h, h_tp, 1, false, false}, micro_batches * mtp, 0.0);
    if (full)
      proj_b += out.gemm("mtp projection backward dW", bwd, d, {2 * h, h_tp, T, 1, true, false}, micro_batches * mtp, 0.0);
  }
  const Seconds loss_f = (e.head_forward - head_f * heads - proj_f * mtp) / heads;
  const Seconds loss_b = (e.head_backward - head_b * heads - proj_b * mtp) / heads;
  // Cross-entropy in fp32 over the logits: the upcast, log-softmax and nll_loss each way.
  const LossBytes lb = loss_bytes(a, tr, tc);
  const Bytes loss(dbl(T) * dbl(v) * lb.forward);
  const Bytes loss_backward(dbl(T) * dbl(v) * lb.backward);
  // The loss's kernels each way, from the head's op list.
  const model::BlockOps head_ops = model::edge_ops(a, tr, model::Edge::head);
  const auto loss_op = std::find_if(head_ops.ops.begin(), head_ops.ops.end(),
                                    [](const model::Op& op) { return op.kind == model::OpKind::reduction; });
  const double loss_f_kernels = loss_op != head_ops.ops.end() ? loss_op->forward_launches : 0.0;
  const double loss_b_kernels = loss_op != head_ops.ops.end() ? loss_op->backward_launches : 0.0;
  out.add("loss forward", fwd, StreamWork{loss, loss_f_kernels}, micro_batches * heads, 0.0, loss_f);
  out.add("loss backward", bwd, StreamWork{loss_backward, loss_b_kernels}, micro_batches * heads, 0.0, loss_b);
  if (!first_stage) return;
  const Bytes lookup(dbl(T) * dbl(h) * c * tc.dropout_passes);
  out.add("embedding forward", fwd, StreamWork{lookup, 1.0}, micro_batches, 0.0,
          e.embedding_forward);
  if (e.embedding_backward.value() > 0.0)
    out.add("embedding backward", bwd, StreamWork{lookup * tc.elementwise_backward_ratio, 1.0},
            micro_batches, 0.0, e.embedding_backward);
}

// The data-parallel traffic of a sharded strategy (ZeRO-3, FSDP): per-unit parameter gathers and
// gradient reductions, ZeRO++'s quantized variants, and HSDP's replica all-reduce.
void add_step_terms(Components& out, const model::Architecture& a, const BlockShape& main_shape,
                    const model::Training& tr, const hardware::Cluster& c, const StepCost& cost,
                    const ComputeDevice& d, const ReplayOptions& options,
                    const TimeConventions& tc, double layers) {
  const ModelStates& ms = cost.memory.states;
  const double opt_params = ms.optimizer_params;
  if (tr.offload == Offload::none) {
    const double tensors = trainable_tensors(a, main_shape, tr, layers);
    // The host's share as optimizer_step_time has it; the kernels take the rest of the evaluator's
    // optimizer term (which a profile's measured optimizer rate may set).
    const BytesPerSecond hbm = d.hbm / tc.hbm_efficiency;
    const Seconds host =
        optimizer_step_time(tr, hbm, c.gpu.peak.fp32, opt_params, tensors, tc).host;
    const Seconds kernels = cost.time.optimizer - host;
    const double slices = std::max(1.0, std::ceil(opt_params / options.max_optimizer_params));
    const OptimizerWork w{tr.optimizer,
                          tr.optimizer_implementation(),
                          opt_params / slices,
                          std::max(1.0, std::round(tensors / slices)),
                          param_bytes(tr.precision),
                          step_gradient_bytes(tr),
                          optimizer_step_bytes(tr)};
    if (opt_params > 0.0 && w.bytes_per_param > 0.0)
      out.add(slices > 1.0 ? fmt::format("optimizer step ({:.0f} slices)", slices)
                           : std::string("optimizer step"),
              ReplayPhase::step, w, slices, 0.0, kernels / slices);
    out.add("optimizer host work", ReplayPhase::step,
            ModelOnlyWork{"Python work per parameter tensor before the step's kernels"}, 1.0, 0.0,
            host);
  } else {
    out.add("optimizer step on the CPU", ReplayPhase::step,
            ModelOnlyWork{"the offloaded optimizer steps on the host (trainplan-calibrate "
                          "--cpu-adam measures its rate)"},
            1.0, 0.0, cost.time.optimizer);
  }
  if (cost.time.offload.value() > 0.0)
    out.add("offload transfers (exposed)", ReplayPhase::step,
            ModelOnlyWork{"host<->device copies of offloading (--membw measures PCIe)"}, 1.0, 0.0,
            cost.time.offload);
  if (cost.time.host.value() > 0.0)
    out.add("host kernel issue (exposed)", ReplayPhase::step,
            ModelOnlyWork{"the host issuing eager kernels slower than the GPU runs them"}, 1.0, 0.0,
            cost.time.host);
  if (cost.time.overlap_slowdown.value() > 0.0)
    out.add("compute slowed by hidden collectives", ReplayPhase::step,
            ModelOnlyWork{"the compute that hides a collective runs slower while NCCL's kernels hold SMs "
                          "(TimeConventions::overlap_compute_slowdown)"},
            1.0, 0.0, cost.time.overlap_slowdown);
  if (cost.time.bubble.value() > 0.0)
    out.add("pipeline bubble", ReplayPhase::step,
            ModelOnlyWork{"idle time of the pipeline schedule's fill and drain"}, 1.0, 0.0,
            cost.time.bubble);
}

// What the replay takes as given, for the reader of its report.
void add_notes(ReplayPlan& plan, const model::Architecture& a, const model::Training& tr,
               const Layout& l, double layers) {
  if (l.pp > 1)
    plan.notes.push_back(fmt::format(
        "the last of {} pipeline stages is replayed: {:.0f} blocks, the LM head and the loss", l.pp,
        layers));
  if (a.is_moe())
    plan.notes.push_back(fmt::format(
        "routing is taken as balanced: each of the {} experts multiplies tokens x {} / {}",
        a.experts, a.experts_per_token, a.experts));
  if (tr.checkpointing != Checkpointing::none)
    plan.notes.push_back(
        fmt::format("{} checkpointing: forward components count their replays in backward",
                    to_string(tr.checkpointing)));
}

}  // namespace


std::string_view kind_name(const ReplayWork& w) {
  struct Name {
    std::string_view operator()(const GemmWork&) const { return "gemm"; }
    std::string_view operator()(const AttentionWork&) const { return "attention"; }
    std::string_view operator()(const StreamWork&) const { return "memory_bound"; }
    std::string_view operator()(const OptimizerWork&) const { return "optimizer_step"; }
    std::string_view operator()(const CollectiveWork&) const { return "collective"; }
    std::string_view operator()(const ModelOnlyWork&) const { return "model_only"; }
  };
  return std::visit(Name{}, w);
}

Seconds ReplayPlan::predicted_sum() const {
  Seconds s;
  for (const auto& c : components) s += c.predicted_total();
  return s;
}

ReplayPlan replay_plan(const model::Architecture& a, const model::ParameterCounts& n,
                       const model::Training& tr, const hardware::Cluster& c,
                       const hardware::HardwareProfile* profile, const ReplayOptions& options,
                       const EstimateOptions& estimate_options, const TimeConventions& tc,
                       const MemoryConventions& mc) {
  if (tr.cp > 1)
    throw InputError(fmt::format("context parallelism (cp {}) is not replayed: its attention blocks "
                                 "and K/V exchange need the cp ranks together, not one GPU",
                                 tr.cp));
  if (tr.fp8 != Fp8Recipe::none)
    throw InputError(fmt::format("FP8 training (fp8 {}) is not replayed: the replay runs the block's "
                                 "GEMMs and kernels in the 16-bit dtype",
                                 to_string(tr.fp8)));
  if (model::trains_subset(tr))
    throw InputError(fmt::format("partial fine-tuning (trainable {}) is not replayed: the replay trains every "
                                 "weight of the block it runs",
                                 model::trained_subset_text(tr.partial)));
  if (tr.checkpointing == Checkpointing::selective_op)
    throw InputError("checkpointing selective-op (torchtitan's per-op policy) is not replayed: the replay "
                     "checkpoints whole blocks; replay with selective or full");
  if (tr.checkpointing == Checkpointing::full && tr.checkpoint_group > 1)
    throw InputError("checkpointing groups of blocks (checkpoint_group) is not replayed: the replay checkpoints "
                     "each block on its own; replay with checkpoint_group 1");
  if (model::picks_some_blocks(tr))
    throw InputError("checkpointing some blocks only (checkpoint_every, checkpoint_layers) is not replayed: the "
                     "replay checkpoints every block or none; replay with checkpoint_every 1 and checkpoint_layers 0");
  if (tr.runs_fsdp2())
    throw InputError("FSDP2 (fsdp_version 2) is not replayed: the replay runs FSDP1's collectives on flat units, "
                     "not fully_shard's copy-in and copy-out; replay with fsdp_version 1");
  if (model::op_variant(a, tr).compiled)
    throw InputError("torch.compile (compile) is not replayed: the replay runs the eager ops, not Inductor's fused "
                     "kernels");
  if (model::op_variant(a, tr).fused_linear_loss)
    throw InputError("Liger's kernels (liger) are not replayed: the replay runs the eager ops and the head's "
                     "products unchunked");
  const Evaluator ev(a, n, c, profile, mc, tc, estimate_options);
  const StepCost cost = ev.cost(tr);
  const Layout& l = cost.layout;
  const ComputeDevice d = compute_device(c.gpu, tr.precision, tr.tf32, profile, tc);
  const LinkModel links = link_model(c, profile, tc);

  ReplayPlan plan;
  plan.layout = l;
  plan.time = cost.time;
  plan.micro_batches = tr.grad_accum;
  const double md = dbl(tr.grad_accum);
  // The slowest stage's layers, as the evaluator prices them (the last also runs the MTP blocks).
  const double layers = std::ceil(dbl(a.total_layers()) / l.pp) + dbl(a.mtp_layers);
  plan.layers = layers;
  Components out(cost);

  // ---- Compute: the blocks of the stage, then the head, loss and embedding ----------------------
  const bool adapters = tr.method != Method::full;
  const model::Stack main = a.encoder_decoder ? model::Stack::encoder : model::Stack::decoder;
  const BlockShape main_shape = block_shape(a, main, adapters ? &tr.lora : nullptr);
  if (a.encoder_decoder) {
    // Stages hold both stacks in proportion: the evaluator prices the average layer.
    const double we = dbl(a.layers) / dbl(a.total_layers());
    add_block(out, a, main_shape, tr, d, tc, layers * we * md, "encoder ");
    const BlockShape dec = block_shape(a, model::Stack::decoder, adapters ? &tr.lora : nullptr);
    add_block(out, a, dec, tr, d, tc, layers * (1.0 - we) * md, "decoder ");
  } else {
    add_block(out, a, main_shape, tr, d, tc, layers * md, "");
  }
  add_edges(out, a, tr, d, tc, md, l.pp == 1);

  // ---- Communication, as Evaluator::cost prices it ----------------------------------------------
  const Bytes max_msg = options.max_message;
  const model::LayerCollectives per_layer = layer_collectives(a, tr);
  if (l.tp > 1) add_tensor_parallel_collectives(out, a, tr, l, links, layers, md, max_msg, per_layer.tensor_parallel);
  if (a.is_moe() && l.ep > 1 && per_layer.expert_all_to_all > 0.0)
    add_expert_collectives(out, a, tr, l, links, layers, md, max_msg, per_layer.expert_all_to_all);
  if (l.pp > 1) add_pipeline_collectives(out, a, tr, l, links, md, max_msg);
  add_data_parallel_collectives(out, a, tr, cost, links, estimate_options, tc, layers, md, max_msg);

  // ---- Optimizer step ---------------------------------------------------------------------------
  add_step_terms(out, a, main_shape, tr, c, cost, d, options, tc, layers);

  plan.components = out.take();
  add_notes(plan, a, tr, l, layers);
  return plan;
}

ReplayProjection project(const ReplayPlan& plan,
                         const std::vector<std::optional<Seconds>>& measured) {
  if (measured.size() != plan.components.size())
    throw std::invalid_argument(fmt::format("replay projection: {} measurements for {} components",
                                            measured.size(), plan.components.size()));
  ReplayProjection p;
  p.predicted_step = plan.time.step;
  p.projected_step = plan.time.step;
  for (std::size_t i = 0; i < measured.size(); ++i) {
    const ReplayComponent& c = plan.components[i];
    p.predicted_serial += c.predicted_total();
    if (measured[i]) {
      ++p.measured;
      p.measured_serial += *measured[i] * c.count;
      p.projected_step += (*measured[i] - c.predicted) * (c.count * c.exposed_fraction);
    } else {
      if (c.runs_on_gpu()) ++p.unmeasured;
      p.measured_serial += c.predicted_total();
    }
  }
  return p;
}

}  // namespace trainplan::planner
