#include "options.hpp"

namespace trainplan::cli {

void add_request_options(CLI::App& app, CommandLine& line, unsigned cmd) {
  line.command = cmd;
  for (const request::Option& o : request::options()) {
    if (!o.in(cmd)) continue;
    const std::string help = request::option_help(o, cmd);
    const std::string source = o.positional ? "the " + o.name + " argument" : "--" + o.name;
    auto store = [&line, name = o.name, source](const std::string& v) { line.values.push_back({name, v, source}); };
    if (o.positional)
      app.add_option_function<std::string>(o.name, store, help)->required();
    else if (o.kind == request::OptionKind::flag)
      app.add_flag_function("--" + o.name, [store](std::int64_t) { store("true"); }, help);
    else
      app.add_option_function<std::string>("--" + o.name, store, help)->type_name(o.value_name);
  }
  app.add_option("--from", line.from,
                 "training options from config files: DeepSpeed JSON, accelerate YAML, PEFT "
                 "adapter_config.json, TrainingArguments JSON, litgpt/torchtune/axolotl YAML, torchtitan TOML, "
                 "torchrun or Megatron command lines (flags override them)")
      ->type_name("FILE");
}

request::Request build_request(const CommandLine& line) { return request::make_request(line.from, line.values, line.command); }

std::string flag_words(std::string_view field) { return "--" + std::string(field); }

}  // namespace trainplan::cli
