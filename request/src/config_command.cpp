// Launch command lines: torchrun's own options (pytorch/pytorch v2.5, torch/distributed/run.py:
// --nnodes, --nproc_per_node / --nproc-per-node), then either Megatron-LM's pretrain script
// (NVIDIA/Megatron-LM core_r0.9.0, megatron/training/arguments.py: --tensor-model-parallel-size,
// --pipeline-model-parallel-size, --num-layers-per-virtual-pipeline-stage, --micro-batch-size,
// --global-batch-size, --seq-length, --bf16/--fp16 (fp32 master weights in the optimizer),
// --recompute-granularity full|selective, --recompute-activations (= selective), --recompute-method
// block|uniform with --recompute-num-layers (read in config_megatron.cpp),
// --use-distributed-optimizer, --sequence-parallel, --expert-model-parallel-size,
// --moe-expert-capacity-factor, --moe-pad-expert-input-to-capacity (megatron/core/transformer/moe/
// README.md, "Token Dispatching", at d98e8a6),
// --use-flash-attn, --attention-backend, --optimizer adam|sgd, --sgd-momentum (0.9 by default),
// --optimizer-cpu-offload) or a Hugging Face Trainer script's TrainingArguments flags.

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>
#include <string>
#include <tuple>

#include "command_words.hpp"
#include "config_reader.hpp"
#include "trainplan/core/checked.hpp"
#include "trainplan/core/modes.hpp"

namespace trainplan::request::config {
namespace command {


// A quoted array element holding a flag and its value ("--fp8-format hybrid") is split into words
// when the array is expanded unquoted (${ARGS[@]}), the only way argparse can read it.
std::vector<std::string> split_flag_words(const std::vector<std::string>& given) {
  std::vector<std::string> args;
  args.reserve(given.size());
  for (const std::string& a : given) {
    if (a.rfind("--", 0) != 0 || a.find_first_of(" \t") == std::string::npos ||
        a.find('=') < a.find_first_of(" \t")) {
      args.push_back(a);
      continue;
    }
    std::size_t i = 0;
    while (i < a.size()) {
      const std::size_t start = a.find_first_not_of(" \t", i);
      if (start == std::string::npos) break;
      const std::size_t end = std::min(a.find_first_of(" \t", start), a.size());
      args.push_back(a.substr(start, end - start));
      i = end;
    }
  }
  return args;
}

// A word naming a Python script: ends in .py, no `=` (a flag's value), no whitespace (an echo).
bool script_word(const std::string& a) {
  return a.size() > 3 && a.ends_with(".py") && a.find('=') == std::string::npos &&
         a.find_first_of(" \t\n") == std::string::npos;
}

Parsed parse(const std::vector<std::string>& given) {
  const std::vector<std::string> args = split_flag_words(given);
  Parsed p;
  auto* into = &p.launcher;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    // A wrapper that runs a launcher after its own script and a "--" (mason.py ... -- accelerate
    // launch ...): the launcher's command is the one that trains.
    if (!p.script_name.empty() && i > 0 && args[i - 1] == "--" &&
        (a == "torchrun" || a == "deepspeed" || (a == "accelerate" && i + 1 < args.size() && args[i + 1] == "launch"))) {
      Parsed launched;
      launched.wrapper_name = p.script_name;
      launched.wrapper = p.script;
      p = std::move(launched);
      into = &p.launcher;
      continue;
    }
    // A second launch after the script (the other branch of an `if` over the environment, read
    // through): the first command is the one read.
    if (!p.script_name.empty() && (i == 0 || args[i - 1] != "--") &&
        (a == "torchrun" || (a == "accelerate" && i + 1 < args.size() && args[i + 1] == "launch")))
      break;
    if (a == "--") continue;  // the end of a wrapper's options, not a flag
    if (a.rfind("--", 0) != 0) {
      if (p.script_name.empty() && script_word(a)) {
        p.script_name = a;
        into = &p.script;
      }
      continue;
    }
    const std::size_t eq = a.find('=');
    if (eq != std::string::npos) {
      into->emplace_back(a.substr(0, eq), a.substr(eq + 1));
    } else if (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0 && args[i + 1] != ")" &&
               !(p.script_name.empty() && script_word(args[i + 1]))) {
      into->emplace_back(a, args[i + 1]);
      ++i;
    } else {  // a bare flag (also "--flag train.py": the word is the script)
      into->emplace_back(a, "");
    }
  }
  return p;
}

std::int64_t positive(Reader& r, const std::string& flag, const std::string& value) {
  std::size_t used = 0;
  std::int64_t v = 0;
  try {
    v = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size() || v < 1) r.fail(flag, value, "must be a positive integer");
  return v;
}

// `accelerate launch`'s own options (accelerate/commands/launch.py): --num_processes counts every
// process of the job, --mixed_precision, and DeepSpeed or FSDP chosen on the command line.
void read_accelerate_launch(const Parsed& p, Reader& r) {
  // allenai/open-instruct mason.py: --num_nodes replicas, each running the command; for more than
  // one it rewrites accelerate's --num_processes N to N x num_nodes over --num_machines num_nodes.
  std::int64_t machines = 1;
  if (p.wrapper_name.ends_with("mason.py"))
    for (const auto& [flag, value] : p.wrapper)
      if (flag == "--num_nodes") {
        machines = positive(r, "mason.py --num_nodes", value);
        r.set("nodes", std::to_string(machines), "mason.py --num_nodes", value);
      }
  for (const auto& [flag, value] : p.launcher) {
    if (flag == "--num_processes" && machines > 1)
      r.set("gpus",
            std::to_string(checked_product({machines, positive(r, flag, value)},
                                           r.read().path + ": mason.py --num_nodes x " + flag, kMaxClusterGpus)),
            "mason.py --num_nodes x " + flag, std::to_string(machines) + " x " + value);
    else if (flag == "--num_processes")
      r.set("gpus", std::to_string(positive(r, flag, value)), flag, value);
    else if (flag == "--num_machines")
      r.set("nodes", std::to_string(positive(r, flag, value)), flag, value);
    else if (flag == "--mixed_precision" && (value == "bf16" || value == "fp16"))
      r.set("precision", value + "-mixed", flag, value);
    else if (flag == "--mixed_precision" && value == "no")
      r.set("precision", "fp32", flag, value);
    else if (flag == "--use_deepspeed")
      r.set("framework", "deepspeed", flag, "");
    else if (flag == "--zero_stage" && value.size() == 1 && value >= "0" && value <= "3")
      r.set("strategy", zero_stage_strategy(value[0] - '0'), flag, value);
    else if (flag == "--deepspeed_config_file")
      r.unresolved("strategy", flag, value, "the DeepSpeed config the launcher passes (read it too: --from that file)");
    else if (flag == "--use_fsdp")
      r.set("strategy", "fsdp-full", flag, "(FULL_SHARD, accelerate's default)");
  }
}

void read_launcher(const Parsed& p, Reader& r) {
  read_accelerate_launch(p, r);
  std::int64_t nodes = 1;
  std::optional<std::int64_t> per_node;
  for (const auto& [flag, value] : p.launcher) {
    if (!value.empty() && value[0] == '$' &&
        (flag == "--nnodes" || flag == "--num_nodes" || flag == "--nproc_per_node" ||
         flag == "--nproc-per-node" || flag == "--num_gpus")) {
      r.unresolved(flag == "--nnodes" || flag == "--num_nodes" ? "nodes" : "gpus", flag, value,
                   "a shell variable this file does not set");
    } else if (flag == "--nnodes" || flag == "--num_nodes") {
      // torchrun also takes an elastic "MIN:MAX" range.
      if (value.find(':') != std::string::npos) {
        r.unresolved("nodes", flag, value, "an elastic node range; left to other inputs");
        continue;
      }
      nodes = positive(r, flag, value);
      r.set("nodes", std::to_string(nodes), flag, value);
    } else if (flag == "--nproc_per_node" || flag == "--nproc-per-node" || flag == "--num_gpus") {
      if (value == "gpu" || value == "auto") {
        r.unresolved("gpus", flag, value, "every visible GPU; left to other inputs");
        continue;
      }
      per_node = positive(r, flag, value);
    }
  }
  if (per_node)
    r.set("gpus", std::to_string(checked_product({nodes, *per_node}, r.read().path + ": --nnodes x --nproc_per_node (GPUs)", kMaxClusterGpus)),
          "--nnodes x --nproc_per_node",
          std::to_string(nodes) + " x " + std::to_string(*per_node));
}


}  // namespace command

using command::Parsed;
using command::parse;
using command::positive;
using command::read_launcher;

// A word that is a whole number or a decimal, as JSON; nullopt otherwise.
std::optional<Json> number_word(const std::string& v) {
  if (v.empty() || v.size() > 18) return std::nullopt;
  std::size_t used = 0;
  try {
    if (v.find_first_not_of("0123456789") == std::string::npos) return Json(std::stoll(v, &used));
    if (v.find_first_not_of("0123456789.eE-+") == std::string::npos) {
      const double d = std::stod(v, &used);
      if (used == v.size()) return Json(d);
    }
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

// HfArgumentParser's string_to_bool (transformers hf_argparser.py): "--bf16 True" is a boolean
// there, in any case, and so are yes/no, t/f, y/n and 1/0. Only those words; a number stays a number.
std::optional<bool> hf_bool(std::string v) {
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
  if (v == "yes" || v == "true" || v == "t" || v == "y") return true;
  if (v == "no" || v == "false" || v == "f" || v == "n") return false;
  return std::nullopt;
}

// A word as HfArgumentParser types it from its dataclass field: a boolean, a number, else text.
Json argparse_value(const std::string& v) {
  if (const auto b = hf_bool(v)) return *b;
  if (const auto n = number_word(v)) return *n;
  return v;
}

void read_torchrun_command(const std::vector<std::string>& args, Reader& r) {
  const Parsed p = parse(args);
  read_launcher(p, r);
  // The flags are TrainingArguments fields: read them as such a file would be.
  Json j = Json::object();
  for (const auto& [flag, value] : p.script) {
    const std::string key = flag.substr(2);
    if (value.empty()) {
      j[key] = true;
    } else {
      Json v = value;
      if (key == "per_device_train_batch_size" || key == "gradient_accumulation_steps" ||
          key == "max_seq_length" || key == "model_max_length")
        v = positive(r, flag, value);
      else
        v = argparse_value(value);  // lora_r 8, lora_dropout 0.05, --bf16 True
      j[key] = v;
    }
  }
  // --optim adamw_torch --optim_args foreach=False: torch's per-parameter loop.
  const bool for_loop = j.contains("optim_args") && j.at("optim_args") == "foreach=False";
  read_training_arguments(j, r);
  if (for_loop && j.contains("optim") && j.at("optim") == "adamw_torch")
    r.set("optimizer-impl", "for-loop", "--optim_args", "foreach=False");
  // Without --fsdp or --deepspeed the Trainer wraps the model in DDP when the launcher starts
  // more than one process (transformers trainer.py, _wrap_model).
  const Setting* gpus = r.read().find("gpus");
  const Setting* framework = r.read().find("framework");
  const bool deepspeed = j.contains("deepspeed") || (framework && framework->value == "deepspeed");
  if (gpus && !r.read().find("strategy") && !deepspeed)
    r.set("strategy", gpus->value == "1" ? "single" : "ddp", "(no --fsdp or --deepspeed)", "");
}

namespace {

// One integer flag of a script's own argparse, set as `option`.
void set_flag_integer(const Parsed& p, const std::string& flag, const std::string& option, Reader& r) {
  for (const auto& [f, value] : p.script)
    if (f == flag) r.set(option, std::to_string(positive(r, flag, value)), flag, value);
}

bool has_flag(const Parsed& p, const std::string& flag) {
  return std::any_of(p.script.begin(), p.script.end(), [&](const auto& f) { return f.first == flag; });
}

std::optional<std::string> flag_value(const Parsed& p, const std::string& flag) {
  for (const auto& [f, value] : p.script)
    if (f == flag) return value;
  return std::nullopt;
}

// open_instruct/finetune.py's flags: those read, those that change neither memory nor time
// (FlatArguments and TokenizerConfig fields), and a warning for any other.
void warn_unpriced_openinstruct_flags(const Parsed& p, Reader& r) {
  static const std::set<std::string, std::less<>> kQuiet{
      "--exp_name", "--model_revision", "--tokenizer_name", "--tokenizer_revision", "--use_slow_tokenizer",
      "--chat_template_name", "--chat_template", "--dataset_mixer_list", "--dataset_mixer_list_splits",
      "--dataset_name", "--dataset_config_name", "--dataset_transform_fn", "--dataset_target_columns",
      "--dataset_cache_mode", "--dataset_local_cache_dir", "--dataset_skip_cache", "--add_bos", "--learning_rate",
      "--lr_scheduler_type", "--warmup_ratio", "--weight_decay", "--num_train_epochs", "--max_train_steps",
      "--report_to", "--logging_steps", "--seed", "--with_tracking", "--output_dir", "--checkpointing_steps",
      "--keep_last_n_checkpoints", "--resume_from_checkpoint", "--timeout", "--clip_grad_norm",
      "--low_cpu_mem_usage", "--push_to_hub", "--hf_entity", "--hf_repo_id", "--wandb_project_name",
      "--wandb_entity", "--try_launch_beaker_eval_jobs", "--trust_remote_code", "--preprocessing_num_workers",
      "--overwrite_cache", "--load_balancing_loss", "--load_balancing_weight", "--final_lr_ratio",
      "--use_8bit_optimizer"};
  static const std::set<std::string, std::less<>> kRead{
      "--model_name_or_path", "--max_seq_length", "--per_device_train_batch_size", "--gradient_accumulation_steps",
      "--gradient_checkpointing", "--use_lora", "--use_qlora", "--lora_rank", "--lora_alpha", "--lora_dropout",
      "--fused_optimizer", "--use_liger_kernel", "--packing"};
  for (const auto& [flag, value] : p.script)
    if (!kQuiet.contains(flag) && !kRead.contains(flag))
      r.warn(flag + (value.empty() ? "" : " " + value) +
             ": not an open_instruct/finetune.py flag trainplan prices; ignored");
}

}  // namespace

// DeepSpeed-Chat's training scripts (deepspeedai/DeepSpeedExamples applications/DeepSpeed-Chat,
// training/step1_supervised_finetuning/main.py and dschat/utils/ds_utils.py at 45b4b71): its own
// argparse, not TrainingArguments. --zero_stage (default 0), --dtype fp16|bf16 (default fp16,
// fp32 master weights in DeepSpeed's optimizer), --offload (optimizer, and parameters at stage 3,
// on the host: DeepSpeedCPUAdam; else FusedAdam), --gradient_checkpointing, --max_seq_len (every
// sample padded to it, default 512), --lora_dim (LoRA on the block's linears, their weights frozen).
void read_dschat_command(const std::vector<std::string>& args, Reader& r) {
  const Parsed p = parse(args);
  read_launcher(p, r);
  r.set("framework", "deepspeed", "(a DeepSpeed-Chat command)", p.script_name);
  r.set("library", "deepspeed", "(a DeepSpeed-Chat command: its own loop over DeepSpeed's engine)", "");
  set_flag_integer(p, "--per_device_train_batch_size", "micro-batch", r);
  set_flag_integer(p, "--gradient_accumulation_steps", "grad-accum", r);
  const std::optional<std::string> seq = flag_value(p, "--max_seq_len");
  if (seq)
    r.set("seq", std::to_string(positive(r, "--max_seq_len", *seq)), "--max_seq_len", *seq);
  else
    r.set("seq", "512", "(no --max_seq_len: DeepSpeed-Chat's default, every sample padded to 512)", "");
  const std::string stage = flag_value(p, "--zero_stage").value_or("0");
  const std::int64_t st = stage == "0" ? 0 : positive(r, "--zero_stage", stage);
  if (st > 3) r.fail("--zero_stage", stage, "must be 0, 1, 2 or 3");
  r.set("strategy", zero_stage_strategy(st),
        has_flag(p, "--zero_stage") ? "--zero_stage" : "(no --zero_stage: DeepSpeed-Chat's default, 0)", stage);
  const std::string dtype = flag_value(p, "--dtype").value_or("fp16");
  if (dtype != "fp16" && dtype != "bf16" && dtype != "fp32") r.fail("--dtype", dtype, "must be fp16, bf16 or fp32");
  r.set("precision", dtype == "fp32" ? "fp32" : dtype + "-mixed",
        has_flag(p, "--dtype") ? "--dtype" : "(no --dtype: DeepSpeed-Chat's default, fp16)", dtype);
  const bool offload = has_flag(p, "--offload");
  r.set("offload", !offload ? "none" : (st == 3 ? "optimizer+params" : "optimizer"),
        offload ? "--offload" : "(no --offload)", "");
  r.set("optimizer", "adamw", "(DeepSpeed-Chat's AdamW)", "");
  r.set("optimizer-impl", offload ? "deepspeed-cpu" : "deepspeed-fused",
        offload ? "--offload (DeepSpeedCPUAdam)" : "(no --offload: FusedAdam)", "");
  r.set("checkpointing", has_flag(p, "--gradient_checkpointing") ? "full" : "none",
        has_flag(p, "--gradient_checkpointing") ? "--gradient_checkpointing" : "(no --gradient_checkpointing)", "");
  if (const auto dim = flag_value(p, "--lora_dim"); dim && *dim != "0") {
    r.set("method", "lora", "--lora_dim", *dim);
    r.set("lora-rank", std::to_string(positive(r, "--lora_dim", *dim)), "--lora_dim", *dim);
    r.set("lora-targets", "all-linear", "--lora_module_name", flag_value(p, "--lora_module_name").value_or("decoder.layers."));
    if (!has_flag(p, "--only_optimize_lora"))
      r.warn("--lora_dim without --only_optimize_lora: the embeddings, norms and output layer train too, which "
             "trainplan does not count");
  } else {
    r.set("method", "full", "(no --lora_dim)", "");
  }
  // from_pretrained without attn_implementation: transformers' default, SDPA (v4.36 on).
  r.set("attention", "sdpa", "(no attn_implementation: transformers' default)", "");
  if (const auto model = flag_value(p, "--model_name_or_path"); model && !model->empty() && (*model)[0] != '$')
    r.set("model", *model, "--model_name_or_path", *model);
}

// allenai/open-instruct's open_instruct/finetune.py (at e6c3044a): its own loop over accelerate,
// not the Trainer. FlatArguments (L76-325) via HfArgumentParser: per_device_train_batch_size 8,
// gradient_accumulation_steps 1, max_seq_length none, gradient_checkpointing off, use_lora /
// use_qlora (lora_rank 64, lora_alpha 16, lora_dropout 0.1 on every block linear), fused_optimizer
// on (torch AdamW, fused=...; bitsandbytes' paged AdamW under QLoRA, 8-bit with
// use_8bit_optimizer). The model loads in bf16 (dtype=torch.bfloat16, L589-598; without a dtype
// under use_liger_kernel), so without DeepSpeed the optimizer steps bf16 weights; flash attention
// (model_utils.detect_hf_attn_implementation).
void read_openinstruct_command(const std::vector<std::string>& args, Reader& r) {
  Parsed p = parse(args);
  std::optional<std::string> mixed;
  std::erase_if(p.launcher, [&mixed](const auto& f) {
    if (f.first == "--mixed_precision") mixed = f.second;
    return f.first == "--mixed_precision";
  });
  // HfArgumentParser's booleans: "--use_lora" alone or with True/False.
  const auto on = [&p](const std::string& flag) {
    const std::optional<std::string> v = flag_value(p, flag);
    return v && *v != "False" && *v != "false" && *v != "0";
  };
  read_launcher(p, r);
  const bool deepspeed = std::any_of(p.launcher.begin(), p.launcher.end(), [](const auto& f) {
    return f.first == "--use_deepspeed" || f.first == "--deepspeed_config_file";
  });
  r.set("library", "accelerate", "(open_instruct/finetune.py: its own accelerate loop)", p.script_name);
  if (!deepspeed) r.set("framework", "pytorch", "(no --use_deepspeed)", "");
  const bool liger = on("--use_liger_kernel");
  const bool qlora = on("--use_qlora");
  const bool lora = qlora || on("--use_lora");
  // The full model in bf16 under plain accelerate: its optimizer steps bf16 weights whatever the
  // autocast; DeepSpeed keeps fp32 master weights, adapters train in fp32 (PEFT), Liger's loader
  // keeps fp32 weights: there accelerate's mixed precision decides.
  if (!deepspeed && !liger && !lora)
    r.set("precision", "bf16-true", "(open_instruct/finetune.py loads the model in bf16, no --use_deepspeed)", "");
  else if (mixed)
    r.set("precision", *mixed == "no" ? "fp32" : *mixed + "-mixed", "--mixed_precision", *mixed);
  else
    r.unresolved("precision", "--mixed_precision", Json(""), "accelerate's own config decides");
  // finetune.py: AutoLigerKernelForCausalLM with fused_linear_cross_entropy=True (Liger's defaults).
  if (liger) r.set("liger", "true", "--use_liger_kernel", "true");
  if (on("--packing")) r.warn("--packing: padding-free packed sequences are priced as one causal sequence");
  if (!has_flag(p, "--per_device_train_batch_size"))
    r.set("micro-batch", "8", "(no --per_device_train_batch_size: open-instruct's default)", "");
  set_flag_integer(p, "--per_device_train_batch_size", "micro-batch", r);
  if (!has_flag(p, "--gradient_accumulation_steps"))
    r.set("grad-accum", "1", "(no --gradient_accumulation_steps: open-instruct's default)", "");
  set_flag_integer(p, "--gradient_accumulation_steps", "grad-accum", r);
  set_flag_integer(p, "--max_seq_length", "seq", r);
  const bool ckpt = on("--gradient_checkpointing");
  r.set("checkpointing", ckpt ? "full" : "none", ckpt ? "--gradient_checkpointing" : "(no --gradient_checkpointing)", "");
  r.set("attention", "flash", "(open-instruct picks FlashAttention when installed)", "");
  r.set("optimizer", qlora ? (on("--use_8bit_optimizer") ? "paged-adamw-8bit" : "paged-adamw") : "adamw",
        qlora ? "--use_qlora (bitsandbytes' paged AdamW)" : "(torch.optim.AdamW)", "");
  if (!qlora && has_flag(p, "--fused_optimizer"))
    r.set("optimizer-impl", on("--fused_optimizer") ? "fused" : "foreach", "--fused_optimizer",
          *flag_value(p, "--fused_optimizer"));
  else if (!qlora)
    r.set("optimizer-impl", "fused", "(no --fused_optimizer: open-instruct's default, True)", "");
  r.set("method", qlora ? "qlora" : (lora ? "lora" : "full"),
        qlora ? "--use_qlora" : (lora ? "--use_lora" : "(no --use_lora)"), "");
  if (lora) {
    if (qlora) r.set("quant", "nf4-dq", "--use_qlora", "(nf4, double quantization)");
    // FlatArguments' LoRA fields, each the flag's value or open-instruct's default.
    for (const auto& [flag, option, fallback] : {std::tuple{"--lora_rank", "lora-rank", "64"},
                                                 std::tuple{"--lora_alpha", "lora-alpha", "16"},
                                                 std::tuple{"--lora_dropout", "lora-dropout", "0.1"}}) {
      const std::optional<std::string> given = flag_value(p, flag);
      r.set(option, given.value_or(fallback),
            given ? std::string(flag) : "(no " + std::string(flag) + ": open-instruct's default, " + fallback + ")",
            given.value_or(""));
    }
    r.set("lora-targets", "all-linear", "(q, k, v, o, gate, up and down projections)", "");
  }
  if (const auto model = flag_value(p, "--model_name_or_path"); model && !model->empty() && (*model)[0] != '$')
    r.set("model", *model, "--model_name_or_path", *model);
  warn_unpriced_openinstruct_flags(p, r);
  if (!deepspeed && !r.read().find("strategy")) {
    const Setting* gpus = r.read().find("gpus");
    if (gpus) r.set("strategy", gpus->value == "1" ? "single" : "ddp", "(accelerate without DeepSpeed or FSDP)", "");
  }
}

// `llamafactory-cli train`: a LLaMA-Factory YAML (read it with --from) or its keys as flags
// (HfArgumentParser, hiyouga/LLaMA-Factory src/llamafactory/hparams/parser.py), with NNODES and
// NPROC_PER_NODE from the environment for FORCE_TORCHRUN launches (launcher.py).
void read_llamafactory_command(const std::vector<std::string>& args, Reader& r) {
  const auto cli = std::find_if(args.begin(), args.end(),
                                [](const std::string& a) { return a == "llamafactory-cli" || a == "lmf"; });
  for (auto a = args.begin(); a != cli; ++a) {
    if (a->rfind("NNODES=", 0) == 0) r.set("nodes", std::to_string(positive(r, "NNODES", a->substr(7))), "NNODES", a->substr(7));
    if (a->rfind("NPROC_PER_NODE=", 0) == 0) r.unresolved("gpus", "NPROC_PER_NODE", a->substr(15), "GPUs per node; give the cluster");
  }
  std::vector<std::string> rest(cli == args.end() ? args.end() : cli + 1, args.end());
  if (rest.empty() || rest.front() != "train")
    r.fail("llamafactory-cli", rest.empty() ? "" : rest.front(), "trainplan reads `llamafactory-cli train`");
  Json j = Json::object();
  for (std::size_t i = 1; i < rest.size(); ++i) {
    const std::string& w = rest[i];
    if (w.rfind("--", 0) == 0) {
      const bool has_value = i + 1 < rest.size() && rest[i + 1].rfind("--", 0) != 0;
      const std::string key = w.substr(2);
      if (!has_value) {
        j[key] = true;
        continue;
      }
      j[key] = argparse_value(rest[++i]);
    } else if (w.ends_with(".yaml") || w.ends_with(".yml") || w.ends_with(".json")) {
      r.warn("train " + w + ": the LLaMA-Factory config this command runs is not read here (--from that file too)");
    } else if (const std::size_t eq = w.find('='); eq != std::string::npos) {
      j[w.substr(0, eq)] = argparse_value(w.substr(eq + 1));  // OmegaConf overrides after the YAML
    }
  }
  if (!j.empty()) read_llamafactory(j, r);
}

}  // namespace trainplan::request::config
