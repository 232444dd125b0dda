// torchtitan job configs (TOML, `--job.config-file`; torchtitan up to its move to Python config
// registries, PR #2386). Keys and defaults: pytorch/torchtitan torchtitan/config/job_config.py at
// 238fa995 (2026-02-23, the last TOML release): training.local_batch_size 8, global_batch_size -1
// (local x data-parallel degree: no accumulation), seq_len 2048, mixed_precision_param bfloat16
// (FSDP2's MixedPrecisionPolicy; torch.autocast under DDP); parallelism.data_parallel_shard_degree
// -1 (every rank not used by the other dimensions: FSDP2), data_parallel_replicate_degree 1 (above
// it HSDP, or DDP with shard degree 1), fsdp_reshard_after_forward "default", context_parallel_
// rotate_method "allgather"; activation_checkpoint.mode "selective" with selective_ac_option "2"
// (every second block fully checkpointed); compile.enable false; training.enable_cpu_offload false.
// Older files spell a few keys their own way (e7c0cae, 2025-06: training.compile,
// training.batch_size, a [float8] section and model.converters = ["float8"]); both are read.
#include <algorithm>
#include <array>
#include <string>
#include <string_view>

#include "config_reader.hpp"

namespace trainplan::request::config {
namespace {

// torchtitan's model name and flavor (torchtitan/models/*/__init__.py) as catalogue names: the
// flavors whose shapes are a catalogue model's.
struct Flavor {
  std::string_view name, flavor, model;
};
constexpr std::array kFlavors{
    Flavor{"llama3", "8B", "llama-3.1-8b"},       Flavor{"llama3", "70B", "llama-3.1-70b"},
    Flavor{"llama3", "405B", "llama-3.1-405b"},   Flavor{"qwen3", "0.6B", "qwen3-0.6b"},
    Flavor{"qwen3", "8B", "qwen3-8b"},            Flavor{"qwen3", "32B", "qwen3-32b"},
    Flavor{"qwen3", "30B-A3B", "qwen3-30b-a3b"},  Flavor{"qwen3", "235B-A22B", "qwen3-235b-a22b"},
    Flavor{"deepseek_v3", "671B", "deepseek-v3"}, Flavor{"llama4", "17bx16e", "llama-4-scout"}};

constexpr std::array kSections = std::to_array<std::string_view>(
    {"job", "profiling", "metrics", "model", "optimizer", "lr_scheduler", "training", "parallelism", "checkpoint",
     "activation_checkpoint", "compile", "float8", "quantize", "mx", "validation", "comm", "memory_estimation",
     "fault_tolerance", "experimental", "debug", "dataloader"});

void read_model(const Json& m, Reader& r) {
  const auto name = r.string(m, "name", "model", "model");
  const auto flavor = r.string(m, "flavor", "model", "model");
  if (!name || !flavor) return;
  for (const Flavor& f : kFlavors)
    if (f.name == *name && f.flavor == *flavor) {
      r.set("model", std::string(f.model), "model.name, model.flavor", *name + " " + *flavor);
      return;
    }
  r.warn("model " + *name + " " + *flavor + ": no catalogue model has that flavor's shapes; the model given on "
         "the command line is answered");
}

// training.local_batch_size per rank; under pipeline parallelism split into micro-batches of
// parallelism.pipeline_parallel_microbatch_size (default 1), which trainplan's micro-batch is.
void read_batch(const Json& t, const Json& p, std::int64_t pp, Reader& r) {
  const char* key = t.contains("local_batch_size") ? "local_batch_size" : "batch_size";
  const std::int64_t local = r.integer(t, key, "training", "micro-batch", 1).value_or(8);
  const std::string local_from = t.contains(key) ? "training." + std::string(key)
                                                 : "(no training.local_batch_size: torchtitan's default, 8)";
  std::int64_t micro = local;
  std::int64_t accum = 1;
  if (pp > 1) {
    micro = r.integer(p, "pipeline_parallel_microbatch_size", "parallelism", "micro-batch", 1).value_or(1);
    if (local % micro != 0)
      r.fail("training." + std::string(key), Json(local),
             "is not a multiple of parallelism.pipeline_parallel_microbatch_size = " + std::to_string(micro));
    accum = local / micro;
    r.set("micro-batch", std::to_string(micro), "parallelism.pipeline_parallel_microbatch_size", std::to_string(micro));
  } else {
    r.set("micro-batch", std::to_string(micro), local_from, t.contains(key) ? std::to_string(local) : "");
  }
  const std::int64_t global = r.integer(t, "global_batch_size", "training", "global-batch", -1).value_or(-1);
  if (global > 0) {
    r.set("global-batch", std::to_string(global), "training.global_batch_size", std::to_string(global));
    r.unresolved("grad-accum", "training.global_batch_size", Json(global),
                 "global_batch_size / (local_batch_size x data-parallel degree): give --grad-accum, or the "
                 "global batch decides it");
  } else {
    r.set("grad-accum", std::to_string(accum),
          pp > 1 ? "training.local_batch_size / pipeline_parallel_microbatch_size (no global_batch_size)"
                 : "(no training.global_batch_size: local x data-parallel degree, no accumulation)",
          "");
  }
  if (const auto seq = r.integer(t, "seq_len", "training", "seq", 1))
    r.set("seq", std::to_string(*seq), "training.seq_len", t.at("seq_len"));
  else
    r.set("seq", "2048", "(no training.seq_len: torchtitan's default, 2048)", "");
}

void read_parallelism(const Json& p, std::int64_t pp_degree, Reader& r) {
  const std::int64_t shard = r.integer(p, "data_parallel_shard_degree", "parallelism", "strategy", -1).value_or(-1);
  const std::int64_t replicate =
      r.integer(p, "data_parallel_replicate_degree", "parallelism", "strategy", 1).value_or(1);
  const auto reshard = r.string(p, "fsdp_reshard_after_forward", "parallelism", "strategy").value_or("default");
  if (reshard != "default" && reshard != "always" && reshard != "never")
    r.fail("parallelism.fsdp_reshard_after_forward", p.at("fsdp_reshard_after_forward"),
           "must be default, always or never");
  // "default" reshards after forward unless pipeline parallelism runs (parallelize.py apply_fsdp:
  // reshard_after_forward = not pp_enabled).
  const bool pp = pp_degree > 1;
  const bool kept = reshard == "never" || (reshard == "default" && pp);
  std::string strategy = "fsdp-full";
  if (shard == 1)
    strategy = "ddp";
  else if (replicate > 1)
    strategy = "fsdp-hybrid";
  else if (kept)
    strategy = "fsdp-grad-op";
  r.set("strategy", strategy,
        "parallelism.data_parallel_shard_degree, data_parallel_replicate_degree, fsdp_reshard_after_forward",
        std::to_string(shard) + ", " + std::to_string(replicate) + ", " + reshard + (pp ? " (with PP)" : ""));
  // HSDP's shard dimension, flattened with context parallelism (parallel_dims.py "dp_shard_cp"); -1
  // takes the ranks the other degrees leave, which the cluster decides.
  const std::int64_t cp_degree = r.integer(p, "context_parallel_degree", "parallelism", "cp", 1).value_or(1);
  if (strategy == "fsdp-hybrid" && shard > 1)
    r.set("hybrid-shard", std::to_string(shard * cp_degree),
          cp_degree > 1 ? "parallelism.data_parallel_shard_degree x context_parallel_degree"
                 : "parallelism.data_parallel_shard_degree",
          p.at("data_parallel_shard_degree"));
  else if (strategy == "fsdp-hybrid")
    r.unresolved("hybrid-shard", "parallelism.data_parallel_shard_degree", Json(shard),
                 "the ranks data_parallel_replicate_degree and the other degrees leave (--hybrid-shard: GPUs / "
                 "(replicate x tp x pp x cp))");
  for (const auto& [key, option] : {std::pair{"tensor_parallel_degree", "tp"},
                                    std::pair{"pipeline_parallel_degree", "pp"},
                                    std::pair{"expert_parallel_degree", "expert-parallel"}})
    r.set_integer(p, key, "parallelism", option, 1);
  if (r.integer(p, "expert_tensor_parallel_degree", "parallelism", "", 1).value_or(1) > 1)
    r.warn("parallelism.expert_tensor_parallel_degree above 1: the experts' own tensor parallelism is not priced "
           "(experts are split over expert_parallel_degree only)");
  if (r.boolean(p, "enable_async_tensor_parallel", "parallelism", "").value_or(false))
    r.warn("parallelism.enable_async_tensor_parallel: priced as tensor parallelism without the async overlap");
  // torch's context_parallel: "allgather" gathers every rank's K/V, "alltoall" passes them round
  // the ranks step by step (a ring).
  const auto rotate = r.string(p, "context_parallel_rotate_method", "parallelism", "cp-comm").value_or("allgather");
  if (rotate != "allgather" && rotate != "alltoall")
    r.fail("parallelism.context_parallel_rotate_method", p.at("context_parallel_rotate_method"),
           "must be allgather or alltoall");
  const bool cp = r.set_integer(p, "context_parallel_degree", "parallelism", "cp", 1).value_or(1) > 1;
  if (p.contains("context_parallel_rotate_method"))
    r.set("cp-comm", rotate == "alltoall" ? "ring" : "all-gather", "parallelism.context_parallel_rotate_method",
          rotate);
  else if (cp)
    r.set("cp-comm", "all-gather", "(no context_parallel_rotate_method: torchtitan's allgather)", "");
}

void read_checkpointing(const Json& a, Reader& r) {
  const std::string mode = r.string(a, "mode", "activation_checkpoint", "checkpointing").value_or("selective");
  const std::string option =
      r.string(a, "selective_ac_option", "activation_checkpoint", "checkpointing").value_or("2");
  const std::string from = a.contains("mode") ? "activation_checkpoint.mode" : "(no activation_checkpoint.mode: "
                                                                               "torchtitan's selective, every 2nd block)";
  const std::string option_from =
      a.contains("selective_ac_option") ? "activation_checkpoint.selective_ac_option"
      : a.contains("mode")              ? "(no activation_checkpoint.selective_ac_option: torchtitan's \"2\")"
                                        : "(no activation_checkpoint: torchtitan's mode selective, selective_ac_option \"2\")";
  if (mode == "none" || mode == "full") {
    r.set("checkpointing", mode, from, mode);
  } else if (mode == "selective" && option == "op") {
    r.set("checkpointing", "selective-op", option_from, option);
  } else if (mode == "selective") {
    // _apply_layer_sac: int(selective_ac_option); 0 or 1 wraps every block, N the N-th, 2N-th, ...
    // (anything but "op" or digits is torchtitan's ValueError).
    const bool digits = !option.empty() && option.size() <= 4 &&
                        std::all_of(option.begin(), option.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
    if (!digits)
      r.fail("activation_checkpoint.selective_ac_option", Json(option),
             "must be \"op\" or a whole number N of blocks (one in N fully checkpointed), at most 1024");
    const int every = std::stoi(option);
    if (every > 1024)
      r.fail("activation_checkpoint.selective_ac_option", Json(option), "must be at most 1024 blocks");
    const std::string raw = a.contains("selective_ac_option") ? option : "";  // a default says itself
    r.set("checkpointing", "full", option_from, raw);
    if (every > 1) r.set("checkpoint-every", std::to_string(every), option_from, raw);
  } else if (mode == "memory_budget") {
    r.unmodelled("checkpointing", "activation_checkpoint.mode", Json(mode),
                 "the compiler's memory-budget partitioner is not modelled", "selective-op");
  } else {
    r.fail("activation_checkpoint.mode", Json(mode), "must be none, selective, full or memory_budget");
  }
}

// Float8 linears: model.converters names the converter ("float8", later "quantize.linear.float8");
// its options live in [float8] or [quantize.linear.float8]. No recipe name: tensorwise scaling.
void read_quantization(const Json& j, const Json& converters, Reader& r) {
  bool float8 = false;
  for (const Json& c : converters) {
    if (!c.is_string()) r.fail("model.converters", converters, "must be a list of converter names");
    const std::string name = c.get<std::string>();
    if (name == "float8" || name == "quantize.linear.float8") float8 = true;
    if (name == "mx" || name == "quantize.linear.mx")
      r.unresolved("fp8", "model.converters", c, "torchao's MX linears are not priced");
  }
  if (!float8) return;
  const Json q = section(section(section(j, "quantize"), "linear"), "float8");
  const Json f = q.empty() ? section(j, "float8") : q;
  const std::string at = q.empty() ? "float8" : "quantize.linear.float8";
  const std::string recipe = r.string(f, "recipe_name", at, "fp8").value_or("tensorwise");
  if (recipe != "tensorwise" && recipe != "rowwise" && recipe != "rowwise_with_gw_hp")
    r.fail(at + ".recipe_name", f.at("recipe_name"), "must be tensorwise, rowwise or rowwise_with_gw_hp");
  r.set("fp8", recipe == "tensorwise" ? "torchao-tensorwise" : recipe == "rowwise" ? "torchao-rowwise" : "torchao-rowwise-gw-hp",
        f.contains("recipe_name") ? at + ".recipe_name" : "model.converters (no recipe_name: tensorwise)", recipe);
  if (const auto gather = r.boolean(f, "enable_fsdp_float8_all_gather", at, "fp8-param-gather"))
    r.set("fp8-param-gather", *gather ? "true" : "false", at + ".enable_fsdp_float8_all_gather", *gather ? "true" : "false");
}

void read_compile(const Json& j, Reader& r) {
  const Json c = section(j, "compile");
  if (c.contains("enable")) {
    const bool on = r.boolean(c, "enable", "compile", "compile").value_or(false);
    bool model = true;
    if (c.contains("components") && c.at("components").is_array()) {
      model = false;
      for (const Json& x : c.at("components")) model = model || x == "model";
    }
    if (on && !model) r.warn("compile.components without \"model\": only the loss is compiled; answered eager");
    r.set("compile", on && model ? "true" : "false", "compile.enable", on ? "true" : "false");
  } else if (const auto old = r.boolean(section(j, "training"), "compile", "training", "compile")) {
    r.set("compile", *old ? "true" : "false", "training.compile", *old ? "true" : "false");
  } else {
    r.set("compile", "false", "(no compile.enable: torchtitan's default, off)", "");
  }
}

}  // namespace

void read_torchtitan(const Json& j, Reader& r) {
  r.set("library", "torchtitan", "(a torchtitan job config)", "");
  r.set("framework", "pytorch", "(torchtitan)", "");
  r.set("method", "full", "(torchtitan pretrains every weight)", "");
  // The allocator is the launch's, not the job config's: run_train.sh sets expandable segments.
  r.unresolved("expandable-segments", "(the launch)", Json("run_train.sh"),
               "torchtitan's run_train.sh sets PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; a launch with "
               "torchrun itself does not (--expandable-segments off)");
  for (const auto& [k, v] : j.items())
    if (std::find(kSections.begin(), kSections.end(), k) == kSections.end())
      r.warn("section [" + k + "] is not a torchtitan job config section; ignored");
  const Json m = section(j, "model");
  read_model(m, r);
  const Json t = section(j, "training");
  const Json p = section(j, "parallelism");
  const std::int64_t pp = r.integer(p, "pipeline_parallel_degree", "parallelism", "pp", 1).value_or(1);
  read_batch(t, p, pp, r);
  const std::string param = r.string(t, "mixed_precision_param", "training", "precision").value_or("bfloat16");
  if (param != "bfloat16" && param != "float32")
    r.fail("training.mixed_precision_param", t.at("mixed_precision_param"), "must be bfloat16 or float32");
  if (t.contains("mixed_precision_param"))
    r.set("precision", param == "float32" ? "fp32" : "bf16-mixed", "training.mixed_precision_param", param);
  else
    r.set("precision", "bf16-mixed", "(no training.mixed_precision_param: torchtitan's bfloat16)", "");
  read_parallelism(p, pp, r);
  // training.enable_cpu_offload: FSDP2's CPUOffloadPolicy, parameters, gradients and optimizer
  // states on the host.
  if (const auto off = r.boolean(t, "enable_cpu_offload", "training", "offload"))
    r.set("offload", *off ? "optimizer+params" : "none", "training.enable_cpu_offload", *off ? "true" : "false");
  else
    r.set("offload", "none", "(no training.enable_cpu_offload: torchtitan's default, off)", "");
  read_checkpointing(section(j, "activation_checkpoint"), r);
  read_compile(j, r);
  read_quantization(j, m.contains("converters") ? m.at("converters") : Json::array(), r);
  // Its SDPA module orders the backends itself (models/attention.py): FLASH first below compute
  // capability 10.0 in mid-2025 files (e7c0cae), cuDNN first by 238fa995 (PyTorch's own SDPA choice
  // is priced for that: model/sdpa.hpp).
  const bool mid_2025 = t.contains("compile") || t.contains("batch_size") || j.contains("float8");
  r.set("attention", mid_2025 ? "flash" : "sdpa",
        mid_2025 ? "(torchtitan e7c0cae's SDPA: FLASH first below compute capability 10.0)"
                 : "(torchtitan's SDPA, cuDNN first)",
        "");
  const Json o = section(j, "optimizer");
  const std::string opt = r.string(o, "name", "optimizer", "optimizer").value_or("AdamW");
  if (opt != "AdamW" && opt != "Adam")
    r.unresolved("optimizer", "optimizer.name", Json(opt), "only AdamW and Adam are read");
  else
    r.set("optimizer", "adamw", o.contains("name") ? "optimizer.name" : "(no optimizer.name: AdamW)",
          o.contains("name") ? opt : "");
  const std::string impl = r.string(o, "implementation", "optimizer", "optimizer-impl").value_or("fused");
  if (impl != "fused" && impl != "foreach" && impl != "for-loop")
    r.fail("optimizer.implementation", o.at("implementation"), "must be fused, foreach or for-loop");
  r.set("optimizer-impl", impl,
        o.contains("implementation") ? "optimizer.implementation" : "(no optimizer.implementation: fused)",
        o.contains("implementation") ? impl : "");
}

}  // namespace trainplan::request::config
