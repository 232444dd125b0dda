#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <regex>

#include "config_reader.hpp"
#include "trainplan/core/error.hpp"

namespace trainplan::io::config {

std::string shown(const Json& v) {
  if (v.is_string()) return "\"" + v.get<std::string>() + "\"";
  if (v.is_array()) {
    std::string s = "[";
    for (const auto& e : v) s += (s.size() > 1 ? ", " : "") + shown(e);
    return s + "]";
  }
  if (v.is_object()) return "{...}";
  return v.dump();
}

std::string join_key(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : prefix + "." + key;
}

bool is_auto(const Json& v) {
  if (!v.is_string()) return false;
  std::string s = v.get<std::string>();
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s == "auto";
}

namespace {

// PyYAML's implicit resolvers (yaml/resolver.py, YAML 1.1): the frameworks read here all load their
// YAML with PyYAML, so `no` is a boolean there, and `2e-5` (no dot) stays a string.
Json plain_scalar(const std::string& s) {
  static const std::regex kNull("^(~|null|Null|NULL|)$");
  static const std::regex kTrue("^(yes|Yes|YES|true|True|TRUE|on|On|ON)$");
  static const std::regex kFalse("^(no|No|NO|false|False|FALSE|off|Off|OFF)$");
  static const std::regex kInt("^[-+]?(0|[1-9][0-9_]*)$");
  static const std::regex kFloat(
      R"(^[-+]?([0-9][0-9_]*)?\.[0-9_]*([eE][-+][0-9]+)?$|^[-+]?\.(inf|Inf|INF)$)");
  if (std::regex_match(s, kNull)) return nullptr;
  if (std::regex_match(s, kTrue)) return true;
  if (std::regex_match(s, kFalse)) return false;
  std::string digits = s;
  digits.erase(std::remove(digits.begin(), digits.end(), '_'), digits.end());
  if (std::regex_match(s, kInt)) {
    try {
      return std::stoll(digits);
    } catch (const std::out_of_range&) {
      return s;
    }
  }
  if (std::regex_match(s, kFloat) && s != "." && s != "-." && s != "+.") {
    try {
      return std::stod(digits);
    } catch (const std::exception&) {
      return s;
    }
  }
  return s;
}

Json to_json(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Scalar:
      // yaml-cpp tags quoted scalars "!": they are strings whatever they spell.
      return n.Tag() == "!" ? Json(n.Scalar()) : plain_scalar(n.Scalar());
    case YAML::NodeType::Sequence: {
      Json a = Json::array();
      for (const auto& e : n) a.push_back(to_json(e));
      return a;
    }
    case YAML::NodeType::Map: {
      Json o = Json::object();
      for (const auto& kv : n) o[kv.first.as<std::string>()] = to_json(kv.second);
      return o;
    }
  }
  return nullptr;
}

}  // namespace

Json yaml_to_json(const std::string& text, const std::string& path) {
  try {
    return to_json(YAML::Load(text));
  } catch (const YAML::Exception& e) {
    throw InputError(path + ": invalid YAML at line " + std::to_string(e.mark.line + 1) + ": " +
                     e.msg);
  }
}

Reader::Reader(ConfigRead& out, std::string format)
    : out_(out),
      name_(std::filesystem::path(out.path).filename().string()),
      format_(std::move(format)) {}

void Reader::set(const std::string& option, const std::string& value, const std::string& key,
                 const Json& raw) {
  set(option, value, key, shown(raw));
}

void Reader::set(const std::string& option, const std::string& value, const std::string& key,
                 const std::string& raw_text) {
  const std::string source = name_ + ": " + key + (raw_text.empty() ? "" : " = " + raw_text);
  for (const Setting& s : out_.settings) {
    if (s.option != option) continue;
    if (s.value == value) return;
    throw InputError(out_.path + ": " + key + (raw_text.empty() ? "" : " = " + raw_text) +
                     " contradicts " + s.source.substr(name_.size() + 2) + " (" + option + " " +
                     value + " vs " + s.value + ")");
  }
  out_.settings.push_back({option, value, source});
}

void Reader::unresolved(const std::string& option, const std::string& key, const Json& raw,
                        const std::string& why) {
  out_.unresolved.push_back(name_ + ": " + key + " = " + shown(raw) + ": " + why);
  out_.unresolved_options.push_back(option);
}

void Reader::warn(const std::string& text) { out_.warnings.push_back(name_ + ": " + text); }

void Reader::check_keys(const Json& obj, const std::string& prefix,
                        std::initializer_list<std::string_view> used,
                        std::initializer_list<std::string_view> known) {
  if (!obj.is_object()) return;
  for (const auto& [k, v] : obj.items()) {
    const auto is = [&k](std::string_view s) { return s == k; };
    if (std::any_of(used.begin(), used.end(), is) || std::any_of(known.begin(), known.end(), is))
      continue;
    warn("key '" + join_key(prefix, k) + "' is not a " + format_ + " key; ignored");
  }
}

void Reader::fail(const std::string& key, const Json& raw, const std::string& problem) const {
  throw InputError(out_.path + ": key '" + key + "' = " + shown(raw) + ": " + problem);
}

void Reader::fail(const std::string& problem) const {
  throw InputError(out_.path + ": " + problem);
}

const Json* Reader::given(const Json& obj, const std::string& key, const std::string& prefix,
                          const std::string& option) {
  if (!obj.contains(key) || obj.at(key).is_null()) return nullptr;
  const Json& v = obj.at(key);
  if (is_auto(v)) {
    unresolved(option, join_key(prefix, key), v, "left to other inputs");
    return nullptr;
  }
  return &v;
}

std::optional<std::int64_t> Reader::integer(const Json& obj, const std::string& key,
                                            const std::string& prefix, const std::string& option,
                                            std::int64_t min) {
  const Json* value = given(obj, key, prefix, option);
  if (!value) return std::nullopt;
  const Json& v = *value;
  const std::string path = join_key(prefix, key);
  std::int64_t i = 0;
  if (v.is_number_integer()) {
    i = v.get<std::int64_t>();
  } else if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>() &&
             std::abs(v.get<double>()) < 9.0e15) {
    i = static_cast<std::int64_t>(v.get<double>());  // DeepSpeed's 2e8 style
  } else {
    fail(path, v, "must be an integer");
  }
  if (i < min) fail(path, v, "must be at least " + std::to_string(min));
  return i;
}

std::optional<double> Reader::number(const Json& obj, const std::string& key,
                                     const std::string& prefix, const std::string& option) {
  const Json* value = given(obj, key, prefix, option);
  if (!value) return std::nullopt;
  const Json& v = *value;
  if (!v.is_number()) fail(join_key(prefix, key), v, "must be a number");
  return v.get<double>();
}

std::optional<bool> Reader::boolean(const Json& obj, const std::string& key,
                                    const std::string& prefix, const std::string& option) {
  const Json* value = given(obj, key, prefix, option);
  if (!value) return std::nullopt;
  const Json& v = *value;
  if (!v.is_boolean()) fail(join_key(prefix, key), v, "must be true or false");
  return v.get<bool>();
}

std::optional<std::string> Reader::string(const Json& obj, const std::string& key,
                                          const std::string& prefix, const std::string& option) {
  const Json* value = given(obj, key, prefix, option);
  if (!value) return std::nullopt;
  const Json& v = *value;
  if (!v.is_string()) fail(join_key(prefix, key), v, "must be a string");
  return v.get<std::string>();
}

std::optional<std::string> Reader::string_list(const Json& obj, const std::string& key,
                                               const std::string& prefix,
                                               const std::string& option) {
  if (!obj.contains(key) || obj.at(key).is_null()) return std::nullopt;
  const Json& v = obj.at(key);
  if (!v.is_array()) return string(obj, key, prefix, option);
  std::string joined;
  for (const Json& e : v) {
    if (!e.is_string() || e.get<std::string>().empty())
      fail(join_key(prefix, key), v, "must be a list of module names");
    joined += (joined.empty() ? "" : ",") + e.get<std::string>();
  }
  if (joined.empty()) fail(join_key(prefix, key), v, "must name at least one module");
  return joined;
}

// transformers/training_args.py OptimizerNames (v4.46): the names whose optimizer trainplan models.
// adamw_torch is torch.optim.AdamW with its default (foreach on CUDA), adamw_torch_fused passes
// fused=True, adamw_hf was transformers' own per-parameter AdamW; the bitsandbytes names are
// bnb.optim.AdamW8bit and PagedAdamW8bit.
void set_trainer_optim(Reader& r, const std::string& key, const Json& raw) {
  if (!raw.is_string()) r.fail(key, raw, "must be an optimizer name");
  const std::string name = raw.get<std::string>();
  struct Row {
    std::string_view optim, optimizer, impl;
  };
  static constexpr std::array kRows{
      Row{"adamw_torch", "adamw", ""},      Row{"adamw_torch_fused", "adamw", "fused"},
      Row{"adamw_hf", "adamw", "for-loop"}, Row{"adamw_bnb_8bit", "adamw-8bit", ""},
      Row{"adamw_8bit", "adamw-8bit", ""},  Row{"paged_adamw_8bit", "paged-adamw-8bit", ""},
      Row{"adafactor", "adafactor", ""},    Row{"sgd", "sgd", ""}};
  for (const Row& row : kRows) {
    if (row.optim != name) continue;
    r.set("optimizer", std::string(row.optimizer), key, raw);
    if (!row.impl.empty()) r.set("optimizer-impl", std::string(row.impl), key, raw);
    return;
  }
  r.unresolved("optimizer", key, raw,
               "an optimizer trainplan does not model; left to other inputs");
}

namespace {
std::vector<std::string> words(const Json& raw) {
  std::vector<std::string> out;
  const auto split = [&out](const std::string& s) {
    std::string w;
    for (char c : s) {
      if (c == ' ' || c == ',') {
        if (!w.empty()) out.push_back(w);
        w.clear();
      } else {
        w += c;
      }
    }
    if (!w.empty()) out.push_back(w);
  };
  if (raw.is_string()) split(raw.get<std::string>());
  if (raw.is_array())
    for (const Json& e : raw)
      if (e.is_string()) split(e.get<std::string>());
  return out;
}
}  // namespace

// transformers/training_args.py FSDPOption (v4.46): full_shard, shard_grad_op, no_shard,
// hybrid_shard, hybrid_shard_zero2, offload, auto_wrap.
void set_trainer_fsdp(Reader& r, const std::string& key, const Json& raw) {
  if (!raw.is_string() && !raw.is_array())
    r.fail(key, raw, "must be a string or a list of FSDP options");
  for (const std::string& w : words(raw)) {
    if (w == "full_shard")
      r.set("strategy", "fsdp-full", key, raw);
    else if (w == "shard_grad_op")
      r.set("strategy", "fsdp-grad-op", key, raw);
    else if (w == "hybrid_shard")
      r.set("strategy", "fsdp-hybrid", key, raw);
    else if (w == "no_shard")
      r.set("strategy", "ddp", key, raw);
    else if (w == "offload")
      r.set("offload", "optimizer+params", key, raw);
    else if (w == "auto_wrap")
      r.set("fsdp-wrap", "block", key, raw);
    else if (w == "hybrid_shard_zero2")
      r.unresolved("strategy", key, raw, "hybrid_shard_zero2 has no trainplan strategy");
    else
      r.fail(key, raw,
             "'" + w +
                 "' is not an FSDP option (full_shard, shard_grad_op, "
                 "hybrid_shard, no_shard, offload, auto_wrap)");
  }
}

}  // namespace trainplan::io::config
