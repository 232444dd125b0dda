#include "cmd_fit.hpp"

#include "answer.hpp"

#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <optional>

#include "format.hpp"
#include "options.hpp"
#include "trainplan/reports/result_json.hpp"
#include "trainplan/model/lora.hpp"
#include "trainplan/model/partial.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/planner/search.hpp"

namespace trainplan::cli {
namespace {


// The answer in one sentence (reports::verdict_sentence, the GUI banner's wording): the recommended
// plan, or why even the leanest candidate does not fit.
std::string verdict(const request::Resolved& r, const model::ParameterCounts& n, const planner::FitResult& f) {
  const hardware::Cluster& c = r.cluster.cluster;
  reports::VerdictSubject s{model_words(r.model.arch, n, r.search.base), cluster_words(c), {}};
  if (f.candidates.empty())
    return fmt::format("{} — {} has no valid configuration on {}", verdict_look(planner::Verdict::no).headline,
                       s.what, s.where);
  const planner::Candidate* k = &f.candidates[f.recommended ? *f.recommended : f.leanest.value_or(0)];
  s.plan = planner::plan_label(k->training, k->layout);
  if (!f.recommended) s.plan = "its leanest plan (" + s.plan + ")";
  std::optional<std::int64_t> pinned;
  if (r.search.micro_batch || k->max_micro_batch == 0) pinned = k->training.micro_batch;
  return reports::verdict_sentence(
             s, {k->verdict, k->memory.device_total, f.usable, pinned, k->max_micro_batch, k->tokens_per_s})
      .text();
}

void run_fit(const request::Catalog& catalog, const request::Request& q) {
  const request::Resolved r = request::resolve(catalog, q, request::command::fit);
  print_warnings(r);
  const model::Architecture& a = r.model.arch;
  const model::ParameterCounts n = model::count_parameters(a);
  const planner::FitResult f =
      planner::fit(a, n, r.search, r.cluster.cluster, {}, r.profile ? &*r.profile : nullptr);
  const std::string summary = verdict(r, n, f);
  const std::int64_t trainable = model::trainable_parameters(a, n, r.search.base);
  if (q.json) {
    request::Json j = reports::fit_json(a, n, r.cluster.cluster, f, summary);
    j["model"]["trainable_parameters"] = trainable;
    request::add_request_json(j, r);
    std::cout << j.dump(2) << "\n";
    if (!f.recommended) throw AnsweredNo("it does not fit (exit 1)");
    return;
  }
  std::cout << summary << "\n";
  print_context(r);
  const model::Training& base = r.search.base;
  std::cout << fmt::format("  model: {} parameters, {} trainable; seq {}, micro-batch {}{}, {}, {}\n\n",
                           thousands(n.total), thousands(trainable), base.seq, base.micro_batch,
                           base.objective == Objective::sft ? std::string()
                                                            : fmt::format(" ({} pairs)", to_string(base.objective)),
                           precision_words(base),
                           to_string(r.search.base.optimizer));
  Table t({"strategy", "checkpointing", "offload", "verdict", "GiB/GPU", "weights", "grads", "optim", "activ",
           "buffers", "overhead", "max micro-batch", "tokens/s"});
  for (std::size_t i = 0; i < f.candidates.size(); ++i) {
    const auto& k = f.candidates[i];
    const auto& m = k.memory;
    t.add({strategy_label(k.training) +
               (k.training.ep > 1 ? fmt::format(" EP{}", k.training.ep) : std::string()) +
               (f.recommended == i ? " *" : ""),
           model::checkpointing_text(k.training), std::string(to_string(k.training.offload)),
           std::string(verdict_look(k.verdict.verdict).word), gib_text(m.device_total), gib_text(m.weights), gib_text(m.gradients),
           gib_text(m.optimizer), gib_text(m.activations), gib_text(m.buffers), gib_text(m.overhead),
           std::to_string(k.max_micro_batch),
           k.tokens_per_s > 0 ? count_text(reports::whole(k.tokens_per_s)) : "-"});
  }
  std::cout << t.render();
  std::cout << fmt::format(
      "\nGiB = 2^30 bytes. GiB/GPU = peak allocated (weights+grads+optim+activ+buffers, what "
      "torch.cuda.max_memory_allocated shows) + overhead (CUDA context, NCCL, allocator cache), against {} GiB "
      "usable on a {}. * = recommended: the fastest that fits, tokens/s estimated at its largest micro-batch "
      "(trainplan estimate for the details).\n",
      gib_text(f.usable), r.cluster.cluster.gpu.name);
  if (!f.recommended) throw AnsweredNo("it does not fit (exit 1)");
}

}  // namespace

void setup_fit(CLI::App& app, const request::Catalog& catalog) {
  auto line = std::make_shared<CommandLine>();
  CLI::App* cmd = app.add_subcommand("fit", "will it fit? memory per GPU over strategies");
  add_request_options(*cmd, *line, request::command::fit);
  cmd->callback([&catalog, line] { run_fit(catalog, build_request(*line)); });
}

}  // namespace trainplan::cli
