// FP8 recipes as a user asks for them: --fp8 RECIPE and --precision fp8[-RECIPE], each library's
// own recipe behind a bare `fp8`, and every GPU that cannot run a recipe refused by its name
// (Transformer Engine's quantization.py device checks; docs/fp8-and-cp-sources.md A.3, A.4).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "../common/catalog.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/request/request_files.hpp"

namespace trainplan::request {
namespace {

Resolved ask(const std::string& cluster, std::vector<GivenValue> extra) {
  std::vector<GivenValue> values{{"model", "llama-3.1-8b", "model"},
                                 {"cluster", cluster, "cluster"},
                                 {"strategy", "fsdp-full", "--strategy"},
                                 {"checkpointing", "full", "--checkpointing"},
                                 {"offload", "none", "--offload"}};
  values.insert(values.end(), extra.begin(), extra.end());
  return resolve(test::catalog(), make_request({}, values, command::estimate), command::estimate);
}

std::string refusal(const std::string& cluster, std::vector<GivenValue> extra) {
  try {
    (void)ask(cluster, std::move(extra));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Fp8Request, PrecisionNamesARecipeOrTheLibrarys) {
  const Resolved named = ask("8xH100", {{"precision", "fp8-te-current", "--precision"}});
  EXPECT_EQ(named.search.base.precision, Precision::bf16_mixed);
  EXPECT_EQ(named.search.base.fp8, Fp8Recipe::te_current);
  // Megatron-Core's fp8_recipe defaults to 'delayed'; torchtitan converts with torchao.
  const Resolved megatron =
      ask("8xH100", {{"precision", "fp8", "--precision"}, {"framework", "megatron", "--framework"},
                     {"strategy", "zero1", "--strategy"}});
  EXPECT_EQ(megatron.search.base.fp8, Fp8Recipe::te_delayed);
  const Resolved titan = ask("8xH100", {{"precision", "fp8", "--precision"}, {"library", "torchtitan", "--library"}});
  EXPECT_EQ(titan.search.base.fp8, Fp8Recipe::torchao_tensorwise);
  // A recipe given with --fp8 wins over the library's.
  const Resolved both = ask("8xH100", {{"precision", "fp8", "--precision"}, {"fp8", "torchao-rowwise", "--fp8"}});
  EXPECT_EQ(both.search.base.fp8, Fp8Recipe::torchao_rowwise);
}

TEST(Fp8Request, GpusThatCannotRunARecipeAreRefusedByName) {
  // No FP8 tensor cores before Ada/Hopper.
  const std::string a100 = refusal("8xA100-80GB", {{"fp8", "te-delayed", "--fp8"}});
  EXPECT_NE(a100.find("A100-80GB has no FP8 tensor cores"), std::string::npos) << a100;
  EXPECT_NE(a100.find("--fp8 te-delayed"), std::string::npos) << a100;
  // MXFP8: SM 10.x only (refused on Hopper and on SM 12.x consumer Blackwell).
  const std::string h100 = refusal("8xH100", {{"fp8", "te-mxfp8", "--fp8"}});
  EXPECT_NE(h100.find("MXFP8 needs a Blackwell data-centre GPU"), std::string::npos) << h100;
  EXPECT_NE(refusal("1xRTX-5090", {{"fp8", "te-mxfp8", "--fp8"}}).find("RTX-5090"), std::string::npos);
  EXPECT_EQ(refusal("8xB200", {{"fp8", "te-mxfp8", "--fp8"}}), "");
  // TE's Float8BlockScaling needs Hopper (SM 9.0); Ada runs per-tensor FP8 only.
  EXPECT_NE(refusal("1xRTX-4090", {{"fp8", "te-blockwise", "--fp8"}}).find("Float8BlockScaling needs Hopper"),
            std::string::npos);
  EXPECT_EQ(refusal("1xRTX-4090", {{"fp8", "te-delayed", "--fp8"}}), "");
  EXPECT_EQ(refusal("8xMI300X", {{"fp8", "torchao-tensorwise", "--fp8"}}), "");
}

TEST(Fp8Request, QloraKeepsItsFourBitLayersWithAWarning) {
  const Resolved r = ask("1xH100", {{"method", "qlora", "--method"}, {"fp8", "te-delayed", "--fp8"}});
  EXPECT_EQ(r.search.base.fp8, Fp8Recipe::none);
  EXPECT_TRUE(std::any_of(r.warnings.begin(), r.warnings.end(), [](const std::string& w) {
    return w.find("--fp8 te-delayed with --method qlora: the 4-bit base layers are not nn.Linear") != std::string::npos;
  }));
}

// torchao gathers in FP8 only with one scale per tensor (float8 config.py); Megatron only with the
// distributed optimizer or FSDP (arguments.py).
TEST(Fp8Request, Fp8ParamGatherNeedsWhatItsLibraryNeeds) {
  EXPECT_NE(refusal("8xH100", {{"fp8", "torchao-rowwise", "--fp8"}, {"fp8-param-gather", "true", "--fp8-param-gather"}})
                .find("needs tensorwise scaling"),
            std::string::npos);
  EXPECT_NE(refusal("8xH100", {{"fp8", "te-current", "--fp8"},
                               {"fp8-param-gather", "true", "--fp8-param-gather"},
                               {"strategy", "ddp", "--strategy"}})
                .find("needs gathered parameters"),
            std::string::npos);
  EXPECT_EQ(refusal("8xH100", {{"fp8", "torchao-tensorwise", "--fp8"}, {"fp8-param-gather", "true", "--fp8-param-gather"}}),
            "");
}

// Megatron-Core asserts sequence parallelism for TP communication overlap (its userbuffers overlap
// the all-gather and reduce-scatter, not all-reduces).
TEST(Fp8Request, TpCommOverlapNeedsSequenceParallelism) {
  const std::string why = refusal("8xH100", {{"framework", "megatron", "--framework"},
                                             {"strategy", "zero1", "--strategy"},
                                             {"tp", "4", "--tp"},
                                             {"tp-comm-overlap", "true", "--tp-comm-overlap"}});
  EXPECT_NE(why.find("--tp-comm-overlap needs --sequence-parallel"), std::string::npos) << why;
}

TEST(Fp8Request, BadRecipesNameTheOption) {
  EXPECT_NE(refusal("8xH100", {{"fp8", "fp4", "--fp8"}}).find("--fp8"), std::string::npos);
  EXPECT_NE(refusal("8xH100", {{"precision", "fp8-none", "--precision"}}).find("names no FP8 recipe"),
            std::string::npos);
  EXPECT_NE(refusal("8xH100", {{"precision", "fp8-mx", "--precision"}}).find("--precision"), std::string::npos);
}

}  // namespace
}  // namespace trainplan::request
