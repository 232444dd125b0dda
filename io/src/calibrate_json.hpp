#pragma once
// JSON helpers shared by the measurement and profile readers (private to trainplan_io).

#include <string>

#include "trainplan/core/enum_table.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/io/json_util.hpp"

namespace trainplan::io::calibrate_json {

// An enum-valued key, parsed with the enum's one string table; the message names file, key and
// the valid values.
template <class E>
[[nodiscard]] E enum_field(ObjectReader& r, const std::string& key) {
  const std::string s = r.string(key);
  if (const auto v = try_parse<E>(s)) return *v;
  throw InputError(r.what() + ": key '" + key + "': unknown " +
                   std::string(EnumTable<E>::kWhat) + " '" + s +
                   "' (expected one of: " + enum_choices<E>() + ")");
}

}  // namespace trainplan::io::calibrate_json
