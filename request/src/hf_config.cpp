#include "trainplan/request/hf_config.hpp"

#include <filesystem>

#include "hf_reader.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/request/files.hpp"
#include "trainplan/model/family.hpp"

namespace trainplan::request {
namespace {

using model::Architecture;
using hf::HfReader;

// 1e14 parameters is 500 times the largest published dense model; every later product of a count
// and a byte size stays far inside int64.
constexpr long double kMaxParameters = 1e14L;

// Refuses shapes whose parameter count would not fit the int64 arithmetic of the model layer;
// counted in long double, so the check itself cannot overflow.
void check_size(const Architecture& a, const std::string& where) {
  long double total =
      2.0L * static_cast<long double>(a.vocab) * static_cast<long double>(a.hidden) +
      static_cast<long double>(a.max_seq) * static_cast<long double>(a.hidden);
  auto stack_size = [&](model::Stack s, std::int64_t layers) {
    long double block = 0;
    for (const model::Linear& l : model::block_linears(a, s))
      block += static_cast<long double>(l.copies) * static_cast<long double>(l.in) *
               (static_cast<long double>(l.out) + 1.0L);
    total += block * static_cast<long double>(layers);
  };
  stack_size(model::Stack::decoder, a.encoder_decoder ? a.decoder_layers : a.layers);
  if (a.encoder_decoder) stack_size(model::Stack::encoder, a.layers);
  if (total > kMaxParameters)
    throw InputError(where + ": the sizes describe about " +
                     std::to_string(static_cast<double>(total / 1e12L)) +
                     " trillion parameters; at most 100 trillion are supported "
                     "(check num_hidden_layers, "
                     "hidden_size, intermediate_size, vocab_size and the "
                     "number of experts)");
}

std::string joined(const std::vector<std::string>& notes) {
  std::string out;
  for (const auto& n : notes) out += (out.empty() ? "" : "; ") + n;
  return out;
}

}  // namespace

namespace {
// The weights' dtype the config declares: `dtype` (transformers 4.56 on, #39782) or `torch_dtype`.
model::CheckpointDtype declared_dtype(const Json& config) {
  for (const char* key : {"dtype", "torch_dtype"}) {
    if (!config.contains(key) || !config.at(key).is_string()) continue;
    const std::string d = config.at(key).get<std::string>();
    if (d == "bfloat16") return model::CheckpointDtype::bf16;
    if (d == "float16") return model::CheckpointDtype::fp16;
    if (d == "float32") return model::CheckpointDtype::fp32;
  }
  return model::CheckpointDtype::unknown;
}
}  // namespace

HfArchitecture hf_architecture(const Json& config, const std::string& name,
                               const std::string& where) {
  if (!config.is_object())
    throw InputError(where + ": expected a JSON object (a Hugging Face config.json)");
  if (!config.contains("model_type") || config.at("model_type").is_null())
    throw InputError(where +
                     ": required key 'model_type' is missing (it names "
                     "the configuration class)");
  const Json& type = config.at("model_type");
  if (!type.is_string())
    throw InputError(where + ": key 'model_type' must be a string (got " + json_excerpt(type) +
                     ")");
  const model::Family* family = model::find_family(type.get<std::string>());
  if (family == nullptr) {
    std::string known;
    for (const auto& k : model::family_names()) known += (known.empty() ? "" : ", ") + k;
    throw InputError(where + ": unsupported model_type " + json_excerpt(type) +
                     " (supported: " + known + ")");
  }
  // A multimodal wrapper (Gemma3ForConditionalGeneration) keeps its language model in
  // text_config: that is what is read, the vision tower is not.
  if (!family->text_config_family.empty()) {
    if (!config.contains("text_config") || !config.at("text_config").is_object())
      throw InputError(where + ": a " + family->model_type +
                       " config needs its 'text_config' object (the language model)");
    Json text = config.at("text_config");
    text["model_type"] = family->text_config_family;
    HfArchitecture out = hf_architecture(text, name, where + " text_config");
    if (out.arch.checkpoint_dtype == model::CheckpointDtype::unknown) out.arch.checkpoint_dtype = declared_dtype(config);
    out.notes.push_back(family->model_type + ": the text_config's language model is read; the "
                        "vision tower (vision_config) is not counted");
    return out;
  }
  HfArchitecture out;
  Architecture& a = out.arch;
  a = family->traits;
  a.name = name;
  a.family = family->model_type;
  a.checkpoint_dtype = declared_dtype(config);
  HfReader r(config, where, *family, out.notes);
  hf::read_family(r, a);
  // The checkpoint's stored format (DeepSeek-V3's FP8 blocks, a GPTQ or AWQ export) is not the
  // training's: the training is priced at its --precision and --method.
  if (const Json* q = r.find({"quantization_config"}); q != nullptr && q->is_object()) {
    const Json* method = q->contains("quant_method") ? &q->at("quant_method") : nullptr;
    out.notes.push_back("quantization_config" + (method != nullptr ? " (quant_method " + json_excerpt(*method) + ")" : std::string()) +
                        ": the checkpoint's stored format, not read; the training is priced at its precision and method");
  }
  if (a.max_seq == 0) {
    // BLOOM (ALiBi) and T5 (relative buckets) have no position limit in their classes; 2048 is the
    // sequence length BLOOM was trained at (Le Scao et al. 2022, arXiv:2211.05100, Table 3).
    a.max_seq = 2048;
    out.notes.push_back(family->config_class +
                        " has no position limit; a 2048-token maximum sequence is assumed");
  }
  try {
    model::validate(a);
  } catch (const InputError& e) {
    throw InputError(where + ": " + e.what() +
                     (out.notes.empty() ? "" : " (defaults used: " + joined(out.notes) + ")"));
  }
  check_size(a, where);
  return out;
}

Architecture architecture_from_hf_config(const Json& config, const std::string& name,
                                         const std::string& where) {
  return hf_architecture(config, name, where).arch;
}

HfArchitecture read_hf_config(const std::string& path) {
  namespace fs = std::filesystem;
  std::string file = path;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    file = (fs::path(path) / "config.json").string();
    if (!fs::exists(file, ec)) throw InputError("folder '" + path + "' holds no config.json");
  }
  const std::string text = read_text_file(file, "model config", kMaxJsonFileBytes);
  const std::string where = "config.json '" + file + "'";
  const Json j = parse_json(text, where, DuplicateKeys::last_wins);  // transformers reads it with json.loads
  // A file called config.json is named after its folder ("./config.json" after the working folder);
  // any other file after itself.
  const fs::path p = fs::absolute(fs::path(file), ec).lexically_normal();
  std::string name =
      p.filename() == "config.json" ? p.parent_path().filename().string() : p.stem().string();
  if (name.empty()) name = p.stem().string();
  return hf_architecture(j, name, where);
}

Architecture read_hf_config_file(const std::string& path) { return read_hf_config(path).arch; }

std::string joined_notes(const std::vector<std::string>& notes) { return joined(notes); }

}  // namespace trainplan::request
