// litgpt finetune YAML (config_hub/finetune/*, `litgpt finetune_lora --config`). Key meanings:
// Lightning-AI/litgpt v0.5.13 (@26857050): litgpt/finetune/lora.py setup() (lora_* flags with
// lora_query and lora_value on by default; quantize bnb.*; devices x num_nodes > 1 runs
// ModelParallelStrategy, whose parallelize_fn wraps every block in fully_shard and a
// checkpoint_wrapper), litgpt/finetune/full.py (several devices: FSDPStrategy with
// auto_wrap_policy and activation_checkpointing_policy {Block}), litgpt/args.py TrainArgs
// (gradient_accumulation_iters = global_batch_size / (devices x num_nodes) / micro_batch_size).

#include <string>

#include "config_reader.hpp"
#include "trainplan/core/checked.hpp"

namespace trainplan::request::config {
namespace {

void read_precision(const Json& j, Reader& r) {
  const auto p = r.string(j, "precision", "", "precision");
  if (!p) return;
  static constexpr std::array kPrecisions{
      Named{"bf16-true", "bf16-true"}, Named{"bf16-mixed", "bf16-mixed"}, Named{"16-true", "fp16-true"},
      Named{"16-mixed", "fp16-mixed"}, Named{"32-true", "fp32"},          Named{"32", "fp32"}};
  set_named(r, "precision", kPrecisions, "precision", j.at("precision"),
            "a precision trainplan does not model");
}

// lora.py: quantize is one of bnb.nf4, bnb.nf4-dq, bnb.fp4, bnb.fp4-dq, bnb.int8-training.
bool read_quantize(const Json& j, Reader& r) {
  const auto q = r.string(j, "quantize", "", "quant");
  if (!q) return false;
  if (*q == "bnb.nf4")
    r.set("quant", "nf4", "quantize", j.at("quantize"));
  else if (*q == "bnb.nf4-dq")
    r.set("quant", "nf4-dq", "quantize", j.at("quantize"));
  else if (*q == "bnb.fp4")
    r.set("quant", "fp4", "quantize", j.at("quantize"));
  else if (*q == "bnb.int8-training")
    r.set("quant", "int8", "quantize", j.at("quantize"));
  else if (*q == "bnb.fp4-dq")
    r.unresolved("quant", "quantize", j.at("quantize"),
                 "fp4 with double quantization is not modelled");
  else
    r.fail("quantize", j.at("quantize"),
           "must be bnb.nf4, bnb.nf4-dq, bnb.fp4, bnb.fp4-dq or bnb.int8-training");
  return true;
}

void read_lora(const Json& j, Reader& r) {
  r.set_integer(j, "lora_r", "", "lora-rank", 1);
  set_lora_alpha_and_dropout(r, j, "");
  struct Flag {
    const char* key;
    bool on_by_default;
    const char* roles;
  };
  static constexpr std::array kFlags{
      Flag{"lora_query", true, "q"},           Flag{"lora_key", false, "k"},
      Flag{"lora_value", true, "v"},           Flag{"lora_projection", false, "o"},
      Flag{"lora_mlp", false, "gate,up,down"}, Flag{"lora_head", false, "lm_head"}};
  std::string targets;
  std::string keys;
  for (const Flag& f : kFlags) {
    const bool on = r.boolean(j, f.key, "", "lora-targets").value_or(f.on_by_default);
    if (on) targets += (targets.empty() ? "" : ",") + std::string(f.roles);
    if (j.contains(f.key))
      keys += (keys.empty() ? "" : ", ") + std::string(f.key) + " = " + shown(j.at(f.key));
  }
  if (targets.empty()) r.fail("every lora_* target flag is false: no adapters to train");
  r.set("lora-targets", targets, "lora_query/key/value/projection/mlp/head", keys);
}

void read_train(const Json& j, Reader& r, std::optional<std::int64_t> world) {
  if (!j.contains("train") || !j.at("train").is_object()) return;
  const Json& t = j.at("train");
  const auto gb = r.set_integer(t, "global_batch_size", "train", "global-batch", 1);
  const auto mb = r.set_integer(t, "micro_batch_size", "train", "micro-batch", 1);
  r.set_integer(t, "max_seq_length", "train", "seq", 1);
  if (gb && mb && world) {
    const std::int64_t per_rank = *gb / *world;
    if (per_rank < *mb || per_rank % *mb != 0)
      r.fail("train.global_batch_size", t.at("global_batch_size"),
             "over " + std::to_string(*world) +
                 " devices is not a multiple of train.micro_batch_size = " + std::to_string(*mb));
    r.set("grad-accum", std::to_string(per_rank / *mb),
          "train.global_batch_size / (devices x num_nodes) / train.micro_batch_size",
          std::to_string(*gb) + " / " + std::to_string(*world) + " / " + std::to_string(*mb));
  }
  r.check_keys(t, "train", {"global_batch_size", "micro_batch_size", "max_seq_length"},
               {"save_interval", "log_interval", "lr_warmup_steps", "lr_warmup_fraction", "epochs",
                "max_tokens", "max_steps", "max_time", "tie_embeddings", "max_norm", "min_lr"});
}

// With a bitsandbytes quantization litgpt replaces the AdamW it is given by bitsandbytes'
// PagedAdamW and refuses any other optimizer (litgpt/utils.py instantiate_bnb_optimizer).
void read_optimizer(const Json& j, bool quantized, Reader& r) {
  const bool given = j.contains("optimizer") && !j.at("optimizer").is_null();
  const Json o = given ? j.at("optimizer") : Json("AdamW");  // finetune/lora.py's default
  const Json cls = o.is_object() ? o.value("class_path", Json()) : o;
  if (!cls.is_string()) r.fail("optimizer", o, "must be a class name or {class_path, init_args}");
  const std::string key = o.is_object() ? "optimizer.class_path" : "optimizer";
  if (!quantized) {
    if (given) set_optimizer_name(r, key, cls);
    return;
  }
  if (cls.get<std::string>().find("AdamW") == std::string::npos)
    r.fail(key, cls, "litgpt's quantized finetuning supports only AdamW (it steps bitsandbytes' PagedAdamW)");
  r.set("optimizer", "paged-adamw",
        given ? key + " (with quantize: litgpt's bitsandbytes PagedAdamW)"
              : "(no optimizer: AdamW, which quantize makes litgpt's bitsandbytes PagedAdamW)",
        given ? shown(cls) : "");
}

}  // namespace

void read_litgpt(const Json& j, Reader& r) {
  r.set("library", "litgpt", "(a litgpt YAML)", "");
  if (const auto dir = r.string(j, "checkpoint_dir", "", "model")) {
    // litgpt download puts checkpoints/<org>/<name>: the rest is the Hugging Face repo id.
    std::string id = *dir;
    if (id.rfind("checkpoints/", 0) == 0) id = id.substr(12);
    r.set("model", id, "checkpoint_dir", j.at("checkpoint_dir"));
  }
  // litgpt pretrain's YAML names a litgpt model config (model_name) or defines one (model_config).
  if (const auto name = r.string(j, "model_name", "", "model"))
    r.set("model", *name, "model_name", j.at("model_name"));
  if (j.contains("model_config") && !j.at("model_config").is_null())
    r.warn("model_config: the model this file defines is not read; give the model (a config.json or a catalogue "
           "name)");
  // litgpt pretrain compiles the model whatever the YAML says (pretrain.py: model =
  // torch.compile(model) before fabric.setup, litgpt 26857050); finetuning does not.
  if (j.contains("model_name") || j.contains("model_config"))
    r.set("compile", "true", "(litgpt pretrain: pretrain.py compiles the model)", "");
  read_precision(j, r);
  const bool lora = j.contains("lora_r");
  const bool quant = read_quantize(j, r);
  if (quant && !lora)
    r.fail("quantize", j.at("quantize"),
           "litgpt quantizes the base of LoRA finetuning only (no lora_r)");
  r.set("method", quant ? "qlora" : (lora ? "lora" : "full"),
        quant ? "quantize" : (lora ? "lora_r" : "(no lora_* keys: finetune_full)"),
        quant ? shown(j.at("quantize")) : (lora ? shown(j.at("lora_r")) : ""));
  if (lora) read_lora(j, r);
  std::optional<std::int64_t> world;
  const auto nodes = r.integer(j, "num_nodes", "", "nodes", 1);
  if (j.contains("devices") && j.at("devices").is_number_integer()) {
    const auto devices = r.integer(j, "devices", "", "gpus", 1);
    world = checked_product({*devices, nodes.value_or(1)}, r.read().path + ": devices x num_nodes (GPUs)", kMaxClusterGpus);
    r.set("gpus", std::to_string(*world), "devices x num_nodes",
          std::to_string(*devices) + " x " + std::to_string(nodes.value_or(1)));
    if (*world > 1 && quant)
      r.fail("quantize", j.at("quantize"),
             "litgpt quantizes on one device only (lora.py raises NotImplementedError for "
             "devices x num_nodes > 1)");
    if (*world > 1) {
      r.set("strategy", "fsdp-full", "devices x num_nodes > 1", std::to_string(*world));
      r.set("fsdp-wrap", "block", "devices x num_nodes > 1", std::to_string(*world));
      r.set("checkpointing", "full", "devices x num_nodes > 1", std::to_string(*world));
    } else {
      r.set("strategy", "single", "devices", j.at("devices"));
    }
  } else if (j.contains("devices")) {
    r.unresolved("gpus", "devices", j.at("devices"),
                 "litgpt counts the visible GPUs; left to other inputs");
  }
  if (nodes) r.set("nodes", std::to_string(*nodes), "num_nodes", j.at("num_nodes"));
  read_train(j, r, world);
  read_optimizer(j, quant, r);
  r.check_keys(j, "",
               {"checkpoint_dir", "precision", "quantize", "lora_r", "lora_alpha", "lora_dropout",
                "lora_query", "lora_key", "lora_value", "lora_projection", "lora_mlp", "lora_head",
                "devices", "num_nodes", "train", "optimizer", "model_name", "model_config"},
               {"out_dir", "data", "eval", "log", "logger_name", "seed", "resume", "access_token",
                "initial_checkpoint_dir", "tokenizer_dir"});
}

}  // namespace trainplan::request::config
