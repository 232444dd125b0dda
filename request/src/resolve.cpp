// resolve(): a Request against the catalogue, the GPU's defaults and every check that involves more
// than one option (request.hpp).
#include <algorithm>

#include <fmt/format.h>

#include "trainplan/core/error.hpp"
#include "trainplan/request/profile_json.hpp"
#include "trainplan/request/request.hpp"
#include "trainplan/model/fp8.hpp"
#include "trainplan/model/library.hpp"
#include "trainplan/model/lora.hpp"
#include "trainplan/model/partial.hpp"
#include "trainplan/model/sdpa.hpp"
#include "trainplan/planner/compute.hpp"
#include "trainplan/planner/memory.hpp"
#include "unfrozen.hpp"

namespace trainplan::request {
namespace {

void check_qlora_precision(const Request& r, const model::Training& t) {
  if (t.method == Method::qlora && t.precision == Precision::fp32)
    throw InputError(fmt::format("{} qlora computes in 16-bit: {} fp32 cannot run it (use bf16 or fp16)",
                                 r.label("method"), r.label("precision")));
}

// Options set where they have no effect are put back to their defaults, with a warning for the
// command line (scripts pass every flag: a valid question is answered); an option of another
// command from the command line is refused.
std::vector<std::string> check_relevance(Request& r, unsigned cmd, Irrelevant irrelevant) {
  if (irrelevant == Irrelevant::warn && r.has("precision")) check_qlora_precision(r, r.training);
  std::vector<std::string> warnings;
  const Request defaults;
  for (const Option& o : options()) {
    if (!r.has(o.name)) continue;
    if (!o.in(cmd) && !o.in(command::from_file)) {
      const std::string& source = r.given.find(o.name)->second;
      if (source.starts_with("--") || source.starts_with("the "))
        throw InputError(r.label(o.name) + " does not apply to this command");
      r.file_notes.push_back(source + ": not used by this command");
      r.given.erase(o.name);
      continue;
    }
    if (!o.applies || o.applies(r, cmd)) continue;
    if (irrelevant == Irrelevant::warn)
      warnings.push_back(fmt::format("{} {} ignored: it applies {}", r.label(o.name), o.text(r), o.applies_text));
    o.parse(r, o.text(defaults));
    r.given.erase(o.name);
  }
  return warnings;
}

void check_shape(const Request& r, const hardware::Cluster& c) {
  if (r.gpus && *r.gpus != c.world())
    throw InputError(fmt::format("{} starts {} processes but the cluster '{}' has {} GPUs", r.label("gpus"),
                                 *r.gpus, r.cluster_spec, c.world()));
  if (r.nodes && *r.nodes != c.nodes)
    throw InputError(fmt::format("{} says {} nodes but the cluster '{}' has {}", r.label("nodes"), *r.nodes,
                                 r.cluster_spec, c.nodes));
}

// The library and its engine: either names the other when alone (--framework pytorch means the
// Hugging Face Trainer, as before libraries were asked), and the library's defaults fill what no
// input gave (model/library.hpp).
void apply_library(Request& r) {
  model::Training& t = r.training;
  if (!r.has("library") && r.has("framework")) t.library = model::library_of(t.framework);
  const model::LibraryTraits& lib = model::library_traits(t.library);
  if (!r.has("framework")) t.framework = lib.engine;
  if (!r.has("tf32")) t.tf32 = lib.tf32;
  if (!r.has("frozen-base-fp32")) t.frozen_base_fp32 = lib.frozen_base_fp32;
  if (!r.has("fsdp-version")) t.fsdp_version = lib.fsdp_version;
  if (!r.has("expandable-segments")) t.expandable_segments = model::expandable_segments_by_default(t);
  if (!r.has("chunked-loss")) t.chunked_loss = lib.output_chunks > 0;
  if (r.fp8_library_default && !r.has("fp8")) t.fp8 = model::default_fp8_recipe(t.library);
  t.qlora_stack = lib.qlora_stack;
}

// An FP8 recipe on a GPU that cannot run it is refused by name; one that changes nothing (QLoRA's
// 4-bit layers are not nn.Linear, so neither library converts them) is a warning.
void check_fp8(const Request& r, Resolved& out, model::Training& t) {
  if (t.fp8 == Fp8Recipe::none) return;
  const hardware::GpuSpec& gpu = out.cluster.cluster.gpu;
  const std::string_view recipe = to_string(t.fp8);
  const std::string given = r.has("fp8") ? r.label("fp8") : r.label("precision");
  if (!gpu.capabilities.fp8 || gpu.peak.fp8 <= 0.0)
    throw InputError(fmt::format("{} {}: {} has no FP8 tensor cores (FP8 training needs Ada, Hopper, Blackwell, "
                                 "MI300 or newer)",
                                 given, recipe, gpu.name));
  const int sm = planner::cuda_sm(gpu);
  if (t.fp8 == Fp8Recipe::te_mxfp8) {
    // TE's MXFP8BlockScaling: SM 10.x only (refused on Hopper and on SM 12.x, quantization.py
    // L162-168); AMD's CDNA4 (MI355X) has MX formats on its matrix cores.
    const bool mx = (sm >= 100 && sm < 120) || gpu.architecture == "CDNA4";
    if (!mx)
      throw InputError(fmt::format("{} {}: MXFP8 needs a Blackwell data-centre GPU (SM 10.x) or CDNA4; {} is {} "
                                   "(te-delayed, te-current or te-blockwise run there)",
                                   given, recipe, gpu.name, gpu.architecture));
  }
  if (t.fp8 == Fp8Recipe::te_blockwise && !(sm >= 90))
    throw InputError(fmt::format("{} {}: Transformer Engine's Float8BlockScaling needs Hopper or newer (SM 9.0, "
                                 "CUDA 12.9); {} is {}",
                                 given, recipe, gpu.name, gpu.architecture));
  if (t.method == Method::qlora) {
    out.warnings.push_back(fmt::format("{} {} with --method qlora: the 4-bit base layers are not nn.Linear and stay "
                                       "4-bit; answered without FP8",
                                       given, recipe));
    t.fp8 = Fp8Recipe::none;
    return;
  }
  if (!t.fp8_param_gather) return;
  const bool torchao = !model::fp8_traits(t.fp8).transformer_engine;
  if (torchao && t.fp8 != Fp8Recipe::torchao_tensorwise)
    throw InputError(fmt::format("{} needs tensorwise scaling under torchao (float8 config.py: the FP8 all-gather "
                                 "casts with one scale per tensor); {} {} scales per row",
                                 r.label("fp8-param-gather"), given, recipe));
  // A strategy left to fit and plan is searched; where it gathers nothing the option does nothing.
  if (r.has("strategy") && t.method == Method::full && !model::fp8_gathers(t))
    throw InputError(fmt::format("{} needs gathered parameters: the distributed optimizer (zero1 under Megatron) "
                                 "or sharded parameters (zero3, fsdp-full, fsdp-hybrid), not {} {}",
                                 r.label("fp8-param-gather"), r.label("strategy"), to_string(t.strategy)));
}

void library_notes(const Request& r, Resolved& out, model::Training& t) {
  const model::LibraryTraits& lib = model::library_traits(t.library);
  // torchtune's Gemma 2 attention computes its scores itself (matmul, soft-cap, fp32 softmax, matmul:
  // torchtune/models/gemma2/_attention.py Gemma2Attention.forward), an eager attention.
  if (lib.sdpa_only && out.model.arch.attention_softcap > 0.0) {
    if (!r.has("attention") || t.attention != Attention::eager)
      out.notes.push_back(fmt::format("attention eager: {} computes the soft-capped attention of model '{}' itself",
                                      lib.name, out.model.arch.name));
    t.attention = Attention::eager;
  } else if (lib.sdpa_only && t.attention != Attention::sdpa) {
    if (r.has("attention"))
      out.warnings.push_back(fmt::format("{} {}: {} always calls torch's SDPA; answered with sdpa",
                                         r.label("attention"), to_string(t.attention), lib.name));
    else
      out.notes.push_back(fmt::format("attention sdpa: {} always calls torch's SDPA", lib.name));
    t.attention = Attention::sdpa;
  }
  if (!lib.unmodelled.empty() && (r.has("library") || r.has("framework")))
    out.notes.push_back(fmt::format("library {}: {}", lib.name, lib.unmodelled));
  if (t.optimizer == Optimizer::galore_adamw)
    out.notes.push_back("optimizer galore-adamw: the SVD that refreshes each projection every update_proj_gap "
                        "steps (200 by default) and the projections' small products are not priced");
  // Liger patches by model type; one it has no kernels for runs as it was (Liger logs and goes on).
  const model::Architecture& arch = out.model.arch;
  if (t.liger && !model::liger_kernels(arch).supported) {
    out.warnings.push_back(fmt::format("{}: Liger has no kernels for model type '{}' (model '{}'); answered without them",
                                       r.label("liger"), arch.family, arch.name));
    t.liger = false;
  } else if (t.liger && arch.is_moe()) {
    out.notes.push_back("liger: the expert MLPs are priced as transformers' experts (Liger's expert kernels are not "
                        "modelled); its norms, rotary, dense MLPs and loss are");
  }
}

// The GPU's own defaults for what was left out, and a refusal of what it cannot run.
void apply_gpu(const Request& r, Resolved& out, model::Training& t) {
  const hardware::GpuSpec& gpu = out.cluster.cluster.gpu;
  if (!r.has("precision")) t.precision = hardware::default_precision(gpu);
  if (!r.has("attention")) t.attention = hardware::default_attention(gpu);
  library_notes(r, out, t);
  hardware::require_supported(gpu, t.precision, t.attention);
  check_fp8(r, out, t);
  if (hardware::emulated_bf16(gpu, t.precision))
    out.warnings.push_back(fmt::format(
        "{} {}: {} has no bf16 tensor cores; PyTorch runs bf16 there emulated, its matmuls on the CUDA "
        "cores, slower than fp32 and far slower than fp16-mixed on the tensor cores (answered at that "
        "rate: docs/formulas.md, \"Emulated bf16\")",
        r.label("precision"), to_string(t.precision), gpu.name));
  if (!r.has("precision") && !gpu.capabilities.bf16)
    out.notes.push_back(fmt::format("precision {}: {} has no bf16 tensor cores ({} to choose)",
                                    to_string(t.precision), gpu.name, r.label("precision")));
  if (!r.has("attention") && t.attention != Attention::flash && !model::library_traits(t.library).sdpa_only)
    out.notes.push_back(fmt::format("attention {}: {} cannot run FlashAttention-2 ({} to choose)",
                                    to_string(t.attention), gpu.name, r.label("attention")));
}

// An attention kernel of Ampere's instruction set on a GPU whose native kernels go further: said,
// with the rate it is priced at (planner::warp_mma_attention_share).
void attention_kernel_note(Resolved& out, const model::Training& t) {
  model::Training probe = t;
  probe.cuda_sm = planner::cuda_sm(out.cluster.cluster.gpu);
  const model::AttentionRun run = model::attention_run(out.model.arch, probe, probe.cuda_sm);
  const double share = planner::warp_mma_attention_share(run, t.framework, probe.cuda_sm, planner::TimeConventions{});
  if (share >= 1.0) return;
  const std::string kernel = run.gpu_sdpa ? fmt::format("SDPA's {} kernel ({})", to_string(run.sdpa.kernel), run.sdpa.reason)
                             : run.runs == Attention::triton ? std::string("the Triton FlashAttention")
                                                             : std::string("the flash-attn 2.x kernels");
  const char* native = planner::datacenter_blackwell(probe.cuda_sm) ? "cuDNN, FlashAttention-4" : "cuDNN, FlashAttention-3";
  out.notes.push_back(fmt::format("attention {}: {} use Ampere's warp-level instructions; on {} priced at {:.2f} of "
                                  "a native kernel's rate ({}: docs/formulas.md, \"Attention\")",
                                  to_string(t.attention), kernel, out.cluster.cluster.gpu.name, share, native));
}

void check_training(const Request& r, Resolved& out, model::Training& t, unsigned cmd) {
  const model::Architecture& a = out.model.arch;
  if (!r.has("seq")) t.seq = default_seq(a);
  check_qlora_precision(r, t);
  t.lora.targets = model::split_targets(r.lora_targets);
  if (t.partial.active && !r.trainable_patterns.empty())
    t.partial = resolve_trainable_patterns(a, t, r.trainable_patterns,
                                           r.label("trainable").substr(0, r.label("trainable").find(" = ")), out.warnings);
  t.partial = model::resolve_trained_subset(a, t.partial, r.label("trainable"));
  if (t.method != Method::full) (void)model::lora_parameters(a, t.lora);  // checks the targets
  if (t.attention == Attention::sdpa && t.framework != Framework::megatron) {
    const model::SdpaChoice sdpa = model::sdpa_choice(a, t);
    if (sdpa.kernel == model::SdpaKernel::unsupported) out.notes.push_back("attention sdpa: " + sdpa.reason);
  }
  attention_kernel_note(out, t);
  if (t.seq > a.max_seq && a.position != model::PositionKind::learned)
    out.warnings.push_back(fmt::format("{} {} is beyond the {} positions model '{}' was trained with",
                                       r.label("seq"), t.seq, a.max_seq, a.name));
  // Degrees the user gave (plan searches the others) must fit the cluster.
  const hardware::Cluster& c = out.cluster.cluster;
  if (c.world() == 1 && r.has("strategy") && t.strategy != Strategy::single)
    out.warnings.push_back(fmt::format("{} {} on one GPU: nothing to shard or replicate, answered as a single GPU",
                                       r.label("strategy"), to_string(t.strategy)));
  const bool searched = cmd == command::plan;
  const int tp = searched && !r.has("tp") ? 1 : t.tp;
  const int pp = searched && !r.has("pp") ? 1 : t.pp;
  const std::int64_t replica = static_cast<std::int64_t>(tp) * pp;
  if (replica > c.world() || c.world() % replica != 0)
    throw InputError(fmt::format("{} {} x {} {} = {} GPUs per model replica does not divide the cluster's {} GPUs",
                                 r.label("tp"), tp, r.label("pp"), pp, replica, c.world()));
  if (t.method != Method::full && t.lora.rank > a.hidden)
    out.warnings.push_back(fmt::format("{} {} is larger than the hidden size {} of model '{}': each adapter is "
                                       "larger than the layer it adapts",
                                       r.label("lora-rank"), t.lora.rank, a.hidden, a.name));
  if (t.tp_comm_overlap && t.tp > 1 && !t.sequence_parallel)
    throw InputError(fmt::format("{} needs {}: Megatron-Core overlaps the all-gather and reduce-scatter of "
                                 "sequence parallelism, not all-reduces",
                                 r.label("tp-comm-overlap"), r.label("sequence-parallel")));
  if (t.moe_pad_to_capacity && t.moe_capacity_factor <= 0.0)
    throw InputError(fmt::format("{} needs {}: Megatron-Core pads each expert's input to a capacity the factor sets",
                                 r.label("moe-pad-to-capacity"), r.label("moe-capacity-factor")));
  if ((t.moe_capacity_factor > 0.0 || t.moe_pad_to_capacity) && (!a.is_moe() || a.experts_dense)) {
    const std::string given = t.moe_capacity_factor > 0.0
                                  ? fmt::format("{} {}", r.label("moe-capacity-factor"), t.moe_capacity_factor)
                                  : r.label("moe-pad-to-capacity");
    out.warnings.push_back(fmt::format("{} ignored: model '{}' {}", given, a.name,
                                       a.is_moe() ? "runs every token through every expert" : "has no experts"));
    t.moe_capacity_factor = 0.0;
    t.moe_pad_to_capacity = false;
  }
  // The checks the planner makes of any configuration, in the words of this request.
  model::Training probe = t;
  if (cmd == command::plan) probe.tp = probe.pp = probe.pp_virtual = 1;
  if (cmd == command::plan && !r.has("cp")) probe.cp = 1;
  if (cmd == command::plan && !r.has("expert-parallel")) probe.ep = 1;
  planner::validate_training(a, probe);
}

std::optional<std::int64_t> global_batch(const Request& r, std::int64_t seq) {
  if (r.global_batch && r.global_batch_tokens)
    throw InputError(fmt::format("give {} (sequences) or {} (tokens), not both", r.label("global-batch"),
                                 r.label("global-batch-tokens")));
  if (r.global_batch) return r.global_batch;
  if (r.global_batch_tokens) {
    if (*r.global_batch_tokens % seq != 0)
      throw InputError(fmt::format("{} {} is not a multiple of the sequence length {}",
                                   r.label("global-batch-tokens"), *r.global_batch_tokens, seq));
    return *r.global_batch_tokens / seq;
  }
  return std::nullopt;
}

void fill_request(const Request& r, Resolved& out, const model::Training& t) {
  planner::SearchRequest& q = out.search;
  q.base = t;
  if (r.has("strategy")) q.strategy = t.strategy;
  if (r.has("checkpointing")) q.checkpointing = t.checkpointing;
  // Megatron-Core's CPU offloading runs without recomputation only (TransformerConfig).
  else if (t.offload_activation_layers > 0) q.checkpointing = Checkpointing::none;
  if (r.has("offload")) q.offload = t.offload;
  if (r.has("expert-parallel")) q.expert_parallel = t.ep;
  if (r.has("tp")) q.tp = t.tp;
  if (r.has("cp")) q.cp = t.cp;
  if (r.has("pp")) q.pp = t.pp;
  if (r.has("pp-virtual")) q.pp_virtual = t.pp_virtual;
  if (t.sequence_parallel) q.sequence_parallel = true;
  if (r.has("micro-batch")) q.micro_batch = t.micro_batch;
  if (r.has("grad-accum")) q.grad_accum = t.grad_accum;
  q.global_batch = out.global_batch;
  q.tp_across_nodes = r.tp_across_nodes;
  q.margin = r.margin;
  q.top = static_cast<std::size_t>(r.top);
  q.options.zero_plus_plus = r.zero_plus_plus;
}

void resolve_files(const Request& r, Resolved& out) {
  if (r.has("output") && r.output.empty())
    throw InputError(fmt::format("{}: the output path is empty", r.label("output")));
  if (!r.profile.empty()) {
    out.profile = read_profile_option(r.profile, r.label("profile"));
    // A profile measured on other GPUs would price these with another machine's kernels.
    const hardware::GpuSpec& gpu = out.cluster.cluster.gpu;
    if (!hardware::profile_applies(*out.profile, gpu))
      throw InputError(fmt::format("{} '{}' was measured on {}, but the cluster has {} GPUs: calibrate on "
                                   "these GPUs (trainplan-calibrate) or leave the profile out",
                                   r.label("profile"), r.profile,
                                   out.profile->gpu.empty() ? out.profile->provenance.gpu.value_or("?")
                                                            : out.profile->gpu,
                                   gpu.name));
  }
  if (!r.tokens.empty()) {
    out.tokens = parse_count(r.tokens, r.label("tokens"));
    // More than 1e16 tokens is beyond any corpus (the largest public runs are ~1e13-1e14).
    if (*out.tokens > 1e16)
      throw InputError(fmt::format("{} {}: more than 1e16 tokens is not a training run", r.label("tokens"), r.tokens));
  }
}

}  // namespace

std::string source_file(const std::string& source) {
  const std::size_t colon = source.find(": ");
  return colon == std::string::npos ? std::string() : source.substr(0, colon);
}

void check_options(const Request& r, unsigned cmd) {
  Request copy = r;
  try {
    (void)check_relevance(copy, cmd, Irrelevant::warn);
  } catch (const FieldError& e) {
    throw InputError(e.render([&](std::string_view field) { return r.label(field); }));
  }
}

// A config file may say how many processes it starts: the cluster has to agree, or a bare GPU
// name takes that shape.
std::string cluster_spec(const Request& r) {
  if (!r.gpus && !r.nodes) return r.cluster_spec;
  const std::int64_t nodes = r.nodes.value_or(1);
  const std::int64_t gpus = r.gpus.value_or(nodes);
  if (gpus % nodes != 0)
    throw InputError(fmt::format("{} = {} processes do not split evenly over {} = {} nodes", r.label("gpus"),
                                 gpus, r.label("nodes"), nodes));
  const bool bare = r.cluster_spec.find('x') == std::string::npos && !r.cluster_spec.ends_with(".json");
  if (bare) return fmt::format("{}x{}x{}", nodes, gpus / nodes, r.cluster_spec);
  return r.cluster_spec;
}

Resolved resolve(const Catalog& catalog, const Request& r, unsigned cmd, Irrelevant irrelevant) {
  if (r.model.empty()) throw InputError("no model given");
  if (r.cluster_spec.empty()) throw InputError("no cluster given");
  try {
    return resolve_with(catalog.resolve_model(r.model), catalog.resolve_cluster(cluster_spec(r), r.inter_node), r,
                        cmd, irrelevant);
  } catch (const FieldError& e) {
    throw InputError(e.render([&](std::string_view field) { return r.label(field); }));
  }
}

namespace {

// A global batch and an accumulation without a micro-batch: the micro-batch is what DeepSpeed
// derives (runtime/config.py _set_batch_related_parameters: train_batch_size / (gradient
// accumulation x data-parallel size)), where it divides.
void derive_micro_batch(Request& r, const hardware::Cluster& c) {
  if (!r.has("global-batch") || !r.has("grad-accum") || r.has("micro-batch") || !r.global_batch) return;
  const model::Training& t = r.training;
  const std::int64_t replica = static_cast<std::int64_t>(t.tp) * t.pp * t.cp;
  if (replica < 1 || c.world() % replica != 0) return;
  const std::int64_t per_micro = t.grad_accum * (c.world() / replica);
  if (per_micro < 1 || *r.global_batch % per_micro != 0) return;
  r.training.micro_batch = *r.global_batch / per_micro;
  r.given["micro-batch"] = fmt::format("{} / ({} x data-parallel size {})", r.label("global-batch"),
                                       r.label("grad-accum"), c.world() / replica);
}

}  // namespace

// A file's model loaded in its checkpoint's own dtype (from_pretrained's dtype "auto"): a 16-bit
// checkpoint trains its own 16-bit weights, an fp32 one under the file's autocast; a config that
// declares no dtype leaves the precision to its default, said in a note.
void apply_checkpoint_precision(Request& r, const model::Architecture& a, unsigned cmd) {
  if (!r.precision_from_checkpoint || r.has("precision")) return;
  const CheckpointPrecision& p = *r.precision_from_checkpoint;
  const auto set = [&](const std::string& value, const char* declared) {
    set_option(r, "precision", value, p.source + " (the checkpoint's " + declared + ", its config.json's dtype)");
  };
  switch (a.checkpoint_dtype) {
    case model::CheckpointDtype::bf16: return set("bf16-true", "bfloat16");
    case model::CheckpointDtype::fp16: return set("fp16-true", "float16");
    case model::CheckpointDtype::fp32: return set(p.autocast.empty() ? "fp32" : p.autocast + "-mixed", "float32");
    case model::CheckpointDtype::unknown: break;
  }
  const Option* o = find_option("precision");
  r.file_notes.push_back(p.open_text + "; nothing else gives precision: " + (o ? when_omitted(*o, cmd) : ""));
}

Resolved resolve_with(const ResolvedModel& model, const ResolvedCluster& cluster, const Request& request,
                      unsigned cmd, Irrelevant irrelevant) {
  Request r = request;
  try {
    apply_checkpoint_precision(r, model.arch, cmd);
    apply_library(r);
    const std::vector<std::string> ignored = check_relevance(r, cmd, irrelevant);
    // A file's gradient accumulation derived from its global batch and micro-batch no longer holds
    // when another input changes the micro-batch: the global batch decides it again.
    const std::string accum_file = source_file(r.label("grad-accum"));
    if (r.has("global-batch") && r.has("grad-accum") && r.has("micro-batch") && !accum_file.empty() &&
        accum_file != source_file(r.label("micro-batch"))) {
      r.file_notes.push_back(r.label("grad-accum") + ": recomputed from the global batch, since " +
                             r.label("micro-batch") + " sets the micro-batch");
      r.given.erase("grad-accum");
    }
    derive_micro_batch(r, cluster.cluster);
    Resolved out;
    out.warnings = ignored;
    out.force_emit = r.force;
    out.model = model;
    // Multi-token prediction modules are part of the model Megatron trains (a warning says the
    // option changes nothing elsewhere).
    if (r.training.framework == Framework::megatron) out.model.arch.mtp_layers = r.mtp_layers;
    out.cluster = cluster;
    check_shape(r, out.cluster.cluster);
    if (r.host_memory_gib) out.cluster.cluster.host_memory = gib(*r.host_memory_gib);
    out.notes = r.file_notes;
    out.notes.insert(out.notes.end(), r.overridden.begin(), r.overridden.end());
    if (!out.model.note.empty()) out.notes.push_back(out.model.note);
    if (const model::Architecture built = model::as_built_by(out.model.arch, r.training.library);
        built.tie_embeddings != out.model.arch.tie_embeddings) {
      out.model.arch = built;
      out.notes.push_back(fmt::format("library {}: the output layer is a parameter of its own, a copy of the tied "
                                      "input embedding",
                                      model::library_traits(r.training.library).name));
    }
    if (const model::VersionedTraits* v = model::versioned_traits(r.training))
      out.notes.push_back(fmt::format("library {} {}: its traits up to {} ({})",
                                      model::library_traits(r.training.library).name,
                                      model::package_release_text(r.training.library_version),
                                      model::package_release_text(v->until), v->source));
    out.notes.insert(out.notes.end(), out.cluster.notes.begin(), out.cluster.notes.end());
    out.cluster.notes.clear();
    model::Training t = r.training;
    apply_gpu(r, out, t);
    check_training(r, out, t, cmd);
    out.global_batch = global_batch(r, t.seq);
    resolve_files(r, out);
    fill_request(r, out, t);
    for (const auto& [name, source] : r.given)
      if (const Option* o = find_option(name)) out.provenance.push_back({name, o->text(r), source});
    // Grouped by where the values came from (a file's keys together), each group by option.
    std::stable_sort(out.provenance.begin(), out.provenance.end(), [](const Provenance& x, const Provenance& y) {
      return source_file(x.source) < source_file(y.source);
    });
    for (std::string& w : out.warnings) w = without_repeated_values(std::move(w));
    for (std::string& n : out.notes) n = without_repeated_values(std::move(n));
    return out;
  } catch (const FieldError& e) {
    throw InputError(e.render([&](std::string_view field) { return r.label(field); }));
  }
}

namespace {

// The gradient accumulation the global batch asks for at this layout.
model::Training with_global_batch(const Resolved& r, model::Training t) {
  if (!r.global_batch) return t;
  const planner::Layout l = planner::make_layout(r.model.arch, t, r.cluster.cluster);
  t.grad_accum = planner::grad_accum_for(*r.global_batch, t.micro_batch, l.dp, r.search.grad_accum);
  return t;
}

model::Training recommended(const Resolved& r) {
  model::Training t = r.search.base;
  if (r.search.strategy && r.search.checkpointing && r.search.offload) return t;
  // The same pick as `trainplan fit` for this request: with the micro-batch given, the fastest at
  // it; without, the fastest at each candidate's largest micro-batch (so estimate, explain and the
  // GUI start from fit's recommendation, evaluated at the micro-batch the request has).
  const planner::SearchRequest& req = r.search;
  const model::ParameterCounts n = model::count_parameters(r.model.arch);
  const planner::FitResult f =
      planner::fit(r.model.arch, n, req, r.cluster.cluster, {}, r.profile ? &*r.profile : nullptr);
  if (f.candidates.empty()) {
    t.strategy = r.search.strategy.value_or(planner::candidate_strategies(t.framework, r.cluster.cluster).front());
    t.checkpointing = r.search.checkpointing.value_or(Checkpointing::none);
    t.offload = r.search.offload.value_or(Offload::none);
    return t;
  }
  const planner::Candidate* pick =
      f.recommended ? &f.candidates[*f.recommended]
                    : &*std::min_element(f.candidates.begin(), f.candidates.end(), [](const auto& a, const auto& b) {
                        return a.memory.device_total < b.memory.device_total;
                      });
  t.strategy = pick->training.strategy;
  t.checkpointing = pick->training.checkpointing;
  t.offload = pick->training.offload;
  t.ep = pick->training.ep;
  return t;
}

}  // namespace

model::Training configuration(const Resolved& r) {
  try {
    return with_global_batch(r, recommended(r));
  } catch (const FieldError& e) {
    throw InputError(e.render([&](std::string_view field) { return r.label(field); }));
  }
}

std::string Resolved::label(std::string_view option) const {
  for (const Provenance& p : provenance)
    if (p.option == option) return p.source;
  return "--" + std::string(option);
}

planner::EmitContext emit_context(const Resolved& r) {
  return {r.model.entry ? r.model.entry->hf_id : std::nullopt, r.search.options.zero_plus_plus, r.force_emit};
}

void add_request_json(Json& j, const Resolved& r) {
  j["notes"] = r.notes;
  j["warnings"] = r.warnings;
  Json list = Json::array();
  for (const Provenance& p : r.provenance)
    list.push_back({{"option", p.option}, {"value", p.value}, {"source", p.source}});
  j["provenance"] = list;
}

std::int64_t default_seq(const model::Architecture& a) { return std::min<std::int64_t>(2048, a.max_seq); }

double parse_count(const std::string& text, const std::string& what) {
  auto bad = [&] {
    return InputError(what + ": '" + text +
                      "' is not a positive count (examples: 300B, 1T, 2.5e12)");
  };
  if (text.empty()) throw bad();
  std::size_t used = 0;
  double v = 0.0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    throw bad();
  }
  std::string rest = text.substr(used);
  double scale = 1.0;
  if (rest.size() == 1) {
    switch (rest[0]) {
      case 'k':
      case 'K':
        scale = 1e3;
        break;
      case 'm':
      case 'M':
        scale = 1e6;
        break;
      case 'b':
      case 'B':
      case 'g':
      case 'G':
        scale = 1e9;
        break;
      case 't':
      case 'T':
        scale = 1e12;
        break;
      default:
        throw bad();
    }
  } else if (!rest.empty()) {
    throw bad();
  }
  if (!(v > 0.0) || !std::isfinite(v)) throw bad();
  return v * scale;
}

}  // namespace trainplan::request
