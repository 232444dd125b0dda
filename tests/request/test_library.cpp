// The training library as part of the question (model/library.hpp): what a library changes, read
// from the files people run, and the questions of a published lab answered as it measured them.
//
// The lab: teaching-on-testbeds/llm-chi, "Large-scale model training on Chameleon", single-GPU
// section on an A100-80GB (snippets/single_gpu_a100.md at commit 5bb926bb0ac9), litgpt 0.5.7:
// - `litgpt finetune_full --config config/tiny-llama-full.yaml --train.global_batch_size 32
//   --train.micro_batch_size 32` "will fail because the training job won't fit in our 80GB GPU
//   memory"; with 8 and 8 "it fits easily";
// - open_llama_13b at bf16-true, micro-batch 1: "this will fail with an out of memory error", and
//   with `--optimizer SGD` it trains;
// and its V100 section runs TinyLlama at bf16-true on V100s (torch/v100_llama1b_1device.py at
// commit 4de20ebd1eac: Lightning, precision "bf16-true", batch 8, accumulation 4, max_seq_length
// 512), which PyTorch runs emulated.
// The sequences are the configs' max_seq_length, 512: litgpt pads each batch to its longest sample,
// so 512 is the longest a step can see.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "../common/catalog.hpp"
#include "trainplan/model/library.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/planner/fit.hpp"
#include "trainplan/request/request_files.hpp"

namespace trainplan::request {
namespace {

std::string config(const std::string& name) { return std::string(TRAINPLAN_CONFIGS) + "/" + name; }

struct Answer {
  Resolved resolved;
  planner::FitResult fit;
};

// fit's answer for one configuration (strategy, checkpointing and offload pinned as the lab ran).
Answer ask(const std::vector<std::string>& files, std::vector<GivenValue> values, const std::string& cluster) {
  values.push_back({"cluster", cluster, "cluster"});
  values.push_back({"strategy", "single", "--strategy"});
  values.push_back({"checkpointing", "none", "--checkpointing"});
  values.push_back({"offload", "none", "--offload"});
  const Request r = make_request(files, values, command::fit);
  Answer a{resolve(test::catalog(), r, command::fit), {}};
  const model::ParameterCounts n = model::count_parameters(a.resolved.model.arch);
  a.fit = planner::fit(a.resolved.model.arch, n, a.resolved.search, a.resolved.cluster.cluster, {}, nullptr);
  return a;
}

bool fits(const Answer& a) {
  EXPECT_EQ(a.fit.candidates.size(), 1u);
  return !a.fit.candidates.empty() && a.fit.candidates.front().fits;
}

bool any_contains(const std::vector<std::string>& lines, const std::string& text) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(text) != std::string::npos; });
}

std::vector<GivenValue> batch(int n) {
  return {{"micro-batch", std::to_string(n), "--train.micro_batch_size"},
          {"global-batch", std::to_string(n), "--train.global_batch_size"}};
}

TEST(Library, LitgptYamlNamesTheLibraryInTheProvenance) {
  const Answer a = ask({config("llm-chi-tiny-llama-full.yaml")}, batch(8), "A100-80GB");
  const model::Training& t = a.resolved.search.base;
  EXPECT_EQ(t.library, Library::litgpt);
  EXPECT_EQ(t.framework, Framework::pytorch);
  EXPECT_TRUE(t.tf32);  // litgpt's CLI sets float32 matmul precision "high"
  EXPECT_EQ(t.attention, Attention::sdpa);
  const auto p = std::find_if(a.resolved.provenance.begin(), a.resolved.provenance.end(),
                              [](const Provenance& x) { return x.option == "library"; });
  ASSERT_NE(p, a.resolved.provenance.end());
  EXPECT_EQ(p->value, "litgpt");
  EXPECT_NE(p->source.find("llm-chi-tiny-llama-full.yaml"), std::string::npos) << p->source;
}

TEST(Library, LabTinyLlamaFp32MicroBatch32DoesNotFitAnd8Does) {
  EXPECT_FALSE(fits(ask({config("llm-chi-tiny-llama-full.yaml")}, batch(32), "A100-80GB")));
  EXPECT_TRUE(fits(ask({config("llm-chi-tiny-llama-full.yaml")}, batch(8), "A100-80GB")));
}

TEST(Library, LabOpenLlama13bAdamWDoesNotFitAndSgdDoes) {
  std::vector<GivenValue> v = batch(1);
  v.push_back({"precision", "bf16-true", "--precision"});
  EXPECT_FALSE(fits(ask({config("llm-chi-open-llama-13b-full.yaml")}, v, "A100-80GB")));
  v.push_back({"optimizer", "sgd", "--optimizer"});
  EXPECT_TRUE(fits(ask({config("llm-chi-open-llama-13b-full.yaml")}, v, "A100-80GB")));
}

TEST(Library, Bf16OnAV100IsAnsweredWithAWarning) {
  std::vector<GivenValue> v = {{"model", "tinyllama-1.1b", "model"},
                               {"library", "litgpt", "--library"},
                               {"precision", "bf16-true", "--precision"},
                               {"micro-batch", "8", "--micro-batch"},
                               {"grad-accum", "4", "--grad-accum"},
                               {"seq", "512", "--seq"}};
  const Answer a = ask({}, v, "V100-32GB");
  EXPECT_TRUE(any_contains(a.resolved.warnings, "emulated")) << "no warning of emulated bf16";
  EXPECT_TRUE(fits(a));
}

// --framework alone names the library it stood for before there were libraries; with --library
// it names the engine under it (the Trainer with a DeepSpeed config).
TEST(Library, FrameworkAloneNamesTheLibraryAndWithOneTheEngine) {
  std::vector<GivenValue> v = {{"model", "llama-3.2-1b", "model"}, {"framework", "deepspeed", "--framework"}};
  Answer a = ask({}, v, "A100-80GB");
  EXPECT_EQ(a.resolved.search.base.library, Library::deepspeed);
  v.push_back({"library", "hf-trainer", "--library"});
  a = ask({}, v, "A100-80GB");
  EXPECT_EQ(a.resolved.search.base.library, Library::hf_trainer);
  EXPECT_EQ(a.resolved.search.base.framework, Framework::deepspeed);
}

// A library whose own kernels are not priced yet says so, never passing its name off as modelled.
TEST(Library, UnmodelledTraitsAreSaidInANote) {
  for (const Library l : {Library::torchtune, Library::torchtitan, Library::llm_foundry, Library::axolotl}) {
    std::vector<GivenValue> v = {{"model", "llama-3.2-1b", "model"},
                                 {"library", std::string(to_string(l)), "--library"}};
    const Answer a = ask({}, v, "A100-80GB");
    EXPECT_TRUE(any_contains(a.resolved.notes, "library " + std::string(to_string(l)) + ":")) << to_string(l);
    EXPECT_FALSE(model::library_traits(l).source.empty());
  }
}

// The attention kernel that runs is said where it is priced below a native one: flash-attn 2.x on
// an H100 (FlashAttention-3 paper: 35 % against 75 % of the peak); not on an A100, nor under
// Megatron, whose Transformer Engine runs cuDNN's attention there.
TEST(Library, AnAmpereAttentionKernelOnHopperIsSaid) {
  auto notes = [](const std::string& gpu, const std::string& framework) {
    std::vector<GivenValue> v = {{"model", "llama-3.2-1b", "model"},
                                 {"attention", "flash", "--attention"},
                                 {"framework", framework, "--framework"}};
    return ask({}, v, gpu).resolved.notes;
  };
  EXPECT_TRUE(any_contains(notes("H100-80GB", "pytorch"), "warp-level instructions"));
  EXPECT_FALSE(any_contains(notes("A100-80GB", "pytorch"), "warp-level instructions"));
  EXPECT_FALSE(any_contains(notes("H100-80GB", "megatron"), "warp-level instructions"));
}

// litgpt's checkpoint conversion copies a tied embedding into lm_head.weight and its finetuning
// never ties them again (scripts/convert_hf_checkpoint.py, finetune/*.py: train.tie_embeddings
// unsupported): Llama 3.2 1B (tied, 128256 x 2048) carries its output layer as a parameter of its
// own under litgpt, said in a note; under the Trainer it stays tied.
TEST(Library, LitgptHoldsATiedOutputLayerAsItsOwnParameter) {
  auto resolved = [](const std::string& library) {
    std::vector<GivenValue> v = {{"model", "llama-3.2-1b", "model"}, {"library", library, "--library"}};
    return ask({}, v, "A100-80GB").resolved;
  };
  const Resolved litgpt = resolved("litgpt");
  const Resolved trainer = resolved("hf-trainer");
  EXPECT_TRUE(trainer.model.arch.tie_embeddings);
  EXPECT_FALSE(litgpt.model.arch.tie_embeddings);
  EXPECT_EQ(model::count_parameters(litgpt.model.arch).total - model::count_parameters(trainer.model.arch).total,
            128256LL * 2048);
  EXPECT_TRUE(any_contains(litgpt.notes, "a copy of the tied input embedding"));
  EXPECT_FALSE(any_contains(trainer.notes, "a copy of the tied input embedding"));
}

}  // namespace
}  // namespace trainplan::request

namespace trainplan::request {
namespace {

// The AdamW implementation a library asks for: the Trainer's optim default is adamw_torch_fused
// from transformers 4.54.0 under torch 2.8 (training_args.py of the 4.54.0 wheel; adamw_torch in
// 4.53.3), torchtune's configs pass fused: True; where DeepSpeed runs the step, or the optimizer is
// offloaded or not torch's AdamW, the library has no say.
TEST(Library, TheOptimizerImplementationIsTheLibrarys) {
  model::Training t;
  EXPECT_EQ(t.optimizer_implementation(), OptimizerImpl::fused);  // hf-trainer, transformers 5.24
  t.transformers = 453;
  EXPECT_EQ(t.optimizer_implementation(), OptimizerImpl::foreach);
  t.library = Library::torchtune;
  EXPECT_EQ(t.optimizer_implementation(), OptimizerImpl::fused);  // not the Trainer's: any release
  t.library = Library::litgpt;
  EXPECT_EQ(t.optimizer_implementation(), OptimizerImpl::foreach);
  t.library = Library::hf_trainer;
  t.transformers = 524;
  t.optimizer = Optimizer::sgd;
  EXPECT_EQ(t.optimizer_implementation(), OptimizerImpl::foreach);
  t.optimizer = Optimizer::adamw;
  t.framework = Framework::deepspeed;
  EXPECT_EQ(t.optimizer_implementation(), OptimizerImpl::deepspeed_fused);
  t.framework = Framework::pytorch;
  t.offload = Offload::optimizer;
  EXPECT_EQ(t.optimizer_implementation(), OptimizerImpl::deepspeed_cpu);
  t.offload = Offload::none;
  t.optimizer_impl = OptimizerImpl::foreach;  // what a run says wins
  EXPECT_EQ(t.optimizer_implementation(), OptimizerImpl::foreach);
}

}  // namespace
}  // namespace trainplan::request
