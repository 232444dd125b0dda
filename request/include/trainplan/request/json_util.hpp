#pragma once
// Strict reading of our own JSON: every key is expected, typed and range-checked, and an unknown
// key is an error that names it and the file.

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "trainplan/core/enum_table.hpp"
#include "trainplan/core/error.hpp"

namespace trainplan::request {

using Json = nlohmann::json;

// A value or text as a message shows it: at most 40 characters of a value, whatever the input
// holds (its text is built only as far as it is shown, so a deep or huge value costs nothing); at
// most 80 of a text such as a key's path, its start and its end (the key itself) of a longer one.
[[nodiscard]] std::string json_excerpt(const Json& v);
[[nodiscard]] std::string text_excerpt(const std::string& s);

// Nesting deeper than this is refused by name: no config, profile or log nests past a few levels,
// and a bound keeps every later walk of the value (messages included) off the stack's limit.
inline constexpr int kMaxJsonDepth = 100;

// A key given twice in one object: Python's json (Hugging Face, PEFT) keeps the last; DeepSpeed
// (deepspeed/runtime/config_utils.py, dict_raise_error_on_duplicate_keys) and our own files refuse.
enum class DuplicateKeys { refuse, last_wins };

// Parses text, throwing InputError "<what>: invalid JSON (...)" on failure, naming the key given
// twice (under DuplicateKeys::refuse) and the limit when nesting exceeds kMaxJsonDepth.
[[nodiscard]] Json parse_json(std::string_view text, const std::string& what,
                              DuplicateKeys duplicates = DuplicateKeys::refuse);

// The one way our readers take a JSON object's keys: each key read once, typed and range-checked,
// and a key the reader does not know refused by name, either before any is read (against a list) or
// after (whatever was never read).
class ObjectReader {
 public:
  // `what` names the object in messages, e.g. "GPU file data/gpus/a100.json". Throws when `j` is
  // not an object.
  ObjectReader(const Json& j, std::string what);

  [[nodiscard]] bool has(const std::string& key) const;
  [[nodiscard]] const Json& raw(const std::string& key);
  [[nodiscard]] std::string string(const std::string& key);
  [[nodiscard]] std::optional<std::string> optional_string(const std::string& key);
  [[nodiscard]] double number(const std::string& key);
  [[nodiscard]] std::optional<double> optional_number(const std::string& key);  // absent or null
  // Integers in [min_value, max_value]; a value beyond int64 is refused, never wrapped.
  [[nodiscard]] std::int64_t integer(const std::string& key, std::int64_t min_value,
                                     std::int64_t max_value = std::numeric_limits<std::int64_t>::max());
  [[nodiscard]] std::optional<std::int64_t> optional_integer(
      const std::string& key, std::int64_t min_value,
      std::int64_t max_value = std::numeric_limits<std::int64_t>::max());
  [[nodiscard]] bool boolean(const std::string& key);
  [[nodiscard]] std::optional<bool> optional_boolean(const std::string& key);
  // An enum-valued key, spelt as the enum's one string table spells it; the message names the key
  // and the valid values. The optional form: absent or null gives nullopt.
  template <class E>
  [[nodiscard]] E enumeration(const std::string& key) {
    return enumeration_of<E>(key, string(key));
  }
  template <class E>
  [[nodiscard]] std::optional<E> optional_enumeration(const std::string& key) {
    seen_.insert(key);
    if (!has(key)) return std::nullopt;
    return enumeration<E>(key);
  }
  // `text`, found under `key` (an entry of its list), as an E; the message names the key.
  template <class E>
  [[nodiscard]] E enumeration_of(const std::string& key, std::string_view text) const {
    try {
      return parse_enum<E>(text);
    } catch (const InputError& e) {
      throw InputError(what_ + ": key '" + key + "': " + e.what());
    }
  }
  // Marks keys as read without interpreting them (free-text provenance, comments).
  void ignore(std::initializer_list<std::string_view> keys);
  // Throws naming the first key that was never read.
  void reject_unknown() const;
  // Throws naming the first key not in `allowed`, and the list: checked before any key is read, so
  // that a misspelt key is reported as itself rather than as the key it was meant to be being
  // missing.
  void reject_unknown(std::span<const std::string_view> allowed) const;
  void reject_unknown(std::initializer_list<std::string_view> allowed) const {
    reject_unknown(std::span<const std::string_view>(allowed.begin(), allowed.size()));
  }
  [[nodiscard]] const std::string& what() const { return what_; }

 private:
  [[noreturn]] void fail(const std::string& key, const std::string& problem) const;
  const Json& j_;
  std::string what_;
  std::set<std::string, std::less<>> seen_;
};

}  // namespace trainplan::request
