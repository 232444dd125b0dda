#pragma once
// JSON helpers shared by the measurement and profile readers (private to trainplan_io).

#include <algorithm>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include "trainplan/core/enum_table.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/request/json_util.hpp"

namespace trainplan::request::calibrate_json {

// An enum-valued key, parsed with the enum's one string table; the message names file, key and
// the valid values.
template <class E>
[[nodiscard]] E enum_field(ObjectReader& r, const std::string& key) {
  const std::string s = r.string(key);
  if (const auto v = try_parse<E>(s)) return *v;
  throw InputError(r.what() + ": key '" + key + "': unknown " + std::string(EnumTable<E>::kWhat) +
                   " '" + s + "' (expected one of: " + enum_choices<E>() + ")");
}

// Checked before any key is read, so that a misspelt key is reported as itself rather than as the
// key it was meant to be being missing.
inline void reject_unknown_keys(const Json& j, std::span<const std::string_view> allowed,
                                const std::string& what) {
  if (!j.is_object()) throw InputError(what + ": expected a JSON object");
  for (const auto& [key, value] : j.items()) {
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    std::string list;
    for (const std::string_view a : allowed) {
      if (!list.empty()) list += ", ";
      list += a;
    }
    throw InputError(what + ": unknown key '" + key + "' (expected one of: " + list + ")");
  }
}

inline void reject_unknown_keys(const Json& j, std::initializer_list<std::string_view> allowed,
                                const std::string& what) {
  reject_unknown_keys(j, std::span(allowed.begin(), allowed.size()), what);
}

}  // namespace trainplan::request::calibrate_json
