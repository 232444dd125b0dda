// YAML training configs into JSON, read with libyaml: the C parser that PyYAML's CSafeLoader uses,
// so what the frameworks accept is what is accepted here. The event stream is folded into a tree
// by hand, which keeps every limit in one place: nesting depth, the number of values (aliases
// counted at their full size, so a "billion laughs" document is refused before it is built), one
// document per file, and no recursive or undefined alias. Plain scalars are resolved as PyYAML's
// SafeLoader resolves them (yaml/resolver.py, YAML 1.1).
#include <yaml.h>

#include <algorithm>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "config_reader.hpp"
#include "trainplan/core/error.hpp"

namespace trainplan::request::config {
namespace {

// The tree becomes JSON: JSON's nesting limit (json_util.hpp) holds for it too.
constexpr int kMaxYamlDepth = kMaxJsonDepth;
constexpr std::size_t kMaxYamlValues = 1'000'000;

bool one_of(std::string_view s, std::initializer_list<std::string_view> words) {
  return std::any_of(words.begin(), words.end(), [&](std::string_view w) { return s == w; });
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// [-+]?(0|[1-9][0-9_]*)
bool is_yaml_int(std::string_view s) {
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  if (s.empty() || !is_digit(s[0])) return false;
  if (s[0] == '0') return s.size() == 1;
  return std::all_of(s.begin(), s.end(), [](char c) { return is_digit(c) || c == '_'; });
}

// [-+]?([0-9][0-9_]*)?\.[0-9_]*([eE][-+][0-9]+)?  or  [-+]?\.(inf|Inf|INF); not a bare "."
bool is_yaml_float(std::string_view s) {
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  if (s == ".inf" || s == ".Inf" || s == ".INF") return true;
  std::size_t i = 0;
  while (i < s.size() && (is_digit(s[i]) || (i > 0 && s[i] == '_'))) ++i;
  if (i == s.size() || s[i] != '.' || s == ".") return false;
  ++i;
  while (i < s.size() && (is_digit(s[i]) || s[i] == '_')) ++i;
  if (i == s.size()) return true;
  if (s[i] != 'e' && s[i] != 'E') return false;
  if (++i == s.size() || (s[i] != '-' && s[i] != '+')) return false;
  if (++i == s.size()) return false;
  return std::all_of(s.begin() + static_cast<std::ptrdiff_t>(i), s.end(), is_digit);
}

// A plain scalar as PyYAML's implicit resolvers read it: `no` is false, `2e-5` (no dot) a string.
Json plain_scalar(const std::string& s) {
  if (one_of(s, {"~", "null", "Null", "NULL", ""})) return nullptr;
  if (one_of(s, {"yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"})) return true;
  if (one_of(s, {"no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"})) return false;
  std::string digits = s;
  digits.erase(std::remove(digits.begin(), digits.end(), '_'), digits.end());
  if (is_yaml_int(s)) {
    try {
      return std::stoll(digits);
    } catch (const std::out_of_range&) {
      return s;
    }
  }
  if (is_yaml_float(s)) {
    try {
      return std::stod(digits);
    } catch (const std::exception&) {
      return s;
    }
  }
  return s;
}

std::size_t values_in(const Json& j) {
  std::size_t n = 1;
  if (j.is_structured())
    for (const Json& e : j) n += values_in(e);
  return n;
}

struct ParserDeleter {
  void operator()(yaml_parser_t* p) const {
    yaml_parser_delete(p);
    delete p;
  }
};

struct EventGuard {
  yaml_event_t event{};
  ~EventGuard() { yaml_event_delete(&event); }
};

// One open sequence or mapping: its value, the key awaiting a value, and its anchor.
struct Open {
  Json value;
  std::optional<std::string> key;
  std::string anchor;
};

class TreeBuilder {
 public:
  explicit TreeBuilder(const std::string& path) : path_(path) {}

  Json build(const std::string& text) {
    std::unique_ptr<yaml_parser_t, ParserDeleter> parser(new yaml_parser_t);
    if (!yaml_parser_initialize(parser.get())) throw InputError(path_ + ": cannot start the YAML parser");
    yaml_parser_set_input_string(parser.get(), reinterpret_cast<const unsigned char*>(text.data()), text.size());
    int documents = 0;
    for (;;) {
      EventGuard e;
      if (!yaml_parser_parse(parser.get(), &e.event)) fail_parse(*parser);
      const yaml_event_type_t type = e.event.type;
      if (type == YAML_STREAM_END_EVENT) break;
      if (type == YAML_DOCUMENT_START_EVENT && ++documents > 1)
        // PyYAML's safe_load, which the frameworks call, refuses a stream of several documents.
        throw InputError(path_ + ": several YAML documents (separated by ---); a training config is one");
      on_event(e.event);
    }
    return root_.value_or(Json());
  }

 private:
  [[noreturn]] void fail_parse(const yaml_parser_t& p) const {
    std::string what = p.problem ? p.problem : "unreadable";
    if (p.context) what = std::string(p.context) + ": " + what;
    throw InputError(path_ + ": invalid YAML at line " + std::to_string(p.problem_mark.line + 1) + ": " +
                     text_excerpt(what));
  }

  [[noreturn]] void fail(const yaml_event_t& e, const std::string& problem) const {
    throw InputError(path_ + ": " + problem + " (line " + std::to_string(e.start_mark.line + 1) + ")");
  }

  void count(std::size_t n, const yaml_event_t& e) {
    values_ += n;
    if (values_ > kMaxYamlValues)
      fail(e, "YAML expands to more than " + std::to_string(kMaxYamlValues) +
                  " values (aliases repeated within aliases?)");
  }

  static std::string anchor_of(const unsigned char* a) { return a ? reinterpret_cast<const char*>(a) : ""; }

  void on_event(const yaml_event_t& e) {
    switch (e.type) {
      case YAML_SCALAR_EVENT: {
        count(1, e);
        const std::string text(reinterpret_cast<const char*>(e.data.scalar.value), e.data.scalar.length);
        // Quoted (or explicitly tagged as a string) scalars are strings whatever they spell.
        const bool plain = e.data.scalar.style == YAML_PLAIN_SCALAR_STYLE && e.data.scalar.plain_implicit &&
                           !(e.data.scalar.tag && std::string_view(reinterpret_cast<const char*>(e.data.scalar.tag)) ==
                                                      "tag:yaml.org,2002:str");
        add(plain ? plain_scalar(text) : Json(text), anchor_of(e.data.scalar.anchor), e);
        break;
      }
      case YAML_SEQUENCE_START_EVENT:
      case YAML_MAPPING_START_EVENT: {
        count(1, e);
        if (open_.size() >= static_cast<std::size_t>(kMaxYamlDepth))
          fail(e, "YAML nested deeper than " + std::to_string(kMaxYamlDepth) + " levels");
        const bool seq = e.type == YAML_SEQUENCE_START_EVENT;
        const std::string anchor = anchor_of(seq ? e.data.sequence_start.anchor : e.data.mapping_start.anchor);
        if (!anchor.empty()) building_.push_back(anchor);
        open_.push_back({seq ? Json::array() : Json::object(), std::nullopt, anchor});
        break;
      }
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT: {
        Open done = std::move(open_.back());
        open_.pop_back();
        if (done.key) fail(e, "a YAML key without a value");
        if (!done.anchor.empty()) building_.erase(std::find(building_.begin(), building_.end(), done.anchor));
        add(std::move(done.value), done.anchor, e);
        break;
      }
      case YAML_ALIAS_EVENT: {
        const std::string name = anchor_of(e.data.alias.anchor);
        if (std::find(building_.begin(), building_.end(), name) != building_.end())
          fail(e, "the YAML alias *" + text_excerpt(name) + " refers to a value that contains it (a recursive alias)");
        const auto it = anchors_.find(name);
        if (it == anchors_.end()) fail(e, "the YAML alias *" + text_excerpt(name) + " has no anchor before it");
        count(it->second.size, e);
        add(it->second.value, "", e);
        break;
      }
      default:
        break;
    }
  }

  // A finished value: into the open collection (as a key or a value), or the document's root.
  void add(Json v, const std::string& anchor, const yaml_event_t& e) {
    if (!anchor.empty()) anchors_[anchor] = {v, values_in(v)};
    if (open_.empty()) {
      root_ = std::move(v);
      return;
    }
    Open& o = open_.back();
    if (o.value.is_array()) {
      o.value.push_back(std::move(v));
    } else if (!o.key) {
      if (v.is_structured()) fail(e, "a YAML key that is a list or a mapping");
      o.key = v.is_string() ? v.get<std::string>() : v.dump();
    } else {
      o.value[*o.key] = std::move(v);
      o.key.reset();
    }
  }

  struct Anchored {
    Json value;
    std::size_t size = 0;  // values in it, counted again at every alias
  };

  const std::string& path_;
  std::vector<Open> open_;
  std::vector<std::string> building_;  // anchors of the collections still open
  std::map<std::string, Anchored> anchors_;
  std::optional<Json> root_;
  std::size_t values_ = 0;
};

}  // namespace

Json yaml_to_json(const std::string& text, const std::string& path) { return TreeBuilder(path).build(text); }

}  // namespace trainplan::request::config
