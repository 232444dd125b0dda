#include "cmd_validate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "answer.hpp"
#include "format.hpp"
#include "trainplan/request/profile_json.hpp"
#include "trainplan/reports/validation_report.hpp"
#include "trainplan/request/reference.hpp"
#include "trainplan/planner/validate.hpp"

namespace trainplan::cli {
namespace {

using planner::CaseResult;
using planner::Comparison;

struct ValidateOptions {
  std::vector<std::string> paths;
  bool json = false;
  bool markdown = false;
  bool check = false;
  std::optional<std::string> profile;  // hardware profile JSON from `calibrate fit`
};

void run_validate(const request::Catalog& catalog, const ValidateOptions& o) {
  const auto cases = request::read_reference_paths(o.paths, catalog);
  // The profile predicts the cases on the GPU it was measured on; the others keep the datasheet.
  std::optional<hardware::HardwareProfile> profile;
  if (o.profile) profile = request::read_profile_option(*o.profile);
  const planner::ValidationReport rep =
      planner::validate(cases, planner::MemoryConventions{}, profile ? &*profile : nullptr);
  if (o.json) {
    request::Json j = reports::validation_json(rep);
    if (o.profile) j["profile"] = *o.profile;
    std::cout << j.dump(2) << "\n";
  } else if (o.markdown) {
    std::vector<std::string> args = o.paths;
    if (o.profile) args.push_back("--profile " + *o.profile);
    std::cout << reports::validation_markdown(rep, args);
  } else {
    std::cout << reports::validation_text(rep);
  }
  if (o.check) {
    std::size_t outside = 0;
    std::size_t stale = 0;
    for (const CaseResult& r : rep.cases)
      for (const Comparison& c : r.comparisons)
        if (c.stale_open()) {
          ++stale;
          std::cerr << reports::stale_open_text(r, c) << "\n";
        } else if (!c.within_tolerance() && !c.open_gap()) {
          ++outside;
          std::cerr << reports::outside_tolerance_text(r, c) << "\n";
        }
    if (outside + stale > 0)
      throw AnsweredNo(fmt::format("{} value(s) outside their stated tolerance, {} stale open mark(s)", outside,
                                   stale));
  }
}

}  // namespace

void setup_validate(CLI::App& app, const request::Catalog& catalog) {
  auto opts = std::make_shared<ValidateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "validate", "predictions against measured runs and the oracle: error table");
  cmd->add_option("paths", opts->paths,
                  "reference files or folders (searched recursively for *.json)")
      ->required();
  auto* json = cmd->add_flag("--json", opts->json, "print JSON instead of tables");
  auto* md = cmd->add_flag("--markdown", opts->markdown,
                           "print the Markdown report kept in docs/accuracy.md");
  json->excludes(md);
  cmd->add_flag("--check", opts->check,
                "exit 1 when any value is outside the tolerance its file states without an open gap, or "
                "within it with one (for CI)");
  cmd->add_option("--profile", opts->profile,
                  "hardware profile JSON from trainplan calibrate fit, applied to the cases on the "
                  "GPU it was measured on");
  cmd->callback([&catalog, opts] { run_validate(catalog, *opts); });
}

}  // namespace trainplan::cli
