#pragma once
// The reading of a Hugging Face config.json shared by hf_config.cpp (the generic part: model_type,
// wrappers, checks) and hf_families.cpp (each family's keys).

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "trainplan/core/error.hpp"
#include "trainplan/model/family.hpp"
#include "trainplan/request/json_util.hpp"

namespace trainplan::request::hf {

// What a config.json may say: wide enough for any published model (the largest have hidden sizes
// near 2^14, vocabularies near 2^18, contexts near 2^24), narrow enough that no count overflows.
struct Bounds {
  std::int64_t lo;
  std::int64_t hi;
};
inline constexpr Bounds kWidth{1, 1 << 20};  // hidden, head dim
inline constexpr Bounds kIntermediate{1, 1 << 24};
inline constexpr Bounds kLayers{1, 10'000};
inline constexpr Bounds kHeads{1, 1 << 16};
inline constexpr Bounds kVocab{1, 1 << 24};
inline constexpr Bounds kPositions{1, 1 << 30};
inline constexpr Bounds kExperts{1, 1 << 16};
inline constexpr Bounds kSmall{1, 1 << 10};  // expansion ratio, relative buckets
// Reads the first present key of a list of aliases (n_embd / hidden_size / d_model ...),
// range-checks it, and records a note whenever the configuration class's default stands in for a
// missing key.
class HfReader {
 public:
  HfReader(const Json& j, std::string where, const model::Family& f,
           std::vector<std::string>& notes)
      : j_(j), where_(std::move(where)), f_(f), d_(f.defaults), notes_(notes) {}

  [[nodiscard]] const Json* find(std::initializer_list<const char*> keys) const {
    for (const char* k : keys)
      if (j_.contains(k) && !j_.at(k).is_null()) return &j_.at(k);
    return nullptr;
  }
  // The value, or the class default (with a note naming the key, the class and the value).
  [[nodiscard]] std::int64_t integer(std::initializer_list<const char*> keys, Bounds b,
                                     std::int64_t fallback, const std::string& fallback_text = "") {
    if (const Json* v = find(keys)) return checked_integer(*v, keys, b);
    note(keys, fallback_text.empty() ? std::to_string(fallback) : fallback_text);
    return fallback;
  }
  [[nodiscard]] bool flag(std::initializer_list<const char*> keys, bool fallback) {
    const Json* v = find(keys);
    if (!v) {
      note(keys, fallback ? "true" : "false");
      return fallback;
    }
    if (!v->is_boolean())
      throw InputError(where_ + ": key " + names(keys) + " must be true or false (got " +
                       json_excerpt(*v) + ")");
    return v->get<bool>();
  }
  // A probability (dropout): a number in [0, 1].
  [[nodiscard]] double probability(std::initializer_list<const char*> keys, double fallback) {
    const Json* v = find(keys);
    if (!v) {
      note(keys, std::to_string(fallback).substr(0, 3));
      return fallback;
    }
    return probability_value(*v, names(keys));
  }
  [[nodiscard]] double probability_value(const Json& v, const std::string& key) const {
    if (!v.is_number() || !(v.get<double>() >= 0.0 && v.get<double>() <= 1.0))
      throw InputError(where_ + ": key " + key + " must be a number from 0 to 1 (got " +
                       json_excerpt(v) + ")");
    return v.get<double>();
  }
  [[nodiscard]] double number_or(std::initializer_list<const char*> keys, double fallback) const {
    const Json* v = find(keys);
    if (!v) return fallback;
    if (!v->is_number())
      throw InputError(where_ + ": key " + names(keys) + " must be a number (got " +
                       json_excerpt(*v) + ")");
    return v->get<double>();
  }
  [[nodiscard]] std::string string(std::initializer_list<const char*> keys,
                                   const std::string& fallback) {
    const Json* v = find(keys);
    if (!v) {
      note(keys, "\"" + fallback + "\"");
      return fallback;
    }
    if (!v->is_string())
      throw InputError(where_ + ": key " + names(keys) + " must be a string (got " +
                       json_excerpt(*v) + ")");
    return v->get<std::string>();
  }
  [[nodiscard]] std::string string_or(std::initializer_list<const char*> keys,
                                      std::string fallback) const {
    const Json* v = find(keys);
    if (!v) return fallback;
    if (!v->is_string())
      throw InputError(where_ + ": key " + names(keys) + " must be a string (got " +
                       json_excerpt(*v) + ")");
    return v->get<std::string>();
  }
  // A key whose explicit null means something other than its default (sliding_window: null is full
  // attention, absent is the class default).
  [[nodiscard]] bool is_null(const char* key) const {
    return j_.contains(key) && j_.at(key).is_null();
  }
  void note_text(const std::string& text) { notes_.push_back(text); }
  [[nodiscard]] const model::ClassDefaults& defaults() const { return d_; }
  [[nodiscard]] const std::string& config_class() const { return f_.config_class; }
  [[nodiscard]] model::ConfigKeys keys() const { return f_.keys; }
  [[nodiscard]] const std::string& where() const { return where_; }

 private:
  [[nodiscard]] static std::string names(std::initializer_list<const char*> keys) {
    std::string out;
    for (const char* k : keys) out += (out.empty() ? "'" : " / '") + std::string(k) + "'";
    return out;
  }
  void note(std::initializer_list<const char*> keys, const std::string& value) {
    const char* key = *keys.begin();
    notes_.push_back(std::string(key) + (is_null(key) ? " is null" : " missing") + ": " +
                     f_.config_class + " default " + value);
  }
  [[nodiscard]] std::int64_t checked_integer(const Json& v, std::initializer_list<const char*> keys,
                                             Bounds b) const {
    const std::string expected =
        "an integer from " + std::to_string(b.lo) + " to " + std::to_string(b.hi);
    const bool too_big = v.is_number_unsigned() &&
                         v.get<std::uint64_t>() >
                             static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    if (!v.is_number_integer() || too_big || v.get<std::int64_t>() < b.lo ||
        v.get<std::int64_t>() > b.hi)
      throw InputError(where_ + ": key " + names(keys) + " must be " + expected + " (got " +
                       json_excerpt(v) + ")");
    return v.get<std::int64_t>();
  }
  const Json& j_;
  std::string where_;
  const model::Family& f_;
  const model::ClassDefaults& d_;
  std::vector<std::string>& notes_;
};

// Reads the keys of r's family (its ConfigKeys) into `a`, which holds the family's traits.
void read_family(HfReader& r, model::Architecture& a);

}  // namespace trainplan::request::hf
