#include "cmd_plan.hpp"

#include "answer.hpp"

#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "cmd_estimate.hpp"
#include "format.hpp"
#include "options.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/reports/estimate_json.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/planner/search.hpp"

namespace trainplan::cli {
namespace {

void print_plans(const request::Resolved& r, const model::ParameterCounts& n, const planner::PlanResult& p,
                 std::optional<double> tokens, std::optional<std::int64_t> global_batch) {
  const hardware::Cluster& c = r.cluster.cluster;
  const model::Training& base = r.search.base;
  std::cout << fmt::format(
      "{} on {}: {} configurations tried, {} fit in memory\n", model_words(r.model.arch, n, base),
      cluster_words(c), thousands(p.evaluated), thousands(p.fitting));
  print_context(r);
  std::cout << (global_batch
                    ? fmt::format("  global batch {} sequences of {} tokens\n", *global_batch,
                                  base.seq)
                    : fmt::format(
                          "  seq {}; no --global-batch: each plan uses its best micro-batch\n",
                          base.seq));
  if (p.plans.empty()) {
    std::cout << "\nNo plan fits.\n";
  } else {
    std::vector<std::string> head{"#", "plan", "batch", "GiB/GPU", "step s", "tokens/s", "MFU"};
    if (tokens) head.push_back("time to train");
    head.push_back("vs #1");
    Table t(head);
    for (std::size_t i = 0; i < p.plans.size(); ++i) {
      const planner::Estimate& e = p.plans[i];
      std::vector<std::string> row{
          std::to_string(i + 1),
          planner::plan_label(e.training, e.layout),
          fmt::format("{}x{}x{}", e.training.micro_batch, e.training.grad_accum, e.layout.dp),
          gib_text(e.memory.device_total),
          fmt::format("{:.3f}", e.time.step.value()),
          thousands(reports::whole(e.throughput.tokens_per_s)),
          fmt::format("{:.1f} %", 100.0 * e.throughput.mfu)};
      if (tokens) row.push_back(duration_text(planner::time_to_train(e, *tokens)));
      row.push_back(i == 0 ? "best" : p.why_slower[i]);
      t.add(row);
    }
    std::cout << "\n" << t.render();
    const planner::Estimate& best = p.plans.front();
    std::cout << fmt::format(
        "\nBest: {} step = compute {:.3f} + memory-bound {:.3f} + host {:.3f} + recompute {:.3f} + "
        "exposed communication {:.3f} + overlap slowdown {:.3f} + "
        "bubble {:.3f} + "
        "optimizer {:.3f} + offload {:.3f}{} s\n",
        planner::plan_label(best.training, best.layout), best.time.compute.value(),
        best.time.memory_bound.value(), best.time.host.value(), best.time.recompute.value(), best.time.communication_exposed.value(),
        best.time.overlap_slowdown.value(), best.time.bubble.value(), best.time.optimizer.value(), best.time.offload.value(),
        best.training.runs_reference() ? fmt::format(" + reference forward {:.3f}", best.time.reference.value()) : "");
  }
  if (!p.rejected.empty()) {
    std::cout << "\nRejected:\n";
    for (const auto& x : p.rejected) std::cout << fmt::format("  {}: {}\n", x.plan, x.reason);
  }
  std::cout << "\nbatch = micro-batch x grad-accum x data-parallel. GiB = 2^30 bytes per GPU "
               "(device total). "
               "Use `trainplan estimate` with the plan's options for the full breakdown.\n";
}

void run_plan(const request::Catalog& catalog, const request::Request& q) {
  const request::Resolved r = request::resolve(catalog, q, request::command::plan);
  print_warnings(r);
  const model::Architecture& a = r.model.arch;
  const hardware::Cluster& c = r.cluster.cluster;
  const model::ParameterCounts n = model::count_parameters(a);
  const planner::PlanResult p = planner::search(a, n, c, r.search, r.profile ? &*r.profile : nullptr);
  if (q.emit) {
    if (p.plans.empty()) throw InputError("--emit: no plan fits, nothing to emit");
    print_emitted(q, r, p.plans);
    return;
  }
  if (q.json) {
    request::Json j = reports::plan_result_json(a, n, c, p, r.tokens);
    request::add_request_json(j, r);
    std::cout << j.dump(2) << "\n";
  } else {
    print_plans(r, n, p, r.tokens, r.search.global_batch);
  }
  if (p.plans.empty()) throw AnsweredNo("no plan fits (exit 1)");
}

}  // namespace

void setup_plan(CLI::App& app, const request::Catalog& catalog) {
  auto line = std::make_shared<CommandLine>();
  CLI::App* cmd =
      app.add_subcommand("plan", "search the strategies that fit and rank them by throughput");
  add_request_options(*cmd, *line, request::command::plan);
  cmd->callback([&catalog, line] { run_plan(catalog, build_request(*line)); });
}

}  // namespace trainplan::cli
