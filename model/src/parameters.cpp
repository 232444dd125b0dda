#include "trainplan/model/parameters.hpp"

#include <algorithm>

#include "trainplan/model/lora.hpp"
#include "trainplan/model/partial.hpp"

namespace trainplan::model {

std::int64_t norm_parameters(const Architecture& a) {
  switch (a.norm) {
    case NormKind::rmsnorm:
    case NormKind::layernorm_no_bias: return a.hidden;
    case NormKind::layernorm: return 2 * a.hidden;
  }
  return 0;
}

// One block: its linears plus its norms (an encoder-decoder's decoder block has a third norm in
// front of cross-attention).
// The routed experts' linears of one block (their copies), 0 without experts.
std::int64_t expert_parameters(const Architecture& a, Stack stack) {
  std::int64_t p = 0;
  for (const Linear& l : block_linears(a, stack))
    if (l.copies > 1) p += l.parameters();
  return p;
}

std::int64_t block_parameters(const Architecture& a, Stack stack) {
  std::int64_t p = 0;
  for (const Linear& l : block_linears(a, stack)) p += l.parameters();
  const std::int64_t norms = a.norms_per_layer + (a.encoder_decoder && stack == Stack::decoder ? 1 : 0);
  const std::int64_t sinks = a.attention_sinks ? a.heads : 0;
  return p + norms * norm_parameters(a) + a.qk_norm_parameters() + a.latent_norm_parameters() + sinks;
}

ParameterCounts count_parameters(const Architecture& a) {
  ParameterCounts c;
  const std::int64_t tokens = a.vocab * a.hidden;
  const std::int64_t positions = a.position == PositionKind::learned ? a.max_seq * a.hidden : 0;
  c.embedding = tokens + positions + (a.embedding_norm ? norm_parameters(a) : 0);
  c.lm_head = a.tie_embeddings ? 0 : tokens + (a.lm_head_bias ? a.vocab : 0);

  std::int64_t largest = std::max({tokens, positions, c.lm_head});
  for_each_layer_kind(a, [&](const Architecture& kind, Stack stack, std::int64_t layers, bool) {
    for (const Linear& l : block_linears(kind, stack)) {
      largest = std::max(largest, l.in * l.out + (l.bias ? l.out : 0));
      c.block_linears += layers * l.parameters();
    }
    c.blocks += layers * block_parameters(kind, stack);
    c.experts += layers * expert_parameters(kind, stack);
  });
  // T5: the relative position bias lives in the first block of each stack.
  const std::int64_t relative = a.relative_buckets * a.heads * (a.encoder_decoder ? 2 : 1);
  const std::int64_t finals = a.final_norm ? norm_parameters(a) * (a.encoder_decoder ? 2 : 1) : 0;

  // Multi-token prediction: per module a block of the model's expert kind, the projection 2h -> h
  // and three RMSNorms (the hidden state's, the embedding's, the module's final one).
  if (a.mtp_layers > 0) {
    c.mtp = a.mtp_layers * (block_parameters(a, Stack::decoder) + 2 * a.hidden * a.hidden + 3 * norm_parameters(a));
    c.mtp_experts = a.mtp_layers * expert_parameters(a, Stack::decoder);
  }
  // A token runs the top-k of each expert layer's experts (its model's and its MTP modules').
  const std::int64_t inactive_experts =
      a.is_moe() ? (c.experts + c.mtp_experts) / a.experts * (a.experts - a.experts_per_token) : 0;
  c.total = c.embedding + c.blocks + relative + finals + c.lm_head + c.mtp;
  c.active = c.total - inactive_experts;
  c.largest_module = largest;
  return c;
}

std::int64_t trainable_parameters(const Architecture& a, const ParameterCounts& n, const Training& t) {
  if (trains_subset(t)) return static_cast<std::int64_t>(subset_parameters(a, n, t, 0, a.layers, true, true).all);
  return t.method == Method::full ? n.total : lora_parameters(a, t.lora);
}

}  // namespace trainplan::model
