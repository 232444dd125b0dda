#pragma once
// The builders of the option schema (options.cpp, options_sharding.cpp): how an option of each kind
// is parsed, written back and described; shared by the files that list the options.
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "trainplan/core/error.hpp"
#include "trainplan/request/request.hpp"
#include "log_text.hpp"

namespace trainplan::request::option_schema {

inline constexpr std::size_t kMaxText = 4096;

using log_text::trim;

inline std::string shown(std::string_view v) {
  if (v.size() <= 40) return std::string(v);
  return std::string(v.substr(0, 37)) + "... (" + std::to_string(v.size()) + " characters)";
}

[[noreturn]] inline void bad(const std::string& name, const std::string& problem) {
  throw FieldError("{" + name + "}: " + problem);
}

inline std::int64_t parse_integer(const std::string& name, std::string_view raw, std::int64_t lo, std::int64_t hi) {
  const std::string_view v = trim(raw);
  std::int64_t x = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (v.empty() || end != v.data() + v.size() || ec == std::errc::invalid_argument)
    bad(name, fmt::format("'{}' is not a whole number", shown(raw)));
  if (ec == std::errc::result_out_of_range || x > hi)
    throw FieldError(fmt::format("{{{}}} must be at most {} (got {})", name, hi, shown(raw)));
  if (x < lo) throw FieldError(fmt::format("{{{}}} must be at least {} (got {})", name, lo, shown(raw)));
  return x;
}

inline double parse_real(const std::string& name, std::string_view raw, double lo, double hi, bool open_low,
                         bool open_high) {
  const std::string_view v = trim(raw);
  double x = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (v.empty() || end != v.data() + v.size() || ec == std::errc::invalid_argument)
    bad(name, fmt::format("'{}' is not a number", shown(raw)));
  if (ec == std::errc::result_out_of_range || !std::isfinite(x))
    throw FieldError(fmt::format("{{{}}} must be a finite number (got {})", name, shown(raw)));
  if (open_low ? x <= lo : x < lo)
    throw FieldError(
        fmt::format("{{{}}} must be {} {:g} (got {})", name, open_low ? "above" : "at least", lo, shown(raw)));
  if (open_high ? x >= hi : x > hi)
    throw FieldError(
        fmt::format("{{{}}} must be {} {:g} (got {})", name, open_high ? "below" : "at most", hi, shown(raw)));
  return x;
}

inline bool parse_flag(const std::string& name, std::string_view raw) {
  const std::string_view v = trim(raw);
  if (v == "true" || v == "1" || v == "yes" || v == "on") return true;
  if (v == "false" || v == "0" || v == "no" || v == "off") return false;
  bad(name, fmt::format("'{}' is not true or false", shown(raw)));
}

inline std::string parse_text(const std::string& name, std::string_view raw) {
  const std::string_view v = trim(raw);
  if (v.size() > kMaxText) bad(name, fmt::format("too long ({} characters; at most {})", v.size(), kMaxText));
  return std::string(v);
}

template <class E>
std::vector<std::string> choice_names() {
  std::vector<std::string> out;
  for (const auto& [value, spelling] : EnumTable<E>::kEntries) out.emplace_back(spelling);
  return out;
}

template <class E>
E parse_choice(const std::string& name, std::string_view raw) {
  if (const auto e = try_parse<E>(trim(raw))) return *e;
  bad(name, fmt::format("unknown {} '{}' (expected one of: {})", EnumTable<E>::kWhat, shown(raw),
                        enum_choices<E>()));
}

inline std::string real_text(double x) { return fmt::format("{:g}", x); }

// One option's spelling and documentation; the typed builders below add parse and text.
inline Option describe(std::string name, std::string value_name, std::string label, std::string group,
                std::string help, std::string default_text) {
  Option o;
  o.name = std::move(name);
  o.value_name = std::move(value_name);
  o.label = std::move(label);
  o.group = std::move(group);
  o.help = std::move(help);
  o.default_text = std::move(default_text);
  return o;
}

// `field` is a generic lambda returning a reference to the field: [](auto& r) -> auto& {...}.
template <class E, class Field>
Option choice(Option o, Field field) {
  o.kind = OptionKind::choice;
  o.choices = choice_names<E>();
  o.parse = [n = o.name, field](Request& r, std::string_view v) { field(r) = parse_choice<E>(n, v); };
  o.text = [field](const Request& r) { return std::string(to_string(field(r))); };
  return o;
}

// An integer field, or one the request holds as std::optional (no value: not asked).
template <class Field>
Option integer(Option o, std::int64_t lo, std::int64_t hi, Field field) {
  o.kind = OptionKind::integer;
  o.lowest = static_cast<double>(lo);
  o.highest = static_cast<double>(hi);
  o.parse = [n = o.name, lo, hi, field](Request& r, std::string_view v) {
    using T = std::remove_cvref_t<decltype(field(r))>;
    field(r) = static_cast<T>(parse_integer(n, v, lo, hi));
  };
  o.text = [field](const Request& r) -> std::string {
    if constexpr (requires { field(r).has_value(); })
      return field(r) ? std::to_string(*field(r)) : std::string();
    else
      return std::to_string(field(r));
  };
  return o;
}

template <class Field>
Option real(Option o, double lo, double hi, bool open_low, bool open_high, Field field) {
  o.kind = OptionKind::real;
  o.lowest = lo;
  o.highest = hi;
  o.parse = [n = o.name, lo, hi, open_low, open_high, field](Request& r, std::string_view v) {
    field(r) = parse_real(n, v, lo, hi, open_low, open_high);
  };
  o.text = [field](const Request& r) -> std::string {
    if constexpr (requires { field(r).has_value(); })
      return field(r) ? real_text(*field(r)) : std::string();
    else
      return real_text(field(r));
  };
  return o;
}

// A number the request may leave unset (a std::optional field): written as text, so that a form
// shows it blank until given; blank unsets it.
template <class Field>
Option optional_real(Option o, double lo, double hi, bool open_low, bool open_high, Field field) {
  o = real(std::move(o), lo, hi, open_low, open_high, field);
  o.kind = OptionKind::text;
  o.parse = [n = o.name, lo, hi, open_low, open_high, field](Request& r, std::string_view v) {
    if (trim(v).empty())
      field(r).reset();
    else
      field(r) = parse_real(n, v, lo, hi, open_low, open_high);
  };
  return o;
}

template <class Field>
Option flag(Option o, Field field) {
  o.kind = OptionKind::flag;
  o.parse = [n = o.name, field](Request& r, std::string_view v) { field(r) = parse_flag(n, v); };
  o.text = [field](const Request& r) { return std::string(field(r) ? "true" : "false"); };
  return o;
}

// A switch held as a bool that is on or off rather than present or absent (a library may set it
// unless told otherwise): a choice of the two words.
template <class Field>
Option on_off(Option o, Field field) {
  o.kind = OptionKind::choice;
  o.choices = {"on", "off"};
  o.parse = [n = o.name, field](Request& r, std::string_view v) {
    const std::string_view w = trim(v);
    if (w != "on" && w != "off") bad(n, fmt::format("'{}' is not on or off", shown(v)));
    field(r) = w == "on";
  };
  o.text = [field](const Request& r) { return std::string(field(r) ? "on" : "off"); };
  return o;
}

template <class Field>
Option text(Option o, Field field) {
  o.kind = OptionKind::text;
  o.parse = [n = o.name, field](Request& r, std::string_view v) { field(r) = parse_text(n, v); };
  o.text = [field](const Request& r) -> std::string {
    if constexpr (requires { field(r).has_value(); })
      return field(r).value_or(std::string());
    else
      return field(r);
  };
  return o;
}

// A release number held as an int: `parse` reads it (nothing for a malformed one), `shown_as`
// writes it back (model/training.hpp).
template <class Field>
Option release(Option o, std::optional<int> (*parse)(std::string_view), std::string_view software,
               std::string_view form, Field field, std::string (*shown_as)(int)) {
  o.kind = OptionKind::text;
  o.parse = [n = o.name, parse, software, form, field](Request& r, std::string_view v) {
    const std::optional<int> release = parse(trim(v));
    if (!release) bad(n, fmt::format("'{}' is not a {} release ({})", shown(v), software, form));
    field(r) = *release;
  };
  o.text = [field, shown_as](const Request& r) { return shown_as(field(r)); };
  return o;
}

inline Option only(Option o, unsigned commands) {
  o.commands = commands;
  return o;
}

inline Option searched(Option o, Searched s) {
  o.searched = s;
  return o;
}

inline Option applies(Option o, std::function<bool(const Request&, unsigned)> when, std::string words) {
  o.applies = std::move(when);
  o.applies_text = std::move(words);
  return o;
}

}  // namespace trainplan::request::option_schema

namespace trainplan::request {

// Option lists of options_sharding.cpp, in the order build() (options.cpp) joins them.
[[nodiscard]] std::vector<Option> sharding_options();
[[nodiscard]] std::vector<Option> megatron_options();

}  // namespace trainplan::request
