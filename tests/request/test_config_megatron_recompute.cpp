// Megatron-LM's full recomputation methods as its command lines give them
// (megatron/core/transformer/transformer_block.py _checkpointed_forward): block K checkpoints the
// first K layers of each pipeline chunk (--checkpoint-layers K), uniform N groups of N layers
// (--checkpoint-group N; 1: every layer on its own); bad values named.

#include <string>

#include "config_fixture.hpp"
#include "trainplan/request/request_files.hpp"

namespace trainplan::request {
namespace {

using namespace config_test;

ConfigRead megatron(const std::string& flags) {
  return read_training_config_text("torchrun --nproc_per_node=8 pretrain_gpt.py --micro-batch-size 1 "
                                   "--global-batch-size 8 --seq-length 2048 --bf16 " +
                                       flags + "\n",
                                   "run.sh");
}

TEST(ConfigMegatronRecompute, BlockUniformAndTheirErrors) {
  const ConfigRead block = megatron("--recompute-granularity full --recompute-method block --recompute-num-layers 4");
  EXPECT_EQ(option(block, "checkpointing"), "full");
  EXPECT_EQ(option(block, "checkpoint-layers"), "4");
  // Flags in any order.
  EXPECT_EQ(option(megatron("--recompute-num-layers 2 --recompute-method block --recompute-granularity full"),
                   "checkpoint-layers"),
            "2");
  const ConfigRead uniform = megatron("--recompute-granularity full --recompute-method uniform --recompute-num-layers 1");
  EXPECT_EQ(option(uniform, "checkpointing"), "full");
  EXPECT_EQ(option(uniform, "checkpoint-layers"), "");
  EXPECT_TRUE(uniform.warnings.empty());
  const ConfigRead groups = megatron("--recompute-granularity full --recompute-method uniform --recompute-num-layers 4");
  EXPECT_EQ(option(groups, "checkpointing"), "full");
  EXPECT_EQ(option(groups, "checkpoint-group"), "4");
  EXPECT_TRUE(groups.warnings.empty());
  EXPECT_EQ(option(uniform, "checkpoint-group"), "");
  // Megatron reads the method with full granularity only.
  const ConfigRead selective = megatron("--recompute-granularity selective --recompute-method block --recompute-num-layers 2");
  EXPECT_EQ(option(selective, "checkpointing"), "selective");
  EXPECT_EQ(option(selective, "checkpoint-layers"), "");
  EXPECT_TRUE(has_warning(selective, "--recompute-granularity full only"));
  const std::pair<const char*, const char*> bad[] = {
      {"--recompute-granularity full --recompute-method layer --recompute-num-layers 2", "--recompute-method"},
      {"--recompute-granularity full --recompute-method block", "--recompute-num-layers"},
      {"--recompute-granularity full --recompute-method block --recompute-num-layers 0", "--recompute-num-layers"},
      {"--recompute-granularity full --recompute-method uniform --recompute-num-layers two", "--recompute-num-layers"},
  };
  for (const auto& [flags, named] : bad) {
    const std::string m = refusal([&] { return megatron(flags); });
    EXPECT_NE(m.find(named), std::string::npos) << flags << ": " << m;
    EXPECT_NE(m.find("run.sh"), std::string::npos) << flags << ": " << m;
  }
}

}  // namespace
}  // namespace trainplan::request
