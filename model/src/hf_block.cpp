#include "hf_block.hpp"

namespace trainplan::model::block_detail {

OpCollective sublayer_collective(Role role, bool& mlp_reduced) {
  const bool pair = role == Role::o || (role == Role::down && !mlp_reduced);
  mlp_reduced = mlp_reduced || role == Role::down;
  return pair ? OpCollective::tensor_parallel : OpCollective::none;
}

bool experts_loop(const Architecture& a, const Training& tr) {
  return a.is_moe() && !a.experts_dense && (a.experts_loop || tr.transformers < 500);
}

double experts_hit(const Architecture& a, const Training& tr) {
  const double E = dbl(a.experts);
  const double miss = std::pow(1.0 - dbl(a.experts_per_token) / E, dbl(tr.tokens_per_micro_batch()));
  return E * (1.0 - miss);
}



void HfBlock::norm_kernels(double X) { block_detail::norm_kernels(b_, a_, x_, X); }

// A norm of the hidden states: its kernels, and what its backward needs. Its output is saved by

// the linears that consume it, under autocast as one 16-bit cast copy per consuming linear. A second

// norm reading the same input as the first (parallel residual) saves no new input; a norm whose

// input needs no gradient saves nothing of its own.

void HfBlock::norm(std::string_view name, bool kernels, bool saves, int consumers_saving, bool shares_input,
                   bool norm_input_grad) {
  if (!kernels && !saves) return;
  b_.open(name, OpKind::norm);
  const bool fused = variant_.fused_norm;  // Liger's kernel (rmsnorm only)
  if (kernels && fused) fused_rms_norm_kernels(b_, x_, x_.t * x_.kh, x_.stream);
  if (kernels && !fused) norm_kernels(x_.t * x_.kh);
  if (!saves) return;
  const double th = x_.t * x_.h / x_.rep;
  if (norm_input_grad) switch (a_.norm) {
      case NormKind::rmsnorm:
        // Liger's kernel, or an RMSNorm in the input's dtype: its input as it came, and rstd; the
        // latter's weight multiplies the normalised input, in that dtype, kept where it trains.
        if (fused || variant_.rms_norm_in_input_dtype) {
          if (!shares_input) b_.keep("norm input", x_.stream * th);
          b_.keep("norm statistics", kFp32 * x_.t / x_.rep);
          if (!fused && full_) b_.keep("norm normalised input", x_.stream * th);
          break;
        }
        if (!shares_input) b_.keep("norm input (fp32 copy)", rms_input_bytes(variant_, tr_) * th);
        b_.keep("norm statistics", kFp32 * x_.t / x_.rep);
        // Gemma scales by (1 + weight) in fp32, so its normalised input stays fp32.
        if (full_) b_.keep("norm normalised input", (variant_.fp32_normalised_norm ? kFp32 : r_) * th);
        break;
      case NormKind::layernorm:
      case NormKind::layernorm_no_bias:
        // Autocast runs F.layer_norm on an fp32 copy of its input and saves that; a library's
        // low-precision LayerNorm casts the input to the autocast dtype instead (a no-op on a
        // 16-bit stream) and runs there, saving the 16-bit input.
        if (!shares_input) b_.keep("norm input", (mixed_ ? (low_precision_ln() ? c_ : kFp32) : r_) * th);
        b_.keep("norm statistics", 2.0 * (mixed_ ? kFp32 : r_) * x_.t / x_.rep);  // mean, rstd in its dtype
        break;
    }
  // Under an FP8 recipe that saves its inputs in FP8, each linear keeps its own FP8 copy.
  const bool fp8_inputs = x_.lin != c_;
  // Compiled, autocast's casts of the one output are one tensor (OpListVariant::compiled); so is a
  // low-precision LayerNorm's 16-bit output, which autocast does not cast again.
  const double copies = fp8_inputs || !(variant_.compiled || low_precision_ln()) ? consumers_saving : 1.0;
  if (consumers_saving > 0)
    b_.keep_input("norm output (linear input)", (mixed_ || fp8_inputs ? copies * x_.lin : r_) * th, quant_.keeps_input);
}

// The linears of these roles reading one input (in_bytes per element): per linear its GEMM,

// autocast's cast of the input, its launches and bias gradient, and its adapter's dropout, scaling

// and add; the input's gradients summed.

void HfBlock::linears(std::initializer_list<Role> roles, double in_bytes) {
  const bool cast_weights = x_.mixed && (full_ || tr_.frozen_base_fp32) && !tr_.computes_in_gathered_16bit();
  const double T = x_.t;
  int consumers = 0;
  double width = 0.0;
  bool mlp_reduced = false;
  bool qkv_dropped_out = false;  // one_qkv_lora_dropout: an adapted q, k or v dropped its input out
  for (const Linear& l : linears_) {
    if (std::find(roles.begin(), roles.end(), l.role) == roles.end()) continue;
    const bool adapted = !full_ && adapts(l.role);
    Op& op = b_.open(to_string(l.role), OpKind::gemm);
    op.gemm = gemm_of(a_, tr_, l, adapted);
    op.gemm.input_grad = !entry() || entry_input_gradient(tr_, l.role);
    const bool row = l.role == Role::o || l.role == Role::down;
    op.collective = sublayer_collective(l.role, mlp_reduced);
    const double in = dbl(l.in) / (row ? x_.tp : 1.0);
    const double out = dbl(l.out) / (row ? 1.0 : x_.tp);
    // An expert's linear runs once per expert that took a token in transformers' loop, once for
    // all experts as a grouped GEMM (grouped_mm) or batched matmul (Llama 4's bmm).
    const double runs = l.copies > 1 ? hits_ : 1.0;
    width = in;
    ++consumers;
    if (x_.mixed && !variant_.compiled) b_.cast(T * in, in_bytes, c_, true);  // compiled: in its producer
    const double dequant = tr_.method == Method::qlora ? 1.0 : 0.0;
    const double weight_cast = cast_weights ? 1.0 : 0.0;
    const bool trained = trains_weight(tr_, l.role);
    b_.launches(runs * (1.0 + dequant + weight_cast), runs * (1.0 + (trained ? 1.0 + weight_cast : 0.0) + dequant));
    if (l.bias && trained) b_.backward(T * out * c_);
    if (!adapted) continue;
    ++consumers;
    const bool one_dropout =
        variant_.one_qkv_lora_dropout && (l.role == Role::q || l.role == Role::k || l.role == Role::v);
    if (tr_.lora.dropout > 0.0 && !(one_dropout && qkv_dropped_out)) b_.dropout(T * in, c_);
    qkv_dropped_out = qkv_dropped_out || one_dropout;
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
  if ((fused_ || variant_.one_qkv_lora_dropout) && n > 0 && *roles.begin() == Role::q) n = 1;
  b_.keep("LoRA dropout input and mask", n * (c_ + kMaskBytes) * x_.t * width / x_.rep);
}

// A fused q/k/v projection's LoRA update padded to the projection's width by index_copy keeps
// what it copied: t x the adapted parts' widths (OpListVariant::lora_qkv_update_kept).

void HfBlock::lora_qkv_update() {
  if (full_ || !variant_.lora_qkv_update_kept) return;
  const bool q = adapts(Role::q), k = adapts(Role::k), v = adapts(Role::v);
  if (!(q || k || v) || (q && k && v && !variant_.lora_qkv_always_padded)) return;
  const double width = (q ? x_.qd : 0.0) + (k ? x_.kd : 0.0) + (v ? x_.kd : 0.0);
  b_.keep("LoRA q/k/v update (kept by index_copy)", c_ * x_.t * width / x_.tp);
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

// Rotary embeddings on q or k of n elements (apply_rotary_pos_emb: x cos + rotate_half(x) sin,

// rotate_half = cat(-x2, x1)); partial rotary slices and concatenates the pass-through part. cos

// and sin take the dtype of the hidden states, so an fp32 stream makes q and k fp32 until SDPA's

// autocast casts them back.

// The q, k, v the attention keeps, in the model dtype.

// The attention core: the fused kernel or the two batched matmuls of the unfused path, and outside

// them the wrapper's output transpose or Hugging Face's eager path (scores scaled, masked, softmax

// in fp32, cast back, dropout; repeat_kv of grouped K/V).

// What the attention core keeps: scores and probabilities (eager, SDPA's math fallback) or the

// fused kernel's output and log-sum-exp.

// act(gate) * up, or act(fc1): SiLU, GELU and GELU-tanh are one kernel; Hugging Face's

// NewGELUActivation (GPT-2, Phi) composes pow, three scalings, tanh, an add and a product.

void HfBlock::activation() {
  const double n = x_.t * x_.kinter;
  const double c = c_;
  b_.open("activation", OpKind::elementwise);
  if (liger_glu()) {
    // Liger's SwiGLU/GeGLU (ops/swiglu.py, geglu.py): forward reads the gate and up outputs and
    // writes the product; backward reads its gradient and both inputs and writes theirs.
    b_.forward(3.0 * n * c);
    b_.backward(5.0 * n * c);
    mlp_saved();
    return;
  }
  if (gelu_new()) {
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
    if (keeps_input(Role::down)) b_.keep_input("down projection input", x_.lin * tI, quant_.keeps_input);
  } else if (a_.mlp == MlpKind::gated) {
    // The activation reads the gate projection (T5 v1.1's gated-gelu: the tanh GELU's intermediates).
    const double gate = gelu_new() ? gelu_new_bytes(tr_) : 1.0;
    b_.keep("gate projection output", gate * c_ * tI);
    if (!liger_glu()) b_.keep("activation output", c_ * tI);  // Liger's kernel recomputes it
    b_.keep("up projection output", c_ * tI);
    if (keeps_input(Role::down)) b_.keep_input("down projection input", x_.lin * tI, quant_.keeps_input);
  } else {
    if (gelu_new()) {
      b_.keep("up projection output", gelu_new_bytes(tr_) * c_ * tI);
    } else {
      b_.keep("up projection output", c_ * tI);
    }
    if (keeps_input(Role::down)) b_.keep_input("down projection input", x_.lin * tI, quant_.keeps_input);
    // T5 drops out inside the feed-forward, between its two matrices.
    if (variant_.feed_forward_dropout && hidden_dropout(a_, tr_) > 0.0)
      b_.keep("feed-forward dropout mask", kMaskBytes * tI);
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
  const double input = trains_weight(tr_, Role::router) ? (mixed_ ? c_ : c_ < kFp32 ? kFp32 : 0.0) * x_.h : 0.0;
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
    if (trains_weight(tr_, Role::down)) {
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
  const std::size_t before = b_.kept();
  attention();
  // A first block whose attention trains nothing and whose input needs no gradient (partial
  // fine-tuning's entry layer training only its MLP) keeps nothing of its attention.
  if (!input_grad_ && !attention_trained()) b_.forget_kept_after(before);
  if (stack_ == Stack::decoder && a_.encoder_decoder) cross_attention();
  mlp();
}

// Norm, q/k/v projections, q/k norms and rotary embedding, the attention core, o projection,

// residual.

// After the attention core: what the o projection keeps, the explicit mask, the o projection, the

// output norm and dropout, the residual.

// An RMSNorm of latent attention's compressed query or key/value latent (q_a_layernorm,

// kv_a_layernorm), `width` wide: like a block's norm, its fp32 input (of `stored_width`: the whole

// projection output where the input, already fp32, is a slice of it), one statistic per row and,

// under full training, the normalised input; its output is the expanding projection's input.

// Multi-head latent attention as transformers v5.24.0 runs it (models/deepseek_v3/

// modeling_deepseek_v3.py DeepseekV3Attention.forward; DeepSeek-V2's the same but for its complex

// rotary product): q_a_proj, q_a_layernorm and q_b_proj (or q_proj); kv_a_proj_with_mqa, split into

// the latent and the shared rotary key; kv_a_layernorm and kv_b_proj, split into every head's key

// and value; the rotary dims of q and of the shared key rotated; the query concatenated and the key

// written into a new tensor (expand_kv); attention with query/key heads of d = nope + rope and

// value heads of d_v; o_proj. Eager attention's matmuls copy the transposed key and the strided

// value; SDPA's fused kernels keep q, k and the value's view (the whole kv_b output); its math

// fallback keeps fp32 copies.

// An encoder-decoder's decoder: its norm, attention over the encoder output, residual (its

// projections are among the block's q, k, v and o linears).

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
  linears({Role::gate, Role::up}, x_.norm_output(a_));
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
  if (hidden_dropout(a_, tr_) > 0.0) {
    b_.open("mlp dropout", OpKind::elementwise);
    b_.dropout(X, c_);
    b_.keep("mlp dropout mask", kMaskBytes * th);
  }
  routing();
  b_.open("mlp residual", OpKind::elementwise);
  b_.add(X, s, c_, s);
  b_.fan_in(X, s, 2);  // the block input feeds its norm and the residual
}

}  // namespace trainplan::model::block_detail
