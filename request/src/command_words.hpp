// Launch command lines as words: torchrun's, accelerate's and a wrapper's options before the
// script, the script's after it (config_command.cpp); shared by the readers of each script's flags.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "config_reader.hpp"

namespace trainplan::request::config::command {

// "--name value", "--name=value" and bare flags, in order; the script is the first word ending in
// ".py" (not an assignment such as SCRIPT=pretrain_gpt.py). Launcher options (before the script)
// and script options are kept apart.
struct Parsed {
  std::vector<std::pair<std::string, std::string>> launcher;
  std::vector<std::pair<std::string, std::string>> script;
  std::string script_name;
  // A wrapper that ran the launcher after its own "--" (mason.py): its script and flags.
  std::string wrapper_name;
  std::vector<std::pair<std::string, std::string>> wrapper;
};

[[nodiscard]] Parsed parse(const std::vector<std::string>& given);
// A flag's value as a positive integer, or the read fails naming the flag.
[[nodiscard]] std::int64_t positive(Reader& r, const std::string& flag, const std::string& value);
// The launcher's options: nodes and GPUs (torchrun, accelerate launch, deepspeed, mason.py).
void read_launcher(const Parsed& p, Reader& r);

}  // namespace trainplan::request::config::command
