#pragma once
// A Hugging Face decoder or encoder block as eager PyTorch runs it: its ops and the tensors autograd
// saves, built op by op (hf_block.cpp; the attention sublayers in hf_block_attention.cpp).

#include <algorithm>
#include <initializer_list>
#include <string_view>
#include <vector>

#include "block_builder.hpp"
#include "trainplan/model/fp8.hpp"
#include "trainplan/model/library.hpp"
#include "trainplan/model/partial.hpp"

namespace trainplan::model::block_detail {

// MoE experts run as transformers' per-expert loop: where the config asks for it
// (experts_implementation = "eager") and in every release before 5.0, which had no grouped_mm path
// (v4.57.1 Qwen3MoeSparseMoeBlock, MixtralSparseMoeBlock and GptOssExperts in training loop over the
// experts hit). Llama 4's experts are one batched matmul in every release.
[[nodiscard]] bool experts_loop(const Architecture& a, const Training& tr);

// Experts that take at least one of the micro-batch's tokens when each token picks k of E
// uniformly (a balanced router): E (1 - (1 - k/E)^T).
[[nodiscard]] double experts_hit(const Architecture& a, const Training& tr);

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
        adapted_(is_adapter(tr.method) ? adapted_roles(a, tr.lora) : AdaptedRoles{}),
        fused_(!a.fused_qkv_name.empty()), variant_(op_variant(a, tr)),
        run_(out.run), attn_(run_.runs), sdpa_(run_.gpu_sdpa ? run_.sdpa : SdpaChoice{}),
        gpu_sdpa_(run_.gpu_sdpa),
        quant_(qlora_stack_traits(tr)),
        loop_(experts_loop(a, tr)), hits_(loop_ ? experts_hit(a, tr) : 1.0) {}

  void run();

 private:
  bool adapts(Role role) const { return adapted_[static_cast<std::size_t>(role)]; }
  // Hugging Face's composite tanh GELU, where it runs op by op.
  bool gelu_new() const { return a_.activation == Activation::gelu_new && !variant_.one_kernel_gelu; }
  // A linear keeps its input when its weight is trained, when its adapter reads the input directly
  // (no LoRA dropout), and under a QLoRA stack whose 4-bit matmul keeps its input
  // (model_states.hpp qlora_stack_traits).
  bool keeps_input(Role role) const {
    const bool for_weight = trains_weight(tr_, role) && !(variant_.recomputes_linear_inputs && fp8_linear(tr_, role, false));
    return for_weight || quant_.keeps_input || (adapts(role) && tr_.lora.dropout <= 0.0);
  }
  // How many of these linears the block has and keep their input (an adapter with dropout keeps its
  // dropped-out copy instead, counted by lora_dropout below).
  int saving(std::initializer_list<Role> roles) const {
    int n = 0;
    for (Role role : roles) n += has(role) && keeps_input(role) ? 1 : 0;
    return n;
  }
  // A LayerNorm the library runs in the autocast dtype (LibraryTraits::low_precision_norm).
  bool low_precision_ln() const {
    return mixed_ && library_traits(tr_.library).low_precision_norm &&
           (a_.norm == NormKind::layernorm || a_.norm == NormKind::layernorm_no_bias);
  }
  bool has(Role role) const {
    return std::any_of(linears_.begin(), linears_.end(), [role](const Linear& l) { return l.role == role; });
  }
  int adapted(std::initializer_list<Role> roles) const {
    int n = 0;
    for (Role role : roles) n += adapts(role) ? 1 : 0;
    return n;
  }
  // Liger's SwiGLU/GeGLU kernel runs this block's MLP (dense gated MLPs; expert MLPs stay
  // transformers').
  bool liger_glu() const { return variant_.fused_glu && !a_.is_moe() && a_.activation != Activation::gelu_new; }
  // An adapter on the role, or its own weight under partial fine-tuning: the first block (whose
  // input needs no gradient) runs the backward of what feeds it.
  bool trains(Role role) const { return adapts(role) || (tr_.partial.active && trains_weight(tr_, role)); }
  // Partial fine-tuning's entry layer with frozen norms (partial.hpp entry_input_gradient).
  bool entry() const { return first_ && trains_subset(tr_) && !full_; }
  bool attention_trained() const {
    for (Role role : {Role::q, Role::k, Role::v, Role::o, Role::q_a, Role::kv_a, Role::kv_b})
      if (trains(role)) return true;
    return false;
  }

  void norm(std::string_view name, bool kernels, bool saves, int consumers_saving, bool shares_input,
            bool norm_input_grad);
  void norm_kernels(double X);
  void linears(std::initializer_list<Role> roles, double in_bytes);
  void lora_dropout(std::initializer_list<Role> roles, double width);
  void lora_a_outputs(std::initializer_list<Role> roles);
  void lora_qkv_update();
  void qk_norms();
  // `paired`: k after q, whose fused kernel rotated both (Liger).
  void rotary(double n, bool paired = false);
  void attention_inputs(bool repeat);
  void attention_core(bool cross, bool kv_expanded = false);
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

}  // namespace trainplan::model::block_detail
