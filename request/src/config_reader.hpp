#pragma once
// Shared by the per-format readers of config_file.hpp: every format is parsed into a JSON tree
// (YAML through libyaml, resolving plain scalars the way PyYAML does, since every framework read
// here loads its YAML with PyYAML), and a Reader collects what the file sets.

#include <cstdint>
#include <initializer_list>
#include <optional>
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
  void unresolved(const std::string& option, const std::string& key, const Json& raw,
                  const std::string& why);
  void warn(const std::string& text);
  // Warns once for each key of `obj` that is neither in `used` nor in `known`.
  void check_keys(const Json& obj, const std::string& prefix,
                  std::initializer_list<std::string_view> used,
                  std::initializer_list<std::string_view> known);
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

// The optimizer (and its implementation) of a Hugging Face Trainer `optim` name
// (transformers OptimizerNames); shared by TrainingArguments, torchrun and axolotl.
void set_trainer_optim(Reader& r, const std::string& key, const Json& raw);
// A Trainer `fsdp` value ("full_shard auto_wrap offload" or a list of those words).
void set_trainer_fsdp(Reader& r, const std::string& key, const Json& raw);

void read_deepspeed(const Json& j, Reader& r);
void read_accelerate(const Json& j, Reader& r);
void read_peft(const Json& j, Reader& r);
void read_training_arguments(const Json& j, Reader& r);
void read_litgpt(const Json& j, Reader& r);
void read_torchtune(const Json& j, Reader& r);
void read_axolotl(const Json& j, Reader& r);
void read_llamafactory(const Json& j, Reader& r);
// Command lines: the tokens after shell-style splitting.
void read_megatron_command(const std::vector<std::string>& args, Reader& r);
void read_torchrun_command(const std::vector<std::string>& args, Reader& r);

}  // namespace trainplan::request::config
