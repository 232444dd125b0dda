#include "trainplan/model/family.hpp"

#include <algorithm>

namespace trainplan::model {
namespace {

// transformers v5.17.0, src/transformers/integrations/sdpa_attention.py:79-170
// sdpa_attention_forward: is_causal when no mask is given (:124; masking_utils.py:497-500 gives
// None without padding, :269-270, unless a sliding window reaches the sequence, :263); K/V grouped
// with enable_gqa when the mask is None and the head dim <= 256 (use_gqa_in_sdpa :27-36, used at
// :97-102), else expanded by repeat_kv (:15-24); dropout = the module's attention_dropout in
// training (e.g. models/llama/modeling_llama.py:274). The same at 00c238bd242b: :40, :107-112.
// Not modelled: the head-dim <= 256 condition for enable_gqa (no catalogue family exceeds it).
HfSdpaCall shared_sdpa() {
  return HfSdpaCall{.source = "integrations/sdpa_attention.py sdpa_attention_forward"};
}

// No SDPA path: transformers refuses attn_implementation="sdpa" (_supports_sdpa left False,
// modeling_utils.py:1131; raised at :1669-1674).
HfSdpaCall no_sdpa(const char* source, bool softmax_in_model_dtype) {
  return HfSdpaCall{.supported = false,
                    .dropout = false,
                    .eager_softmax_in_model_dtype = softmax_in_model_dtype,
                    .source = source};
}

Architecture decoder(MlpKind mlp, NormKind norm, PositionKind position, Activation act) {
  Architecture a;
  a.mlp = mlp;
  a.norm = norm;
  a.position = position;
  a.activation = act;
  return a;
}
Architecture llama_like() {
  return decoder(MlpKind::gated, NormKind::rmsnorm, PositionKind::rotary, Activation::silu);
}

ModuleNames names(std::string q, std::string k, std::string v, std::string o, std::string gate,
                  std::string up, std::string down) {
  ModuleNames n;
  n.q = std::move(q);
  n.k = std::move(k);
  n.v = std::move(v);
  n.o = std::move(o);
  n.gate = std::move(gate);
  n.up = std::move(up);
  n.down = std::move(down);
  return n;
}

// A multimodal wrapper whose language model is its text_config, read as `text`.
Family wrapper(const Family& text, std::string model_type, std::string config_class) {
  Family w = text;
  w.model_type = std::move(model_type);
  w.aliases.clear();
  w.config_class = std::move(config_class);
  w.text_config_family = text.model_type;
  return w;
}

// Experts held as 3-d parameters gate_up_proj and down_proj (gpt-oss, Llama 4, DeepSeek), routed
// by a module named `router`.
ModuleNames fused_expert_names(std::string router) {
  ModuleNames n;
  n.expert_gate = n.expert_up = "gate_up_proj";
  n.expert_down = "down_proj";
  n.router = std::move(router);
  return n;
}

Family row(std::string model_type, std::vector<std::string> aliases, std::string config_class,
           std::string source, ConfigKeys keys, ClassDefaults defaults, Architecture traits,
           ModuleNames module_names, std::string block_class, HfSdpaCall sdpa) {
  Family f;
  f.model_type = std::move(model_type);
  f.aliases = std::move(aliases);
  f.config_class = std::move(config_class);
  f.source = std::move(source);
  f.keys = keys;
  f.defaults = defaults;
  f.traits = std::move(traits);
  f.names = std::move(module_names);
  f.block_class = std::move(block_class);
  f.sdpa = sdpa;
  return f;
}

// The Llama-like decoders.
void add_llama_like(std::vector<Family>& t) {
  // Class defaults: each class's __init__ / dataclass defaults in huggingface/transformers, file
  // src/transformers/models/<type>/configuration_<type>.py at the commit named, and
  // PretrainedConfig.__init__ (configuration_utils.py: tie_word_embeddings defaults to True) for
  // the classes that do not set tie_word_embeddings themselves.
  // llama, mixtral, qwen2, gemma, gpt_neox, phi: @008e574391258935f3ecc3035c882e73bbcac419;
  // mistral: @001f85b38fb432858ace93f18622f07cec46d874 (the same values at 008e574);
  // falcon: @5fd8edad2a672d6a10d6352b62b823d56c3032bf; bloom:
  // @d94ee404add5208a61220111258cbafa50aaa297; gpt2: @1c70522e01cdf5fcc6ebda6c372ee0198d557c53;
  // mpt: @05699a763e76ee438fa65e6eeae4a294ea0026f5; t5: @038869d4d54db478c18dbe58a02aefc67f62beb0;
  // qwen3, qwen3_moe, olmo2, phi3, gemma2, gemma3_text, gpt_oss, llama4_text, deepseek_v2, deepseek_v3: v5.24.0 (the oracle's,
  // tools/oracle/requirements.txt). SDPA rows: v5.17.0 unless named.
  const char* kOld = "transformers @008e5743 (and the commits of hf_config.cpp's history)";
  // clang-format off
  //                                              vocab   hidden layers heads inter  kv  hd   max_seq    tie
  t.push_back(row("llama", {}, "LlamaConfig", kOld, ConfigKeys::llama,
               {32000, 4096, 32, 32, 11008, 0, 0, 2048, false}, llama_like(), {}, "LlamaDecoderLayer", shared_sdpa()));
  t.push_back(row("mistral", {}, "MistralConfig", kOld, ConfigKeys::mistral,
               {32000, 4096, 32, 32, 14336, 8, 0, 4096 * 32, false}, llama_like(), {}, "MistralDecoderLayer", shared_sdpa()));
  t.push_back(row("mixtral", {}, "MixtralConfig", kOld, ConfigKeys::mixtral,
               {32000, 4096, 32, 32, 14336, 8, 0, 4096 * 32, false}, llama_like(),
               names("q_proj", "k_proj", "v_proj", "o_proj", "w1", "w3", "w2"), "MixtralDecoderLayer", shared_sdpa()));
  {
    Architecture q = llama_like();
    q.qkv_bias = true;  // Qwen2Attention: q, k, v with bias, o without, whatever the config says
    t.push_back(row("qwen2", {}, "Qwen2Config", kOld, ConfigKeys::qwen2,
                 {151936, 4096, 32, 32, 22016, 32, 0, 32768, false}, q, {}, "Qwen2DecoderLayer", shared_sdpa()));
  }
  {
    Architecture g = llama_like();
    g.activation = Activation::gelu_tanh;  // GemmaMLP always runs the tanh GELU
    Family f = row("gemma", {}, "GemmaConfig", kOld, ConfigKeys::gemma,
             {256000, 3072, 28, 16, 24576, 16, 256, 8192, true}, g, {}, "GemmaDecoderLayer", shared_sdpa());
    f.ops.fp32_normalised_norm = true;
    t.push_back(f);
  }
  // clang-format on
}

// The older families with keys and blocks of their own.
void add_older(std::vector<Family>& t) {
  const char* kOld = "transformers @008e5743 (and the commits of hf_config.cpp's history)";
  // clang-format off
  {
    Architecture a = decoder(MlpKind::plain, NormKind::layernorm, PositionKind::rotary, Activation::gelu);
    a.fused_qkv_name = "query_key_value";
    // v5.17.0 models/falcon/modeling_falcon.py:350-357 FalconAttention.forward: its own SDPA
    // call with the causal mask the model builds (:763-770, allow_is_causal_skip=False),
    // dropout_p = 0.0 on the rotary path (:355); K/V of the multi-query model passed with one
    // head and no enable_gqa (_split_heads :280-283, :331-332), the new decoder's broadcast_to
    // every query head and flattened, a copy (:265-275). Its eager softmax is bf16 in and out
    // (:363; softmax_warp_forward<BFloat16, BFloat16, float> in the H200 profile).
    const HfSdpaCall falcon{.own_attention = true,
                            .always_mask = true,
                            .kv_as_is = true,
                            .kv_broadcast = true,
                            .dropout = false,
                            .eager_softmax_in_model_dtype = true,
                            .source = "models/falcon/modeling_falcon.py FalconAttention.forward"};
    Family f = row("falcon", {"RefinedWeb", "RefinedWebModel"}, "FalconConfig", kOld, ConfigKeys::falcon,
                   {65024, 4544, 32, 71, 0, 0, 0, 2048, true}, a,
                   names("query_key_value", "query_key_value", "query_key_value", "dense", "", "dense_h_to_4h", "dense_4h_to_h"),
                   "FalconDecoderLayer", falcon);
    f.ops.kv_always_repeated = true;
    t.push_back(f);
  }
  {
    Architecture a = decoder(MlpKind::plain, NormKind::layernorm, PositionKind::alibi, Activation::gelu);
    a.qkv_bias = a.out_bias = a.mlp_bias = true;
    a.embedding_norm = true;
    a.fused_qkv_name = "query_key_value";
    // v5.17.0 models/bloom/modeling_bloom.py:406-412: a PreTrainedModel without _supports_sdpa.
    t.push_back(row("bloom", {}, "BloomConfig", kOld, ConfigKeys::bloom, {250880, 64, 2, 8, 0, 0, 0, 0, true}, a,
                 names("query_key_value", "query_key_value", "query_key_value", "dense", "", "dense_h_to_4h", "dense_4h_to_h"),
                 "BloomBlock", no_sdpa("models/bloom/modeling_bloom.py (no _supports_sdpa)", false)));
  }
  {
    Architecture a = decoder(MlpKind::plain, NormKind::layernorm, PositionKind::learned, Activation::gelu_new);
    a.qkv_bias = a.out_bias = a.mlp_bias = true;
    a.fused_qkv_name = "c_attn";
    t.push_back(row("gpt2", {}, "GPT2Config", kOld, ConfigKeys::gpt2, {50257, 768, 12, 12, 0, 0, 0, 1024, true}, a,
                 names("c_attn", "c_attn", "c_attn", "c_proj", "", "c_fc", "c_proj"), "GPT2Block", shared_sdpa()));
  }
  // clang-format on
}

// The older families, continued: GPT-NeoX, MPT, Phi and T5.
void add_older_rest(std::vector<Family>& t) {
  const char* kOld = "transformers @008e5743 (and the commits of hf_config.cpp's history)";
  // clang-format off
  {
    Architecture a = decoder(MlpKind::plain, NormKind::layernorm, PositionKind::rotary, Activation::gelu);
    a.mlp_bias = true;
    a.fused_qkv_name = "query_key_value";
    Family f = row("gpt_neox", {}, "GPTNeoXConfig", kOld, ConfigKeys::gpt_neox,
                   {50432, 6144, 44, 64, 24576, 0, 0, 2048, false}, a,
                   names("query_key_value", "query_key_value", "query_key_value", "dense", "", "dense_h_to_4h", "dense_4h_to_h"),
                   "GPTNeoXLayer", shared_sdpa());
    f.ops.contiguous_qkv_split = true;
    t.push_back(f);
  }
  {
    // The transformers port has no learned position table: ALiBi.
    Architecture a = decoder(MlpKind::plain, NormKind::layernorm_no_bias, PositionKind::alibi, Activation::gelu);
    a.fused_qkv_name = "Wqkv";
    // v5.17.0 models/mpt/modeling_mpt.py:216-220: a PreTrainedModel without _supports_sdpa.
    t.push_back(row("mpt", {}, "MptConfig", kOld, ConfigKeys::mpt, {50368, 2048, 24, 16, 0, 0, 0, 2048, true}, a,
                 names("Wqkv", "Wqkv", "Wqkv", "out_proj", "", "up_proj", "down_proj"), "MptBlock",
                 no_sdpa("models/mpt/modeling_mpt.py (no _supports_sdpa)", false)));
  }
  {
    Architecture a = decoder(MlpKind::plain, NormKind::layernorm, PositionKind::rotary, Activation::gelu_new);
    a.qkv_bias = a.out_bias = a.mlp_bias = a.lm_head_bias = true;
    a.parallel_residual = true;
    a.norms_per_layer = 1;
    t.push_back(row("phi", {}, "PhiConfig", kOld, ConfigKeys::phi, {51200, 2048, 24, 32, 8192, 0, 0, 2048, false}, a,
                 names("q_proj", "k_proj", "v_proj", "dense", "", "fc1", "fc2"), "PhiDecoderLayer", shared_sdpa()));
  }
  {
    Architecture a = decoder(MlpKind::plain, NormKind::rmsnorm, PositionKind::relative, Activation::relu);
    a.encoder_decoder = true;
    ModuleNames n = names("q", "k", "v", "o", "wi_0", "wi_1", "wo");
    n.up_ungated = "wi";
    // T5 and mT5 have an SDPA path in v5.17.0 (models/t5/modeling_t5.py:542,
    // models/mt5/modeling_mt5.py:553: position bias as an additive mask), not in v4.57.1
    // (modeling_t5.py:774-783 without _supports_sdpa); their rows keep the v4.57.1 rule. T5's
    // eager softmax: softmax(scores.float()).type_as(scores) (v4.57.1 modeling_t5.py:561).
    Family f = row("t5", {"mt5"}, "T5Config", kOld, ConfigKeys::t5, {32128, 512, 6, 8, 2048, 0, 64, 0, true}, a, n,
                 "T5Block", no_sdpa("models/t5/modeling_t5.py (no _supports_sdpa)", true));
    f.ops.norm_keeps_model_dtype_input = true;  // T5LayerNorm
    f.ops.feed_forward_dropout = true;          // T5DenseActDense, T5Stack
    f.ops.loss_in_model_dtype = true;           // T5ForConditionalGeneration
    t.push_back(f);
  }
  // clang-format on
}

// The 2024-25 decoders: q/k norms, sandwich and post norms, fused projections, windows, experts.
void add_recent(std::vector<Family>& t) {
  const char* kNew = "transformers v5.24.0 configuration_<type>.py and modeling_<type>.py";
  // clang-format off
  {
    Architecture a = llama_like();
    a.qk_norm = QkNorm::per_head;  // Qwen3Attention q_norm, k_norm: RMSNorm(head_dim)
    t.push_back(row("qwen3", {}, "Qwen3Config", kNew, ConfigKeys::qwen3,
                 {151936, 4096, 32, 32, 22016, 32, 128, 32768, false}, a, {}, "Qwen3DecoderLayer", shared_sdpa()));
    t.push_back(row("qwen3_moe", {}, "Qwen3MoeConfig", kNew, ConfigKeys::qwen3_moe,
                 {151936, 2048, 24, 32, 6144, 4, 0, 32768, false}, a, {}, "Qwen3MoeDecoderLayer", shared_sdpa()));
  }
  {
    Architecture a = llama_like();
    a.qk_norm = QkNorm::full_width;  // Olmo2Attention: RMSNorm(heads * head_dim), RMSNorm(kv_heads * head_dim)
    a.norm_placement = NormPlacement::post;
    Family f = row("olmo2", {}, "Olmo2Config", kNew, ConfigKeys::olmo2, {50304, 4096, 32, 32, 11008, 0, 0, 2048, false}, a,
             {}, "Olmo2DecoderLayer", shared_sdpa());
    f.ops.fp32_normalised_norm = true;
    f.ops.fp32_rotary_tables = true;  // Olmo2RotaryEmbedding.forward returns fp32 cos and sin
    t.push_back(f);
  }
  {
    Architecture a = llama_like();
    a.fused_qkv_name = "qkv_proj";
    a.fused_gate_up_name = "gate_up_proj";
    t.push_back(row("phi3", {}, "Phi3Config", kNew, ConfigKeys::phi3, {32064, 3072, 32, 32, 8192, 0, 0, 4096, false}, a,
                 names("qkv_proj", "qkv_proj", "qkv_proj", "o_proj", "gate_up_proj", "gate_up_proj", "down_proj"),
                 "Phi3DecoderLayer", shared_sdpa()));
  }
  // clang-format on
}

// The newer families, continued.
void add_recent_rest(std::vector<Family>& t) {
  const char* kNew = "transformers v5.24.0 configuration_<type>.py and modeling_<type>.py";
  // clang-format off
  {
    Architecture a = llama_like();
    a.activation = Activation::gelu_tanh;
    a.norm_placement = NormPlacement::sandwich;
    a.norms_per_layer = 4;
    // Gemma 2 soft-caps its scores. Up to v5.20.0 it had an SDPA path (_supports_sdpa = True,
    // models/gemma2/modeling_gemma2.py:360 at v5.17.0; SDPA takes no softcap, the scores run
    // uncapped); v5.21.0 dropped it (_supports_sdpa = False: "sdpa does not support softcapping",
    // :353 at v5.24.0): eager attention, whose softmax is fp32, cast back.
    HfSdpaCall gemma2_sdpa = shared_sdpa();
    gemma2_sdpa.sdpa_removed_in = 521;
    gemma2_sdpa.source = "models/gemma2/modeling_gemma2.py: _supports_sdpa = False from v5.21, softcapping; to "
                         "v5.20 integrations/sdpa_attention.py sdpa_attention_forward";
    Family f = row("gemma2", {}, "Gemma2Config", kNew, ConfigKeys::gemma2, {256000, 2304, 26, 8, 9216, 4, 256, 8192, true}, a,
             {}, "Gemma2DecoderLayer", gemma2_sdpa);
    f.ops.fp32_normalised_norm = true;
    t.push_back(f);
    a.qk_norm = QkNorm::per_head;  // Gemma3Attention q_norm, k_norm: Gemma3RMSNorm(head_dim)
    Family g = row("gemma3_text", {}, "Gemma3TextConfig", kNew, ConfigKeys::gemma3_text,
             {262208, 2304, 26, 8, 9216, 4, 256, 131072, true}, a, {}, "Gemma3DecoderLayer", shared_sdpa());
    g.ops.fp32_normalised_norm = true;
    t.push_back(g);
    t.push_back(wrapper(g, "gemma3", "Gemma3Config"));  // Gemma3ForConditionalGeneration
  }
  {
    Architecture a = llama_like();
    a.activation = Activation::swiglu_clamped;
    a.mlp_bias = true;  // GptOssExperts: gate_up_proj_bias, down_proj_bias
    a.router_bias = true;
    a.attention_sinks = true;
    // Attention sinks: no SDPA path (_supports_sdpa = False, modeling_gpt_oss.py); its eager
    // softmax is in the model dtype.
    Family f = row("gpt_oss", {}, "GptOssConfig", kNew, ConfigKeys::gpt_oss, {201088, 2880, 36, 64, 2880, 8, 64, 131072, false},
             a, fused_expert_names("router"), "GptOssDecoderLayer", no_sdpa("models/gpt_oss/modeling_gpt_oss.py (_supports_sdpa = False: attention sinks)", true));
    f.ops.fp32_normalised_norm = true;
    t.push_back(f);
  }
  {
    // Llama4TextMoe on every layer here (interleave_moe_layer_step 1): a router, a shared expert
    // (gate_proj, up_proj, down_proj of intermediate_size) and experts held as 3-d parameters that
    // run every token (Llama4TextExperts: two bmm over all experts).
    Architecture a = llama_like();
    a.experts_dense = true;
    Family f = row("llama4_text", {}, "Llama4TextConfig", kNew, ConfigKeys::llama4_text,
                   {202048, 5120, 48, 40, 8192, 8, 128, 4096 * 32, false}, a, fused_expert_names("router"),
                   "Llama4TextDecoderLayer", shared_sdpa());
    t.push_back(f);
    t.push_back(wrapper(f, "llama4", "Llama4Config"));  // Llama4ForConditionalGeneration
  }
  {
    // DeepSeek-V2 and V3: multi-head latent attention (q_a_proj/q_b_proj or q_proj,
    // kv_a_proj_with_mqa, kv_b_proj, o_proj), routed experts as 3-d gate_up_proj and down_proj
    // beside shared_experts' gate_proj, up_proj, down_proj, and a router named gate.
    Architecture a = llama_like();
    ModuleNames n = fused_expert_names("gate");
    Family v2 = row("deepseek_v2", {}, "DeepseekV2Config", kNew, ConfigKeys::deepseek_v2,
                    {102400, 4096, 32, 32, 11008, 0, 0, 2048, false}, a, n, "DeepseekV2DecoderLayer", shared_sdpa());
    v2.ops.complex_rotary_table = true;  // DeepseekV2RotaryEmbedding: torch.polar, complex64
    t.push_back(v2);
    t.push_back(row("deepseek_v3", {}, "DeepseekV3Config", kNew, ConfigKeys::deepseek_v3,
                    {129280, 7168, 61, 128, 18432, 128, 0, 4096, false}, a, n, "DeepseekV3DecoderLayer", shared_sdpa()));
  }
  // clang-format on
}

std::vector<Family> builtin() {
  std::vector<Family> t;
  add_llama_like(t);
  add_older(t);
  add_older_rest(t);
  add_recent(t);
  add_recent_rest(t);
  return t;
}

std::vector<Family>& table() {
  static std::vector<Family> t = builtin();
  return t;
}

bool answers_to(const Family& f, std::string_view type) {
  return f.model_type == type || std::find(f.aliases.begin(), f.aliases.end(), type) != f.aliases.end();
}

}  // namespace

const Family* find_family(std::string_view model_type) {
  for (const Family& f : table())
    if (answers_to(f, model_type)) return &f;
  return nullptr;
}

const Family& family_of(const Architecture& a) {
  if (const Family* f = find_family(a.family)) return *f;
  return table().front();
}

std::vector<std::string> family_names() {
  std::vector<std::string> out;
  for (const Family& f : table()) {
    out.push_back(f.model_type);
    out.insert(out.end(), f.aliases.begin(), f.aliases.end());
  }
  std::sort(out.begin(), out.end());
  return out;
}

void add_family(Family f) {
  for (Family& g : table())
    if (g.model_type == f.model_type) {
      g = std::move(f);
      return;
    }
  table().push_back(std::move(f));
}

}  // namespace trainplan::model
