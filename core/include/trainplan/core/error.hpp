#pragma once
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace trainplan {

// Bad input from a user or a file. The message names the input; only main() picks the exit code.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
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
