#pragma once
// Datasheet defaults of the time model: every empirical factor the step-time estimate uses when no
// hardware profile (trainplan calibrate) says better, named and cited. How each was chosen:
// docs/formulas.md, "Time and communication". Never literals inside an expression.

#include "trainplan/core/units.hpp"
#include "trainplan/hardware/collective.hpp"

namespace trainplan::planner {

// A fused attention kernel's efficiency eta(s) = eta_max s / (s + s_half), forward and backward.
struct AttentionCurve {
  double fwd_efficiency = 0.0;
  double bwd_efficiency = 0.0;
  double fwd_seq_half = 0.0;
  double bwd_seq_half = 0.0;
};

struct TimeConventions {
  // ---- Matrix multiplies --------------------------------------------------------------------
  // Maximum achievable matmul FLOPS over the dense BF16 peak, best shape of a brute-force sweep
  // (stas00 ml-engineering @744d01e1 compute/accelerator/README.md MAMF table).
  double mamf_ampere_sxm = 271.2 / 312.0;
  double mamf_ampere_pcie = 252.9 / 312.0;
  double mamf_hopper = 794.5 / 989.0;
  double mamf_blackwell = 1745.0 / 2250.0;
  double mamf_cdna3 = 668.4 / 1300.0;
  // GPUs without a MAMF row (Volta, Ada, CDNA2): the lowest NVIDIA row, rounded down.
  double mamf_unlisted = 0.75;
  // bf16 GEMMs on a GPU without bf16 matrix units (a V100: PyTorch accepts bf16 and cuBLAS runs
  // it on the CUDA cores) reach this share of an fp32 GEMM of the same shape, measured on V100s:
  // 10.65 vs 14.5 TFLOP/s (torch 2.7, 8192^3; zzc0721/torch-performance-test-data issue #140) and
  // 9.6 vs 14.0 (cuBLAS, m = 2048; lablup/mlxcel issue #1654): 0.73 and 0.69, their mean.
  double emulated_bf16_vs_fp32 = 0.71;
  // FP8 GEMMs (cuBLASLt, E4M3 inputs, 16-bit output) reach this share of the bf16 efficiency of
  // the same GPU at their own, doubled peak. Fitted on this project's two calibrated profiles: the
  // fp8 and bf16 curves' best-shape efficiencies, 0.7558 / 0.8119 on an H100 SXM
  // (data/profiles/h100.json) and 0.6949 / 0.7890 on an H200 (h200.json), 0.931 and 0.881: their
  // mean. Held out: the published FP8 runs (data/reference/published-fp8-cp.json).
  double fp8_vs_bf16_gemm_efficiency = 0.906;
  // Block-scaled FP8 GEMMs (MXFP8: an E8M0 scale per 32 elements, which the tensor cores apply
  // inside the MMA) over per-tensor-scaled FP8 GEMMs of the same shapes: Transformer Engine's GEMM
  // profiling of a 4096-hidden layer on a B300, inputs quantized before the timed loop, 6.812 ms
  // per layer for FP8 current scaling against 7.161 ms for MXFP8 (NVIDIA/TransformerEngine
  // @d0067d0d docs/examples/gemm_profiling/gemm_profiling.rst, "Autocast vs Pre-quantized").
  // Transformer Engine runs its 1x128/128x128 blockwise recipe on Blackwell through the same
  // MXFP8 kernels (the same file's note). Held out: Megatron-Bridge's MXFP8 rows against their
  // FP8-CS twins (data/reference/published-fp8-cp.json).
  double mxfp8_vs_fp8_gemm = 6.812 / 7.161;
  // Training GEMMs (NT/TN layouts, bias and activation epilogues, framework overhead) land below
  // the best-shape maximum: an assumption, not a measurement. Checked since on Transformer Engine's
  // B300 GEMM profiling (docs/examples/gemm_profiling/gemm_profiling.rst @d0067d0d: a 4096-hidden
  // layer's bf16 GEMMs at 0.84 of the B200 MAMF row, the datasheet path 2.0 % fast there;
  // tests/planner/test_blackwell_gemm.cpp).
  double training_gemm_fraction = 0.90;
  // A GEMM with a dimension that is not a multiple of 16 bytes (GPT-2's vocabulary of 50,257)
  // keeps this share of the aligned efficiency. Fitted on the GPT-2-XL H200 step profile's GEMM
  // time (data/measurements/h200-2026-11-26/step-profile.json); GPT-2 and GPT-2-medium held out.
  double unaligned_gemm_efficiency = 0.3;
  // Tile of a typical cuBLAS kernel for tile and wave quantization (NVIDIA Matrix Multiplication
  // Background User's Guide 3.1-3.2).
  int gemm_tile_m = 128;
  int gemm_tile_n = 128;
  // K0 of the short-reduction penalty K / (K + K0): below the bf16 K0 this project's calibrated
  // profiles fit (99 on an H100, 120 on an H200: data/profiles), since the MAMF rows the ceiling
  // comes from were themselves measured at K of 1,024 to 13,312.
  double gemm_k0 = 64.0;

  // ---- Memory-bound kernels -----------------------------------------------------------------
  // Achieved fraction of the HBM datasheet bandwidth by streaming kernels: SimuMax's H100 starter
  // config (MooreThreads/SimuMax @160921ca configs/system/h100_nvlink.json, bandwidth
  // efficient_factor 0.85).
  double hbm_efficiency = 0.85;
  // Eager PyTorch elementwise kernels (Hugging Face blocks, op by op) reach this fraction of the
  // streaming bandwidth above: many run on non-contiguous views (rotary on transposed heads) with
  // the unvectorised strided kernel, and small ones never reach full occupancy. Each such kernel
  // also takes at least kernel_floor on the GPU. Fitted on the H200 step profiles' memory-bound
  // kernel time (fit and held-out runs: data/reference/measured-h200-step-profile.json).
  double eager_elementwise_efficiency = 0.62;
  Seconds kernel_floor = Seconds(2.4e-6);
  // Backward of elementwise work (norms, activations, dropout, softmax) over its forward traffic:
  // each backward reads the saved input and the incoming gradient and writes one gradient, where
  // forward read one tensor and wrote one (3 vs 2 passes).
  double elementwise_backward_ratio = 1.5;
  // Passes over an activation tensor (one read or one write each) of Megatron's fused elementwise
  // kernels (apex fused LayerNorm, fused bias-GeLU, bias-dropout-add, scaled masked softmax;
  // Shoeybi et al. 2019 and Korthikanti et al. 2022 Sec. 5). Hugging Face blocks in eager PyTorch
  // are accounted op by op instead (model/block_ops.hpp).
  double fused_norm_passes = 2.0;        // read x, write y
  double fused_residual_passes = 3.0;    // bias-dropout-add: read x and residual, write sum
  double eager_residual_passes = 3.0;    // add: read two, write one
  double dropout_passes = 2.0;           // plus a 1-byte mask written
  double fused_activation_passes = 2.0;  // bias-GeLU: read, write
  double fused_softmax_passes = 2.0;  // scale, mask and softmax in one kernel, 16-bit in and out
  // Kernels of a Megatron block beyond its GEMMs: two fused norms, two bias-dropout-adds, the
  // activation, rotary, the attention (or softmax) kernel and its projections' reshapes.
  double fused_block_kernels = 10.0;
  // Cross-entropy per logit: forward, the fp32 upcast (read 2, write 4) and log-softmax (read 4,
  // write 4); backward, nll_loss's gradient (zero-filled, write 4), log-softmax's (read 4 + 4,
  // write 4) and the cast back (read 4, write 2). Megatron's vocab-parallel cross entropy and
  // torch.nn.functional.cross_entropy (transformers' ForCausalLMLoss upcasts) both work in fp32.
  double loss_bytes_per_logit = 14.0;
  double loss_backward_bytes_per_logit = 22.0;

  // ---- Fused attention kernels (FlashAttention, cuDNN/efficient SDPA) ----------------------
  // Fraction of the dense peak at long sequences, forward and backward (SimuMax's H100 starter
  // config, the same file's sdp_fwd 0.72 and sdp_bwd 0.55; FlashAttention-2 reaches "50-73% of the
  // theoretical maximum FLOPs/s on A100", Dao 2023, arXiv:2307.08691, abstract).
  double flash_fwd_efficiency = 0.72;
  double flash_bwd_efficiency = 0.55;
  // The Triton FlashAttention (flash-attn's flash_attn_triton.py; llm-foundry's attn_impl triton)
  // against FlashAttention-2 on an A100: FlashAttention-2 "is around 1.3-1.5x faster than
  // FlashAttention in Triton in the forward pass and around 2x faster in the backward pass"
  // (Dao 2023, arXiv:2307.08691, Sec. 4.1): the middle of the first range, and the second.
  double triton_fwd_vs_flash = 1.0 / 1.4;
  double triton_bwd_vs_flash = 1.0 / 2.0;
  // An attention kernel written with Ampere's warp-level mma.sync (the flash-attn 2.x package,
  // PyTorch's SDPA flash and efficient kernels, the Triton FlashAttention of 2023) on a GPU whose
  // full tensor rate needs Hopper's warpgroup wgmma or Blackwell's tcgen05 (compute capability 9.0
  // to 11.x; PTX ISA: wgmma needs sm_90a, tcgen05 sm_100a and later): its rate over a native
  // kernel's (cuDNN, FlashAttention-3, Transformer Engine), which flash_*_efficiency and a
  // calibrated profile's cuDNN points describe. "FlashAttention-2 achieving only 35% utilization
  // on the H100 GPU", FlashAttention-3 "75% utilization" (Shah et al. 2024, arXiv:2407.08608,
  // abstract). The same paper's Fig. 5 (forward only, head dim 128, no causal mask, 16k tokens:
  // FlashAttention-2 370 TFLOPs/s, cuDNN 595, FlashAttention-3 648) reads 0.60; the published runs
  // held to it sit between (docs/formulas.md, "Attention"). Measured on an H100; datacenter
  // Blackwell's own share is blackwell_warp_mma_attention_vs_native below.
  double warp_mma_attention_vs_native = 0.35 / 0.75;
  // A fused SDPA kernel handed a materialised mask (transformers' sliding windows, every mask
  // under torch.compile) does the whole s x s work and reads the mask: its time over the same
  // kernel's without causal skipping. Fitted on one run: Mistral-7B LoRA s4096 b1 with full
  // checkpointing on the H200 (data/measurements/h200-2026-11-26/step-profile.json, cuDNN
  // attention 127.9 ms a step against 68.0 ms for the unmasked kernel at the profile's rate).
  // Held out: the Phi-3 and Gemma 3 sliding-window runs, Mistral with Liger, and the three
  // compiled runs (tests/validate/test_h200_step_profile.cpp, test_compile.cpp).
  double explicit_mask_attention_slowdown = 1.76;
  // Sequence length at which a kernel reaches half its long-sequence efficiency: eta(s) = eta_max
  // s / (s + s_half). From the cuDNN 9.19 H200 bf16 CSV (NVIDIA/cudnn-frontend @df73764a benchmark/
  // sdpa_benchmark_training/results/h200_919_only_cudnn/llama3.1_20260227_034703.csv): 0.49 of peak
  // at s = 2k causal and 0.71 at 16k give s_half of ~960 and ~230; their geometric mean.
  double flash_seq_half = 470.0;
  // Datacenter Blackwell (compute capability 10.x: B200, B300, GB200, GB300) runs the native
  // kernels (cuDNN, which Transformer Engine and PyTorch's SDPA pick there) at a smaller share of
  // its doubled peak than Hopper's figures above: the forward waits on the exponential units, the
  // backward on shared-memory traffic, neither of which doubled with the tensor cores (Zadouri et
  // al. 2026, FlashAttention-4, arXiv:2603.05451, Sec. 1-2). Fitted, forward and backward apart,
  // on cuDNN 9.17's causal bf16 training SDPA on a GB200, the NeMo 25.11 container (128 query
  // heads, 8 K/V heads, head dim 128, 2k-32k tokens; NVIDIA/cudnn-frontend @d48a60eb
  // benchmark/sdpa_benchmark_training/artifacts/sdpa_bf16_benchmark_results_NVIDIA_GB200.csv):
  // forward 0.719 with s_half 1330 (every point within 2.7 %), backward 0.604 with s_half 2400
  // (within 9.7 %). Held out: cuDNN 9.19 on a GB200 (64 query heads) and cuDNN 9.13 on a GB300
  // (tests/planner/test_blackwell_attention.cpp).
  AttentionCurve blackwell_flash{0.719, 0.604, 1330.0, 2400.0};
  // warp_mma_attention_vs_native on datacenter Blackwell: PyTorch's FlashAttention-2 kernel over
  // cuDNN's in the same GB200 run, 8k-32k tokens, forward and backward: 0.258-0.279, their mean.
  // Held out: the flash-attn 2.7.4 package on a B200 (the same file's B200 artifact @cb560b92).
  double blackwell_warp_mma_attention_vs_native = 0.266;

  // ---- Collectives ---------------------------------------------------------------------------
  // Plateau bus bandwidth over the per-GPU link rate. NVSwitch: 8xA100 all_reduce 234.9 GB/s of
  // 300 (ml-engineering network/README); ring on 8xH200: 367 of 450 = 0.82.
  double nvswitch_busbw_efficiency = 234.9 / 300.0;
  // Point-to-point copies over NVLink: A100 274 GB/s of 300 (ml-engineering network/README).
  double nvlink_p2p_efficiency = 274.0 / 300.0;
  // PCIe-only nodes: 8x RTX 5090 all_reduce 28 GB/s on PCIe5 x16 (63) (NVIDIA/nccl #1639).
  double pcie_busbw_efficiency = 28.0 / 63.0;
  // AMD xGMI: 8x MI300X all_reduce 312.9 GB/s of 448 (ml-engineering network/README).
  double xgmi_busbw_efficiency = 312.9 / 448.0;
  // NIC line rate reached by NCCL across nodes: 86 GB/s of ~100 on 2 nodes x 8 A100 with 4x HDR
  // (nccl-tests #175).
  double network_efficiency = 0.86;
  // Message sizes below the bandwidth plateau: NCCL's low-latency protocols reach this fraction of
  // the plateau (8xA100: 163 GB/s slope between 1 and 8 MiB vs 235 plateau = 0.69; 8xH200: 268 vs
  // 475 = 0.57; the mean), and the Simple protocol's pipeline fills after this many bytes (8xA100:
  // 44 MB, 8xH200: 24 MB of extra latency-equivalent bytes; ~32 MiB). Both from the all_reduce
  // curves of ml-engineering network/README.
  double small_message_busbw_fraction = 0.63;
  Bytes pipeline_fill_bytes = mib(32.0);
  // NCCL's ring latencies (base, NVLink hop, network hop), Simple protocol (tuning.cc).
  hardware::RingLatency latency;
  // Tree all-reduce: algorithm bandwidth = 0.5 x bus bandwidth, which tree caps at 0.92 of the
  // ring's (NVIDIA/nccl src/graph/tuning.cc).
  double tree_bandwidth_fraction = 0.5 * 0.92;

  // ---- Overlap of communication with compute -----------------------------------------------
  // PyTorch DDP's gradient bucket (bucket_cap_mb = 25, torch.nn.parallel.DistributedDataParallel):
  // the last bucket is reduced after backward ends.
  Bytes ddp_bucket = Bytes(25.0e6);
  // DeepSpeed ZeRO-1/2 reduce bucket (reduce_bucket_size 5e8 elements, 16-bit).
  Bytes deepspeed_bucket = Bytes(5e8 * 2.0);
  // Megatron-LM as benchmarked in Narayanan et al. 2021 and Korthikanti et al. 2022 reduced
  // gradients after the last backward (--overlap-grad-reduce arrived in 2023, Megatron-core 0.3)
  // and did not overlap tensor-parallel communication (Korthikanti Sec. 5 timings).
  bool megatron_overlap_grad_reduce = false;
  // Fraction of tensor-parallel communication hidden behind compute (0: all exposed; torchtitan's
  // async TP is an option, not the default anywhere: Liang et al. 2024, arXiv:2410.06511).
  double tp_overlap = 0.0;
  // Compute that hides a collective runs slower while the collective runs: NCCL's kernels hold one
  // SM per channel (24 of an H100's 132 for an 8-GPU all-gather: NVIDIA developer forums, "Compute-
  // Communication Overlap Causes Severe GEMM Performance Degradation") and share the HBM. Average
  // slowdown of the overlapped compute 18.9 % (max 40 %) over GPT and Llama training steps on A100,
  // H100, MI250 and MI210 (Lee et al. 2025, arXiv:2507.03114, abstract and Sec. 5). Not fitted here.
  double overlap_compute_slowdown = 0.189;

  // ---- Host: issuing kernels from eager PyTorch -----------------------------------------------
  // CPU time per kernel the host spends in forward (Python module code of the Hugging Face block,
  // the dispatcher, autograd recording, the launch), in backward (the autograd engine in C++), and
  // per kernel of a block under torch.utils.checkpoint (non-reentrant: a Python pack hook per saved
  // tensor in forward, the replay driven from Python in backward). A phase takes the longer of its
  // GPU work and its host work. Fitted on phases of the H200 step profiles that the host bounds
  // (Llama-3.1-8B LoRA forward and backward, Llama-2-7B checkpointed forward; the others held out:
  // data/reference/measured-h200-step-profile.json) with this project's kernel counts; a faster or
  // slower CPU moves them.
  Seconds host_per_forward_kernel = Seconds(32e-6);
  Seconds host_per_backward_kernel = Seconds(31e-6);
  Seconds host_per_checkpointed_kernel = Seconds(64e-6);
  // Liger's fused linear cross-entropy is a Python loop over chunks of rows (liger-kernel 0.8.5
  // ops/fused_linear_cross_entropy.py), entered after a host sync (the count of labels not
  // ignored, `.item()`), so the GPU has no queue to hide it: per chunk, the host's work (slices,
  // two or three products, the Triton loss kernel's launch, dtype and capability checks). A chunk
  // takes the longer of it and its GPU work. Fitted on three H200 runs whose head ran with small
  // chunks (Qwen3-0.6B full, 128 chunks of 64 rows; Gemma-2B LoRA, 64 of 64; Llama-3.2-1B full at
  // s1024, 32 of 128: data/reference/measured-h200-liger.json); its other runs held out.
  Seconds liger_host_per_chunk = Seconds(1.4e-3);
  // Per parameter tensor, the Python work of one optimizer step before its kernels run
  // (torch.optim's _init_group and the per-tensor step bookkeeping): foreach and per-tensor
  // loops vs the fused kernel. Fitted on the same step profiles (optimizer phase minus its kernels).
  Seconds optimizer_host_per_tensor = Seconds(24e-6);
  Seconds fused_optimizer_host_per_tensor = Seconds(9e-6);
  // Kernels the per-parameter loop launches per tensor (torch _single_tensor_adam: weight decay,
  // lerp, mul, addcmul, sqrt, divide, add, addcdiv).
  double for_loop_kernels_per_tensor = 8.0;

  // ---- Optimizer kernels ---------------------------------------------------------------------
  // Achieved fraction of the HBM datasheet bandwidth by torch's multi_tensor_apply kernels
  // (foreach ops, fused AdamW), by element width: 16-bit streams reach less than fp32 ones. Fitted
  // on foreach AdamW of the H200 step profiles (Llama-2-7B bf16: 42 B x 6.74 G in 83.9 ms; TinyLlama
  // fp32: 84 B x 1.10 G in 23.4 ms); the fused runs are held out.
  double multi_tensor_bandwidth_fp32 = 0.82;
  double multi_tensor_bandwidth_16bit = 0.70;
  // Arithmetic of the fused AdamW kernel per element (fp32 math, bias corrections, sqrt, divide),
  // in fp32 FLOPs at the GPU's non-tensor fp32 peak: what the fused step takes beyond its bytes.
  // Fitted on the fused runs' residual over their bytes (~1 ps per element on the H200).
  double fused_adam_flops_per_element = 60.0;

  // ---- Optimizer and offload ----------------------------------------------------------------
  // DeepSpeed CPU-Adam: 11.6 B parameters in 8.2 s on one node (deepspeedai/DeepSpeed PR #735).
  double cpu_adam_params_per_s_per_node = 11.6e9 / 8.2;
  // Pinned host-device copies reach this fraction of the PCIe link rate (assumption; calibrate
  // with trainplan-calibrate's membw h2d/d2h).
  double pcie_copy_efficiency = 0.80;
  // Share of the per-micro-batch parameter fetches of parameter offload (ZeRO-Infinity / FSDP
  // CPUOffload) hidden behind compute by prefetching (assumption: published offload runs are far
  // slower than their PCIe volume alone implies; calibrate against a measured run).
  double offload_prefetch_overlap = 0.5;
};

}  // namespace trainplan::planner
