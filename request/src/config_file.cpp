#include "trainplan/request/config_file.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <string_view>

#include "config_reader.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/request/files.hpp"

namespace trainplan::request {

const Setting* ConfigRead::find(const std::string& option) const {
  for (const Setting& s : settings)
    if (s.option == option) return &s;
  return nullptr;
}

namespace {

bool has_any(const Json& j, std::initializer_list<const char*> keys) {
  return std::any_of(keys.begin(), keys.end(), [&j](const char* k) { return j.contains(k); });
}

bool looks_like_command(const std::string& text) {
  std::size_t b = text.find_first_not_of(" \t\r\n");
  // Comment lines above the command (but a "#!" line is already a script).
  while (b != std::string::npos && text[b] == '#' && text.compare(b, 2, "#!") != 0) {
    const std::size_t eol = text.find('\n', b);
    if (eol == std::string::npos) return false;
    b = text.find_first_not_of(" \t\r\n", eol);
  }
  if (b == std::string::npos) return false;
  static constexpr std::array kLaunchers{"torchrun ", "python ",           "python3 ", "deepspeed ",
                                         "accelerate launch ", "srun ", "llamafactory-cli ", "#!"};
  // Environment assignments before the command: FORCE_TORCHRUN=1 NNODES=2 llamafactory-cli ...
  while (b < text.size() && (std::isupper(static_cast<unsigned char>(text[b])) || text[b] == '_')) {
    const std::size_t eq = text.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_", b);
    if (eq == std::string::npos || text[eq] != '=') break;
    const std::size_t next = text.find_first_of(" \t", eq);
    if (next == std::string::npos) return false;
    b = text.find_first_not_of(" \t", next);
    if (b == std::string::npos) return false;
  }
  return std::any_of(kLaunchers.begin(), kLaunchers.end(),
                     [&](const char* l) { return text.compare(b, std::strlen(l), l) == 0; });
}

ConfigRead read_command(const std::string& text, ConfigRead out) {
  const std::vector<std::string> args = config::script_words(text, out.path);
  const bool megatron = std::any_of(args.begin(), args.end(), [](const std::string& a) {
    return a.find("pretrain_") != std::string::npos || a == "--tensor-model-parallel-size" ||
           a == "--micro-batch-size" || a == "--pipeline-model-parallel-size";
  });
  const bool trainer = std::any_of(args.begin(), args.end(), [](const std::string& a) {
    return a.rfind("--per_device_train_batch_size", 0) == 0 ||
           a.rfind("--gradient_accumulation_steps", 0) == 0 || a.rfind("--deepspeed", 0) == 0;
  });
  const auto has = [&args](std::initializer_list<std::string_view> words) {
    return std::any_of(args.begin(), args.end(), [&words](const std::string& a) {
      return std::find(words.begin(), words.end(), a) != words.end();
    });
  };
  if (has({"llamafactory-cli", "lmf"})) {
    out.kind = "llamafactory-cli command";
    config::Reader r(out, "LLaMA-Factory");
    config::read_llamafactory_command(args, r);
  } else if (std::any_of(args.begin(), args.end(),
                         [](const std::string& a) { return a.ends_with("open_instruct/finetune.py"); })) {
    out.kind = "open-instruct command";
    config::Reader r(out, "open-instruct");
    config::read_openinstruct_command(args, r);
  } else if (has({"--zero_stage"}) && !megatron) {
    out.kind = "DeepSpeed-Chat command";
    config::Reader r(out, "DeepSpeed-Chat");
    config::read_dschat_command(args, r);
  } else if (megatron) {
    out.kind = "Megatron command";
    config::Reader r(out, "Megatron-LM");
    config::read_megatron_command(args, r);
  } else if (trainer) {
    out.kind = "torchrun command";
    config::Reader r(out, "Trainer command-line");
    config::read_torchrun_command(args, r);
  } else {
    throw InputError(out.path +
                     ": a command line, but neither a Megatron-LM pretrain script nor a "
                     "Hugging Face Trainer script (no --micro-batch-size or "
                     "--per_device_train_batch_size)");
  }
  return out;
}

bool is_deepspeed(const Json& j) {
  return j.is_object() && !j.contains("peft_type") &&
         has_any(j, {"zero_optimization", "train_micro_batch_size_per_gpu", "train_batch_size",
                     "zero_allow_untested_optimizer", "steps_per_print"});
}

bool is_torchtune(const Json& j) {
  if (!j.contains("model") || !j.at("model").is_object()) return false;
  const Json& m = j.at("model");
  return m.contains("_component_") && m.at("_component_").is_string() &&
         m.at("_component_").get<std::string>().rfind("torchtune.", 0) == 0;
}

// A kind of training config: its name in ConfigRead::kind, its format as warnings name it ("is not
// a DeepSpeed key"), and its reader.
struct Kind {
  const char* kind;
  const char* format;
  void (*read)(const Json&, config::Reader&);
};

constexpr Kind kPeft{"PEFT adapter_config", "PEFT LoraConfig", config::read_peft};
constexpr Kind kDeepSpeed{"DeepSpeed config", "DeepSpeed", config::read_deepspeed};
constexpr Kind kTrainingArguments{"TrainingArguments", "TrainingArguments",
                                  config::read_training_arguments};
constexpr Kind kAccelerate{"accelerate config", "accelerate config", config::read_accelerate};
constexpr Kind kTorchtune{"torchtune config", "torchtune", config::read_torchtune};
constexpr Kind kLitgpt{"litgpt config", "litgpt finetune", config::read_litgpt};
constexpr Kind kAxolotl{"axolotl config", "axolotl", config::read_axolotl};
constexpr Kind kLlamaFactory{"LLaMA-Factory config", "LLaMA-Factory", config::read_llamafactory};
constexpr Kind kTorchtitan{"torchtitan config", "torchtitan job config", config::read_torchtitan};
constexpr Kind kLlmFoundry{"llm-foundry config", "llm-foundry train", config::read_llmfoundry};

ConfigRead read_as(const Kind& k, const Json& j, ConfigRead out) {
  out.kind = k.kind;
  config::Reader r(out, k.format);
  k.read(j, r);
  return out;
}

// The kind of a JSON object, or nullptr.
const Kind* json_kind(const Json& j) {
  if (j.contains("peft_type")) return &kPeft;
  if (is_deepspeed(j)) return &kDeepSpeed;
  if (has_any(j, {"per_device_train_batch_size", "output_dir", "gradient_checkpointing"}))
    return &kTrainingArguments;
  return nullptr;
}

// The kind of a YAML mapping, or nullptr.
const Kind* yaml_kind(const Json& j) {
  if (has_any(j, {"distributed_type", "compute_environment"})) return &kAccelerate;
  if (is_torchtune(j)) return &kTorchtune;
  if (config::is_llmfoundry(j)) return &kLlmFoundry;
  if (j.contains("train") && has_any(j, {"checkpoint_dir", "model_name"})) return &kLitgpt;  // finetune, pretrain
  if (j.contains("base_model") &&
      has_any(j, {"micro_batch_size", "sequence_len", "adapter", "datasets"}))
    return &kAxolotl;
  if (j.contains("model_name_or_path") &&
      has_any(j, {"finetuning_type", "cutoff_len", "lora_target", "template", "stage"}))
    return &kLlamaFactory;
  if (has_any(j, {"per_device_train_batch_size", "gradient_accumulation_steps"}))
    return &kTrainingArguments;
  return nullptr;
}

ConfigRead read_json_kind(const Json& j, ConfigRead out) {
  if (!j.is_object()) throw InputError(out.path + ": expected a JSON object at the top");
  if (const Kind* k = json_kind(j)) return read_as(*k, j, std::move(out));
  throw InputError(out.path +
                   ": JSON that is not a training config trainplan reads (a DeepSpeed "
                   "config, a PEFT adapter_config.json or TrainingArguments)");
}

ConfigRead read_yaml_kind(const Json& j, ConfigRead out) {
  if (!j.is_object()) throw InputError(out.path + ": expected a YAML mapping at the top");
  if (const Kind* k = yaml_kind(j)) return read_as(*k, j, std::move(out));
  throw InputError(out.path +
                   ": YAML that is not a training config trainplan reads (an "
                   "accelerate, litgpt, torchtune, axolotl, LLaMA-Factory or llm-foundry config, or "
                   "TrainingArguments)");
}

ConfigRead read_toml_kind(const Json& j, ConfigRead out) {
  if (has_any(j, {"training", "parallelism", "job"})) return read_as(kTorchtitan, j, std::move(out));
  throw InputError(out.path + ": TOML that is not a training config trainplan reads (a torchtitan job config, "
                              "with [training] or [parallelism])");
}

}  // namespace

namespace {

ConfigRead read_any_kind(const std::string& text, const std::string& path) {
  ConfigRead out;
  out.path = path;
  const std::size_t b = text.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) throw InputError(path + ": the file is empty");
  if (text[b] == '{') {
    // Python's json keeps the last of a key given twice (Trainer, PEFT); DeepSpeed refuses it.
    Json j = parse_json(text, path, DuplicateKeys::last_wins);
    if (is_deepspeed(j)) j = parse_json(text, path, DuplicateKeys::refuse);
    return read_json_kind(j, std::move(out));
  }
  if (looks_like_command(text)) return read_command(text, std::move(out));
  if (path.ends_with(".toml") || config::looks_like_toml(text))
    return read_toml_kind(config::toml_to_json(text, path), std::move(out));
  return read_yaml_kind(config::yaml_to_json(text, path), std::move(out));
}

}  // namespace

ConfigRead read_training_config_text(const std::string& text, const std::string& path) {
  try {
    return read_any_kind(text, path);
  } catch (const Json::exception& e) {
    // The typed readers name a wrong type themselves; this is the net under a value some reader
    // took as given. Whatever the file holds, it is bad input, not an internal error.
    throw InputError(path + ": a value of an unexpected type (" + std::string(e.what()) + ")");
  }
}

ConfigRead read_training_config(const std::string& path) {
  return read_training_config_text(read_text_file(path, "training config", kMaxConfigBytes), path);
}

std::vector<LeftOpen> left_open(const std::vector<ConfigRead>& reads, const std::set<std::string>& given) {
  std::vector<LeftOpen> out;
  for (const ConfigRead& r : reads) {
    for (std::size_t i = 0; i < r.unresolved.size(); ++i) {
      const std::string& option = i < r.unresolved_options.size() ? r.unresolved_options[i] : "";
      if (option.empty() || given.contains(option)) continue;
      const bool elsewhere = std::any_of(reads.begin(), reads.end(),
                                         [&](const ConfigRead& o) { return o.find(option); });
      if (!elsewhere) out.push_back({r.unresolved[i], option});
    }
  }
  return out;
}

}  // namespace trainplan::request
