#include "trainplan/planner/kernel_work.hpp"

#include <algorithm>

#include "trainplan/planner/compute.hpp"

namespace trainplan::planner {
namespace {

using model::Role;

constexpr double kFp32 = 4.0;
constexpr double kMaskBytes = 1.0;

// Each op's forward kernel and the kernels of its backward, by what the op's gradient formula
// reads and writes (torch tools/autograd/derivatives.yaml). n is the element count; the other
// arguments are bytes per element of the tensors involved.
class Tally {
 public:
  [[nodiscard]] const BlockKernelWork& work() const { return w_; }
  void forward(double bytes, double kernels = 1.0) { w_.forward += {bytes, kernels}; }
  void backward(double bytes, double kernels = 1.0) { w_.backward += {bytes, kernels}; }
  void launches(double f, double b) {
    w_.forward_launches += f;
    w_.backward_launches += b;
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
  BlockKernelWork w_;
};

// Shapes and dtypes of one micro-batch of one block on one GPU.
struct Ctx {
  double T;       // tokens
  double h;       // hidden (divided by the TP degree under sequence parallelism)
  double q;       // query width per GPU
  double kv;      // key/value width per GPU
  double inter;   // MLP intermediate per GPU a token passes through (MoE: its experts, shared one)
  double scores;  // attention score elements (b * heads/t * s * s)
  double c;       // compute dtype bytes
  double s;       // residual stream dtype bytes (fp32 under autocast of an fp32 model)
  bool autocast;  // linears cast their inputs to c
  bool full;      // weights trained
  double tp;
};

Ctx context(const model::Architecture& a, const model::Training& tr) {
  const double tp = tr.tp;
  const double T = static_cast<double>(tr.tokens_per_micro_batch());
  const double c = compute_bytes(tr.precision);
  const bool full = tr.method == Method::full;
  // Under mixed precision an fp32 model (full training, or a frozen base kept fp32) carries an fp32
  // residual stream; Hugging Face + PEFT load the frozen base in 16 bits.
  const bool fp32_model = is_mixed(tr.precision) && (full || tr.frozen_base_fp32);
  const double s = fp32_model ? kFp32 : param_bytes(tr.precision) < kFp32 ? c : kFp32;
  const double seq = static_cast<double>(tr.seq);
  return {T,
          static_cast<double>(a.hidden) / (tr.sequence_parallel ? tp : 1.0),
          static_cast<double>(a.q_dim()) / tp,
          static_cast<double>(std::max(a.kv_dim() / tr.tp, a.head_dim)),
          static_cast<double>(a.active_intermediate()) / tp,
          static_cast<double>(tr.micro_batch) * static_cast<double>(a.heads) / tp * seq * seq,
          c,
          s,
          is_mixed(tr.precision),
          full,
          tp};
}

// LlamaRMSNorm: to(fp32), pow(2), mean, * rsqrt(var + eps), to(input dtype), * weight.
// LayerNorm: one native_layer_norm kernel each way (and the weight/bias reduction).
// X elements normed (the hidden states by default; q or k for their norms).
void norm(Tally& t, const model::Architecture& a, const Ctx& x, bool grad, double X) {
  switch (a.norm) {
    case model::NormKind::rmsnorm:
      t.cast(X, x.s, kFp32, grad);
      t.unary(X, kFp32, kFp32, grad);
      t.row_mean(X, kFp32);
      t.scale(X, kFp32, kFp32, grad, grad);
      t.fan_in(X, kFp32, 2);
      t.cast(X, kFp32, x.s, grad);
      t.scale(X, x.s, x.s, grad, x.full);
      break;
    case model::NormKind::layernorm:
    case model::NormKind::layernorm_no_bias:
      t.forward(X * 2.0 * x.s);
      if (grad) t.backward(X * 3.0 * x.s + (x.full ? X * 2.0 * x.s : 0.0), x.full ? 2.0 : 1.0);
      break;
  }
}
void norm(Tally& t, const model::Architecture& a, const Ctx& x, bool grad) { norm(t, a, x, grad, x.T * x.h); }

// Linears reading one input of `width`: autocast's cast per linear, gradients summed, GEMM
// launches, bias gradients, and each adapter's dropout, A, B, scaling and add.
void linears(Tally& t, const BlockShape& shape, const model::Training& tr, const Ctx& x,
             std::initializer_list<Role> roles, double in_bytes, bool grad) {
  const bool cast_weights = x.autocast && (x.full || tr.frozen_base_fp32);
  int consumers = 0;
  double width = 0.0;
  for (std::size_t i = 0; i < shape.linears.size(); ++i) {
    const model::Linear& l = shape.linears[i];
    if (std::find(roles.begin(), roles.end(), l.role) == roles.end()) continue;
    const bool row = l.role == Role::o || l.role == Role::down;
    const double in = static_cast<double>(l.in) / (row ? x.tp : 1.0);
    const double out = static_cast<double>(l.out) / (row ? 1.0 : x.tp);
    const double copies = static_cast<double>(l.copies);
    width = in;
    ++consumers;
    if (x.autocast) t.cast(x.T * in, in_bytes, x.c, grad);
    const double dequant = tr.method == Method::qlora ? 1.0 : 0.0;
    const double weight_cast = cast_weights ? 1.0 : 0.0;
    t.launches(copies * (1.0 + dequant + weight_cast),
               copies * ((grad ? 1.0 : 0.0) + (x.full ? 1.0 + weight_cast : 0.0) + dequant));
    if (l.bias && x.full) t.backward(x.T * out * x.c);
    if (!shape.adapted[i]) continue;
    ++consumers;
    if (tr.lora.dropout > 0.0) t.dropout(x.T * in, x.c);
    t.launches(2.0, 4.0);
    t.scale(x.T * out, x.c, x.c, true, false);
    t.add(x.T * out, x.c, x.c, x.c);
  }
  t.fan_in(x.T * width, in_bytes, consumers);
}

// Rotary embeddings on q or k of n elements (apply_rotary_pos_emb: x cos + rotate_half(x) sin,
// rotate_half = cat(-x2, x1)); partial rotary slices and concatenates the pass-through part. cos
// and sin take the dtype of the hidden states, so an fp32 stream makes q and k fp32 until SDPA's
// autocast casts them back.
void rotary(Tally& t, const model::Architecture& a, const Ctx& x, double n, bool grad) {
  const double nr = n * a.rotary_fraction;
  const double rot = x.s;
  if (a.rotary_fraction < 1.0) t.copy(n, rot);
  t.scale(nr, x.c, rot, grad, false);
  t.forward(nr * x.c);  // neg of one half
  if (grad) t.backward(nr * x.c);
  t.copy(nr, x.c);  // cat
  t.scale(nr, x.c, rot, grad, false);
  t.add(nr, rot, rot, rot);
  t.fan_in(nr, x.c, 2);
  if (x.autocast) t.cast(n, rot, x.c, grad);
}

// The attention core outside the fused kernel: the wrapper's output transpose, or Hugging Face's
// eager path (scores scaled, masked, softmax in fp32, cast back, dropout; repeat_kv of grouped
// K/V).
void attention_core(Tally& t, const model::Architecture& a, const model::Training& tr,
                    const Ctx& x, bool fused_kernel) {
  const double S = x.scores;
  if (fused_kernel) {
    t.launches(1.0, 3.0);  // forward; backward: dO.O, the kernel, dQ conversion
  } else {
    t.launches(2.0, 4.0);  // QK^T, PV; dP, dV, dQ, dK
    // repeat_kv copies grouped K/V (a single head only beside a micro-batch of several: see
    // model/src/activations.cpp HfBlock::attention).
    if (a.kv_heads != a.heads && (a.kv_heads > 1 || tr.micro_batch > 1)) {
      t.copy(x.q, x.c);
      t.copy(x.q, x.c);
    }
    t.scale(S, x.c, x.c, true, false);
    if (a.attention_softcap > 0.0) {  // / cap, tanh, * cap (Gemma 2)
      t.scale(S, x.c, x.c, true, false);
      t.unary(S, x.c, x.c, true);
      t.scale(S, x.c, x.c, true, false);
    }
    t.forward(S * 2.0 * x.c);  // + causal mask
    if (a.attention_sinks) {  // cat with the sinks, max, subtract it (gpt-oss)
      t.copy(S, x.c);
      t.row_mean(S, x.c);
      t.add(S, x.c, x.c, x.c);
    }
    t.unary(S, x.c, kFp32, true);
    t.cast(S, kFp32, x.c, true);
    if (a.attention_dropout > 0.0) t.dropout(S, x.c);
  }
  t.copy(x.T * x.q, x.c);  // attn_output.transpose(1, 2).contiguous()
  // SDPA takes contiguous q, k, v: the views of a fused projection are copied (GPT-2 q and v;
  // rotary models' q and k are already fresh tensors, their v a view).
  if (fused_kernel && !a.fused_qkv_name.empty()) {
    if (a.position != model::PositionKind::rotary) t.copy(x.T * x.q, x.c);
    t.copy(x.T * x.kv, x.c);
  }
  (void)tr;
}

// act(gate) * up, or act(fc1): SiLU, GELU and GELU-tanh are one kernel; Hugging Face's
// NewGELUActivation (GPT-2, Phi) composes pow, three scalings, tanh, an add and a product.
void activation(Tally& t, const model::Architecture& a, const Ctx& x) {
  const double n = x.T * x.inter;
  if (a.activation == model::Activation::gelu_new) {
    t.unary(n, x.c, x.c, true);                // pow(x, 3)
    t.scale(n, x.c, x.c, true, false);         // * 0.044715
    t.add(n, x.c, x.c, x.c);                   // x + .
    t.scale(n, x.c, x.c, true, false);         // * sqrt(2 / pi)
    t.unary(n, x.c, x.c, true);                // tanh
    t.scale(n, x.c, x.c, true, false);         // 1 + .
    t.scale(n, x.c, x.c, true, false);         // 0.5 * x
    t.product(n, x.c, x.c, x.c);               // .  * .
    t.fan_in(n, x.c, 3);
  } else if (a.activation == model::Activation::swiglu_clamped) {
    // gpt-oss: clamp gate and up, gate * sigmoid(1.702 gate), up + 1, and the product below.
    t.unary(n, x.c, x.c, true);         // gate.clamp
    t.unary(n, x.c, x.c, true);         // up.clamp
    t.scale(n, x.c, x.c, true, false);  // * 1.702
    t.unary(n, x.c, x.c, true);         // sigmoid
    t.product(n, x.c, x.c, x.c);        // gate * sigmoid
    t.scale(n, x.c, x.c, true, false);  // up + 1
    t.fan_in(n, x.c, 2);
  } else {
    t.unary(n, x.c, x.c, true);
  }
  if (a.mlp == model::MlpKind::gated) t.product(n, x.c, x.c, x.c);
}

}  // namespace

BlockKernelWork hf_block_kernel_work(const model::Architecture& a, const BlockShape& shape,
                                     const model::Training& tr, const model::AttentionRun& run) {
  Tally t;
  const Ctx x = context(a, tr);
  const double X = x.T * x.h;
  const bool separate_mlp_norm = !a.parallel_residual || a.norms_per_layer > 1;
  const bool fused_kernel = !run.model_code_core();

  norm(t, a, x, true);
  const double norm_out = x.s;
  linears(t, shape, tr, x, {Role::q, Role::k, Role::v}, norm_out, true);
  // The rotary embedding and the q/k norms; Llama 4's NoPE layers have neither, so they count
  // for the model's share of rotary layers.
  Tally positional;
  if (a.qk_norm != model::QkNorm::none) {  // RMSNorm (Llama 4: L2) of q and of k
    norm(positional, a, x, true, x.T * x.q);
    norm(positional, a, x, true, x.T * x.kv);
  }
  if (a.position == model::PositionKind::rotary) {
    rotary(positional, a, x, x.T * x.q, true);
    rotary(positional, a, x, x.T * x.kv, true);
  }
  attention_core(t, a, tr, x, fused_kernel);
  linears(t, shape, tr, x, {Role::o}, x.c, true);
  const bool sandwich = a.norm_placement == model::NormPlacement::sandwich;
  if (sandwich) norm(t, a, x, true);  // Gemma 2/3: the attention output normed
  if (a.hidden_dropout > 0.0) t.dropout(X, x.c);
  t.add(X, x.s, x.c, x.s);  // residual
  if (separate_mlp_norm) norm(t, a, x, true);
  linears(t, shape, tr, x, {Role::gate, Role::up}, norm_out, true);
  if (a.is_moe() && a.experts_dense) {
    // Llama 4: the input repeated for every expert, weighted by its score, the experts' outputs
    // summed.
    const double n = x.T * static_cast<double>(a.experts) * x.h;
    t.copy(n, x.c);
    t.product(n, x.c, x.c, x.c);
    t.row_mean(n, x.c);
  }
  activation(t, a, x);
  linears(t, shape, tr, x, {Role::down}, x.c, true);
  if (sandwich) norm(t, a, x, true);  // ... and the MLP output
  if (a.hidden_dropout > 0.0) t.dropout(X, x.c);
  t.add(X, x.s, x.c, x.s);  // residual
  t.fan_in(X, x.s, 2);      // the block input feeds its norm and the residual
  if (shape.cross_attention) {
    norm(t, a, x, true);
    attention_core(t, a, tr, x, fused_kernel);
    t.add(X, x.s, x.c, x.s);
  }
  BlockKernelWork w = t.work();
  const double rope_share =
      a.nope_interval > 0 ? 1.0 - static_cast<double>(a.nope_layers()) / static_cast<double>(a.layers) : 1.0;
  w.forward += positional.work().forward * rope_share;
  w.backward += positional.work().backward * rope_share;
  w.forward_launches += w.forward.kernels;
  w.backward_launches += w.backward.kernels;
  return w;
}

BlockKernelWork hf_edge_kernel_work(const model::Architecture& a, const model::Training& tr,
                                    bool first, bool last) {
  Tally t;
  const Ctx x = context(a, tr);
  const bool full = tr.method == Method::full;
  if (first) t.launches(1.0, full ? 3.0 : 0.0);  // lookup; embedding_dense_backward
  if (last) {
    if (a.final_norm) norm(t, a, x, true);
    t.launches(1.0 + 4.0, (full ? 2.0 : 1.0) + 4.0);  // head GEMM; loss kernels each way
    if (a.logit_softcap > 0.0) t.launches(3.0, 3.0);  // Gemma 2: / cap, tanh, * cap
  }
  BlockKernelWork w = t.work();
  w.forward_launches += w.forward.kernels;
  w.backward_launches += w.backward.kernels;
  w.forward = {};   // the head's bytes are priced by edge_compute
  w.backward = {};
  return w;
}

KernelWork autocast_weight_cast(double params, const model::Training& tr, bool backward) {
  if (!is_mixed(tr.precision)) return {};
  const bool full = tr.method == Method::full;
  if (!full && !tr.frozen_base_fp32) return {};
  if (backward && !full) return {};
  return {params * (kFp32 + compute_bytes(tr.precision)), 0.0};
}

}  // namespace trainplan::planner
