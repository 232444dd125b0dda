#pragma once
// Compute time of one transformer block on one GPU for one micro-batch: GEMMs priced by a roofline
// with tile, wave and short-reduction efficiency, attention kernels by sequence length, and the
// memory-bound elementwise work at HBM bandwidth. Constants come from a hardware profile when one
// is given, else from TimeConventions. Derivations: docs/formulas.md, "Time and communication".

#include <cstdint>
#include <string_view>
#include <vector>

#include "trainplan/core/units.hpp"
#include "trainplan/hardware/gpu.hpp"
#include "trainplan/hardware/profile.hpp"
#include "trainplan/model/architecture.hpp"
#include "trainplan/model/block_ops.hpp"
#include "trainplan/model/lora.hpp"
#include "trainplan/model/sdpa.hpp"
#include "trainplan/model/training.hpp"
#include "trainplan/planner/time_conventions.hpp"

namespace trainplan::planner {

// The GPU as the compute model sees it for one matmul dtype, resolved once.
struct ComputeDevice {
  FlopsPerSecond peak;             // dense datasheet peak of the matmul dtype
  double gemm_efficiency_max = 0;  // best-shape efficiency for training GEMMs (defaults only)
  int sm_count = 0;
  int tile_m = 128;
  int tile_n = 128;
  double k0 = 64.0;
  BytesPerSecond hbm;          // achieved streaming bandwidth
  BytesPerSecond elementwise;  // streaming bandwidth of elementwise kernels (profile, else hbm)
  Seconds kernel_floor;        // shortest time a kernel takes (profile's launch interval, else tc)
  double element_bytes = 2.0;  // bytes of the matmul dtype
  double unaligned_efficiency = 1.0;  // share kept by a GEMM with a dimension off 16-byte alignment
  AttentionCurve flash;  // the native fused kernel's on this GPU (TimeConventions)
  const hardware::HardwareProfile* profile = nullptr;  // measured GEMM/attention/HBM, or null
  int cuda_sm = 0;  // CUDA compute capability major*10+minor (the SDPA kernel); 0: not NVIDIA
  // SIMT fp32 (FFMA): what SDPA's math fallback multiplies at, float32 matmul precision "highest"
  FlopsPerSecond fp32_peak;
  FlopsPerSecond fp8_peak;  // dense FP8 tensor-core peak: the block's linears under an FP8 recipe
  std::string_view gemm_dtype = "bf16";
};

// The device an FP8 recipe's GEMMs run on: d's GPU at its FP8 peak, the profile's fp8 curve (or
// the datasheet efficiency scaled by tc.fp8_vs_bf16_gemm_efficiency), one-byte operands; a
// block-scaled recipe's kernels (MXFP8, and TE's blockwise recipe on Blackwell, which runs them)
// at tc.mxfp8_vs_fp8_gemm of that rate.
[[nodiscard]] ComputeDevice fp8_device(const ComputeDevice& d, const TimeConventions& tc,
                                       Fp8Recipe recipe = Fp8Recipe::te_current);

// The per-GPU (K, N) of a linear under tensor parallelism (model/block_ops.hpp).
using model::LinearShard;
using model::linear_shard;

// Megatron runs fused elementwise kernels; Hugging Face blocks in eager PyTorch do not.
[[nodiscard]] bool fused_kernels(Framework f);

// The attention a block runs (model/sdpa.hpp): chosen once, for memory, time and the replay.
using model::AttentionRun;
using model::attention_run;

// The share of a native attention kernel's rate the one `run` executes reaches on a GPU of compute
// capability `cuda_sm` under `framework`: TimeConventions::warp_mma_attention_vs_native (on
// datacenter Blackwell blackwell_warp_mma_attention_vs_native) for a kernel of Ampere's
// instruction set on Hopper or datacenter Blackwell, else 1.
[[nodiscard]] double warp_mma_attention_share(const model::AttentionRun& run, Framework framework, int cuda_sm,
                                              const TimeConventions& tc);

// The GPU's CUDA compute capability as major*10+minor ("9.0" -> 90); 0 for AMD or an unknown GPU.
[[nodiscard]] int cuda_sm(const hardware::GpuSpec& g);
// Compute capability 10.x and 11.x (B200, B300, GB200, GB300): tcgen05 tensor instructions, whose
// attention kernels TimeConventions prices apart (the RTX Blackwells, 12.x, have neither).
[[nodiscard]] bool datacenter_blackwell(int cuda_sm);

// MAMF / dense peak of this GPU (TimeConventions rows by architecture and form factor).
[[nodiscard]] double mamf_efficiency(const hardware::GpuSpec& g, const TimeConventions& tc);

// `tf32`: fp32 matmuls on the TF32 tensor cores (model::Training::tf32).
[[nodiscard]] ComputeDevice compute_device(const hardware::GpuSpec& g, Precision p, bool tf32,
                                           const hardware::HardwareProfile* profile,
                                           const TimeConventions& tc);

// Bytes the loss moves per logit each way: the fp32 cross-entropy's passes (TimeConventions), or a
// fused kernel's (model::OpListVariant::fused_loss: forward reads the logits, backward reads them
// and writes their gradient, in the compute dtype).
struct LossBytes {
  double forward = 0.0;
  double backward = 0.0;
};
[[nodiscard]] LossBytes loss_bytes(const model::Architecture& a, const model::Training& tr,
                                   const TimeConventions& tc);

// Efficiency (fraction of the dense peak) of `count` back-to-back (M x K)(K x N) products:
// eta_max * tile(M, N) * wave(M, N, count) * K / (K + K0). NVIDIA Matrix Multiplication
// Background User's Guide 3.1-3.2.
[[nodiscard]] double gemm_efficiency(const ComputeDevice& d, std::int64_t m, std::int64_t n,
                                     std::int64_t k, double count);

// Roofline: max(2 M N K count / (peak eta), (M K + K N + M N) count bytes / HBM).
// Williams, Waterman & Patterson 2009 (CACM 52(4)), roofline model.
[[nodiscard]] Seconds gemm_time(const ComputeDevice& d, std::int64_t m, std::int64_t n,
                                std::int64_t k, double count = 1.0);

// Streaming work: bytes / achieved HBM bandwidth (TimeConventions::hbm_efficiency).
[[nodiscard]] Seconds memory_bound_time(const ComputeDevice& d, Bytes traffic);

// Fused attention kernel efficiency at sequence length s: eta_max s / (s + s_half)
// (TimeConventions::flash_*), or the profile's measured fit.
[[nodiscard]] double attention_efficiency(const ComputeDevice& d, bool backward, std::int64_t seq,
                                          bool causal = false, std::int64_t head_dim = 0);

// One block's linears and LoRA adapters, resolved once per architecture (and LoRA targets).
struct BlockShape {
  model::Stack stack = model::Stack::decoder;
  std::vector<model::Linear> linears;
  std::vector<bool> adapted;  // per linear: carries a LoRA adapter
  bool causal = true;         // self-attention masked (decoders)
  bool cross_attention = false;
};

[[nodiscard]] BlockShape block_shape(const model::Architecture& a, model::Stack stack,
                                     const model::LoraConfig* lora);

// Parameters of the block's linears held by one GPU (tensor-parallel shard; the router whole).
[[nodiscard]] double block_parameters_per_gpu(const BlockShape& shape, int tp);
// The same averaged over a stack's kinds of layer (its main block is the shape's; another kind
// differs by its GEMMs' weights).
[[nodiscard]] double stack_parameters_per_gpu(const BlockShape& shape, const model::StackOps& ops, int tp);

// Time of one block for one micro-batch on one GPU (tensor-parallel shard), communication excluded.
struct BlockCompute {
  Seconds forward;              // GEMMs, attention, elementwise
  Seconds backward;             // activation and weight gradients
  Seconds attention_forward;    // the attention core (what selective checkpointing recomputes)
  Seconds gemm_forward;         // of forward: the linear layers' GEMMs
  Seconds gemm_backward;        // of backward: theirs (input and weight gradients)
  Seconds elementwise_forward;  // of forward: memory-bound work (incl. QLoRA dequantization)
  Seconds elementwise_backward;  // of backward: memory-bound work
  double launches_forward = 0;   // kernels launched by forward (what the host must issue)
  double launches_backward = 0;  // kernels launched by backward
  // Collectives a layer brings under model parallelism, per pass (model::LayerCollectives): the
  // tensor-parallel f/g pairs and the expert-parallel all-to-alls.
  double tensor_parallel_pairs = 0;
  double expert_all_to_alls = 0;
  // What checkpointing replays: forward and its attention core, of a layer that runs a backward
  // (partial fine-tuning's layers below every trained one are not replayed).
  Seconds replayed_forward;
  Seconds replayed_attention;
  // What torchtitan's per-op policy replays: the forward less the ops whose outputs it saves
  // (model::op_sac_saved).
  Seconds replayed_op_sac;
  // Kernels of forward in a block checkpointing wraps (launches_forward, or 0 for a layer it
  // leaves alone): what the host issues again in backward.
  double launches_replayed = 0;
  // Scaled and summed field by field (the average over a stack's kinds of layer).
  [[nodiscard]] BlockCompute operator*(double k) const {
    return {forward * k,          backward * k,          attention_forward * k,    gemm_forward * k,
            gemm_backward * k,       elementwise_forward * k, elementwise_backward * k, launches_forward * k, launches_backward * k,
            tensor_parallel_pairs * k, expert_all_to_alls * k, replayed_forward * k, replayed_attention * k,
            replayed_op_sac * k, launches_replayed * k};
  }
  [[nodiscard]] BlockCompute operator+(const BlockCompute& o) const {
    return {forward + o.forward,
            backward + o.backward,
            attention_forward + o.attention_forward,
            gemm_forward + o.gemm_forward,
            gemm_backward + o.gemm_backward,
            elementwise_forward + o.elementwise_forward,
            elementwise_backward + o.elementwise_backward,
            launches_forward + o.launches_forward,
            launches_backward + o.launches_backward,
            tensor_parallel_pairs + o.tensor_parallel_pairs,
            expert_all_to_alls + o.expert_all_to_alls,
            replayed_forward + o.replayed_forward,
            replayed_attention + o.replayed_attention,
            replayed_op_sac + o.replayed_op_sac,
            launches_replayed + o.launches_replayed};
  }
  [[nodiscard]] Seconds recompute(Checkpointing c) const {
    switch (c) {
      case Checkpointing::none:
        return Seconds(0.0);
      case Checkpointing::selective:
        return replayed_attention;
      case Checkpointing::full:
      case Checkpointing::full_offload:
        return replayed_forward;
      case Checkpointing::selective_op:
        return replayed_op_sac;
    }
    return Seconds(0.0);
  }
};

[[nodiscard]] BlockCompute block_compute(const model::Architecture& a, const BlockShape& shape,
                                         const model::Training& tr, const ComputeDevice& d,
                                         const TimeConventions& tc);
// The same from the stack's op list for tr on d's GPU (model::stack_ops with tr.cuda_sm = d.cuda_sm).
[[nodiscard]] BlockCompute block_compute(const BlockShape& shape, const model::StackOps& ops,
                                         const model::Training& tr, const ComputeDevice& d,
                                         const TimeConventions& tc);

// The LM head with its loss (last pipeline stage) and the embedding (first stage), one
// micro-batch on one GPU.
struct EdgeCompute {
  Seconds head_forward;
  Seconds head_backward;
  Seconds embedding_forward;
  Seconds embedding_backward;
  Seconds head_memory_bound;       // of head forward + backward: the loss over the vocabulary
  Seconds embedding_memory_bound;  // of embedding forward + backward
  // Kernels launched, forward and backward: the final norm, head and loss (last stage), and the
  // embedding (first stage).
  double head_launches_forward = 0;
  double head_launches_backward = 0;
  double embedding_launches_forward = 0;
  double embedding_launches_backward = 0;
  // A head whose loss loop the host drives chunk by chunk after a sync (Liger's fused linear
  // cross-entropy): the host's time for it, which the GPU's queue cannot hide (0 otherwise); the
  // evaluator adds what of it exceeds head_forward to the forward's host-bound excess.
  Seconds head_host_synchronized;
};

[[nodiscard]] EdgeCompute edge_compute(const model::Architecture& a, const model::Training& tr,
                                       const ComputeDevice& d, const TimeConventions& tc);
// The same with the edges' op lists given (model::ModelOps::embedding and ::head).
[[nodiscard]] EdgeCompute edge_compute(const model::Architecture& a, const model::Training& tr,
                                       const ComputeDevice& d, const TimeConventions& tc,
                                       const model::BlockOps& embedding, const model::BlockOps& head);



}  // namespace trainplan::planner
