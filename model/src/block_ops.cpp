#include "trainplan/model/block_ops.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <initializer_list>

#include "trainplan/model/family.hpp"
#include "trainplan/model/flops.hpp"
#include "trainplan/model/lora.hpp"
#include "trainplan/model/model_states.hpp"

namespace trainplan::model {
namespace {

constexpr double kMaskBytes = 1.0;  // dropout masks are bool tensors
constexpr double kFp32 = 4.0;

[[nodiscard]] constexpr double dbl(std::int64_t v) { return static_cast<double>(v); }

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

// Shapes of one micro-batch of one block on one GPU.
struct Shape {
  // As the saved tensors see them.
  double t;    // tokens in the micro-batch (s * b)
  double s;    // sequence length
  double b;    // micro-batch
  double h;    // hidden
  double qd;   // query width a*d
  double kd;   // key/value width k*d
  double vd;   // value width (k*d_v: narrower than keys under latent attention)
  double I;    // MLP intermediate a token passes through (MoE: its experts' and the shared one's)
  double a;    // attention heads
  double tp;   // tensor-parallel degree
  double rep;  // divisor of replicated (non-TP) terms: tp with sequence parallelism, else 1
  // As the kernels see them, per GPU.
  double kh;      // hidden (divided by the TP degree under sequence parallelism)
  double kq;      // query width
  double kkv;     // key/value width (at least one head)
  double kvo;     // value and attention output width (heads x d_v)
  double kinter;  // MLP intermediate
  double scores;  // attention score elements (b * heads/t * s * s)
  double c;       // compute dtype bytes
  double r;       // parameter dtype bytes
  double stream;  // residual stream dtype bytes (fp32 under autocast of an fp32 model)
  bool mixed;     // autocast: linears cast their inputs to c
  bool full;      // weights trained
};

Shape shape_of(const Architecture& a, const Training& tr) {
  const double s = dbl(tr.seq);
  const double b = dbl(tr.micro_batch);
  const double tp = static_cast<double>(tr.tp);
  const double c = compute_bytes(tr.precision);
  const bool full = tr.method == Method::full;
  // Under mixed precision an fp32 model (full training, or a frozen base kept fp32) carries an fp32
  // residual stream; Hugging Face + PEFT load the frozen base in 16 bits.
  const bool fp32_model = is_mixed(tr.precision) && (full || tr.frozen_base_fp32);
  const double stream = fp32_model ? kFp32 : param_bytes(tr.precision) < kFp32 ? c : kFp32;
  return {s * b,
          s,
          b,
          dbl(a.hidden),
          dbl(a.q_dim()),
          dbl(a.kv_dim()),
          dbl(a.kv_heads * a.value_head_dim()),
          dbl(a.active_intermediate()),  // experts a token runs, shared expert
          dbl(a.heads),
          tp,
          tr.sequence_parallel ? tp : 1.0,
          dbl(a.hidden) / (tr.sequence_parallel ? tp : 1.0),
          dbl(a.q_dim()) / tp,
          dbl(std::max(a.kv_dim() / tr.tp, a.head_dim)),
          dbl(a.attention_out_dim()) / tp,
          dbl(a.active_intermediate()) / tp,
          b * dbl(a.heads) / tp * s * s,
          c,
          param_bytes(tr.precision),
          stream,
          is_mixed(tr.precision),
          full};
}

// Appends ops and the tensors they keep.
class Builder {
 public:
  explicit Builder(BlockOps& out) : out_(out) {}

  Op& open(std::string_view name, OpKind kind, bool core = false) {
    Op& op = out_.ops.emplace_back();
    op.name = name;
    op.kind = kind;
    op.core = core;
    return op;
  }
  Op& cur() { return out_.ops.back(); }
  // A tensor the current op keeps for backward; `core`: the attention core's, which selective
  // checkpointing drops.
  void keep(std::string_view name, double bytes, bool core = false) {
    if (bytes <= 0.0) return;
    keep_at(out_.ops.size() - 1, name, bytes, core);
  }
  // The same for an op opened earlier.
  void keep_at(std::size_t op, std::string_view name, double bytes, bool core = false) {
    if (bytes <= 0.0) return;
    out_.saved.push_back({name, Bytes(bytes), core, op});
  }
  [[nodiscard]] std::size_t last() const { return out_.ops.size() - 1; }

  // The memory-bound kernels of the current op, forward and backward. n is the element count; the
  // other arguments are bytes per element of the tensors involved.
  void forward(double bytes, double kernels = 1.0) { cur().forward += {bytes, kernels}; }
  void backward(double bytes, double kernels = 1.0) { cur().backward += {bytes, kernels}; }
  void launches(double f, double b) {
    cur().forward_launches += f;
    cur().backward_launches += b;
  }
  // x.to(dtype): its gradient is converted back.
  void cast(double n, double from, double to, bool grad) {
    if (from == to) return;
    forward(n * (from + to));
    if (grad) backward(n * (to + from));
  }
  // y = f(x) whose gradient needs x (pow, silu, gelu, tanh, softmax): reads dy and x, writes dx.
  void unary(double n, double in, double out, bool grad) {
    forward(n * (in + out));
    if (grad) backward(n * (out + in + in));
  }
  // z = x * y, both full-size and both differentiated: dx = dz y and dy = dz x.
  void product(double n, double x, double y, double out) {
    forward(n * (x + y + out));
    backward(2.0 * n * (out + x + y), 2.0);
  }
  // y = x * s with s broadcast (a norm's weight or rsqrt, a constant): dx = dy s; when s needs a
  // gradient it is the reduction of dy x (a product kernel and a sum).
  void scale(double n, double in, double out, bool grad, bool scale_grad) {
    forward(n * (in + out));
    if (grad) backward(n * (out + in));
    if (scale_grad) backward(n * (out + in + out) + n * out, 2.0);
  }
  // z = x + y: the gradient passes through, converted where an operand's dtype differs.
  void add(double n, double x, double y, double out) {
    forward(n * (x + y + out));
    if (x != out) backward(n * (out + x));
    if (y != out) backward(n * (out + y));
  }
  // mean over the last dimension; its backward expands the gradient.
  void row_mean(double n, double in) {
    forward(n * in);
    backward(n * in);
  }
  // A materialising copy (transpose().contiguous(), cat): its backward copies the gradient back.
  void copy(double n, double bytes) {
    forward(2.0 * n * bytes);
    backward(2.0 * n * bytes);
  }
  void dropout(double n, double bytes) {
    forward(n * (2.0 * bytes + kMaskBytes));
    backward(n * (2.0 * bytes + kMaskBytes));
  }
  // A tensor read by several differentiated ops: autograd sums their gradients.
  void fan_in(double n, double bytes, int consumers) {
    if (consumers > 1) backward(3.0 * n * bytes * (consumers - 1), consumers - 1.0);
  }

 private:
  BlockOps& out_;
};

// LlamaRMSNorm: to(fp32), pow(2), mean, * rsqrt(var + eps), to(input dtype), * weight.
// LayerNorm: one native_layer_norm kernel each way (and the weight/bias reduction).
// X elements normed (the hidden states, or q or k for their norms).
void norm_kernels(Builder& b, const Architecture& a, const Shape& x, double X) {
  const double s = x.stream;
  switch (a.norm) {
    case NormKind::rmsnorm:
      b.cast(X, s, kFp32, true);
      b.unary(X, kFp32, kFp32, true);
      b.row_mean(X, kFp32);
      b.scale(X, kFp32, kFp32, true, true);
      b.fan_in(X, kFp32, 2);
      b.cast(X, kFp32, s, true);
      b.scale(X, s, s, true, x.full);
      break;
    case NormKind::layernorm:
    case NormKind::layernorm_no_bias:
      b.forward(X * 2.0 * s);
      b.backward(X * 3.0 * s + (x.full ? X * 2.0 * s : 0.0), x.full ? 2.0 : 1.0);
      break;
  }
}

// The GEMM of one linear per GPU.
GemmShape gemm_of(const Architecture& a, const Training& tr, const Linear& l, bool adapted) {
  const LinearShard kn = linear_shard(a, l, tr.tp);
  const std::int64_t T = tr.tokens_per_micro_batch();
  const bool expert = l.copies > 1;
  GemmShape g;
  g.role = l.role;
  // Balanced routing: each of the E experts multiplies t k / E tokens (fewer where a capacity
  // drops some, more where the framework pads to it).
  g.m = expert ? std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(
                                               tokens_per_expert(dbl(T), a.expert_runs(), a.experts) *
                                               expert_token_share(a, tr))))
               : T;
  g.n = kn.n;
  g.k = kn.k;
  g.count = expert ? l.copies : 1;
  g.weight_grad = tr.method == Method::full;
  g.adapted = adapted;
  g.rank = adapted ? tr.lora.rank : 0;
  if (tr.method == Method::qlora && l.role != Role::router)
    g.dequant_bytes = dbl(kn.k) * dbl(kn.n) * dbl(g.count) *
                      dequant_bytes_per_weight(quantized_bytes_per_param(tr.quant, tr.quant_block, l.in),
                                               compute_bytes(tr.precision));
  return g;
}

AttentionShape attention_of(const Architecture& a, const Training& tr, bool causal, bool cross) {
  AttentionShape s;
  s.batch = tr.micro_batch;
  s.heads = a.heads / tr.tp;
  s.kv_heads = std::max<std::int64_t>(1, a.kv_heads / tr.tp);
  s.heads_per_gpu = dbl(a.heads) / tr.tp;
  s.seq = tr.seq;
  s.head_dim = a.head_dim;
  s.v_head_dim = a.value_head_dim();
  s.causal = causal;
  s.cross = cross;
  return s;
}

// ---- Hugging Face blocks in eager PyTorch -----------------------------------------------------

// One tensor-parallel f/g pair per sublayer: each attention's output projection (self and cross)
// and the MLP's down projections together (routed and shared experts are summed first).
// `mlp_reduced` remembers that the block's MLP has its pair.
OpCollective sublayer_collective(Role role, bool& mlp_reduced) {
  const bool pair = role == Role::o || (role == Role::down && !mlp_reduced);
  mlp_reduced = mlp_reduced || role == Role::down;
  return pair ? OpCollective::tensor_parallel : OpCollective::none;
}

// MoE experts run as transformers' per-expert loop: where the config asks for it
// (experts_implementation = "eager") and in every release before 5.0, which had no grouped_mm path
// (v4.57.1 Qwen3MoeSparseMoeBlock, MixtralSparseMoeBlock and GptOssExperts in training loop over the
// experts hit). Llama 4's experts are one batched matmul in every release.
bool experts_loop(const Architecture& a, const Training& tr) {
  return a.is_moe() && !a.experts_dense && (a.experts_loop || tr.transformers < 500);
}

// Experts that take at least one of the micro-batch's tokens when each token picks k of E
// uniformly (a balanced router): E (1 - (1 - k/E)^T).
double experts_hit(const Architecture& a, const Training& tr) {
  const double E = dbl(a.experts);
  const double miss = std::pow(1.0 - dbl(a.experts_per_token) / E, dbl(tr.tokens_per_micro_batch()));
  return E * (1.0 - miss);
}

// The ops of a Hugging Face block and the tensors each saves for backward (docs/formulas.md,
// "Activations"). The `first` block of a stack also keeps what later blocks share with it; with a
// frozen embedding (adapters) its input needs no gradient, nor does a projection its adapter does
// not train.
class HfBlock {
 public:
  // `linears`: block_linears(a, stack) worked out by the caller, or null.
  HfBlock(const Architecture& a, const Training& tr, Stack stack, bool first, BlockOps& out,
          const std::vector<Linear>* linears)
      : a_(a), tr_(tr), stack_(stack), first_(first), b_(out),
        own_(linears != nullptr ? std::vector<Linear>{} : block_linears(a, stack)),
        linears_(linears != nullptr ? *linears : own_),
        x_(shape_of(a, tr)), c_(x_.c), r_(x_.r), mixed_(x_.mixed), full_(x_.full), input_grad_(!first || full_),
        adapted_(full_ ? AdaptedRoles{} : adapted_roles(a, tr.lora)),
        fused_(!a.fused_qkv_name.empty()), variant_(family_of(a).ops),
        run_(out.run), attn_(run_.runs), sdpa_(run_.gpu_sdpa ? run_.sdpa : SdpaChoice{}),
        gpu_sdpa_(run_.gpu_sdpa),
        quant_(tr.method == Method::qlora ? qlora_stack_traits(tr.qlora_stack) : QloraStackTraits{}),
        loop_(experts_loop(a, tr)), hits_(loop_ ? experts_hit(a, tr) : 1.0) {}

  void run();

 private:
  bool adapts(Role role) const { return adapted_[static_cast<std::size_t>(role)]; }
  // A linear keeps its input when its weight is trained, when its adapter reads the input directly
  // (no LoRA dropout), and under a QLoRA stack whose 4-bit matmul keeps its input
  // (model_states.hpp qlora_stack_traits).
  bool keeps_input(Role role) const {
    return full_ || quant_.keeps_input || (adapts(role) && tr_.lora.dropout <= 0.0);
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
  bool attention_trained() const {
    return adapted({Role::q, Role::k, Role::v, Role::o, Role::q_a, Role::kv_a, Role::kv_b}) > 0;
  }

  void norm(std::string_view name, bool kernels, bool saves, int consumers_saving, bool shares_input,
            bool norm_input_grad);
  void norm_kernels(double X);
  void linears(std::initializer_list<Role> roles, double in_bytes);
  void lora_dropout(std::initializer_list<Role> roles, double width);
  void lora_a_outputs(std::initializer_list<Role> roles);
  void qk_norms();
  void rotary(double n);
  void attention_inputs(bool repeat);
  void attention_core(bool cross);
  void attention_saved();
  void activation();
  void mlp_saved();
  void routing();
  [[nodiscard]] double router_saved() const;
  void attention();
  void latent_attention();
  void latent_norm(std::string_view name, double width, double stored_width, bool grad, bool read_by_next);
  void attention_end(double X);
  void cross_attention();
  void mlp();

  const Architecture& a_;
  const Training& tr_;
  const Stack stack_;
  const bool first_;
  Builder b_;
  const std::vector<Linear> own_;
  const std::vector<Linear>& linears_;
  const Shape x_;
  const double c_;  // dtype of matmul outputs
  const double r_;  // dtype of the residual stream (the parameters')
  const bool mixed_;
  const bool full_;
  const bool input_grad_;
  const AdaptedRoles adapted_;
  const bool fused_;
  const OpListVariant variant_;  // the family's op-list variant
  const AttentionRun run_;
  const Attention attn_;
  const SdpaChoice sdpa_;
  const bool gpu_sdpa_;  // SDPA on a CUDA GPU: the kernel PyTorch picks decides what is kept
  const QloraStackTraits quant_;  // what the 4-bit stack changes (none without QLoRA)
  // MoE: transformers' per-expert loop (its kernels run once per expert that took a token), and
  // the number of such experts; 1 for the grouped path, whose kernels run once for all experts.
  const bool loop_;
  const double hits_;
  double core_ = 0.0;  // the attention core's saved bytes
  void dispatch();
};

void HfBlock::norm_kernels(double X) { model::norm_kernels(b_, a_, x_, X); }

// A norm of the hidden states: its kernels, and what its backward needs. Its output is saved by
// the linears that consume it, under autocast as one 16-bit cast copy per consuming linear. A second
// norm reading the same input as the first (parallel residual) saves no new input; a norm whose
// input needs no gradient saves nothing of its own.
void HfBlock::norm(std::string_view name, bool kernels, bool saves, int consumers_saving, bool shares_input,
                   bool norm_input_grad) {
  if (!kernels && !saves) return;
  b_.open(name, OpKind::norm);
  if (kernels) norm_kernels(x_.t * x_.kh);
  if (!saves) return;
  const double th = x_.t * x_.h / x_.rep;
  if (norm_input_grad) switch (a_.norm) {
      case NormKind::rmsnorm:
        if (!shares_input) b_.keep("norm input (fp32 copy)", rms_input_bytes(variant_, tr_) * th);
        b_.keep("norm statistics", kFp32 * x_.t / x_.rep);
        // Gemma scales by (1 + weight) in fp32, so its normalised input stays fp32.
        if (full_) b_.keep("norm normalised input", (variant_.fp32_normalised_norm ? kFp32 : r_) * th);
        break;
      case NormKind::layernorm:
      case NormKind::layernorm_no_bias:
        if (!shares_input) b_.keep("norm input", (mixed_ ? kFp32 : r_) * th);
        b_.keep("norm statistics", 2.0 * (mixed_ ? kFp32 : r_) * x_.t / x_.rep);  // mean, rstd in its dtype
        break;
    }
  if (consumers_saving > 0) b_.keep("norm output (linear input)", (mixed_ ? consumers_saving * c_ : r_) * th);
}

// The linears of these roles reading one input (in_bytes per element): per linear its GEMM,
// autocast's cast of the input, its launches and bias gradient, and its adapter's dropout, scaling
// and add; the input's gradients summed.
void HfBlock::linears(std::initializer_list<Role> roles, double in_bytes) {
  const bool cast_weights = x_.mixed && (full_ || tr_.frozen_base_fp32);
  const double T = x_.t;
  int consumers = 0;
  double width = 0.0;
  bool mlp_reduced = false;
  for (const Linear& l : linears_) {
    if (std::find(roles.begin(), roles.end(), l.role) == roles.end()) continue;
    const bool adapted = !full_ && adapts(l.role);
    Op& op = b_.open(to_string(l.role), OpKind::gemm);
    op.gemm = gemm_of(a_, tr_, l, adapted);
    const bool row = l.role == Role::o || l.role == Role::down;
    op.collective = sublayer_collective(l.role, mlp_reduced);
    const double in = dbl(l.in) / (row ? x_.tp : 1.0);
    const double out = dbl(l.out) / (row ? 1.0 : x_.tp);
    // An expert's linear runs once per expert that took a token in transformers' loop, once for
    // all experts as a grouped GEMM (grouped_mm) or batched matmul (Llama 4's bmm).
    const double runs = l.copies > 1 ? hits_ : 1.0;
    width = in;
    ++consumers;
    if (x_.mixed) b_.cast(T * in, in_bytes, c_, true);
    const double dequant = tr_.method == Method::qlora ? 1.0 : 0.0;
    const double weight_cast = cast_weights ? 1.0 : 0.0;
    b_.launches(runs * (1.0 + dequant + weight_cast), runs * (1.0 + (full_ ? 1.0 + weight_cast : 0.0) + dequant));
    if (l.bias && full_) b_.backward(T * out * c_);
    if (!adapted) continue;
    ++consumers;
    if (tr_.lora.dropout > 0.0) b_.dropout(T * in, c_);
    b_.launches(2.0, 4.0);
    b_.scale(T * out, c_, c_, true, false);
    b_.add(T * out, c_, c_, c_);
  }
  if (consumers > 1) {
    b_.open("gradient sum", OpKind::elementwise);
    b_.fan_in(T * width, in_bytes, consumers);
  }
}

// LoRA's dropout keeps, per adapted linear, the dropped-out input and its mask.
void HfBlock::lora_dropout(std::initializer_list<Role> roles, double width) {
  if (full_ || tr_.lora.dropout <= 0.0) return;
  int n = adapted(roles);
  if (fused_ && n > 0 && *roles.begin() == Role::q) n = 1;
  b_.keep("LoRA dropout input and mask", n * (c_ + kMaskBytes) * x_.t * width / x_.rep);
}

// LoRA: each adapter's A output (t x r) is saved by its B.
// A fused projection (q/k/v, Phi-3's gate/up) carries one adapter for all its parts.
void HfBlock::lora_a_outputs(std::initializer_list<Role> roles) {
  if (full_) return;
  const auto among = [&](Role r) { return std::find(roles.begin(), roles.end(), r) != roles.end() && adapts(r); };
  int n = adapted(roles);
  if (fused_ && among(Role::q) && among(Role::k) && among(Role::v)) n -= 2;
  if (!a_.fused_gate_up_name.empty() && among(Role::gate) && among(Role::up)) n -= 1;
  b_.keep("LoRA A outputs", n * c_ * x_.t * dbl(tr_.lora.rank) / x_.tp);
}

// The RMSNorm of q and of k after their projections (Qwen3, Gemma 3: over each head; OLMo 2: over
// the whole projection; Llama 4: a weightless L2 norm of each head after the rotary embedding):
// like a block's norm, an fp32 copy of its input, one statistic per row normed, and under full
// training the normalised input its weight's gradient reads. Its output goes to the rotary
// embedding, whose products with cos and sin keep only the tables. Nothing is kept where the
// projection's output needs no gradient (a frozen one in the first block).
void HfBlock::qk_norms() {
  if (a_.qk_norm == QkNorm::none) return;
  const bool per_head = a_.qk_norm != QkNorm::full_width;
  const bool weighted = a_.qk_norm != QkNorm::l2;  // Llama 4's L2 norm has no weight
  const double d = dbl(a_.head_dim);
  const auto grad = [&](Role role) { return input_grad_ || adapts(role); };
  for (const Role role : {Role::q, Role::k}) {
    b_.open(role == Role::q ? "q norm" : "k norm", OpKind::norm);
    norm_kernels(x_.t * (role == Role::q ? x_.kq : x_.kkv));
    if (!grad(role)) continue;
    const double n = x_.t * (role == Role::q ? x_.qd : x_.kd) / x_.tp;
    b_.keep("q/k norm input (fp32 copy)", rms_input_bytes(variant_, tr_) * n);
    b_.keep("q/k norm statistics", kFp32 * (per_head ? n / d : x_.t));
    if (full_ && weighted) b_.keep("q/k norm normalised input", (variant_.fp32_normalised_norm ? kFp32 : r_) * n);
  }
}

// Rotary embeddings on q or k of n elements (apply_rotary_pos_emb: x cos + rotate_half(x) sin,
// rotate_half = cat(-x2, x1)); partial rotary slices and concatenates the pass-through part. cos
// and sin take the dtype of the hidden states, so an fp32 stream makes q and k fp32 until SDPA's
// autocast casts them back.
void HfBlock::rotary(double n) {
  const double nr = n * a_.rotary_fraction;
  const double rot = x_.stream;
  const double c = c_;
  if (a_.rotary_fraction < 1.0) b_.copy(n, rot);
  b_.scale(nr, c, rot, true, false);
  b_.forward(nr * c);  // neg of one half
  b_.backward(nr * c);
  b_.copy(nr, c);  // cat
  b_.scale(nr, c, rot, true, false);
  b_.add(nr, rot, rot, rot);
  b_.fan_in(nr, c, 2);
  if (x_.mixed) b_.cast(n, rot, c, true);
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
  if ((sdpa_fused || variant_.contiguous_qkv_split) && rotary) {
    b_.keep("rotary q, k", q + kv);
    b_.keep("v (contiguous copy)", kv);
  } else if (sdpa_fused) {
    b_.keep("q, k, v projection output", c_ * x_.t * (x_.qd + 2.0 * x_.kd) / x_.tp);
    b_.keep("q, v (contiguous copies)", q + kv);
  } else if (fused_ && !repeat) {
    b_.keep("q, k, v projection output", c_ * x_.t * (x_.qd + 2.0 * x_.kd) / x_.tp);
    if (rotary) b_.keep("rotary q, k", q + kv);
  } else {
    // Q K^T keeps q for the gradient of k and k for that of q.
    const auto grad = [&](Role role) { return input_grad_ || adapts(role); };
    if (attn_ != Attention::eager || grad(Role::k)) b_.keep("q", q);
    if (attn_ != Attention::eager || grad(Role::q)) b_.keep("k", k_used);
    b_.keep("v", k_used);
  }
}

// The attention core: the fused kernel or the two batched matmuls of the unfused path, and outside
// them the wrapper's output transpose or Hugging Face's eager path (scores scaled, masked, softmax
// in fp32, cast back, dropout; repeat_kv of grouped K/V).
void HfBlock::attention_core(bool cross) {
  const bool fused_kernel = !run_.model_code_core();
  Op& op = b_.open(cross ? "cross-attention" : "attention", OpKind::attention_core, true);
  op.attention = attention_of(a_, tr_, !cross && !(a_.encoder_decoder && stack_ == Stack::encoder), cross);
  const double S = x_.scores;
  const double c = c_;
  if (fused_kernel) {
    b_.launches(1.0, 3.0);  // forward; backward: dO.O, the kernel, dQ conversion
  } else {
    b_.launches(2.0, 4.0);  // QK^T, PV; dP, dV, dQ, dK
    // repeat_kv copies grouped K/V (a single head only beside a micro-batch of several: see
    // attention() below).
    if (a_.kv_heads != a_.heads && (a_.kv_heads > 1 || tr_.micro_batch > 1)) {
      b_.copy(x_.kq, c);
      b_.copy(x_.kq, c);
    }
    b_.scale(S, c, c, true, false);
    if (a_.attention_softcap > 0.0) {  // / cap, tanh, * cap (Gemma 2)
      b_.scale(S, c, c, true, false);
      b_.unary(S, c, c, true);
      b_.scale(S, c, c, true, false);
    }
    b_.forward(S * 2.0 * c);  // + causal mask
    if (a_.attention_sinks) {  // cat with the sinks, max, subtract it (gpt-oss)
      b_.copy(S, c);
      b_.row_mean(S, c);
      b_.add(S, c, c, c);
    }
    b_.unary(S, c, kFp32, true);
    b_.cast(S, kFp32, c, true);
    if (a_.attention_dropout > 0.0) b_.dropout(S, c);
  }
  if (!cross) attention_saved();
  b_.open("attention output transpose", OpKind::copy_cast);
  b_.copy(x_.t * x_.kvo, c);  // attn_output.transpose(1, 2).contiguous()
  // SDPA takes contiguous q, k, v: the views of a fused projection are copied (GPT-2 q and v;
  // rotary models' q and k are already fresh tensors, their v a view).
  if (fused_kernel && !a_.fused_qkv_name.empty()) {
    if (a_.position != PositionKind::rotary) b_.copy(x_.t * x_.kq, c);
    b_.copy(x_.t * x_.kkv, c);
  }
}

// What the attention core keeps: scores and probabilities (eager, SDPA's math fallback) or the
// fused kernel's output and log-sum-exp.
void HfBlock::attention_saved() {
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
      } else if (hf_sdpa_call(a_, tr_).eager_softmax_in_model_dtype) {
        core_ += c_ * scores;  // one probability tensor, in the model dtype
      } else {
        core_ += kFp32 * scores;              // softmax output in fp32
        if (c_ < kFp32) core_ += c_ * scores;  // probabilities cast back for the PV matmul
      }
      if (a_.attention_dropout > 0.0) core_ += (kMaskBytes + c_) * scores;
      b_.keep("attention scores", core_, true);
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
    b_.keep("attention probabilities (SDPA math)", core_, true);
  } else {
    core_ = kFp32 * x_.a * x_.t / x_.tp;  // log-sum-exp per row
    b_.keep("attention log-sum-exp", core_);
  }
}

// act(gate) * up, or act(fc1): SiLU, GELU and GELU-tanh are one kernel; Hugging Face's
// NewGELUActivation (GPT-2, Phi) composes pow, three scalings, tanh, an add and a product.
void HfBlock::activation() {
  const double n = x_.t * x_.kinter;
  const double c = c_;
  b_.open("activation", OpKind::elementwise);
  if (a_.activation == Activation::gelu_new) {
    b_.unary(n, c, c, true);                // pow(x, 3)
    b_.scale(n, c, c, true, false);         // * 0.044715
    b_.add(n, c, c, c);                     // x + .
    b_.scale(n, c, c, true, false);         // * sqrt(2 / pi)
    b_.unary(n, c, c, true);                // tanh
    b_.scale(n, c, c, true, false);         // 1 + .
    b_.scale(n, c, c, true, false);         // 0.5 * x
    b_.product(n, c, c, c);                 // .  * .
    b_.fan_in(n, c, 3);
  } else if (a_.activation == Activation::swiglu_clamped) {
    // gpt-oss: clamp gate and up, gate * sigmoid(1.702 gate), up + 1, and the product below.
    b_.unary(n, c, c, true);         // gate.clamp
    b_.unary(n, c, c, true);         // up.clamp
    b_.scale(n, c, c, true, false);  // * 1.702
    b_.unary(n, c, c, true);         // sigmoid
    b_.product(n, c, c, c);          // gate * sigmoid
    b_.scale(n, c, c, true, false);  // up + 1
    b_.fan_in(n, c, 2);
  } else {
    b_.unary(n, c, c, true);
  }
  if (a_.mlp == MlpKind::gated) b_.product(n, c, c, c);
  if (loop_) {  // the loop runs the activation once per expert, on its tokens
    Op& op = b_.cur();
    op.forward_launches += op.forward.kernels * (hits_ - 1.0);
    op.backward_launches += op.backward.kernels * (hits_ - 1.0);
  }
  mlp_saved();
}

// The MLP's intermediates kept for backward.
void HfBlock::mlp_saved() {
  const double tI = x_.t * x_.I / x_.tp;
  if (a_.activation == Activation::swiglu_clamped) {
    // gpt-oss (GptOssExperts._apply_gate): the interleaved gate_up output, read by both clamps;
    // the clamped gate, sigmoid(1.702 gate), their product, up + 1; the product of those two is
    // the down projection's input.
    b_.keep("gate_up projection output", 2.0 * c_ * tI);
    b_.keep("clamped gate, its sigmoid, the gate product and up + 1", 4.0 * c_ * tI);
    if (keeps_input(Role::down)) b_.keep("down projection input", c_ * tI);
  } else if (a_.mlp == MlpKind::gated) {
    // The activation reads the gate projection (T5 v1.1's gated-gelu: the tanh GELU's intermediates).
    const double gate = a_.activation == Activation::gelu_new ? gelu_new_bytes(tr_) : 1.0;
    b_.keep("gate projection output", gate * c_ * tI);
    b_.keep("activation output", c_ * tI);
    b_.keep("up projection output", c_ * tI);
    if (keeps_input(Role::down)) b_.keep("down projection input", c_ * tI);
  } else {
    if (a_.activation == Activation::gelu_new) {
      b_.keep("up projection output", gelu_new_bytes(tr_) * c_ * tI);
    } else {
      b_.keep("up projection output", c_ * tI);
    }
    if (keeps_input(Role::down)) b_.keep("down projection input", c_ * tI);
    // T5 drops out inside the feed-forward, between its two matrices.
    if (variant_.feed_forward_dropout && a_.hidden_dropout > 0.0) b_.keep("feed-forward dropout mask", kMaskBytes * tI);
  }
}

// What the router keeps per token. Softmax and top-k (Qwen3MoeTopKRouter): the fp32 logits, the
// top-k indices (int64), the fp32 weights and their sum. DeepSeek's routers (transformers v5.24.0
// DeepseekV2TopkRouter, DeepseekV3TopkRouter) take the logits of an fp32 copy of the input (kept
// when the router trains; none where the input is fp32 already, autocast's 16-bit copy under mixed
// precision); V2 keeps its softmax and the top-k indices (group-limited: the experts' mask too),
// V3 its sigmoid, the top-k indices its gather reads and, renormalised, the weights and their sum.
// The choice of groups (their top-2 sums, the best groups' indices; V3's mask) feeds only indices,
// a branch of the graph autograd drops before forward ends.
double HfBlock::router_saved() const {
  const double k = dbl(a_.experts_per_token);
  const double E = dbl(a_.experts);
  const double input = full_ ? (mixed_ ? c_ : c_ < kFp32 ? kFp32 : 0.0) * x_.h : 0.0;
  switch (a_.router) {
    case RouterKind::softmax_topk: return kFp32 * E + kFp32 + k * (8.0 + kFp32);
    case RouterKind::deepseek_v2: return input + kFp32 * E + 8.0 * k + (a_.expert_groups > 0 ? E : 0.0);
    case RouterKind::deepseek_v3:
      return input + kFp32 * E + 8.0 * k + (a_.router_renormalise ? kFp32 + kFp32 * k : 0.0);
  }
  return 0.0;
}

// The router and what routing keeps (its bytes moved are not priced yet).
void HfBlock::routing() {
  if (!a_.is_moe()) return;
  const double k = dbl(a_.experts_per_token);
  const double E = dbl(a_.experts);
  b_.open("routing", OpKind::routing).collective = OpCollective::expert_all_to_all;
  if (a_.experts_dense) {
    // Llama4TextMoe: the top-k indices (int64), the sigmoid of the scattered scores (fp32, the
    // others -inf), every expert's copy of the input (hidden_states.repeat) and its score, and
    // the weighted copy the experts' bmm reads.
    b_.keep("router indices, scores and every expert's score", x_.t * (8.0 * k + kFp32 * E + c_ * E));
    b_.keep("every expert's input copy and its weighted copy", 2.0 * c_ * x_.t * E * x_.h / x_.tp);
  } else {
    // Routing, per token: router_saved. Per routed token: its weight, int64 indices (grouped_mm:
    // three sort and scatter indices; the loop: one per expert's token list), the gathered input
    // and the expert output (the loop also keeps that output's weighted copy).
    const double indices = loop_ ? 1.0 : 3.0;
    b_.keep("router logits and routing", x_.t * (router_saved() + k * (kFp32 + indices * 8.0)));
    // The gathered input is kept for the experts' weight gradients (not where they are frozen).
    const double input_copy = keeps_input(Role::gate) ? 1.0 : 0.0;
    b_.keep("expert input and output copies", ((loop_ ? 2.0 : 1.0) + input_copy) * c_ * x_.t * k * x_.h / x_.tp);
    dispatch();
  }
}

// The router's softmax and top-k and the experts' dispatch, as transformers v5.17.0 runs them
// (src/transformers/): the router of models/qwen3_moe/modeling_qwen3_moe.py Qwen3MoeTopKRouter
// (softmax in fp32, top-k, renormalise, cast; gpt-oss and Mixtral differ by an op or two) and
// either integrations/moe.py grouped_mm_experts_forward (sort the routed tokens by expert, gather,
// histogram and offsets, masks, one grouped GEMM per projection, weight, unpermute, sum over k)
// or the experts' own loop (Qwen3MoeExperts.forward: one-hot mask, the experts hit, and per expert
// where/nonzero, gather, its two linears, weight, index_add_). One kernel per PyTorch op, except
// the ops CUDA PyTorch runs as several: a sort of int64 keys is CUB's radix sort over every key
// bit (aten/src/ATen/native/cuda/Sort.cpp: cub radix_sort_pairs; a histogram, a scan, eight
// onesweep passes of 8-bit digits and the indices' iota), an accumulating index_put_ sorts its
// indices first (Indexing.cu index_put_with_sort_kernel: the linear index, an iota, a radix sort of
// the index bits and indexing_backward_kernel), nonzero is CUB's select plus a copy of the count to
// the host, and the loop's `if expert_idx == num_experts` reads a comparison back. The H200 step
// profiles (data/measurements/h200-2026-11-27-families/run4-moe-balanced-profile.json) show them:
// 14 onesweep and 2 indexing_backward kernels per grouped layer (8 for the sort, 3 for each index
// sort), and per expert of the loop a select, two single-tile sorts, an index_add_ and five
// device-to-host copies. The backward as autograd runs it (an indexing's gradient is a zero fill
// and an accumulating index_put_; each expert's gradient of the shared input is one more tensor to
// sum).
void HfBlock::dispatch() {
  constexpr double kSort = 11.0;                  // histogram, scan, 8 onesweep passes, iota
  constexpr double kIndexPutAccumulate = 7.0;     // linear index, iota, sort (3 kernels, 3 passes), scatter
  constexpr double kNonzero = 4.0;                // count, select (2 kernels), copy to the host
  const double k = dbl(a_.experts_per_token);
  const double E = dbl(a_.experts);
  const double T = x_.t;
  const double S = T * k;            // routed (token, expert) pairs
  const double H = S * x_.kh * c_;   // bytes of the routed hidden states
  const double X = T * x_.kh * c_;   // bytes of the layer's input
  const double gate_up = S * (a_.mlp == MlpKind::gated ? 2.0 : 1.0) * dbl(a_.intermediate) / x_.tp * c_;
  b_.open("router softmax and top-k", OpKind::routing);
  b_.forward(T * E * (c_ + kFp32), 1.0);   // softmax, fp32
  b_.forward(T * E * kFp32 + S * (kFp32 + 8.0), 1.0);  // top-k: values and int64 indices
  b_.forward(3.0 * S * kFp32, 2.0);        // renormalise: sum, divide
  b_.forward(S * (kFp32 + c_), 1.0);       // cast to the model dtype
  b_.backward(S * (c_ + kFp32), 1.0);      // the cast's gradient
  b_.backward(5.0 * S * kFp32, 3.0);       // the renormalisation's
  b_.backward(T * E * kFp32 + S * (kFp32 + 8.0), 2.0);  // top-k's: zero fill, scatter
  b_.backward(T * E * (3.0 * kFp32 + c_), 1.0);         // softmax's
  b_.open("expert dispatch", OpKind::routing);
  if (!loop_) {
    b_.forward(S * 8.0 * 3.0, kSort + 1.0);      // sort the expert ids (ids and permutation), perm // k
    b_.forward(2.0 * H + S * 8.0, 1.0);          // gather the routed rows
    b_.forward(S * (2.0 * c_ + 8.0), 1.0);       // gather their weights
    b_.forward(S * 12.0 + E * 8.0, 3.0);         // int ids, histogram, offsets (cumsum)
    b_.forward(S * 25.0, 2.0);                   // sentinel mask, clamp
    b_.forward(2.0 * H + 2.0 * gate_up + 2.0 * H, 3.0);  // masked_fill of input, gate_up and down outputs
    b_.forward(2.0 * H + S * c_, 1.0);           // weight the outputs
    b_.forward(S * 8.0 * 3.0, 2.0);              // inverse permutation: arange, index_put
    b_.forward(2.0 * H + S * 8.0, 1.0);          // unpermute
    b_.forward(H + X, 1.0);                      // sum over k
    b_.backward(H + 2.0 * H + S * 8.0, 1.0 + kIndexPutAccumulate);  // unpermute's gradient: zero fill, index_put
    b_.backward(3.0 * H + 2.0 * H, 3.0);         // the weighting's: two products, a row sum
    b_.backward(2.0 * H + 2.0 * gate_up + 2.0 * H, 3.0);  // the masks'
    b_.backward(2.0 * gate_up, 1.0);             // the gate/up split's (cat)
    b_.backward(S * (c_ + c_ + 8.0), 2.0);       // the weights' gather
    b_.backward(X + H + X + S * 8.0, 1.0 + kIndexPutAccumulate);  // the rows' gather: zero fill, index_put
    b_.backward(3.0 * X, 1.0);                   // the input's gradients summed (router, experts)
  } else {
    const double n = S / hits_;        // tokens per expert hit
    const double h = n * x_.kh * c_;   // bytes of one expert's rows
    b_.forward(X, 1.0);                          // the output's zero fill
    b_.forward(S * (8.0 + E * 8.0) + S * E * 8.0 + E, 3.0 + kNonzero);  // one-hot mask, its sum, > 0, nonzero
    // Per expert hit: the `== num_experts` test read back, where (nonzero), gather rows, gather
    // weights, weight, index_add_.
    b_.forward(hits_ * (T * k * 8.0 + 2.0 * h + n * (c_ + 16.0) + 3.0 * h + 3.0 * h), (6.0 + kNonzero) * hits_);
    // Per expert hit: index_add_'s gradient (a gather), the weighting's (two products, a row sum),
    // the weights' gather's (zero fill, index_put), the gate/up split's (cat), the rows' gather's (a
    // zero fill of the whole input, index_put) and one more gradient of the input to sum.
    // Both gathers' index_put sort a few indices in one tile: linear index, sort, scatter.
    b_.backward(hits_ * (2.0 * h + 5.0 * h + n * (2.0 * c_ + 8.0) + 2.0 * gate_up / S * n + X + 2.0 * h + 3.0 * X),
                (8.0 + 2.0 * 3.0) * hits_);
    if (full_) {
      // A trained expert weight is read as a slice (gate_up_proj[e]): the slice's gradient is a
      // zero-filled gradient of every expert's weight with that slice written, summed into the
      // parameter's gradient, per expert hit and per weight (select_backward, AccumulateGrad).
      const double all = dbl(a_.experts) * dbl(a_.intermediate) / x_.tp * x_.kh * c_;
      const double weights = (a_.mlp == MlpKind::gated ? 2.0 : 1.0) + 1.0;
      b_.backward(hits_ * weights * 4.0 * all, hits_ * weights * 2.0);
    }
  }
}

void HfBlock::run() {
  attention();
  if (stack_ == Stack::decoder && a_.encoder_decoder) cross_attention();
  mlp();
}

// Norm, q/k/v projections, q/k norms and rotary embedding, the attention core, o projection,
// residual.
void HfBlock::attention() {
  if (a_.mla()) {
    latent_attention();
    return;
  }
  const double X = x_.t * x_.kh;
  const double s = x_.stream;
  const int attn_consumers = fused_ ? (saving({Role::q, Role::k, Role::v}) > 0 ? 1 : 0)
                                    : saving({Role::q, Role::k, Role::v});
  norm("input norm", true, true, attn_consumers, false, input_grad_);
  linears({Role::q, Role::k, Role::v}, s);
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
                      (variant_.kv_always_repeated ||
                       ((a_.kv_heads > 1 || tr_.micro_batch > 1) && attn_ == Attention::eager) ||
                       (a_.kv_heads > 1 && attn_ == Attention::sdpa && sliding_window_masked(a_, tr_)));
  qk_norms();
  if (a_.position == PositionKind::rotary) {
    b_.open("rotary q", OpKind::elementwise);
    rotary(x_.t * x_.kq);
    b_.open("rotary k", OpKind::elementwise);
    rotary(x_.t * x_.kkv);
  }
  // Llama 4's NoPE layers scale the queries by a per-position temperature (fp32, kept for q's
  // gradient).
  if (a_.query_temperature && a_.position == PositionKind::none) {
    b_.open("query temperature", OpKind::elementwise);
    b_.keep("query temperature scales", kFp32 * x_.t);
  }
  if (gpu_sdpa_ && sdpa_.fp32_math) {
    // The math fallback keeps fp32 copies of q, k, v (cast from the model's) for its matmuls.
    b_.open("q, k, v fp32 casts (SDPA math)", OpKind::copy_cast);
    const double k_width = repeat ? x_.qd : x_.kd;
    b_.keep("q, k, v (fp32 copies, SDPA math)", kFp32 * x_.t * (x_.qd + 2.0 * k_width) / x_.tp);
  } else {
    b_.open("attention inputs", OpKind::copy_cast);
    attention_inputs(repeat);
  }
  // T5's relative attention bias: the int64 bucket of every (query, key) pair, for its gradient.
  if (first_ && full_ && a_.relative_buckets > 0) {
    b_.open("relative position buckets", OpKind::elementwise);
    b_.keep("relative position buckets", 8.0 * x_.s * x_.s);
  }
  attention_core(false);
  attention_end(X);
}

// After the attention core: what the o projection keeps, the explicit mask, the o projection, the
// output norm and dropout, the residual.
void HfBlock::attention_end(double X) {
  const double th = x_.t * x_.h / x_.rep;
  const double s = x_.stream;
  const bool sandwich = a_.norm_placement == NormPlacement::sandwich;
  const double q = c_ * x_.t * x_.kvo;
  if (attn_ == Attention::eager || (gpu_sdpa_ && !sdpa_.fused())) {
    if (keeps_input(Role::o)) b_.keep("attention output (o input)", q);
  } else {
    b_.keep("attention output", q);  // the kernel's backward needs it
    // The kernel lays its output out as its query; the o projection reads it token-major, which
    // is free for a query in the projection's layout (Llama's rotary, GPT-2's views) and a copy
    // for one concatenated head-major (partial rotary: Phi, GPT-NeoX; every litgpt model).
    // A rotated slice of a fused projection (Phi-3's qkv_proj) is not dense either: the rotary
    // products write it head-major (Falcon's own attention splits its projection first).
    const bool rotary = a_.position == PositionKind::rotary;
    const bool sliced = fused_ && !hf_sdpa_call(a_, tr_).own_attention;
    const bool head_major = (rotary && (a_.rotary_fraction < 1.0 || sliced)) || quant_.head_major_attention_output;
    if (head_major && keeps_input(Role::o)) b_.keep("o input (contiguous copy)", q);
  }
  // The explicit mask, cast to the model dtype inside each block.
  if (sdpa_explicit_mask(a_, tr_)) {
    b_.open("attention mask cast", OpKind::copy_cast);
    b_.keep("attention mask", c_ * x_.b * x_.s * x_.s);
  }
  linears({Role::o}, c_);
  lora_dropout({Role::o}, x_.kvo);
  // Gemma 2 and 3 norm the attention output before the residual add.
  if (sandwich) norm("attention output norm", true, true, 0, false, input_grad_ || attention_trained());
  if (a_.hidden_dropout > 0.0) {
    b_.open("attention dropout", OpKind::elementwise);
    b_.dropout(X, c_);
    b_.keep("attention dropout mask", kMaskBytes * th);
  }
  b_.open("attention residual", OpKind::elementwise);
  b_.add(X, s, c_, s);
}

// An RMSNorm of latent attention's compressed query or key/value latent (q_a_layernorm,
// kv_a_layernorm), `width` wide: like a block's norm, its fp32 input (of `stored_width`: the whole
// projection output where the input, already fp32, is a slice of it), one statistic per row and,
// under full training, the normalised input; its output is the expanding projection's input.
void HfBlock::latent_norm(std::string_view name, double width, double stored_width, bool grad, bool read_by_next) {
  b_.open(name, OpKind::norm);
  norm_kernels(x_.t * width);
  if (grad) {
    b_.keep("latent norm input (fp32)", rms_input_bytes(variant_, tr_) * x_.t * stored_width);
    b_.keep("latent norm statistics", kFp32 * x_.t);
    if (full_) b_.keep("latent norm normalised input", r_ * x_.t * width);
  }
  if (read_by_next) b_.keep("latent norm output (expansion input)", c_ * x_.t * width);
}

// Multi-head latent attention as transformers v5.24.0 runs it (models/deepseek_v3/
// modeling_deepseek_v3.py DeepseekV3Attention.forward; DeepSeek-V2's the same but for its complex
// rotary product): q_a_proj, q_a_layernorm and q_b_proj (or q_proj); kv_a_proj_with_mqa, split into
// the latent and the shared rotary key; kv_a_layernorm and kv_b_proj, split into every head's key
// and value; the rotary dims of q and of the shared key rotated; the query concatenated and the key
// written into a new tensor (expand_kv); attention with query/key heads of d = nope + rope and
// value heads of d_v; o_proj. Eager attention's matmuls copy the transposed key and the strided
// value; SDPA's fused kernels keep q, k and the value's view (the whole kv_b output); its math
// fallback keeps fp32 copies.
void HfBlock::latent_attention() {
  const double X = x_.t * x_.kh;
  const double s = x_.stream;
  const bool compressed = a_.q_lora_rank > 0;
  const Role q_in = compressed ? Role::q_a : Role::q;
  const double Q = dbl(a_.q_lora_rank);
  const double R = dbl(a_.kv_lora_rank);
  const double dr = dbl(a_.qk_rope_dim);
  const double heads = x_.a / x_.tp;
  const double qk = x_.qd / x_.tp;   // every head's query (and key) on this GPU
  const double v = x_.kvo;           // every head's value
  norm("input norm", true, true, saving({q_in, Role::kv_a}), false, input_grad_);
  linears({q_in, Role::kv_a}, s);
  lora_a_outputs({Role::q_a, Role::q, Role::kv_a, Role::kv_b, Role::o});
  lora_dropout({q_in, Role::kv_a}, x_.h);
  const auto grad = [&](Role role) { return input_grad_ || adapts(role); };
  if (compressed) {
    latent_norm("q_a norm", Q, Q, grad(Role::q_a), keeps_input(Role::q));
    linears({Role::q}, c_);
    lora_dropout({Role::q}, Q);
  }
  // kv_a's output is split: an fp32 output is normed as a slice of itself (kept whole).
  latent_norm("kv_a norm", R, c_ >= kFp32 ? R + dr : R, grad(Role::kv_a), keeps_input(Role::kv_b));
  linears({Role::kv_b}, c_);
  lora_dropout({Role::kv_b}, R);
  b_.open("rotary q", OpKind::elementwise);
  rotary(x_.t * heads * dr);
  b_.open("rotary k", OpKind::elementwise);
  rotary(x_.t * dr);
  b_.open("query and key assembly", OpKind::copy_cast);
  b_.copy(x_.t * qk, c_);  // cat(q_pass, q_rot)
  b_.copy(x_.t * qk, c_);  // key_states[..., :nope] and [..., nope:] written
  const double kv_b_out = c_ * x_.t * heads * (dbl(a_.head_dim) - dr + dbl(a_.value_head_dim()));
  if (gpu_sdpa_ && sdpa_.fp32_math) {
    b_.keep("q, k, v (fp32 copies, SDPA math)", kFp32 * x_.t * (2.0 * qk + v));
  } else if (attn_ == Attention::eager || (gpu_sdpa_ && !sdpa_.fused())) {
    // q, and the matmuls' contiguous copies of the transposed key and the strided value.
    b_.keep("q", c_ * x_.t * qk);
    b_.keep("k (contiguous copy)", c_ * x_.t * qk);
    b_.keep("v (contiguous copy)", c_ * x_.t * v);
  } else {
    b_.keep("q, k", 2.0 * c_ * x_.t * qk);
    b_.keep("v (a view of the kv_b output)", kv_b_out);
  }
  attention_core(false);
  attention_end(X);
}

// An encoder-decoder's decoder: its norm, attention over the encoder output, residual (its
// projections are among the block's q, k, v and o linears).
void HfBlock::cross_attention() {
  const double q = c_ * x_.t * x_.qd / x_.tp;
  const double kv = c_ * x_.t * x_.kd / x_.tp;
  norm("cross-attention norm", true, true, saving({Role::q}), false, true);
  attention_core(true);
  b_.keep("cross-attention q, k, v and output", 3.0 * q + kv);
  if (attn_ == Attention::eager) b_.keep("cross-attention scores", core_);
  // The encoder output every decoder block's k and v read: kept once, by the first.
  const int readers = saving({Role::k, Role::v});
  if (first_ && readers > 0)
    b_.keep("encoder output (k, v input)", (mixed_ ? readers * c_ : r_) * x_.t * x_.h / x_.rep);
  b_.open("cross-attention residual", OpKind::elementwise);
  b_.add(x_.t * x_.kh, x_.stream, c_, x_.stream);
}

// Norm, router, gate/up projections, activation, down projection, residual.
void HfBlock::mlp() {
  const double X = x_.t * x_.kh;
  const double th = x_.t * x_.h / x_.rep;
  const double s = x_.stream;
  const bool sandwich = a_.norm_placement == NormPlacement::sandwich;
  // The MLP's norm reads the residual after attention, which needs a gradient once anything before
  // it is trained (or, under a parallel residual, the block's input).
  const bool mlp_norm_grad = input_grad_ || (!a_.parallel_residual && attention_trained());
  const bool separate_mlp_norm = !a_.parallel_residual || a_.norms_per_layer > 1;
  norm("post-attention norm", separate_mlp_norm, a_.norms_per_layer > 1, saving({Role::gate, Role::up}),
       a_.parallel_residual, mlp_norm_grad);
  if (a_.is_moe()) {
    Op& router = b_.open("router", OpKind::gemm);
    for (const Linear& l : linears_)
      if (l.role == Role::router) router.gemm = gemm_of(a_, tr_, l, false);
  }
  linears({Role::gate, Role::up}, s);
  lora_dropout({Role::gate, Role::up}, x_.h);
  lora_a_outputs({Role::gate, Role::up, Role::down});
  if (a_.is_moe() && a_.experts_dense) {
    // Llama 4: the input repeated for every expert, weighted by its score, the experts' outputs
    // summed.
    b_.open("every expert's input", OpKind::routing);
    const double n = x_.t * dbl(a_.experts) * x_.kh;
    b_.copy(n, c_);
    b_.product(n, c_, c_, c_);
    b_.row_mean(n, c_);
  }
  activation();
  linears({Role::down}, c_);
  lora_dropout({Role::down}, dbl(a_.intermediate) / x_.tp);
  if (sandwich)  // ... and the MLP output
    norm("mlp output norm", true, true, 0, false, mlp_norm_grad || adapted({Role::gate, Role::up, Role::down}) > 0);
  if (a_.hidden_dropout > 0.0) {
    b_.open("mlp dropout", OpKind::elementwise);
    b_.dropout(X, c_);
    b_.keep("mlp dropout mask", kMaskBytes * th);
  }
  routing();
  b_.open("mlp residual", OpKind::elementwise);
  b_.add(X, s, c_, s);
  b_.fan_in(X, s, 2);  // the block input feeds its norm and the residual
}

// ---- Megatron-LM ------------------------------------------------------------------------------

// Megatron's block: its GEMMs and attention core, its fused kernels by the elements they stream
// (apex fused LayerNorm, bias-dropout-add, fused bias-activation, fused rotary, MoE permutation),
// and what Korthikanti et al. 2022 (arXiv:2205.05198), Table 2, count as saved, generalised:
// replicated 10sbh (two norm inputs, QKV and MLP inputs, two dropout masks), TP-sharded Q, K, V,
// attention output and the MLP intermediates, and the attention core 5as^2b (softmax, its dropout
// mask and output).
void megatron_block(const Architecture& a, const Training& tr, Stack stack, BlockOps& out,
                    const std::vector<Linear>* given) {
  Builder b(out);
  const Shape x = shape_of(a, tr);
  const double T = x.t;
  const double c = x.c;
  const bool cross = a.encoder_decoder && stack == Stack::decoder;
  const std::vector<Linear> own = given != nullptr ? std::vector<Linear>{} : block_linears(a, stack);
  const std::vector<Linear>& linears = given != nullptr ? *given : own;
  const AdaptedRoles adapted = x.full ? AdaptedRoles{} : adapted_roles(a, tr.lora);
  bool mlp_reduced = false;
  const auto gemms = [&](bool attention) {
    for (const Linear& l : linears) {
      const bool attn = l.role == Role::q || l.role == Role::k || l.role == Role::v || l.role == Role::o ||
                        l.role == Role::q_a || l.role == Role::kv_a || l.role == Role::kv_b;
      if (attn != attention) continue;
      const bool adapts = !x.full && l.role != Role::router && adapted[static_cast<std::size_t>(l.role)];
      Op& op = b.open(to_string(l.role), OpKind::gemm);
      op.gemm = gemm_of(a, tr, l, adapts);
      op.collective = sublayer_collective(l.role, mlp_reduced);
    }
  };
  const double sbh = T * x.h;
  const bool dropout = true;  // Megatron's GPT keeps attention and hidden dropout on
  const double norms = dbl(a.norms_per_layer) + (cross ? 1.0 : 0.0);
  Op& norm = b.open("fused norms", OpKind::fused);
  norm.pass = FusedPass::norm;
  norm.elements = norms * T * x.h / x.rep;
  norm.element_bytes = c;
  b.keep("norm, projection inputs and dropout masks", (4.0 + 2.0 + 2.0 + (dropout ? 2.0 : 0.0)) * sbh / x.rep);
  gemms(true);
  if (a.mla()) {
    // Megatron-Core's multi-latent attention: the compressed query and key/value latent are
    // normed (q_layernorm, kv_layernorm) and expanded; each norm keeps its input and the expansion
    // its own, replicated across tensor-parallel ranks.
    Op& latent = b.open("fused latent norms", OpKind::fused);
    latent.pass = FusedPass::norm;
    latent.elements = T * dbl(a.q_lora_rank + a.kv_lora_rank);
    latent.element_bytes = c;
    b.keep("latent norm and expansion inputs", 2.0 * 2.0 * T * dbl(a.q_lora_rank + a.kv_lora_rank) / x.rep);
  }
  if (a.position == PositionKind::rotary) {
    Op& rope = b.open("fused rotary", OpKind::fused);
    rope.pass = FusedPass::rotary;
    // Latent attention rotates its rotary dims only: every query head's and the shared key's.
    rope.elements = a.mla() ? T * dbl(a.qk_rope_dim) * (dbl(a.heads) / x.tp + 1.0) : T * dbl(a.q_dim() + a.kv_dim()) / x.tp;
    rope.element_bytes = c;
  }
  Op& core = b.open("attention", OpKind::attention_core, true);
  core.attention = attention_of(a, tr, !(a.encoder_decoder && stack == Stack::encoder), false);
  b.keep("q, k, v", 2.0 * T * (x.qd + x.kd + x.vd) / x.tp);
  b.keep("attention output", 2.0 * T * x.kvo);
  double core_bytes = 0.0;
  switch (tr.attention) {
    case Attention::eager: core_bytes = 5.0 * x.a * x.s * x.s * x.b / x.tp; break;
    case Attention::flash:
    case Attention::sdpa: core_bytes = kFp32 * x.a * x.t / x.tp; break;  // log-sum-exp per row
  }
  const std::size_t core_op = b.last();
  if (cross) b.open("cross-attention", OpKind::attention_core, true).attention = attention_of(a, tr, false, true);
  Op& residual = b.open("fused bias-dropout-add", OpKind::fused);
  residual.pass = FusedPass::residual;
  residual.elements = (2.0 + (cross ? 1.0 : 0.0)) * T * x.h / x.rep;
  residual.element_bytes = c;
  residual.mask_bytes = kMaskBytes;
  gemms(false);
  // Routed experts take a share of the tokens a capacity leaves them (expert_token_share: 1
  // dropless): their activations, intermediates and permuted tokens scale with it.
  const double routed = expert_token_share(a, tr);
  const double routed_intermediate = a.is_moe() ? dbl(a.expert_runs() * a.intermediate) : 0.0;
  Op& act = b.open("fused bias-activation", OpKind::fused);
  act.pass = FusedPass::activation;
  act.elements = T * dbl(a.experts_per_token) * dbl(a.intermediate) * routed / x.tp;
  act.element_bytes = c;
  const double mlp_tensors = a.mlp == MlpKind::gated ? 3.0 : 2.0;
  b.keep("mlp intermediates", mlp_tensors * 2.0 * T * (x.I + routed_intermediate * (routed - 1.0)) / x.tp);
  b.keep_at(core_op, "attention core", core_bytes, true);
  if (a.is_moe()) {  // permute, unpermute
    Op& perm = b.open("token permutation", OpKind::fused);
    perm.collective = OpCollective::expert_all_to_all;
    perm.pass = FusedPass::permute;
    perm.elements = 2.0 * T * dbl(a.experts_per_token) * x.h * routed;
    perm.element_bytes = c;
    // The routed experts' first grouped GEMM keeps its input, the k permuted copies of each token a
    // rank receives (gathered over the tensor-parallel ranks, whose experts share them); the
    // routing probabilities scale the activation, so unpermuting keeps nothing more (Megatron-LM
    // @ d98e8a6, moe/experts.py: permuted_probs into the scaled activation; token_dispatcher.py
    // unpermute without probs).
    b.keep("permuted tokens (routed experts' input)", 2.0 * T * dbl(a.experts_per_token) * x.h * routed);
  }
}

}  // namespace

// ---- Folds ------------------------------------------------------------------------------------

EagerWork BlockOps::eager_work() const {
  EagerWork w;
  for (const Op& op : ops) {
    w.forward += op.forward;
    w.backward += op.backward;
    w.forward_launches += op.forward_launches;
    w.backward_launches += op.backward_launches;
  }
  w.forward_launches += w.forward.kernels;
  w.backward_launches += w.backward.kernels;
  return w;
}

Bytes BlockOps::saved_bytes() const {
  double s = 0.0;
  for (const SavedTensor& t : saved) s += t.bytes.value();
  return Bytes(s);
}

Bytes BlockOps::saved_core_bytes() const {
  double s = 0.0;
  for (const SavedTensor& t : saved)
    if (t.core) s += t.bytes.value();
  return Bytes(s);
}

LayerCollectives BlockOps::collectives() const {
  LayerCollectives n;
  for (const Op& op : ops) {
    if (op.collective == OpCollective::tensor_parallel) n.tensor_parallel += 1.0;
    if (op.collective == OpCollective::expert_all_to_all) n.expert_all_to_all += 2.0;  // dispatch, combine
  }
  return n;
}

LayerCollectives StackOps::collectives() const {
  return average<LayerCollectives>([](const BlockOps& b) { return b.collectives(); });
}

double BlockOps::gemm_count() const {
  double n = 0.0;
  for (const Op& op : ops) n += op.kind == OpKind::gemm ? 1.0 : 0.0;
  return n;
}

EagerWork StackOps::eager_work() const {
  return average<EagerWork>([](const BlockOps& b) { return b.eager_work(); });
}

// ---- Builders ---------------------------------------------------------------------------------

namespace {
void build_block_ops(const Architecture& a, const Training& tr, Stack stack, bool first, BlockOps& out,
                     const std::vector<Linear>* linears = nullptr) {
  out.stack = stack;
  out.framework = tr.framework;
  out.run = attention_run(a, tr, tr.cuda_sm);
  out.ops.clear();
  out.saved.clear();
  out.ops.reserve(48);
  out.saved.reserve(32);
  switch (tr.framework) {
    case Framework::megatron: megatron_block(a, tr, stack, out, linears); break;
    case Framework::pytorch:
    case Framework::deepspeed: HfBlock(a, tr, stack, first, out, linears).run(); break;
  }
}

// The stack's kinds of layer (an MoE model's expert and dense layers, each with and without rotary
// positions where Llama 4 drops them on some layers); the most common one is the main block.
void build_stack_ops(const Architecture& a, const Training& tr, Stack stack, StackOps& out,
                     const std::vector<Linear>* linears = nullptr) {
  const bool decoder_only = stack == Stack::decoder && !a.encoder_decoder;
  const bool nope = a.nope_interval > 0 && stack == Stack::decoder;
  const double nope_share = nope ? dbl(a.nope_layers()) / dbl(a.layers) : 0.0;
  if (!decoder_only || a.dense_layers() == 0) {
    build_block_ops(a, tr, stack, false, out.block, linears);
    out.block_share = 1.0 - nope_share;
    out.variants.resize(nope ? 1 : 0);
    if (nope) {
      build_block_ops(nope_variant(a), tr, stack, false, out.variants[0].ops);
      out.variants[0].share = nope_share;
      out.variants[0].kind = "NoPE layers";
    }
    return;
  }
  // Each layer's kind: expert or dense, with or without rotary positions, counted layer by layer.
  const Architecture dense_kind = dense_variant(a);
  std::array<std::array<std::int64_t, 2>, 2> count{};  // [dense][nope]
  for (std::int64_t i = 0; i < a.layers; ++i)
    ++count[a.dense_layer(i) ? 1 : 0][nope && a.nope_layer(i) ? 1 : 0];
  struct Part {
    const Architecture* arch;
    bool nope;
    double share;
  };
  std::vector<Part> parts;
  for (int d = 0; d < 2; ++d)
    for (int n = 0; n < 2; ++n)
      if (count[d][n] > 0) parts.push_back({d == 1 ? &dense_kind : &a, n == 1, dbl(count[d][n]) / dbl(a.layers)});
  std::stable_sort(parts.begin(), parts.end(), [](const Part& x, const Part& y) { return x.share > y.share; });
  out.variants.resize(parts.size() - 1);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const Part& p = parts[i];
    BlockOps& ops = i == 0 ? out.block : out.variants[i - 1].ops;
    const bool own_linears = p.arch->is_moe() == a.is_moe();
    build_block_ops(p.nope ? nope_variant(*p.arch) : *p.arch, tr, stack, false, ops, own_linears ? linears : nullptr);
    (i == 0 ? out.block_share : out.variants[i - 1].share) = p.share;
    if (i > 0) {
      const bool dense = !p.arch->is_moe();
      out.variants[i - 1].kind = dense ? (p.nope ? "dense NoPE layers" : "dense layers")
                                       : (p.nope ? "NoPE layers" : "expert layers");
    }
  }
}
}  // namespace

BlockOps block_ops(const Architecture& a, const Training& tr, Stack stack, bool first) {
  BlockOps out;
  build_block_ops(a, tr, stack, first, out);
  return out;
}

BlockOps edge_ops(const Architecture& a, const Training& tr, Edge edge) {
  BlockOps out;
  build_edge_ops(a, tr, edge, out);
  return out;
}

void build_edge_ops(const Architecture& a, const Training& tr, Edge edge, BlockOps& out) {
  out.framework = tr.framework;
  out.ops.clear();
  out.saved.clear();
  out.ops.reserve(4);
  Builder b(out);
  const Shape x = shape_of(a, tr);
  switch (edge) {
    case Edge::embedding:
      b.open("embedding lookup", OpKind::copy_cast);
      b.launches(1.0, x.full ? 3.0 : 0.0);  // lookup; embedding_dense_backward
      break;
    case Edge::head:
      if (a.final_norm) {
        b.open("final norm", OpKind::norm);
        norm_kernels(b, a, x, x.t * x.kh);
      }
      b.open("lm_head", OpKind::gemm).gemm = {Role::lm_head, tr.tokens_per_micro_batch(),
                                              std::max<std::int64_t>(1, a.vocab / tr.tp), a.hidden, 1, x.full};
      b.launches(1.0, x.full ? 2.0 : 1.0);
      // logits.float(), log_softmax, nll_loss and the labels' shift, each way.
      b.open("loss", OpKind::reduction);
      b.launches(4.0, 4.0);
      if (a.logit_softcap > 0.0) {  // Gemma 2: / cap, tanh, * cap
        b.open("logit soft-cap", OpKind::elementwise);
        b.launches(3.0, 3.0);
      }
      break;
  }
}

Architecture nope_variant(const Architecture& a) {
  Architecture v = a;
  v.position = PositionKind::none;
  v.qk_norm = QkNorm::none;
  v.sliding_window = 0;
  v.sliding_layers = 0;
  v.nope_interval = 0;
  return v;
}

Architecture layer_architecture(const Architecture& a, Stack stack, std::int64_t layer) {
  if (stack != Stack::decoder) return a;
  const Architecture kind = !a.encoder_decoder && a.dense_layer(layer) ? dense_variant(a) : a;
  return a.nope_layer(layer) ? nope_variant(kind) : kind;
}

StackOps stack_ops(const Architecture& a, const Training& tr, Stack stack) {
  StackOps s;
  build_stack_ops(a, tr, stack, s);
  return s;
}

void build_model_ops(const Architecture& a, const Training& tr, ModelOps& out, StackLinears linears) {
  if (a.encoder_decoder) build_stack_ops(a, tr, Stack::encoder, out.encoder, linears.encoder);
  build_stack_ops(a, tr, Stack::decoder, out.decoder, linears.decoder);
  build_edge_ops(a, tr, Edge::embedding, out.embedding);
  build_edge_ops(a, tr, Edge::head, out.head);
}

ModelOps model_ops(const Architecture& a, const Training& tr) {
  ModelOps m;
  build_model_ops(a, tr, m);
  return m;
}

LinearShard linear_shard(const Architecture& a, const Linear& l, int tp) {
  switch (l.role) {
    case Role::q:
    case Role::k:
    case Role::v:
    case Role::gate:
    case Role::up:
    case Role::lm_head: {  // column-parallel
      const bool kv = l.role == Role::k || l.role == Role::v;
      const std::int64_t n = kv ? std::max(l.out / tp, a.head_dim) : l.out / tp;
      return {l.in, std::max<std::int64_t>(n, 1)};
    }
    case Role::o:
    case Role::down:  // row-parallel
      return {std::max<std::int64_t>(l.in / tp, 1), l.out};
    case Role::kv_b:  // column-parallel over the heads
      return {l.in, std::max<std::int64_t>(l.out / tp, 1)};
    case Role::router:  // replicated (and latent attention's compressions)
    case Role::q_a:
    case Role::kv_a:
      return {l.in, l.out};
  }
  return {l.in, l.out};
}

double rms_input_bytes(const OpListVariant& family, const Training& tr) {
  const double r = param_bytes(tr.precision);
  return kFp32 + (family.norm_keeps_model_dtype_input && r < kFp32 ? r : 0.0);
}

bool sdpa_explicit_mask(const Architecture& a, const Training& tr) {
  return attention_executed(a, tr, tr.cuda_sm) == Attention::sdpa &&
         (hf_sdpa_call(a, tr).always_mask || sliding_window_masked(a, tr));
}

}  // namespace trainplan::model
