#include "trainplan/model/activations.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <span>
#include <string_view>

#include "trainplan/model/family.hpp"
#include "trainplan/model/model_states.hpp"
#include "trainplan/model/sdpa.hpp"

namespace trainplan::model {
namespace {

constexpr double kMaskBytes = 1.0;  // dropout masks are bool tensors
constexpr double kFp32 = 4.0;

// Shapes shared by both accountings, for one micro-batch on one GPU.
struct Shape {
  double t;    // tokens in the micro-batch (s * b)
  double s;    // sequence length
  double b;    // micro-batch
  double h;    // hidden
  double qd;   // query width a*d
  double kd;   // key/value width k*d
  double I;    // MLP intermediate a token passes through (MoE: its experts' and the shared one's)
  double a;    // attention heads
  double tp;   // tensor-parallel degree
  double rep;  // divisor of replicated (non-TP) terms: tp with sequence parallelism, else 1
};

Shape shape_of(const Architecture& a, const Training& tr) {
  const double s = static_cast<double>(tr.seq);
  const double b = static_cast<double>(tr.micro_batch);
  const double tp = static_cast<double>(tr.tp);
  return {s * b,
          s,
          b,
          static_cast<double>(a.hidden),
          static_cast<double>(a.q_dim()),
          static_cast<double>(a.kv_dim()),
          static_cast<double>(a.active_intermediate()),  // experts a token runs, shared expert
          static_cast<double>(a.heads),
          tp,
          tr.sequence_parallel ? tp : 1.0};
}

// Whether the model is of this Hugging Face model_type. As string views the lengths are compared
// first: most names differ in length, and the evaluator asks for every configuration.
bool is_family(const Architecture& a, std::string_view model_type) {
  return std::string_view(a.family) == model_type;
}

// RMSNorms whose normalised input stays fp32 (model/family.hpp).
bool fp32_normalised_norm(const Architecture& a) { return family_of(a).fp32_normalised_norm; }



// SDPA runs causal without a mask, except where the model builds one (b x 1 x s x s, boolean until
// the attention casts it): Falcon always (hf_sdpa_call), any model under a sliding window.
bool sdpa_explicit_mask(const Architecture& a, const Training& tr) {
  return attention_executed(a, tr, tr.cuda_sm) == Attention::sdpa && (hf_sdpa_call(a).always_mask || sliding_window_masked(a, tr));
}

// What Hugging Face's tanh GELU (activations.py NewGELUActivation:
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))) keeps per intermediate element, in units of the
// matmul dtype: x (for pow), the tanh output, 0.5 x and 1 + tanh. Under CUDA autocast torch.pow is
// an fp32 op (PyTorch AMP docs, "CUDA Ops that can autocast to float32"), so x is kept as its fp32
// copy and the tanh chain after it runs in fp32: only 0.5 x stays 16-bit. CPU autocast has no pow
// in its fp32 list.
double gelu_new_bytes(const Training& tr) {
  const double c = compute_bytes(tr.precision);
  if (tr.cuda_sm > 0 && is_mixed(tr.precision) && c < kFp32) return (3.0 * kFp32 + c) / c;
  return 4.0;
}

// Bytes per element an RMSNorm keeps of its input: the fp32 copy its variance is taken from, and
// T5's, which multiplies the model-dtype input itself by the fp32 reciprocal (T5LayerNorm), also
// that input when the model dtype is not fp32.
double rms_input_bytes(const Architecture& a, const Training& tr) {
  const double r = param_bytes(tr.precision);
  return kFp32 + (is_family(a, "t5") && r < kFp32 ? r : 0.0);
}

// Korthikanti et al. 2022 (arXiv:2205.05198), Table 2, generalised: replicated 10sbh (two norm
// inputs, QKV and MLP inputs, two dropout masks), TP-sharded Q, K, V, attention output and the MLP
// intermediates, and the attention core 5as^2b (softmax, its dropout mask and output).
BlockActivations megatron_block(const Architecture& a, const Training& tr,
                                std::vector<ActivationTerm>* terms) {
  const Shape x = shape_of(a, tr);
  const double sbh = x.t * x.h;
  const bool dropout = true;  // Megatron's GPT keeps attention and hidden dropout on
  const double replicated = (4.0 + 2.0 + 2.0 + (dropout ? 2.0 : 0.0)) * sbh / x.rep;
  const double qkv = 2.0 * x.t * (x.qd + 2.0 * x.kd) / x.tp;
  const double attn_out = 2.0 * x.t * x.qd / x.tp;
  const double mlp_tensors = a.mlp == MlpKind::gated ? 3.0 : 2.0;
  const double mlp = mlp_tensors * 2.0 * x.t * x.I / x.tp;
  double core = 0.0;
  switch (tr.attention) {
    case Attention::eager: core = 5.0 * x.a * x.s * x.s * x.b / x.tp; break;
    case Attention::flash:
    case Attention::sdpa: core = kFp32 * x.a * x.t / x.tp; break;  // log-sum-exp per row
  }
  BlockActivations out;
  if (terms)
    *terms = {{"norm, projection inputs and dropout masks", Bytes(replicated)},
              {"q, k, v", Bytes(qkv)},
              {"attention output", Bytes(attn_out)},
              {"mlp intermediates", Bytes(mlp)},
              {"attention core", Bytes(core)}};
  out.attention = Bytes(core);
  out.saved = Bytes(replicated + qkv + attn_out + mlp + core);
  return out;
}

// The tensors a Hugging Face block saves for backward (docs/formulas.md, "Activations"), one part
// of the block per method. The `first` block of a stack also keeps what later blocks share with it
// (T5's relative position buckets, the encoder output the decoder attends to); with a frozen
// embedding (adapters) its input needs no gradient, nor does a projection its adapter does not
// train. The named terms go to `terms` when given (for display; pricing needs only the sums).
class HfBlock {
 public:
  HfBlock(const Architecture& a, const Training& tr, Stack stack, bool first,
          std::vector<ActivationTerm>* terms)
      : a_(a), tr_(tr), stack_(stack), first_(first), terms_(terms), x_(shape_of(a, tr)),
        c_(compute_bytes(tr.precision)), r_(param_bytes(tr.precision)), mixed_(is_mixed(tr.precision)),
        full_(tr.method == Method::full), input_grad_(!first || full_),
        adapted_(full_ ? AdaptedRoles{} : adapted_roles(a, tr.lora)),
        fused_(!a.fused_qkv_name.empty()), fp32_normalised_(fp32_normalised_norm(a)),
        attn_(attention_executed(a, tr, tr.cuda_sm)),
        sdpa_(attn_ == Attention::sdpa ? sdpa_choice(a, tr) : SdpaChoice{}),
        gpu_sdpa_(attn_ == Attention::sdpa && tr.cuda_sm > 0),
        quant_(tr.method == Method::qlora ? qlora_stack_traits(tr.qlora_stack) : QloraStackTraits{}) {}

  BlockActivations run() {
    attention();
    mlp();
    BlockActivations out;
    out.attention = Bytes(attn_ == Attention::eager || !sdpa_.fused() ? core_ : 0.0);
    out.saved = Bytes(total_);
    return out;
  }

 private:
  bool adapts(Role role) const { return adapted_[static_cast<std::size_t>(role)]; }
  // A linear keeps its input when its weight is trained, when its adapter reads the input directly
  // (no LoRA dropout), and under a QLoRA stack whose 4-bit matmul keeps its input
  // (model_states.hpp qlora_stack_traits).
  bool keeps_input(Role role) const {
    return full_ || quant_.keeps_input || (adapts(role) && tr_.lora.dropout <= 0.0);
  }
  void add(std::string_view name, double bytes) {
    if (bytes <= 0.0) return;
    if (terms_) terms_->push_back({name, Bytes(bytes)});
    total_ += bytes;
  }
  // How many of these linears keep their input (an adapter with dropout keeps its dropped-out copy
  // instead, counted by lora_dropout below).
  int saving(std::initializer_list<Role> roles) const {
    int n = 0;
    for (Role role : roles) n += keeps_input(role) ? 1 : 0;
    return n;
  }
  int adapted(std::initializer_list<Role> roles) const {
    int n = 0;
    for (Role role : roles) n += adapts(role) ? 1 : 0;
    return n;
  }

  // A norm saves what its backward needs; its output is saved by the linears that consume it, under
  // autocast as one 16-bit cast copy per consuming linear.
  // A second norm reading the same input as the first (parallel residual) saves no new input; a norm
  // whose input needs no gradient saves nothing of its own.
  void norm(int consumers_saving, bool shares_input, bool norm_input_grad) {
    const double th = x_.t * x_.h / x_.rep;
    if (norm_input_grad) switch (a_.norm) {
      case NormKind::rmsnorm:
        if (!shares_input) add("norm input (fp32 copy)", rms_input_bytes(a_, tr_) * th);
        add("norm statistics", kFp32 * x_.t / x_.rep);
        // Gemma scales by (1 + weight) in fp32, so its normalised input stays fp32.
        if (full_) add("norm normalised input", (fp32_normalised_ ? kFp32 : r_) * th);
        break;
      case NormKind::layernorm:
      case NormKind::layernorm_no_bias:
        if (!shares_input) add("norm input", (mixed_ ? kFp32 : r_) * th);
        add("norm statistics", 2.0 * (mixed_ ? kFp32 : r_) * x_.t / x_.rep);  // mean, rstd in its dtype
        break;
    }
    if (consumers_saving > 0) add("norm output (linear input)", (mixed_ ? consumers_saving * c_ : r_) * th);
  }
  // LoRA's dropout keeps, per adapted linear, the dropped-out input and its mask.
  void lora_dropout(std::initializer_list<Role> roles, double width) {
    if (full_ || tr_.lora.dropout <= 0.0) return;
    int n = adapted(roles);
    if (fused_ && n > 0 && *roles.begin() == Role::q) n = 1;
    add("LoRA dropout input and mask", n * (c_ + kMaskBytes) * x_.t * width / x_.rep);
  }
  // LoRA: each adapter's A output (t x r) is saved by its B.
  // A fused projection (q/k/v, Phi-3's gate/up) carries one adapter for all its parts.
  void lora_a_outputs(std::initializer_list<Role> roles) {
    if (full_) return;
    const auto among = [&](Role r) { return std::find(roles.begin(), roles.end(), r) != roles.end() && adapts(r); };
    int n = adapted(roles);
    if (fused_ && among(Role::q) && among(Role::k) && among(Role::v)) n -= 2;
    if (!a_.fused_gate_up_name.empty() && among(Role::gate) && among(Role::up)) n -= 1;
    add("LoRA A outputs", n * c_ * x_.t * static_cast<double>(tr_.lora.rank) / x_.tp);
  }

  void attention();
  void qk_norms();
  void attention_inputs(bool repeat);
  void attention_core();
  void mlp();

  const Architecture& a_;
  const Training& tr_;
  const Stack stack_;
  const bool first_;
  std::vector<ActivationTerm>* terms_;
  const Shape x_;
  const double c_;  // dtype of matmul outputs
  const double r_;  // dtype of the residual stream (the parameters')
  const bool mixed_;
  const bool full_;
  const bool input_grad_;
  const AdaptedRoles adapted_;
  const bool fused_;
  const bool fp32_normalised_;  // the family's norms keep an fp32 normalised input
  const Attention attn_;
  const SdpaChoice sdpa_;
  const bool gpu_sdpa_;  // SDPA on a CUDA GPU: the kernel PyTorch picks decides what is kept
  const QloraStackTraits quant_;  // what the 4-bit stack changes (none without QLoRA)
  double total_ = 0.0;
  double core_ = 0.0;  // the attention core (what selective checkpointing drops)
};

void HfBlock::attention() {
  const int attn_consumers = fused_ ? (saving({Role::q, Role::k, Role::v}) > 0 ? 1 : 0)
                                    : saving({Role::q, Role::k, Role::v});
  norm(attn_consumers, false, input_grad_);
  lora_a_outputs({Role::q, Role::k, Role::v, Role::o});
  lora_dropout({Role::q, Role::k, Role::v}, x_.h);
  // Grouped K/V are expanded to every head by eager attention (repeat_kv) and by Falcon's new
  // decoder everywhere; SDPA and flash kernels take them grouped (enable_gqa).
  // (A single K/V head broadcasts without a copy, SDPA takes it strided; eager's matmul only while
  // the micro-batch is one sequence: it folds batch and heads into one dimension, which a stride-0
  // head dimension beside a batch of several cannot share. A sliding-window mask makes SDPA
  // expand too.)
  // On a GPU, SDPA's inputs are those of the call model/sdpa.cpp describes.
  const bool repeat =
      gpu_sdpa_ ? sdpa_.kv_expanded
                : a_.heads != a_.kv_heads &&
                      (is_family(a_, "falcon") ||
                       ((a_.kv_heads > 1 || tr_.micro_batch > 1) && attn_ == Attention::eager) ||
                       (a_.kv_heads > 1 && attn_ == Attention::sdpa && sliding_window_masked(a_, tr_)));
  qk_norms();
  // Llama 4's NoPE layers scale the queries by a per-position temperature (fp32, kept for q's
  // gradient).
  if (a_.query_temperature && a_.position == PositionKind::none) add("query temperature scales", kFp32 * x_.t);
  if (gpu_sdpa_ && sdpa_.fp32_math) {
    // The math fallback keeps fp32 copies of q, k, v (cast from the model's) for its matmuls.
    const double k_width = repeat ? x_.qd : x_.kd;
    add("q, k, v (fp32 copies, SDPA math)", kFp32 * x_.t * (x_.qd + 2.0 * k_width) / x_.tp);
  } else {
    attention_inputs(repeat);
  }
  // T5's relative attention bias: the int64 bucket of every (query, key) pair, for its gradient.
  if (first_ && full_ && a_.relative_buckets > 0) add("relative position buckets", 8.0 * x_.s * x_.s);
  attention_core();
  lora_dropout({Role::o}, x_.qd / x_.tp);
  // Gemma 2 and 3 norm the attention output before the residual add.
  if (a_.norm_placement == NormPlacement::sandwich)
    norm(0, false, input_grad_ || adapted({Role::q, Role::k, Role::v, Role::o}) > 0);
  if (a_.hidden_dropout > 0.0) add("attention dropout mask", kMaskBytes * x_.t * x_.h / x_.rep);
  if (stack_ == Stack::decoder && a_.encoder_decoder) {
    const double q = c_ * x_.t * x_.qd / x_.tp;
    const double kv = c_ * x_.t * x_.kd / x_.tp;
    norm(saving({Role::q}), false, true);
    add("cross-attention q, k, v and output", 3.0 * q + kv);
    if (attn_ == Attention::eager) add("cross-attention scores", core_);
    // The encoder output every decoder block's k and v read: kept once, by the first.
    const int readers = saving({Role::k, Role::v});
    if (first_ && readers > 0)
      add("encoder output (k, v input)", (mixed_ ? readers * c_ : r_) * x_.t * x_.h / x_.rep);
  }
}

// The RMSNorm of q and of k after their projections (Qwen3, Gemma 3: over each head; OLMo 2: over
// the whole projection; Llama 4: a weightless L2 norm of each head after the rotary embedding):
// like a block's norm, an fp32 copy of its input, one statistic per row normed, and under full
// training the normalised input its weight's gradient reads. Its output goes
// to the rotary embedding, whose products with cos and sin keep only the tables. Nothing is kept
// where the projection's output needs no gradient (a frozen one in the first block).
void HfBlock::qk_norms() {
  if (a_.qk_norm == QkNorm::none) return;
  const bool per_head = a_.qk_norm != QkNorm::full_width;
  const bool weighted = a_.qk_norm != QkNorm::l2;  // Llama 4's L2 norm has no weight
  const double d = static_cast<double>(a_.head_dim);
  const auto grad = [&](Role role) { return input_grad_ || adapts(role); };
  for (const Role role : {Role::q, Role::k}) {
    if (!grad(role)) continue;
    const double n = x_.t * (role == Role::q ? x_.qd : x_.kd) / x_.tp;
    add("q/k norm input (fp32 copy)", rms_input_bytes(a_, tr_) * n);
    add("q/k norm statistics", kFp32 * (per_head ? n / d : x_.t));
    if (full_ && weighted) add("q/k norm normalised input", (fp32_normalised_ ? kFp32 : r_) * n);
  }
}

// The q, k, v the attention keeps, in the model dtype.
void HfBlock::attention_inputs(bool repeat) {
  const bool rotary = a_.position == PositionKind::rotary;
  const double q = c_ * x_.t * x_.qd / x_.tp;
  const double kv = c_ * x_.t * x_.kd / x_.tp;
  const double k_used = repeat ? q : kv;
  // Without rotary embeddings q, k, v are views of the projection output; a fused projection keeps
  // its whole output alive through them. SDPA takes contiguous q, k, v: of a fused projection it
  // copies the views (GPT-2: q and v, k stays a view; rotary models: v) and its output.
  const bool sdpa_fused = attn_ == Attention::sdpa && fused_ && !repeat;
  // GPT-NeoX splits its fused projection into contiguous q, k, v.
  const bool neox = is_family(a_, "gpt_neox");
  if ((sdpa_fused || neox) && rotary) {
    add("rotary q, k", q + kv);
    add("v (contiguous copy)", kv);
  } else if (sdpa_fused) {
    add("q, k, v projection output", c_ * x_.t * (x_.qd + 2.0 * x_.kd) / x_.tp);
    add("q, v (contiguous copies)", q + kv);
  } else if (fused_ && !repeat) {
    add("q, k, v projection output", c_ * x_.t * (x_.qd + 2.0 * x_.kd) / x_.tp);
    if (rotary) add("rotary q, k", q + kv);
  } else {
    // Q K^T keeps q for the gradient of k and k for that of q.
    const auto grad = [&](Role role) { return input_grad_ || adapts(role); };
    if (attn_ != Attention::eager || grad(Role::k)) add("q", q);
    if (attn_ != Attention::eager || grad(Role::q)) add("k", k_used);
    add("v", k_used);
  }
}

// Scores and probabilities (eager, SDPA's math fallback) or the fused kernel's output and
// log-sum-exp.
void HfBlock::attention_core() {
  const bool rotary = a_.position == PositionKind::rotary;
  const double q = c_ * x_.t * x_.qd / x_.tp;
  const double scores = x_.a * x_.s * x_.s * x_.b / x_.tp;
  switch (attn_) {
    case Attention::eager:
      // Gemma 2's soft-capped scores: tanh keeps its output, in the scores' dtype.
      if (a_.attention_softcap > 0.0) core_ += c_ * scores;
      if (a_.attention_sinks) {
        // gpt-oss: each row's logits and its head's sink, shifted by their max (int64 indices
        // kept), one softmax in the model dtype over s + 1 columns whose first s the PV matmul
        // reads as a view.
        core_ += c_ * scores * (x_.s + 1.0) / x_.s + 8.0 * scores / x_.s;
      } else if (hf_sdpa_call(a_).eager_softmax_in_model_dtype) {
        core_ += c_ * scores;  // one probability tensor, in the model dtype
      } else {
        core_ += kFp32 * scores;              // softmax output in fp32
        if (c_ < kFp32) core_ += c_ * scores;  // probabilities cast back for the PV matmul
      }
      if (a_.attention_dropout > 0.0) core_ += (kMaskBytes + c_) * scores;
      add("attention scores", core_);
      if (keeps_input(Role::o)) add("attention output (o input)", q);
      return;
    case Attention::flash:
    case Attention::sdpa:
      break;
  }
  if (gpu_sdpa_ && !sdpa_.fused()) {
    // attention.cpp _scaled_dot_product_attention_math: the softmax output, shared by the softmax
    // and P V backward, in fp32 when upcast; with dropout its mask and the dropped probabilities.
    const double p = sdpa_.fp32_math ? kFp32 : c_;
    core_ = p * scores + (sdpa_.dropout > 0.0 ? (kMaskBytes + p) * scores : 0.0);
    add("attention probabilities (SDPA math)", core_);
    if (keeps_input(Role::o)) add("attention output (o input)", q);
  } else {
    core_ = kFp32 * x_.a * x_.t / x_.tp;  // log-sum-exp per row
    add("attention log-sum-exp", core_);
    add("attention output", q);  // the kernel's backward needs it
    // The kernel lays its output out as its query; the o projection reads it token-major, which
    // is free for a query in the projection's layout (Llama's rotary, GPT-2's views) and a copy
    // for one concatenated head-major (partial rotary: Phi, GPT-NeoX; every litgpt model).
    // A rotated slice of a fused projection (Phi-3's qkv_proj) is not dense either: the rotary
    // products write it head-major (Falcon's own attention splits its projection first).
    const bool sliced = fused_ && !hf_sdpa_call(a_).own_attention;
    const bool head_major = (rotary && (a_.rotary_fraction < 1.0 || sliced)) || quant_.head_major_attention_output;
    if (head_major && keeps_input(Role::o)) add("o input (contiguous copy)", q);
  }
  // The explicit mask, cast to the model dtype inside each block.
  if (sdpa_explicit_mask(a_, tr_)) add("attention mask", c_ * x_.b * x_.s * x_.s);
}

void HfBlock::mlp() {
  // The MLP's norm reads the residual after attention, which needs a gradient once anything before
  // it is trained (or, under a parallel residual, the block's input).
  const bool attention_trained = adapted({Role::q, Role::k, Role::v, Role::o}) > 0;
  const bool mlp_norm_grad = input_grad_ || (!a_.parallel_residual && attention_trained);
  if (a_.norms_per_layer > 1) norm(saving({Role::gate, Role::up}), a_.parallel_residual, mlp_norm_grad);
  lora_dropout({Role::gate, Role::up}, x_.h);
  lora_a_outputs({Role::gate, Role::up, Role::down});
  const double tI = x_.t * x_.I / x_.tp;
  if (a_.activation == Activation::swiglu_clamped) {
    // gpt-oss (GptOssExperts._apply_gate): the interleaved gate_up output, read by both clamps;
    // the clamped gate, sigmoid(1.702 gate), their product, up + 1; the product of those two is
    // the down projection's input.
    add("gate_up projection output", 2.0 * c_ * tI);
    add("clamped gate, its sigmoid, the gate product and up + 1", 4.0 * c_ * tI);
    if (keeps_input(Role::down)) add("down projection input", c_ * tI);
  } else if (a_.mlp == MlpKind::gated) {
    // The activation reads the gate projection (T5 v1.1's gated-gelu: the tanh GELU's intermediates).
    const double gate = a_.activation == Activation::gelu_new ? gelu_new_bytes(tr_) : 1.0;
    add("gate projection output", gate * c_ * tI);
    add("activation output", c_ * tI);
    add("up projection output", c_ * tI);
    if (keeps_input(Role::down)) add("down projection input", c_ * tI);
  } else {
    if (a_.activation == Activation::gelu_new) {
      add("up projection output", gelu_new_bytes(tr_) * c_ * tI);
    } else {
      add("up projection output", c_ * tI);
    }
    if (keeps_input(Role::down)) add("down projection input", c_ * tI);
    // T5 drops out inside the feed-forward, between its two matrices.
    if (is_family(a_, "t5") && a_.hidden_dropout > 0.0) add("feed-forward dropout mask", kMaskBytes * tI);
  }
  lora_dropout({Role::down}, static_cast<double>(a_.intermediate) / x_.tp);
  // ... and the MLP output.
  if (a_.norm_placement == NormPlacement::sandwich) norm(0, false, mlp_norm_grad || adapted({Role::gate, Role::up, Role::down}) > 0);
  if (a_.hidden_dropout > 0.0) add("mlp dropout mask", kMaskBytes * x_.t * x_.h / x_.rep);
  if (a_.is_moe() && a_.experts_dense) {
    // Llama4TextMoe: the top-k indices (int64), the sigmoid of the scattered scores (fp32, the
    // others -inf), every expert's copy of the input (hidden_states.repeat) and its score, and
    // the weighted copy the experts' bmm reads.
    const double k = static_cast<double>(a_.experts_per_token);
    const double E = static_cast<double>(a_.experts);
    add("router indices, scores and every expert's score", x_.t * (8.0 * k + kFp32 * E + c_ * E));
    add("every expert's input copy and its weighted copy", 2.0 * c_ * x_.t * E * x_.h / x_.tp);
  } else if (a_.is_moe()) {
    // Routing, per token: fp32 router logits, the top-k indices (int64), fp32 weights and their sum.
    // Per routed token: its weight, int64 indices (grouped_mm: three sort and scatter indices; the
    // loop: one per expert's token list), the gathered input and the expert output (the loop also
    // keeps that output's weighted copy).
    const double k = static_cast<double>(a_.experts_per_token);
    const double E = static_cast<double>(a_.experts);
    const double indices = a_.experts_loop ? 1.0 : 3.0;
    add("router logits and routing",
        x_.t * (kFp32 * E + kFp32 + k * (8.0 + kFp32) + k * (kFp32 + indices * 8.0)));
    add("expert input and output copies", (a_.experts_loop ? 3.0 : 2.0) * c_ * x_.t * k * x_.h / x_.tp);
  }
}

BlockActivations hf_block(const Architecture& a, const Training& tr, Stack stack, bool first,
                          std::vector<ActivationTerm>* terms) {
  return HfBlock(a, tr, stack, first, terms).run();
}
}  // namespace

BlockActivations block_activations(const Architecture& a, const Training& tr, Stack stack) {
  switch (tr.framework) {
    case Framework::megatron: return megatron_block(a, tr, nullptr);
    case Framework::pytorch:
    case Framework::deepspeed: return hf_block(a, tr, stack, false, nullptr);
  }
  return {};
}

std::vector<ActivationTerm> block_activation_terms(const Architecture& a, const Training& tr, Stack stack) {
  std::vector<ActivationTerm> terms;
  switch (tr.framework) {
    case Framework::megatron: (void)megatron_block(a, tr, &terms); break;
    case Framework::pytorch:
    case Framework::deepspeed: (void)hf_block(a, tr, stack, false, &terms); break;
  }
  return terms;
}

namespace {

// A NoPE layer of Llama 4 as a block of its own: no rotary positions, full causal attention (no
// chunk mask), no q/k norm (Llama4TextAttention norms q and k on its rotary layers only).
Architecture nope_variant(const Architecture& a) {
  Architecture v = a;
  v.position = PositionKind::none;
  v.qk_norm = QkNorm::none;
  v.sliding_window = 0;
  v.sliding_layers = 0;
  v.nope_interval = 0;
  return v;
}

}  // namespace

ResolvedBlocks resolve_blocks(const Architecture& a, const Training& tr) {
  ResolvedBlocks r;
  r.attention = attention_executed(a, tr, tr.cuda_sm);
  r.explicit_mask = sdpa_explicit_mask(a, tr);
  r.fp32_rotary_tables = family_of(a).fp32_rotary_tables;
  r.fp32_normalised_norm = family_of(a).fp32_normalised_norm;
  const bool hf = tr.framework != Framework::megatron;
  for (Stack stack : {Stack::encoder, Stack::decoder}) {
    if (stack == Stack::encoder && !a.encoder_decoder) continue;
    StackBlock& sb = stack == Stack::encoder ? r.encoder : r.decoder;
    sb.block = block_activations(a, tr, stack);
    if (hf && !recomputes_blocks(tr.checkpointing)) sb.first_saved = hf_block(a, tr, stack, true, nullptr).saved;
    if (a.nope_interval > 0 && stack == Stack::decoder) {
      sb.nope = block_activations(nope_variant(a), tr, stack);
      sb.nope_share = static_cast<double>(a.nope_layers()) / static_cast<double>(a.layers);
    }
  }
  return r;
}

namespace {

// first_block_extra from the resolved blocks.
Bytes first_block_extra(const Architecture& a, const Training& tr, Stack stack, const ResolvedBlocks& blocks) {
  if (tr.framework == Framework::megatron) return Bytes(0.0);
  const double c = compute_bytes(tr.precision);
  const double s = static_cast<double>(tr.seq);
  double extra = 0.0;
  const bool rotary = a.position == PositionKind::rotary;
  // cos, sin: in the model dtype, but fp32 where the model's rotary embedding returns them
  // uncast (OLMo 2's Olmo2RotaryEmbedding.forward).
  const double table = blocks.fp32_rotary_tables ? kFp32 : c;
  if (rotary) extra += 2.0 * table * s * static_cast<double>(a.rotary_dim());
  if (recomputes_blocks(tr.checkpointing)) {
    if (rotary) extra += 8.0 * s;  // int64 position ids
    // The mask every checkpointed block is handed: eager's additive one in the model dtype, or
    // SDPA's boolean one where the model builds it.
    const double b = static_cast<double>(tr.micro_batch);
    if (blocks.attention == Attention::eager) extra += c * b * s * s;
    if (blocks.explicit_mask) extra += kMaskBytes * b * s * s;
    // The encoder output, an input of every checkpointed decoder block.
    if (stack == Stack::decoder && a.encoder_decoder)
      extra += param_bytes(tr.precision) * static_cast<double>(tr.tokens_per_micro_batch() * a.hidden);
  }
  const double rep = tr.sequence_parallel ? static_cast<double>(tr.tp) : 1.0;
  Bytes out(extra / rep);
  const StackBlock& sb = blocks.of(stack);
  if (!recomputes_blocks(tr.checkpointing)) out += sb.first_saved - sb.block.saved;
  return out;
}

// kept_per_block of a block whose activations without checkpointing are `blk`, `extra` its
// first_block_extra.
Bytes kept_after_policy(const Architecture& a, const Training& tr, const BlockActivations& blk, Bytes extra) {
  switch (tr.checkpointing) {
    case Checkpointing::none: return blk.saved + extra;
    case Checkpointing::selective: return blk.saved - blk.attention + extra;
    case Checkpointing::full: return checkpoint_bytes(a, tr) + extra;
    case Checkpointing::full_offload: return extra;  // the checkpoint itself waits on the host
  }
  return extra;
}

}  // namespace

Bytes first_block_extra(const Architecture& a, const Training& tr, Stack stack) {
  return first_block_extra(a, tr, stack, resolve_blocks(a, tr));
}

Bytes kept_per_block(const Architecture& a, const Training& tr, Stack stack, bool first) {
  const ResolvedBlocks blocks = resolve_blocks(a, tr);
  const Bytes extra = first ? first_block_extra(a, tr, stack, blocks) : Bytes(0.0);
  return kept_after_policy(a, tr, blocks.of(stack).block, extra);
}

Bytes kept_per_layer(const Architecture& a, const Training& tr, std::int64_t layer) {
  const ResolvedBlocks blocks = resolve_blocks(a, tr);
  const Stack stack = a.encoder_decoder && layer < a.layers ? Stack::encoder : Stack::decoder;
  const bool first = layer == 0 || (a.encoder_decoder && layer == a.layers);
  const Bytes extra = first ? first_block_extra(a, tr, stack, blocks) : Bytes(0.0);
  const StackBlock& sb = blocks.of(stack);
  const bool nope = stack == Stack::decoder && a.nope_layer(layer);
  return kept_after_policy(a, tr, nope ? sb.nope : sb.block, extra);
}

Bytes checkpoint_bytes(const Architecture& a, const Training& tr) {
  const double r = tr.framework == Framework::megatron ? 2.0 : param_bytes(tr.precision);
  const double rep = tr.sequence_parallel ? static_cast<double>(tr.tp) : 1.0;
  return Bytes(r * static_cast<double>(tr.tokens_per_micro_batch() * a.hidden) / rep);
}

Bytes embedding_activations(const Architecture& a, const Training& tr) {
  // Korthikanti Sec. 4.3: the embedding dropout mask, s*b*h per first stage.
  const double t = static_cast<double>(tr.tokens_per_micro_batch());
  const double th = t * static_cast<double>(a.hidden);
  const double rep = tr.sequence_parallel ? static_cast<double>(tr.tp) : 1.0;
  if (tr.framework == Framework::megatron) return Bytes(th / rep);
  // The token ids (int64) for the embedding's gradient, and the embedding dropout mask.
  const double ids = tr.method == Method::full ? 8.0 * t : 0.0;
  return Bytes(ids + (a.hidden_dropout > 0.0 ? kMaskBytes * th / rep : 0.0));
}

namespace {
HeadActivations head_activations(const Architecture& a, const Training& tr, bool fp32_normalised);
}  // namespace

HeadActivations head_activations(const Architecture& a, const Training& tr) {
  return head_activations(a, tr, fp32_normalised_norm(a));
}

namespace {
// The head, the family's norm trait looked up by the caller (the evaluator's per-shape cache).
HeadActivations head_activations(const Architecture& a, const Training& tr, bool fp32_normalised) {
  const double t = static_cast<double>(tr.tokens_per_micro_batch());
  const double h = static_cast<double>(a.hidden);
  const double V = static_cast<double>(a.vocab);
  const double tp = static_cast<double>(tr.tp);
  if (tr.framework == Framework::megatron) {
    // Korthikanti Sec. 4.3: final norm and output-layer input, fp32 logits for the loss.
    return {Bytes(4.0 * t * h / tp * (1.0 + V / h)), Bytes(0.0)};
  }
  const double c = compute_bytes(tr.precision);
  const double r = param_bytes(tr.precision);
  const bool mixed = is_mixed(tr.precision);
  const bool full = tr.method == Method::full;
  const bool head_trainable = full || lora_targets_lm_head(a, tr.lora);
  // Final norm as in a block, then the LM head's input.
  double norm = 0.0;
  switch (a.norm) {
    case NormKind::rmsnorm:
      norm = rms_input_bytes(a, tr) * t * h + kFp32 * t +
             (full ? (fp32_normalised ? kFp32 : r) * t * h : 0.0);
      break;
    case NormKind::layernorm:
    case NormKind::layernorm_no_bias: norm = (mixed ? kFp32 : r) * (t * h + 2.0 * t); break;
  }
  if (head_trainable) norm += (mixed ? c : r) * t * h;
  // T5 drops out the final norm's output.
  if (is_family(a, "t5") && a.hidden_dropout > 0.0) norm += kMaskBytes * t * h;
  // The loss: causal LMs upcast the logits and keep the fp32 log-softmax (T5 stays in the model
  // dtype), plus the int64 labels (transformers v5.17.0 loss/loss_utils.py:59 ForCausalLMLoss:
  // logits.float(); torch's cross_entropy is log_softmax then nll_loss, aten/src/ATen/native/
  // LossNLL.cpp cross_entropy_loss_symint). The largest of two moments is transient:
  // - forward, inside the loss: the model-dtype logits and their upcast copy;
  // - the start of backward: nll_loss_backward's dense gradient (zeroed, then scattered) and
  //   log_softmax_backward's output, both in the loss dtype, beside the saved log-softmax. The
  //   logits themselves are gone by then: the Trainer (v5.17.0 trainer.py:2088-2135 compute_loss
  //   returns the loss alone) and a plain `model(...).loss` keep only the loss.
  const double loss_bytes = is_family(a, "t5") ? c : kFp32;
  // Gemma 2 soft-caps the logits, cap * tanh(logits / cap): tanh keeps its output, in the
  // logits' dtype (modeling_gemma2.py Gemma2ForCausalLM.forward).
  const double softcap = a.logit_softcap > 0.0 ? c * t * V / tp : 0.0;
  const double saved = norm + softcap + loss_bytes * t * V / tp + 8.0 * t;
  const double transient = std::max(c + loss_bytes, 2.0 * loss_bytes) * t * V / tp;
  return {Bytes(saved), Bytes(transient)};
}
}  // namespace

ActivationMemory activation_memory(const Architecture& a, const Training& tr) {
  return activation_memory(a, tr, resolve_blocks(a, tr));
}

ActivationMemory activation_memory(const Architecture& a, const Training& tr, const ResolvedBlocks& blocks) {
  ActivationMemory m;
  // Per-stack blocks and layer counts (an encoder-decoder has two stacks, encoder first).
  struct StackPart {
    Stack stack = Stack::decoder;
    const BlockActivations* blk = nullptr;
    double layers = 0;
  };
  std::array<StackPart, 2> stacks;
  std::size_t stack_count = 0;
  if (a.encoder_decoder) stacks[stack_count++] = {Stack::encoder, &blocks.encoder.block, static_cast<double>(a.layers)};
  stacks[stack_count++] = {Stack::decoder, &blocks.decoder.block,
                           static_cast<double>(a.encoder_decoder ? a.decoder_layers : a.layers)};
  const std::span<const StackPart> parts(stacks.data(), stack_count);
  const double all_layers = static_cast<double>(a.total_layers());
  const double p = static_cast<double>(tr.pp);
  const double layers_on_stage = std::ceil(all_layers / p);

  Bytes kept;        // per micro-batch, all blocks of the stage
  Bytes largest;     // one block's full activations (rebuilt in backward under full checkpointing)
  for (const auto& part : parts) {
    const double share = part.layers / all_layers * layers_on_stage;
    const StackBlock& sb = blocks.of(part.stack);
    kept += kept_after_policy(a, tr, *part.blk, Bytes(0.0)) * (share * (1.0 - sb.nope_share));
    largest = std::max(largest, part.blk->saved);
    if (sb.nope_share > 0.0) {  // the stage's NoPE layers, in the model's proportion
      kept += kept_after_policy(a, tr, sb.nope, Bytes(0.0)) * (share * sb.nope_share);
      largest = std::max(largest, sb.nope.saved);
    }
  }
  m.per_block = kept / layers_on_stage;
  if (recomputes_blocks(tr.checkpointing)) m.recompute_peak = largest;
  Bytes in_transit;
  if (tr.checkpointing == Checkpointing::full_offload) {
    // Every block's input goes to the host as forward passes it and comes back for its backward;
    // two are on the GPU in transit (one copied out or prefetched while the next computes).
    const Bytes ckpt = checkpoint_bytes(a, tr);
    m.host = ckpt * layers_on_stage;
    in_transit = ckpt * 2.0;
  }

  // 1F1B: the first stage holds min(p, m) micro-batches; interleaving with v chunks adds
  // (p-1)/(p*v) (Narayanan et al. 2021, arXiv:2104.04473; Korthikanti Sec. 4.2.3).
  const double micro_batches = static_cast<double>(tr.grad_accum);
  m.in_flight = tr.pp > 1 ? std::min(p, micro_batches) : 1.0;
  if (tr.pp > 1 && tr.pp_virtual > 1)
    m.in_flight *= 1.0 + (p - 1.0) / (p * static_cast<double>(tr.pp_virtual));
  Bytes firsts;  // what the first block of each stack keeps beyond the others
  for (const auto& part : parts) firsts += first_block_extra(a, tr, part.stack, blocks);
  m.blocks = (kept + firsts) * m.in_flight + in_transit;
  m.host = m.host * m.in_flight;
  m.embedding = embedding_activations(a, tr) * m.in_flight;
  m.head = tr.pp == 1 ? head_activations(a, tr, blocks.fp32_normalised_norm).total() : Bytes(0.0);
  return m;
}

void add_activation_detail(ActivationMemory& m, const Architecture& a, const Training& tr) {
  m.sdpa.reset();
  m.block_terms.clear();
  if (tr.attention == Attention::sdpa && tr.framework != Framework::megatron) m.sdpa = sdpa_choice(a, tr);
  if (a.encoder_decoder) m.block_terms.push_back({Stack::encoder, block_activation_terms(a, tr, Stack::encoder)});
  m.block_terms.push_back({Stack::decoder, block_activation_terms(a, tr, Stack::decoder)});
}

}  // namespace trainplan::model
