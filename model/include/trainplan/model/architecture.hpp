#pragma once
// The architecture of a transformer, as plain values: what a Hugging Face config.json says, normalised
// across families. Everything the memory, FLOP and parameter models need is here and nothing else.

#include <cstdint>
#include <string>
#include <vector>

#include "trainplan/core/enum_table.hpp"

namespace trainplan::model {

enum class MlpKind { gated, plain };  // gated: gate, up, down (SwiGLU/GeGLU); plain: up, down
enum class NormKind { rmsnorm, layernorm, layernorm_no_bias };
// Where a block's norms sit: before each sublayer (pre), after it before the residual add (post:
// OLMo 2), or both (sandwich: Gemma 2 and 3, four norms a block).
enum class NormPlacement { pre, post, sandwich };
// A norm of the queries and keys after their projections: none; an RMSNorm over each head
// (Qwen3, Gemma 3); one over all heads of the projection (OLMo 2); a weightless L2 norm per head
// (Llama 4).
enum class QkNorm { none, per_head, full_width, l2 };
// none: no position signal in the block (Llama 4's NoPE layers, see Architecture::nope_interval).
enum class PositionKind { rotary, learned, alibi, relative, none };
// gelu_new is Hugging Face's composite tanh GELU (several saved intermediates); swiglu_clamped is
// gpt-oss's gate (clamp both halves, gate * sigmoid(1.702 gate) * (up + 1)); the others are one op.
enum class Activation { silu, gelu, gelu_tanh, gelu_new, relu, swiglu_clamped };
// How an MoE router scores and picks experts, as the family's code runs it: softmax then top-k
// (Mixtral, Qwen3-MoE, gpt-oss, Llama 4's sigmoid of the top-k), DeepSeek-V2's (softmax of an fp32
// copy of the input, top-k, within the best expert groups where it limits them) and DeepSeek-V3's
// (sigmoid of an fp32 copy, a bias for the choice only, top-k within the best groups,
// renormalised).
enum class RouterKind { softmax_topk, deepseek_v2, deepseek_v3 };

// The logical role of a linear layer; fused projections (query_key_value, c_attn, Wqkv) are split into
// their q, k, v parts so that counts and LoRA targets are uniform across families. Multi-head latent
// attention (DeepSeek-V2/V3) has no k or v projection: q_a compresses the queries (q then expands
// them), kv_a the keys and values into one latent with a shared rotary key, kv_b expands the latent
// into every head's key and value.
enum class Role { q, k, v, o, gate, up, down, router, lm_head, q_a, kv_a, kv_b };
enum class Stack { decoder, encoder, cross };  // encoder/cross only for encoder-decoder models
// The weights' dtype a checkpoint's config.json declares (torch_dtype; dtype from transformers
// 4.56): what from_pretrained(dtype="auto") loads them in; unknown where the config says none.
enum class CheckpointDtype { unknown, fp32, bf16, fp16 };

struct Architecture {
  std::string name;    // catalogue name or the file it came from
  std::string family;  // Hugging Face model_type
  std::int64_t hidden = 0;
  std::int64_t layers = 0;          // decoder layers (encoder layers for encoder-decoder: see below)
  std::int64_t decoder_layers = 0;  // encoder-decoder only: layers of the decoder stack; 0 otherwise
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t intermediate = 0;
  std::int64_t vocab = 0;
  std::int64_t max_seq = 0;
  std::int64_t experts = 1;            // MoE: routed experts per layer
  std::int64_t experts_per_token = 1;  // MoE: top-k
  bool experts_loop = false;           // MoE: transformers' per-expert loop ("eager"), not grouped_mm
  // MoE: every expert runs every token, its output weighted by the router's score (zero for the
  // experts not picked): Hugging Face's Llama 4 (Llama4TextMoe: hidden_states.repeat(experts)).
  bool experts_dense = false;
  std::int64_t relative_buckets = 0;   // T5 relative attention bias buckets
  std::int64_t sliding_window = 0;     // Mistral: attention window, 0 = full causal
  std::int64_t sliding_layers = 0;     // layers that attend within the window (the others: full)
  std::int64_t shared_intermediate = 0;  // MoE: width of the shared expert every token runs, 0 none
  bool router_bias = false;            // MoE: the router has a bias (gpt-oss)
  RouterKind router = RouterKind::softmax_topk;
  // DeepSeek: experts in expert_groups groups, of which the best groups_per_token are open to a
  // token; 0 where routing is not group-limited.
  std::int64_t expert_groups = 0;
  std::int64_t groups_per_token = 0;
  bool router_renormalise = true;      // DeepSeek: norm_topk_prob
  bool attention_sinks = false;        // one learned sink logit per head (gpt-oss)
  double attention_softcap = 0.0;      // Gemma 2: scores soft-capped, cap * tanh(x / cap); 0 none
  double logit_softcap = 0.0;          // Gemma 2: the LM head's logits soft-capped; 0 none
  QkNorm qk_norm = QkNorm::none;
  NormPlacement norm_placement = NormPlacement::pre;
  // Llama 4: every nope_interval-th layer has no rotary positions (NoPE), attends in full (no
  // chunk), norms neither q nor k, and scales its queries by a per-position temperature
  // (query_temperature); 0 when every layer is alike.
  std::int64_t nope_interval = 0;
  bool query_temperature = false;
  double rotary_fraction = 1.0;        // partial rotary (Phi, GPT-NeoX): share of a head rotated
  MlpKind mlp = MlpKind::gated;
  Activation activation = Activation::silu;
  NormKind norm = NormKind::rmsnorm;
  PositionKind position = PositionKind::rotary;
  bool tie_embeddings = false;
  CheckpointDtype checkpoint_dtype = CheckpointDtype::unknown;
  bool qkv_bias = false;
  bool out_bias = false;
  bool mlp_bias = false;
  bool lm_head_bias = false;
  bool parallel_residual = false;  // attention and MLP read the same input (GPT-J/NeoX/Falcon/Phi)
  int norms_per_layer = 2;         // 1 when attention and MLP share one norm (Falcon-7B, Phi)
  bool embedding_norm = false;     // BLOOM's word_embeddings_layernorm
  bool final_norm = true;
  bool encoder_decoder = false;
  double attention_dropout = 0.0;
  double hidden_dropout = 0.0;
  std::string fused_qkv_name;  // HF name of a fused q/k/v projection, "" when separate
  std::string fused_gate_up_name;  // HF name of a fused gate/up projection (Phi-3), "" when separate
  // MoE models some of whose layers run a dense MLP of dense_intermediate instead of the experts
  // (DeepSeek's first_k_dense_replace, Llama 4's interleave_moe_layer_step, Qwen3-MoE's
  // mlp_only_layers): which layers hold the experts, one entry per layer; empty: every layer.
  std::vector<bool> expert_layers;
  std::int64_t dense_intermediate = 0;
  // Multi-head latent attention (DeepSeek-V2/V3; kv_lora_rank > 0): queries through a rank
  // q_lora_rank bottleneck (0: one projection), keys and values expanded from a kv_lora_rank latent,
  // and one rotary key of qk_rope_dim shared by every head. head_dim is then a query's and a key's
  // width (qk_nope_head_dim + qk_rope_head_dim), v_head_dim a value's.
  std::int64_t q_lora_rank = 0;
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_rope_dim = 0;
  std::int64_t v_head_dim = 0;  // 0: head_dim
  // Multi-token prediction modules trained with the model (DeepSeek-V3, arXiv:2412.19437 Sec. 2.2,
  // as Megatron-Core's --mtp-num-layers builds them): each an RMSNorm of the hidden state and of the
  // next token's embedding, a projection 2h -> h, one block of the model's expert kind, a final
  // RMSNorm, and the shared embedding and output head with a loss of its own; on the last pipeline
  // stage. 0: none (transformers has no such module).
  std::int64_t mtp_layers = 0;

  [[nodiscard]] bool is_moe() const { return experts > 1; }
  [[nodiscard]] std::int64_t q_dim() const { return heads * head_dim; }
  [[nodiscard]] std::int64_t kv_dim() const { return kv_heads * head_dim; }
  [[nodiscard]] bool mla() const { return kv_lora_rank > 0; }
  // A value's width per head, and the attention output's (the o projection's input).
  [[nodiscard]] std::int64_t value_head_dim() const { return v_head_dim > 0 ? v_head_dim : head_dim; }
  [[nodiscard]] std::int64_t attention_out_dim() const { return heads * value_head_dim(); }
  // Whether (0-based) layer i runs a dense MLP in an MoE model, and how many do.
  [[nodiscard]] bool dense_layer(std::int64_t i) const {
    return is_moe() && i >= 0 && static_cast<std::size_t>(i) < expert_layers.size() &&
           !expert_layers[static_cast<std::size_t>(i)];
  }
  [[nodiscard]] std::int64_t dense_layers() const {
    if (expert_layers.empty() || !is_moe()) return 0;
    std::int64_t n = 0;
    for (std::int64_t i = 0; i < layers; ++i) n += dense_layer(i) ? 1 : 0;
    return n;
  }
  // The rotated width of a head (transformers: int(head_dim * partial_rotary_factor); latent
  // attention: qk_rope_head_dim).
  [[nodiscard]] std::int64_t rotary_dim() const {
    if (mla()) return qk_rope_dim;  // latent attention: the rotary dims apart
    return static_cast<std::int64_t>(static_cast<double>(head_dim) * rotary_fraction);
  }
  [[nodiscard]] std::int64_t total_layers() const { return layers + decoder_layers; }
  // Layers without rotary positions, and whether (0-based) layer i is one.
  [[nodiscard]] std::int64_t nope_layers() const { return nope_interval > 0 ? layers / nope_interval : 0; }
  [[nodiscard]] bool nope_layer(std::int64_t i) const {
    return nope_interval > 0 && (i + 1) % nope_interval == 0;
  }
  // The experts a token runs through: its top-k, or all of them where the implementation runs
  // every expert (experts_dense).
  [[nodiscard]] std::int64_t expert_runs() const { return experts_dense ? experts : experts_per_token; }
  // The MLP width a token's activations pass through: its experts and the shared expert.
  [[nodiscard]] std::int64_t active_intermediate() const {
    return expert_runs() * intermediate + shared_intermediate;
  }
  // Parameters of the norms of multi-head latent attention's compressed query and key/value latent.
  [[nodiscard]] std::int64_t latent_norm_parameters() const { return mla() ? q_lora_rank + kv_lora_rank : 0; }
  // Parameters of a block's norms of queries and keys.
  [[nodiscard]] std::int64_t qk_norm_parameters() const {
    switch (qk_norm) {
      case QkNorm::none:
      case QkNorm::l2: return 0;
      case QkNorm::per_head: return 2 * head_dim;
      case QkNorm::full_width: return q_dim() + kv_dim();
    }
    return 0;
  }
};

// One linear layer of a block: its role, the name the Hugging Face implementation gives it, its shape,
// and how many copies a block holds (experts).
struct Linear {
  Role role;
  Stack stack;
  std::string hf_name;
  std::int64_t in = 0;
  std::int64_t out = 0;
  bool bias = false;
  std::int64_t copies = 1;
  [[nodiscard]] std::int64_t parameters() const { return copies * (in * out + (bias ? out : 0)); }
};

// A dense layer of an MoE model (Architecture::expert_layers) as a model of its own: one MLP of
// dense_intermediate, no router, no experts.
[[nodiscard]] Architecture dense_variant(const Architecture& a);

// Calls f(kind, stack, layers, first) for each kind of layer of a model: an encoder-decoder's
// encoder and decoder blocks; a decoder-only model's one block, or for an MoE model with dense
// layers its expert layers and its dense ones (dense_variant). `first`: the kind holds its stack's
// first block. Whole-model counts (parameters, FLOPs, adapters) sum over them; the model itself is
// passed as is (no copy) wherever its layers are all alike.
template <class F>
void for_each_layer_kind(const Architecture& a, F&& f) {
  if (a.encoder_decoder) {
    f(a, Stack::encoder, a.layers, true);
    f(a, Stack::decoder, a.decoder_layers, true);
    return;
  }
  const std::int64_t dense = a.dense_layers();
  if (dense == 0) {
    f(a, Stack::decoder, a.layers, true);
    return;
  }
  const Architecture mlp = dense_variant(a);
  const bool dense_first = a.dense_layer(0);
  if (a.layers > dense) f(a, Stack::decoder, a.layers - dense, !dense_first);
  f(mlp, Stack::decoder, dense, dense_first);
}

// Throws InputError naming the architecture and the offending value when sizes are nonsense
// (zero/negative, heads not dividing hidden where the family requires it, kv heads not dividing heads).
void validate(const Architecture& a);

// The linear layers of one block of the given stack, in execution order.
[[nodiscard]] std::vector<Linear> block_linears(const Architecture& a, Stack stack);

}  // namespace trainplan::model

namespace trainplan {
template <>
struct EnumTable<model::Role> {
  static constexpr std::string_view kWhat = "module role";
  static constexpr std::array kEntries{
      std::pair{model::Role::q, std::string_view{"q"}},
      std::pair{model::Role::k, std::string_view{"k"}},
      std::pair{model::Role::v, std::string_view{"v"}},
      std::pair{model::Role::o, std::string_view{"o"}},
      std::pair{model::Role::gate, std::string_view{"gate"}},
      std::pair{model::Role::up, std::string_view{"up"}},
      std::pair{model::Role::down, std::string_view{"down"}},
      std::pair{model::Role::router, std::string_view{"router"}},
      std::pair{model::Role::lm_head, std::string_view{"lm_head"}},
      std::pair{model::Role::q_a, std::string_view{"q_a"}},
      std::pair{model::Role::kv_a, std::string_view{"kv_a"}},
      std::pair{model::Role::kv_b, std::string_view{"kv_b"}}};
};
}  // namespace trainplan
