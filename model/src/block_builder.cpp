#include "block_builder.hpp"

#include "trainplan/model/fp8.hpp"
#include "trainplan/model/library.hpp"
#include "trainplan/model/partial.hpp"

namespace trainplan::model::block_detail {

double gelu_new_bytes(const Training& tr) {
  const double c = compute_bytes(tr.precision);
  if (tr.cuda_sm > 0 && is_mixed(tr.precision) && c < kFp32) return (3.0 * kFp32 + c) / c;
  return 4.0;
}

Shape shape_of(const Architecture& a, const Training& tr) {
  const double s = dbl(tr.seq);
  const double q = dbl(tr.local_seq());  // a rank's queries of a sequence (context parallelism)
  const double b = dbl(tr.sequences());
  const double tp = static_cast<double>(tr.tp);
  const double c = compute_bytes(tr.precision);
  // The block's own weights train: every one under full training; under partial fine-tuning those
  // of a trained layer whose norms train (its linears' weight gradients follow trains_weight).
  const bool full = tr.method == Method::full && (!tr.partial.active || (tr.layer == LayerState::trained && tr.partial.norms));
  // Under mixed precision an fp32 model (full training, or a frozen base kept fp32) carries an fp32
  // residual stream; Hugging Face + PEFT load the frozen base in 16 bits, and so does partial
  // fine-tuning (LLaMA-Factory upcasts only the trained parameters), whose stream stays 16-bit
  // unless the embedding trains.
  // FSDP's gathered 16-bit units compute as a 16-bit model (Training::computes_in_gathered_16bit).
  const bool fp32_model = is_mixed(tr.precision) && !tr.computes_in_gathered_16bit() &&
                          (tr.frozen_base_fp32 || (tr.method == Method::full && (!tr.partial.active || tr.partial.embedding)));
  const double stream =
      fp32_model ? kFp32 : param_bytes(tr.precision) < kFp32 || tr.computes_in_gathered_16bit() ? c : kFp32;
  return {q * b,
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
          b * dbl(a.heads) / tp * q * s,
          c,
          param_bytes(tr.precision),
          stream,
          fp8_saved_input_bytes(tr),
          is_mixed(tr.precision),
          full,
          is_mixed(tr.precision) && stream < kFp32 && !library_traits(tr.library).low_precision_norm};
}

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
    case NormKind::layernorm_no_bias: {
      // Under autocast a 16-bit input is cast up first, and the kernel runs in fp32.
      const double n = x.layernorm_upcast ? kFp32 : s;
      if (x.layernorm_upcast) b.cast(X, s, kFp32, true);
      b.forward(X * 2.0 * n);
      b.backward(X * 3.0 * n + (x.full ? X * 2.0 * n : 0.0), x.full ? 2.0 : 1.0);
      break;
    }
  }
}

void fused_rms_norm_kernels(Builder& b, const Shape& x, double X, double bytes) {
  b.forward(X * 2.0 * bytes);
  b.backward(X * 3.0 * bytes, x.full ? 2.0 : 1.0);
}

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
  g.weight_grad = trains_weight(tr, l.role);
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
  s.batch = tr.sequences();
  s.heads = a.heads / tr.tp;
  s.kv_heads = std::max<std::int64_t>(1, a.kv_heads / tr.tp);
  s.heads_per_gpu = dbl(a.heads) / tr.tp;
  s.seq = tr.seq;
  s.query_seq = tr.local_seq();
  if (tr.cp > 1 && tr.cp_comm == CpComm::all_to_all) {
    // Ulysses: after the all-to-all each rank attends over the whole sequence with 1/cp of the
    // heads (Jacobs et al. 2023, arXiv:2309.14509, Sec. 3.1).
    s.heads /= tr.cp;
    s.kv_heads = std::max<std::int64_t>(1, s.kv_heads / tr.cp);
    s.heads_per_gpu /= tr.cp;
    s.query_seq = tr.seq;
  }
  s.head_dim = a.head_dim;
  s.v_head_dim = a.value_head_dim();
  s.causal = causal;
  s.cross = cross;
  return s;
}

}  // namespace trainplan::model::block_detail
