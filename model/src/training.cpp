#include "trainplan/model/training.hpp"

#include <charconv>
#include <string>

#include "trainplan/core/error.hpp"
#include "trainplan/model/library.hpp"

namespace trainplan::model {

std::optional<int> transformers_release(std::string_view text) {
  int major = 0;
  int minor = 0;
  const char* end = text.data() + text.size();
  auto r = std::from_chars(text.data(), end, major);
  if (r.ec != std::errc() || r.ptr == end || *r.ptr != '.') return std::nullopt;
  r = std::from_chars(r.ptr + 1, end, minor);
  if (r.ec != std::errc()) return std::nullopt;
  if (r.ptr != end) {  // a patch release: digits only
    if (*r.ptr != '.' || r.ptr + 1 == end) return std::nullopt;
    for (const char* c = r.ptr + 1; c != end; ++c)
      if (*c < '0' || *c > '9') return std::nullopt;
  }
  if (major < 4 || major > 99 || minor < 0 || minor > 99) return std::nullopt;
  return major * 100 + minor;
}

int parse_transformers_release(std::string_view text, std::string_view what) {
  if (const auto release = transformers_release(text)) return *release;
  throw InputError(std::string(what) + ": '" + std::string(text) + "' is not a transformers release (" +
                   std::string(kTransformersReleaseForm) + ")");
}

bool Training::computes_in_gathered_16bit() const {
  return gathers_parameters() && is_mixed(precision) && !library_traits(library).fsdp_gathers_fp32;
}

}  // namespace trainplan::model
