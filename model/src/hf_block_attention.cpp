#include "hf_block.hpp"

namespace trainplan::model::block_detail {

void HfBlock::qk_norms() {
  if (a_.qk_norm == QkNorm::none) return;
  const bool per_head = a_.qk_norm != QkNorm::full_width;
  const bool weighted = a_.qk_norm != QkNorm::l2;  // Llama 4's L2 norm has no weight
  const double d = dbl(a_.head_dim);
  const auto grad = [&](Role role) { return input_grad_ || trains(role); };
  for (const Role role : {Role::q, Role::k}) {
    b_.open(role == Role::q ? "q norm" : "k norm", OpKind::norm);
    const double X = x_.t * (role == Role::q ? x_.kq : x_.kkv);
    const double n = x_.t * (role == Role::q ? x_.qd : x_.kd) / x_.tp;
    if (variant_.fused_norm) {  // Liger's RMSNorm over the projection's output, in its dtype
      fused_rms_norm_kernels(b_, x_, X, c_);
      if (!grad(role)) continue;
      b_.keep("q/k norm input", c_ * n);
      b_.keep("q/k norm statistics", kFp32 * (per_head ? n / d : x_.t));
      continue;
    }
    norm_kernels(X);
    if (!grad(role)) continue;
    b_.keep("q/k norm input (fp32 copy)", rms_input_bytes(variant_, tr_) * n);
    b_.keep("q/k norm statistics", kFp32 * (per_head ? n / d : x_.t));
    if (full_ && weighted) b_.keep("q/k norm normalised input", (variant_.fp32_normalised_norm ? kFp32 : r_) * n);
  }
}

void HfBlock::rotary(double n, bool paired) {
  if (variant_.fused_rotary) {
    // Liger's rope (ops/rope.py): one kernel rotates q and k in place each way; cos and sin are
    // shared by every layer. Its launch is counted on q's op, not again on k's (`paired`).
    const double launches = paired ? 0.0 : 1.0;
    b_.forward(2.0 * n * c_, launches);
    b_.backward(2.0 * n * c_, launches);
    return;
  }
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

void HfBlock::attention_inputs(bool repeat) {
  const bool rotary = a_.position == PositionKind::rotary;
  const double q = c_ * x_.t * x_.qd / x_.tp;
  const double kv = c_ * x_.t * x_.kd / x_.tp;
  const double k_used = repeat ? q : kv;
  // Without rotary embeddings q, k, v are views of the projection output; a fused projection keeps
  // its whole output alive through them. SDPA takes contiguous q, k, v: of a fused projection it
  // copies the views (GPT-2: q and v, k stays a view; rotary models: v) and its output.
  const bool sdpa_fused = attn_ == Attention::sdpa && fused_ && !repeat;
  if (variant_.fused_qkv_value_view && attn_ != Attention::eager && !repeat) {
    if (rotary) b_.keep("rotary q, k", q + kv);
    b_.keep("q, k, v projection output (the value a view of it)", c_ * x_.t * (x_.qd + 2.0 * x_.kd) / x_.tp);
  } else if ((sdpa_fused || variant_.contiguous_qkv_split) && rotary) {
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
    const auto grad = [&](Role role) { return input_grad_ || trains(role); };
    if (attn_ != Attention::eager || grad(Role::k)) b_.keep("q", q);
    if (attn_ != Attention::eager || grad(Role::q)) b_.keep("k", k_used);
    b_.keep("v", k_used);
  }
}

void HfBlock::attention_core(bool cross, bool kv_expanded) {
  const bool fused_kernel = !run_.model_code_core();
  Op& op = b_.open(cross ? "cross-attention" : "attention", OpKind::attention_core, true);
  op.attention = attention_of(a_, tr_, !cross && !(a_.encoder_decoder && stack_ == Stack::encoder), cross);
  op.attention.backward = !entry() || entry_attention_backward(tr_);
  op.attention.explicit_mask = !cross && sdpa_explicit_mask(a_, tr_);
  op.attention.kv_expanded = kv_expanded;
  const double S = x_.scores;
  const double c = c_;
  if (fused_kernel) {
    b_.launches(1.0, 3.0);  // forward; backward: dO.O, the kernel, dQ conversion
  } else {
    b_.launches(2.0, 4.0);  // QK^T, PV; dP, dV, dQ, dK
    // repeat_kv copies grouped K/V (a single head only beside a micro-batch of several: see
    // attention() below).
    if (a_.kv_heads != a_.heads && (a_.kv_heads > 1 || tr_.sequences() > 1)) {
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
    if (attention_dropout(a_, tr_) > 0.0) b_.dropout(S, c);
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
      if (attention_dropout(a_, tr_) > 0.0) core_ += (kMaskBytes + c_) * scores;
      b_.keep("attention scores", core_, true);
      return;
    case Attention::flash:
    case Attention::triton:
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

void HfBlock::attention() {
  if (a_.mla()) {
    latent_attention();
    return;
  }
  const double X = x_.t * x_.kh;
  const int attn_consumers = fused_ ? (saving({Role::q, Role::k, Role::v}) > 0 ? 1 : 0)
                                    : saving({Role::q, Role::k, Role::v});
  norm("input norm", true, true, attn_consumers, false, input_grad_);
  linears({Role::q, Role::k, Role::v}, x_.norm_output(a_));
  lora_a_outputs({Role::q, Role::k, Role::v, Role::o});
  lora_dropout({Role::q, Role::k, Role::v}, x_.h);
  lora_qkv_update();
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
                       ((a_.kv_heads > 1 || tr_.sequences() > 1) && attn_ == Attention::eager) ||
                       (a_.kv_heads > 1 && attn_ == Attention::sdpa && sliding_window_masked(a_, tr_)));
  qk_norms();
  if (a_.position == PositionKind::rotary) {
    b_.open("rotary q", OpKind::elementwise);
    rotary(x_.t * x_.kq);
    b_.open("rotary k", OpKind::elementwise);
    rotary(x_.t * x_.kkv, true);
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
  attention_core(false, repeat);
  attention_end(X);
}

void HfBlock::attention_end(double X) {
  const double th = x_.t * x_.h / x_.rep;
  const double s = x_.stream;
  const bool sandwich = a_.norm_placement == NormPlacement::sandwich;
  const double q = c_ * x_.t * x_.kvo;
  if (attn_ == Attention::eager || (gpu_sdpa_ && !sdpa_.fused())) {
    if (keeps_input(Role::o)) b_.keep_input("attention output (o input)", x_.lin * x_.t * x_.kvo, quant_.keeps_input);
  } else {
    // The kernel lays its output out as its query; the o projection reads it token-major, which
    // is free for a query in the projection's layout (Llama's rotary, GPT-2's views) and a copy
    // for one concatenated head-major (partial rotary: Phi, GPT-NeoX; every litgpt model:
    // lit_gpt/model.py:229 at 8641822, litgpt/model.py y.reshape(B, T, C) at 26857050).
    // A rotated slice of a fused projection (Phi-3's qkv_proj) is not dense either: the rotary
    // products write it head-major (Falcon's own attention splits its projection first).
    const bool rotary = a_.position == PositionKind::rotary;
    const bool sliced = fused_ && !hf_sdpa_call(a_, tr_).own_attention;
    const bool head_major = (rotary && (a_.rotary_fraction < 1.0 || sliced)) ||
                           library_traits(tr_.library).head_major_attention_output;
    const bool copied = head_major && x_.lin == c_ && keeps_input(Role::o);
    // The kernel's backward needs its output, which is the o projection's input unless copied.
    b_.keep_input("attention output", q, quant_.keeps_input && !copied);
    // An FP8 recipe that saves its inputs in FP8 keeps the o projection's own copy beside it.
    if (x_.lin != c_ && keeps_input(Role::o)) b_.keep("o input (FP8 copy)", x_.lin * x_.t * x_.kvo);
    if (copied) b_.keep_input("o input (contiguous copy)", q, quant_.keeps_input);
  }
  // The explicit mask, cast to the model dtype inside each block (compiled: once for the graph,
  // the boolean mask the stack keeps).
  if (sdpa_explicit_mask(a_, tr_) && !variant_.compiled) {
    b_.open("attention mask cast", OpKind::copy_cast);
    b_.keep("attention mask", c_ * x_.b * x_.s * x_.s);
  }
  linears({Role::o}, c_);
  lora_dropout({Role::o}, x_.kvo);
  // Gemma 2 and 3 norm the attention output before the residual add.
  if (sandwich) norm("attention output norm", true, true, 0, false, input_grad_ || attention_trained());
  if (hidden_dropout(a_, tr_) > 0.0) {
    b_.open("attention dropout", OpKind::elementwise);
    b_.dropout(X, c_);
    b_.keep("attention dropout mask", kMaskBytes * th);
  }
  b_.open("attention residual", OpKind::elementwise);
  b_.add(X, s, c_, s);
}

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
  const auto grad = [&](Role role) { return input_grad_ || trains(role); };
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

}  // namespace trainplan::model::block_detail
