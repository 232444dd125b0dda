#pragma once
// Text helpers shared by the benchmark-log parsers (private to trainplan_io).

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace trainplan::request::log_text {

[[nodiscard]] inline bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\v' || c == '\f';
}
[[nodiscard]] inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
[[nodiscard]] inline bool is_alpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

[[nodiscard]] inline std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// Lines split at \n and \r (progress output rewrites a line with \r), after a UTF-8 byte order
// mark that editors on Windows leave.
[[nodiscard]] inline std::vector<std::string_view> split_lines(std::string_view text) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n' || text[i] == '\r') {
      lines.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  if (start < text.size()) lines.push_back(text.substr(start));
  return lines;
}

[[nodiscard]] inline std::vector<std::string_view> split_ws(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_space(s[i])) ++i;
    const std::size_t start = i;
    while (i < s.size() && !is_space(s[i])) ++i;
    if (i > start) out.push_back(s.substr(start, i - start));
  }
  return out;
}

[[nodiscard]] inline std::optional<std::int64_t> to_int(std::string_view s) {
  std::int64_t v = 0;
  if (s.empty()) return std::nullopt;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

[[nodiscard]] inline std::optional<double> to_double(std::string_view s) {
  double v = 0.0;
  if (s.empty()) return std::nullopt;
  if (s.front() == '+') s.remove_prefix(1);
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

[[nodiscard]] inline bool all_of(std::string_view s, bool (*pred)(char)) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!pred(c)) return false;
  }
  return true;
}

// Removes what launchers put before a program's output: mpirun --tag-output "[1,0]<stdout>:",
// "[0] ", torchrun --tee "[default0]:", srun --label "  0: ".
// The length of an mpirun --tag-output tag ("[1,0]<stdout>:") starting at `at`, or 0.
[[nodiscard]] inline std::size_t launcher_tag_at(std::string_view s, std::size_t at) {
  if (at >= s.size() || s[at] != '[') return 0;
  std::size_t i = at + 1;
  const auto digits = [&] {
    const std::size_t from = i;
    while (i < s.size() && is_digit(s[i])) ++i;
    return i > from;
  };
  if (!digits() || i >= s.size() || s[i] != ',') return 0;
  ++i;
  if (!digits()) return 0;
  const std::string_view rest = s.substr(i);
  if (rest.starts_with("]<stdout>:") || rest.starts_with("]<stderr>:")) return i + 10 - at;
  return 0;
}

// mpirun tags each piece of output it forwards, so a line a rank wrote in two pieces carries a
// second tag in its middle ("... on node-[1,0]<stdout>:12 device 1 ..."). Writes the line without
// those tags to `out` and returns true when there were any.
[[nodiscard]] inline bool splice_launcher_tags(std::string_view line, std::string& out) {
  if (line.find(">:", 1) == std::string_view::npos) return false;  // no tag past the start
  bool found = false;
  out.clear();
  for (std::size_t i = 0; i < line.size();) {
    if (const std::size_t n = i > 0 ? launcher_tag_at(line, i) : 0) {
      found = true;
      i += n;
      continue;
    }
    out.push_back(line[i++]);
  }
  return found;
}

[[nodiscard]] inline std::string_view strip_launcher_prefix(std::string_view line) {
  while (true) {
    const std::string_view t = trim(line);
    if (!t.empty() && t.front() == '[') {
      const std::size_t close = t.find(']');
      if (close == std::string_view::npos) return line;
      const std::string_view inside = t.substr(1, close - 1);
      const std::string_view after = t.substr(close + 1);
      const std::size_t comma = inside.find(',');
      const bool rank_pair = comma != std::string_view::npos &&
                             all_of(inside.substr(0, comma), is_digit) &&
                             all_of(inside.substr(comma + 1), is_digit);
      if (rank_pair && (after.starts_with("<stdout>:") || after.starts_with("<stderr>:"))) {
        line = after.substr(9);
        continue;
      }
      const bool word =
          all_of(inside, [](char c) { return is_alpha(c) || is_digit(c) || c == '_'; });
      if (word &&
          (after.starts_with(":") || (all_of(inside, is_digit) && after.starts_with(" ")))) {
        line = after.substr(1);
        continue;
      }
      return line;
    }
    std::size_t digits = 0;
    while (digits < t.size() && is_digit(t[digits])) ++digits;
    if (digits > 0 && digits < t.size() && t[digits] == ':' &&
        (digits + 1 == t.size() || t[digits + 1] == ' ')) {
      line = t.substr(digits + 1);
      continue;
    }
    return line;
  }
}

[[nodiscard]] inline std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace trainplan::request::log_text
