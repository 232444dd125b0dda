// Megatron-LM's pretrain scripts (NVIDIA/Megatron-LM core_r0.9.0, megatron/training/arguments.py)
// and Megatron-DeepSpeed's, after the launcher's options: parallel degrees, batch, precision,
// recomputation and its method, the distributed optimizer or Megatron FSDP, sequence and context
// parallelism, MoE capacity, FP8 recipes, attention and the optimizer (the flags config_command.cpp
// lists).

#include <algorithm>
#include <array>
#include <map>
#include <string>

#include "command_words.hpp"
#include "config_reader.hpp"
#include "trainplan/core/checked.hpp"
#include "trainplan/core/modes.hpp"
#include "trainplan/model/fp8.hpp"

namespace trainplan::request::config {
namespace {

using command::Parsed;
using command::parse;
using command::positive;
using command::read_launcher;

// arguments.py: num_micro_batches = global_batch_size / (micro_batch_size x data-parallel size).
void set_megatron_accumulation(Reader& r) {
  const Setting* gpus = r.read().find("gpus");
  const Setting* gb = r.read().find("global-batch");
  const Setting* mb = r.read().find("micro-batch");
  if (gpus && gb && mb) {
    const auto value_of = [&r](const char* option) {
      const Setting* s = r.read().find(option);
      return s ? std::int64_t{std::stoll(s->value)} : std::int64_t{1};
    };
    const bool cp = r.read().find("cp") != nullptr;
    const std::int64_t model_parallel = checked_product(
        {value_of("tp"), value_of("pp"), value_of("cp")},
        r.read().path + ": --tensor-model-parallel-size x --pipeline-model-parallel-size" +
            (cp ? " x --context-parallel-size (GPUs)" : " (GPUs)"),
        kMaxClusterGpus);
    const std::int64_t dp = std::stoll(gpus->value) / model_parallel;
    const std::int64_t per_step =
        checked_product({std::stoll(mb->value), dp}, r.read().path + ": --micro-batch-size x data-parallel size");
    if (std::stoll(gpus->value) % model_parallel != 0) {
      // Megatron would refuse this world size; example scripts often leave the node count for
      // the user to raise.
      r.warn("the launcher starts " + gpus->value + " processes, not a multiple of " + (cp ? "TP x PP x CP" : "TP x PP") + " = " +
             std::to_string(model_parallel) + ": the accumulation is left to the cluster");
      r.unresolved("grad-accum", "--global-batch-size", gb->value,
                   "micro-batches per step depend on the data-parallel size");
    } else if (std::stoll(gb->value) % per_step != 0) {
      r.fail("--global-batch-size", gb->value,
             "is not a multiple of --micro-batch-size x data-parallel size (" +
                 std::to_string(per_step) + ")");
    } else {
      r.set("grad-accum", std::to_string(std::stoll(gb->value) / per_step),
            "--global-batch-size / (--micro-batch-size x data-parallel size)",
            gb->value + " / (" + mb->value + " x " + std::to_string(dp) + ")");
    }
  }
}

// What the script's flags leave to be settled once all are read.
struct MegatronFlags {
  bool distributed_optimizer = false;
  bool sgd = false;
  std::string momentum = "0.9";  // arguments.py: --sgd-momentum defaults to 0.9
  std::string fp8_format;          // --fp8-format e4m3|hybrid turns FP8 on
  std::string fp8_recipe = "delayed";  // --fp8-recipe: transformer_config.py's default
  std::string zero_stage;  // Megatron-DeepSpeed's --zero-stage
  std::string fsdp;        // --use-megatron-fsdp or --use-torch-fsdp2
  std::string sharding = "optim_grads_params";  // --data-parallel-sharding-strategy (arguments.py default)
  std::string recompute_method;      // --recompute-method uniform|block (with full granularity)
  std::string recompute_num_layers;  // --recompute-num-layers
  bool cpu_offloading = false;       // --cpu-offloading
  std::string cpu_offloading_layers;  // --cpu-offloading-num-layers
};

// Megatron-DeepSpeed's flags (deepspeedai/Megatron-DeepSpeed megatron/arguments.py: --deepspeed,
// --zero-stage, --checkpoint-activations, the full recomputation of its and old Megatron's
// scripts), multi-token prediction, and flags that change what runs but have no trainplan option:
// said, never dropped in silence.
void read_other_megatron_flag(const std::string& flag, const std::string& value, Reader& r, MegatronFlags& flags) {
  if (flag == "--deepspeed")
    r.set("library", "megatron-deepspeed", flag, "");
  else if (flag == "--zero-stage")
    flags.zero_stage = value;
  else if (flag == "--checkpoint-activations")
    r.set("checkpointing", "full", flag, "");
  else if (flag == "--mtp-num-layers")
    r.set("mtp-layers", std::to_string(positive(r, flag, value)), flag, value);
  else if (flag == "--use-megatron-fsdp" || flag == "--use-torch-fsdp2")
    flags.fsdp = flag;
  else if (flag == "--data-parallel-sharding-strategy")
    flags.sharding = value;
  else if (flag == "--cpu-offloading")
    flags.cpu_offloading = true;
  else if (flag == "--cpu-offloading-num-layers")
    flags.cpu_offloading_layers = value;
  else if (flag == "--hidden-dropout" || flag == "--attention-dropout")
    r.set(flag.substr(2), value, flag, value);
  else if (flag == "--recompute-modules")
    r.warn(flag + " " + value + ": recomputing chosen modules is priced as selective recomputation");
  else if (flag == "--deepspeed_config" || flag == "--deepspeed-config")
    r.warn(flag + " " + value + ": the DeepSpeed config this script passes is not read here (--from it too)");
}

// One flag of the pretrain script.
void read_megatron_flag(const std::string& flag, const std::string& value, Reader& r,
                        MegatronFlags& flags) {
  static const std::map<std::string, std::string, std::less<>> kInts{
      {"--tensor-model-parallel-size", "tp"},
      {"--pipeline-model-parallel-size", "pp"},
      {"--micro-batch-size", "micro-batch"},
      {"--global-batch-size", "global-batch"},
      {"--seq-length", "seq"},
      {"--expert-model-parallel-size", "expert-parallel"},
      {"--context-parallel-size", "cp"}};
  if (const auto it = kInts.find(flag); it != kInts.end()) {
    if (!value.empty() && value[0] == '$')
      r.unresolved(it->second, flag, value, "a shell variable this file does not set");
    else
      r.set(it->second, std::to_string(positive(r, flag, value)), flag, value);
  } else if (flag == "--bf16") {
    r.set("precision", "bf16-mixed", flag, "");
  } else if (flag == "--fp16") {
    r.set("precision", "fp16-mixed", flag, "");
  } else if (flag == "--recompute-granularity") {
    if (value != "full" && value != "selective") r.fail(flag, value, "must be full or selective");
    r.set("checkpointing", value, flag, value);
  } else if (flag == "--recompute-activations") {
    r.set("checkpointing", "selective", flag, "");
  } else if (flag == "--recompute-method") {
    if (value != "uniform" && value != "block") r.fail(flag, value, "must be uniform or block");
    flags.recompute_method = value;
  } else if (flag == "--recompute-num-layers") {
    flags.recompute_num_layers = value;
  } else if (flag == "--use-distributed-optimizer") {
    flags.distributed_optimizer = true;
  } else if (flag == "--sequence-parallel") {
    r.set("sequence-parallel", "true", flag, "");
  } else if (flag == "--tp-comm-overlap") {
    r.set("tp-comm-overlap", "true", flag, "");
  } else if (flag == "--moe-expert-capacity-factor") {
    r.set("moe-capacity-factor", value, flag, value);
  } else if (flag == "--cp-comm-type") {
    const auto k = std::find_if(kMegatronCpCommTypes.begin(), kMegatronCpCommTypes.end(),
                                [&](const auto& m) { return m.second == value; });
    if (k != kMegatronCpCommTypes.end())
      r.set("cp-comm", std::string(to_string(k->first)), flag, value);
    else
      r.fail(flag, value, "must be p2p, a2a or allgather (a2a+p2p, the hierarchical exchange, is not modelled)");
  } else if (flag == "--moe-pad-expert-input-to-capacity") {
    r.set("moe-pad-to-capacity", "true", flag, "");
  } else if (flag == "--use-flash-attn" || flag == "--use-flash-attn-v2") {
    r.set("attention", "flash", flag, "");
  } else if (flag == "--optimizer-cpu-offload") {
    r.set("offload", "optimizer", flag, "");
  } else if (flag == "--optimizer") {
    // Megatron's adam is Apex/TE FusedAdam with decoupled weight decay (AdamW).
    if (value == "adam")
      r.set("optimizer", "adamw", flag, value);
    else if (value == "sgd")
      flags.sgd = true;
    else
      r.unresolved("optimizer", flag, value, "an optimizer trainplan does not model");
  } else if (flag == "--sgd-momentum") {
    flags.momentum = value;
  } else if (flag == "--attention-backend") {
    if (value == "flash")
      r.set("attention", "flash", flag, value);
    else if (value == "unfused")
      r.set("attention", "eager", flag, value);
    else
      r.unresolved("attention", flag, value, "an attention backend trainplan does not model");
  } else if (flag == "--fp8-format") {
    if (value != "e4m3" && value != "hybrid") r.fail(flag, value, "must be e4m3 or hybrid");
    flags.fp8_format = value;
  } else if (flag == "--fp8-recipe") {
    flags.fp8_recipe = value;
  } else if (flag == "--fp8-param-gather") {
    r.set("fp8-param-gather", "true", flag, "");
  } else if (flag == "--num-layers-per-virtual-pipeline-stage") {
    r.unresolved("pp-virtual", flag, value,
                 "virtual stages = layers / (pipeline size x this); give --pp-virtual");
  } else {
    read_other_megatron_flag(flag, value, r, flags);
  }
}

// Megatron-DeepSpeed's --zero-stage under its --deepspeed engine, else Megatron's DDP or its
// distributed optimizer (which shards the optimizer states).
void set_megatron_strategy(const MegatronFlags& flags, Reader& r) {
  // Megatron-FSDP's sharding strategies are ZeRO's stages (megatron/core/distributed/fsdp:
  // optim = 1, optim_grads = 2, optim_grads_params = 3); --use-torch-fsdp2 wraps the model in
  // PyTorch's fully_shard.
  if (flags.fsdp == "--use-torch-fsdp2") {
    r.set("strategy", "fsdp-full", flags.fsdp, "");
    return;
  }
  if (!flags.fsdp.empty()) {
    static const std::array<std::pair<std::string_view, std::string_view>, 4> kStages{
        {{"no_shard", "ddp"}, {"optim", "zero1"}, {"optim_grads", "zero2"}, {"optim_grads_params", "zero3"}}};
    for (const auto& [name, strategy] : kStages)
      if (flags.sharding == name) {
        r.set("strategy", std::string(strategy), flags.fsdp + " --data-parallel-sharding-strategy", flags.sharding);
        return;
      }
    r.fail("--data-parallel-sharding-strategy", flags.sharding,
           "must be no_shard, optim, optim_grads or optim_grads_params");
  }
  if (!flags.zero_stage.empty() && r.read().find("library")) {
    const std::int64_t stage = flags.zero_stage == "0" ? 0 : positive(r, "--zero-stage", flags.zero_stage);
    if (stage > 3) r.fail("--zero-stage", flags.zero_stage, "must be 0, 1, 2 or 3");
    if (stage > 1)
      r.warn("--zero-stage " + flags.zero_stage + ": ZeRO-2/3 under Megatron's block is priced as ZeRO-1 "
             "(Megatron's accounting of a sharded optimizer)");
    r.set("strategy", stage == 0 ? "ddp" : "zero1", "--zero-stage", flags.zero_stage);
    return;
  }
  r.set("strategy", flags.distributed_optimizer ? "zero1" : "ddp",
        flags.distributed_optimizer ? "--use-distributed-optimizer" : "(no --use-distributed-optimizer)", "");
}

// Full recomputation's method (megatron/core/transformer/transformer_block.py _checkpointed_forward):
// block K wraps the first K layers of each pipeline chunk and runs the rest plain; uniform N wraps
// groups of N layers at their input (--checkpoint-group N; 1: every layer on its own).
void set_megatron_recompute_method(const MegatronFlags& flags, Reader& r) {
  if (flags.recompute_method.empty() && flags.recompute_num_layers.empty()) return;
  const Setting* ck = r.read().find("checkpointing");
  if (!ck || ck->value != "full") {
    r.warn("--recompute-method / --recompute-num-layers: Megatron-LM reads them with --recompute-granularity full only");
    return;
  }
  const std::string& n = flags.recompute_num_layers;
  const bool number = !n.empty() && n.size() <= 6 && std::all_of(n.begin(), n.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (flags.recompute_method == "block") {
    if (!number || std::stoi(n) < 1)
      r.fail("--recompute-num-layers", n, "must be a whole number of layers of at least 1 with --recompute-method block");
    r.set("checkpoint-layers", n, "--recompute-method block --recompute-num-layers", n);
  } else if (number && std::stoi(n) > 1) {
    r.set("checkpoint-group", n, "--recompute-method uniform --recompute-num-layers", n);
  } else if (!n.empty() && !number) {
    r.fail("--recompute-num-layers", n, "must be a whole number of layers");
  }
}


// CPU offloading of activations (TransformerConfig cpu_offloading, cpu_offloading_num_layers: 0 by
// default, which offloads nothing).
void set_megatron_cpu_offloading(const MegatronFlags& flags, Reader& r) {
  if (flags.cpu_offloading_layers.empty() || flags.cpu_offloading_layers == "0") {
    if (flags.cpu_offloading) r.warn("--cpu-offloading without --cpu-offloading-num-layers offloads no layer");
    return;
  }
  r.set("offload-activations", std::to_string(positive(r, "--cpu-offloading-num-layers", flags.cpu_offloading_layers)),
        "--cpu-offloading-num-layers", flags.cpu_offloading_layers);
}

}  // namespace

void read_megatron_command(const std::vector<std::string>& args, Reader& r) {
  Parsed p = parse(args);
  // Launch scripts collect the flags in bash arrays, wherever they stand.
  p.script.insert(p.script.begin(), p.launcher.begin(), p.launcher.end());
  p.launcher = p.script;
  read_launcher(p, r);
  r.set("framework", "megatron", "(a Megatron-LM command)", p.script_name);
  MegatronFlags flags;
  for (const auto& [flag, value] : p.script) read_megatron_flag(flag, value, r, flags);
  if (flags.sgd) {
    double m = 0;
    try {
      m = std::stod(flags.momentum);
    } catch (const std::exception&) {
      r.fail("--sgd-momentum", flags.momentum, "must be a number");
    }
    r.set("optimizer", m == 0 ? "sgd" : "sgd-momentum", "--optimizer",
          "sgd, --sgd-momentum " + flags.momentum);
  }
  if (!flags.fp8_format.empty()) {
    const auto k = std::find_if(model::kMegatronFp8Recipes.begin(), model::kMegatronFp8Recipes.end(),
                                [&](const auto& m) { return m.name == flags.fp8_recipe; });
    if (k == model::kMegatronFp8Recipes.end())
      r.fail("--fp8-recipe", flags.fp8_recipe, "must be delayed, tensorwise, mxfp8 or blockwise (custom is not modelled)");
    r.set("fp8", std::string(to_string(k->recipe)), "--fp8-format",
          flags.fp8_format + ", --fp8-recipe " + flags.fp8_recipe);
  }
  // Without --bf16 or --fp16 Megatron trains in fp32 (params_dtype defaults to float32).
  if (!r.read().find("precision")) r.set("precision", "fp32", "(no --bf16 or --fp16)", "");
  // What Megatron does without the flags (arguments.py defaults): no recomputation, the optimizer
  // on the GPU. The file decides these; fit does not search them.
  if (!r.read().find("checkpointing"))
    r.set("checkpointing", "none", "(no --recompute-granularity or --recompute-activations: Megatron's default)", "");
  if (!r.read().find("offload")) r.set("offload", "none", "(no --optimizer-cpu-offload: Megatron's default)", "");
  set_megatron_recompute_method(flags, r);
  set_megatron_cpu_offloading(flags, r);
  set_megatron_accumulation(r);
  set_megatron_strategy(flags, r);
  // Megatron-DeepSpeed's attention is the unfused CoreAttention unless --use-flash-attn(-v2).
  const Setting* lib = r.read().find("library");
  if (lib && lib->value == "megatron-deepspeed" && !r.read().find("attention"))
    r.set("attention", "eager", "(no --use-flash-attn: Megatron-DeepSpeed's unfused CoreAttention)", "");
}

}  // namespace trainplan::request::config
