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

// QK^T and PV: 2 * 2 * (a*d) per token per token of context (non-causal count).
double attention_flops_per_token_per_context(const Architecture& a) {
  return 4.0 * static_cast<double>(a.q_dim());
}

}  // namespace

FlopCoefficients flop_coefficients(const Architecture& a, const Training& tr) {
  FlopCoefficients k;
  k.full = tr.method == Method::full;
  const Stack main = a.encoder_decoder ? Stack::encoder : Stack::decoder;
  k.linear = static_cast<double>(a.layers) * block_linear_flops_per_token(a, main);
  k.attention = static_cast<double>(a.layers) * attention_flops_per_token_per_context(a);
  if (a.encoder_decoder) {
    k.linear += static_cast<double>(a.decoder_layers) * block_linear_flops_per_token(a, Stack::decoder);
    k.attention +=
        2.0 * static_cast<double>(a.decoder_layers) * attention_flops_per_token_per_context(a);
  }
  k.head = 2.0 * static_cast<double>(a.hidden * a.vocab);
  if (!k.full) {
    const double r = static_cast<double>(tr.lora.rank);
    auto add_stack = [&](Stack s, std::int64_t layers) {
      for (const auto& ad : lora_block_adapters(a, tr.lora, s))
        k.adapters += static_cast<double>(layers) * 2.0 * r * static_cast<double>(ad.in + ad.out) *
                      (ad.copies > 1 ? static_cast<double>(a.experts_per_token) : 1.0);
    };
    add_stack(main, a.layers);
    if (a.encoder_decoder) add_stack(Stack::decoder, a.decoder_layers);
  }
  return k;
}

StepFlops micro_batch_flops(const FlopCoefficients& k, const Training& tr) {
  const double t = static_cast<double>(tr.tokens_per_micro_batch());
  const double attention = k.attention * static_cast<double>(tr.seq);
  StepFlops f;
  const double fwd = t * (k.linear + attention + k.head + k.adapters);
  f.forward = Flops(fwd);
  f.attention_forward = Flops(t * attention);
  // Backward: activation gradients (1x) for everything, weight gradients (1x) for trainable weights;
  // attention has no weights, its backward is 2x its forward.
  const double weight_grads = k.full ? t * (k.linear + k.head) : t * k.adapters;
  f.backward = Flops(t * (k.linear + k.head + k.adapters) + weight_grads + 2.0 * t * attention);
  switch (tr.checkpointing) {
    case Checkpointing::none: f.recompute = Flops(0.0); break;
    case Checkpointing::selective: f.recompute = Flops(t * attention); break;
    case Checkpointing::full: f.recompute = Flops(fwd - t * k.head); break;
  }
  return f;
}

StepFlops micro_batch_flops(const Architecture& a, const Training& tr) {
  return micro_batch_flops(flop_coefficients(a, tr), tr);
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
