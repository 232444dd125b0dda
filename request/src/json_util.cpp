#include "trainplan/request/json_util.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <vector>

#include "trainplan/core/error.hpp"

namespace trainplan::request {

std::string text_excerpt(const std::string& s) {
  return s.size() > 80 ? s.substr(0, 38) + "..." + s.substr(s.size() - 39) : s;
}

namespace {

// Appends v's JSON text to out until out holds more than `limit` characters; iterative in the
// containers' depth only up to the limit, so it stays shallow whatever v holds.
void append_excerpt(const Json& v, std::string& out, std::size_t limit) {
  if (out.size() > limit) return;
  if (v.is_array() || v.is_object()) {
    out += v.is_array() ? '[' : '{';
    bool first = true;
    for (auto it = v.begin(); it != v.end() && out.size() <= limit; ++it) {
      if (!first) out += ',';
      first = false;
      if (v.is_object()) out += Json(it.key()).dump() + ':';
      append_excerpt(*it, out, limit);
    }
    out += v.is_array() ? ']' : '}';
    return;
  }
  out += v.dump();
}

}  // namespace

std::string json_excerpt(const Json& v) {
  std::string s;
  append_excerpt(v, s, 40);
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

Json parse_json(std::string_view text, const std::string& what, DuplicateKeys duplicates) {
  // One set of keys per open object (arrays push an empty one), so a key given twice is named
  // where it occurs and the depth is known at every opening.
  std::vector<std::set<std::string>> open;
  const Json::parser_callback_t check = [&](int, Json::parse_event_t event, Json& parsed) {
    switch (event) {
      case Json::parse_event_t::object_start:
      case Json::parse_event_t::array_start:
        if (open.size() >= static_cast<std::size_t>(kMaxJsonDepth))
          throw InputError(what + ": nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
        open.emplace_back();
        break;
      case Json::parse_event_t::object_end:
      case Json::parse_event_t::array_end:
        if (!open.empty()) open.pop_back();
        break;
      case Json::parse_event_t::key:
        if (duplicates == DuplicateKeys::refuse && !open.empty() &&
            !open.back().insert(parsed.get<std::string>()).second)
          throw InputError(what + ": key '" + text_excerpt(parsed.get<std::string>()) +
                           "' given twice in one object");
        break;
      case Json::parse_event_t::value:
        break;
    }
    return true;
  };
  try {
    return Json::parse(text.begin(), text.end(), check);
  } catch (const Json::parse_error& e) {
    throw InputError(what + ": invalid JSON (" + std::string(e.what()) + ")");
  } catch (const Json::exception& e) {
    // out_of_range 406: a number beyond double (1e400); the library names it.
    throw InputError(what + ": invalid JSON (" + std::string(e.what()) +
                     "; numbers must be finite doubles)");
  }
}

ObjectReader::ObjectReader(const Json& j, std::string what) : j_(j), what_(std::move(what)) {
  if (!j_.is_object()) throw InputError(what_ + ": expected a JSON object");
}

void ObjectReader::fail(const std::string& key, const std::string& problem) const {
  throw InputError(what_ + ": key '" + text_excerpt(key) + "' " + problem);
}

bool ObjectReader::has(const std::string& key) const {
  return j_.contains(key) && !j_.at(key).is_null();
}

const Json& ObjectReader::raw(const std::string& key) {
  seen_.insert(key);
  if (!j_.contains(key)) {
    // A typo shows up as a missing key next to an unknown one: name both.
    std::string unknown;
    for (const auto& [k, v] : j_.items())
      if (!seen_.contains(k)) unknown += (unknown.empty() ? "" : ", ") + ("'" + text_excerpt(k) + "'");
    fail(key, unknown.empty() ? "is missing" : "is missing (unknown keys present: " + unknown + ")");
  }
  return j_.at(key);
}

std::string ObjectReader::string(const std::string& key) {
  const Json& v = raw(key);
  if (!v.is_string()) fail(key, "must be a string (got " + json_excerpt(v) + ")");
  return v.get<std::string>();
}

std::optional<std::string> ObjectReader::optional_string(const std::string& key) {
  seen_.insert(key);
  if (!has(key)) return std::nullopt;
  return string(key);
}

double ObjectReader::number(const std::string& key) {
  const Json& v = raw(key);
  if (!v.is_number()) fail(key, "must be a number (got " + json_excerpt(v) + ")");
  const double d = v.get<double>();
  if (!std::isfinite(d)) fail(key, "must be finite");
  return d;
}

std::optional<double> ObjectReader::optional_number(const std::string& key) {
  seen_.insert(key);
  if (!has(key)) return std::nullopt;
  return number(key);
}

std::int64_t ObjectReader::integer(const std::string& key, std::int64_t min_value, std::int64_t max_value) {
  const Json& v = raw(key);
  if (!v.is_number_integer()) fail(key, "must be an integer (got " + json_excerpt(v) + ")");
  if (v.is_number_unsigned() &&
      v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    fail(key, "is too large (got " + json_excerpt(v) + ")");
  const auto i = v.get<std::int64_t>();
  if (i < min_value) fail(key, "must be at least " + std::to_string(min_value) + " (got " + std::to_string(i) + ")");
  if (i > max_value) fail(key, "must be at most " + std::to_string(max_value) + " (got " + std::to_string(i) + ")");
  return i;
}

std::optional<std::int64_t> ObjectReader::optional_integer(const std::string& key, std::int64_t min_value,
                                                          std::int64_t max_value) {
  seen_.insert(key);
  if (!has(key)) return std::nullopt;
  return integer(key, min_value, max_value);
}

bool ObjectReader::boolean(const std::string& key) {
  const Json& v = raw(key);
  if (!v.is_boolean()) fail(key, "must be true or false (got " + json_excerpt(v) + ")");
  return v.get<bool>();
}

std::optional<bool> ObjectReader::optional_boolean(const std::string& key) {
  seen_.insert(key);
  if (!has(key)) return std::nullopt;
  return boolean(key);
}

void ObjectReader::ignore(std::initializer_list<std::string_view> keys) {
  for (auto k : keys) seen_.insert(std::string(k));
}

void ObjectReader::reject_unknown() const {
  for (const auto& [k, v] : j_.items())
    if (!seen_.contains(k)) throw InputError(what_ + ": unknown key '" + text_excerpt(k) + "'");
}

void ObjectReader::reject_unknown(std::span<const std::string_view> allowed) const {
  for (const auto& [k, v] : j_.items()) {
    if (std::find(allowed.begin(), allowed.end(), k) != allowed.end()) continue;
    std::string list;
    for (const std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
    throw InputError(what_ + ": unknown key '" + k + "' (expected one of: " + list + ")");
  }
}

}  // namespace trainplan::request
