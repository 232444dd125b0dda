#pragma once
// Hugging Face config.json -> Architecture. Unrelated keys are ignored (HF files carry many); a
// missing or invalid required key is an error naming the key and the file.

#include <string>
#include <vector>

#include "trainplan/request/json_util.hpp"
#include "trainplan/model/architecture.hpp"

namespace trainplan::request {

// An architecture and what stood in for the keys its file left out, one note per key in the form
// "intermediate_size missing: LlamaConfig default 11008" (the Hugging Face class's default).
struct HfArchitecture {
  model::Architecture arch;
  std::vector<std::string> notes;
};

// The model_type names its family in model/family.hpp, whose keys and class defaults are read.
// Every value is range-checked; a missing key takes the default of its model_type's Hugging Face
// configuration class. Throws InputError naming `where`, the key, the value and what is expected.
[[nodiscard]] HfArchitecture hf_architecture(const Json& config, const std::string& name, const std::string& where);

// A path to a config.json, or a folder holding one.
[[nodiscard]] HfArchitecture read_hf_config(const std::string& path);

// The notes as one line, "; "-separated.
[[nodiscard]] std::string joined_notes(const std::vector<std::string>& notes);

// The same, without the notes. `where` names the source in messages ("config.json at ./my-model/config.json").
[[nodiscard]] model::Architecture architecture_from_hf_config(const Json& config, const std::string& name,
                                                              const std::string& where);

// A path to a config.json, or a folder holding one.
[[nodiscard]] model::Architecture read_hf_config_file(const std::string& path);

}  // namespace trainplan::request
