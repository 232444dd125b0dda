// torch.compile as each framework's file turns it on: TrainingArguments' torch_compile (a mode or
// backend alone turns it on, as transformers' __post_init__ does), axolotl's torch_compile ("auto"
// too: axolotl passes any truthy value on to the Trainer), accelerate's dynamo_config (what
// --emit accelerate writes back), torchtune's compile.

#include <string>
#include <utility>
#include <vector>

#include "config_fixture.hpp"
#include "trainplan/request/request_files.hpp"

namespace trainplan::request {
namespace {

using namespace config_test;

TEST(ConfigCompile, TrainerTorchCompile) {
  const ConfigRead on = read_training_config_text("per_device_train_batch_size: 2\ntorch_compile: true\n", "sft.yaml");
  EXPECT_EQ(option(on, "compile"), "true");
  EXPECT_FALSE(has_warning(on, "compile")) << (on.warnings.empty() ? "" : on.warnings[0]);
  const ConfigRead off = read_training_config_text("per_device_train_batch_size: 2\ntorch_compile: false\n", "sft.yaml");
  EXPECT_EQ(option(off, "compile"), "false");
  // A mode alone turns it on; one other than the default is priced as the default, and said.
  const ConfigRead mode =
      read_training_config_text("per_device_train_batch_size: 2\ntorch_compile_mode: max-autotune\n", "sft.yaml");
  EXPECT_EQ(option(mode, "compile"), "true");
  EXPECT_TRUE(has_warning(mode, "torch_compile_mode = max-autotune: priced as the default mode"));
  const ConfigRead backend =
      read_training_config_text("per_device_train_batch_size: 2\ntorch_compile: true\ntorch_compile_backend: aot_eager\n",
                                "sft.yaml");
  EXPECT_EQ(option(backend, "compile"), "true");
  EXPECT_TRUE(has_warning(backend, "torch_compile_backend = aot_eager: priced as Inductor's"));
}

TEST(ConfigCompile, AxolotlTorchCompileAutoIsOn) {
  const std::string base = "base_model: meta-llama/Llama-3.1-8B\nmicro_batch_size: 1\nsequence_len: 2048\n";
  EXPECT_EQ(option(read_training_config_text(base + "torch_compile: true\n", "ax.yaml"), "compile"), "true");
  EXPECT_EQ(option(read_training_config_text(base + "torch_compile: auto\n", "ax.yaml"), "compile"), "true");
  const ConfigRead odd = read_training_config_text(base + "torch_compile: sometimes\n", "ax.yaml");
  EXPECT_EQ(option(odd, "compile"), "false");
  EXPECT_TRUE(has_warning(odd, "torch_compile: only true, false or \"auto\" are read"));
}

TEST(ConfigCompile, AccelerateDynamoConfig) {
  const std::string base = "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: 8\n";
  const ConfigRead on = read_training_config_text(base + "dynamo_config:\n  dynamo_backend: INDUCTOR\n", "acc.yaml");
  EXPECT_EQ(option(on, "compile"), "true");
  EXPECT_FALSE(has_warning(on, "dynamo")) << (on.warnings.empty() ? "" : on.warnings[0]);
  const ConfigRead old = read_training_config_text(base + "dynamo_backend: 'NO'\n", "acc.yaml");
  EXPECT_EQ(option(old, "compile"), "false");
  const ConfigRead other = read_training_config_text(
      base + "dynamo_config:\n  dynamo_backend: CUDAGRAPHS\n  dynamo_mode: reduce-overhead\n", "acc.yaml");
  EXPECT_EQ(option(other, "compile"), "true");
  EXPECT_TRUE(has_warning(other, "dynamo_config.dynamo_backend = CUDAGRAPHS: priced as Inductor's"));
  EXPECT_TRUE(has_warning(other, "dynamo_config.dynamo_mode = reduce-overhead: priced as the default mode"));
}

TEST(ConfigCompile, TorchtuneCompile) {
  const ConfigRead on = read_training_config_text(
      "model:\n  _component_: torchtune.models.llama3_1.llama3_1_8b\nbatch_size: 2\ncompile: True\n", "tt.yaml");
  EXPECT_EQ(option(on, "compile"), "true");
  EXPECT_FALSE(has_warning(on, "compile")) << (on.warnings.empty() ? "" : on.warnings[0]);
}

// A value of the wrong type is refused, naming the file, the key and the value.
TEST(ConfigCompile, WrongTypesNameTheKey) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"per_device_train_batch_size: 2\ntorch_compile: 3\n", "torch_compile"},
      {"compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\ndynamo_config:\n  dynamo_backend: 7\n",
       "dynamo_config.dynamo_backend"},
      {"model:\n  _component_: torchtune.models.llama3_1.llama3_1_8b\nbatch_size: 2\ncompile: [1]\n", "compile"},
  };
  for (const auto& [text, key] : bad) {
    SCOPED_TRACE(key);
    try {
      (void)read_training_config_text(text, "bad.yaml");
      ADD_FAILURE() << "accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("bad.yaml"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace trainplan::request
