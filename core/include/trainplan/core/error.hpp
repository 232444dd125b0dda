#pragma once
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace trainplan {

// A message in which a file's "key = value" is followed by the same value again, as when an
// input's label (a file's "ds.json: train_batch_size = 256") stands where a flag's name would
// ("--global-batch") before its value: the repeat dropped ("train_batch_size = 256 is ...").
[[nodiscard]] inline std::string without_repeated_values(std::string m) {
  for (std::size_t at = m.find(" = "); at != std::string::npos; at = m.find(" = ", at + 3)) {
    const std::size_t start = at + 3;
    const std::size_t end = m.find(' ', start);
    if (end == std::string::npos || end == start) continue;
    const std::string value = m.substr(start, end - start);
    const std::size_t after = end + 1 + value.size();
    const bool repeated = m.compare(end + 1, value.size(), value) == 0 &&
                          (after == m.size() || m[after] == ' ' || m[after] == ':' || m[after] == ',');
    if (repeated) m.erase(end, 1 + value.size());
  }
  return m;
}

// Bad input from a user or a file. The message names the input, each value once; only main()
// picks the exit code.
class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message) : std::runtime_error(without_repeated_values(message)) {}
  explicit InputError(const char* message) : InputError(std::string(message)) {}
};

// Bad input about training options, named by field ("micro-batch", "tp") rather than by how a
// front end spells them. The message is a template in which "{field}" stands for a field; what()
// writes the fields' names, and each front end renders the template in its own words (the CLI
// "--tp", a config file "ds.json: train_micro_batch_size_per_gpu", the GUI its labels).
class FieldError : public InputError {
 public:
  explicit FieldError(std::string message_template)
      : InputError(render_with(message_template, [](std::string_view f) { return std::string(f); })),
        template_(std::move(message_template)) {}

  [[nodiscard]] const std::string& message_template() const { return template_; }
  [[nodiscard]] std::string render(const std::function<std::string(std::string_view)>& words) const {
    return render_with(template_, words);
  }

  // Replaces every "{name}" of `text` by words(name).
  [[nodiscard]] static std::string render_with(std::string_view text,
                                               const std::function<std::string(std::string_view)>& words) {
    std::string out;
    for (std::size_t i = 0; i < text.size();) {
      const std::size_t open = text.find('{', i);
      const std::size_t close = open == std::string_view::npos ? open : text.find('}', open);
      if (close == std::string_view::npos) {
        out.append(text.substr(i));
        break;
      }
      out.append(text.substr(i, open - i));
      out += words(text.substr(open + 1, close - open - 1));
      i = close + 1;
    }
    return out;
  }

 private:
  std::string template_;
};

}  // namespace trainplan
