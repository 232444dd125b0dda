// torchtune recipe YAML (recipes/configs/*). Key meanings: pytorch/torchtune v0.6.0 (@bd2a0fc7):
// the model builders torchtune/models/*/_model_builders.py (lora_* and qlora_* builders;
// lora_attn_modules q_proj, k_proj, v_proj, output_proj; apply_lora_to_mlp adapts w1, w2, w3;
// apply_lora_to_output the output projection; qlora_* quantizes the base with torchao's
// NF4Tensor, which also quantizes its scales: double quantization), recipes/
// lora_finetune_single_device.py and full_finetune_distributed.py (batch_size per device,
// gradient_accumulation_steps, dtype: the weights themselves are bf16 or fp32 (no autocast),
// enable_activation_checkpointing, enable_activation_offloading, fsdp_cpu_offload,
// fsdp_reshard_after_forward; the distributed recipes shard with FSDP2 fully_shard).

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "config_reader.hpp"

namespace trainplan::request::config {
namespace {

// Recipe keys read without a warning though they change nothing trainplan prices.
constexpr std::array kOtherKeys = std::to_array<std::string_view>({
    "output_dir", "checkpointer", "resume_from_checkpoint", "save_adapter_weights_only", "dataset",
    "dataset_val", "seed", "shuffle", "run_val_every_n_steps", "batch_size_val", "lr_scheduler", "loss",
    "epochs", "max_steps_per_epoch", "clip_grad_norm", "compile", "metric_logger", "log_every_n_steps",
    "log_peak_memory_stats", "log_level", "device", "profiler", "low_cpu_ram", "collate_fn",
    "tensor_parallel_plan", "tensor_parallel_dim", "data_parallel_shard_dim",
    "data_parallel_replicate_dim", "context_parallel_dim", "quantizer", "ref_model", "ref_checkpointer",
    "teacher_model", "teacher_checkpointer", "kd_loss", "kd_ratio", "cudnn_deterministic_mode",
    "num_output_chunks", "save_last_epoch_only"});

void read_model(const Json& j, Reader& r) {
  const Json& m = j.at("model");
  const std::string comp = m.at("_component_").get<std::string>();
  const std::string leaf = comp.substr(comp.rfind('.') + 1);
  const bool qlora = leaf.rfind("qlora_", 0) == 0;
  const bool lora = qlora || leaf.rfind("lora_", 0) == 0;
  r.set("method", qlora ? "qlora" : (lora ? "lora" : "full"), "model._component_",
        m.at("_component_"));
  if (qlora) r.set("quant", "nf4-dq", "model._component_", m.at("_component_"));
  r.unresolved("model", "model._component_", m.at("_component_"),
               "a torchtune builder, not a model trainplan can name; give the model");
  if (!lora) return;
  const std::string p = "model";
  r.set_integer(m, "lora_rank", p, "lora-rank", 1);
  set_lora_alpha_and_dropout(r, m, p);
  std::string targets;
  std::string keys;
  if (m.contains("lora_attn_modules")) {
    const Json& a = m.at("lora_attn_modules");
    if (!a.is_array()) r.fail("model.lora_attn_modules", a, "must be a list");
    for (const Json& e : a) {
      const std::string s = e.is_string() ? e.get<std::string>() : "";
      const char* role = s == "q_proj"        ? "q"
                         : s == "k_proj"      ? "k"
                         : s == "v_proj"      ? "v"
                         : s == "output_proj" ? "o"
                                              : nullptr;
      if (!role)
        r.fail("model.lora_attn_modules", a,
               "'" + s + "' is not one of q_proj, k_proj, v_proj, output_proj");
      targets += (targets.empty() ? "" : ",") + std::string(role);
    }
    keys = "lora_attn_modules = " + shown(a);
  }
  if (r.boolean(m, "apply_lora_to_mlp", p, "lora-targets").value_or(false)) {
    targets += (targets.empty() ? "" : ",") + std::string("gate,up,down");
    keys += ", apply_lora_to_mlp = true";
  }
  if (r.boolean(m, "apply_lora_to_output", p, "lora-targets").value_or(false)) {
    targets += (targets.empty() ? "" : ",") + std::string("lm_head");
    keys += ", apply_lora_to_output = true";
  }
  if (targets.empty())
    r.fail("model: a LoRA builder with no lora_attn_modules and no MLP or output adapters");
  r.set("lora-targets", targets, "model", keys);
  r.check_keys(m, p,
               {"_component_", "lora_rank", "lora_alpha", "lora_dropout", "lora_attn_modules",
                "apply_lora_to_mlp", "apply_lora_to_output"},
               {"use_dora", "quantize_base", "max_seq_len"});
}

void read_optimizer(const Json& j, Reader& r) {
  if (!j.contains("optimizer") || !j.at("optimizer").is_object()) return;
  const Json& o = j.at("optimizer");
  if (!r.string(o, "_component_", "optimizer", "optimizer")) return;
  set_optimizer_name(r, "optimizer._component_", o.at("_component_"));
  if (const auto fused = r.boolean(o, "fused", "optimizer", "optimizer-impl"))
    // torch's AdamW: fused=False given (foreach left unset) is the single-tensor loop, not foreach
    // (torch/optim/adamw.py: the foreach default applies only when neither is given).
    r.set("optimizer-impl", *fused ? "fused" : "for-loop", "optimizer.fused", o.at("fused"));
}

// The distributed recipes' selective checkpointing (full_finetune_distributed.py: with
// enable_activation_checkpointing off, ac_mode and ac_option go to
// training.apply_selective_activation_checkpointing, torchtitan's layer policy: "full" every block,
// "selective" with N one block in N, 0 or 1 every block; with it on as well, neither branch runs).
// Returns whether ac_mode decided the checkpointing.
bool read_selective_ac(const Json& j, std::optional<bool> ac, Reader& r) {
  const auto mode = r.string(j, "ac_mode", "", "checkpointing");
  if (!mode) return false;
  if (ac && *ac) {
    r.warn("ac_mode with enable_activation_checkpointing: true: the recipe applies neither (no checkpointing)");
    r.set("checkpointing", "none", "ac_mode + enable_activation_checkpointing", *mode);
    return true;
  }
  if (*mode == "full") {
    r.set("checkpointing", "full", "ac_mode", *mode);
    return true;
  }
  if (*mode != "selective") r.fail("ac_mode", j.at("ac_mode"), "must be full or selective");
  const Json option = j.contains("ac_option") ? j.at("ac_option") : Json(nullptr);
  const std::string text = option.is_string() ? option.get<std::string>() : option.dump();
  if (text == "op") {
    r.unmodelled("checkpointing", "ac_option", option,
                 "torchtune's per-op policy (its own list of saved ops) is not modelled", "selective-op");
    return true;
  }
  // int(ac_option): a number, or a string of digits.
  const bool digits = !text.empty() && text.size() <= 4 &&
                      std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  const std::int64_t every = digits ? std::stoll(text) : -1;
  if (every < 0 || every > 1024)
    r.fail("ac_option", option, "must be \"op\" or a whole number N of blocks (one in N checkpointed), at most 1024");
  r.set("checkpointing", "full", "ac_mode, ac_option", "selective, " + text);
  if (every > 1) r.set("checkpoint-every", std::to_string(every), "ac_option", option);
  return true;
}

// Activation checkpointing and offloading, and the recipe's sharding.
void read_memory_and_sharding(const Json& j, Reader& r) {
  const auto ac = r.boolean(j, "enable_activation_checkpointing", "", "checkpointing");
  const auto ao = r.boolean(j, "enable_activation_offloading", "", "checkpointing");
  if (!read_selective_ac(j, ac, r) && ac) {
    const bool offload = ao && *ao;
    r.set("checkpointing", *ac ? (offload ? "full-offload" : "full") : "none",
          "enable_activation_checkpointing", j.at("enable_activation_checkpointing"));
  }
  // Only the distributed recipes read these keys.
  const auto reshard = r.boolean(j, "fsdp_reshard_after_forward", "", "strategy");
  const auto cpu_offload = r.boolean(j, "fsdp_cpu_offload", "", "offload");
  for (const char* key :
       {"fsdp_reshard_after_forward", "fsdp_cpu_offload", "custom_sharded_layers"})
    if (j.contains(key) && !r.read().find("strategy"))  // HSDP's replicas set it already
      r.set("strategy", reshard.value_or(true) ? "fsdp-full" : "fsdp-grad-op", key, j.at(key));
  if (cpu_offload)
    r.set("offload", *cpu_offload ? "optimizer+params" : "none", "fsdp_cpu_offload",
          j.at("fsdp_cpu_offload"));
  // torchtune names the configs of its single-device recipes *_single_device.yaml
  // (recipes/configs/*/*_single_device.yaml, listed for those recipes in _recipe_registry.py).
  if (!r.read().find("strategy") && r.name().find("single_device") != std::string::npos)
    r.set("strategy", "single", "(the file name: torchtune's *_single_device configs are the single-device recipe's)",
          "");
  if (!r.read().find("strategy"))
    r.unresolved("strategy", "(recipe)", "single-device or distributed",
                 "the recipe is named on the tune run command line; left to other inputs");
}

// The distributed recipes' device mesh (full_finetune_distributed.py, torchtune v0.6): tensor
// parallel with the models' TP plans (which shard norms along the sequence: SequenceParallel),
// context parallel, and HSDP's replicas; torch.compile and a second model are said, not priced.
void read_parallelism(const Json& j, Reader& r) {
  if (const auto tp = r.integer(j, "tensor_parallel_dim", "", "tp", 1)) {
    r.set("tp", std::to_string(*tp), "tensor_parallel_dim", j.at("tensor_parallel_dim"));
    if (*tp > 1) r.set("sequence-parallel", "true", "tensor_parallel_dim (the TP plans' SequenceParallel norms)", "");
  }
  if (const auto cp = r.integer(j, "context_parallel_dim", "", "cp", 1))
    r.set("cp", std::to_string(*cp), "context_parallel_dim", j.at("context_parallel_dim"));
  if (const auto rep = r.integer(j, "data_parallel_replicate_dim", "", "strategy", 1); rep && *rep > 1)
    r.set("strategy", "fsdp-hybrid", "data_parallel_replicate_dim", j.at("data_parallel_replicate_dim"));
  // recipes' compile: training.compile_model compiles each layer, then the loss
  // (torchtune/training/_compile.py); the optimizer step stays eager.
  if (const auto c = r.boolean(j, "compile", "", "compile"))
    r.set("compile", *c ? "true" : "false", "compile", j.at("compile"));
  for (const char* key : {"ref_model", "teacher_model"})
    if (j.contains(key) && !j.at(key).is_null())
      r.warn(std::string(key) + ": the second model this recipe loads is not counted; priced as the trained model alone");
}

// The loss component: CEWithChunkedOutputLoss has the model return its output projection in chunks
// and upcasts each in the loss (--chunked-loss on, the configs' default); torch's CrossEntropyLoss
// takes the model's fp32 logits (off). LinearCrossEntropyLoss (torchtune after v0.6.1) projects
// inside the loss, chunk by chunk: priced as the chunked loss. Without a loss key the recipe cannot
// run (config.instantiate(cfg.loss)); the library's default answers.
void read_loss(const Json& j, Reader& r) {
  if (!j.contains("loss") || !j.at("loss").is_object()) return;
  const auto c = r.string(j.at("loss"), "_component_", "loss", "chunked-loss");
  if (!c) return;
  const std::string name = c->substr(c->rfind('.') == std::string::npos ? 0 : c->rfind('.') + 1);
  const Json& raw = j.at("loss").at("_component_");
  if (name == "CEWithChunkedOutputLoss") {
    r.set("chunked-loss", "on", "loss._component_", raw);
  } else if (name == "LinearCrossEntropyLoss") {
    r.set("chunked-loss", "on", "loss._component_", raw);
    r.warn("loss LinearCrossEntropyLoss: the output projection runs inside the loss, chunk by chunk, over the "
           "tokens with labels; priced as CEWithChunkedOutputLoss, which also holds every chunk's 16-bit logits "
           "until the loss ends (up to 2 bytes a logit more) and projects every token");
  } else if (name == "CrossEntropyLoss") {
    r.set("chunked-loss", "off", "loss._component_", raw);
  } else {
    r.warn("loss " + *c + ": not a loss trainplan prices; priced as the library's default (--chunked-loss)");
  }
}

}  // namespace

void read_torchtune(const Json& j, Reader& r) {
  r.set("library", "torchtune", "(a torchtune recipe config)", "");
  read_model(j, r);
  r.set_integer(j, "batch_size", "", "micro-batch", 1);
  r.set_integer(j, "gradient_accumulation_steps", "", "grad-accum", 1);
  if (const auto d = r.string(j, "dtype", "", "precision")) {
    if (*d == "bf16")
      r.set("precision", "bf16-true", "dtype", j.at("dtype"));
    else if (*d == "fp32")
      r.set("precision", "fp32", "dtype", j.at("dtype"));
    else
      r.fail("dtype", j.at("dtype"), "must be bf16 or fp32 (torchtune refuses fp16 training)");
  }
  if (j.contains("tokenizer") && j.at("tokenizer").is_object())
    r.set_integer(j.at("tokenizer"), "max_seq_len", "tokenizer", "seq", 1);
  read_parallelism(j, r);
  read_memory_and_sharding(j, r);
  // recipes/full_finetune_single_device.py: optimizer_in_bwd with gradient accumulation raises.
  if (r.boolean(j, "optimizer_in_bwd", "", "optimizer-in-backward").value_or(false)) {
    if (const Setting* ga = r.read().find("grad-accum"); ga && ga->value != "1")
      r.fail("optimizer_in_bwd", j.at("optimizer_in_bwd"),
             "torchtune steps each parameter in backward and cannot accumulate gradients; "
             "gradient_accumulation_steps is " + ga->value);
    r.set("optimizer-in-backward", "true", "optimizer_in_bwd", j.at("optimizer_in_bwd"));
  }
  read_optimizer(j, r);
  read_loss(j, r);
  r.check_keys(j, "",
               {"model", "batch_size", "gradient_accumulation_steps", "dtype", "tokenizer",
                "enable_activation_checkpointing", "enable_activation_offloading",
                "fsdp_reshard_after_forward", "fsdp_cpu_offload", "custom_sharded_layers",
                "optimizer_in_bwd", "optimizer", "ac_mode", "ac_option"},
               kOtherKeys);
}

}  // namespace trainplan::request::config
