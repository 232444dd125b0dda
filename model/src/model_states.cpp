#include "trainplan/model/model_states.hpp"

#include <algorithm>

#include "trainplan/model/library.hpp"
#include "trainplan/model/lora.hpp"
#include "trainplan/model/parameters.hpp"

namespace trainplan::model {
namespace {

// bitsandbytes' 8-bit optimizers: two 1-byte moments plus one fp32 absmax per 2048-element block
// (Dettmers et al. 2022, arXiv:2110.02861, Sec. 2).
constexpr double kEightBitBlock = 2048.0;
// bitsandbytes 4-bit: blocks of 64 weights; double quantization groups 256 absmax values.
constexpr double kDoubleQuantBlock = 256.0;

}  // namespace

double optimizer_state_bytes(Optimizer o, Precision p, double shaped_elements_per_param) {
  const double state = param_bytes(p);  // torch keeps moments in the parameter dtype
  switch (o) {
    case Optimizer::adamw:
    case Optimizer::adam:
    case Optimizer::lamb: return 2.0 * state;
    case Optimizer::sgd: return 0.0;
    case Optimizer::sgd_momentum: return state;
    // bitsandbytes' 32-bit optimizers keep fp32 states whatever the parameters' dtype
    // (optim/optimizer.py, Optimizer2State/Optimizer1State with optim_bits 32), and so does
    // DeepSpeed's FusedLion beside its fp32 master weights.
    case Optimizer::lion: return 4.0;
    case Optimizer::paged_adamw: return 2.0 * 4.0;
    case Optimizer::adamw_8bit:
    case Optimizer::paged_adamw_8bit: return 2.0 * (1.0 + 4.0 / kEightBitBlock);
    case Optimizer::lion_8bit:
    case Optimizer::paged_lion_8bit: return 1.0 + 4.0 / kEightBitBlock;
    case Optimizer::adafactor: return 4.0 * shaped_elements_per_param;
    // galore_torch's AdamW keeps its moments (and the projection) in the gradient's dtype.
    case Optimizer::galore_adamw: return state * shaped_elements_per_param;
  }
  return 0.0;
}

bool is_paged(Optimizer o) {
  switch (o) {
    case Optimizer::paged_adamw_8bit:
    case Optimizer::paged_adamw:
    case Optimizer::paged_lion_8bit: return true;
    case Optimizer::adamw:
    case Optimizer::adam:
    case Optimizer::sgd:
    case Optimizer::sgd_momentum:
    case Optimizer::adamw_8bit:
    case Optimizer::adafactor:
    case Optimizer::lion:
    case Optimizer::lion_8bit:
    case Optimizer::lamb:
    case Optimizer::galore_adamw: return false;
  }
  return false;
}

StateBytes state_bytes(Framework f, Precision p, double optimizer_bytes) {
  const double w = param_bytes(p);
  switch (f) {
    case Framework::pytorch:
      // The model holds its parameters (fp32 under autocast) and gradients of the same dtype.
      return {w, w, 0.0, 0.0, optimizer_bytes};
    case Framework::deepspeed:
      // 16-bit model weights and gradients, fp32 gradient partition, master weights and moments:
      // DeepSpeed stage_1_and_2.py "2_grads_16bit + 4_grads_32bit + 4_params_32bit + 8_optimizer".
      if (is_mixed(p)) return {2.0, 2.0, 4.0, 4.0, optimizer_bytes};
      return {w, w, 0.0, 0.0, optimizer_bytes};
    case Framework::megatron:
      // Megatron-LM docs/user-guide/features/dist_optimizer.md: bf16 params with fp32 main grads
      // (18, 6 + 12/d), fp16 params and grads (20, 4 + 16/d), fp32 (16, 8 + 8/d).
      switch (p) {
        case Precision::bf16_mixed: return {2.0, 4.0, 0.0, 4.0, optimizer_bytes};
        case Precision::fp16_mixed: return {2.0, 2.0, 4.0, 4.0, optimizer_bytes};
        case Precision::fp32:
        case Precision::bf16_true:
        case Precision::fp16_true: return {w, w, 0.0, 0.0, optimizer_bytes};
      }
  }
  return {};
}

ShardedBytes shard(const StateBytes& b, Strategy s, double n, bool weights_rest_sharded) {
  const double w = shards_parameters(s) || weights_rest_sharded ? n : 1.0;
  const double g = shards_gradients(s) ? n : 1.0;
  const double o = shards_optimizer(s) ? n : 1.0;
  return {b.weights / w, b.grads / g, (b.opt_grads + b.master + b.optimizer) / o};
}

double quantized_bytes_per_param(Quant q, std::int64_t block, std::int64_t in_features) {
  const double b = static_cast<double>(block);
  switch (q) {
    case Quant::nf4:
    case Quant::fp4: return (4.0 + 32.0 / b) / 8.0;
    case Quant::nf4_dq: return (4.0 + 8.0 / b + 32.0 / (b * kDoubleQuantBlock)) / 8.0;
    case Quant::int8: return 1.0 + 4.0 / static_cast<double>(in_features);
  }
  return 2.0;
}

QloraStackTraits qlora_stack_traits(const Training& tr) {
  if (tr.method != Method::qlora) return {};
  const bool lightning = tr.qlora_stack == QloraStack::lightning;
  const int release = bitsandbytes_release(tr);
  return {.keeps_input = release > 0 && release < kBitsandbytesKeepsNoInput,
          .quantizes_head = lightning,
          .dequantizes_to_fp16 = lightning};
}

double dequantized_bytes_per_weight(const Training& tr) {
  const double c = compute_bytes(tr.precision);
  if (!qlora_stack_traits(tr).dequantizes_to_fp16) return c;
  const bool fp16_compute = tr.precision == Precision::fp16_true || tr.precision == Precision::fp16_mixed;
  return fp16_compute ? 2.0 : 2.0 + c;
}

std::int64_t adafactor_state_elements(const Architecture& a, const Training& tr) {
  std::int64_t n = 0;
  auto matrix = [&](std::int64_t rows, std::int64_t cols, std::int64_t copies) {
    n += copies * (rows + cols);
  };
  if (tr.method != Method::full) {
    const std::int64_t r = tr.lora.rank;
    for_each_layer_kind(a, [&](const Architecture& kind, Stack stack, std::int64_t layers, bool) {
      for (const auto& ad : lora_block_adapters(kind, tr.lora, stack)) {
        matrix(r, ad.in, layers * ad.copies);   // A: r x in
        matrix(ad.out, r, layers * ad.copies);  // B: out x r
      }
    });
    if (lora_targets_lm_head(a, tr.lora)) {
      matrix(r, a.hidden, 1);
      matrix(a.vocab, r, 1);
    }
    return n;
  }
  const ParameterCounts c = count_parameters(a);
  matrix(a.vocab, a.hidden, 1);
  if (a.position == PositionKind::learned) matrix(a.max_seq, a.hidden, 1);
  if (!a.tie_embeddings) matrix(a.vocab, a.hidden, 1);
  std::int64_t matrices = a.vocab * a.hidden * (a.tie_embeddings ? 1 : 2) +
                          (a.position == PositionKind::learned ? a.max_seq * a.hidden : 0);
  const auto linears = [&](const Architecture& kind, Stack stack, std::int64_t layers, bool) {
    for (const Linear& l : block_linears(kind, stack)) {
      matrix(l.out, l.in, layers * l.copies);
      matrices += layers * l.copies * l.in * l.out;
    }
  };
  for_each_layer_kind(a, linears);
  if (a.mtp_layers > 0) {  // multi-token prediction: a block of the expert kind and a 2h x h projection
    linears(a, Stack::decoder, a.mtp_layers, false);
    matrix(a.hidden, 2 * a.hidden, a.mtp_layers);
    matrices += a.mtp_layers * 2 * a.hidden * a.hidden;
  }
  // Every remaining parameter (biases, norms, relative position bias) is a vector: kept in full.
  return n + (c.total - matrices);
}

std::int64_t galore_state_elements(const Architecture& a, const Training& tr) {
  const ParameterCounts c = count_parameters(a);
  std::int64_t n = 0;
  std::int64_t projected = 0;  // parameters of the block linears
  const auto linears = [&](const Architecture& kind, Stack stack, std::int64_t layers, bool) {
    for (const Linear& l : block_linears(kind, stack)) {
      const std::int64_t r = std::min({tr.galore_rank, l.in, l.out});
      n += layers * l.copies * (2 * r * std::max(l.in, l.out) + r * std::min(l.in, l.out));
      projected += layers * l.copies * l.in * l.out;
    }
  };
  for_each_layer_kind(a, linears);
  if (a.mtp_layers > 0) linears(a, Stack::decoder, a.mtp_layers, false);
  return n + 2 * (c.total - projected);
}

}  // namespace trainplan::model
