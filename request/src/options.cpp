// The option schema: every option of fit, estimate, plan and the GUI, spelt, parsed, checked and
// documented once (request.hpp).
#include "trainplan/model/activations.hpp"
#include "trainplan/model/library.hpp"
#include "option_builders.hpp"
#include "option_details.hpp"

namespace trainplan::request {
namespace {

using namespace option_schema;

bool adapters(const Request& r, unsigned /*cmd*/) { return r.training.method != Method::full; }

// --precision: its dtypes, and fp8 or fp8-RECIPE for bf16-mixed with an FP8 recipe (the
// library's, or the one named).
Option precision_option() {
  Option precision = choice<Precision>(
      describe("precision", "PRECISION", "Precision", "method",
               "weights, compute and gradient precision; fp8 or fp8-RECIPE: bf16-mixed with the block's "
               "linears in FP8 (--fp8)",
               "bf16-mixed where the GPU has bf16 tensor cores, else fp16-mixed"),
      [](auto& r) -> auto& { return r.training.precision; });
  precision.parse = [n = precision.name, plain = precision.parse](Request& r, std::string_view value) {
    const std::string_view t = trim(value);
    if (t != "fp8" && t.rfind("fp8-", 0) != 0) return plain(r, value);
    r.training.precision = Precision::bf16_mixed;
    r.fp8_library_default = t == "fp8";
    if (t != "fp8") r.training.fp8 = parse_choice<Fp8Recipe>(n, t.substr(4));
    if (r.training.fp8 == Fp8Recipe::none && t != "fp8")
      bad(n, "'fp8-none' names no FP8 recipe; give bf16-mixed, fp8 or fp8-RECIPE");
  };
  precision.choices.emplace_back("fp8");
  for (const auto& [recipe, name] : EnumTable<Fp8Recipe>::kEntries)
    if (recipe != Fp8Recipe::none) precision.choices.push_back("fp8-" + std::string(name));
  return precision;
}

std::vector<Option> model_and_method() {
  std::vector<Option> v;
  Option m = text(describe("model", "MODEL", "Model", "model",
                           "catalogue name, Hugging Face id, size alias (13b) or config.json path", ""),
                  [](auto& r) -> auto& { return r.model; });
  m.positional = true;
  v.push_back(m);
  Option c = text(describe("cluster", "CLUSTER", "Cluster", "cluster",
                           "4xA100-80GB, A100-80GB, 2x8xH100-80GB, a family (A100) or a cluster JSON", ""),
                  [](auto& r) -> auto& { return r.cluster_spec; });
  c.positional = true;
  v.push_back(c);
  v.push_back(choice<Method>(describe("method", "METHOD", "Method", "method", "full fine-tuning or adapters",
                                      "full"),
                             [](auto& r) -> auto& { return r.training.method; }));
  v.push_back(precision_option());
  v.push_back(choice<Fp8Recipe>(
      describe("fp8", "RECIPE", "FP8 recipe", "method",
               "run the block's linear layers in FP8: te-delayed | te-current | te-mxfp8 | te-blockwise "
               "(Transformer Engine) | torchao-tensorwise | torchao-rowwise | torchao-rowwise-gw-hp",
               "none"),
      [](auto& r) -> auto& { return r.training.fp8; }));
  v.push_back(applies(flag(describe("fp8-param-gather", "", "FP8 all-gather", "method",
                                    "all-gather the block linears' parameters in FP8 (Megatron's "
                                    "--fp8-param-gather; torchao's FSDP2 float8 all-gather)",
                                    "off"),
                           [](auto& r) -> auto& { return r.training.fp8_param_gather; }),
                      [](const Request& r, unsigned /*cmd*/) { return r.training.fp8 != Fp8Recipe::none; },
                      "with an FP8 recipe (--fp8)"));
  v.push_back(choice<Optimizer>(describe("optimizer", "OPTIMIZER", "Optimizer", "method", "optimizer", "adamw"),
                                [](auto& r) -> auto& { return r.training.optimizer; }));
  v.push_back(applies(integer(describe("galore-rank", "R", "GaLore rank", "method",
                                       "rank GaLore projects each block linear's gradient to", "128"),
                              1, 1 << 20, [](auto& r) -> auto& { return r.training.galore_rank; }),
                      [](const Request& r, unsigned /*cmd*/) { return r.training.optimizer == Optimizer::galore_adamw; },
                      "with --optimizer galore-adamw"));
  v.push_back(choice<OptimizerImpl>(
      describe("optimizer-impl", "IMPL", "Optimizer impl.", "method", "how the optimizer step runs",
               "the library's for torch's AdamW: fused for hf-trainer and trl (transformers 4.54 on), axolotl, "
               "torchtune and torchtitan; else the framework's own (torch foreach on CUDA)"),
      [](auto& r) -> auto& { return r.training.optimizer_impl; }));
  v.push_back(choice<Library>(describe("library", "LIBRARY", "Library", "method",
                                       "the training library that runs the job: its kernels, loss, dtype "
                                       "conventions and defaults",
                                       "hf-trainer, or what --framework or a --from file names"),
                              [](auto& r) -> auto& { return r.training.library; }));
  v.push_back(applies(
      release(describe("library-version", "VERSION", "Library release", "method",
                       "the training library's release, where its traits changed: litgpt up to 0.5.4 pinned "
                       "bitsandbytes 0.42.0 and ran adapters' chunked LM head without the final logit "
                       "soft-capping; torchtitan up to 0.2.1 copied grouped K/V, before 0.1.0 left the loss eager "
                       "under compile; llm-foundry up to 0.9.1 left expandable segments off",
                       "current: the newest release read"),
              model::package_release, "library", model::kPackageReleaseForm,
              [](auto& r) -> auto& { return r.training.library_version; }, model::package_release_text),
      [](const Request& r, unsigned) { return model::has_versioned_traits(r.training.library); },
      "with --library litgpt, torchtitan or llm-foundry"));
  v.push_back(choice<Framework>(describe("framework", "FRAMEWORK", "Framework", "method",
                                         "the engine whose accounting holds the model states and the block; "
                                         "alone, it names the library too (pytorch: hf-trainer)",
                                         "the library's"),
                                [](auto& r) -> auto& { return r.training.framework; }));
  v.push_back(release(
      describe("transformers", "VERSION", "transformers", "method",
               "Hugging Face transformers release whose model code runs (what a family passes to SDPA, how MoE "
               "experts run)",
               "5.24"),
      model::transformers_release, "transformers", model::kTransformersReleaseForm,
      [](auto& r) -> auto& { return r.training.transformers; }, model::transformers_release_text));
  v.push_back(applies(integer(describe("mtp-layers", "N", "MTP modules", "method",
                                       "multi-token prediction modules trained with the model", "0"),
                              0, 16, [](auto& r) -> auto& { return r.mtp_layers; }),
                      [](const Request& r, unsigned /*cmd*/) { return r.training.framework == Framework::megatron; },
                      "with --framework megatron (transformers' models have none)"));
  return v;
}

// What the GPU runs of the library's kernels (TF32 matmuls, Liger's kernels, torch.compile) and how
// its launch sets PyTorch's allocator (expandable segments).
std::vector<Option> kernel_options() {
  std::vector<Option> v;
  v.push_back(applies(flag(describe("tf32", "", "TF32", "method",
                                    "fp32 matmuls on TF32 tensor cores (torch.backends.cuda.matmul.allow_tf32)",
                                    "the library's: off, PyTorch's default"),
                           [](auto& r) -> auto& { return r.training.tf32; }),
                      [](const Request& r, unsigned /*cmd*/) { return r.training.precision == Precision::fp32; },
                      "with --precision fp32"));
  v.push_back(applies(flag(describe("liger", "", "Liger kernels", "method",
                                    "Liger's kernels patched into transformers' model (the Trainer's "
                                    "use_liger_kernel): fused RMSNorm, rotary, SwiGLU/GeGLU and the fused linear "
                                    "cross-entropy, as Liger applies them to the model type",
                                    "off"),
                           [](auto& r) -> auto& { return r.training.liger; }),
                      [](const Request& r, unsigned /*cmd*/) {
                        return r.training.framework != Framework::megatron &&
                               model::runs_transformers_models(r.training.library);
                      },
                      "with a library that runs transformers' modeling files (hf-trainer, accelerate, trl, axolotl, "
                      "deepspeed), not under --framework megatron"));
  v.push_back(applies(flag(describe("compile", "", "torch.compile", "method",
                                    "the model and its loss compiled with torch.compile (Inductor): fused norms, "
                                    "rotary, activations and loss, fewer saved tensors; transformers' models then "
                                    "hand SDPA an explicit causal mask",
                                    "off (eager)"),
                           [](auto& r) -> auto& { return r.training.compile; }),
                      [](const Request& r, unsigned /*cmd*/) { return r.training.framework != Framework::megatron; },
                      "with --framework pytorch or deepspeed (Megatron's own fused kernels are priced as they are)"));
  v.push_back(on_off(describe("expandable-segments", "on|off", "Expandable segments", "memory",
                              "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: the caching allocator grows one "
                              "segment per stream, so little of its cache is stranded",
                              "the library's: on for torchtitan (its run_train.sh) and llm-foundry from 0.10.0, "
                              "else off"),
                     [](auto& r) -> auto& { return r.training.expandable_segments; }));
  v.push_back(applies(
      on_off(describe("chunked-loss", "on|off", "Chunked output loss", "memory",
                      "torchtune's CEWithChunkedOutputLoss: the output projection and the loss's fp32 upcast "
                      "chunk by chunk of the sequence (8 chunks); off: torch's CrossEntropyLoss over logits "
                      "the model returns in fp32",
                      "the library's: on for torchtune (its recipe configs' loss)"),
             [](auto& r) -> auto& { return r.training.chunked_loss; }),
      [](const Request& r, unsigned) { return model::library_traits(r.training.library).output_chunks > 0; },
      "with --library torchtune"));
  return v;
}

// What each sample trains (preference pairs, DPO's reference) and torchtune's optimizer in backward.
std::vector<Option> objective_options() {
  std::vector<Option> v;
  v.push_back(choice<Objective>(
      describe("objective", "OBJECTIVE", "Objective", "method",
               "what each sample trains: sft (one sequence), or a preference pair (chosen and rejected "
               "sequences together): dpo (with a frozen reference model's forward), orpo, simpo (none)",
               "sft"),
      [](auto& r) -> auto& { return r.training.objective; }));
  v.push_back(applies(flag(describe("precomputed-reference", "", "Precomputed ref.", "method",
                                    "DPO's reference log-probabilities computed before training (TRL's "
                                    "precompute_ref_log_probs): no reference model held or run in the steps",
                                    "off"),
                           [](auto& r) -> auto& { return r.training.reference_precomputed; }),
                      [](const Request& r, unsigned /*cmd*/) { return needs_reference(r.training.objective); },
                      "with --objective dpo"));
  v.push_back(applies(flag(describe("optimizer-in-backward", "", "Optimizer in bwd", "method",
                                    "step each parameter as soon as its gradient is complete and free it "
                                    "(torchtune's optimizer_in_bwd); needs --grad-accum 1",
                                    "off"),
                           [](auto& r) -> auto& { return r.training.optimizer_in_backward; }),
                      [](const Request& r, unsigned /*cmd*/) { return r.training.framework == Framework::pytorch; },
                      "with --framework pytorch (DeepSpeed and Megatron step after backward)"));
  return v;
}

// DeepSpeed's low-precision optimizer: bf16 master weights, gradient partition and moments.
std::vector<Option> deepspeed_precision_options() {
  std::vector<Option> v;
  // DeepSpeed asserts ZeRO stage 1-3 and bf16 for both (runtime/engine.py).
  const auto deepspeed_bf16_zero = [](const Request& r, unsigned cmd) {
    const Strategy s = r.training.strategy;
    return r.training.framework == Framework::deepspeed && r.training.precision == Precision::bf16_mixed &&
           (is_zero(s) || (cmd != command::estimate && !r.has("strategy")));
  };
  const std::string deepspeed_words = "with --framework deepspeed, bf16-mixed and ZeRO stage 1-3";
  v.push_back(applies(flag(describe("bf16-master-weights", "", "bf16 master", "method",
                                    "DeepSpeed's bf16_master_weights_and_grads: the optimizer's master weights "
                                    "and gradient partition in bf16",
                                    "off (fp32)"),
                           [](auto& r) -> auto& { return r.training.bf16_master; }),
                      deepspeed_bf16_zero, deepspeed_words));
  v.push_back(applies(flag(describe("bf16-optimizer-states", "", "bf16 moments", "method",
                                    "DeepSpeed's bf16_optimizer_states: the optimizer's moments in bf16 (with "
                                    "--bf16-master-weights)",
                                    "off (fp32)"),
                           [](auto& r) -> auto& { return r.training.bf16_optimizer_states; }),
                      [deepspeed_bf16_zero](const Request& r, unsigned cmd) {
                        return r.training.bf16_master && deepspeed_bf16_zero(r, cmd);
                      },
                      "with --bf16-master-weights"));
  return v;
}

std::vector<Option> adapter_options() {
  const std::string words = "with --method lora or qlora";
  std::vector<Option> v;
  v.push_back(applies(trainable_option(describe("trainable", "SPEC", "Trainable", "method",
                                         "partial fine-tuning: the weights that train, e.g. 24-31", "all weights")),
                      [](const Request& r, unsigned /*cmd*/) { return r.training.method == Method::full; },
                      "with --method full"));
  v.push_back(applies(flag(describe("checkpoint-trained-only", "", "Checkpoint trained only", "method",
                                    "checkpoint only the layers with trained weights (LLaMA-Factory)", "off"),
                           [](auto& r) -> auto& { return r.training.checkpoint_trained_only; }),
                      [](const Request& r, unsigned /*cmd*/) {
                        return r.training.partial.active && r.training.method == Method::full;
                      },
                      "with --trainable"));
  v.push_back(applies(integer(describe("lora-rank", "N", "Rank", "adapters", "LoRA rank r", "16"), 1, 65536,
                              [](auto& r) -> auto& { return r.training.lora.rank; }),
                      adapters, words));
  v.push_back(applies(real(describe("lora-alpha", "X", "Alpha", "adapters", "LoRA alpha", "32"), 0, 1e6, true,
                           false, [](auto& r) -> auto& { return r.training.lora.alpha; }),
                      adapters, words));
  v.push_back(applies(real(describe("lora-dropout", "P", "Dropout", "adapters", "LoRA dropout probability", "0.05"),
                           0, 1, false, true, [](auto& r) -> auto& { return r.training.lora.dropout; }),
                      adapters, words));
  v.push_back(applies(text(describe("lora-targets", "LIST", "Targets", "adapters",
                                    "q,v | all-linear | module names", "q,v"),
                           [](auto& r) -> auto& { return r.lora_targets; }),
                      adapters, words));
  v.push_back(applies(
      choice<Quant>(describe("quant", "KIND", "Quantisation", "adapters", "QLoRA base quantization", "nf4"),
                    [](auto& r) -> auto& { return r.training.quant; }),
      [](const Request& r, unsigned) { return r.training.method == Method::qlora; }, "with --method qlora"));
  v.push_back(applies(
      integer(describe("quant-block", "N", "Block", "adapters",
                       "QLoRA 4-bit blocksize: weights per absmax constant, a power of two", "64"),
              64, 4096, [](auto& r) -> auto& { return r.training.quant_block; }),
      [](const Request& r, unsigned) { return r.training.method == Method::qlora; }, "with --method qlora"));
  v.push_back(applies(
      release(describe("bitsandbytes", "VERSION", "bitsandbytes", "adapters",
                       "bitsandbytes release that runs the 4-bit layers: before 0.43.2 each 4-bit matmul keeps its "
                       "input for backward (litgpt up to v0.5.4 pinned 0.42.0)",
                       "current: a release from 0.43.2 on"),
              model::package_release, "bitsandbytes", model::kPackageReleaseForm,
              [](auto& r) -> auto& { return r.training.bitsandbytes; }, model::package_release_text),
      [](const Request& r, unsigned) { return r.training.method == Method::qlora; }, "with --method qlora"));
  v.push_back(applies(
      real(describe("previous-share", "F", "Previous micro-batch", "adapters",
                    "length of the micro-batch before the peak's, as a share of --seq: litgpt keeps that "
                    "micro-batch's graph into the next forward, where bitsandbytes before 0.43.2 holds its 4-bit "
                    "layers' inputs; 0: the peak is the first micro-batch (lit-gpt's 2023 scripts ran the "
                    "longest sample first)",
                    "1: as long"),
           0, 1, false, false, [](auto& r) -> auto& { return r.training.previous_share; }),
      [](const Request& r, unsigned) { return model::holds_previous_micro_batch(r.training); },
      "with --library litgpt, --method qlora and bitsandbytes before 0.43.2 (--bitsandbytes, or --library-version up to 0.5.4)"));
  v.push_back(applies(
      flag(describe("frozen-base-fp32", "", "fp32 frozen base", "adapters",
                    "adapters under *-mixed: the frozen base stays fp32 (litgpt; TRL, which loads float32 "
                    "unless told) instead of 16-bit",
                    "off"),
           [](auto& r) -> auto& { return r.training.frozen_base_fp32; }),
      [](const Request& r, unsigned) { return r.training.method != Method::full && is_mixed(r.training.precision); },
      "with --method lora or qlora and a *-mixed precision"));
  return v;
}

std::vector<Option> parallel_options() {
  std::vector<Option> v;
  v.push_back(searched(
      choice<Strategy>(describe("strategy", "STRATEGY", "Strategy", "parallelism", "data-parallel strategy",
                                "estimate: what fit recommends"),
                       [](auto& r) -> auto& { return r.training.strategy; }),
      Searched::by_fit_and_plan));
  v.push_back(searched(integer(describe("tp", "N", "Tensor parallel", "parallelism", "tensor-parallel degree", "1"),
                               1, kMaxDegree, [](auto& r) -> auto& { return r.training.tp; }),
                       Searched::by_plan));
  v.push_back(searched(integer(describe("pp", "N", "Pipeline parallel", "parallelism", "pipeline-parallel degree",
                                        "1"),
                               1, kMaxDegree, [](auto& r) -> auto& { return r.training.pp; }),
                       Searched::by_plan));
  v.push_back(searched(applies(integer(describe("pp-virtual", "N", "Virtual stages", "parallelism",
                                                "interleaved pipeline chunks per stage", "1"),
                                       1, 1024, [](auto& r) -> auto& { return r.training.pp_virtual; }),
                               [](const Request& r, unsigned cmd) {
                                 return r.training.pp > 1 || (cmd == command::plan && !r.has("pp"));
                               },
                               "with --pp above 1"),
                       Searched::by_plan));
  v.push_back(searched(integer(describe("cp", "N", "Context parallel", "parallelism",
                                        "context-parallel degree: split each sequence over N ranks", "1"),
                               1, kMaxDegree, [](auto& r) -> auto& { return r.training.cp; }),
                       Searched::by_plan));
  v.push_back(applies(choice<CpComm>(describe("cp-comm", "KIND", "CP exchange", "parallelism",
                                              "ring | all-gather | all-to-all: how CP ranks share keys and values",
                                              "ring"),
                                     [](auto& r) -> auto& { return r.training.cp_comm; }),
                      [](const Request& r, unsigned cmd) {
                        return r.training.cp > 1 || (cmd == command::plan && !r.has("cp"));
                      },
                      "with --cp above 1"));
  // plan searches it beside each TP degree above 1 when it is not given (planner/src/search.cpp).
  v.push_back(applies(searched(flag(describe("sequence-parallel", "", "Sequence parallel", "parallelism",
                                             "shard norms and dropout along the sequence (Megatron; with --tp)", "off"),
                                    [](auto& r) -> auto& { return r.training.sequence_parallel; }),
                               Searched::by_plan),
                      [](const Request& r, unsigned cmd) {
                        return r.training.tp > 1 || (cmd == command::plan && !r.has("tp"));
                      },
                      "with --tp above 1"));
  v.push_back(searched(integer(describe("expert-parallel", "N", "Expert parallel", "parallelism",
                                        "MoE: spread the experts over this many data-parallel ranks", "1"),
                               1, kMaxDegree, [](auto& r) -> auto& { return r.training.ep; }),
                       Searched::by_fit_and_plan));
  v.push_back(choice<FsdpWrap>(describe("fsdp-wrap", "POLICY", "FSDP wrap", "parallelism",
                                        "block (one unit per transformer block) | none (whole model)", "block"),
                               [](auto& r) -> auto& { return r.training.fsdp_wrap; }));
  return v;
}

// Dropout, set for the run: a library whose model code has none changes nothing by it.
std::vector<Option> dropout_options() {
  std::vector<Option> v;
  const auto has_dropout = [](const Request& r, unsigned /*cmd*/) {
    return !model::library_traits(r.training.library).model_without_dropout;
  };
  const std::string no_dropout = "with a library whose model code has dropout layers (not litgpt)";
  v.push_back(applies(optional_real(describe("hidden-dropout", "P", "Hidden dropout", "method",
                                    "dropout probability on the hidden states (Megatron-LM's --hidden-dropout; "
                                    "overrides a config's hidden_dropout); 0: no masks kept",
                                    "the model config's; 0.1 under megatron"),
                           0, 1, false, true, [](auto& r) -> auto& { return r.training.hidden_dropout; }),
                      has_dropout, no_dropout));
  v.push_back(applies(optional_real(describe("attention-dropout", "P", "Attn. dropout", "method",
                                    "dropout probability on the attention probabilities (Megatron-LM's "
                                    "--attention-dropout; overrides a config's attention_dropout)",
                                    "the model config's; 0.1 under megatron"),
                           0, 1, false, true, [](auto& r) -> auto& { return r.training.attention_dropout; }),
                      has_dropout, no_dropout));
  return v;
}

std::vector<Option> batch_and_memory_options() {
  std::vector<Option> v;
  v.push_back(searched(integer(describe("micro-batch", "N", "Micro-batch", "batch",
                                        "sequences per GPU per step (fit also reports the largest that fits)", "1"),
                               1, kMaxCount, [](auto& r) -> auto& { return r.training.micro_batch; }),
                       Searched::by_plan));
  v.push_back(searched(integer(describe("grad-accum", "N", "Gradient accumulation", "batch",
                                        "micro-batches per optimizer step",
                                        "1, or --global-batch / (micro-batch x data-parallel ranks)"),
                               1, kMaxCount, [](auto& r) -> auto& { return r.training.grad_accum; }),
                       Searched::by_plan));
  // 2^24 tokens: above the longest contexts trained today (10M).
  v.push_back(integer(describe("seq", "N", "Sequence length", "batch", "sequence length in tokens",
                               "min(2048, the model's maximum)"),
                      1, std::int64_t{1} << 24, [](auto& r) -> auto& { return r.training.seq; }));
  v.push_back(only(integer(describe("global-batch", "N", "Global batch", "batch",
                                    "sequences per optimizer step (micro-batch x grad-accum x DP)",
                                    "micro-batch x grad-accum x DP"),
                           1, kMaxCount, [](auto& r) -> auto& { return r.global_batch; }),
                   command::estimate | command::plan | command::explain | command::from_file));
  v.push_back(only(integer(describe("global-batch-tokens", "N", "Global batch tokens", "batch",
                                    "tokens per optimizer step (a multiple of --seq)", "not set"),
                           1, kMaxCount, [](auto& r) -> auto& { return r.global_batch_tokens; }),
                   command::estimate | command::plan | command::explain));
  v.push_back(searched(choice<Checkpointing>(describe("checkpointing", "MODE", "Checkpointing", "memory",
                                                      "activation checkpointing",
                                                      "estimate: what fit recommends"),
                                             [](auto& r) -> auto& { return r.training.checkpointing; }),
                       Searched::by_fit_and_plan));
  v.push_back(applies(integer(describe("checkpoint-every", "N", "Checkpoint every", "memory",
                                       "full checkpointing of one block in N, the others run plain (torchtitan's "
                                       "layer-selective checkpointing, selective_ac_option = N)",
                                       "1: every block"),
                              1, 1024, [](auto& r) -> auto& { return r.training.checkpoint_every; }),
                      [](const Request& r, unsigned /*cmd*/) {
                        // Left to the search (fit and plan; estimate takes what fit recommends).
                        return !r.has("checkpointing") || r.training.checkpointing == Checkpointing::full;
                      },
                      "with --checkpointing full"));
  v.push_back(applies(integer(describe("checkpoint-layers", "K", "Checkpoint first", "memory",
                                       "full checkpointing of the first K blocks of each pipeline chunk, the others run "
                                       "plain (Megatron-LM's --recompute-method block --recompute-num-layers K)",
                                       "0: every block"),
                              0, 100000, [](auto& r) -> auto& { return r.training.checkpoint_layers; }),
                      [](const Request& r, unsigned /*cmd*/) {
                        return !r.has("checkpointing") || r.training.checkpointing == Checkpointing::full;
                      },
                      "with --checkpointing full"));
  v.push_back(applies(integer(describe("checkpoint-group", "N", "Checkpoint groups of", "memory",
                                       "full checkpointing of groups of N blocks of each pipeline chunk, each keeping "
                                       "its first block's input and rebuilt at once (Megatron-LM's --recompute-method "
                                       "uniform --recompute-num-layers N)",
                                       "1: each block on its own"),
                              1, 100000, [](auto& r) -> auto& { return r.training.checkpoint_group; }),
                      [](const Request& r, unsigned /*cmd*/) {
                        return !r.has("checkpointing") || r.training.checkpointing == Checkpointing::full;
                      },
                      "with --checkpointing full"));
  v.push_back(choice<Attention>(
      describe("attention", "KIND", "Attention", "memory", "attention kernel",
               "flash where the GPU runs FlashAttention-2, else sdpa"),
      [](auto& r) -> auto& { return r.training.attention; }));
  v.push_back(searched(choice<Offload>(describe("offload", "MODE", "Offload", "memory",
                                                "optimizer states (and parameters) in CPU memory",
                                                "estimate: what fit recommends"),
                                       [](auto& r) -> auto& { return r.training.offload; }),
                       Searched::by_fit_and_plan));
  v.push_back(applies(integer(describe("offload-activations", "N", "Offloaded layers", "memory",
                                       "what N layers of each pipeline stage save for backward waits in CPU "
                                       "memory (Megatron-Core's --cpu-offloading --cpu-offloading-num-layers N)",
                                       "0: none"),
                              0, 100000, [](auto& r) -> auto& { return r.training.offload_activation_layers; }),
                      [](const Request& r, unsigned /*cmd*/) { return r.training.framework == Framework::megatron; },
                      "with --framework megatron"));
  return v;
}

std::vector<Option> cluster_and_output_options() {
  std::vector<Option> v;
  v.push_back(text(describe("inter-node", "SPEC", "Network", "cluster", "NICs per node x rate, e.g. 8x200Gbps",
                            "the GPU's usual network"),
                   [](auto& r) -> auto& { return r.inter_node; }));
  v.push_back(real(describe("host-memory", "GiB", "Host memory", "cluster",
                            "CPU memory per node in GiB for offloaded states and checkpoints", "not checked"),
                   0, 1e9, true, false, [](auto& r) -> auto& { return r.host_memory_gib; }));
  v.push_back(only(integer(describe("nodes", "N", "Nodes", "cluster", "nodes the config file runs on", ""),
                           1, kMaxDegree, [](auto& r) -> auto& { return r.nodes; }),
                   command::from_file));
  v.push_back(only(integer(describe("gpus", "N", "GPUs", "cluster", "processes the config file starts", ""),
                           1, kMaxDegree * 64, [](auto& r) -> auto& { return r.gpus; }),
                   command::from_file));
  v.push_back(only(real(describe("margin", "F", "Margin", "memory",
                                 "share of the usable GPU memory a recommendation leaves free: candidates "
                                 "within it are tight, not recommended while one fits with it (0.1 = 10 %)",
                                 "0"),
                        0, 1, false, true, [](auto& r) -> auto& { return r.margin; }),
                   command::fit | command::gui));
  v.push_back(only(text(describe("profile", "FILE", "Profile", "cluster",
                                 "hardware profile JSON from trainplan calibrate fit", "datasheet numbers"),
                        [](auto& r) -> auto& { return r.profile; }),
                   command::fit | command::estimate | command::plan | command::gui | command::explain));
  v.push_back(only(text(describe("tokens", "N", "Tokens to train", "batch",
                                 "time to train this many tokens: 300B, 1T, 2.5e12 (K/M/B/T suffixes)", "not asked"),
                        [](auto& r) -> auto& { return r.tokens; }),
                   command::estimate | command::plan | command::gui));
  Option emit = describe("emit", "FORMAT", "Emit", "output", "print the launch config of the plan", "none");
  emit.kind = OptionKind::choice;
  emit.choices = choice_names<planner::EmitFormat>();
  emit.parse = [](Request& r, std::string_view value) { r.emit = parse_choice<planner::EmitFormat>("emit", value); };
  emit.text = [](const Request& r) { return r.emit ? std::string(to_string(*r.emit)) : std::string(); };
  v.push_back(only(emit, command::estimate | command::plan));
  const auto emitting = [](const Request& r, unsigned) { return r.emit.has_value(); };
  v.push_back(only(applies(flag(describe("force", "", "Force", "output",
                                         "write the launch config even when the plan does not fit "
                                         "(the file opens with a warning)",
                                         "off"),
                                [](auto& r) -> auto& { return r.force; }),
                           emitting, "with --emit"),
                   command::estimate));
  v.push_back(only(applies(text(describe("output", "FILE", "Output", "output",
                                         "write the launch config to FILE (all of it or nothing) "
                                         "instead of standard output",
                                         ""),
                                [](auto& r) -> auto& { return r.output; }),
                           emitting, "with --emit"),
                   command::estimate | command::plan));
  v.push_back(only(integer(describe("top", "N", "Plans shown", "output", "plans to show", "5"), 1, 100000,
                           [](auto& r) -> auto& { return r.top; }),
                   command::plan));
  v.push_back(only(flag(describe("activations", "", "Activations", "output",
                                 "also list what one block saves for backward, tensor by tensor", "off"),
                        [](auto& r) -> auto& { return r.activations; }),
                   command::estimate));
  v.push_back(only(flag(describe("json", "", "JSON", "output", "print JSON instead of tables", "off"),
                        [](auto& r) -> auto& { return r.json; }),
                   command::fit | command::estimate | command::plan | command::explain));
  return v;
}

std::vector<Option> build() {
  std::vector<Option> all;
  for (auto part : {model_and_method(), kernel_options(), objective_options(), deepspeed_precision_options(),
                    adapter_options(), parallel_options(), sharding_options(), megatron_options(),
                    batch_and_memory_options(), dropout_options(), cluster_and_output_options()})
    for (auto& o : part) all.push_back(std::move(o));
  add_option_details(all);
  return all;
}

}  // namespace

std::string Request::label(std::string_view option) const {
  if (const auto it = given.find(option); it != given.end()) return it->second;
  return "--" + std::string(option);
}

const std::vector<Option>& options() {
  static const std::vector<Option> all = build();
  return all;
}

const Option* find_option(std::string_view name) {
  for (const Option& o : options())
    if (o.name == name) return &o;
  return nullptr;
}

void set_option(Request& r, std::string_view name, std::string_view value, const std::string& source) {
  const Option* o = find_option(name);
  if (!o) throw InputError(source + ": unknown option '" + std::string(name) + "'");
  const auto before = r.given.find(name);
  const std::string previous = before == r.given.end() ? std::string() : o->text(r);
  try {
    o->parse(r, value);
  } catch (const FieldError& e) {
    throw InputError(e.render([&](std::string_view) { return source; }));
  }
  if (before != r.given.end() && before->second != source && o->text(r) != previous)
    // A file's source already says its value ("ds.json: stage = 3"); a flag's does not.
    r.overridden.push_back(source + " " + o->text(r) + " overrides " + before->second +
                           (before->second.find(" = ") == std::string::npos ? " = " + previous : ""));
  r.given[std::string(name)] = source;
}

}  // namespace trainplan::request
