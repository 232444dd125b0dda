#include "cmd_fit.hpp"

#include "answer.hpp"

#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "format.hpp"
#include "options.hpp"
#include "trainplan/reports/result_json.hpp"
#include "trainplan/model/lora.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/planner/search.hpp"

namespace trainplan::cli {
namespace {


std::string verdict(const request::Resolved& r, const model::ParameterCounts& n, const planner::FitResult& f) {
  const hardware::Cluster& c = r.cluster.cluster;
  const std::string where = c.world() == 1 ? fmt::format("1x {}", c.gpu.name)
                                           : fmt::format("{}x {}", c.world(), c.gpu.name);
  const std::string what = fmt::format("{} ({} params, {})", r.model.arch.name, count_text(n.total),
                                       to_string(r.search.base.method));
  if (f.recommended) {
    const planner::Candidate& k = f.candidates[*f.recommended];
    std::string mb = r.search.micro_batch.has_value()
                         ? fmt::format("micro-batch {} (up to {})", k.training.micro_batch, k.max_micro_batch)
                         : fmt::format("micro-batch up to {}", k.max_micro_batch);
    const std::string speed =
        k.tokens_per_s > 0 ? fmt::format(" (~{} tokens/s estimated)", count_text(static_cast<std::int64_t>(k.tokens_per_s)))
                           : "";
    if (k.verdict.verdict == planner::Verdict::tight)
      return fmt::format("Tight — {} on {} with {}: {}; {}{}", what, where, planner::plan_label(k.training, k.layout), k.verdict.reason,
                         k.max_micro_batch > 0 ? mb : fmt::format("micro-batch {}", k.training.micro_batch), speed);
    return fmt::format("Yes — {} fits on {} with {}: {} of {} GiB per GPU; {}{}", what, where, planner::plan_label(k.training, k.layout),
                       gib_text(k.memory.device_total), gib_text(f.usable), mb, speed);
  }
  if (f.candidates.empty()) return fmt::format("No — {} has no valid configuration on {}", what, where);
  const planner::Candidate* best = &f.candidates.front();
  for (const auto& k : f.candidates)
    if (k.memory.device_total < best->memory.device_total) best = &k;
  const hardware::Cluster& cl = r.cluster.cluster;
  if (best->memory.device_total <= f.usable)
    return fmt::format("No — {} does not fit on {}: the leanest candidate ({}) fits the GPUs but needs {} of {} "
                       "GiB of CPU memory per node",
                       what, where, planner::plan_label(best->training, best->layout), gib_text(best->memory.host),
                       gib_text(cl.host_memory));
  return fmt::format("No — {} does not fit on {}: the leanest candidate ({}): {}", what, where,
                     planner::plan_label(best->training, best->layout), best->verdict.reason);
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
  std::cout << fmt::format("  model: {} parameters, {} trainable; seq {}, micro-batch {}, {}, {}\n\n",
                           thousands(n.total), thousands(trainable), r.search.base.seq,
                           r.search.base.micro_batch, precision_words(r.search.base),
                           to_string(r.search.base.optimizer));
  Table t({"strategy", "checkpointing", "offload", "fits", "GiB/GPU", "weights", "grads", "optim", "activ",
           "buffers", "overhead", "max micro-batch", "tokens/s"});
  for (std::size_t i = 0; i < f.candidates.size(); ++i) {
    const auto& k = f.candidates[i];
    const auto& m = k.memory;
    t.add({strategy_label(k.training.strategy) +
               (k.training.ep > 1 ? fmt::format(" EP{}", k.training.ep) : std::string()) +
               (f.recommended == i ? " *" : ""),
           std::string(to_string(k.training.checkpointing)), std::string(to_string(k.training.offload)),
           std::string(to_string(k.verdict.verdict)), gib_text(m.device_total), gib_text(m.weights), gib_text(m.gradients),
           gib_text(m.optimizer), gib_text(m.activations), gib_text(m.buffers), gib_text(m.overhead),
           std::to_string(k.max_micro_batch),
           k.tokens_per_s > 0 ? count_text(static_cast<std::int64_t>(k.tokens_per_s)) : "-"});
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
