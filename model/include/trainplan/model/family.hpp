#pragma once
// Every Hugging Face model family the tool reads, as one table: the model_type and its other
// spellings, the configuration class whose keys and defaults the config reader applies, what the
// class hard-codes about the block (the prototype architecture), the module names PEFT targets,
// the transformers SDPA path, the decoder-block class the launch-config emitters wrap, and its
// op-list variant (what its block's ops do beyond the Architecture). The config reader (request/hf_config), the module names
// (block_linears), the SDPA dispatch (sdpa.hpp), the activation model and the emitters read this
// table and nothing else about a family. README "Add a model family" shows the steps.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trainplan/model/architecture.hpp"
#include "trainplan/model/sdpa.hpp"

namespace trainplan::model {

// The keys of config.json a family's configuration class reads, one set per class: a family added
// later reuses the set of the class it derives from (request/src/hf_config.cpp reads each).
enum class ConfigKeys {
  llama, mistral, mixtral, qwen2, gemma,                          // Llama-like decoders
  qwen3, qwen3_moe, olmo2, phi3, gemma2, gemma3_text, gpt_oss,    // 2024-25 decoders
  llama4_text, deepseek_v2, deepseek_v3,
  gpt2, bloom, falcon, gpt_neox, mpt, phi, t5                     // older families
};

// What the configuration class assumes for a key config.json leaves out or sets to null; 0 where
// the class derives the value instead (intermediate: 4 x hidden; kv_heads: the attention heads;
// head_dim: hidden / heads; max_seq: no position limit).
struct ClassDefaults {
  std::int64_t vocab = 0, hidden = 0, layers = 0, heads = 0;
  std::int64_t intermediate = 0;
  std::int64_t kv_heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t max_seq = 0;
  bool tie_embeddings = false;  // PretrainedConfig's default is true
};

// The names the Hugging Face implementation gives a block's linear layers (what PEFT's
// target_modules match); fused projections repeat one name for their parts.
struct ModuleNames {
  std::string q = "q_proj", k = "k_proj", v = "v_proj", o = "o_proj";
  std::string gate = "gate_proj", up = "up_proj", down = "down_proj";
  std::string up_ungated;  // the up projection's name when the MLP is not gated (T5: "wi"); "" = up
  std::string router = "gate";
  // Routed experts held apart from the dense MLP's names (3-d gate_up_proj and down_proj: gpt-oss,
  // Llama 4, DeepSeek); "" = gate, up, down. A shared expert and a dense layer use gate, up, down.
  std::string expert_gate, expert_up, expert_down;
  // Multi-head latent attention: the query's compression and expansion (q then names the single
  // query projection of a model without the compression), the key/value latent and its expansion.
  std::string q_a = "q_a_proj", q_b = "q_b_proj", kv_a = "kv_a_proj_with_mqa", kv_b = "kv_b_proj";
};

// How a family's op list differs from the Llama block's beyond what its Architecture describes:
// the dtypes its norms, rotary tables and loss keep, the copies its attention makes, the dropouts
// its class adds. The op-list builder (model/block_ops.cpp) and the head's activations read these,
// never a family's name.
struct OpListVariant {
  // RMSNorms that multiply by their weight in fp32 and cast after, so that the normalised input
  // the weight's gradient reads stays fp32 (Gemma's 1 + weight; OLMo 2's and gpt-oss's
  // weight * x.float()).
  bool fp32_normalised_norm = false;
  // An RMSNorm that multiplies its input in the model dtype by the fp32 rsqrt, keeping that input
  // beside its fp32 copy (T5LayerNorm: hidden_states * torch.rsqrt(variance + eps)).
  bool norm_keeps_model_dtype_input = false;
  bool fp32_rotary_tables = false;  // the rotary embedding returns cos and sin uncast (OLMo 2)
  // The rotary embedding is one complex64 table of s x d/2 (DeepSeek-V2's freqs_cis), not cos and
  // sin.
  bool complex_rotary_table = false;
  // Grouped K/V repeated to every head on every attention path, eager and SDPA alike (Falcon's
  // FalconAttention).
  bool kv_always_repeated = false;
  // The fused q/k/v projection split into contiguous q, k, v before the rotary embedding
  // (GPTNeoXAttention), not left as views.
  bool contiguous_qkv_split = false;
  // One fused q/k/v projection whose value reaches SDPA as a view of its output when K/V are not
  // expanded (litgpt's CausalSelfAttention: lit_gpt/model.py at 8641822 splits the permuted qkv,
  // litgpt/model.py v0.5.7 splits it on the last dimension; only a grouped K/V is copied, by expand
  // and reshape or repeat_interleave). The fused kernels save their inputs as given, so the whole
  // projection output is kept through the value; q and k are new tensors from the rotary cat.
  bool fused_qkv_value_view = false;
  // LoRA on that one projection drops its input out once for all adapted q, k, v parts: one
  // dropped-out copy and mask, one dropout kernel (litgpt's LoRAQKVLinear.forward:
  // F.linear(self.lora_dropout(x), self.lora_A), at lit-gpt 8641822 and litgpt v0.5.7 alike),
  // as transformers' fused projections (Phi-3's qkv_proj) carry one adapter.
  bool one_qkv_lora_dropout = false;
  // LoRA on that one projection pads the adapted parts' update to the projection's width with
  // index_copy, whose backward keeps the update it copied (torch's IndexCopyBackward saves
  // `source`): t x the adapted parts' widths in the compute dtype (litgpt's LoRAQKVLinear.zero_pad;
  // from litgpt v0.4.0 nothing is padded where q, k and v are all adapted, before that always).
  bool lora_qkv_update_kept = false;
  bool lora_qkv_always_padded = false;
  // An RMSNorm computed in its input's dtype (no fp32 upcast): it keeps that input as it came
  // (lit-gpt before 6178c7cc, 2023-10-24: lit_gpt/rmsnorm.py x * torch.rsqrt(norm_x + eps)).
  bool rms_norm_in_input_dtype = false;
  // The block linears' inputs are recomputed in backward, not kept for their weights' gradients
  // (torchao's float8 under torch.compile: model/fp8.hpp compile_recomputes_fp8_inputs).
  bool recomputes_linear_inputs = false;
  // Dropout inside the feed-forward, between its two matrices, and on the final norm's output
  // (T5DenseActDense, T5Stack's final_layer_norm then dropout), where hidden_dropout is set.
  bool feed_forward_dropout = false;
  // The loss takes the log-softmax of the logits in the model dtype, not of an fp32 upcast (T5's
  // CrossEntropyLoss on lm_logits; causal LMs' ForCausalLMLoss upcasts).
  bool loss_in_model_dtype = false;
  // The training loop holds the logits through backward (litgpt's finetune scripts keep `logits`
  // in a local while fabric.backward runs, and into the next iteration), beside what the loss saved.
  bool logits_kept = false;
  // The model's logits reach the loop cast to fp32 (lightning Fabric's precision plugins return
  // floating outputs in the default dtype), the model-dtype original freed: the loss and a kept
  // copy hold fp32.
  bool logits_fp32 = false;
  // The loss runs in chunks of this many positions of every sequence (litgpt's
  // chunked_cross_entropy), so its backward's dense gradients exist one chunk at a time; 0: one pass.
  int loss_chunk_positions = 0;
  // One fused cross-entropy kernel (flash-attn's Triton cross_entropy, llm-foundry's loss_fn
  // fused_crossentropy): forward reads the logits once and keeps them with a per-row log-sum-exp,
  // backward reads them again and writes their gradient; no fp32 log-softmax.
  bool fused_loss = false;
  // Liger's kernels (model/library.hpp liger_kernels), in place of the eager ops:
  // - one RMSNorm kernel each way, keeping its input and an fp32 rstd per row (rms_norm.py);
  // - one rotary kernel each way, rotating q and k in place (rope.py);
  // - one SwiGLU/GeGLU kernel each way over the gate and up outputs, which it keeps; the
  //   activation's output is never stored (swiglu.py, geglu.py);
  // - the fused linear cross-entropy: the head's products and the loss in chunks of rows, the
  //   gradients of the head's input and weight computed in forward, no logits kept
  //   (fused_linear_cross_entropy.py).
  bool fused_norm = false;
  bool fused_rotary = false;
  bool fused_glu = false;
  // Hugging Face's composite tanh GELU (Activation::gelu_new) run as one kernel keeping its input
  // (a library's own F.gelu, torch.compile's fused pointwise chain).
  bool one_kernel_gelu = false;
  bool fused_linear_loss = false;
  // Inductor's graph (torch.compile): the pointwise ops around the linears are fused into the
  // kernels beside them, so autocast's input casts are no kernels of their own and one 16-bit
  // copy of an input serves every linear reading it; the causal mask is built once for the whole
  // graph; the loss keeps the fp32 upcast of the logits, not the 16-bit logits (the compiled H200
  // runs' peaks: one 16-bit copy of the logits above a fused kernel's, in all three).
  bool compiled = false;
  // The loss compiled as a graph of its own, apart from the model's (torchtune's compile_loss after
  // its per-layer compile_model): it keeps what it receives, the logits as the head returned them
  // (16-bit chunks, or the model's fp32 cast), and recomputes its own upcast in backward.
  bool loss_compiled_apart = false;
};

struct Family {
  std::string model_type;
  std::vector<std::string> aliases;  // other model_type values read as this family
  std::string config_class;
  std::string source;  // where the defaults and traits were read (file @ commit)
  ConfigKeys keys = ConfigKeys::llama;
  ClassDefaults defaults;
  // What the class hard-codes (MLP and norm kinds, positions, fixed biases, fused projections,
  // q/k norms, norm placement, ...); the reader fills the sizes and the keyed values in.
  Architecture traits;
  ModuleNames names;
  std::string block_class;  // the decoder-block class (_no_split_modules); "" when unknown
  HfSdpaCall sdpa;          // transformers' SDPA path for the family (sdpa.hpp)
  OpListVariant ops;        // what its op list does beyond its Architecture (block_ops.hpp)
  // A multimodal wrapper (Gemma 3): its text_config is read as this family; its vision tower is
  // not counted.
  std::string text_config_family;
};

// The family of a model_type or one of its aliases; null when unknown.
[[nodiscard]] const Family* find_family(std::string_view model_type);
// The family an architecture was read as (its `family` field); the Llama row when unknown, for
// architectures built by hand.
[[nodiscard]] const Family& family_of(const Architecture& a);
// Every model_type and alias, sorted (for messages).
[[nodiscard]] std::vector<std::string> family_names();
// Adds a family to the table, or replaces the one of the same model_type. Not thread-safe: call it
// before any reading or pricing starts.
void add_family(Family f);

}  // namespace trainplan::model
