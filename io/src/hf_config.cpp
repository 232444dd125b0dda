#include "trainplan/io/hf_config.hpp"

#include <filesystem>

#include "trainplan/core/error.hpp"
#include "trainplan/io/files.hpp"

namespace trainplan::io {
namespace {

using model::Activation;
using model::Architecture;
using model::MlpKind;
using model::NormKind;
using model::PositionKind;

// Reads the first present key of a list of aliases (n_embd / hidden_size / d_model ...).
class HfReader {
 public:
  HfReader(const Json& j, std::string where) : j_(j), where_(std::move(where)) {}

  [[nodiscard]] const Json* find(std::initializer_list<const char*> keys) const {
    for (const char* k : keys)
      if (j_.contains(k) && !j_.at(k).is_null()) return &j_.at(k);
    return nullptr;
  }
  [[nodiscard]] std::string names(std::initializer_list<const char*> keys) const {
    std::string out;
    for (const char* k : keys) out += (out.empty() ? "'" : " / '") + std::string(k) + "'";
    return out;
  }
  [[nodiscard]] std::int64_t integer(std::initializer_list<const char*> keys) const {
    const Json* v = find(keys);
    if (!v) throw InputError(where_ + ": required key " + names(keys) + " is missing");
    return checked_integer(*v, keys);
  }
  [[nodiscard]] std::int64_t integer_or(std::initializer_list<const char*> keys, std::int64_t fallback) const {
    const Json* v = find(keys);
    return v ? checked_integer(*v, keys) : fallback;
  }
  [[nodiscard]] bool flag_or(std::initializer_list<const char*> keys, bool fallback) const {
    const Json* v = find(keys);
    if (!v) return fallback;
    if (!v->is_boolean()) throw InputError(where_ + ": key " + names(keys) + " must be true or false");
    return v->get<bool>();
  }
  [[nodiscard]] double number_or(std::initializer_list<const char*> keys, double fallback) const {
    const Json* v = find(keys);
    if (!v) return fallback;
    if (!v->is_number()) throw InputError(where_ + ": key " + names(keys) + " must be a number");
    return v->get<double>();
  }
  [[nodiscard]] std::string string_or(std::initializer_list<const char*> keys, std::string fallback) const {
    const Json* v = find(keys);
    if (!v) return fallback;
    if (!v->is_string()) throw InputError(where_ + ": key " + names(keys) + " must be a string");
    return v->get<std::string>();
  }
  [[nodiscard]] const Json& json() const { return j_; }
  [[nodiscard]] const std::string& where() const { return where_; }

 private:
  [[nodiscard]] std::int64_t checked_integer(const Json& v, std::initializer_list<const char*> keys) const {
    if (!v.is_number_integer() || v.get<std::int64_t>() <= 0)
      throw InputError(where_ + ": key " + names(keys) + " must be a positive integer (got " + v.dump() + ")");
    return v.get<std::int64_t>();
  }
  const Json& j_;
  std::string where_;
};

Activation activation_of(const std::string& act, const std::string& where) {
  if (act == "silu" || act == "swish") return Activation::silu;
  if (act == "gelu" || act == "gelu_python" || act == "gelu_accurate") return Activation::gelu;
  if (act == "gelu_pytorch_tanh") return Activation::gelu_tanh;
  if (act == "gelu_new" || act == "gelu_fast") return Activation::gelu_new;
  if (act == "relu") return Activation::relu;
  throw InputError(where + ": unsupported activation '" + act + "'");
}

void read_common(const HfReader& r, Architecture& a) {
  a.hidden = r.integer({"hidden_size", "n_embd", "d_model", "n_embed"});
  a.layers = r.integer({"num_hidden_layers", "n_layer", "num_layers", "n_layers"});
  a.heads = r.integer({"num_attention_heads", "n_head", "num_heads", "n_heads"});
  a.kv_heads = r.integer_or({"num_key_value_heads", "num_kv_heads", "n_head_kv"}, a.heads);
  a.vocab = r.integer({"vocab_size"});
  a.intermediate = r.integer_or({"intermediate_size", "n_inner", "d_ff", "ffn_hidden_size"}, 4 * a.hidden);
  a.max_seq = r.integer_or({"max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "n_ctx"}, 0);
  if (r.find({"head_dim", "d_kv"})) {
    a.head_dim = r.integer({"head_dim", "d_kv"});
  } else {
    if (a.hidden % a.heads != 0)
      throw InputError(r.where() + ": hidden size " + std::to_string(a.hidden) +
                       " is not divisible by " + std::to_string(a.heads) + " attention heads");
    a.head_dim = a.hidden / a.heads;
  }
  a.attention_dropout = r.number_or({"attention_dropout", "attn_pdrop"}, 0.0);
  a.hidden_dropout = r.number_or({"hidden_dropout", "resid_pdrop"}, 0.0);
}

void read_llama_like(const HfReader& r, Architecture& a, bool tie_default) {
  read_common(r, a);
  a.mlp = MlpKind::gated;
  a.norm = NormKind::rmsnorm;
  a.position = PositionKind::rotary;
  a.activation = activation_of(r.string_or({"hidden_activation", "hidden_act"}, "silu"), r.where());
  if (a.family == "gemma") a.activation = Activation::gelu_tanh;  // HF forces the tanh GELU
  a.tie_embeddings = r.flag_or({"tie_word_embeddings"}, tie_default);
  const bool attention_bias = r.flag_or({"attention_bias"}, false);
  a.qkv_bias = a.family == "qwen2" ? true : attention_bias;
  a.out_bias = a.family == "qwen2" ? false : attention_bias;
  a.mlp_bias = r.flag_or({"mlp_bias"}, false);
  if (a.family == "mistral" || a.family == "mixtral" || a.family == "qwen2") {
    const bool qwen_window = a.family != "qwen2" || r.flag_or({"use_sliding_window"}, false);
    if (qwen_window) a.sliding_window = r.integer_or({"sliding_window"}, 0);
  }
  if (a.family == "mixtral") {
    a.experts = r.integer({"num_local_experts"});
    a.experts_per_token = r.integer({"num_experts_per_tok"});
    // transformers' experts_implementation: the default grouped_mm, or "eager", a loop over experts.
    const std::string impl = r.string_or({"experts_implementation"}, "grouped_mm");
    if (impl != "grouped_mm" && impl != "eager")
      throw InputError(r.where() + ": experts_implementation '" + impl +
                       "' is not modelled (choices: grouped_mm, eager)");
    a.experts_loop = impl == "eager";
  }
}

void read_gpt2(const HfReader& r, Architecture& a) {
  read_common(r, a);
  a.mlp = MlpKind::plain;
  a.norm = NormKind::layernorm;
  a.position = PositionKind::learned;
  a.activation = activation_of(r.string_or({"activation_function"}, "gelu_new"), r.where());
  a.tie_embeddings = r.flag_or({"tie_word_embeddings"}, true);
  a.qkv_bias = a.out_bias = a.mlp_bias = true;
  a.fused_qkv_name = "c_attn";
  a.hidden_dropout = r.number_or({"resid_pdrop"}, 0.1);
  a.attention_dropout = r.number_or({"attn_pdrop"}, 0.1);
  if (a.max_seq == 0) a.max_seq = 1024;
}

void read_bloom(const HfReader& r, Architecture& a) {
  read_common(r, a);
  a.mlp = MlpKind::plain;
  a.intermediate = 4 * a.hidden;
  a.norm = NormKind::layernorm;
  a.position = PositionKind::alibi;
  a.activation = Activation::gelu;
  a.tie_embeddings = r.flag_or({"tie_word_embeddings"}, true);
  a.qkv_bias = a.out_bias = a.mlp_bias = true;
  a.embedding_norm = true;
  a.fused_qkv_name = "query_key_value";
}

void read_falcon(const HfReader& r, Architecture& a) {
  read_common(r, a);
  const bool new_arch = r.flag_or({"new_decoder_architecture"}, false);
  const bool multi_query = r.flag_or({"multi_query"}, true);
  const bool parallel = r.flag_or({"parallel_attn"}, true);
  if (new_arch) a.kv_heads = r.integer_or({"num_kv_heads", "n_head_kv"}, a.heads);
  else a.kv_heads = multi_query ? 1 : a.heads;
  a.mlp = MlpKind::plain;
  a.norm = NormKind::layernorm;
  a.position = r.flag_or({"alibi"}, false) ? PositionKind::alibi : PositionKind::rotary;
  a.activation = Activation::gelu;
  a.tie_embeddings = r.flag_or({"tie_word_embeddings"}, true);
  const bool bias = r.flag_or({"bias"}, false);
  a.qkv_bias = a.out_bias = a.mlp_bias = bias;
  a.parallel_residual = new_arch || parallel;
  a.norms_per_layer = new_arch ? 2 : (parallel ? 1 : 2);
  a.fused_qkv_name = "query_key_value";
}

// The share of each head's width that is rotated: transformers v5 keeps it in rope_parameters,
// earlier versions at the top level (Phi: partial_rotary_factor, GPT-NeoX: rotary_pct).
double partial_rotary(const HfReader& r, double fallback) {
  double f = r.number_or({"partial_rotary_factor", "rotary_pct"}, fallback);
  if (const Json* rope = r.find({"rope_parameters"}); rope && rope->is_object()) {
    if (rope->contains("partial_rotary_factor")) {
      const Json& v = rope->at("partial_rotary_factor");
      if (!v.is_number())
        throw InputError(r.where() + ": key 'rope_parameters.partial_rotary_factor' must be a number");
      f = v.get<double>();
    }
  }
  if (!(f > 0.0 && f <= 1.0))
    throw InputError(r.where() + ": the partial rotary factor must be in (0, 1] (got " + std::to_string(f) + ")");
  return f;
}

void read_gpt_neox(const HfReader& r, Architecture& a) {
  read_common(r, a);
  a.mlp = MlpKind::plain;
  a.norm = NormKind::layernorm;
  a.position = PositionKind::rotary;
  a.activation = activation_of(r.string_or({"hidden_act"}, "gelu"), r.where());
  a.tie_embeddings = r.flag_or({"tie_word_embeddings"}, false);
  const bool bias = r.flag_or({"attention_bias"}, true);
  a.qkv_bias = a.out_bias = bias;
  a.mlp_bias = true;
  a.parallel_residual = r.flag_or({"use_parallel_residual"}, true);
  a.fused_qkv_name = "query_key_value";
  a.rotary_fraction = partial_rotary(r, 0.25);  // GPTNeoXConfig's default rotary_pct
}

void read_mpt(const HfReader& r, Architecture& a) {
  read_common(r, a);
  a.intermediate = a.hidden * r.integer_or({"expansion_ratio"}, 4);
  a.mlp = MlpKind::plain;
  const bool no_bias = r.flag_or({"no_bias"}, true);
  a.norm = no_bias ? NormKind::layernorm_no_bias : NormKind::layernorm;
  a.position = PositionKind::alibi;  // the transformers port has no learned position table
  a.activation = Activation::gelu;
  a.tie_embeddings = true;
  a.qkv_bias = a.out_bias = a.mlp_bias = !no_bias;
  a.fused_qkv_name = "Wqkv";
  if (const Json* cfg = r.find({"attn_config"}); cfg && cfg->is_object() && cfg->contains("attn_pdrop") &&
                                                  cfg->at("attn_pdrop").is_number())
    a.attention_dropout = cfg->at("attn_pdrop").get<double>();
}

void read_phi(const HfReader& r, Architecture& a) {
  read_common(r, a);
  a.mlp = MlpKind::plain;
  a.norm = NormKind::layernorm;
  a.position = PositionKind::rotary;
  a.activation = activation_of(r.string_or({"hidden_act"}, "gelu_new"), r.where());
  a.tie_embeddings = r.flag_or({"tie_word_embeddings"}, false);
  a.qkv_bias = a.out_bias = a.mlp_bias = a.lm_head_bias = true;
  a.parallel_residual = true;
  a.norms_per_layer = 1;
  a.rotary_fraction = partial_rotary(r, 0.5);  // PhiConfig's default
}

void read_t5(const HfReader& r, Architecture& a) {
  read_common(r, a);
  a.encoder_decoder = true;
  a.decoder_layers = r.integer_or({"num_decoder_layers"}, a.layers);
  const std::string proj = r.string_or({"feed_forward_proj"}, "relu");
  const bool gated = proj.rfind("gated-", 0) == 0;
  a.mlp = gated ? MlpKind::gated : MlpKind::plain;
  a.activation = activation_of(gated ? proj.substr(6) == "gelu" ? "gelu_new" : proj.substr(6) : proj, r.where());
  a.norm = NormKind::rmsnorm;
  a.position = PositionKind::relative;
  a.relative_buckets = r.integer_or({"relative_attention_num_buckets"}, 32);
  a.tie_embeddings = r.flag_or({"tie_word_embeddings"}, true);
  const double dropout = r.number_or({"dropout_rate"}, 0.1);
  a.attention_dropout = a.hidden_dropout = dropout;
}

}  // namespace

const std::set<std::string, std::less<>>& supported_model_types() {
  static const std::set<std::string, std::less<>> kTypes{
      "llama", "mistral", "mixtral", "qwen2", "gemma", "falcon", "RefinedWeb", "RefinedWebModel",
      "bloom", "gpt2", "gpt_neox", "mpt", "phi", "t5", "mt5"};
  return kTypes;
}

Architecture architecture_from_hf_config(const Json& config, const std::string& name, const std::string& where) {
  if (!config.is_object()) throw InputError(where + ": expected a JSON object");
  const HfReader r(config, where);
  const Json* type = r.find({"model_type"});
  if (!type) throw InputError(where + ": required key 'model_type' is missing");
  if (!type->is_string()) throw InputError(where + ": key 'model_type' must be a string");
  std::string t = type->get<std::string>();
  if (!supported_model_types().contains(t)) {
    std::string known;
    for (const auto& k : supported_model_types()) known += (known.empty() ? "" : ", ") + k;
    throw InputError(where + ": unsupported model_type '" + t + "' (supported: " + known + ")");
  }
  if (t == "RefinedWeb" || t == "RefinedWebModel") t = "falcon";
  if (t == "mt5") t = "t5";
  Architecture a;
  a.name = name;
  a.family = t;
  if (t == "llama" || t == "mistral" || t == "mixtral" || t == "qwen2") read_llama_like(r, a, false);
  else if (t == "gemma") read_llama_like(r, a, true);
  else if (t == "gpt2") read_gpt2(r, a);
  else if (t == "bloom") read_bloom(r, a);
  else if (t == "falcon") read_falcon(r, a);
  else if (t == "gpt_neox") read_gpt_neox(r, a);
  else if (t == "mpt") read_mpt(r, a);
  else if (t == "phi") read_phi(r, a);
  else read_t5(r, a);
  if (a.max_seq == 0) {
    if (a.position == PositionKind::learned)
      throw InputError(where + ": required key 'max_position_embeddings' / 'n_positions' is missing");
    a.max_seq = 2048;
  }
  model::validate(a);
  return a;
}

Architecture read_hf_config_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::string file = path;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    file = (fs::path(path) / "config.json").string();
    if (!fs::exists(file, ec)) throw InputError("folder '" + path + "' holds no config.json");
  }
  const std::string text = read_text_file(file, "model config");
  const std::string where = "config.json '" + file + "'";
  const Json j = parse_json(text, where);
  std::string name = fs::path(file).parent_path().filename().string();
  if (name.empty()) name = fs::path(file).stem().string();
  return architecture_from_hf_config(j, name, where);
}

}  // namespace trainplan::io
