#pragma once
// Hugging Face config.json -> Architecture. Unrelated keys are ignored (HF files carry many); a
// missing or invalid required key is an error naming the key and the file.

#include <string>

#include "trainplan/io/json_util.hpp"
#include "trainplan/model/architecture.hpp"

namespace trainplan::io {

// The model types the reader understands.
[[nodiscard]] const std::set<std::string, std::less<>>& supported_model_types();

// `where` names the source in messages ("config.json at ./my-model/config.json").
[[nodiscard]] model::Architecture architecture_from_hf_config(const Json& config, const std::string& name,
                                                              const std::string& where);

// A path to a config.json, or a folder holding one.
[[nodiscard]] model::Architecture read_hf_config_file(const std::string& path);

}  // namespace trainplan::io
