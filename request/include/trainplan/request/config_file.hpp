#pragma once
// Training configs people already have, read as trainplan options: DeepSpeed JSON, accelerate YAML,
// PEFT adapter_config.json, Hugging Face TrainingArguments (JSON or YAML, as HfArgumentParser takes
// them), litgpt, torchtune and axolotl YAML, and torchrun / Megatron-LM command lines. The kind is
// found from the content, never from the file name. What a file leaves to another input
// (DeepSpeed's "auto") is reported as unresolved, never guessed.

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace trainplan::request {

// One training option a file sets, in the CLI's long-option spelling without dashes.
struct Setting {
  std::string option;  // "micro-batch", "strategy", "lora-rank", ...
  std::string value;   // as the CLI would take it: "4", "zero3", "bf16-mixed", "true" for flags
  std::string source;  // "ds_config.json: zero_optimization.stage = 3"
  // What the file implies only where nothing else it is read with says otherwise (a Trainer's
  // 16-bit model trains as *-true unless a DeepSpeed or FSDP config, read with it, keeps fp32
  // master weights): applied before every other file's settings, so theirs override it.
  bool yields = false;
};

// A model loaded in its checkpoint's own dtype (a TrainingArguments' dtype: auto, no DeepSpeed or
// FSDP in the file): its precision is the checkpoint's, known once the model is (resolve.cpp).
struct CheckpointPrecision {
  std::string source;     // "sft.yaml: dtype = \"auto\""
  std::string autocast;   // "bf16", "fp16", or "" without the Trainer's autocast
  std::string open_text;  // what is said where the checkpoint's config declares no dtype
};

struct ConfigRead {
  std::string path;
  std::string kind;  // "DeepSpeed config", "accelerate config", "PEFT adapter_config",
                     // "TrainingArguments", "litgpt config", "torchtune config", "axolotl config",
                     // "torchrun command", "Megatron command"
  std::vector<Setting> settings;
  std::vector<std::string> warnings;    // "ds.json: key 'foo' is not a DeepSpeed key; ignored"
  std::vector<std::string> unresolved;  // "ds.json: train_micro_batch_size_per_gpu = \"auto\" ..."
  // The option each unresolved entry leaves open ("micro-batch"), "" where it is not one option;
  // parallel to `unresolved`.
  std::vector<std::string> unresolved_options;

  // Values trainplan does not model ("optim = galore_adamw: ...; not modelled"): the request is
  // refused unless another input gives the option, naming the nearest modelled value.
  struct Unmodelled {
    std::string text;
    std::string option;   // "optimizer"
    std::string nearest;  // "adamw"
  };
  std::vector<Unmodelled> unmodelled;

  // The precision left to the checkpoint's dtype, where the file loads the model as stored.
  std::optional<CheckpointPrecision> precision_from_checkpoint;

  // The value the file gives an option, or nullptr.
  [[nodiscard]] const Setting* find(const std::string& option) const;
};

// Detects the kind by content (never by extension); throws InputError naming the file (and key)
// when it is not a training config trainplan reads, cannot be parsed, or contradicts itself.
[[nodiscard]] ConfigRead read_training_config(const std::string& path);

// The same from text already in memory; `path` names it in messages.
[[nodiscard]] ConfigRead read_training_config_text(const std::string& text,
                                                   const std::string& path);

// What the files left unresolved ("auto", a value the launch command decides) that neither another
// file nor `given` (options set explicitly, e.g. on the command line) provides: each entry's text
// ("ds.json: train_micro_batch_size_per_gpu = \"auto\": left to other inputs") and its option. The
// request leaves those options out, as if the file had not named them: searched where the command
// searches them, their defaults elsewhere, said in a note (a valid file is answered, not refused).
struct LeftOpen {
  std::string text;
  std::string option;
};
[[nodiscard]] std::vector<LeftOpen> left_open(const std::vector<ConfigRead>& reads, const std::set<std::string>& given);

}  // namespace trainplan::request
