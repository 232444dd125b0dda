// Megatron FSDP as Megatron-LM's scripts turn it on (examples/megatron_fsdp): the sharding strategy
// read as ZeRO's stage, PyTorch's FSDP2 under Megatron as fsdp-full, and the script a launch runs,
// not a message that mentions it.

#include <string>

#include "config_fixture.hpp"
#include "trainplan/request/request_files.hpp"

namespace trainplan::request {
namespace {

using namespace config_test;

const Setting* setting(const ConfigRead& r, const std::string& option) { return r.find(option); }

TEST(ConfigMegatronFsdp, TheScriptsShardingStrategyIsZerosStage) {
  const ConfigRead r = read_training_config(config_path("megatron-lm-fsdp-llama3-8b-fp8.sh"));
  const Setting* strategy = setting(r, "strategy");
  ASSERT_NE(strategy, nullptr);
  EXPECT_EQ(strategy->value, "zero3");
  EXPECT_NE(strategy->source.find("--use-megatron-fsdp --data-parallel-sharding-strategy = optim_grads_params"),
            std::string::npos)
      << strategy->source;
  // The script's `echo "Error: pretrain_gpt.py not found at ..."` is not the script it runs.
  const Setting* framework = setting(r, "framework");
  ASSERT_NE(framework, nullptr);
  EXPECT_NE(framework->source.find("= pretrain_gpt.py"), std::string::npos) << framework->source;
  EXPECT_EQ(framework->source.find("Error"), std::string::npos) << framework->source;
}

TEST(ConfigMegatronFsdp, EachShardingStrategyAndTorchFsdp2) {
  const std::string head = "torchrun --nproc_per_node=8 pretrain_gpt.py --micro-batch-size 1 --global-batch-size 8 "
                           "--seq-length 2048 --bf16 ";
  const std::pair<const char*, const char*> cases[] = {
      {"--use-megatron-fsdp --data-parallel-sharding-strategy no_shard", "ddp"},
      {"--use-megatron-fsdp --data-parallel-sharding-strategy optim", "zero1"},
      {"--use-megatron-fsdp --data-parallel-sharding-strategy optim_grads", "zero2"},
      {"--use-megatron-fsdp", "zero3"},
      {"--use-torch-fsdp2", "fsdp-full"},
  };
  for (const auto& [flags, strategy] : cases) {
    const ConfigRead r = read_training_config_text(head + flags + "\n", "run.sh");
    const Setting* s = setting(r, "strategy");
    ASSERT_NE(s, nullptr) << flags;
    EXPECT_EQ(s->value, strategy) << flags;
  }
}

}  // namespace
}  // namespace trainplan::request
