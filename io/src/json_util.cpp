#include "trainplan/io/json_util.hpp"

#include <cmath>

#include "trainplan/core/error.hpp"

namespace trainplan::io {

Json parse_json(std::string_view text, const std::string& what) {
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    throw InputError(what + ": invalid JSON (" + std::string(e.what()) + ")");
  }
}

ObjectReader::ObjectReader(const Json& j, std::string what) : j_(j), what_(std::move(what)) {
  if (!j_.is_object()) throw InputError(what_ + ": expected a JSON object");
}

void ObjectReader::fail(const std::string& key, const std::string& problem) const {
  throw InputError(what_ + ": key '" + key + "' " + problem);
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
      if (!seen_.contains(k)) unknown += (unknown.empty() ? "" : ", ") + ("'" + k + "'");
    fail(key, unknown.empty() ? "is missing" : "is missing (unknown keys present: " + unknown + ")");
  }
  return j_.at(key);
}

std::string ObjectReader::string(const std::string& key) {
  const Json& v = raw(key);
  if (!v.is_string()) fail(key, "must be a string");
  return v.get<std::string>();
}

std::optional<std::string> ObjectReader::optional_string(const std::string& key) {
  seen_.insert(key);
  if (!has(key)) return std::nullopt;
  return string(key);
}

double ObjectReader::number(const std::string& key) {
  const Json& v = raw(key);
  if (!v.is_number()) fail(key, "must be a number");
  const double d = v.get<double>();
  if (!std::isfinite(d)) fail(key, "must be finite");
  return d;
}

std::optional<double> ObjectReader::optional_number(const std::string& key) {
  seen_.insert(key);
  if (!has(key)) return std::nullopt;
  return number(key);
}

std::int64_t ObjectReader::integer(const std::string& key, std::int64_t min_value) {
  const Json& v = raw(key);
  if (!v.is_number_integer()) fail(key, "must be an integer");
  const auto i = v.get<std::int64_t>();
  if (i < min_value) fail(key, "must be at least " + std::to_string(min_value) + " (got " + std::to_string(i) + ")");
  return i;
}

std::optional<std::int64_t> ObjectReader::optional_integer(const std::string& key, std::int64_t min_value) {
  seen_.insert(key);
  if (!has(key)) return std::nullopt;
  return integer(key, min_value);
}

bool ObjectReader::boolean(const std::string& key) {
  const Json& v = raw(key);
  if (!v.is_boolean()) fail(key, "must be true or false");
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
    if (!seen_.contains(k)) throw InputError(what_ + ": unknown key '" + k + "'");
}

}  // namespace trainplan::io
