#include "trainplan/model/activations.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <span>
#include <string_view>

#include "trainplan/model/block_ops.hpp"
#include "trainplan/model/family.hpp"
#include "trainplan/model/library.hpp"
#include "trainplan/model/model_states.hpp"
#include "trainplan/model/partial.hpp"
#include "trainplan/model/sdpa.hpp"

namespace trainplan::model {
namespace {

constexpr double kMaskBytes = 1.0;  // dropout masks are bool tensors
constexpr double kFp32 = 4.0;

BlockActivations activations_of(const BlockOps& ops, const Training& tr) {
  return {ops.saved_bytes(), ops.saved_core_bytes(), ops.runs_backward, ops.checkpointed, op_sac_saved_bytes(ops, tr),
          ops.held_bytes(), context_exchange(ops, tr)};
}

}  // namespace

bool holds_previous_micro_batch(const Training& tr) {
  return library_traits(tr.library).logits_kept && qlora_stack_traits(tr).keeps_input;
}

BlockActivations block_activations(const Architecture& a, const Training& tr, Stack stack) {
  return activations_of(block_ops(a, tr, stack), tr);
}

std::vector<ActivationTerm> block_activation_terms(const Architecture& a, const Training& tr, Stack stack) {
  const BlockOps ops = block_ops(a, tr, stack);
  std::vector<ActivationTerm> terms;
  terms.reserve(ops.saved.size());
  for (const SavedTensor& t : ops.saved) terms.push_back({t.name, t.bytes});
  return terms;
}

ResolvedBlocks resolve_blocks(const Architecture& a, const Training& tr) {
  return resolve_blocks(a, tr, model_ops(a, tr));
}

ResolvedBlocks resolve_blocks(const Architecture& a, const Training& tr, const ModelOps& ops) {
  ResolvedBlocks r;
  r.attention = ops.decoder.block.run.runs;
  r.explicit_mask = sdpa_explicit_mask(a, tr);
  r.variant = op_variant(a, tr);
  const bool hf = tr.framework != Framework::megatron;
  for (Stack stack : {Stack::encoder, Stack::decoder}) {
    if (stack == Stack::encoder && !a.encoder_decoder) continue;
    StackBlock& sb = stack == Stack::encoder ? r.encoder : r.decoder;
    const StackOps& so = ops.of(stack);
    sb.block = activations_of(so.block, tr);
    sb.block_share = so.block_share;
    sb.variants.clear();
    for (const LayerVariant& v : so.variants) sb.variants.emplace_back(activations_of(v.ops, tr), v.share);
    if (hf && !recomputes_blocks(tr.checkpointing)) {
      // The first block differs where its input needs no gradient (adapters over a frozen
      // embedding) or it keeps what later blocks share (block_ops).
      const bool same = tr.method == Method::full && a.relative_buckets == 0 &&
                        !(stack == Stack::decoder && a.encoder_decoder);
      if (!same) {
        // Layer 0 is of the main kind unless it is a dense or a NoPE layer.
        const bool main_kind = !a.dense_layer(0) && !(stack == Stack::decoder && a.nope_layer(0));
        if (main_kind) {
          sb.first_extra = block_ops(a, tr, stack, true).saved_bytes() - sb.block.saved;
        } else {
          const Architecture first = layer_architecture(a, stack, 0);
          sb.first_extra = block_ops(first, tr, stack, true).saved_bytes() - block_ops(first, tr, stack).saved_bytes();
        }
      }
    }
  }
  return r;
}

namespace {

// first_block_extra from the resolved blocks.
Bytes first_block_extra(const Architecture& a, const Training& tr, Stack stack, const ResolvedBlocks& blocks) {
  if (tr.framework == Framework::megatron) return Bytes(0.0);
  const double c = compute_bytes(tr.precision);
  const double s = static_cast<double>(tr.seq);
  const double q = static_cast<double>(tr.local_seq());  // positions on this rank
  double extra = 0.0;
  const bool rotary = a.position == PositionKind::rotary;
  // cos, sin: in the model dtype, but fp32 where the model's rotary embedding returns them
  // uncast (OLMo 2's Olmo2RotaryEmbedding.forward).
  const double table = blocks.variant.fp32_rotary_tables ? kFp32 : c;
  // DeepSeek-V2's one complex64 table of s x d/2: 8 bytes per pair of dims.
  if (rotary)
    extra += (blocks.variant.complex_rotary_table ? 4.0 : 2.0 * table) * q * static_cast<double>(a.rotary_dim());
  if (recomputes_blocks(tr.checkpointing)) {
    if (rotary) extra += 8.0 * q;  // int64 position ids
    // The mask every checkpointed block is handed: eager's additive one in the model dtype, or
    // SDPA's boolean one where the model builds it.
    const double b = static_cast<double>(tr.sequences());
    if (blocks.attention == Attention::eager) extra += c * b * q * s;
    if (blocks.explicit_mask) extra += kMaskBytes * b * q * s;
    // The encoder output, an input of every checkpointed decoder block.
    if (stack == Stack::decoder && a.encoder_decoder)
      extra += param_bytes(tr.precision) * static_cast<double>(tr.tokens_per_micro_batch() * a.hidden);
  }
  const double rep = tr.sequence_parallel ? static_cast<double>(tr.tp) : 1.0;
  Bytes out(extra / rep);
  const StackBlock& sb = blocks.of(stack);
  if (!recomputes_blocks(tr.checkpointing)) out += sb.first_extra;
  return out;
}

// kept_per_block of a block whose activations without checkpointing are `blk`, `extra` its
// first_block_extra.
Bytes kept_after_policy(const Architecture& a, const Training& tr, const BlockActivations& blk, Bytes extra) {
  // A layer below every one that needs a gradient keeps nothing of its own, but torch's
  // non-reentrant checkpoint still holds its input through forward (_NoopSaveInputs saves the
  // arguments whatever needs a gradient; measured by the oracle's partial fine-tuning cases).
  // What the first block keeps for the others (rotary tables) the first block that records keeps.
  if (!blk.runs_backward)
    return tr.checkpointing == Checkpointing::full && blk.checkpointed ? checkpoint_bytes(a, tr) + extra : Bytes(0.0);
  if (!blk.checkpointed) return blk.saved + extra;
  switch (tr.checkpointing) {
    case Checkpointing::none: return blk.saved + extra;
    case Checkpointing::selective: return blk.saved - blk.attention + extra;
    case Checkpointing::full: return checkpoint_bytes(a, tr) + extra;
    case Checkpointing::full_offload: return extra;  // the checkpoint itself waits on the host
    case Checkpointing::selective_op: return checkpoint_bytes(a, tr) + blk.op_sac_outputs + extra;
  }
  return extra;
}

}  // namespace

Bytes first_block_extra(const Architecture& a, const Training& tr, Stack stack) {
  return first_block_extra(a, tr, stack, resolve_blocks(a, tr));
}

Bytes kept_per_block(const Architecture& a, const Training& tr, Stack stack, bool first) {
  const ResolvedBlocks blocks = resolve_blocks(a, tr);
  const Bytes extra = first ? first_block_extra(a, tr, stack, blocks) : Bytes(0.0);
  return kept_after_policy(a, tr, blocks.of(stack).block, extra);
}

Bytes kept_per_layer(const Architecture& a, const Training& tr, std::int64_t layer) {
  const ResolvedBlocks blocks = resolve_blocks(a, tr);
  const Stack stack = a.encoder_decoder && layer < a.layers ? Stack::encoder : Stack::decoder;
  const bool first = layer == 0 || (a.encoder_decoder && layer == a.layers);
  const Bytes extra = first ? first_block_extra(a, tr, stack, blocks) : Bytes(0.0);
  const std::int64_t in_stack = stack == Stack::decoder && a.encoder_decoder ? layer - a.layers : layer;
  Training layer_tr = tr;
  if (stack == Stack::decoder) layer_tr.layer = layer_state(a, tr, in_stack);
  if (stack == Stack::decoder) layer_tr.layer_checkpointed = checkpoint_picks(a, tr, in_stack);
  const bool entry = stack == Stack::decoder && entry_layer(a, tr, in_stack);
  const BlockActivations own =
      activations_of(block_ops(layer_architecture(a, stack, in_stack), layer_tr, stack, entry), layer_tr);
  return kept_after_policy(a, tr, own, extra);
}

Bytes checkpoint_bytes(const Architecture& a, const Training& tr) {
  // The block's input in the residual stream's dtype: 16-bit in Megatron and under FSDP's 16-bit
  // gathering (Training::computes_in_gathered_16bit), the parameters' otherwise.
  const double r = tr.framework == Framework::megatron ? 2.0
                   : tr.computes_in_gathered_16bit()   ? compute_bytes(tr.precision)
                                                       : param_bytes(tr.precision);
  const double rep = tr.sequence_parallel ? static_cast<double>(tr.tp) : 1.0;
  return Bytes(r * static_cast<double>(tr.tokens_per_micro_batch() * a.hidden) / rep);
}

Bytes embedding_activations(const Architecture& a, const Training& tr) {
  // Korthikanti Sec. 4.3: the embedding dropout mask, s*b*h per first stage.
  const double t = static_cast<double>(tr.tokens_per_micro_batch());
  const double th = t * static_cast<double>(a.hidden);
  const double rep = tr.sequence_parallel ? static_cast<double>(tr.tp) : 1.0;
  if (tr.framework == Framework::megatron) return Bytes(th / rep);
  // The token ids (int64) for the embedding's gradient, and the embedding dropout mask.
  const double ids = tr.method == Method::full && (!tr.partial.active || tr.partial.embedding) ? 8.0 * t : 0.0;
  return Bytes(ids + (hidden_dropout(a, tr) > 0.0 ? kMaskBytes * th / rep : 0.0));
}

namespace {
HeadActivations head_activations(const Architecture& a, const Training& tr, const OpListVariant& family);
}  // namespace

HeadActivations head_activations(const Architecture& a, const Training& tr) {
  return head_activations(a, tr, op_variant(a, tr));
}

namespace {
// What the final norm keeps over t tokens, as a block's norm does.
double final_norm_bytes(const Architecture& a, const Training& tr, const OpListVariant& family, double t) {
  const double h = static_cast<double>(a.hidden);
  const double r = param_bytes(tr.precision);
  const double s = is_mixed(tr.precision) ? kFp32 : r;  // the residual stream's dtype
  // Its weight trains under full training (not under partial fine-tuning, whose subset names
  // blocks, the embedding and the head).
  const bool full = tr.method == Method::full && !tr.partial.active;
  switch (a.norm) {
    case NormKind::rmsnorm:
      // Liger's RMSNorm keeps its input as it came and rstd (block_ops.hpp fused_rms_norm_kernels);
      // so does one in the input's dtype, with its normalised input where the weight trains.
      if (family.rms_norm_in_input_dtype && !family.fused_norm) return s * t * h + kFp32 * t + (full ? s * t * h : 0.0);
      return family.fused_norm ? s * t * h + kFp32 * t
                               : rms_input_bytes(family, tr) * t * h + kFp32 * t +
                                     (full ? (family.fp32_normalised_norm ? kFp32 : r) * t * h : 0.0);
    case NormKind::layernorm:
    case NormKind::layernorm_no_bias: return s * (t * h + 2.0 * t);
  }
  return 0.0;
}

// The share of a sequence's logits one chunk of the loss holds (1 for a loss in one pass).
double loss_chunk_share(const OpListVariant& family, const Training& tr) {
  const double positions = static_cast<double>(family.loss_chunk_positions);
  return positions > 0.0 ? std::min(1.0, positions / static_cast<double>(tr.seq)) : 1.0;
}

// Bytes per logit alive beyond what the loss saves, at the larger of two moments: inside the loss,
// the model-dtype logits where nothing else holds them and their fp32 upcast; or the start of its
// backward, the dense gradients of one chunk (a chunked loss, litgpt) or of all the logits. Logits
// the loop receives cast to fp32 were cast before the loss, the model-dtype originals beside their
// fp32 copies while the loss had saved nothing yet: that moment counts only by what it exceeds the
// loss's saved tensors by (lit-gpt 8641822's step replayed on an H200 peaks in backward:
// data/measurements/h200-2026-11-29-litgpt).
double loss_transient_per_logit(const OpListVariant& family, const Training& tr, double c, double kept,
                                double loss_bytes) {
  const double chunk = loss_chunk_share(family, tr);
  // A chunked loss upcasts chunk by chunk (torchtune's CEWithChunkedOutputLoss: logits.float()
  // per chunk), so one chunk's upcast copy is alive at a time.
  const double at_cast = family.logits_fp32 ? c + kFp32 - (kept + loss_bytes) : 0.0;
  const double in_loss = family.logits_fp32
                             ? (family.logits_kept ? 0.0 : kFp32)
                             : (family.logits_kept ? 0.0 : c) + (family.loss_in_model_dtype ? 0.0 : kFp32 * chunk);
  return std::max({at_cast, in_loss, 2.0 * loss_bytes * chunk});
}

// The head, the family's op-list variant looked up by the caller (the evaluator's per-shape cache).
HeadActivations head_activations(const Architecture& a, const Training& tr, const OpListVariant& family) {
  const double t = static_cast<double>(tr.tokens_per_micro_batch());
  const double h = static_cast<double>(a.hidden);
  const double V = static_cast<double>(a.vocab);
  const double tp = static_cast<double>(tr.tp);
  if (tr.framework == Framework::megatron) {
    // Korthikanti Sec. 4.3: final norm and output-layer input, fp32 logits for the loss.
    return {Bytes(4.0 * t * h / tp * (1.0 + V / h)), Bytes(0.0), Bytes(0.0), Bytes(0.0), Bytes(0.0)};
  }
  const double c = compute_bytes(tr.precision);
  const double r = param_bytes(tr.precision);
  const bool mixed = is_mixed(tr.precision);
  // The head's weight trains under full training, partial fine-tuning that names it, or an adapter
  // on it.
  const bool head_trainable = (tr.method == Method::full && (!tr.partial.active || tr.partial.head)) ||
                              lora_targets_lm_head(a, tr.lora);
  // Final norm as in a block, then the LM head's input.
  double norm = final_norm_bytes(a, tr, family, t);
  const double s = mixed ? kFp32 : r;  // the residual stream's dtype
  if (family.fused_linear_loss) {
    // Liger's fused linear cross-entropy computes the gradients of the head's input (in the
    // hidden states' dtype) and weight in forward and keeps them; no logits survive it, and the
    // head's own input is not kept. The weight's gradient is the head's gradient itself, counted
    // with the gradients (it exists from forward on, as the first gradient of backward does in
    // eager). The int64 labels and the fp32 per-row losses stay. Transient: one chunk's logits in
    // the compute dtype.
    const double chunk = static_cast<double>(fused_linear_loss_chunks(a, tr).rows);
    return {Bytes(norm + s * t * h + 12.0 * t), Bytes(c * chunk * V / tp), Bytes(0.0), Bytes(0.0), Bytes(0.0)};
  }
  // The head's input: kept for its weight's gradient, and by a 4-bit head whose matmul keeps its
  // input (model_states.hpp QloraStackTraits), which also holds it past backward.
  const QloraStackTraits quant = qlora_stack_traits(tr);
  const bool held_by_head = quant.keeps_input && quant.quantizes_head;
  const double head_input = head_trainable || held_by_head ? (mixed ? c : r) * t * h : 0.0;
  norm += head_input;
  const Bytes held(held_by_head ? head_input : 0.0);
  // T5 drops out the final norm's output.
  if (family.feed_forward_dropout && hidden_dropout(a, tr) > 0.0) norm += kMaskBytes * t * h;
  // The loss: causal LMs upcast the logits and keep the fp32 log-softmax (T5 stays in the model
  // dtype), plus the int64 labels (transformers v5.17.0 loss/loss_utils.py:59 ForCausalLMLoss:
  // logits.float(); torch's cross_entropy is log_softmax then nll_loss, aten/src/ATen/native/
  // LossNLL.cpp cross_entropy_loss_symint). The largest of two moments is transient:
  // - forward, inside the loss: the model-dtype logits and their upcast copy;
  // - the start of backward: nll_loss_backward's dense gradient (zeroed, then scattered) and
  //   log_softmax_backward's output, both in the loss dtype, beside the saved log-softmax. The
  //   logits themselves are gone by then: the Trainer (v5.17.0 trainer.py:2088-2135 compute_loss
  //   returns the loss alone) and a plain `model(...).loss` keep only the loss.
  // Logits that reach the loop cast to fp32 (lightning Fabric) are the loss's input and the kept
  // copy; the model-dtype original lives only while it is cast.
  const double logits = family.logits_fp32 ? kFp32 : c;
  const double loss_bytes = family.loss_in_model_dtype ? logits : kFp32;
  // Gemma 2 soft-caps the logits, cap * tanh(logits / cap): tanh keeps its output, in the
  // logits' dtype (modeling_gemma2.py Gemma2ForCausalLM.forward).
  const double softcap = softcaps_logits(a, tr) ? c * t * V / tp : 0.0;
  // A loop that keeps the logits (litgpt) holds them beside the log-softmax; the forward moment
  // then adds only the upcast copy, if any.
  const double kept = family.logits_kept ? logits : 0.0;
  if (family.fused_loss) {
    // The fused kernel keeps the logits (and an fp32 log-sum-exp per row); backward writes one
    // gradient of the logits. Compiled, the kept logits are the loss dtype's upcast.
    // A loss compiled apart keeps the logits it receives and writes their gradient chunk by chunk.
    const double chunk = loss_chunk_share(family, tr);
    const double fused_logits = family.loss_compiled_apart ? logits : family.compiled ? loss_bytes : c;
    const double gradient = family.loss_compiled_apart ? logits * chunk : c;
    const double saved = norm + softcap + fused_logits * t * V / tp + kFp32 * t + 8.0 * t;
    return {Bytes(saved), Bytes(gradient * t * V / tp), Bytes(0.0), Bytes(0.0), held};
  }
  const double saved = norm + softcap + (kept + loss_bytes) * t * V / tp + 8.0 * t;
  const double transient = loss_transient_per_logit(family, tr, c, kept, loss_bytes) * t * V / tp;
  // As forward ends, before the loss: the model-dtype logits (a loop that keeps its logits local
  // still holds the previous micro-batch's), and the loop's upcast copy or, during the last 4-bit
  // head matmul before it, the head's dequantized weight (a buffer), whichever is larger.
  const double dequantized = held_by_head ? dequantized_bytes_per_weight(tr) * h * V / tp : 0.0;
  const double upcast = family.logits_fp32 ? kFp32 * t * V / tp : 0.0;
  const double forward_end = norm + softcap + (c + kept * tr.previous_share) * t * V / tp + 8.0 * t;
  return {Bytes(saved), Bytes(transient), Bytes(forward_end + (upcast >= dequantized ? upcast : 0.0)),
          Bytes(upcast >= dequantized ? 0.0 : dequantized), held};
}

// The head's activations on the last stage and, where a loop keeps the previous micro-batch's
// graph alive into the next forward (litgpt's `logits` local), the end of that forward: what 4-bit
// matmuls hold past backward (`held`: the blocks', with the head's own input) is still alive,
// beside the previous logits (head.forward_end), for the previous micro-batch's tokens
// (Training::previous_share).
void add_head(const Architecture& a, const Training& tr, const ResolvedBlocks& blocks, Bytes held,
              ActivationMemory& m) {
  const HeadActivations head = head_activations(a, tr, blocks.variant);
  m.head = head.total();
  const Bytes previous = (held + head.held) * tr.previous_share;
  if (holds_previous_micro_batch(tr) && previous.value() > 0.0) {
    m.forward_end = m.blocks + m.embedding + head.forward_end + previous;
    m.forward_end_weight = head.forward_end_weight;
  }
}

// What waits on the host. Checkpoints (full-offload): every block's input goes to the host as
// forward passes it and comes back for its backward (m.host); two are on the GPU in transit (one
// copied out or prefetched while the next computes), returned.
// Activations on the host (Training::offload_activation_layers): what N layers keep goes out the
// same way (Transformer Engine's AsyncDoubleBufferGroupOffloadHandler: a layer's tensors copied
// out while the next layer runs, prefetched back while the layer after it runs backward): those
// N layers leave `kept`, one is on the GPU in transit.
Bytes offloaded_activations(const Architecture& a, const Training& tr, double layers_on_stage, Bytes& kept,
                            ActivationMemory& m) {
  if (tr.offload_activation_layers > 0) {
    const double n = std::min(static_cast<double>(tr.offload_activation_layers), layers_on_stage);
    const Bytes layer = kept / layers_on_stage;
    kept = kept - layer * n;
    m.host = layer * n;
    return layer;
  }
  if (tr.checkpointing != Checkpointing::full_offload) return Bytes(0.0);
  const Bytes ckpt = checkpoint_bytes(a, tr);
  m.host = ckpt * layers_on_stage;
  return ckpt * 2.0;
}

// 1F1B: the first stage holds min(p, m) micro-batches; interleaving with v chunks adds
// (p-1)/(p*v) (Narayanan et al. 2021, arXiv:2104.04473; Korthikanti Sec. 4.2.3). The last stage
// runs each micro-batch's backward right after its forward: one in flight; interleaved, its
// warm-up of (v-1) p chunk micro-batches and the one in 1F1B, of m v, each 1/v of the stage's
// layers (Megatron-LM @ d98e8a6, pipeline_parallel/schedules.py get_pp_rank_microbatches).
double micro_batches_in_flight(const Training& tr, bool first) {
  if (tr.pp == 1) return 1.0;
  const double p = static_cast<double>(tr.pp);
  const double micro_batches = static_cast<double>(tr.grad_accum);
  const double v = static_cast<double>(tr.pp_virtual);
  if (first) return std::min(p, micro_batches) * (tr.pp_virtual > 1 ? 1.0 + (p - 1.0) / (p * v) : 1.0);
  return std::min((v - 1.0) * p + 1.0, micro_batches * v) / v;
}

}  // namespace

ActivationMemory activation_memory(const Architecture& a, const Training& tr) {
  return activation_memory(a, tr, resolve_blocks(a, tr));
}

ActivationMemory activation_memory(const Architecture& a, const Training& tr, const ResolvedBlocks& blocks,
                                   PipelineStage stage) {
  ActivationMemory m;
  m.stage = stage;
  const bool first = stage == PipelineStage::first || tr.pp == 1;
  const bool last = stage == PipelineStage::last || tr.pp == 1;
  // Per-stack blocks and layer counts (an encoder-decoder has two stacks, encoder first).
  struct StackPart {
    Stack stack = Stack::decoder;
    const BlockActivations* blk = nullptr;
    double layers = 0;
  };
  std::array<StackPart, 2> stacks;
  std::size_t stack_count = 0;
  if (a.encoder_decoder) stacks[stack_count++] = {Stack::encoder, &blocks.encoder.block, static_cast<double>(a.layers)};
  stacks[stack_count++] = {Stack::decoder, &blocks.decoder.block,
                           static_cast<double>(a.encoder_decoder ? a.decoder_layers : a.layers)};
  const std::span<const StackPart> parts(stacks.data(), stack_count);
  const double all_layers = static_cast<double>(a.total_layers());
  const double p = static_cast<double>(tr.pp);
  const double layers_on_stage = std::ceil(all_layers / p);

  Bytes kept;        // per micro-batch, all blocks of the stage
  Bytes largest;     // one block's full activations (rebuilt in backward under full checkpointing)
  Bytes held;        // of kept, what 4-bit matmuls hold past backward (SavedTensor::held)
  for (const auto& part : parts) {
    const double share = part.layers / all_layers * layers_on_stage;
    const StackBlock& sb = blocks.of(part.stack);
    const auto add = [&](const BlockActivations& blk, double of_stage) {
      kept += kept_after_policy(a, tr, blk, Bytes(0.0)) * of_stage;
      if (blk.runs_backward && blk.checkpointed) largest = std::max(largest, blk.saved);
      m.exchange = {std::max(m.exchange.forward, blk.exchange.forward),
                    std::max(m.exchange.backward, blk.exchange.backward)};
      if (blk.runs_backward && (!blk.checkpointed || !recomputes_blocks(tr.checkpointing))) held += blk.held * of_stage;
    };
    add(*part.blk, share * sb.block_share);
    // The stage's other kinds of layer, in the model's proportion.
    for (const auto& [blk, variant_share] : sb.variants) add(blk, share * variant_share);
  }
  // Groups of blocks checkpointed together keep one input a group and rebuild a group at once.
  const CheckpointGroups groups = checkpoint_groups(a, tr);
  kept = kept * groups.kept_share;
  m.per_block = kept / layers_on_stage;
  if (recomputes_blocks(tr.checkpointing)) m.recompute_peak = largest * groups.rebuilt;
  const Bytes in_transit = offloaded_activations(a, tr, layers_on_stage, kept, m);

  m.in_flight = micro_batches_in_flight(tr, first);
  Bytes firsts;  // what the first block of each stack keeps beyond the others
  if (first)
    for (const auto& part : parts) firsts += first_block_extra(a, tr, part.stack, blocks);
  m.blocks = (kept + firsts) * m.in_flight + in_transit;
  m.host = m.host * m.in_flight;
  m.embedding = first ? embedding_activations(a, tr) * m.in_flight : Bytes(0.0);
  if (last) add_head(a, tr, blocks, held, m);
  // Multi-token prediction (last stage, like the head): per module its block (of the main kind),
  // the inputs of its two norms and of its projection (4 h per token) and its head's; they are
  // freed by its backward before the model's last block is replayed, as the head's are.
  if (a.mtp_layers > 0 && last) {
    const double rep = tr.sequence_parallel ? static_cast<double>(tr.tp) : 1.0;
    const Bytes inputs(4.0 * compute_bytes(tr.precision) * static_cast<double>(tr.tokens_per_micro_batch() * a.hidden) / rep);
    m.head += (kept_after_policy(a, tr, blocks.decoder.block, Bytes(0.0)) + inputs + m.head) *
              static_cast<double>(a.mtp_layers);
  }
  return m;
}

void add_activation_detail(ActivationMemory& m, const Architecture& a, const Training& tr) {
  m.sdpa.reset();
  m.block_terms.clear();
  if (tr.attention == Attention::sdpa && tr.framework != Framework::megatron) m.sdpa = sdpa_choice(a, tr);
  if (a.encoder_decoder) m.block_terms.push_back({Stack::encoder, block_activation_terms(a, tr, Stack::encoder)});
  m.block_terms.push_back({Stack::decoder, block_activation_terms(a, tr, Stack::decoder)});
}

}  // namespace trainplan::model
