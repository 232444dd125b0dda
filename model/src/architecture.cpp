#include "trainplan/model/architecture.hpp"

#include <string>

#include "trainplan/core/error.hpp"
#include "trainplan/model/family.hpp"

namespace trainplan::model {
namespace {

void require_positive(const Architecture& a, std::int64_t v, const char* what) {
  if (v <= 0)
    throw InputError("model '" + a.name + "': " + what + " must be positive (got " +
                     std::to_string(v) + ")");
}

void append_attention(const Architecture& a, const ModuleNames& n, Stack stack,
                      std::vector<Linear>& out) {
  if (a.mla()) {  // DeepseekV3Attention (transformers v5.24.0 modeling_deepseek_v3.py)
    const std::int64_t q_width = a.heads * a.head_dim;
    if (a.q_lora_rank > 0) {
      out.push_back({Role::q_a, stack, n.q_a, a.hidden, a.q_lora_rank, a.qkv_bias, 1});
      out.push_back({Role::q, stack, n.q_b, a.q_lora_rank, q_width, false, 1});
    } else {
      out.push_back({Role::q, stack, n.q, a.hidden, q_width, false, 1});
    }
    out.push_back({Role::kv_a, stack, n.kv_a, a.hidden, a.kv_lora_rank + a.qk_rope_dim, a.qkv_bias, 1});
    out.push_back({Role::kv_b, stack, n.kv_b, a.kv_lora_rank,
                   a.heads * (a.head_dim - a.qk_rope_dim + a.value_head_dim()), false, 1});
    out.push_back({Role::o, stack, n.o, a.attention_out_dim(), a.hidden, a.out_bias, 1});
    return;
  }
  out.push_back({Role::q, stack, n.q, a.hidden, a.q_dim(), a.qkv_bias, 1});
  out.push_back({Role::k, stack, n.k, a.hidden, a.kv_dim(), a.qkv_bias, 1});
  out.push_back({Role::v, stack, n.v, a.hidden, a.kv_dim(), a.qkv_bias, 1});
  out.push_back({Role::o, stack, n.o, a.q_dim(), a.hidden, a.out_bias, 1});
}

void append_mlp(const Architecture& a, const ModuleNames& n, Stack stack, std::vector<Linear>& out) {
  const std::int64_t e = a.experts;
  const auto named = [&](const std::string& expert, const std::string& dense) -> const std::string& {
    return a.is_moe() && !expert.empty() ? expert : dense;
  };
  if (a.is_moe()) out.push_back({Role::router, stack, n.router, a.hidden, e, a.router_bias, 1});
  if (a.mlp == MlpKind::gated)
    out.push_back({Role::gate, stack, named(n.expert_gate, n.gate), a.hidden, a.intermediate, a.mlp_bias, e});
  const std::string& up = a.mlp == MlpKind::gated || n.up_ungated.empty() ? n.up : n.up_ungated;
  out.push_back({Role::up, stack, named(n.expert_up, up), a.hidden, a.intermediate, a.mlp_bias, e});
  out.push_back({Role::down, stack, named(n.expert_down, n.down), a.intermediate, a.hidden, a.mlp_bias, e});
  if (a.shared_intermediate > 0) {  // every token's dense MLP beside the routed experts
    const std::int64_t w = a.shared_intermediate;
    out.push_back({Role::gate, stack, n.gate, a.hidden, w, false, 1});
    out.push_back({Role::up, stack, n.up, a.hidden, w, false, 1});
    out.push_back({Role::down, stack, n.down, w, a.hidden, false, 1});
  }
}

}  // namespace

Architecture dense_variant(const Architecture& a) {
  Architecture d = a;
  d.experts = d.experts_per_token = 1;
  d.experts_loop = d.experts_dense = d.router_bias = false;
  d.intermediate = a.dense_intermediate > 0 ? a.dense_intermediate : a.intermediate;
  d.shared_intermediate = 0;
  d.expert_layers.clear();
  d.dense_intermediate = 0;
  return d;
}

void validate(const Architecture& a) {
  require_positive(a, a.hidden, "hidden size");
  require_positive(a, a.layers, "number of layers");
  require_positive(a, a.heads, "number of attention heads");
  require_positive(a, a.kv_heads, "number of key/value heads");
  require_positive(a, a.head_dim, "head dimension");
  require_positive(a, a.intermediate, "intermediate (MLP) size");
  require_positive(a, a.vocab, "vocabulary size");
  require_positive(a, a.max_seq, "maximum sequence length");
  require_positive(a, a.experts, "number of experts");
  require_positive(a, a.experts_per_token, "experts per token");
  if (!(a.rotary_fraction > 0.0 && a.rotary_fraction <= 1.0))
    throw InputError("model '" + a.name + "': the rotary fraction must be in (0, 1] (got " +
                     std::to_string(a.rotary_fraction) + ")");
  if (a.decoder_layers < 0) require_positive(a, a.decoder_layers, "number of decoder layers");
  if (a.heads % a.kv_heads != 0)
    throw InputError("model '" + a.name + "': " + std::to_string(a.heads) +
                     " attention heads are not divisible by " + std::to_string(a.kv_heads) +
                     " key/value heads");
  if (a.sliding_layers < 0 || a.sliding_layers > a.total_layers())
    throw InputError("model '" + a.name + "': " + std::to_string(a.sliding_layers) +
                     " sliding-window layers of " + std::to_string(a.total_layers()));
  if (a.shared_intermediate < 0) require_positive(a, a.shared_intermediate, "shared expert width");
  if (!a.expert_layers.empty() && static_cast<std::int64_t>(a.expert_layers.size()) != a.layers)
    throw InputError("model '" + a.name + "': the expert layers list " + std::to_string(a.expert_layers.size()) +
                     " layers of " + std::to_string(a.layers));
  if (a.mla()) {
    if (a.qk_rope_dim <= 0 || a.qk_rope_dim >= a.head_dim)
      throw InputError("model '" + a.name + "': the rotary key width (" + std::to_string(a.qk_rope_dim) +
                       ") must be positive and below the query/key head width (" + std::to_string(a.head_dim) + ")");
    require_positive(a, a.value_head_dim(), "value head dimension");
    if (a.q_lora_rank < 0) require_positive(a, a.q_lora_rank, "query compression rank");
  }
  if (a.experts_per_token > a.experts)
    throw InputError("model '" + a.name + "': experts per token (" +
                     std::to_string(a.experts_per_token) + ") exceed the number of experts (" +
                     std::to_string(a.experts) + ")");
}

std::vector<Linear> block_linears(const Architecture& a, Stack stack) {
  const ModuleNames& n = family_of(a).names;
  std::vector<Linear> out;
  out.reserve(10);
  append_attention(a, n, stack == Stack::cross ? Stack::decoder : stack, out);
  if (stack == Stack::decoder && a.encoder_decoder) append_attention(a, n, Stack::cross, out);
  append_mlp(a, n, stack == Stack::cross ? Stack::decoder : stack, out);
  return out;
}

}  // namespace trainplan::model
