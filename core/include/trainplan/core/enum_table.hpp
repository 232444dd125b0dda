#pragma once
// One string table per enum, shared by the CLI, JSON and the GUI. A specialisation of EnumTable<E>
// lists every value exactly once; parsing an unknown string is an error that lists the valid ones.

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "trainplan/core/error.hpp"

namespace trainplan {

template <class E>
struct EnumTable;  // specialise: static constexpr std::string_view kWhat; static constexpr std::array kEntries;

template <class E>
[[nodiscard]] constexpr std::string_view to_string(E e) {
  for (const auto& [v, s] : EnumTable<E>::kEntries)
    if (v == e) return s;
  return "?";
}

template <class E>
[[nodiscard]] constexpr std::optional<E> try_parse(std::string_view s) {
  for (const auto& [v, name] : EnumTable<E>::kEntries)
    if (name == s) return v;
  return std::nullopt;
}

template <class E>
[[nodiscard]] std::string enum_choices() {
  std::string out;
  for (const auto& [v, name] : EnumTable<E>::kEntries) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

// Throws InputError "unknown <what> 'x' (expected one of: a, b, c)".
template <class E>
[[nodiscard]] E parse_enum(std::string_view s) {
  if (auto v = try_parse<E>(s)) return *v;
  throw InputError("unknown " + std::string(EnumTable<E>::kWhat) + " '" + std::string(s) +
                   "' (expected one of: " + enum_choices<E>() + ")");
}

}  // namespace trainplan
