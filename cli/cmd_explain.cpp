#include "cmd_explain.hpp"

#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "answer.hpp"
#include "format.hpp"
#include "options.hpp"
#include "trainplan/reports/estimate_json.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/planner/explain.hpp"
#include "trainplan/planner/search.hpp"

namespace trainplan::cli {
namespace {

std::string change_text(const planner::Suggestion& s) {
  std::string out;
  for (const auto& c : s.changes) {
    out += fmt::format("{}--{} {}", out.empty() ? "" : ", ", c.option, c.to);
    if (!c.from.empty()) out += fmt::format(" (was {})", c.from);
  }
  return out;
}

void print_explanation(const request::Resolved& r, const planner::Explanation& x) {
  const hardware::Cluster& c = r.cluster.cluster;
  const planner::Estimate& g = x.given;
  std::cout << fmt::format("{} on {}: {}, micro-batch {} x grad-accum {}, seq {}\n", r.model.arch.name,
                           cluster_words(c), planner::plan_label(g.training, g.layout), g.training.micro_batch,
                           g.training.grad_accum, g.training.seq);
  print_context(r);
  std::cout << fmt::format("  as given: {} of {} GiB per GPU — {}\n", gib_text(g.memory.device_total),
                           gib_text(c.gpu.usable_memory),
                           verdict_text(g.verdict));
  if (g.fits) {
    std::cout << "\nNothing to change: it fits as given.\n";
    return;
  }
  if (x.suggestions.empty()) {
    std::cout << "\nNo single change or pair of changes makes it fit: try `trainplan plan` for a wider search.\n";
    return;
  }
  std::cout << fmt::format("\n{} that make it fit, fastest first:\n", x.pairs ? "Pairs of changes" : "Changes");
  Table t({"#", "change", "verdict", "GiB/GPU", "tokens/s", "kept"});
  for (std::size_t i = 0; i < x.suggestions.size(); ++i) {
    const planner::Suggestion& s = x.suggestions[i];
    t.add({std::to_string(i + 1), change_text(s), std::string(verdict_look(s.estimate.verdict.verdict).word),
           gib_text(s.estimate.memory.device_total),
           thousands(reports::whole(s.estimate.throughput.tokens_per_s)),
           fmt::format("{:.0f} %", 100.0 * s.throughput_kept)});
  }
  std::cout << t.render();
  std::cout << "\nkept = tokens/s of the change over what the configuration as given would run at, had it fit. "
               "tight = the peak fits, the allocator's expected cache does not (trainplan estimate says why).\n";
}

void run_explain(const request::Catalog& catalog, const request::Request& q) {
  request::Resolved r = request::resolve(catalog, q, request::command::explain);
  // As given: what the inputs leave out runs as the frameworks default to it (no checkpointing,
  // no offload); only an omitted strategy is the one fit recommends.
  if (!r.search.checkpointing) r.search.checkpointing = Checkpointing::none;
  if (!r.search.offload) r.search.offload = Offload::none;
  print_warnings(r);
  const model::Architecture& a = r.model.arch;
  const model::ParameterCounts n = model::count_parameters(a);
  const planner::Explanation x =
      planner::suggest_changes(a, n, request::configuration(r), r.cluster.cluster, r.profile ? &*r.profile : nullptr);
  if (q.json) {
    request::Json j = reports::explain_json(a, n, r.cluster.cluster, x);
    request::add_request_json(j, r);
    std::cout << j.dump(2) << "\n";
  } else {
    print_explanation(r, x);
  }
  if (!x.given.fits) throw AnsweredNo("it does not fit as given (exit 1)");
}

}  // namespace

void setup_explain(CLI::App& app, const request::Catalog& catalog) {
  auto line = std::make_shared<CommandLine>();
  CLI::App* cmd = app.add_subcommand(
      "explain",
      "a configuration that does not fit (from --from files and flags): the smallest changes that make it fit, "
      "with their memory and tokens/s");
  add_request_options(*cmd, *line, request::command::explain);
  cmd->callback([&catalog, line] { run_explain(catalog, build_request(*line)); });
}

}  // namespace trainplan::cli
