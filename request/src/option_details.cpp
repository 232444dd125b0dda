// The options' longer explanations with their primary sources (the GUI's tooltips), kept apart
// from the schema that parses them (options.cpp).
#include "option_details.hpp"

#include <string_view>

namespace trainplan::request {
namespace {

// Longer explanations with their primary sources: the GUI's tooltips.
struct Detail {
  std::string_view name;
  const char* text;
};
constexpr Detail kDetails[] = {
    {"frozen-base-fp32",
     "Adapters under mixed precision: keep the frozen base in fp32 (litgpt's bf16-mixed; TRL, "
     "whose ModelConfig loads float32 unless its dtype says otherwise) instead of 16-bit (Hugging "
     "Face + PEFT over a model loaded in 16 bits)."},
    {"method",
     "full: every parameter trains. lora: frozen base, low-rank adapters train (Hu et al. "
     "2021, arXiv:2106.09685). qlora: LoRA over a 4-bit quantised base (Dettmers et al. 2023, "
     "arXiv:2305.14314)."},
    {"objective",
     "sft: one sequence per sample. dpo (Rafailov et al. 2023, arXiv:2305.18290), orpo (Hong et "
     "al. 2024, arXiv:2403.07691), simpo (Meng et al. 2024, arXiv:2405.14734; TRL's CPO): a "
     "chosen and a rejected sequence per sample, run as one batch of 2 x micro-batch sequences "
     "(TRL's DPOTrainer, ORPOTrainer, CPOTrainer). dpo also runs a frozen reference model over "
     "both: a second copy of the weights under full training, the model itself with its adapters "
     "off under LoRA/QLoRA."},
    {"precomputed-reference",
     "DPO with precompute_ref_log_probs (TRL): the reference log-probabilities are computed in "
     "a pass over the data before training, so the steps hold and run no reference model. The "
     "pass itself is not in the step time."},
    {"optimizer-in-backward",
     "torchtune's optimizer_in_bwd (torchtune/training/memory.py register_optim_in_bwd_hooks): "
     "one optimizer per parameter, stepped by a post-accumulate-grad hook as soon as that "
     "gradient is complete, which then frees it; so only one parameter's gradient is alive at a "
     "time instead of all of them. It cannot accumulate gradients over micro-batches."},
    {"precision",
     "fp32; fp16-mixed / bf16-mixed: autocast with fp32 master weights (Micikevicius et al. "
     "2018, arXiv:1710.03740); fp16-true / bf16-true: everything 16-bit. Under the Hugging Face "
     "Trainer the weights are what from_pretrained loaded: without a dtype, fp32 up to transformers "
     "4.57 (bf16: true is then bf16-mixed) and the checkpoint's own dtype from 5.0 (a bf16 checkpoint "
     "without DeepSpeed or FSDP trains as bf16-true); axolotl loads bf16 whenever bf16 is on."},
    {"optimizer",
     "adamw / adam: two fp32 moments; 8-bit variants quantise them (arXiv:2110.02861); "
     "paged: bitsandbytes paged memory (paged-adamw: its 32-bit AdamW, fp32 moments); sgd-momentum: one moment; adafactor: factored "
     "second moment (arXiv:1804.04235); lion: one moment (arXiv:2302.06675), lion-8bit one "
     "1-byte moment; lamb: Adam's moments with a per-layer trust ratio (arXiv:1904.00962); "
     "galore-adamw: AdamW's moments on each block linear's gradient projected to --galore-rank "
     "(arXiv:2403.03507), full fine-tuning on one GPU or DDP."},
    {"galore-rank",
     "The rank GaLore projects each block linear's gradient to: an m x n weight keeps an r x min(m, n) "
     "projection and two max(m, n) x r moments (galore_torch's GaLoreProjector). transformers' "
     "optim_args default is 128, LLaMA-Factory's galore_rank 16."},
    {"trainable",
     "Partial fine-tuning: a full fine-tune of these weights only, every other one frozen "
     "(LLaMA-Factory's finetuning_type freeze, axolotl's unfrozen_parameters). Comma-separated: "
     "decoder layers N or A-B (0-based), embedding, head, and what of those layers trains: all "
     "(the default), attention, mlp, norms, or roles q, k, v, o, gate, up, down, router. Only the "
     "trained weights keep gradients and optimizer states (fp32 under mixed precision, the rest in "
     "16 bits); layers below the lowest trained one keep nothing and run no backward."},
    {"checkpoint-trained-only",
     "Partial fine-tuning under checkpointing as LLaMA-Factory runs it (model_utils/checkpointing.py "
     "get_custom_gradient_checkpointing_func): only the layers with trained weights are checkpointed, "
     "the frozen ones above them keep their activations, those below run no backward. Off: transformers' "
     "checkpointing, which checkpoints every layer and makes the embedding output require a gradient."},
    {"strategy",
     "single: one GPU. ddp: replicated model. zero1/2/3: shard optimizer / +gradients / "
     "+parameters (arXiv:1910.02054). fsdp-*: PyTorch FSDP full shard, grad-op (ZeRO-2-like) "
     "or hybrid (shard in the node, replicate across nodes; arXiv:2304.11277)."},
    {"library",
     "The training library (docs/formulas.md, \"Training libraries\"): hf-trainer, accelerate, "
     "trl, litgpt, torchtune, axolotl, torchtitan, megatron (LM, Core, NeMo), megatron-deepspeed, "
     "deepspeed, llm-foundry. It sets the engine (--framework), TF32, its model code's copies "
     "(litgpt expands grouped K/V to every head), its loss dtype and its adapter layout; what it "
     "does that is not priced yet is said in a note."},
    {"framework",
     "The engine whose conventions hold the model states and the block: pytorch (Hugging "
     "Face/torch), deepspeed (its estimators and buckets), megatron (Megatron-LM's activation "
     "formulas). Defaults to the library's; given alone it also names the library "
     "(pytorch: hf-trainer, deepspeed: deepspeed, megatron: megatron)."},
    {"tf32",
     "fp32 matmuls on the TF32 tensor cores (torch.backends.cuda.matmul.allow_tf32 = True or "
     "torch.set_float32_matmul_precision('high')). PyTorch leaves it off since 1.12, so fp32 "
     "runs at the CUDA-core rate unless the library or the user turns it on."},
    {"liger",
     "Liger's Triton kernels (linkedin/Liger-Kernel), as transformers' Trainer applies them with "
     "use_liger_kernel = True: for the model types Liger supports, RMSNorm, rotary embedding and "
     "SwiGLU/GeGLU each one kernel, and the fused linear cross-entropy, which computes the head's "
     "products and the loss in chunks of rows and never keeps the logits. Expert MLPs stay "
     "transformers'. A model type Liger has no kernels for runs unchanged (a note says so)."},
    {"chunked-loss",
     "torchtune's CEWithChunkedOutputLoss (torchtune/modules/loss/ce_chunked_output_loss.py, the loss of "
     "its recipe configs): the model runs its output projection on 8 chunks of the sequence and the "
     "loss upcasts each chunk to fp32 in turn, so one chunk's fp32 copy exists at a time beside the "
     "saved log-softmax. Off: torch's CrossEntropyLoss over the fp32 logits the model returns "
     "(self.output(h).float()). Checked against torchtune's README table of memory options."},
    {"compile",
     "torch.compile of the model with its loss (Inductor, default mode, no CUDA graphs), as "
     "TrainingArguments' torch_compile, axolotl's torch_compile, torchtune's compile and "
     "torchtitan's compile do it: each norm, rotary embedding and gated activation one Triton "
     "kernel each way, the cross-entropy as two reductions keeping the logits' fp32 copy (no "
     "log-softmax), one 16-bit copy of an input for all the linears reading it, no cast kernels of "
     "their own. transformers' models then build an explicit causal mask, which SDPA's kernel "
     "reads and cannot skip above the diagonal. Compilation time itself is not priced."},
    {"tp",
     "Tensor-parallel degree: splits every layer's matrices (Shoeybi et al. 2019, "
     "arXiv:1909.08053). Must divide the attention heads."},
    {"pp",
     "Pipeline-parallel degree: splits the layers into stages (1F1B schedule, Narayanan et al. "
     "2021, arXiv:2104.04473)."},
    {"pp-virtual",
     "Interleaved model chunks per pipeline stage: a smaller bubble for more "
     "point-to-point traffic."},
    {"library-version",
     "The traits each library record holds are its newest release's (docs/formulas.md, the library "
     "table); an older release changes what differs: litgpt up to 0.5.4 pinned bitsandbytes 0.42.0 "
     "(pyproject.toml; --bitsandbytes still wins) and its LoRA/adapter models returned the LM head's "
     "chunks before Gemma 2's final logit soft-capping (litgpt/lora.py; soft-capped per chunk from "
     "v0.5.5, commit 17a58dfa). torchtitan up to 0.2.1 copied grouped keys and values up to the query heads "
     "before SDPA (repeat_kv; SDPA's enable_gqa from v0.2.2), and before 0.1.0 its training.compile left the "
     "loss eager (train.py; compiled with the model from commit bbb1b616). lit-gpt 0.1.0 (commit 8641822, "
     "October 2023) ran its RMSNorm in the input's dtype and padded the LoRA q/k/v update whatever was adapted."},
    {"previous-share",
     "litgpt's finetune scripts keep `logits` in a local, and with it the previous micro-batch's "
     "autograd graph, until the next forward returns; bitsandbytes before 0.43.2 stores each 4-bit "
     "matmul's input on that graph (MatMul4Bit ctx.tensors, freed by 0.43.2's commit 9e753741), so "
     "the previous micro-batch's layer inputs are alive as the next forward ends. With padded "
     "variable-length data the previous micro-batch is often shorter than the longest (a share "
     "below 1); 0 prices the first micro-batch (lit-gpt 8641822 finetune/lora.py runs the longest sample first)."},
    {"quant-block",
     "QLoRA: weights per fp32 absmax constant in bitsandbytes' 4-bit blocks (default 64: "
     "4 + 32/64 = 4.5 bits per weight; QLoRA, arXiv:2305.14314)."},
    {"mtp-layers",
     "Multi-token prediction (DeepSeek-V3, arXiv:2412.19437 Sec. 2.2), as Megatron-Core's "
     "--mtp-num-layers trains it: each module adds a block, a 2h x h projection, two norms "
     "and one more pass through the shared output head and a loss, on the last pipeline stage."},
    {"expert-parallel",
     "Mixture of experts: spread the experts over this many data-parallel ranks, each holding "
     "1/n of them; tokens travel to their experts by all-to-all (DeepSpeed-MoE, "
     "arXiv:2201.05596). Must divide the experts and the data-parallel degree."},
    {"moe-capacity-factor",
     "Megatron-Core's --moe-expert-capacity-factor: each expert takes at most "
     "ceil(t k / E x F) of the t tokens a rank routes (Fedus et al. 2021, Switch Transformer, "
     "arXiv:2101.03961, Sec. 2.2); under F = 1 the surplus of a balanced router is dropped, so "
     "the experts' GEMMs, activations and all-to-alls shrink. 0 (the default) is dropless."},
    {"moe-pad-to-capacity",
     "Megatron-Core's --moe-pad-expert-input-to-capacity: every expert multiplies exactly its "
     "capacity, padded, and the all-to-alls carry the padding. Needs --moe-capacity-factor."},
    {"sequence-parallel",
     "With TP: shard norms and dropout along the sequence (Korthikanti et al. 2022, "
     "arXiv:2205.05198)."},
    {"cp",
     "Context parallelism: each sequence split over N ranks (2N chunks, load-balanced for causal "
     "masks), every activation a rank keeps of seq/N tokens, the keys and values exchanged as "
     "--cp-comm says; the N ranks reduce gradients with the data-parallel ones. Megatron-Core's "
     "--context-parallel-size, torchtitan's context_parallel_degree. plan searches it where each "
     "rank keeps at least 4,096 tokens of a sequence."},
    {"cp-comm",
     "ring (default; Megatron-Core's p2p): each rank's K/V chunk goes round the ring behind the "
     "attention blocks (Liu et al. 2023, arXiv:2310.01889); all-gather: K/V gathered before "
     "attention (Llama 3, arXiv:2407.21783 Sec. 3.3.2; torchtitan's default rotate method); "
     "all-to-all: Q, K, V re-split by heads (DeepSpeed-Ulysses, arXiv:2309.14509), the heads "
     "divisible by N."},
    {"fp8",
     "FP8 training of the blocks' linear layers (forward, input and weight gradients at the FP8 "
     "peak); attention, norms, embedding, head and router stay 16-bit. Transformer Engine keeps an "
     "FP8 copy of each weight (and its transpose before Blackwell) and saves each linear's input in "
     "FP8; torchao keeps the 16-bit ones and casts each operand again in backward, in eager kernels "
     "(torch.compile, which fuses them, is not modelled). te-mxfp8 needs SM 10.x; te-blockwise "
     "Hopper or newer (DeepSeek-V3, arXiv:2412.19437 Sec. 3.3)."},
    {"fp8-param-gather",
     "The block linears' parameters all-gathered in FP8, one byte each instead of two: "
     "Megatron-Core's --fp8-param-gather (with the distributed optimizer or FSDP) also keeps them "
     "as FP8 tensors, without their 16-bit copy or a separate weight cache; torchao's "
     "enable_fsdp_float8_all_gather (FSDP2, tensorwise scaling only) casts each shard before the "
     "gather. Gradients are reduced in 16 bits either way."},
    {"tp-comm-overlap",
     "Megatron-Core with Transformer Engine's userbuffers: each tensor-parallel all-gather and "
     "reduce-scatter split into TP chunks pipelined with the GEMM it feeds (Wang et al. 2022, "
     "arXiv:2105.05720): the first chunk waits, the rest hides behind the layer's GEMMs of the same "
     "pass as far as they last. Needs --sequence-parallel."},
    {"micro-batch",
     "Sequences per GPU per forward/backward. Activations grow with it."},
    {"grad-accum",
     "Micro-batches per optimizer step: a larger global batch at the same memory."},
    {"seq",
     "Sequence length in tokens."},
    {"tokens",
     "Training tokens, e.g. 300B or 2T: the banner shows how long they take at this "
     "throughput (planner::time_to_train). Empty: not shown."},
    {"checkpointing",
     "none; selective: recompute the attention core; full: keep only each block's input "
     "and recompute the block (arXiv:2205.05198, arXiv:1604.06174); full-offload: keep those "
     "inputs in host memory, copied over PCIe behind each block's compute (ZeRO-R, "
     "arXiv:1910.02054)."},
    {"attention",
     "flash / sdpa: no s x s score matrix kept; eager: the Hugging Face eager path keeps "
     "scores and softmax (s^2 per head)."},
    {"offload",
     "optimizer: optimizer state and step on the CPU (ZeRO-Offload, arXiv:2101.06840); "
     "optimizer+params: parameters too (ZeRO-Infinity, arXiv:2104.07857)."},
    {"lora-rank",
     "LoRA rank r: each adapted Linear(in, out) gains r (in + out) trainable parameters."},
    {"lora-alpha",
     "LoRA scaling alpha (alpha / r scales the update); no effect on memory."},
    {"lora-dropout",
     "Dropout on each adapter's input; when positive each adapted linear keeps a "
     "dropped-out input copy for backward."},
    {"lora-targets",
     "Comma-separated roles (q,k,v,o,gate,up,down,lm_head), the model's module names, or "
     "all-linear."},
    {"quant",
     "QLoRA base weights: nf4, nf4 with double quantisation, fp4, or int8 "
     "(arXiv:2305.14314)."},
    {"optimizer-impl",
     "How the optimizer step runs: default (the framework's own: torch foreach on CUDA, "
     "DeepSpeed FusedAdam, CPU Adam when offloaded), foreach, fused (AdamW(fused=True)), "
     "for-loop, deepspeed-fused, deepspeed-cpu. Changes the step's time and its transient "
     "memory (foreach holds sqrt(v) for every parameter)."},
    {"fsdp-version",
     "1: FullyShardedDataParallel, one flat parameter per unit, gathered straight into it. 2: "
     "fully_shard (FSDP2), per-parameter shards gathered through one flat buffer and copied out on "
     "the compute stream, gradients copied into one flat reduce-scatter input: one unit's gathered "
     "bytes and its gradients in the reduce dtype more at a time, and those copies' time; "
     "torchtitan reduces in fp32. torchtitan and torchtune always run FSDP2; accelerate's and "
     "axolotl's fsdp_version and the Trainer's fsdp_config version say which. transformers' "
     "Trainer runs FSDP2 when fsdp_config leaves the version out after its PR #45640 (April "
     "2026), FSDP1 before; left out, 1 is answered."},
    {"hybrid-shard",
     "Hybrid sharding shards the parameters, gradients and optimizer states over N ranks and "
     "replicates that group over the other data-parallel ranks: the gathers and reduce-scatters "
     "run inside a group, an all-reduce of each rank's shard across the groups. PyTorch's FSDP "
     "builds one group per node for HYBRID_SHARD unless given a device mesh; torchtitan's "
     "data_parallel_shard_degree, accelerate's parallelism_config_dp_shard_size (with a replicate "
     "size above 1) and DeepSpeed MiCS's mics_shard_size set N (read from their files). N must "
     "divide the data-parallel ranks."},
    {"reshard-after-forward",
     "PyTorch's fully_shard takes reshard_after_forward as a bool or a group size N. After each "
     "unit's forward every rank copies its 1/N of the gathered parameters (in the gathered dtype) "
     "and frees the rest; backward all-gathers the unit from those copies over N consecutive "
     "ranks, so with N = GPUs per node the backward gathers stay on NVLink while the copies of "
     "every unit (the blocks' parameters / N) are held from forward to backward. N must divide "
     "the shard group; 1 keeps every unit gathered (False), the group's size is True. Not with "
     "tensor parallelism (torch: resharding to a smaller mesh with TP is not supported). "
     "composer (llm-foundry's fsdp_config under FSDP_VERSION=2) passes it through; accelerate "
     "and torchtitan take only a bool."},
    {"fsdp-wrap",
     "block: one FSDP unit per transformer block (only one block gathered at a time); none: "
     "the whole model is one unit."},
};

}  // namespace

void add_option_details(std::vector<Option>& all) {
  for (const Detail& e : kDetails)
    for (Option& o : all)
      if (o.name == e.name) o.details = e.text;
}

std::string when_omitted(const Option& o, unsigned cmd) {
  const bool by_fit = o.searched == Searched::by_fit_and_plan && (cmd == command::fit || cmd == command::plan);
  if (o.searched == Searched::by_fit_and_plan && (cmd == command::estimate || cmd == command::explain) &&
      o.default_text.starts_with("estimate: "))
    return "default " + o.default_text.substr(10);
  const bool by_plan = o.searched != Searched::no && cmd == command::plan;
  if (by_fit || by_plan) return "searched when omitted";
  if (!o.default_text.empty() && o.kind != OptionKind::flag) return "default " + o.default_text;
  return {};
}

std::string option_help(const Option& o, unsigned cmd) {
  std::string s = o.help;
  if (o.kind == OptionKind::choice) {
    std::string list;
    for (const auto& c : o.choices) list += (list.empty() ? "" : " | ") + c;
    s += ": " + list;
  }
  if (const std::string omitted = when_omitted(o, cmd); !omitted.empty()) s += " (" + omitted + ")";
  if (!o.applies_text.empty()) s += "; " + o.applies_text;
  return s;
}

}  // namespace trainplan::request
