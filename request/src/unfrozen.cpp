#include "unfrozen.hpp"

#include <map>
#include <regex>

#include <fmt/format.h>

#include "trainplan/core/error.hpp"
#include "trainplan/model/partial.hpp"

namespace trainplan::request {
namespace {

// axolotl's LayerNamePattern: the name part of the pattern, its dots literal unless before a `+`.
std::regex compile(const std::string& pattern, const std::string& label) {
  static const std::regex range(R"(^(.+)\[([0-9]*)(?::([0-9]*))?\]$)");
  std::smatch m;
  const std::string base = std::regex_match(pattern, m, range) ? m[1].str() : pattern;
  std::string re;
  for (std::size_t i = 0; i < base.size(); ++i)
    re += base[i] == '.' && (i + 1 >= base.size() || base[i + 1] != '+') ? std::string("\\.") : std::string(1, base[i]);
  try {
    return std::regex(re, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw InputError(fmt::format("{} pattern '{}' is not a regular expression ({})", label, pattern, e.what()));
  }
}

}  // namespace

model::TrainedSubset resolve_trainable_patterns(const model::Architecture& a, const model::Training& t,
                                                const std::vector<std::string>& patterns, const std::string& label,
                                                std::vector<std::string>& warnings) {
  using K = model::ParameterName::Kind;
  const std::vector<model::ParameterName> names = model::hf_parameter_names(a, t.transformers);
  const std::string release = model::transformers_release_text(t.transformers);
  if (names.empty())
    throw InputError(fmt::format("{}: the parameter names of family '{}' ({}) are not known here; name the layers "
                                 "instead (e.g. --trainable 24-31,mlp)",
                                 label, a.family, a.name));
  model::TrainedSubset s = t.partial;
  s.active = true;
  std::map<std::int64_t, std::uint32_t> layer_roles;  // what each layer trains
  bool final_norm = false;
  std::string unmatched;  // the patterns that match nothing, quoted
  for (const std::string& pattern : patterns) {
    const std::regex re = compile(pattern, label);
    bool matched = false;
    for (const model::ParameterName& p : names) {
      if (!std::regex_search(p.name, re, std::regex_constants::match_continuous)) continue;
      matched = true;
      switch (p.kind) {
        case K::embedding: s.embedding = true; break;
        case K::head: s.head = true; break;
        case K::final_norm: final_norm = true; break;
        case K::norm:
          s.norms = true;
          layer_roles[p.layer] |= 0u;
          break;
        case K::linear: layer_roles[p.layer] |= p.roles; break;
      }
    }
    if (!matched) unmatched += (unmatched.empty() ? "'" : ", '") + pattern + "'";
  }
  if (!unmatched.empty())
    warnings.push_back(fmt::format("{}: {} match no parameter of {} under transformers {} (an MoE block is `mlp` "
                                   "from transformers 5, Mixtral's `block_sparse_moe` before) and unfreeze nothing",
                                   label, unmatched, a.name, release));
  std::uint32_t roles = 0;
  bool differ = false;
  for (const auto& [layer, r] : layer_roles) {
    if (layer >= 0 && static_cast<std::size_t>(layer) < model::TrainedSubset::kMaxLayers)
      s.layers.set(static_cast<std::size_t>(layer));
    differ = differ || (roles != 0 && r != 0 && r != roles);
    roles |= r;
  }
  s.roles |= roles;
  if (differ)
    warnings.push_back(fmt::format("{}: the layers it unfreezes train different parts; each is priced as training "
                                   "all of them",
                                   label));
  if (final_norm)
    warnings.push_back(fmt::format("{}: the final norm it unfreezes ({} weights) is not counted", label, a.hidden));
  if (s.layers.none() && !s.embedding && !s.head)
    throw InputError(fmt::format("{}: unfreezes no parameter of {} under transformers {}, so nothing would train "
                                 "(axolotl warns 'All parameters are frozen')",
                                 label, a.name, release));
  return s;
}

}  // namespace trainplan::request
