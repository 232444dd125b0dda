#include "trainplan/model/block_ops.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <initializer_list>

#include "trainplan/model/family.hpp"
#include "trainplan/model/flops.hpp"
#include "trainplan/model/fp8.hpp"
#include "trainplan/model/library.hpp"
#include "trainplan/model/lora.hpp"
#include "trainplan/model/model_states.hpp"
#include "trainplan/model/partial.hpp"

#include "block_builder.hpp"
#include "hf_block.hpp"

namespace trainplan::model {

using namespace block_detail;

// ---- Folds ------------------------------------------------------------------------------------

EagerWork BlockOps::eager_work() const {
  EagerWork w;
  for (const Op& op : ops) {
    w.forward += op.forward;
    w.backward += op.backward;
    w.forward_launches += op.forward_launches;
    w.backward_launches += op.backward_launches;
  }
  w.forward_launches += w.forward.kernels;
  w.backward_launches += w.backward.kernels;
  return w;
}

Bytes BlockOps::saved_bytes() const {
  double s = 0.0;
  for (const SavedTensor& t : saved) s += t.bytes.value();
  return Bytes(s);
}

Bytes BlockOps::saved_core_bytes() const {
  double s = 0.0;
  for (const SavedTensor& t : saved)
    if (t.core) s += t.bytes.value();
  return Bytes(s);
}

Bytes BlockOps::held_bytes() const {
  double s = 0.0;
  for (const SavedTensor& t : saved)
    if (t.held) s += t.bytes.value();
  return Bytes(s);
}

std::vector<bool> op_sac_saved(const BlockOps& ops, const Training& tr) {
  std::vector<bool> saved(ops.ops.size(), false);
  int mm = 0;
  const bool attention = flash_attention_2_kind(ops.run, tr.framework);
  for (std::size_t i = 0; i < ops.ops.size(); ++i) {
    const Op& op = ops.ops[i];
    if (op.kind == OpKind::attention_core) saved[i] = attention;
    if (op.kind != OpKind::gemm || op.gemm.expert() || fp8_linear(tr, op.gemm.role, false)) continue;
    saved[i] = op_sac_saves_mm(++mm);
  }
  return saved;
}

Bytes op_sac_saved_bytes(const BlockOps& ops, const Training& tr) {
  constexpr double kLse = 4.0;  // fp32 log-sum-exp per query row and head
  const double c = compute_bytes(tr.precision);
  const std::vector<bool> saved = op_sac_saved(ops, tr);
  double bytes = 0.0;
  for (std::size_t i = 0; i < ops.ops.size(); ++i) {
    if (!saved[i]) continue;
    const Op& op = ops.ops[i];
    if (op.kind == OpKind::gemm)
      bytes += c * static_cast<double>(op.gemm.m) * static_cast<double>(op.gemm.n) * static_cast<double>(op.gemm.count);
    if (op.kind == OpKind::attention_core) {
      const AttentionShape& at = op.attention;
      const double rows = static_cast<double>(at.batch) * static_cast<double>(at.query_seq) * static_cast<double>(at.heads_per_gpu);
      bytes += rows * (c * static_cast<double>(at.v_head_dim) + kLse);
    }
  }
  return Bytes(bytes);
}

LayerCollectives BlockOps::collectives() const {
  LayerCollectives n;
  for (const Op& op : ops) {
    if (op.collective == OpCollective::tensor_parallel) n.tensor_parallel += 1.0;
    if (op.collective == OpCollective::expert_all_to_all) n.expert_all_to_all += 2.0;  // dispatch, combine
  }
  return n;
}

LayerCollectives StackOps::collectives() const {
  return average<LayerCollectives>([](const BlockOps& b) { return b.collectives(); });
}

double BlockOps::gemm_count() const {
  double n = 0.0;
  for (const Op& op : ops) n += op.kind == OpKind::gemm ? 1.0 : 0.0;
  return n;
}

EagerWork StackOps::eager_work() const {
  return average<EagerWork>([](const BlockOps& b) { return b.eager_work(); });
}

// ---- Builders ---------------------------------------------------------------------------------

namespace {
void build_block_ops(const Architecture& a, const Training& tr, Stack stack, bool first, BlockOps& out,
                     const std::vector<Linear>* linears = nullptr) {
  out.stack = stack;
  out.framework = tr.framework;
  out.run = attention_run(a, tr, tr.cuda_sm);
  out.runs_backward = tr.layer != LayerState::no_backward;
  out.checkpointed = checkpointed_layer(tr);
  out.ops.clear();
  out.saved.clear();
  out.ops.reserve(48);
  out.saved.reserve(32);
  switch (tr.framework) {
    case Framework::megatron: megatron_block(a, tr, stack, out, linears); break;
    case Framework::pytorch:
    case Framework::deepspeed: HfBlock(a, tr, stack, first, out, linears).run(); break;
  }
  // An FP8 recipe's weight copies saved for backward (model/fp8.hpp fp8_weights_cached).
  const double copy = fp8_weights_cached(tr) ? 0.0 : fp8_weight_copy_bytes(tr, tr.cuda_sm);
  if (copy > 0.0) {
    double weights = 0.0;
    for (const Op& op : out.ops)
      if (op.kind == OpKind::gemm && fp8_linear(tr, op.gemm.role, op.gemm.expert()))
        weights += dbl(op.gemm.n) * dbl(op.gemm.k) * dbl(op.gemm.count);
    out.saved.push_back({"FP8 weight copies", Bytes(copy * weights), false, out.ops.size() - 1});
  }
  // A layer below every layer that needs a gradient: autograd records none of its ops.
  if (!out.runs_backward) {
    out.saved.clear();
    for (Op& op : out.ops) {
      op.backward = {};
      op.backward_launches = 0.0;
    }
  }
}

// The name of a kind of layer beside the main one: dense or expert (an MoE model's), with or
// without rotary positions (Llama 4's NoPE layers), and under partial fine-tuning its state.
std::string_view layer_kind_name(bool dense, bool nope, bool partial, LayerState state, bool plain) {
  static constexpr std::array<std::array<std::array<std::string_view, 4>, 4>, 2> kNames{{
      {{
          {"expert layers", "trained layers", "frozen layers", "layers without backward"},
          {"NoPE layers", "trained NoPE layers", "frozen NoPE layers", "NoPE layers without backward"},
          {"dense layers", "trained dense layers", "frozen dense layers", "dense layers without backward"},
          {"dense NoPE layers", "trained dense NoPE layers", "frozen dense NoPE layers",
           "dense NoPE layers without backward"},
      }},
      {{
          {"layers not checkpointed", "trained layers not checkpointed", "frozen layers not checkpointed",
           "layers without backward"},
          {"NoPE layers not checkpointed", "trained NoPE layers not checkpointed",
           "frozen NoPE layers not checkpointed", "NoPE layers without backward"},
          {"dense layers not checkpointed", "trained dense layers not checkpointed",
           "frozen dense layers not checkpointed", "dense layers without backward"},
          {"dense NoPE layers not checkpointed", "trained dense NoPE layers not checkpointed",
           "frozen dense NoPE layers not checkpointed", "dense NoPE layers without backward"},
      }},
  }};
  const std::size_t row = (dense ? 2u : 0u) + (nope ? 1u : 0u);
  return kNames[plain ? 1u : 0u][row][partial ? 1u + static_cast<std::size_t>(state) : 0u];
}

// The stack's kinds of layer (an MoE model's expert and dense layers, each with and without rotary
// positions where Llama 4 drops them on some layers); the most common one is the main block.
void build_stack_ops(const Architecture& a, const Training& tr, Stack stack, StackOps& out,
                     const std::vector<Linear>* linears = nullptr) {
  const bool decoder_only = stack == Stack::decoder && !a.encoder_decoder;
  const bool nope = a.nope_interval > 0 && stack == Stack::decoder;
  const double nope_share = nope ? dbl(a.nope_layers()) / dbl(a.layers) : 0.0;
  const bool partial = trains_subset(tr) && decoder_only;
  // Full checkpointing of some blocks only (model/partial.hpp checkpoint_picks): the others are kinds
  // of their own.
  const bool picks = picks_some_blocks(tr) && decoder_only;
  if (!decoder_only || (a.dense_layers() == 0 && !partial && !picks)) {
    build_block_ops(a, tr, stack, false, out.block, linears);
    out.block_share = 1.0 - nope_share;
    out.variants.resize(nope ? 1 : 0);
    if (nope) {
      build_block_ops(nope_variant(a), tr, stack, false, out.variants[0].ops);
      out.variants[0].share = nope_share;
      out.variants[0].kind = "NoPE layers";
    }
    return;
  }
  // Each layer's kind: expert or dense, with or without rotary positions, under partial
  // fine-tuning trained, frozen or without backward, checkpointed or not - counted layer by layer.
  const Architecture dense_kind = a.dense_layers() > 0 ? dense_variant(a) : a;
  // [dense][nope][state][plain]: a LayerState, or 3 for the entry layer (partial.hpp entry_layer);
  // plain: left alone by Training::checkpoint_every.
  std::array<std::array<std::array<std::array<std::int64_t, 2>, 4>, 2>, 2> count{};
  for (std::int64_t i = 0; i < a.layers; ++i)
    ++count[a.dense_layer(i) ? 1 : 0][nope && a.nope_layer(i) ? 1 : 0]
           [entry_layer(a, tr, i) ? 3u : static_cast<std::size_t>(layer_state(a, tr, i))]
           [picks && !checkpoint_picks(a, tr, i) ? 1 : 0];
  struct Part {
    const Architecture* arch;
    bool nope;
    LayerState state;
    bool entry;
    bool plain;
    double share;
  };
  std::vector<Part> parts;
  for (int d = 0; d < 2; ++d)
    for (int n = 0; n < 2; ++n)
      for (int st = 0; st < 4; ++st)
        for (int pl = 0; pl < 2; ++pl)
          if (count[d][n][st][pl] > 0)
            parts.push_back({d == 1 ? &dense_kind : &a, n == 1,
                             st == 3 ? LayerState::trained : static_cast<LayerState>(st), st == 3, pl == 1,
                             dbl(count[d][n][st][pl]) / dbl(a.layers)});
  std::stable_sort(parts.begin(), parts.end(), [](const Part& x, const Part& y) { return x.share > y.share; });
  out.variants.resize(parts.size() - 1);
  Training layer_tr = tr;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const Part& p = parts[i];
    BlockOps& ops = i == 0 ? out.block : out.variants[i - 1].ops;
    const bool own_linears = p.arch->is_moe() == a.is_moe();
    layer_tr.layer = p.state;
    layer_tr.layer_checkpointed = !p.plain;
    build_block_ops(p.nope ? nope_variant(*p.arch) : *p.arch, layer_tr, stack, p.entry, ops, own_linears ? linears : nullptr);
    (i == 0 ? out.block_share : out.variants[i - 1].share) = p.share;
    if (i > 0) out.variants[i - 1].kind = layer_kind_name(a.is_moe() && !p.arch->is_moe(), p.nope, partial, p.state, p.plain);
  }
}
}  // namespace

BlockOps block_ops(const Architecture& a, const Training& tr, Stack stack, bool first) {
  BlockOps out;
  build_block_ops(a, tr, stack, first, out);
  return out;
}

BlockOps edge_ops(const Architecture& a, const Training& tr, Edge edge) {
  BlockOps out;
  build_edge_ops(a, tr, edge, out);
  return out;
}

LossChunks fused_linear_loss_chunks(const Architecture& a, const Training& tr) {
  const std::int64_t bt = std::max<std::int64_t>(1, tr.tokens_per_micro_batch());
  const std::int64_t v = std::max<std::int64_t>(1, a.vocab / tr.tp);
  const std::int64_t h = std::max<std::int64_t>(1, a.hidden);
  const std::int64_t inc = (v + h - 1) / h;
  const std::int64_t want = (bt + inc - 1) / inc;
  std::int64_t rows = 1;
  while (rows < want) rows *= 2;
  rows = std::min(rows, bt);
  return {rows, (bt + rows - 1) / rows};
}

void build_edge_ops(const Architecture& a, const Training& tr, Edge edge, BlockOps& out) {
  out.framework = tr.framework;
  out.ops.clear();
  out.saved.clear();
  out.ops.reserve(4);
  Builder b(out);
  const Shape x = shape_of(a, tr);
  switch (edge) {
    case Edge::embedding:
      b.open("embedding lookup", OpKind::copy_cast);
      b.launches(1.0, x.full ? 3.0 : 0.0);  // lookup; embedding_dense_backward
      break;
    case Edge::head: {
      const OpListVariant variant = op_variant(a, tr);
      if (a.final_norm) {
        b.open("final norm", OpKind::norm);
        if (variant.fused_norm && a.norm == NormKind::rmsnorm)
          fused_rms_norm_kernels(b, x, x.t * x.kh, x.stream);
        else
          norm_kernels(b, a, x, x.t * x.kh);
      }
      if (variant.fused_linear_loss) {
        // Per chunk in forward: the logits' product, the loss kernel (writing the logits'
        // gradient over them), the input gradient's product, and with a trained head the weight
        // gradient's addmm (its input chunk cast to 16 bits first under autocast); before them
        // the two gradient buffers zeroed and the ignored labels counted. Backward scales both
        // gradients by the loss's (the Trainer's sum over its items).
        const double chunks = static_cast<double>(fused_linear_loss_chunks(a, tr).count);
        b.open("fused linear cross-entropy", OpKind::gemm).gemm = {
            Role::lm_head, tr.tokens_per_micro_batch(), std::max<std::int64_t>(1, a.vocab / tr.tp), a.hidden, 1,
            x.full};
        b.launches(chunks * (3.0 + (x.full ? (x.mixed ? 2.0 : 1.0) : 0.0)) + 4.0, x.full ? 2.0 : 1.0);
        break;
      }
      b.open("lm_head", OpKind::gemm).gemm = {Role::lm_head, tr.tokens_per_micro_batch(),
                                              std::max<std::int64_t>(1, a.vocab / tr.tp), a.hidden, 1, x.full};
      b.launches(1.0, x.full ? 2.0 : 1.0);
      // logits.float(), log_softmax, nll_loss and the labels' shift, each way.
      b.open("loss", OpKind::reduction);
      b.launches(4.0, 4.0);
      if (softcaps_logits(a, tr)) {  // Gemma 2: / cap, tanh, * cap
        b.open("logit soft-cap", OpKind::elementwise);
        b.launches(3.0, 3.0);
      }
      break;
    }
  }
}

Architecture nope_variant(const Architecture& a) {
  Architecture v = a;
  v.position = PositionKind::none;
  v.qk_norm = QkNorm::none;
  v.sliding_window = 0;
  v.sliding_layers = 0;
  v.nope_interval = 0;
  return v;
}

Architecture layer_architecture(const Architecture& a, Stack stack, std::int64_t layer) {
  if (stack != Stack::decoder) return a;
  const Architecture kind = !a.encoder_decoder && a.dense_layer(layer) ? dense_variant(a) : a;
  return a.nope_layer(layer) ? nope_variant(kind) : kind;
}

StackOps stack_ops(const Architecture& a, const Training& tr, Stack stack) {
  StackOps s;
  build_stack_ops(a, tr, stack, s);
  return s;
}

void build_model_ops(const Architecture& a, const Training& tr, ModelOps& out, StackLinears linears) {
  if (a.encoder_decoder) build_stack_ops(a, tr, Stack::encoder, out.encoder, linears.encoder);
  build_stack_ops(a, tr, Stack::decoder, out.decoder, linears.decoder);
  build_edge_ops(a, tr, Edge::embedding, out.embedding);
  build_edge_ops(a, tr, Edge::head, out.head);
}

ModelOps model_ops(const Architecture& a, const Training& tr) {
  ModelOps m;
  build_model_ops(a, tr, m);
  return m;
}

LinearShard linear_shard(const Architecture& a, const Linear& l, int tp) {
  switch (l.role) {
    case Role::q:
    case Role::k:
    case Role::v:
    case Role::gate:
    case Role::up:
    case Role::lm_head: {  // column-parallel
      const bool kv = l.role == Role::k || l.role == Role::v;
      const std::int64_t n = kv ? std::max(l.out / tp, a.head_dim) : l.out / tp;
      return {l.in, std::max<std::int64_t>(n, 1)};
    }
    case Role::o:
    case Role::down:  // row-parallel
      return {std::max<std::int64_t>(l.in / tp, 1), l.out};
    case Role::kv_b:  // column-parallel over the heads
      return {l.in, std::max<std::int64_t>(l.out / tp, 1)};
    case Role::router:  // replicated (and latent attention's compressions)
    case Role::q_a:
    case Role::kv_a:
      return {l.in, l.out};
  }
  return {l.in, l.out};
}

double rms_input_bytes(const OpListVariant& family, const Training& tr) {
  const double r = param_bytes(tr.precision);
  return kFp32 + (family.norm_keeps_model_dtype_input && r < kFp32 ? r : 0.0);
}

bool sdpa_explicit_mask(const Architecture& a, const Training& tr) {
  return attention_executed(a, tr, tr.cuda_sm) == Attention::sdpa &&
         (hf_sdpa_call(a, tr).always_mask || sliding_window_masked(a, tr));
}

}  // namespace trainplan::model
