#include "trainplan/model/flops.hpp"

#include "trainplan/model/lora.hpp"

namespace trainplan::model {
namespace {

// Forward multiply-adds x 2 per token of one block's linears (MoE: only the routed top-k experts).
double block_linear_flops_per_token(const Architecture& a, Stack s) {
  double f = 0.0;
  for (const Linear& l : block_linears(a, s)) {
    const double copies = l.copies > 1 ? static_cast<double>(a.experts_per_token) : 1.0;
    f += 2.0 * copies * static_cast<double>(l.in * l.out);
  }
  return f;
}

// QK^T and PV: 2 * 2 * s * (a*d) per token per attention (non-causal count).
double attention_flops_per_token(const Architecture& a, std::int64_t seq) {
  return 4.0 * static_cast<double>(seq) * static_cast<double>(a.q_dim());
}

}  // namespace

StepFlops micro_batch_flops(const Architecture& a, const Training& tr) {
  const double t = static_cast<double>(tr.tokens_per_micro_batch());
  const bool full = tr.method == Method::full;
  const Stack main = a.encoder_decoder ? Stack::encoder : Stack::decoder;

  double linear = static_cast<double>(a.layers) * block_linear_flops_per_token(a, main);
  double attention = static_cast<double>(a.layers) * attention_flops_per_token(a, tr.seq);
  if (a.encoder_decoder) {
    linear += static_cast<double>(a.decoder_layers) * block_linear_flops_per_token(a, Stack::decoder);
    attention += 2.0 * static_cast<double>(a.decoder_layers) * attention_flops_per_token(a, tr.seq);
  }
  const double head = 2.0 * static_cast<double>(a.hidden * a.vocab);
  double adapters = 0.0;
  if (!full) {
    const double r = static_cast<double>(tr.lora.rank);
    auto add_stack = [&](Stack s, std::int64_t layers) {
      for (const auto& ad : lora_block_adapters(a, tr.lora, s))
        adapters += static_cast<double>(layers) * 2.0 * r * static_cast<double>(ad.in + ad.out) *
                    (ad.copies > 1 ? static_cast<double>(a.experts_per_token) : 1.0);
    };
    add_stack(main, a.layers);
    if (a.encoder_decoder) add_stack(Stack::decoder, a.decoder_layers);
  }

  StepFlops f;
  const double fwd = t * (linear + attention + head + adapters);
  f.forward = Flops(fwd);
  f.attention_forward = Flops(t * attention);
  // Backward: activation gradients (1x) for everything, weight gradients (1x) for trainable weights.
  // Attention has no weights: its backward is 2x its forward unfused, 2.5x in fused kernels that
  // recompute the scores (Dao et al. 2022, arXiv:2205.14135, Sec. 3.1; torch.utils.flop_counter).
  const double weight_grads = full ? t * (linear + head) : t * adapters;
  const double attention_backward = tr.attention == Attention::eager ? 2.0 : 2.5;
  // With frozen embeddings (LoRA) the first block's input needs no gradient: the projections that
  // read it (q, k, v; with a parallel residual the MLP's input side too) skip their input-gradient
  // GEMMs, in each stack of an encoder-decoder.
  double first_block_inputs = 0.0;
  if (!full) {
    for (const Linear& l : block_linears(a, main)) {
      const bool reads_input = l.role == Role::q || l.role == Role::k || l.role == Role::v ||
                               (a.parallel_residual && (l.role == Role::gate || l.role == Role::up));
      if (reads_input) first_block_inputs += 2.0 * static_cast<double>(l.in * l.out);
    }
    if (a.encoder_decoder) first_block_inputs *= 2.0;
  }
  f.backward = Flops(t * (linear + head + adapters - first_block_inputs) + weight_grads +
                     attention_backward * t * attention);
  // Non-reentrant checkpointing stops recomputing once every saved tensor is rebuilt: the blocks'
  // final down projections are not re-run (unless a dropout after them must be rebuilt).
  double down = 0.0;
  for (const Linear& l : block_linears(a, main))
    if (l.role == Role::down && a.hidden_dropout <= 0.0)
      down += 2.0 * static_cast<double>(l.in * l.out) *
              (l.copies > 1 ? static_cast<double>(a.experts_per_token) : 1.0);
  const double all_layers = static_cast<double>(a.total_layers());
  switch (tr.checkpointing) {
    case Checkpointing::none: f.recompute = Flops(0.0); break;
    case Checkpointing::selective: f.recompute = Flops(t * attention); break;
    case Checkpointing::full: f.recompute = Flops(fwd - t * head - t * all_layers * down); break;
  }
  return f;
}

Flops model_flops_per_token(const Architecture& a, std::int64_t seq) {
  Training tr;
  tr.seq = seq;
  tr.micro_batch = 1;
  tr.checkpointing = Checkpointing::none;
  const StepFlops f = micro_batch_flops(a, tr);
  return Flops((f.forward + f.backward).value() / static_cast<double>(seq));
}

}  // namespace trainplan::model
