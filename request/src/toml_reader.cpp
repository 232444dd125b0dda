// TOML (toml.io v1.0.0) as nlohmann::json, for the training configs written in it (torchtitan's job
// configs). The subset such files use: [table] headers and dotted keys, bare and quoted keys, basic
// and literal strings, integers (with _), floats, booleans, arrays (over lines, with trailing
// commas and comments) and inline tables. Arrays of tables, multi-line strings and dates are refused
// by name; so is a key given twice. Every error names the file and the line.
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "config_reader.hpp"
#include "trainplan/core/error.hpp"

namespace trainplan::request::config {
namespace {

constexpr int kMaxNesting = 16;

class TomlParser {
 public:
  TomlParser(const std::string& text, const std::string& path) : s_(text), path_(path) {}

  Json parse() {
    Json root = Json::object();
    Json* table = &root;
    while (true) {
      skip_blank_lines();
      if (at_end()) return root;
      if (peek() == '[') {
        table = &open_table(root);
      } else {
        assign(*table, 0);
      }
      end_of_line();
    }
  }

 private:
  const std::string& s_;
  const std::string& path_;
  std::size_t i_ = 0;
  int line_ = 1;

  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(path_ + ": line " + std::to_string(line_) + ": " + what + " (TOML)");
  }
  [[nodiscard]] bool at_end() const { return i_ >= s_.size(); }
  [[nodiscard]] char peek() const { return at_end() ? '\0' : s_[i_]; }
  void skip_spaces() {
    while (!at_end() && (peek() == ' ' || peek() == '\t')) ++i_;
  }
  void skip_comment() {
    if (peek() == '#')
      while (!at_end() && peek() != '\n') ++i_;
  }
  // Spaces, comments and newlines (inside arrays and between statements).
  void skip_blank_lines() {
    while (!at_end()) {
      skip_spaces();
      skip_comment();
      if (peek() == '\r') ++i_;
      if (peek() != '\n') return;
      ++i_;
      ++line_;
    }
  }
  void end_of_line() {
    skip_spaces();
    skip_comment();
    if (peek() == '\r') ++i_;
    if (!at_end() && peek() != '\n') fail("unexpected '" + std::string(1, peek()) + "' after a value");
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++i_;
  }

  std::string key_part() {
    skip_spaces();
    if (peek() == '"' || peek() == '\'') return string_value();
    const std::size_t b = i_;
    while (!at_end() && (std::isalnum(static_cast<unsigned char>(peek())) != 0 || peek() == '_' || peek() == '-'))
      ++i_;
    if (b == i_) fail("a key is missing");
    return s_.substr(b, i_ - b);
  }
  std::vector<std::string> dotted_key() {
    std::vector<std::string> parts{key_part()};
    skip_spaces();
    while (peek() == '.') {
      ++i_;
      parts.push_back(key_part());
      skip_spaces();
    }
    return parts;
  }
  // The table `parts` names under `from`, made where absent; a key that holds a value is refused.
  Json& table_at(Json& from, const std::vector<std::string>& parts, std::size_t count) {
    Json* t = &from;
    for (std::size_t k = 0; k < count; ++k) {
      Json& next = (*t)[parts[k]];
      if (next.is_null()) next = Json::object();
      if (!next.is_object()) fail("'" + parts[k] + "' is a value, not a table");
      t = &next;
    }
    return *t;
  }
  Json& open_table(Json& root) {
    ++i_;
    if (peek() == '[') fail("arrays of tables ([[...]]) are not read");
    const std::vector<std::string> parts = dotted_key();
    expect(']');
    return table_at(root, parts, parts.size());
  }
  void assign(Json& table, int depth) {
    const std::vector<std::string> parts = dotted_key();
    skip_spaces();
    expect('=');
    skip_spaces();
    Json& t = table_at(table, parts, parts.size() - 1);
    const std::string& leaf = parts.back();
    if (t.contains(leaf)) fail("key '" + leaf + "' is given twice");
    t[leaf] = value(depth);
  }

  Json value(int depth) {
    if (depth > kMaxNesting) fail("values nested deeper than " + std::to_string(kMaxNesting));
    const char c = peek();
    if (c == '"' || c == '\'') return string_value();
    if (c == '[') return array(depth);
    if (c == '{') return inline_table(depth);
    if (s_.compare(i_, 4, "true") == 0) {
      i_ += 4;
      return true;
    }
    if (s_.compare(i_, 5, "false") == 0) {
      i_ += 5;
      return false;
    }
    return number();
  }
  std::string string_value() {
    const char quote = peek();
    if (s_.compare(i_, 3, std::string(3, quote)) == 0) fail("multi-line strings are not read");
    ++i_;
    std::string out;
    while (true) {
      if (at_end() || peek() == '\n') fail("a string is not closed");
      const char c = s_[i_++];
      if (c == quote) return out;
      if (c != '\\' || quote == '\'') {
        out += c;
        continue;
      }
      const char e = at_end() ? '\0' : s_[i_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        default: fail(std::string("escape '\\") + e + "' is not read");
      }
    }
  }
  Json number() {
    const std::size_t b = i_;
    while (!at_end() && (std::isalnum(static_cast<unsigned char>(peek())) != 0 || peek() == '_' || peek() == '.' ||
                         peek() == '+' || peek() == '-'))
      ++i_;
    std::string t;
    for (std::size_t k = b; k < i_; ++k)
      if (s_[k] != '_') t += s_[k];
    if (t.empty()) fail("a value is missing");
    const std::string shown = s_.substr(b, i_ - b);
    if (t == "inf" || t == "+inf") return std::numeric_limits<double>::infinity();
    if (t == "-inf") return -std::numeric_limits<double>::infinity();
    const bool is_float = t.find_first_of(".eE") != std::string::npos && t.rfind("0x", 0) != 0;
    const char* first = t.data() + (t.front() == '+' ? 1 : 0);
    const char* last = t.data() + t.size();
    if (is_float) {
      double d = 0.0;
      const auto [end, ec] = std::from_chars(first, last, d);
      if (ec != std::errc() || end != last || !std::isfinite(d)) fail("'" + shown + "' is not a TOML value");
      return d;
    }
    std::int64_t n = 0;
    const auto [end, ec] = std::from_chars(first, last, n);
    if (ec != std::errc() || end != last) fail("'" + shown + "' is not a TOML value");
    return n;
  }
  Json array(int depth) {
    ++i_;
    Json out = Json::array();
    while (true) {
      skip_blank_lines();
      if (peek() == ']') {
        ++i_;
        return out;
      }
      if (at_end()) fail("an array is not closed");
      out.push_back(value(depth + 1));
      skip_blank_lines();
      if (at_end()) fail("an array is not closed");
      if (peek() == ',') {
        ++i_;
      } else if (peek() != ']') {
        fail("expected ',' or ']' in an array");
      }
    }
  }
  Json inline_table(int depth) {
    ++i_;
    Json out = Json::object();
    skip_spaces();
    if (peek() == '}') {
      ++i_;
      return out;
    }
    while (true) {
      assign(out, depth + 1);
      skip_spaces();
      if (peek() == '}') {
        ++i_;
        return out;
      }
      expect(',');
    }
  }
};

}  // namespace

Json toml_to_json(const std::string& text, const std::string& path) { return TomlParser(text, path).parse(); }

bool looks_like_toml(const std::string& text) {
  // The first statement is a [table] header or a `key = value` line (YAML writes `key: value`).
  std::size_t b = 0;
  while (b < text.size()) {
    const std::size_t e = text.find('\n', b);
    std::string line = text.substr(b, e == std::string::npos ? std::string::npos : e - b);
    b = e == std::string::npos ? text.size() : e + 1;
    const std::size_t f = line.find_first_not_of(" \t\r");
    if (f == std::string::npos || line[f] == '#') continue;
    if (line[f] == '[') return line.find(']') != std::string::npos && line.find(':') == std::string::npos;
    const std::size_t eq = line.find('=');
    const std::size_t colon = line.find(':');
    return eq != std::string::npos && (colon == std::string::npos || eq < colon);
  }
  return false;
}

}  // namespace trainplan::request::config
