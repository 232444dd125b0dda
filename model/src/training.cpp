#include "trainplan/model/training.hpp"

#include <charconv>
#include <string>

#include "trainplan/core/error.hpp"

namespace trainplan::model {

int parse_transformers_release(std::string_view text, std::string_view what) {
  const auto fail = [&]() -> int {
    throw InputError(std::string(what) + ": '" + std::string(text) +
                     "' is not a transformers release (MAJOR.MINOR or MAJOR.MINOR.PATCH, 4.0 or later, e.g. 5.17)");
  };
  int major = 0;
  int minor = 0;
  const char* p = text.data();
  const char* end = text.data() + text.size();
  auto r = std::from_chars(p, end, major);
  if (r.ec != std::errc() || r.ptr == end || *r.ptr != '.') return fail();
  r = std::from_chars(r.ptr + 1, end, minor);
  if (r.ec != std::errc()) return fail();
  if (r.ptr != end) {  // a patch release: digits only
    if (*r.ptr != '.' || r.ptr + 1 == end) return fail();
    for (const char* c = r.ptr + 1; c != end; ++c)
      if (*c < '0' || *c > '9') return fail();
  }
  if (major < 4 || major > 99 || minor < 0 || minor > 99) return fail();
  return major * 100 + minor;
}

}  // namespace trainplan::model
