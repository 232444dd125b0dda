#include "trainplan/model/flops.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "trainplan/model/block_ops.hpp"
#include "trainplan/model/fp8.hpp"
#include "trainplan/model/library.hpp"
#include "trainplan/model/partial.hpp"
#include "trainplan/model/lora.hpp"
#include "trainplan/model/sdpa.hpp"

namespace trainplan::model {
namespace {

// Forward multiply-adds x 2 per token of one block's linears (MoE: only the routed top-k experts).
double block_linear_flops_per_token(const Architecture& a, Stack s) {
  double f = 0.0;
  for (const Linear& l : block_linears(a, s)) {
    const double copies = l.copies > 1 ? static_cast<double>(a.expert_runs()) : 1.0;
    f += 2.0 * copies * static_cast<double>(l.in * l.out);
  }
  return f;
}

// QK^T and PV: 2 * (a*d) + 2 * (a*d_v) per token per token of context (non-causal count); d_v = d
// except under multi-head latent attention.
double attention_flops_per_token_per_context(const Architecture& a) {
  return 2.0 * static_cast<double>(a.q_dim() + a.attention_out_dim());
}

[[nodiscard]] bool reads_block_input(const Architecture& a, const Linear& l, Stack stack) {
  if (l.stack != stack) return false;  // cross-attention reads the encoder and the decoder state
  switch (l.role) {
    case Role::q:  // under latent attention with a query compression, q expands q_a's output
      return !(a.mla() && a.q_lora_rank > 0);
    case Role::k:
    case Role::v:
    case Role::q_a:
    case Role::kv_a:
      return true;
    case Role::kv_b:
      return false;
    case Role::gate:
    case Role::up:
      return a.parallel_residual;  // attention and MLP read the same input
    case Role::o:
    case Role::down:
    case Role::router:
    case Role::lm_head:
      return false;
  }
  return false;
}

struct StackRules {
  double last_matmul = 0;    // per token, one block
  double frozen_inputs = 0;  // per token, first block
  double frozen_kv = 0;      // per token per context token, first block (eager attention)
};

// Which linears carry an adapter: PEFT on a fused q/k/v projection adapts it whole, once.
StackRules stack_rules(const Architecture& a, const Training& tr, Stack stack) {
  StackRules r;
  const bool adapters = tr.method != Method::full;
  const auto& targets = tr.lora.targets;
  auto named = [&](const std::string& n) {
    return std::find(targets.begin(), targets.end(), n) != targets.end();
  };
  const bool fused_whole =
      adapters && !a.fused_qkv_name.empty() && (named("all-linear") || named(a.fused_qkv_name));
  const double rank = static_cast<double>(tr.lora.rank);
  bool fused_counted = false;
  bool k_frozen = true;
  bool v_frozen = true;
  // Latent attention: q (after a compression) and kv_b read what q_a and kv_a make of the block
  // input, which needs no gradient either while those are frozen.
  const bool q_a_frozen = !(adapters && lora_adapts(a, tr.lora, Role::q_a));
  const bool kv_a_frozen = !(adapters && lora_adapts(a, tr.lora, Role::kv_a));
  for (const Linear& l : block_linears(a, stack)) {
    const double copies = l.copies > 1 ? static_cast<double>(a.expert_runs()) : 1.0;
    const bool fused_part = !a.fused_qkv_name.empty() && l.hf_name == a.fused_qkv_name;
    bool adapted = false;
    bool reads_a = false;  // this linear's adapter A reads the block input
    if (adapters) {
      if (fused_part && fused_whole) {
        adapted = true;
        reads_a = !fused_counted;
        fused_counted = true;
      } else if (l.role != Role::router && lora_adapts(a, tr.lora, l.role)) {
        adapted = true;
        reads_a = true;
      }
    }
    // Latent attention's keys and values both come out of kv_b (and kv_a before it).
    if (l.stack == stack && (l.role == Role::k || l.role == Role::kv_a || l.role == Role::kv_b))
      k_frozen = k_frozen && !adapted;
    if (l.stack == stack && (l.role == Role::v || l.role == Role::kv_a || l.role == Role::kv_b))
      v_frozen = v_frozen && !adapted;
    if (l.role == Role::down)
      r.last_matmul = 2.0 * copies * static_cast<double>(l.in * l.out) +
                      (adapted ? 2.0 * copies * rank * static_cast<double>(l.out) : 0.0);
    const bool frozen_input = reads_block_input(a, l, stack) ||
                              (a.mla() && l.stack == stack &&
                               ((l.role == Role::q && a.q_lora_rank > 0 && q_a_frozen) ||
                                (l.role == Role::kv_b && kv_a_frozen)));
    if (adapters && frozen_input) {
      r.frozen_inputs += 2.0 * copies * static_cast<double>(l.in * l.out);
      if (reads_a) r.frozen_inputs += 2.0 * copies * rank * static_cast<double>(l.in);
    }
  }
  if (adapters) {  // K and V expanded to every query head
    r.frozen_kv = (k_frozen ? 2.0 * static_cast<double>(a.q_dim()) : 0.0) +
                  (v_frozen ? 2.0 * static_cast<double>(a.attention_out_dim()) : 0.0);
  }
  return r;
}

[[nodiscard]] bool fused_attention(Attention at) {
  switch (at) {
    case Attention::flash:
    case Attention::triton:
    case Attention::sdpa:
      return true;
    case Attention::eager:
      return false;
  }
  return false;
}

// The entry layer's input needs no gradient, nor does what only frozen weights produce from it
// (partial.hpp entry_input_gradient).
void entry_skips(const Architecture& ka, const Training& tr, FlopCoefficients& k) {
  for (const Linear& l : block_linears(ka, Stack::decoder))
    if (!entry_input_gradient(tr, l.role))
      k.entry_input_grads_skipped +=
          2.0 * (l.copies > 1 ? static_cast<double>(ka.expert_runs()) : 1.0) * static_cast<double>(l.in * l.out);
  if (!entry_attention_backward(tr)) k.entry_attention_skipped += attention_flops_per_token_per_context(ka);
}

// Partial fine-tuning: the trained weights' FLOPs and the layers that run a backward (the head
// always passes the gradient down while any layer below needs it).
void partial_flops(const Architecture& a, const Training& tr, FlopCoefficients& k) {
  k.partial = true;
  const TrainedSubset& s = tr.partial;
  const auto trained_per_token = [&](const Architecture& ka) {
    double f = 0.0;
    for (const Linear& l : block_linears(ka, Stack::decoder))
      if ((s.roles & role_bit(l.role)) != 0)
        f += 2.0 * (l.copies > 1 ? static_cast<double>(ka.expert_runs()) : 1.0) * static_cast<double>(l.in * l.out);
    return f;
  };
  const double expert_layer = trained_per_token(a);
  const double dense_layer = a.dense_layers() > 0 ? trained_per_token(dense_variant(a)) : expert_layer;
  k.trained = 0.0;
  double backward_layers = 0.0;
  double replayed_trained = 0.0;  // of the layers Training::checkpoint_every picks
  double replayed_backward = 0.0;
  for (std::int64_t i = 0; i < a.layers; ++i) {
    const LayerState st = layer_state(a, tr, i);
    const double picked = checkpoint_picks(a, tr, i) ? 1.0 : 0.0;
    if (st == LayerState::trained) k.trained += a.dense_layer(i) ? dense_layer : expert_layer;
    if (st == LayerState::trained) replayed_trained += picked;
    if (st != LayerState::no_backward) backward_layers += 1.0;
    if (st != LayerState::no_backward) replayed_backward += picked;
  }
  if (s.head || (a.tie_embeddings && s.embedding)) k.trained += k.head;
  for (std::int64_t i = 0; i < a.layers; ++i)
    if (entry_layer(a, tr, i) && !s.norms) entry_skips(a.dense_layer(i) ? dense_variant(a) : a, tr, k);
  k.backward_share = a.layers > 0 ? backward_layers / static_cast<double>(a.layers) : 0.0;
  k.replay_share = a.layers > 0 ? (tr.checkpoint_trained_only ? replayed_trained : replayed_backward) /
                                      static_cast<double>(a.layers)
                                : 0.0;
}

}  // namespace

FlopCoefficients flop_coefficients(const Architecture& a, const Training& tr) {
  FlopCoefficients k;
  k.full = tr.method == Method::full;
  k.sdpa_path = hf_sdpa_call(a, tr).supported;
  // The CPU dispatch decides (model/sdpa.hpp): its flash kernel refuses unequal head dims.
  Training cpu = tr;
  cpu.cuda_sm = 0;
  k.sdpa_cpu_math = k.sdpa_path && sdpa_choice(a, cpu).kernel == SdpaKernel::math;
  k.head = 2.0 * static_cast<double>(a.hidden * a.vocab);
  const double r = static_cast<double>(tr.lora.rank);
  // The adapters' forward FLOPs per token of one block of this kind (none when fully trained).
  const auto adapter_flops = [&](const Architecture& ka, Stack stack) {
    double f = 0.0;
    if (!k.full)
      for (const auto& ad : lora_block_adapters(ka, tr.lora, stack))
        f += 2.0 * r * static_cast<double>(ad.in + ad.out) * (ad.copies > 1 ? static_cast<double>(ka.expert_runs()) : 1.0);
    return f;
  };
  for_each_layer_kind(a, [&](const Architecture& ka, Stack stack, std::int64_t count, bool first) {
    const double layers = static_cast<double>(count);
    k.linear += layers * block_linear_flops_per_token(ka, stack);
    // An encoder-decoder's decoder attends twice (self and cross).
    k.attention += (stack == Stack::decoder && a.encoder_decoder ? 2.0 : 1.0) * layers *
                   attention_flops_per_token_per_context(ka);
    k.adapters += layers * adapter_flops(ka, stack);
    int mm = 0;
    for (const Linear& l : block_linears(ka, stack)) {
      if (l.copies > 1 || fp8_linear(tr, l.role, false)) continue;
      if (op_sac_saves_mm(++mm)) k.op_sac_saved_linear += layers * 2.0 * static_cast<double>(l.in * l.out);
    }
    const StackRules m = stack_rules(ka, tr, stack);
    k.last_matmul += layers * m.last_matmul;
    if (first) {  // the stack's first block
      k.frozen_input_gradients += m.frozen_inputs;
      k.frozen_kv_gradients += m.frozen_kv;
    }
  });
  k.dropout_after_last_matmul = hidden_dropout(a, tr) > 0.0;
  k.op_sac_attention_saved = flash_attention_2_kind(attention_run(a, tr, tr.cuda_sm), tr.framework);
  k.replay_share = checkpoint_picked_share(a, tr);
  if (trains_subset(tr)) partial_flops(a, tr, k);
  // Multi-token prediction: per module a block of the expert kind (with its adapters), the
  // projection 2h -> h and one more pass through the output head.
  if (a.mtp_layers > 0) {
    const double n = static_cast<double>(a.mtp_layers);
    const double h = static_cast<double>(a.hidden);
    k.linear += n * (block_linear_flops_per_token(a, Stack::decoder) + 2.0 * 2.0 * h * h);
    k.attention += n * attention_flops_per_token_per_context(a);
    k.head *= 1.0 + n;
    k.last_matmul += n * stack_rules(a, tr, Stack::decoder).last_matmul;
    k.adapters += n * adapter_flops(a, Stack::decoder);
  }
  return k;
}

StepFlops micro_batch_flops(const FlopCoefficients& k, const Training& tr) {
  const double t = static_cast<double>(tr.tokens_per_micro_batch());
  const double s = static_cast<double>(tr.seq);
  const double attention = k.attention * s;
  const Attention executed = attention_executed(k.sdpa_path, tr.attention, tr.cuda_sm);
  const bool fused = fused_attention(executed) && !(executed == Attention::sdpa && tr.cuda_sm <= 0 && k.sdpa_cpu_math);
  StepFlops f;
  const double fwd = t * (k.linear + attention + k.head + k.adapters);
  f.forward = Flops(fwd);
  f.attention_forward = Flops(t * attention);
  // Backward: activation gradients (1x) for everything, weight gradients (1x) for trainable
  // weights; attention has no weights: 2x its forward eager, 2.5x fused (the scores are
  // recomputed).
  const double weight_grads = k.partial ? t * k.trained : k.full ? t * (k.linear + k.head) : t * k.adapters;
  const double attention_bwd = (fused ? kFusedAttentionBackwardRatio : 2.0) * attention;
  double input_grads = k.linear * k.backward_share + k.head + k.adapters - k.entry_input_grads_skipped;
  double attention_grads = attention_bwd * k.backward_share -
                           (fused ? kFusedAttentionBackwardRatio : 2.0) * k.entry_attention_skipped * s;
  if (!k.full && !recomputes_blocks(tr.checkpointing)) {
    // The first block's input comes from frozen embeddings and needs no gradient.
    input_grads -= k.frozen_input_gradients;
    if (!fused) attention_grads -= k.frozen_kv_gradients * s;
  }
  f.backward = Flops(t * (input_grads + attention_grads) + weight_grads);
  switch (tr.checkpointing) {
    case Checkpointing::none:
      f.recompute = Flops(0.0);
      break;
    case Checkpointing::selective:
      f.recompute = Flops(t * attention * k.replay_share);
      break;
    case Checkpointing::full:
    case Checkpointing::full_offload: {
      // Megatron's recompute replays the whole layer; torch's non-reentrant checkpoint stops once
      // every saved tensor is rebuilt - before the last matmul unless a dropout after it saves a
      // mask.
      const bool stops_early = tr.framework != Framework::megatron && !k.dropout_after_last_matmul;
      const double replayed_last = stops_early ? k.last_matmul : 0.0;
      // Under partial fine-tuning only the layers that run a backward are replayed.
      f.recompute = Flops((fwd - t * (k.head + replayed_last)) * k.replay_share);
      break;
    }
    case Checkpointing::selective_op:
      f.recompute = Flops((fwd - t * (k.head + k.op_sac_saved_linear + (k.op_sac_attention_saved ? attention : 0.0))) *
                          k.replay_share);
      break;
  }
  return f;
}

Flops model_flops(const FlopCoefficients& k, const Training& tr) {
  const double t = static_cast<double>(tr.tokens_per_micro_batch());
  const double attention = k.attention * static_cast<double>(tr.seq);
  const double fwd = k.linear + attention + k.head + k.adapters;
  const double bwd = (k.linear * k.backward_share + k.head + k.adapters - k.entry_input_grads_skipped) +
                     2.0 * (attention * k.backward_share - k.entry_attention_skipped * static_cast<double>(tr.seq)) +
                     (k.partial ? k.trained : k.full ? k.linear + k.head : k.adapters);
  return Flops(t * (fwd + bwd));
}

StepFlops micro_batch_flops(const Architecture& a, const Training& tr) {
  return micro_batch_flops(flop_coefficients(a, tr), tr);
}

Flops model_flops_per_token(const Architecture& a, std::int64_t seq) {
  Training tr;
  tr.seq = seq;
  tr.micro_batch = 1;
  tr.checkpointing = Checkpointing::none;
  return Flops(model_flops(flop_coefficients(a, tr), tr).value() / static_cast<double>(seq));
}

double expert_token_share(const Architecture& a, const Training& tr) {
  if (tr.framework != Framework::megatron || tr.moe_capacity_factor <= 0.0 || !a.is_moe() || a.experts_dense)
    return 1.0;
  const double routed_tokens = static_cast<double>(tr.tokens_per_micro_batch()) /
                               (tr.sequence_parallel ? static_cast<double>(tr.tp) : 1.0);
  const double routed = tokens_per_expert(routed_tokens, a.experts_per_token, a.experts);
  const double capacity = std::ceil(routed * tr.moe_capacity_factor);
  return (tr.moe_pad_to_capacity ? capacity : std::min(capacity, routed)) / routed;
}

}  // namespace trainplan::model
