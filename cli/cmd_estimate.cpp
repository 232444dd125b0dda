#include "cmd_estimate.hpp"

#include "answer.hpp"

#include <fmt/format.h>

#include <iostream>

#include "format.hpp"
#include "options.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/model/partial.hpp"
#include "trainplan/reports/estimate_json.hpp"
#include "trainplan/request/files.hpp"
#include "trainplan/model/lora.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/planner/emit.hpp"
#include "trainplan/planner/search.hpp"

namespace trainplan::cli {

std::string duration_text(Seconds s) {
  const double v = s.value();
  if (v >= 2.0 * 86400.0) return fmt::format("{:.1f} days", v / 86400.0);
  if (v >= 2.0 * 3600.0) return fmt::format("{:.1f} hours", v / 3600.0);
  if (v >= 120.0) return fmt::format("{:.1f} minutes", v / 60.0);
  if (v >= 1.0) return fmt::format("{:.2f} s", v);
  return fmt::format("{:.1f} ms", v * 1e3);
}

void print_emitted(const request::Request& q, const request::Resolved& r, const std::vector<planner::Estimate>& plans) {
  planner::RankedEmit out;
  try {
    out = planner::emit_first_expressible(*q.emit, plans, r.cluster.cluster, r.model.arch, request::emit_context(r));
  } catch (const planner::EmitDoesNotFit& e) {
    throw AnsweredNo(e.render(flag_words));
  }
  for (const auto& n : out.emitted.notes)
    std::cerr << "note: " << FieldError::render_with(n, flag_words) << "\n";
  if (q.output.empty()) {
    std::cout << out.emitted.text;
  } else {
    request::write_file_atomically(q.output, out.emitted.text);
    std::cerr << "note: launch config written to " << q.output << "\n";
  }
}


namespace {

std::string seconds_cell(Seconds s) { return fmt::format("{:.3f}", s.value()); }
std::string percent(double x) { return fmt::format("{:.1f} %", 100.0 * x); }

// The step's batch in samples (a preference pair is two sequences through the model), tokens and
// how it computes.
void print_batch(const model::Training& t, const planner::Estimate& e) {
  const std::int64_t per = sequences_per_sample(t.objective);
  const std::string samples =
      per == 1 ? fmt::format("{} sequences", e.global_batch)
               : fmt::format("{} {} pairs ({} sequences{})", e.global_batch, to_string(t.objective), e.global_batch * per,
                             t.runs_reference() ? ", each also through the reference model" : "");
  std::cout << fmt::format("  batch: micro-batch {} x grad-accum {} x DP {} = {} of {} tokens ({} tokens) per step; "
                           "{}, {}, {} attention{}{}\n",
                           t.micro_batch, t.grad_accum, e.layout.dp, samples, t.seq,
                           thousands(e.global_batch * per * t.seq), precision_words(t), to_string(t.optimizer),
                           to_string(t.attention), t.liger ? ", Liger's kernels" : "",
                           t.compile ? ", torch.compile" : "");
}

void print_estimate(const request::Resolved& r, const model::ParameterCounts& n, const planner::Estimate& e,
                    std::optional<double> tokens, bool profiled) {
  const hardware::Cluster& c = r.cluster.cluster;
  const model::Training& t = e.training;
  std::cout << fmt::format("{} on {}: {}\n", model_words(r.model.arch, n, t), cluster_words(c),
                           planner::plan_label(t, e.layout));
  print_context(r);
  print_batch(t, e);
  std::cout << fmt::format(
      "  memory: {} of {} GiB per GPU{}{} — {} (largest micro-batch that fits: {})\n",
      gib_text(e.memory.device_total), gib_text(c.gpu.usable_memory),
      e.memory.peak_stage.empty() ? std::string() : fmt::format(" on the {} pipeline stage", e.memory.peak_stage),
      e.memory.peak_phase == "backward" ? std::string() : fmt::format(" (peak: {})", e.memory.peak_phase),
      verdict_text(e.verdict),
      e.max_micro_batch);
  if (e.memory.states.reference.value() > 0.0)
    std::cout << fmt::format("  of the weights, {} GiB are the frozen reference model's copy\n",
                             gib_text(e.memory.states.reference));
  if (e.memory.states.fp8_weights.value() > 0.0)
    std::cout << fmt::format("  of the weights, {} GiB are {}\n", gib_text(e.memory.states.fp8_weights),
                             t.fp8_param_gather ? "the FP8 parameters themselves (with their transposes where kept)"
                                                : "Transformer Engine's cached FP8 weight copies");
  if (e.memory.host.value() > 0.0)
    std::cout << (c.host_memory.value() > 0.0
                      ? fmt::format("  host: {} of {} GiB of CPU memory per node (offloaded states or "
                                    "checkpoints)\n",
                                    gib_text(e.memory.host), gib_text(c.host_memory))
                      : fmt::format("  host: {} GiB of CPU memory per node (offloaded states or "
                                    "checkpoints; --host-memory to check it)\n",
                                    gib_text(e.memory.host)));
  std::cout << "\n";
  const double step = e.time.step.value();
  Table tt({"step time", "seconds", "share"});
  auto row = [&](const char* name, Seconds s) {
    tt.add({name, seconds_cell(s), step > 0 ? percent(s.value() / step) : "-"});
  };
  row("compute (fwd+bwd matmuls, attention)", e.time.compute);
  row("memory-bound (fwd+bwd elementwise)", e.time.memory_bound);
  row("host (kernel issue, exposed)", e.time.host);
  row("recompute", e.time.recompute);
  row("communication (exposed)", e.time.communication_exposed);
  row("overlap slowdown (hidden comm.)", e.time.overlap_slowdown);
  row("pipeline bubble", e.time.bubble);
  row("optimizer step", e.time.optimizer);
  row("offload (exposed)", e.time.offload);
  if (e.training.runs_reference()) row("reference forward (DPO)", e.time.reference);
  row("total", e.time.step);
  std::cout << tt.render() << "\n";
  std::cout << fmt::format(
      "Phases: forward {} s, backward {} s (with recomputation), optimizer {} s; {:.0f} kernels "
      "launched per step by forward and backward\n",
      seconds_cell(e.time.forward_phase), seconds_cell(e.time.backward_phase),
      seconds_cell(e.time.optimizer), e.time.kernels_forward + e.time.kernels_backward);
  std::cout << fmt::format("Throughput: {} tokens/s ({:.0f} per GPU), {:.2f} samples/s\n",
                           thousands(reports::whole(e.throughput.tokens_per_s)),
                           e.throughput.tokens_per_s / c.world(), e.throughput.samples_per_s);
  std::cout << fmt::format("MFU {}, HFU {}\n  {}\n", percent(e.throughput.mfu),
                           percent(e.throughput.hfu), e.throughput.mfu_formula);
  if (!e.communication.empty()) {
    std::cout << "\nCommunication per GPU per step:\n";
    Table ct({"collective", "purpose", "tier", "bytes", "time s", "exposed s", "from"});
    for (const auto& x : e.communication)
      ct.add({x.collective, x.purpose, x.tier, bytes_text(x.bytes), seconds_cell(x.time),
              seconds_cell(x.exposed), x.source});
    ct.add({"total", "", "", bytes_text(e.communication_bytes()), "",
            seconds_cell(e.time.communication_exposed), ""});
    std::cout << ct.render();
  }
  if (tokens)
    std::cout << fmt::format("\nTime to train {:.4g} tokens: {} ({:.0f} GPU-hours)\n", *tokens,
                             duration_text(planner::time_to_train(e, *tokens)),
                             planner::time_to_train(e, *tokens).value() * c.world() / 3600.0);
  std::cout << fmt::format(
      "\nConstants: {}. Times per optimizer step; exposed = not hidden behind compute.\n",
      profiled ? "hardware profile, datasheet defaults where it is silent"
               : "datasheet defaults (docs/formulas.md); calibrate with trainplan calibrate");
}

// What one block keeps for backward, tensor by tensor (the estimate's block_terms), and how the
// blocks, embedding and head add up to the activation memory.
void print_activations(const model::Architecture& a, const planner::Estimate& e) {
  const model::Training& t = e.training;
  const model::ActivationMemory& m = e.memory.activation_detail;
  auto mib = [](Bytes b) { return fmt::format("{:.1f}", b.value() / 1048576.0); };
  for (const model::StackActivationTerms& part : m.block_terms) {
    const model::Stack stack = part.stack;
    const auto& terms = part.terms;
    Bytes total;
    for (const auto& term : terms) total += term.bytes;
    std::cout << fmt::format(
        "\nSaved for backward by one {}block, micro-batch {} x {} tokens{} (before checkpointing):\n",
        a.encoder_decoder ? (stack == model::Stack::encoder ? "encoder " : "decoder ") : "",
        t.micro_batch, t.seq, t.tp > 1 ? fmt::format(", TP {}", t.tp) : std::string());
    Table tt({"tensor", "MiB", "share"});
    for (const auto& term : terms)
      tt.add({std::string(term.name), mib(term.bytes), percent(term.bytes.value() / total.value())});
    tt.add({"total", mib(total), percent(1.0)});
    std::cout << tt.render();
  }
  std::cout << fmt::format(
      "Kept with {} checkpointing: {} MiB per block; all blocks of the stage {} MiB ({} micro-batch{} "
      "in flight); replayed block {} MiB{}; embedding {} MiB; head {} MiB{}.\n",
      model::checkpointing_text(t), mib(m.per_block), mib(m.blocks), m.in_flight,
      m.in_flight == 1.0 ? "" : "es", mib(m.recompute_peak),
      m.exchange.backward.value() > 0.0
          ? fmt::format("; context-parallel exchange {} MiB in a block's forward, {} MiB in its backward",
                        mib(m.exchange.forward), mib(m.exchange.backward))
          : std::string(),
      mib(m.embedding), mib(m.head), m.host.value() > 0.0 ? fmt::format("; on the host {} MiB", mib(m.host)) : std::string());
  if (m.sdpa) std::cout << fmt::format("SDPA kernel: {}: {}.\n", to_string(m.sdpa->kernel), m.sdpa->reason);
}

void run_estimate(const request::Catalog& catalog, const request::Request& q) {
  const request::Resolved r = request::resolve(catalog, q, request::command::estimate);
  print_warnings(r);
  const model::Architecture& a = r.model.arch;
  const hardware::Cluster& c = r.cluster.cluster;
  const model::ParameterCounts n = model::count_parameters(a);
  const model::Training tr = request::configuration(r);
  const hardware::HardwareProfile* profile = r.profile ? &*r.profile : nullptr;
  const planner::Evaluator ev(a, n, c, profile, {}, {}, r.search.options);
  const planner::Estimate e = ev.estimate(tr);
  if (q.emit) {
    print_emitted(q, r, {e});
    return;
  }
  if (q.json) {
    request::Json j = reports::estimate_json(a, n, c, e, r.tokens);
    request::add_request_json(j, r);
    std::cout << j.dump(2) << "\n";
  } else {
    print_estimate(r, n, e, r.tokens, profile != nullptr);
    if (q.activations) print_activations(a, e);
  }
  if (!e.fits) throw AnsweredNo("this configuration does not fit (exit 1)");
}

}  // namespace

void setup_estimate(CLI::App& app, const request::Catalog& catalog) {
  auto line = std::make_shared<CommandLine>();
  CLI::App* cmd = app.add_subcommand(
      "estimate", "one configuration: memory, step time, throughput, communication");
  add_request_options(*cmd, *line, request::command::estimate);
  cmd->callback([&catalog, line] { run_estimate(catalog, build_request(*line)); });
}

}  // namespace trainplan::cli
