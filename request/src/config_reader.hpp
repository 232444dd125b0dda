#pragma once
// Shared by the per-format readers of config_file.hpp: every format is parsed into a JSON tree
// (YAML through libyaml, resolving plain scalars the way PyYAML does, since every framework read
// here loads its YAML with PyYAML), and a Reader collects what the file sets.

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trainplan/request/config_file.hpp"
#include "trainplan/request/json_util.hpp"

namespace trainplan::request::config {

// A value as the file wrote it, for sources and messages: 3, "auto", true, [q_proj, v_proj].
[[nodiscard]] std::string shown(const Json& v);

// The words a launch script passes to its commands, as bash splits them: quotes, escapes, line
// continuations, comments, and the script's own variables expanded (multi-line quoted values,
// export, ${NAME:-default}); what it does not define stays as written (shell_words.cpp).
[[nodiscard]] std::vector<std::string> script_words(const std::string& text, const std::string& path);

// Parses YAML into JSON; InputError naming the file and line on a syntax error.
[[nodiscard]] Json yaml_to_json(const std::string& text, const std::string& path);

class Reader {
 public:
  Reader(ConfigRead& out, std::string format);

  // Records option = value from `key` (a dotted path) holding `raw`; throws when the file already
  // set the option to a different value (the file contradicts itself).
  void set(const std::string& option, const std::string& value, const std::string& key,
           const Json& raw);
  void set(const std::string& option, const std::string& value, const std::string& key,
           const std::string& raw_text);
  void set(const std::string& option, const std::string& value, const std::string& key,
           const char* raw_text) {
    set(option, value, key, std::string(raw_text));
  }
  // As set(), but what another file read with this one says wins (Setting::yields).
  void set_yielding(const std::string& option, const std::string& value, const std::string& key,
                    const std::string& raw_text);
  void unresolved(const std::string& option, const std::string& key, const Json& raw,
                  const std::string& why);
  // A value trainplan does not model: the request is refused unless another input gives `option`,
  // and the refusal names `nearest`, the modelled value closest to it.
  void unmodelled(const std::string& option, const std::string& key, const Json& raw, const std::string& why,
                  const std::string& nearest);
  void warn(const std::string& text);
  // The precision left to the checkpoint's own dtype (ConfigRead::precision_from_checkpoint).
  void from_checkpoint(const std::string& key, const Json& raw, const std::string& autocast, const std::string& open_text);
  // Warns once for each key of `obj` that is neither in `used` nor in `known`.
  void check_keys(const Json& obj, const std::string& prefix, std::span<const std::string_view> used,
                  std::span<const std::string_view> known);
  void check_keys(const Json& obj, const std::string& prefix,
                  std::initializer_list<std::string_view> used,
                  std::span<const std::string_view> known) {
    check_keys(obj, prefix, std::span<const std::string_view>(used.begin(), used.size()), known);
  }
  void check_keys(const Json& obj, const std::string& prefix,
                  std::initializer_list<std::string_view> used,
                  std::initializer_list<std::string_view> known) {
    check_keys(obj, prefix, used, std::span<const std::string_view>(known.begin(), known.size()));
  }
  [[noreturn]] void fail(const std::string& key, const Json& raw, const std::string& problem) const;
  [[noreturn]] void fail(const std::string& problem) const;

  // The member `key` of `obj`, or nullptr when absent, null or "auto" (which goes to unresolved
  // for `option`): the common start of the typed readers below.
  [[nodiscard]] const Json* given(const Json& obj, const std::string& key, const std::string& prefix,
                                  const std::string& option);
  // Typed members of `obj`: nullopt when absent or null. "auto" (any case) goes to unresolved for
  // `option` and gives nullopt. Wrong type or range: InputError naming file, key and value.
  [[nodiscard]] std::optional<std::int64_t> integer(const Json& obj, const std::string& key,
                                                    const std::string& prefix,
                                                    const std::string& option, std::int64_t min);
  [[nodiscard]] std::optional<double> number(const Json& obj, const std::string& key,
                                             const std::string& prefix, const std::string& option);
  [[nodiscard]] std::optional<bool> boolean(const Json& obj, const std::string& key,
                                            const std::string& prefix, const std::string& option);
  [[nodiscard]] std::optional<std::string> string(const Json& obj, const std::string& key,
                                                  const std::string& prefix,
                                                  const std::string& option);
  // A string or a list of strings, joined with commas.
  [[nodiscard]] std::optional<std::string> string_list(const Json& obj, const std::string& key,
                                                       const std::string& prefix,
                                                       const std::string& option);
  // The integer member `key` (at least `min`) set as `option`, and returned; nullopt as integer().
  std::optional<std::int64_t> set_integer(const Json& obj, const std::string& key,
                                          const std::string& prefix, const std::string& option,
                                          std::int64_t min);

  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] const std::string& format() const { return format_; }
  [[nodiscard]] const ConfigRead& read() const { return out_; }

 private:
  ConfigRead& out_;
  std::string name_;    // the file name, in sources and warnings
  std::string format_;  // "DeepSpeed", in "is not a DeepSpeed key"
};

[[nodiscard]] std::string join_key(const std::string& prefix, const std::string& key);
[[nodiscard]] bool is_auto(const Json& v);
// The object member `key` of `j`, or an empty object where it is absent or not an object (a
// section the file leaves out).
[[nodiscard]] Json section(const Json& j, const std::string& key);

// A name a file spells (an optimizer class, a sharding strategy) and the option value it stands for.
struct Named {
  std::string_view name;
  std::string_view value;
};
// The row of `table` whose name is `name`, or nullptr.
[[nodiscard]] const Named* find_named(std::span<const Named> table, std::string_view name);
// Sets `option` to the value `table` gives the string `raw` (found under `key`); a name the table
// lacks goes to unresolved with `why`.
void set_named(Reader& r, const std::string& option, std::span<const Named> table,
               const std::string& key, const Json& raw, const std::string& why);

// The strategy of a ZeRO stage 0-3 (stage 0: DDP's all-reduce), as DeepSpeed, accelerate and the
// launch scripts name it.
[[nodiscard]] std::string zero_stage_strategy(std::int64_t stage);

// torch.distributed.fsdp.ShardingStrategy's names, as accelerate and axolotl spell them, and the
// strategy each is; HYBRID_SHARD_ZERO2 has none.
[[nodiscard]] std::span<const Named> fsdp_sharding_strategies();

// LoRA's lora_alpha and lora_dropout (PEFT LoraConfig's names, which litgpt, TRL, axolotl and
// torchtune's builders share) of `obj`, set as lora-alpha and lora-dropout; the dropout is a
// probability in [0, 1).
void set_lora_alpha_and_dropout(Reader& r, const Json& obj, const std::string& prefix);
// from_pretrained's attn_implementation (transformers modeling_utils.py): flash_attention_2, sdpa
// or eager, as the Trainer's scripts and axolotl pass it.
void set_attn_implementation(Reader& r, const Json& j);

// The optimizer (and its implementation) a file names under `key`: a Hugging Face Trainer `optim`
// (TrainingArguments, torchrun, axolotl, LLaMA-Factory), an axolotl name, a torch, bitsandbytes
// or torchao class (torchtune, litgpt) or, `any_case`, a DeepSpeed optimizer type. A name
// trainplan does not model is left open with the nearest modelled optimizer (config_optimizers.cpp).
void set_optimizer_name(Reader& r, const std::string& key, const Json& raw, bool any_case = false);
// A Trainer `fsdp` value ("full_shard auto_wrap offload" or a list of those words).
void set_trainer_fsdp(Reader& r, const std::string& key, const Json& raw);
// The FSDP version `obj` gives under `key` (1: FullyShardedDataParallel, 2: fully_shard) as
// fsdp-version; anything else refused by name.
void set_fsdp_version(Reader& r, const Json& obj, const std::string& key, const std::string& prefix);
// TrainingArguments' accelerator_config (an object; axolotl passes its own through):
// gradient_accumulation_kwargs.sync_each_batch as sync-each-batch. A JSON string or file path is
// said in a warning, not read.
void read_accelerator_config(const Json& j, Reader& r);

void read_deepspeed(const Json& j, Reader& r);
void read_accelerate(const Json& j, Reader& r);
void read_peft(const Json& j, Reader& r);
void read_training_arguments(const Json& j, Reader& r);
void read_litgpt(const Json& j, Reader& r);
void read_torchtune(const Json& j, Reader& r);
void read_torchtitan(const Json& j, Reader& r);  // config_torchtitan.cpp
// MosaicML llm-foundry train YAMLs (config_llmfoundry.cpp): a model built by hf_causal_lm or
// mpt_causal_lm, or the batch keys only llm-foundry names.
[[nodiscard]] bool is_llmfoundry(const Json& j);
void read_llmfoundry(const Json& j, Reader& r);
// TOML as JSON (toml_reader.cpp): the subset training configs use; errors name file and line.
[[nodiscard]] Json toml_to_json(const std::string& text, const std::string& path);
// Whether a file's first statement is TOML's (a [table] header or `key = value`).
[[nodiscard]] bool looks_like_toml(const std::string& text);
void read_axolotl(const Json& j, Reader& r);
void read_axolotl_liger(const Json& j, Reader& r);  // config_common.cpp
// axolotl's bf16 / bfloat16 (config_common.cpp): the model loaded in bf16, autocast on.
void read_axolotl_bf16(const Json& j, Reader& r);
// TrainingArguments' torch_compile (and axolotl's, which passes it on, "auto" included): the
// model compiled by accelerate; a mode or backend given alone turns it on too.
void read_torch_compile(const Json& j, Reader& r);  // config_common.cpp
// What --compile does not price, said the same way by every reader: `key` = `value` names a
// torch.compile backend other than Inductor (`backend`), or a mode other than the default.
void warn_unpriced_compile(Reader& r, const std::string& key, const std::string& value, bool backend);
void read_unfrozen(const Json& j, Reader& r);       // config_common.cpp: axolotl's unfrozen_parameters
void read_llamafactory(const Json& j, Reader& r);
// Command lines: the tokens after shell-style splitting.
void read_megatron_command(const std::vector<std::string>& args, Reader& r);
void read_torchrun_command(const std::vector<std::string>& args, Reader& r);
void read_dschat_command(const std::vector<std::string>& args, Reader& r);
void read_openinstruct_command(const std::vector<std::string>& args, Reader& r);
void read_llamafactory_command(const std::vector<std::string>& args, Reader& r);

// Preference training (config_preference.cpp): TRL's DPOConfig, ORPOConfig and CPOConfig fields in
// a TrainingArguments file, LLaMA-Factory's stage and pref_loss, axolotl's rl; each sets
// --objective (and --precomputed-reference) as its framework runs it, or says what it cannot.
void read_trl_preference(const Json& j, Reader& r);
void read_llamafactory_stage(const Json& j, Reader& r);
void read_axolotl_rl(const Json& j, Reader& r);
// The TRL preference configs' fields, read by read_trl_preference.
[[nodiscard]] std::span<const std::string_view> trl_preference_keys();

}  // namespace trainplan::request::config
