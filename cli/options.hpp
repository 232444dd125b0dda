#pragma once
// The command line of fit, estimate and plan, built from the library's option schema
// (trainplan/request/request.hpp): this file only spells the schema in CLI11 and hands the values over.

#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "trainplan/request/request_files.hpp"

namespace trainplan::cli {

// The values as typed, in the schema's names, and the --from files, for one command.
struct CommandLine {
  unsigned command = 0;
  std::vector<request::GivenValue> values;
  std::vector<std::string> from;
};

// Every schema option of `cmd` (an request::command bit), with its help and default, and --from.
void add_request_options(CLI::App& app, CommandLine& line, unsigned cmd);

// The request: what the --from files say, then the flags (which override them).
[[nodiscard]] request::Request build_request(const CommandLine& line);

// How the command line names a field of a FieldError template or an emitter's note: "--tp".
[[nodiscard]] std::string flag_words(std::string_view field);

}  // namespace trainplan::cli
