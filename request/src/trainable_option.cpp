#include <algorithm>
#include <string>

#include "trainplan/core/error.hpp"
#include "trainplan/model/partial.hpp"
#include "log_text.hpp"
#include "option_details.hpp"

namespace trainplan::request {
namespace {

constexpr std::size_t kMaxSpec = 4096;
using log_text::trim;

bool names_layers(const model::TrainedSubset& s) {
  return s.layers.any() || s.embedding || s.head || s.last > 0 || s.first > 0 || s.spread > 0;
}

}  // namespace

Option trainable_option(Option o) {
  o.kind = OptionKind::text;
  o.parse = [n = o.name](Request& r, std::string_view v) {
    const std::string_view t = trim(v);
    if (t.size() > kMaxSpec)
      throw FieldError("{" + n + "}: longer than " + std::to_string(kMaxSpec) + " characters");
    r.trainable_patterns.clear();
    std::string rest;  // the terms other than match:PATTERN
    for (std::size_t pos = 0; pos <= t.size();) {
      const std::size_t comma = std::min(t.find(',', pos), t.size());
      const std::string_view term = trim(t.substr(pos, comma - pos));
      if (term.starts_with("match:") && term.size() > 6)
        r.trainable_patterns.emplace_back(term.substr(6));
      else
        rest += (rest.empty() ? "" : ",") + std::string(term);
      pos = comma + 1;
    }
    try {
      r.training.partial = rest.empty() ? model::TrainedSubset{} : model::parse_trained_subset(rest, "{" + n + "}");
    } catch (const FieldError&) {
      throw;
    } catch (const InputError& e) {
      throw FieldError(e.what());
    }
    if (!r.trainable_patterns.empty()) r.training.partial.active = true;
  };
  o.text = [](const Request& r) {
    std::string out = r.training.partial.active && names_layers(r.training.partial)
                          ? model::trained_subset_text(r.training.partial)
                          : std::string();
    for (const std::string& p : r.trainable_patterns) out += (out.empty() ? "match:" : ",match:") + p;
    return out;
  };
  return o;
}

}  // namespace trainplan::request
