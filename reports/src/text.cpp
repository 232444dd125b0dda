#include "trainplan/reports/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "trainplan/model/partial.hpp"
#include "trainplan/reports/verdict.hpp"

namespace trainplan::reports {

std::string strategy_label(Strategy s) { return std::string(display_name(s)); }
std::string strategy_label(const model::Training& t) { return model::strategy_name(t); }

std::string gib_text(Bytes b) { return fmt::format("{:.1f}", to_gib(b)); }

std::string bytes_text(Bytes b) {
  const double v = std::abs(b.value());
  if (v >= kGiB) return fmt::format("{:.{}f} GiB", to_gib(b), v >= 100 * kGiB ? 0 : (v >= 10 * kGiB ? 1 : 2));
  if (v >= kMiB) return fmt::format("{:.{}f} MiB", to_mib(b), v >= 100 * kMiB ? 0 : 1);
  if (v >= kKiB) return fmt::format("{:.1f} KiB", b.value() / kKiB);
  return fmt::format("{:.0f} B", b.value());
}

std::int64_t whole(double rate) { return std::llround(rate); }

std::string verdict_text(const planner::MemoryVerdict& v) {
  const std::string word(verdict_look(v.verdict).word);
  return v.verdict == planner::Verdict::fits ? word : word + " — " + v.reason;
}

std::string count_text(std::int64_t n) {
  const double v = static_cast<double>(n);
  if (v >= 1e9) return fmt::format("{:.1f}B", v / 1e9);
  if (v >= 1e6) return fmt::format("{:.1f}M", v / 1e6);
  if (v >= 1e3) return fmt::format("{:.1f}K", v / 1e3);
  return fmt::format("{}", n);
}

std::string model_words(const model::Architecture& a, const model::ParameterCounts& n, const model::Training& t) {
  if (model::trains_subset(t))
    return fmt::format("{} ({} params, full of {}: {} trained)", a.name, count_text(n.total),
                       model::trained_subset_text(t.partial), count_text(model::trainable_parameters(a, n, t)));
  return fmt::format("{} ({} params, {})", a.name, count_text(n.total), to_string(t.method));
}

std::string cluster_words(const hardware::Cluster& c) {
  if (c.nodes <= 1) return fmt::format("{}x {}", c.world(), c.gpu.name);
  return fmt::format("{}x {} ({} nodes x {})", c.world(), c.gpu.name, c.nodes, c.gpus_per_node);
}

std::string thousands(std::int64_t n) {
  const std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  out.reserve(digits.size() + digits.size() / 3 + 1);
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return n < 0 ? "-" + out : out;
}

std::string Table::render() const {
  std::vector<std::size_t> w(header_.size(), 0);
  auto widen = [&](const std::vector<std::string>& r) {
    for (std::size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], r[i].size());
  };
  widen(header_);
  for (const auto& r : rows_) widen(r);
  auto line = [&](const std::vector<std::string>& r) {
    std::string out;
    for (std::size_t i = 0; i < w.size(); ++i) {
      const std::string cell = i < r.size() ? r[i] : "";
      const std::string pad(w[i] - cell.size(), ' ');
      out += (i ? "  " : "") + (i == 0 ? cell + pad : pad + cell);
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(header_);
  std::size_t total = 0;
  for (auto x : w) total += x + 2;
  out += std::string(total > 2 ? total - 2 : 0, '-') + "\n";
  for (const auto& r : rows_) out += line(r);
  return out;
}

}  // namespace trainplan::reports
