// The words a launch script passes to its commands, read as bash reads them for what launch scripts
// do (bash(1), "QUOTING", "Parameter Expansion", "Word Splitting"): single quotes keep everything,
// double quotes keep spaces and expand $NAME, a backslash escapes a character or joins two lines,
// `#` at the start of a word comments out the rest of the line. Plain assignments (`NAME=value`,
// `export NAME="..."`, values spanning lines in quotes) are followed in order, and $NAME, ${NAME}
// and ${NAME:-default} expand to them; unquoted, the value splits into words at blanks, so
// `torchrun ... $GPT_ARGS` passes every flag GPT_ARGS holds. What the script computes ($(...),
// $((...)), $1) or takes from the environment stays as written, for the readers to report. An
// `if [ ... ]` over values the script set is evaluated and its false branch skipped; one over
// anything else is read through.
#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config_reader.hpp"
#include "trainplan/core/error.hpp"

namespace trainplan::request::config {
namespace {

bool is_name_char(char c, bool first) {
  return c == '_' || std::isalpha(static_cast<unsigned char>(c)) != 0 ||
         (!first && std::isdigit(static_cast<unsigned char>(c)) != 0);
}

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// A builtin whose arguments are assignments: `export NAME=value`.
bool is_declaration(const std::string& word) {
  return word == "export" || word == "declare" || word == "local" || word == "readonly";
}

// NAME=... : the position of the '=', or npos when the word is not an assignment.
std::size_t assignment_equals(const std::string& word) {
  const std::size_t eq = word.find('=');
  if (eq == std::string::npos || eq == 0) return std::string::npos;
  for (std::size_t k = 0; k < eq; ++k)
    if (!is_name_char(word[k], k == 0)) return std::string::npos;
  return eq;
}

class ShellReader {
 public:
  ShellReader(const std::string& text, const std::string& path) : t_(text), path_(path) {}

  std::vector<std::string> run() {
    while (i_ < t_.size()) step();
    if (quote_) throw InputError(path_ + ": unterminated quote in the command line");
    end_command();
    return out_;
  }

 private:
  void step() {
    const char c = t_[i_];
    if (quote_ == '\'') {
      if (c == '\'') quote_ = 0;
      else word_ += c;
      ++i_;
      return;
    }
    if (quote_ == '"') {
      if (c == '"') {
        quote_ = 0;
        ++i_;
      } else if (c == '\\' && i_ + 1 < t_.size() && std::string_view("$`\"\\\n").find(t_[i_ + 1]) != std::string_view::npos) {
        if (t_[i_ + 1] != '\n') word_ += t_[i_ + 1];
        i_ += 2;
      } else if (c == '$') {
        word_ += expansion();  // quoted: one word, blanks kept
      } else {
        word_ += c;
        ++i_;
      }
      return;
    }
    unquoted(c);
  }

  void unquoted(char c) {
    if (c == '\\' && i_ + 1 < t_.size()) {
      if (t_[i_ + 1] != '\n') {
        word_ += t_[i_ + 1];
        in_word_ = true;
      }
      i_ += 2;
      return;
    }
    if (c == '\'' || c == '"') {
      quote_ = c;
      in_word_ = true;
      ++i_;
      return;
    }
    if (c == '#' && !in_word_) {
      while (i_ < t_.size() && t_[i_] != '\n') ++i_;
      return;
    }
    if (c == '\n' || c == ';' || c == '&' || c == '|') {
      end_word();
      end_command();
      ++i_;
      return;
    }
    if (is_blank(c)) {
      end_word();
      ++i_;
      return;
    }
    if (c == '$') {
      const std::string value = expansion();
      // An assignment's value is not split; elsewhere an unquoted value splits at blanks.
      if (assigning()) {
        word_ += value;
        in_word_ = true;
        return;
      }
      std::size_t k = 0;
      while (k < value.size()) {
        if (is_blank(value[k]) || value[k] == '\n') {
          end_word();
          ++k;
          continue;
        }
        word_ += value[k++];
        in_word_ = true;
      }
      return;
    }
    word_ += c;
    in_word_ = true;
    ++i_;
  }

  // The word being read is NAME=... at the start of a command (after `export`, `declare` or
  // `local`): an assignment.
  bool assigning() const {
    const bool first = words_.empty() || (words_.size() == 1 && is_declaration(words_[0]));
    return first && assignment_equals(word_) != std::string::npos;
  }

  // At a '$': the value of $NAME, ${NAME} or ${NAME:-default}, or the text as written when the
  // script does not define it (the environment, a computed value, a positional parameter).
  std::string expansion() {
    const std::size_t start = i_++;
    if (i_ < t_.size() && t_[i_] == '{') {
      const std::size_t close = t_.find('}', i_);
      if (close == std::string::npos) return t_.substr(start, ++i_ - start);
      const std::string inner = t_.substr(i_ + 1, close - i_ - 1);
      i_ = close + 1;
      std::size_t n = 0;
      while (n < inner.size() && is_name_char(inner[n], n == 0)) ++n;
      const std::string name = inner.substr(0, n);
      const auto it = vars_.find(name);
      const bool set = it != vars_.end();
      const std::string_view rest = std::string_view(inner).substr(n);
      if (rest.empty()) return set ? it->second : t_.substr(start, i_ - start);
      // ${NAME:-word} / ${NAME-word} / ${NAME:=word}: the word when NAME is unset (or empty).
      for (const std::string_view op : {":-", "-", ":=", "="}) {
        if (!rest.starts_with(op)) continue;
        const bool empty_counts = op.front() == ':';
        if (set && !(empty_counts && it->second.empty())) return it->second;
        // Bash removes the word's quotes: ${SLURM_NNODES:-"1"} is 1.
        std::string word;
        for (const char c : rest.substr(op.size()))
          if (c != '"' && c != '\'') word += c;
        if (op.back() == '=') vars_[name] = word;
        return word;
      }
      return t_.substr(start, i_ - start);
    }
    if (i_ < t_.size() && t_[i_] == '(') {  // $(...) and $((...)): kept as written
      int depth = 0;
      while (i_ < t_.size()) {
        depth += t_[i_] == '(' ? 1 : t_[i_] == ')' ? -1 : 0;
        ++i_;
        if (depth == 0) break;
      }
      return t_.substr(start, i_ - start);
    }
    std::size_t n = i_;
    while (n < t_.size() && is_name_char(t_[n], n == i_)) ++n;
    if (n == i_) {  // $1, $@, a lone '$'
      if (i_ < t_.size() && !is_blank(t_[i_]) && t_[i_] != '\n') ++i_;
      return t_.substr(start, i_ - start);
    }
    const std::string name = t_.substr(i_, n - i_);
    i_ = n;
    const auto it = vars_.find(name);
    return it != vars_.end() ? it->second : "$" + name;
  }

  void end_word() {
    if (in_word_) words_.push_back(word_);
    word_.clear();
    in_word_ = false;
  }

  // `if [ A = B ]`, `[ A -eq B ]`, `[ -z A ]` and the like over values the script set: true or
  // false; nullopt where a side is not known (the environment, a positional parameter, a file test).
  static std::optional<bool> condition(const std::vector<std::string>& w) {
    const auto open = std::find_if(w.begin(), w.end(), [](const std::string& x) { return x == "[" || x == "[["; });
    const auto close = std::find_if(w.begin(), w.end(), [](const std::string& x) { return x == "]" || x == "]]"; });
    if (open == w.end() || close == w.end() || close < open) return std::nullopt;
    const std::vector<std::string> in(open + 1, close);
    for (const std::string& x : in)
      if (x.find('$') != std::string::npos || x.find('`') != std::string::npos) return std::nullopt;
    if (in.size() == 2 && in[0] == "-z") return in[1].empty();
    if (in.size() == 2 && in[0] == "-n") return !in[1].empty();
    if (in.size() != 3) return std::nullopt;
    const std::string& op = in[1];
    if (op == "=" || op == "==") return in[0] == in[2];
    if (op == "!=") return in[0] != in[2];
    long long a = 0, b = 0;
    try {
      std::size_t ua = 0, ub = 0;
      a = std::stoll(in[0], &ua);
      b = std::stoll(in[2], &ub);
      if (ua != in[0].size() || ub != in[2].size()) return std::nullopt;
    } catch (const std::exception&) {
      return std::nullopt;
    }
    if (op == "-eq") return a == b;
    if (op == "-ne") return a != b;
    if (op == "-lt") return a < b;
    if (op == "-le") return a <= b;
    if (op == "-gt") return a > b;
    if (op == "-ge") return a >= b;
    return std::nullopt;
  }

  // Whether the commands being read run: every enclosing `if` true or not known.
  bool running() const {
    return std::all_of(branches_.begin(), branches_.end(), [](const std::optional<bool>& b) { return b.value_or(true); });
  }

  // if / elif / else / fi: a branch whose condition is known to be false is skipped (its
  // assignments too); one whose condition is not known is read, as before.
  bool control(std::vector<std::string>& w) {
    while (!w.empty() && (w[0] == "then" || w[0] == "else" || w[0] == "fi")) {
      if (w[0] == "else" && !branches_.empty() && branches_.back()) branches_.back() = !*branches_.back();
      if (w[0] == "fi" && !branches_.empty()) branches_.pop_back();
      w.erase(w.begin());
    }
    if (w.empty()) return true;
    if (w[0] == "if") {
      branches_.push_back(condition(w));
      return true;
    }
    if (w[0] == "elif") {
      if (!branches_.empty()) branches_.back() = std::nullopt;
      return true;
    }
    return !running();
  }

  // A command of assignments only sets variables; any other passes its words on.
  void end_command() {
    end_word();
    if (control(words_)) {
      words_.clear();
      return;
    }
    const std::size_t first = !words_.empty() && is_declaration(words_[0]) ? 1 : 0;
    bool assignments = words_.size() > first;
    for (std::size_t k = first; k < words_.size() && assignments; ++k)
      assignments = assignment_equals(words_[k]) != std::string::npos;
    if (assignments) {
      for (std::size_t k = first; k < words_.size(); ++k) {
        const std::size_t eq = assignment_equals(words_[k]);
        vars_[words_[k].substr(0, eq)] = words_[k].substr(eq + 1);
      }
    } else {
      out_.insert(out_.end(), words_.begin(), words_.end());
    }
    words_.clear();
  }

  const std::string& t_;
  const std::string& path_;
  std::size_t i_ = 0;
  char quote_ = 0;
  std::string word_;
  bool in_word_ = false;
  std::vector<std::string> words_;  // of the command being read
  std::vector<std::string> out_;
  std::map<std::string, std::string> vars_;
  std::vector<std::optional<bool>> branches_;  // the enclosing ifs' conditions
};

}  // namespace

std::vector<std::string> script_words(const std::string& text, const std::string& path) {
  return ShellReader(text, path).run();
}

}  // namespace trainplan::request::config
