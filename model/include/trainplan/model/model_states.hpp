#pragma once
// Bytes per parameter of the model states (weights, gradients, optimizer), by framework convention.
// The anchors disagree on accounting (reference: ZeRO paper 2+2+12, DeepSpeed's estimator 18/N,
// Megatron 18 or 6+12/d, PyTorch autocast 4+4+8); each convention is one row here.

#include <cstdint>

#include "trainplan/core/modes.hpp"
#include "trainplan/model/architecture.hpp"
#include "trainplan/model/training.hpp"

namespace trainplan::model {

// Bytes per trainable parameter, split by which ZeRO stage shards them.
struct StateBytes {
  double weights = 0;     // working weights held by the model (sharded by ZeRO-3 / FSDP full)
  double grads = 0;       // gradients produced by backward (sharded by ZeRO-2 and up)
  double opt_grads = 0;   // fp32 gradient partition owned by the optimizer (sharded by ZeRO-1 and up)
  double master = 0;      // fp32 master weights owned by the optimizer (sharded by ZeRO-1 and up)
  double optimizer = 0;   // optimizer moments (sharded by ZeRO-1 and up)
  [[nodiscard]] double total() const { return weights + grads + opt_grads + master + optimizer; }
};

// Bytes per parameter on one GPU after sharding over n ranks, by the ZeRO paper's rules
// (Rajbhandari et al. 2019, arXiv:1910.02054, Sec. 5): stage 1 shards the optimizer's states,
// stage 2 also the gradients, stage 3 also the weights. `weights_rest_sharded` marks PyTorch FSDP,
// whose every variant keeps parameters sharded between steps.
struct ShardedBytes {
  double weights = 0;
  double grads = 0;
  double optimizer = 0;  // moments + master weights + fp32 gradient partition
  [[nodiscard]] double total() const { return weights + grads + optimizer; }
};
[[nodiscard]] ShardedBytes shard(const StateBytes& b, Strategy s, double n, bool weights_rest_sharded = false);

// Optimizer moments per trainable parameter. Adafactor's factored moments and GaLore's projected
// ones depend on the shapes: pass the per-parameter average of adafactor_state_elements or
// galore_state_elements.
[[nodiscard]] double optimizer_state_bytes(Optimizer o, Precision p, double shaped_elements_per_param);

// Whether the optimizer's states live in CUDA unified (paged) memory, evicted under pressure and not
// counted by torch.cuda.max_memory_allocated (QLoRA paper, arXiv:2305.14314, Sec. 3).
[[nodiscard]] bool is_paged(Optimizer o);

[[nodiscard]] StateBytes state_bytes(Framework f, Precision p, double optimizer_bytes);

// Stored bytes per quantized weight, scaling constants included (QLoRA, arXiv:2305.14314, Sec. 3:
// NF4 with one fp32 absmax per `block` weights, 4 + 32/64 = 4.5 bits at bitsandbytes' default 64;
// double quantization stores that absmax in 8 bits with one fp32 constant per 256 blocks = 4.127
// bits). LLM.int8 (arXiv:2208.07339): one byte plus one fp32 scale per output row of a
// Linear(in, out).
[[nodiscard]] double quantized_bytes_per_param(Quant q, std::int64_t block, std::int64_t in_features);

// What a QLoRA run's software does that changes the memory, from its source:
// - keeps_input: bitsandbytes before 0.43.2 keeps every 4-bit matmul's input for backward
//   (autograd/_functions.py MatMul4Bit: ctx.tensors = (A, B)); 0.43.2 on keeps only the packed
//   weight (commit 9e753741, PR #1270). litgpt pinned bitsandbytes 0.41 (lit-gpt 8641822) and
//   0.42.0 (pyproject.toml from 2bcb2c3e, March 2024, to d2ed13c3, 2024-12-28: litgpt up to v0.5.4);
//   from v0.5.5 on, 0.44 or later.
// - quantizes_head: lightning Fabric's BitsandbytesPrecision replaces every torch.nn.Linear, the LM
//   head's too (src/lightning/fabric/plugins/precision/bitsandbytes.py module_init_context;
//   litgpt passes no ignore_modules: finetune/lora.py, lit-gpt 8641822 and litgpt 26857050);
//   transformers' bitsandbytes quantizer leaves the output embedding in 16 bits
//   (get_keys_to_not_convert).
// - dequantizes_to_fp16: Fabric's _Linear4bit quantizes a weight cast to fp16
//   (_quantize_weight: weight.to(dtype=torch.half), at lightning 71aed751 and its current source),
//   so each matmul dequantizes to fp16 and casts to the compute dtype: two 16-bit copies at once
//   under bf16.
struct QloraStackTraits {
  bool keeps_input = false;
  bool quantizes_head = false;
  bool dequantizes_to_fp16 = false;
};
// bitsandbytes 0.43.2 as Training::bitsandbytes holds it: the first release whose 4-bit matmul
// keeps no input.
inline constexpr int kBitsandbytesKeepsNoInput = 4302;
// The traits of tr's stack and bitsandbytes release (the hf-peft stack for a method other than
// qlora: nothing is 4-bit).
[[nodiscard]] QloraStackTraits qlora_stack_traits(const Training& tr);

// Bytes per weight of the 16-bit copies alive while one 4-bit matmul runs (the dequantized weight,
// and under a stack that dequantizes to fp16, its cast to a bf16 compute dtype).
[[nodiscard]] double dequantized_bytes_per_weight(const Training& tr);

// Elements of Adafactor's state (Shazeer & Stern 2018, arXiv:1804.04235): a row and a column vector
// per trainable matrix, a full vector per 1-D parameter; no first moment (HF default beta1=None).
[[nodiscard]] std::int64_t adafactor_state_elements(const Architecture& a, const Training& tr);

// Elements of GaLore AdamW's state (galore_torch GaLoreProjector, proj_type std): every block
// linear (m x n) keeps its projection matrix (r x min(m, n)) and AdamW's two moments of the
// projected gradient (max(m, n) x r), r = min(rank, m, n); every other parameter (embeddings, head,
// norms) AdamW's two moments in full. Full fine-tuning only.
[[nodiscard]] std::int64_t galore_state_elements(const Architecture& a, const Training& tr);

}  // namespace trainplan::model
