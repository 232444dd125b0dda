#include "format.hpp"

#include <iostream>

#include <fmt/format.h>

#include <algorithm>

namespace trainplan::cli {

std::string precision_words(const model::Training& t) {
  const std::string master = t.bf16_optimizer_states ? " (bf16 master weights, gradients and moments)"
                             : t.bf16_master          ? " (bf16 master weights and gradients)"
                                                      : "";
  if (t.fp8 == Fp8Recipe::none) return std::string(to_string(t.precision)) + master;
  return fmt::format("{}{}, linears in FP8 ({}{})", to_string(t.precision), master, to_string(t.fp8),
                     t.fp8_param_gather ? ", gathered in FP8" : "");
}

void print_context(const request::Resolved& r) {
  for (const auto& note : r.notes) std::cout << "  note: " << note << "\n";
  // What each config file set, file by file: "option value  <- key = value".
  std::string file;
  for (const auto& p : r.provenance) {
    const std::string here = request::source_file(p.source);
    if (here.empty()) continue;  // a flag or an argument
    if (here != file) std::cout << "  from " << here << ":\n";
    file = here;
    std::cout << fmt::format("    {:<28} <- {}\n", p.option + " " + p.value, p.source.substr(here.size() + 2));
  }
}

void print_warnings(const request::Resolved& r) {
  for (const auto& w : r.warnings) std::cerr << "warning: " << w << "\n";
}

}  // namespace trainplan::cli
