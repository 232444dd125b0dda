#pragma once
// What the config-reader tests share (test_config_file.cpp, test_config_file_rules.cpp, the readers' own): the
// committed configs' folder, the options a read gives and its warnings.

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "trainplan/core/error.hpp"
#include "trainplan/request/config_file.hpp"

namespace trainplan::request::config_test {

using Options = std::map<std::string, std::string>;

inline std::string config_path(const std::string& name) {
  return std::string(TRAINPLAN_CONFIGS) + "/" + name;
}

inline Options options_of(const ConfigRead& r) {
  Options o;
  for (const Setting& s : r.settings) {
    EXPECT_TRUE(o.emplace(s.option, s.value).second) << "option set twice: " << s.option;
    EXPECT_EQ(s.source.rfind(r.path.substr(r.path.rfind('/') + 1) + ": ", 0), 0u) << s.source;
  }
  return o;
}

// The value a read gives an option ("" when it gives none).
inline std::string option(const ConfigRead& r, const std::string& name) {
  const Options o = options_of(r);
  const auto it = o.find(name);
  return it == o.end() ? "" : it->second;
}

// Whether a warning of the read contains `part`.
inline bool has_warning(const ConfigRead& r, const std::string& part) {
  for (const std::string& w : r.warnings)
    if (w.find(part) != std::string::npos) return true;
  return false;
}

// The message of the InputError a read that must be refused throws, or "accepted" when it reads.
template <class Read>
std::string refusal(Read&& read) {
  try {
    (void)read();
  } catch (const InputError& e) {
    return e.what();
  }
  return "accepted";
}

}  // namespace trainplan::request::config_test
