// Every --emit format read back (issue 15, item 3): a plan emitted as a DeepSpeed config, an
// accelerate config or a torchrun command line, written to a file and read with
// read_training_config, gives the plan's strategy, degrees, micro-batch, accumulation, precision,
// checkpointing and offload, for each option the format carries. An option a format leaves out is
// compared with the CLI's default (tp/pp 1, no checkpointing, no offload).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "../common/catalog.hpp"
#include "trainplan/request/catalog.hpp"
#include "trainplan/request/config_file.hpp"
#include "trainplan/request/files.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/planner/emit.hpp"

namespace trainplan::request {
namespace {

struct Plan {
  std::string name;
  std::string model;
  std::string cluster;
  model::Training t;
  bool zero_plus_plus = false;
};

model::Training base(Strategy s, std::int64_t micro_batch, std::int64_t grad_accum) {
  model::Training t;
  t.method = Method::full;
  t.precision = Precision::bf16_mixed;
  t.strategy = s;
  t.micro_batch = micro_batch;
  t.grad_accum = grad_accum;
  t.seq = 4096;
  t.checkpointing = Checkpointing::full;
  return t;
}

std::vector<Plan> plans() {
  std::vector<Plan> out;
  out.push_back({"dense FSDP", "llama-3.1-8b", "8xH100-80GB", base(Strategy::fsdp_full, 2, 4)});
  model::Training z3 = base(Strategy::zero3, 4, 2);
  z3.framework = Framework::deepspeed;
  z3.offload = Offload::optimizer_params;
  out.push_back({"ZeRO-3 + offload", "llama-3.1-8b", "8xH100-80GB", z3});
  model::Training lora = base(Strategy::ddp, 4, 2);
  lora.method = Method::lora;
  lora.checkpointing = Checkpointing::none;
  lora.lora.rank = 16;
  out.push_back({"LoRA DDP", "llama-3.1-8b", "4xH100-80GB", lora});
  model::Training mega = base(Strategy::zero1, 1, 16);
  mega.framework = Framework::megatron;
  mega.tp = 4;
  mega.pp = 2;
  mega.checkpointing = Checkpointing::selective;
  mega.sequence_parallel = true;
  out.push_back({"TP+PP Megatron", "llama-3.1-70b", "2x8xH100-80GB", mega});
  model::Training fp8 = mega;
  fp8.fp8 = Fp8Recipe::te_current;
  fp8.tp_comm_overlap = true;
  out.push_back({"FP8 Megatron", "llama-3.1-70b", "2x8xH100-80GB", fp8});
  model::Training mx = mega;
  mx.fp8 = Fp8Recipe::te_mxfp8;
  out.push_back({"MXFP8 Megatron", "llama-3.1-70b", "2x8xB200", mx});
  model::Training zpp = base(Strategy::zero3, 2, 4);
  zpp.framework = Framework::deepspeed;
  out.push_back({"ZeRO++", "llama-3.1-8b", "2x8xH100-80GB", zpp, true});
  return out;
}

// What the plan says, in the options' CLI spelling.
std::map<std::string, std::string> plan_options(const model::Training& t) {
  return {{"strategy", std::string(to_string(t.strategy))},
          {"tp", std::to_string(t.tp)},
          {"pp", std::to_string(t.pp)},
          {"micro-batch", std::to_string(t.micro_batch)},
          {"grad-accum", std::to_string(t.grad_accum)},
          {"precision", std::string(to_string(t.precision))},
          {"checkpointing", std::string(to_string(t.checkpointing))},
          {"offload", std::string(to_string(t.offload))},
          {"fp8", std::string(to_string(t.fp8))},
          {"tp-comm-overlap", t.tp_comm_overlap ? "true" : "false"}};
}

const std::map<std::string, std::string> kCliDefaults{
    {"tp", "1"}, {"pp", "1"}, {"checkpointing", "none"}, {"offload", "none"}, {"fp8", "none"},
    {"tp-comm-overlap", "false"}};

// The options each format carries for a plan (the rest belong to the training script or to
// another file the emitted one names).
struct Case {
  std::string plan;
  planner::EmitFormat format;
  std::vector<std::string> carried;
};

const std::vector<Case>& cases() {
  using F = planner::EmitFormat;
  static const std::vector<Case> kCases{
      {"dense FSDP", F::accelerate, {"strategy", "precision", "checkpointing", "offload"}},
      {"dense FSDP",
       F::torchrun,
       {"strategy", "micro-batch", "grad-accum", "precision", "checkpointing", "offload"}},
      {"ZeRO-3 + offload",
       F::deepspeed,
       {"strategy", "micro-batch", "grad-accum", "precision", "offload"}},
      {"ZeRO-3 + offload",
       F::torchrun,
       {"micro-batch", "grad-accum", "precision", "checkpointing"}},
      {"LoRA DDP", F::accelerate, {"strategy", "precision"}},
      {"LoRA DDP",
       F::torchrun,
       {"strategy", "micro-batch", "grad-accum", "precision", "checkpointing"}},
      {"TP+PP Megatron",
       F::torchrun,
       {"strategy", "tp", "pp", "micro-batch", "grad-accum", "precision", "checkpointing",
        "offload"}},
      {"ZeRO++", F::deepspeed, {"strategy", "micro-batch", "grad-accum", "precision", "offload"}},
      {"FP8 Megatron", F::torchrun, {"tp", "pp", "precision", "fp8", "tp-comm-overlap"}},
      {"MXFP8 Megatron", F::torchrun, {"tp", "pp", "precision", "fp8", "tp-comm-overlap"}},
  };
  return kCases;
}

TEST(RoundTrip, EveryEmitFormatReadsBackAsThePlan) {
  const Catalog& catalog = test::catalog();
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "trainplan_round_trip";
  std::filesystem::create_directories(dir);
  std::map<std::string, Plan> by_name;
  for (const Plan& p : plans()) by_name.emplace(p.name, p);
  for (const Case& c : cases()) {
    const Plan& p = by_name.at(c.plan);
    SCOPED_TRACE(c.plan + " as " + std::string(to_string(c.format)));
    const ResolvedModel m = catalog.resolve_model(p.model);
    const hardware::Cluster cl = catalog.resolve_cluster(p.cluster, std::nullopt).cluster;
    const planner::Estimate e = planner::evaluate(m.arch, model::count_parameters(m.arch), p.t, cl);
    // Forced: what is read back is the mapping, whatever the plan's memory (a forced file opens
    // with a warning, which the readers must pass over).
    const planner::EmitContext x{m.entry ? m.entry->hf_id : std::nullopt, p.zero_plus_plus, /*force=*/true};
    const planner::Emitted out = planner::emit(c.format, e, cl, m.arch, x);
    const std::string path =
        (dir / (std::string(to_string(c.format)) + "-" + std::to_string(&c - cases().data())))
            .string();
    write_file_atomically(path, out.text);
    const ConfigRead r = read_training_config(path);
    const auto want = plan_options(p.t);
    for (const std::string& option : c.carried) {
      const Setting* s = r.find(option);
      const std::string got =
          s ? s->value : (kCliDefaults.contains(option) ? kCliDefaults.at(option) : "(absent)");
      EXPECT_EQ(got, want.at(option)) << option << " from:\n" << out.text;
    }
    if (c.format != planner::EmitFormat::deepspeed) {
      ASSERT_NE(r.find("gpus"), nullptr) << out.text;
      EXPECT_EQ(r.find("gpus")->value, std::to_string(cl.world()));
    }
    if (p.zero_plus_plus) {
      ASSERT_NE(r.find("zero-plus-plus"), nullptr) << out.text;
      EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
    }
    if (x.hf_id && c.format == planner::EmitFormat::torchrun &&
        p.t.framework != Framework::megatron) {
      ASSERT_NE(r.find("model"), nullptr) << out.text;
      EXPECT_EQ(r.find("model")->value, *x.hf_id);
    }
    std::filesystem::remove(path);
  }
}

}  // namespace
}  // namespace trainplan::request
