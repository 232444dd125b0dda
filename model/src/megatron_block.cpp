#include "block_builder.hpp"

namespace trainplan::model::block_detail {
namespace {

constexpr double kMegatronDropout = 0.1;  // megatron/training/arguments.py --hidden/--attention-dropout

// Megatron-Core's multi-latent attention norms and its fused rotary kernel.
void megatron_latent_and_rotary(Builder& b, const Architecture& a, const Shape& x) {
  if (a.mla()) {
    // Megatron-Core's multi-latent attention: the compressed query and key/value latent are
    // normed (q_layernorm, kv_layernorm) and expanded; each norm keeps its input and the expansion
    // its own, replicated across tensor-parallel ranks.
    Op& latent = b.open("fused latent norms", OpKind::fused);
    latent.pass = FusedPass::norm;
    latent.elements = x.t * dbl(a.q_lora_rank + a.kv_lora_rank);
    latent.element_bytes = x.c;
    b.keep("latent norm and expansion inputs", 2.0 * 2.0 * x.t * dbl(a.q_lora_rank + a.kv_lora_rank) / x.rep);
  }
  if (a.position == PositionKind::rotary) {
    Op& rope = b.open("fused rotary", OpKind::fused);
    rope.pass = FusedPass::rotary;
    // Latent attention rotates its rotary dims only: every query head's and the shared key's.
    rope.elements = a.mla() ? x.t * dbl(a.qk_rope_dim) * (dbl(a.heads) / x.tp + 1.0) : x.t * dbl(a.q_dim() + a.kv_dim()) / x.tp;
    rope.element_bytes = x.c;
  }
}

// The MoE layer's token permutation and unpermutation, and what the routed experts keep of it.
void megatron_permutation(Builder& b, const Architecture& a, const Shape& x, double routed, double lin) {
  Op& perm = b.open("token permutation", OpKind::fused);
  perm.collective = OpCollective::expert_all_to_all;
  perm.pass = FusedPass::permute;
  perm.elements = 2.0 * x.t * dbl(a.experts_per_token) * x.h * routed;
  perm.element_bytes = x.c;
  // The routed experts' first grouped GEMM keeps its input, the k permuted copies of each token a
  // rank receives (gathered over the tensor-parallel ranks, whose experts share them); the
  // routing probabilities scale the activation, so unpermuting keeps nothing more (Megatron-LM
  // @ d98e8a6, moe/experts.py: permuted_probs into the scaled activation; token_dispatcher.py
  // unpermute without probs).
  b.keep("permuted tokens (routed experts' input)", lin * x.t * dbl(a.experts_per_token) * x.h * routed);
}
}  // namespace

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
  const AdaptedRoles adapted = is_adapter(tr.method) ? adapted_roles(a, tr.lora) : AdaptedRoles{};
  bool mlp_reduced = false;
  const auto gemms = [&](bool attention) {
    for (const Linear& l : linears) {
      const bool attn = l.role == Role::q || l.role == Role::k || l.role == Role::v || l.role == Role::o ||
                        l.role == Role::q_a || l.role == Role::kv_a || l.role == Role::kv_b;
      if (attn != attention) continue;
      const bool adapts = is_adapter(tr.method) && l.role != Role::router && adapted[static_cast<std::size_t>(l.role)];
      Op& op = b.open(to_string(l.role), OpKind::gemm);
      op.gemm = gemm_of(a, tr, l, adapts);
      op.collective = sublayer_collective(l.role, mlp_reduced);
    }
  };
  const double sbh = T * x.h;
  // Megatron-LM's hidden and attention dropout, 0.1 each unless the run sets them (arguments.py
  // --hidden-dropout, --attention-dropout); at 0 torch's dropout returns its input, no mask.
  const bool dropout = tr.hidden_dropout.value_or(kMegatronDropout) > 0.0;
  const bool attention_masks = tr.attention_dropout.value_or(kMegatronDropout) > 0.0;
  const double norms = dbl(a.norms_per_layer) + (cross ? 1.0 : 0.0);
  Op& norm = b.open("fused norms", OpKind::fused);
  norm.pass = FusedPass::norm;
  norm.elements = norms * T * x.h / x.rep;
  norm.element_bytes = c;
  // A linear's saved input: 2 bytes, or the FP8 copy a Transformer Engine recipe keeps instead
  // (LayerNormLinear's ln_out, LayerNormMLP's act_out: model/fp8.hpp).
  const bool fp8_inputs = x.lin != c;
  const double lin = fp8_inputs ? x.lin : 2.0;
  b.keep("norm, projection inputs and dropout masks", (4.0 + 2.0 * lin + (dropout ? 2.0 : 0.0)) * sbh / x.rep);
  gemms(true);
  megatron_latent_and_rotary(b, a, x);
  Op& core = b.open("attention", OpKind::attention_core, true);
  core.attention = attention_of(a, tr, !(a.encoder_decoder && stack == Stack::encoder), false);
  b.keep("q, k, v", 2.0 * T * (x.qd + x.kd + x.vd) / x.tp);
  b.keep("attention output", 2.0 * T * x.kvo);
  if (fp8_inputs) b.keep("projection input (FP8 copy)", lin * T * x.kvo);  // beside the core's output
  double core_bytes = 0.0;
  switch (tr.attention) {
    // Softmax output, and with dropout its mask and output (without, the softmax output feeds
    // the value product).
    case Attention::eager: core_bytes = (attention_masks ? 5.0 : 2.0) * x.a * x.s * x.s * x.b / x.tp; break;
    case Attention::flash:
    case Attention::triton:
    case Attention::sdpa: core_bytes = kFp32 * x.a * x.t / x.tp; break;  // log-sum-exp per row
  }
  const std::size_t core_op = b.last();
  if (cross) b.open("cross-attention", OpKind::attention_core, true).attention = attention_of(a, tr, false, true);
  Op& residual = b.open("fused bias-dropout-add", OpKind::fused);
  residual.pass = FusedPass::residual;
  residual.elements = (2.0 + (cross ? 1.0 : 0.0)) * T * x.h / x.rep;
  residual.element_bytes = c;
  residual.mask_bytes = dropout ? kMaskBytes : 0.0;
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
  b.keep("mlp intermediates", ((mlp_tensors - 1.0) * 2.0 + lin) * T * (x.I + routed_intermediate * (routed - 1.0)) / x.tp);
  b.keep_at(core_op, "attention core", core_bytes, true);
  if (a.is_moe()) megatron_permutation(b, a, x, routed, lin);
}

}  // namespace trainplan::model::block_detail
