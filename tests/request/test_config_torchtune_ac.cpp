// torchtune's distributed recipes checkpoint by ac_mode and ac_option when
// enable_activation_checkpointing is off (recipes/full_finetune_distributed.py; the layer policy of
// training.apply_selective_activation_checkpointing, torchtitan's: one block in N), and apply
// neither when both are given.

#include <string>

#include "config_fixture.hpp"
#include "trainplan/request/request_files.hpp"

namespace trainplan::request {
namespace {

using namespace config_test;

ConfigRead recipe(const std::string& ac) {
  return read_training_config_text("model:\n  _component_: torchtune.models.llama3_1.llama3_1_8b\nbatch_size: 2\n"
                                   "dtype: bf16\n" +
                                       ac,
                                   "8B_full.yaml");
}

TEST(ConfigTorchtuneAc, SelectiveLayersFullAndNeither) {
  const ConfigRead every2 = recipe("enable_activation_checkpointing: false\nac_mode: selective\nac_option: 2\n");
  EXPECT_EQ(option(every2, "checkpointing"), "full");
  EXPECT_EQ(option(every2, "checkpoint-every"), "2");
  EXPECT_EQ(option(recipe("ac_mode: selective\nac_option: \"3\"\n"), "checkpoint-every"), "3");
  const ConfigRead all = recipe("ac_mode: selective\nac_option: 1\n");
  EXPECT_EQ(option(all, "checkpointing"), "full");
  EXPECT_EQ(option(all, "checkpoint-every"), "");
  EXPECT_EQ(option(recipe("ac_mode: full\n"), "checkpointing"), "full");
  const ConfigRead both = recipe("enable_activation_checkpointing: true\nac_mode: selective\nac_option: 2\n");
  EXPECT_EQ(option(both, "checkpointing"), "none");
  EXPECT_TRUE(has_warning(both, "applies neither"));
  EXPECT_EQ(recipe("ac_mode: selective\nac_option: op\n").unmodelled.size(), 1u);
  for (const std::string bad : {"ac_mode: some\n", "ac_mode: selective\nac_option: two\n",
                                "ac_mode: selective\nac_option: -1\n"}) {
    const std::string m = refusal([&] { return recipe(bad); });
    EXPECT_NE(m.find("ac_"), std::string::npos) << bad << ": " << m;
  }
}

}  // namespace
}  // namespace trainplan::request
