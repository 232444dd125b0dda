#include "options.hpp"

#include <cmath>
#include <optional>
#include <stdexcept>

namespace trainplan::calibrate {
namespace {

// A parameter count as "100000000" or "1e8": a whole number from 1 to 1e12.
std::int64_t parse_count(const std::string& text) {
  const std::optional<LeadingNumber> number = leading_number(text);
  const double value = number ? number->value : 0.0;
  if (!number || number->end != text.size() || !(value >= 1.0 && value <= 1e12) ||
      value != std::floor(value)) {
    throw std::invalid_argument("--optimizer-params: '" + text +
                                "' is not a whole number of parameters from 1 to 1e12 (e.g. 1e8)");
  }
  return static_cast<std::int64_t>(value);
}

// An option that takes a comma-separated list.
CLI::Option* add_list(CLI::App& app, const std::string& name, std::vector<std::string>& into,
                      const std::string& help) {
  return app.add_option(name, into, help)->delimiter(',');
}

// An option whose value the help names by a placeholder (RUN_DIR, ESTIMATE.json, KEY=VALUE).
template <class T>
CLI::Option* add_named(CLI::App& app, const std::string& name, T& into, const std::string& placeholder,
                       const std::string& help) {
  return app.add_option(name, into, help)->type_name(placeholder);
}

// Which suites run: --quick, or one flag per suite.
void setup_suite_flags(CLI::App& app, Options& o) {
  app.add_flag(
      "--quick", o.quick,
      "Small sweep (~2 min on one node): all_reduce/all_gather/reduce_scatter up to 1 GiB, "
      "a few GEMMs, attention at 2 sequence lengths, memory bandwidth, the GPU AdamW step "
      "at 1e8 parameters, elementwise kernels at 2 sizes, launch overhead");
  app.add_flag("--comm", o.comm, "Run the NCCL collective sweeps");
  app.add_flag("--gemm", o.gemm, "Run the cuBLASLt GEMM sweeps");
  app.add_flag("--attention", o.attention, "Run the attention forward/backward sweeps");
  app.add_flag("--membw", o.membw, "Run device copy and host<->device bandwidth");
  app.add_flag("--cpu-adam", o.cpu_adam, "Run the CPU AdamW throughput benchmark");
  app.add_flag("--optimizer", o.optimizer,
               "Run the GPU AdamW step (one multi-tensor launch; fp32 master weights with bf16 "
               "gradients, and all bf16)");
  app.add_flag(
      "--elementwise", o.elementwise,
      "Run memory-bound kernels: copy, fp32->bf16 cast, bf16 add, RMSNorm over rows of 4096");
  app.add_flag(
      "--launch", o.launch,
      "Run kernel launch overhead: empty kernels and a chain of small bf16 GEMMs, host-timed");
}

// How the suites measure: repetitions, sizes, datatypes and shapes.
void setup_sweep_parameters(CLI::App& app, Options& o) {
  app.add_option("--iters", o.iters, "Timed iterations per point")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--warmup", o.warmup, "Warm-up iterations before every point")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--min-bytes", o.min_bytes_text, "Smallest collective size (K/M/G = KiB/MiB/GiB)")
      ->capture_default_str();
  app.add_option("--max-bytes", o.max_bytes_text,
                 "Largest collective size (default 4G, 1G with --quick)");
  app.add_option("--step-factor", o.step_factor, "Multiplicative step between collective sizes")
      ->capture_default_str();
  add_list(app, "--dtype", o.dtype_texts, "Collective datatypes: float, bf16, half")
      ->capture_default_str();
  add_list(app, "--collectives", o.collective_texts,
           "Collectives: all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, send_recv "
           "(default all; --quick: the first three)");
  add_list(app, "--gemm-dtype", o.gemm_dtype_texts,
           "GEMM datatypes: bf16, fp16, tf32, fp8 (default all; fp8 on sm_89+ only; --quick: bf16)");
  app.add_option("--model-shapes", o.model_shapes_text,
                 "GEMM shapes of a model: h,I,heads,kv_heads,vocab,tokens "
                 "(default 4096,11008,32,32,32000,4096, Llama-2-7B at 4096 tokens)");
  app.add_option("--tp", o.tp, "Tensor-parallel degree applied to --model-shapes")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  add_list(app, "--optimizer-params", o.optimizer_params_texts,
           "Parameter counts of the GPU AdamW step, e.g. 1e8,1e9 (default 1e8,1e9; --quick: 1e8)");
  app.add_option("--launches", o.launches, "Back-to-back launches per launch-overhead point")
      ->check(CLI::Range(10, 1000000))
      ->capture_default_str();
  app.add_option("--timeout", o.timeout_s,
                 "Seconds a collective may hang before the communicators are aborted")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_flag("--resume", o.resume,
               "Keep RUN_DIR/measurements.jsonl and skip the points already in it");
}

// --replay and the flags that go with it.
void setup_replay_options(CLI::App& app, Options& o) {
  add_named(app, "--replay", o.replay_file, "ESTIMATE.json",
            "Run what one GPU does in a plan, at its shapes, instead of the sweeps: the JSON of "
            "`trainplan estimate --json` or `trainplan plan --json`; prints measured vs predicted "
            "per component and writes RUN_DIR/replay.json");
  app.add_option("--plan-index", o.plan_index,
                 "With --replay of `plan --json` output: which plan (0, the default, is the best)");
  add_named(app, "--plan-set", o.plan_settings, "KEY=VALUE",
            "With --replay: KEY=VALUE for a training option the JSON does not record (attention, "
            "lora_rank, lora_alpha, lora_dropout, lora_targets, quant, quant_block, fsdp_wrap, "
            "optimizer_impl) or one to change; repeatable");
  add_named(app, "--profile", o.profile_file, "PROFILE.json",
            "With --replay: the hardware profile the predictions use (as `trainplan estimate "
            "--profile`)");
  app.add_flag("--dry-run", o.dry_run,
               "With --replay: print the components and their predictions without running "
               "anything (needs no GPU)");
}

}  // namespace

void setup_options(CLI::App& app, Options& o) {
  app.description(
      "GPU microbenchmarks for trainplan: NCCL collectives, cuBLASLt GEMMs, attention, memory "
      "bandwidth, the AdamW step on GPU and CPU, elementwise kernels and launch overhead. Appends "
      "to RUN_DIR/measurements.jsonl as it measures.");
  add_named(app, "-o,--output", o.run_dir, "RUN_DIR",
            "Run directory (created if missing); required unless --replay --dry-run");
  setup_suite_flags(app, o);
  setup_sweep_parameters(app, o);
  setup_replay_options(app, o);
}

void finalize_options(const CLI::App& app, Options& o) {
  const bool any_suite = o.comm || o.gemm || o.attention || o.membw || o.cpu_adam || o.optimizer ||
                         o.elementwise || o.launch;
  if (!o.replay_file.empty()) {
    if (any_suite || o.quick || o.resume)
      throw std::invalid_argument(
          "--replay runs the plan's components; it does not combine with the sweeps (--quick, "
          "--comm, --gemm, --attention, --membw, --cpu-adam, --optimizer, --elementwise, "
          "--launch) or --resume");
    if (o.run_dir.empty() && !o.dry_run)
      throw std::invalid_argument("--replay needs -o RUN_DIR for replay.json (or --dry-run)");
    return;
  }
  for (const char* flag : {"--plan-index", "--plan-set", "--profile", "--dry-run"}) {
    if (app.count(flag) > 0) throw std::invalid_argument(std::string(flag) + " needs --replay");
  }
  if (o.run_dir.empty()) throw std::invalid_argument("-o RUN_DIR is required");
  if (!any_suite) {
    o.comm = o.gemm = o.attention = o.membw = o.optimizer = o.elementwise = o.launch = true;
    o.cpu_adam = !o.quick;
  }
  o.min_bytes = parse_size(o.min_bytes_text);
  o.max_bytes = app.count("--max-bytes") > 0 ? parse_size(o.max_bytes_text)
                                              : (o.quick ? kGiB : 4 * kGiB);
  // Validates the range once here so that a bad one fails before anything is measured.
  (void)sweep_sizes(o.min_bytes, o.max_bytes, o.step_factor);

  o.dtypes.clear();
  for (const auto& t : o.dtype_texts) o.dtypes.push_back(parse_flag<CollDtype>(t, "--dtype"));
  o.collectives.clear();
  for (const auto& t : o.collective_texts) {
    o.collectives.push_back(parse_flag<Collective>(t, "--collectives"));
  }
  if (o.collectives.empty()) {
    if (o.quick) {
      o.collectives = {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter};
    } else {
      o.collectives = all_values<Collective>();
    }
  }
  o.gemm_dtypes.clear();
  for (const auto& t : o.gemm_dtype_texts) {
    o.gemm_dtypes.push_back(parse_flag<GemmDtype>(t, "--gemm-dtype"));
  }
  if (o.gemm_dtypes.empty()) {
    if (o.quick) {
      o.gemm_dtypes = {GemmDtype::kBf16};
    } else {
      o.gemm_dtypes = all_values<GemmDtype>();
    }
  }
  o.optimizer_params.clear();
  for (const auto& t : o.optimizer_params_texts) o.optimizer_params.push_back(parse_count(t));
  if (o.optimizer_params.empty()) o.optimizer_params = optimizer_param_counts(o.quick);
  if (!o.model_shapes_text.empty()) o.model = parse_model_shapes(o.model_shapes_text);
  // Validates --tp against the model before any GPU work.
  (void)model_gemm_shapes(o.model, o.tp);
}

}  // namespace trainplan::calibrate
