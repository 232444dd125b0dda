// Each family's keys in its Hugging Face configuration class: the readers that read_family picks
// by the family's ConfigKeys.

#include <algorithm>
#include <string>
#include <vector>

#include "hf_reader.hpp"
#include "trainplan/core/error.hpp"

namespace trainplan::request::hf {
namespace {

using model::Activation;
using model::Architecture;
using model::MlpKind;
using model::NormKind;
using model::PositionKind;

Activation activation_of(const std::string& act, const std::string& where) {
  if (act == "silu" || act == "swish") return Activation::silu;
  if (act == "gelu" || act == "gelu_python" || act == "gelu_accurate") return Activation::gelu;
  if (act == "gelu_pytorch_tanh") return Activation::gelu_tanh;
  if (act == "gelu_new" || act == "gelu_fast") return Activation::gelu_new;
  if (act == "relu") return Activation::relu;
  throw InputError(where + ": unsupported activation '" +
                   (act.size() > 40 ? act.substr(0, 37) + "..." : act) +
                   "' (supported: silu, swish, gelu, gelu_python, "
                   "gelu_accurate, gelu_pytorch_tanh, gelu_new, "
                   "gelu_fast, relu)");
}

// The sizes every family has. Where the class derives a value (kv heads, head dim, MLP width) the
// note says so.
void read_shape(HfReader& r, Architecture& a) {
  const model::ClassDefaults& d = r.defaults();
  a.hidden = r.integer({"hidden_size", "n_embd", "d_model", "n_embed"}, kWidth, d.hidden);
  a.layers =
      r.integer({"num_hidden_layers", "n_layer", "num_layers", "n_layers"}, kLayers, d.layers);
  a.heads = r.integer({"num_attention_heads", "n_head", "num_heads", "n_heads"}, kHeads, d.heads);
  a.vocab = r.integer({"vocab_size"}, kVocab, d.vocab);
  const std::int64_t kv = d.kv_heads ? d.kv_heads : a.heads;
  a.kv_heads = r.integer({"num_key_value_heads", "num_kv_heads", "n_head_kv"}, kHeads, kv,
                         d.kv_heads ? "" : "num_attention_heads (" + std::to_string(kv) + ")");
  if (r.keys() != model::ConfigKeys::bloom && r.keys() != model::ConfigKeys::mpt) {
    const std::int64_t inter = d.intermediate ? d.intermediate : 4 * a.hidden;
    a.intermediate =
        r.integer({"intermediate_size", "n_inner", "d_ff", "ffn_hidden_size"}, kIntermediate, inter,
                  d.intermediate ? "" : "4 x hidden size (" + std::to_string(inter) + ")");
  }
  if (d.max_seq)
    a.max_seq =
        r.integer({"max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "n_ctx"},
                  kPositions, d.max_seq);
  else if (r.find({"max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "n_ctx"}))
    a.max_seq =
        r.integer({"max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "n_ctx"},
                  kPositions, 0);
  if (d.head_dim) {
    a.head_dim = r.integer({"head_dim", "d_kv"}, kWidth, d.head_dim);
  } else if (r.find({"head_dim", "d_kv"})) {
    a.head_dim = r.integer({"head_dim", "d_kv"}, kWidth, 0);
  } else {
    if (a.hidden % a.heads != 0)
      throw InputError(r.where() + ": hidden size " + std::to_string(a.hidden) +
                       " is not divisible by " + std::to_string(a.heads) + " attention heads");
    a.head_dim = a.hidden / a.heads;
  }
}

// transformers' experts_implementation: the default grouped_mm, or "eager", a loop over experts.
void read_experts_implementation(HfReader& r, Architecture& a) {
  const std::string impl = r.string_or({"experts_implementation"}, "grouped_mm");
  if (impl != "grouped_mm" && impl != "eager")
    throw InputError(r.where() + ": experts_implementation '" + impl.substr(0, 40) +
                     "' is not modelled (choices: grouped_mm, eager)");
  a.experts_loop = impl == "eager";
}

// LlamaConfig, MistralConfig, MixtralConfig, Qwen2Config, GemmaConfig. The family's traits (a
// gated MLP, RMSNorm, rotary positions; Qwen2's fixed q, k, v bias; Gemma's tanh GELU) are set.
void read_llama_like(HfReader& r, Architecture& a) {
  using K = model::ConfigKeys;
  const K k = r.keys();
  read_shape(r, a);
  const model::ClassDefaults& d = r.defaults();
  if (k == K::gemma)
    (void)r.string_or({"hidden_activation", "hidden_act"}, "gelu_pytorch_tanh");  // always tanh
  else
    a.activation = activation_of(r.string({"hidden_act"}, "silu"), r.where());
  a.tie_embeddings = r.flag({"tie_word_embeddings"}, d.tie_embeddings);
  a.attention_dropout = r.probability({"attention_dropout"}, 0.0);
  // Mistral, Mixtral and Qwen2 build their projections with fixed biases (Qwen2: q, k, v only);
  // only LlamaConfig and GemmaConfig have attention_bias, and only LlamaConfig has mlp_bias.
  if (k == K::llama || k == K::gemma) a.qkv_bias = a.out_bias = r.flag({"attention_bias"}, false);
  if (k == K::llama) a.mlp_bias = r.flag({"mlp_bias"}, false);
  const bool windowed =
      k == K::mistral || k == K::mixtral || (k == K::qwen2 && r.flag({"use_sliding_window"}, false));
  if (windowed && !r.is_null("sliding_window")) {
    a.sliding_window = r.integer({"sliding_window"}, {0, kPositions.hi}, k == K::mixtral ? 0 : 4096,
                                 k == K::mixtral ? "null (full attention)" : "");
    a.sliding_layers = a.sliding_window > 0 ? a.layers : 0;
  }
  if (k == K::mixtral) {
    a.experts = r.integer({"num_local_experts"}, kExperts, 8);
    a.experts_per_token = r.integer({"num_experts_per_tok"}, kExperts, 2);
    read_experts_implementation(r, a);
  }
}

// The share of each head's width that is rotated: transformers v5 keeps it in rope_parameters,
// earlier versions at the top level (Phi: partial_rotary_factor, GPT-NeoX: rotary_pct).
double partial_rotary(const HfReader& r, double fallback) {
  double f = r.number_or({"partial_rotary_factor", "rotary_pct"}, fallback);
  if (const Json* rope = r.find({"rope_parameters"}); rope && rope->is_object()) {
    if (rope->contains("partial_rotary_factor")) {
      const Json& v = rope->at("partial_rotary_factor");
      if (!v.is_number())
        throw InputError(r.where() +
                         ": key 'rope_parameters.partial_rotary_factor' must be a number");
      f = v.get<double>();
    }
  }
  if (!(f > 0.0 && f <= 1.0))
    throw InputError(r.where() + ": the partial rotary factor must be in (0, 1] (got " +
                     std::to_string(f) + ")");
  return f;
}

// A per-layer list (layer_types, no_rope_layers): an array of one entry per layer.
void require_per_layer(const HfReader& r, const Architecture& a, const char* key, const Json& list) {
  if (!list.is_array() || static_cast<std::int64_t>(list.size()) != a.layers)
    throw InputError(r.where() + ": key '" + key + "' must list one entry per layer (" +
                     std::to_string(a.layers) + "), got " + json_excerpt(list));
}

// How many layers attend within the sliding window: the config's layer_types when it lists them
// (each "sliding_attention" or "full_attention"), else the class's rule, which `derived` gives.
std::int64_t sliding_layer_count(HfReader& r, const Architecture& a, std::int64_t derived,
                                 const std::string& rule) {
  const Json* types = r.find({"layer_types"});
  if (types == nullptr) {
    r.note_text("layer_types missing: " + r.config_class() + " derives " +
                std::to_string(derived) + " sliding-window layers (" + rule + ")");
    return derived;
  }
  require_per_layer(r, a, "layer_types", *types);
  std::int64_t n = 0;
  for (const Json& t : *types) {
    const bool sliding = t.is_string() && t.get<std::string>() == "sliding_attention";
    if (!sliding && !(t.is_string() && t.get<std::string>() == "full_attention"))
      throw InputError(r.where() + ": key 'layer_types' holds " + json_excerpt(t) +
                       " (choices: \"sliding_attention\", \"full_attention\")");
    n += sliding ? 1 : 0;
  }
  return n;
}

// A list of (0-based) layer indices under `key`; empty when the key is absent.
std::vector<std::int64_t> layer_indices(const HfReader& r, const Architecture& a, const char* key) {
  std::vector<std::int64_t> out;
  const Json* list = r.find({key});
  if (list == nullptr) return out;
  if (!list->is_array())
    throw InputError(r.where() + ": key '" + key + "' must be a list of layer indices (got " + json_excerpt(*list) + ")");
  for (const Json& v : *list) {
    if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() >= a.layers)
      throw InputError(r.where() + ": key '" + key + "' holds " + json_excerpt(v) +
                       " (expected a layer index from 0 to " + std::to_string(a.layers - 1) + ")");
    out.push_back(v.get<std::int64_t>());
  }
  return out;
}

// The layers of an MoE model that run a dense MLP of width `dense_width` instead of the experts:
// `moe` says which layer holds the experts.
void set_dense_layers(HfReader& r, Architecture& a, const std::vector<bool>& moe, std::int64_t dense_width) {
  std::int64_t dense = 0;
  for (const bool m : moe) dense += m ? 0 : 1;
  if (dense == 0) return;
  a.expert_layers = moe;
  a.dense_intermediate = dense_width;
  r.note_text(std::to_string(dense) + " of " + std::to_string(a.layers) + " layers run a dense MLP of width " +
                std::to_string(dense_width) + " instead of the experts");
}

// Llama4TextConfig: experts on every layer or interleaved with dense MLP layers, a shared expert
// as wide as each expert, a weightless L2 norm of q and k (use_qk_norm), and chunked attention on the layers with rotary positions (no_rope_layers: 1 =
// rotary, one layer in no_rope_layer_interval without), counted as windowed layers.
void read_llama4(HfReader& r, Architecture& a) {
  a.experts = r.integer({"num_local_experts"}, kExperts, 16);
  a.experts_per_token = r.integer({"num_experts_per_tok"}, kExperts, 1);
  a.shared_intermediate = a.intermediate;
  // Llama4TextConfig: moe_layers, else every interleave_moe_layer_step-th layer (the last of each
  // step); the others run Llama4TextMLP of intermediate_size_mlp.
  const std::int64_t step = r.integer({"interleave_moe_layer_step"}, kLayers, 1);
  std::vector<bool> moe(static_cast<std::size_t>(a.layers));
  if (r.find({"moe_layers"}) != nullptr) {
    for (const std::int64_t i : layer_indices(r, a, "moe_layers")) moe[static_cast<std::size_t>(i)] = true;
  } else {
    for (std::int64_t i = 0; i < a.layers; ++i) moe[static_cast<std::size_t>(i)] = (i + 1) % step == 0;
  }
  if (std::find(moe.begin(), moe.end(), false) != moe.end())
    set_dense_layers(r, a, moe, r.integer({"intermediate_size_mlp"}, kIntermediate, 16384));
  a.qk_norm = r.flag({"use_qk_norm"}, true) ? model::QkNorm::l2 : model::QkNorm::none;
  a.query_temperature = r.flag({"attn_temperature_tuning"}, true);
  // NoPE layers: one in every no_rope_layer_interval (Llama4TextConfig's default no_rope_layers);
  // a list that says otherwise is counted, its layers taken as evenly spread.
  std::int64_t interval = r.integer({"no_rope_layer_interval"}, kLayers, 4);
  std::int64_t nope_layers = a.layers / interval;
  if (const Json* nope = r.find({"no_rope_layers"}); nope != nullptr && nope->is_array() && !nope->empty()) {
    require_per_layer(r, a, "no_rope_layers", *nope);
    std::int64_t listed = 0;
    bool regular = true;
    for (std::size_t i = 0; i < nope->size(); ++i) {
      const Json& v = (*nope)[i];
      if (!v.is_number_integer() || (v.get<std::int64_t>() != 0 && v.get<std::int64_t>() != 1))
        throw InputError(r.where() + ": key 'no_rope_layers' holds " + json_excerpt(v) + " (expected 0 or 1)");
      const bool is_nope = v.get<std::int64_t>() == 0;
      listed += is_nope ? 1 : 0;
      regular = regular && is_nope == ((static_cast<std::int64_t>(i) + 1) % interval == 0);
    }
    if (!regular) {
      interval = listed > 0 ? std::max<std::int64_t>(1, a.layers / listed) : 0;
      r.note_text("no_rope_layers: " + std::to_string(listed) +
                  " layers without rotary positions, taken as one in every " + std::to_string(interval));
    }
    nope_layers = listed;
  }
  a.nope_interval = nope_layers > 0 ? interval : 0;
  const std::int64_t rope_layers = a.layers - a.nope_layers();
  if (!r.is_null("attention_chunk_size")) {
    a.sliding_window = r.integer({"attention_chunk_size"}, {1, kPositions.hi}, 8192);
    a.sliding_layers = rope_layers;
    if (a.sliding_layers == 0) a.sliding_window = 0;
  }
}

// The sliding window of read_recent's families and the layers that use it. Windows: Qwen3 only with
// use_sliding_window (layers from max_window_layers on); Phi-3 on every layer when sliding_window
// is set; Gemma 2 and gpt-oss every other layer, Gemma 3 five of six.
void read_recent_window(HfReader& r, Architecture& a) {
  using K = model::ConfigKeys;
  const K k = r.keys();
  std::int64_t window = 0;
  std::int64_t derived = 0;
  std::string rule;
  if (k == K::qwen3 || k == K::qwen3_moe) {
    if (r.flag({"use_sliding_window"}, false) && !r.is_null("sliding_window")) {
      window = r.integer({"sliding_window"}, {1, kPositions.hi}, 4096);
      const std::int64_t from = k == K::qwen3 ? r.integer({"max_window_layers"}, {0, kLayers.hi}, 28) : 0;
      derived = std::max<std::int64_t>(0, a.layers - from);
      rule = "layers from max_window_layers on";
    }
  } else if (k == K::phi3) {
    if (r.find({"sliding_window"})) window = r.integer({"sliding_window"}, {1, kPositions.hi}, 0);
    derived = a.layers;
    rule = "every layer";
  } else if (k != K::olmo2 && k != K::llama4_text && !r.is_null("sliding_window")) {
    window = r.integer({"sliding_window"}, {1, kPositions.hi}, k == K::gpt_oss ? 128 : 4096);
    if (k == K::gemma3_text) {
      const std::int64_t pattern = r.integer({"sliding_window_pattern"}, {1, kLayers.hi}, 6);
      derived = a.layers - a.layers / pattern;
      rule = "all but every " + std::to_string(pattern) + "th layer";
    } else {
      derived = (a.layers + 1) / 2;
      rule = "every other layer, the first included";
    }
  }
  if (window > 0) {
    a.sliding_layers = sliding_layer_count(r, a, derived, rule);
    a.sliding_window = a.sliding_layers > 0 ? window : 0;
  }
}

// The families after Llama whose blocks add norms, windows and experts of their own: Qwen3 and
// Qwen3-MoE (q/k RMSNorm per head), OLMo 2 (q/k RMSNorm over the projection, norms after each
// sublayer), Phi-3 (fused qkv and gate_up projections), Gemma 2 and Gemma 3 (four norms a block,
// alternating sliding-window layers; Gemma 2 soft-caps scores and logits, Gemma 3 norms q and k),
// gpt-oss (routed experts with biases, a router bias, attention sinks, alternating windows).
// Each reads the keys of its transformers v5.24.0 configuration class.
void read_recent(HfReader& r, Architecture& a) {
  using K = model::ConfigKeys;
  const K k = r.keys();
  read_shape(r, a);
  const bool gemma = k == K::gemma2 || k == K::gemma3_text;
  if (gemma)
    a.activation = activation_of(r.string({"hidden_activation", "hidden_act"}, "gelu_pytorch_tanh"), r.where());
  else if (k == K::gpt_oss)
    (void)r.string_or({"hidden_act"}, "silu");  // its experts' clamped SwiGLU, whatever it says
  else
    a.activation = activation_of(r.string({"hidden_act"}, "silu"), r.where());
  a.tie_embeddings = r.flag({"tie_word_embeddings"}, r.defaults().tie_embeddings);
  a.attention_dropout = r.probability({"attention_dropout"}, 0.0);
  // Phi3Attention builds qkv_proj and o_proj without bias whatever the config says.
  if (k != K::phi3) a.qkv_bias = a.out_bias = r.flag({"attention_bias"}, k == K::gpt_oss);
  if (k == K::phi3) {
    a.hidden_dropout = r.probability({"resid_pdrop"}, 0.0);
    a.rotary_fraction = partial_rotary(r, 1.0);
  }
  if (k == K::gemma2) {
    a.attention_softcap = r.number_or({"attn_logit_softcapping"}, 50.0);
    a.logit_softcap = r.number_or({"final_logit_softcapping"}, 30.0);
    if (r.is_null("attn_logit_softcapping")) a.attention_softcap = 0.0;
    if (r.is_null("final_logit_softcapping")) a.logit_softcap = 0.0;
  } else if (k == K::gemma3_text) {
    a.attention_softcap = r.number_or({"attn_logit_softcapping"}, 0.0);
    a.logit_softcap = r.number_or({"final_logit_softcapping"}, 0.0);
  }
  if (a.attention_softcap < 0.0 || a.logit_softcap < 0.0)
    throw InputError(r.where() + ": soft-capping values must be positive or null");
  read_recent_window(r, a);
  if (k == K::qwen3_moe) {
    // Qwen3MoeDecoderLayer: experts where the layer is not in mlp_only_layers and
    // (layer + 1) % decoder_sparse_step == 0; the others Qwen3MoeMLP of intermediate_size.
    const std::int64_t step = r.integer({"decoder_sparse_step"}, kLayers, 1);
    std::vector<bool> moe(static_cast<std::size_t>(a.layers));
    for (std::int64_t i = 0; i < a.layers; ++i) moe[static_cast<std::size_t>(i)] = (i + 1) % step == 0;
    for (const std::int64_t i : layer_indices(r, a, "mlp_only_layers")) moe[static_cast<std::size_t>(i)] = false;
    const std::int64_t dense_width = a.intermediate;
    a.experts = r.integer({"num_experts", "num_local_experts"}, kExperts, 128);
    a.experts_per_token = r.integer({"num_experts_per_tok"}, kExperts, 8);
    a.intermediate = r.integer({"moe_intermediate_size"}, kIntermediate, 768);
    set_dense_layers(r, a, moe, dense_width);
  }
  if (k == K::gpt_oss) {
    a.experts = r.integer({"num_local_experts"}, kExperts, 128);
    a.experts_per_token = r.integer({"num_experts_per_tok", "experts_per_token"}, kExperts, 4);
  }
  if (k == K::llama4_text) read_llama4(r, a);
  if (a.is_moe() && !a.experts_dense) read_experts_implementation(r, a);
}

// DeepseekV2Config and DeepseekV3Config (transformers v5.24.0): multi-head latent attention (a
// query compression of q_lora_rank, null for none; a key/value latent of kv_lora_rank; per head
// qk_nope_head_dim + qk_rope_head_dim of query and key, v_head_dim of value), routed experts of
// moe_intermediate_size with n_shared_experts beside them, and first_k_dense_replace dense layers
// of intermediate_size in front (the decoder layer's own rule; moe_layer_freq is not read by it).
void read_deepseek(HfReader& r, Architecture& a) {
  using K = model::ConfigKeys;
  const bool v3 = r.keys() == K::deepseek_v3;
  read_shape(r, a);
  a.activation = activation_of(r.string({"hidden_act"}, "silu"), r.where());
  a.tie_embeddings = r.flag({"tie_word_embeddings"}, false);
  a.attention_dropout = r.probability({"attention_dropout"}, 0.0);
  a.qkv_bias = a.out_bias = r.flag({"attention_bias"}, false);  // q_a, kv_a and o projections
  if (!v3 && r.flag({"mlp_bias"}, false))
    r.note_text("mlp_bias: the dense MLPs' biases (DeepseekV2MLP) are not counted");
  a.q_lora_rank = r.is_null("q_lora_rank") ? 0 : r.integer({"q_lora_rank"}, kWidth, 1536);
  a.kv_lora_rank = r.integer({"kv_lora_rank"}, kWidth, 512);
  const std::int64_t nope = r.integer({"qk_nope_head_dim"}, kWidth, 128);
  a.qk_rope_dim = r.integer({"qk_rope_head_dim"}, kWidth, 64);
  a.v_head_dim = r.integer({"v_head_dim"}, kWidth, 128);
  a.head_dim = nope + a.qk_rope_dim;
  const std::int64_t dense_width = a.intermediate;
  if (r.is_null("n_routed_experts")) return;  // every layer dense
  a.experts = r.integer({"n_routed_experts", "num_local_experts"}, kExperts, v3 ? 256 : 64);
  a.experts_per_token = r.integer({"num_experts_per_tok"}, kExperts, v3 ? 8 : 6,
                                  v3 ? "" : "none (required: torch.topk needs k); 6 taken");
  a.intermediate = r.integer({"moe_intermediate_size"}, kIntermediate, v3 ? 2048 : 1407);
  a.shared_intermediate = a.intermediate * r.integer({"n_shared_experts"}, {0, kExperts.hi}, v3 ? 1 : 2);
  const std::int64_t first_dense = r.integer({"first_k_dense_replace"}, {0, kLayers.hi}, v3 ? 3 : 0);
  // The router: V3 always group-limited (n_group, topk_group); V2 where topk_method says so.
  a.router = v3 ? model::RouterKind::deepseek_v3 : model::RouterKind::deepseek_v2;
  const std::string method = v3 ? "group_limited" : r.string_or({"topk_method"}, "greedy");
  if (method != "greedy" && method != "group_limited_greedy" && method != "group_limited")
    throw InputError(r.where() + ": topk_method '" + method.substr(0, 40) +
                     "' is not one of DeepseekV2TopkRouter's (greedy, group_limited_greedy)");
  if (method != "greedy") {
    a.expert_groups = r.integer({"n_group"}, kExperts, 8);
    a.groups_per_token = r.integer({"topk_group"}, kExperts, 4);
    if (a.experts % a.expert_groups != 0 || a.groups_per_token > a.expert_groups)
      throw InputError(r.where() + ": " + std::to_string(a.experts) + " routed experts in n_group " +
                       std::to_string(a.expert_groups) + " groups, topk_group " + std::to_string(a.groups_per_token) +
                       ": the groups must divide the experts and topk_group must not exceed n_group");
  }
  if (v3) a.router_renormalise = r.flag({"norm_topk_prob"}, true);  // V2's router never renormalises
  std::vector<bool> moe(static_cast<std::size_t>(a.layers));
  for (std::int64_t i = 0; i < a.layers; ++i) moe[static_cast<std::size_t>(i)] = i >= first_dense;
  if (const Json* freq = r.find({"moe_layer_freq"}); freq != nullptr && !(freq->is_number_integer() && freq->get<std::int64_t>() == 1))
    r.note_text("moe_layer_freq " + json_excerpt(*freq) + " is not read by transformers' DeepSeek layers: "
                "every layer from first_k_dense_replace on holds the experts");
  if (r.find({"num_nextn_predict_layers"}))
    r.note_text("num_nextn_predict_layers: the multi-token prediction layers are not part of transformers' "
                "model (their weights are skipped on load) and are not counted");
  set_dense_layers(r, a, moe, dense_width);
  read_experts_implementation(r, a);
}

void read_gpt2(HfReader& r, Architecture& a) {
  read_shape(r, a);
  a.activation = activation_of(r.string({"activation_function"}, "gelu_new"), r.where());
  a.tie_embeddings = r.flag({"tie_word_embeddings"}, r.defaults().tie_embeddings);
  a.hidden_dropout = r.probability({"resid_pdrop"}, 0.1);
  a.attention_dropout = r.probability({"attn_pdrop"}, 0.1);
}

void read_bloom(HfReader& r, Architecture& a) {
  read_shape(r, a);
  a.intermediate = 4 * a.hidden;  // BloomMLP: dense_h_to_4h, whatever n_inner says
  a.tie_embeddings = r.flag({"tie_word_embeddings"}, r.defaults().tie_embeddings);
  a.attention_dropout = r.probability({"attention_dropout"}, 0.0);
  a.hidden_dropout = r.probability({"hidden_dropout"}, 0.0);
}

void read_falcon(HfReader& r, Architecture& a) {
  read_shape(r, a);
  const bool new_arch = r.flag({"new_decoder_architecture"}, false);
  const bool multi_query = r.flag({"multi_query"}, true);
  const bool parallel = r.flag({"parallel_attn"}, true);
  if (!new_arch)
    a.kv_heads = multi_query ? 1 : a.heads;  // num_kv_heads is read by the new decoder only
  a.position = r.flag({"alibi"}, false) ? PositionKind::alibi : PositionKind::rotary;
  a.tie_embeddings = r.flag({"tie_word_embeddings"}, r.defaults().tie_embeddings);
  const bool bias = r.flag({"bias"}, false);
  a.qkv_bias = a.out_bias = a.mlp_bias = bias;
  a.parallel_residual = new_arch || parallel;
  a.norms_per_layer = new_arch ? 2 : (parallel ? 1 : 2);
  a.attention_dropout = r.probability({"attention_dropout"}, 0.0);
  a.hidden_dropout = r.probability({"hidden_dropout"}, 0.0);
}

void read_gpt_neox(HfReader& r, Architecture& a) {
  read_shape(r, a);
  a.activation = activation_of(r.string({"hidden_act"}, "gelu"), r.where());
  a.tie_embeddings = r.flag({"tie_word_embeddings"}, r.defaults().tie_embeddings);
  const bool bias = r.flag({"attention_bias"}, true);
  a.qkv_bias = a.out_bias = bias;
  a.parallel_residual = r.flag({"use_parallel_residual"}, true);
  a.rotary_fraction = partial_rotary(r, 0.25);  // GPTNeoXConfig's default rotary_pct
  a.attention_dropout = r.probability({"attention_dropout"}, 0.0);
  a.hidden_dropout = r.probability({"hidden_dropout"}, 0.0);
}

void read_mpt(HfReader& r, Architecture& a) {
  read_shape(r, a);
  a.intermediate = a.hidden * r.integer({"expansion_ratio"}, kSmall, 4);
  const bool no_bias = r.flag({"no_bias"}, true);
  a.norm = no_bias ? NormKind::layernorm_no_bias : NormKind::layernorm;
  a.tie_embeddings = r.flag({"tie_word_embeddings"}, r.defaults().tie_embeddings);
  a.qkv_bias = a.out_bias = a.mlp_bias = !no_bias;
  a.hidden_dropout = r.probability({"resid_pdrop"}, 0.0);
  if (const Json* cfg = r.find({"attn_config"});
      cfg && cfg->is_object() && cfg->contains("attn_pdrop"))
    a.attention_dropout = r.probability_value(cfg->at("attn_pdrop"), "'attn_config.attn_pdrop'");
}

void read_phi(HfReader& r, Architecture& a) {
  read_shape(r, a);
  a.activation = activation_of(r.string({"hidden_act"}, "gelu_new"), r.where());
  a.tie_embeddings = r.flag({"tie_word_embeddings"}, r.defaults().tie_embeddings);
  a.rotary_fraction = partial_rotary(r, 0.5);  // PhiConfig's default
  a.attention_dropout = r.probability({"attention_dropout"}, 0.0);
  a.hidden_dropout = r.probability({"resid_pdrop"}, 0.0);
}

void read_t5(HfReader& r, Architecture& a) {
  read_shape(r, a);
  a.decoder_layers = r.integer({"num_decoder_layers"}, kLayers, a.layers,
                               "num_layers (" + std::to_string(a.layers) + ")");
  const std::string proj = r.string({"feed_forward_proj"}, "relu");
  const bool gated = proj.rfind("gated-", 0) == 0;
  a.mlp = gated ? MlpKind::gated : MlpKind::plain;
  a.activation = activation_of(
      gated ? proj.substr(6) == "gelu" ? "gelu_new" : proj.substr(6) : proj, r.where());
  a.relative_buckets = r.integer({"relative_attention_num_buckets"}, kSmall, 32);
  a.tie_embeddings = r.flag({"tie_word_embeddings"}, r.defaults().tie_embeddings);
  a.attention_dropout = a.hidden_dropout = r.probability({"dropout_rate"}, 0.1);
}

}  // namespace

void read_family(HfReader& r, Architecture& a) {
  using K = model::ConfigKeys;
  switch (r.keys()) {
    case K::llama:
    case K::mistral:
    case K::mixtral:
    case K::qwen2:
    case K::gemma: read_llama_like(r, a); return;
    case K::qwen3:
    case K::qwen3_moe:
    case K::olmo2:
    case K::phi3:
    case K::gemma2:
    case K::gemma3_text:
    case K::gpt_oss:
    case K::llama4_text: read_recent(r, a); return;
    case K::deepseek_v2:
    case K::deepseek_v3: read_deepseek(r, a); return;
    case K::gpt2: read_gpt2(r, a); return;
    case K::bloom: read_bloom(r, a); return;
    case K::falcon: read_falcon(r, a); return;
    case K::gpt_neox: read_gpt_neox(r, a); return;
    case K::mpt: read_mpt(r, a); return;
    case K::phi: read_phi(r, a); return;
    case K::t5: read_t5(r, a); return;
  }
}

}  // namespace trainplan::request::hf
