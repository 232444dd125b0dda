#pragma once
// The pieces every block's op list is built from (block_ops.cpp, hf_block*.cpp, megatron_block.cpp):
// the activation shape, the op and saved-tensor builder, and the GEMM and attention shapes.

#include <algorithm>
#include <cmath>
#include <string_view>

#include "trainplan/model/block_ops.hpp"
#include "trainplan/model/family.hpp"
#include "trainplan/model/flops.hpp"
#include "trainplan/model/lora.hpp"
#include "trainplan/model/model_states.hpp"

namespace trainplan::model::block_detail {

inline constexpr double kMaskBytes = 1.0;  // dropout masks are bool tensors
inline constexpr double kFp32 = 4.0;

[[nodiscard]] inline constexpr double dbl(std::int64_t v) { return static_cast<double>(v); }

// What Hugging Face's tanh GELU (activations.py NewGELUActivation:
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))) keeps per intermediate element, in units of the
// matmul dtype: x (for pow), the tanh output, 0.5 x and 1 + tanh. Under CUDA autocast torch.pow is
// an fp32 op (PyTorch AMP docs, "CUDA Ops that can autocast to float32"), so x is kept as its fp32
// copy and the tanh chain after it runs in fp32: only 0.5 x stays 16-bit. CPU autocast has no pow
// in its fp32 list.
[[nodiscard]] double gelu_new_bytes(const Training& tr);

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
  // Bytes per element a linear keeps of its input for the weight gradient: c, or the FP8 copy a
  // Transformer Engine recipe saves instead (model/fp8.hpp fp8_saved_input_bytes).
  double lin;
  bool mixed;     // autocast: linears cast their inputs to c
  bool full;      // weights trained
  // Autocast runs a LayerNorm in fp32 over an upcast copy of its 16-bit input and hands its
  // consumers an fp32 output (F.layer_norm is on CUDA and CPU autocast's fp32 lists); not where
  // the library's LayerNorm turns autocast off (LibraryTraits::low_precision_norm).
  bool layernorm_upcast;
  // Bytes per element of a norm's output, which its consumers read.
  [[nodiscard]] double norm_output(const Architecture& arch) const {
    const bool ln = arch.norm == NormKind::layernorm || arch.norm == NormKind::layernorm_no_bias;
    return ln && layernorm_upcast ? kFp32 : stream;
  }
};

[[nodiscard]] Shape shape_of(const Architecture& a, const Training& tr);

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
  // A linear's input the current op keeps; `held`: also held past backward by a 4-bit matmul
  // (SavedTensor::held).
  void keep_input(std::string_view name, double bytes, bool held) {
    if (bytes <= 0.0) return;
    out_.saved.push_back({name, Bytes(bytes), false, out_.ops.size() - 1, held});
  }
  // The same for an op opened earlier.
  void keep_at(std::size_t op, std::string_view name, double bytes, bool core = false) {
    if (bytes <= 0.0) return;
    out_.saved.push_back({name, Bytes(bytes), core, op});
  }
  [[nodiscard]] std::size_t last() const { return out_.ops.size() - 1; }
  // The tensors kept so far, and forgetting those kept after the first `n` of them.
  [[nodiscard]] std::size_t kept() const { return out_.saved.size(); }
  void forget_kept_after(std::size_t n) { out_.saved.resize(std::min(n, out_.saved.size())); }

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
void norm_kernels(Builder& b, const Architecture& a, const Shape& x, double X);
// Liger's RMSNorm (liger-kernel 0.8.5 ops/rms_norm.py): one kernel forward (reads x, writes y and an
// fp32 rstd per row), one backward (reads dy and x, writes dx over dy; with a trained weight, each
// SM's partial sums of dw reduced by a second kernel). `bytes`: per element of x.
void fused_rms_norm_kernels(Builder& b, const Shape& x, double X, double bytes);

// The GEMM of one linear per GPU.
[[nodiscard]] GemmShape gemm_of(const Architecture& a, const Training& tr, const Linear& l, bool adapted);

[[nodiscard]] AttentionShape attention_of(const Architecture& a, const Training& tr, bool causal, bool cross);

// One tensor-parallel f/g pair per sublayer: each attention's output projection (self and cross)
// and the MLP's down projections together (routed and shared experts are summed first).
// `mlp_reduced` remembers that the block's MLP has its pair.
[[nodiscard]] OpCollective sublayer_collective(Role role, bool& mlp_reduced);

// Megatron-LM's block (megatron_block.cpp).
void megatron_block(const Architecture& a, const Training& tr, Stack stack, BlockOps& out,
                    const std::vector<Linear>* given);

}  // namespace trainplan::model::block_detail
