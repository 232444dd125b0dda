// accelerate's GradientAccumulationPlugin(sync_each_batch=True) as a TrainingArguments file gives it:
// accelerator_config.gradient_accumulation_kwargs.sync_each_batch (transformers training_args.py
// AcceleratorConfig; trainer.py's loop skips no_sync when it is set), axolotl passing its own
// accelerator_config through, and FSDP's version as accelerate, axolotl and the Trainer write it.

#include "config_fixture.hpp"
#include "trainplan/request/request_files.hpp"

namespace trainplan::request {
namespace {

using namespace config_test;

TEST(ConfigSyncEachBatch, TrainerAcceleratorConfig) {
  const ConfigRead on = read_training_config_text(
      "per_device_train_batch_size: 2\ngradient_accumulation_steps: 4\n"
      "accelerator_config:\n  gradient_accumulation_kwargs:\n    sync_each_batch: true\n",
      "sft.yaml");
  EXPECT_EQ(option(on, "sync-each-batch"), "true");
  ASSERT_NE(on.find("sync-each-batch"), nullptr);
  EXPECT_NE(on.find("sync-each-batch")->source.find("accelerator_config.gradient_accumulation_kwargs.sync_each_batch"),
            std::string::npos);
  // Given as a JSON string (or a file's path), it is said and not read.
  const ConfigRead text = read_training_config_text(
      "per_device_train_batch_size: 2\naccelerator_config: '{\"gradient_accumulation_kwargs\": {}}'\n", "sft.yaml");
  EXPECT_EQ(text.find("sync-each-batch"), nullptr);
  EXPECT_TRUE(has_warning(text, "accelerator_config given as a string"));
}

TEST(ConfigSyncEachBatch, WrongTypeNamesTheKey) {
  try {
    (void)read_training_config_text(
        "per_device_train_batch_size: 2\naccelerator_config:\n  gradient_accumulation_kwargs:\n"
        "    sync_each_batch: always\n",
        "sft.yaml");
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("sync_each_batch"), std::string::npos) << e.what();
  }
}

TEST(ConfigSyncEachBatch, TrainerFsdpConfigVersion) {
  const ConfigRead v2 = read_training_config_text(
      "per_device_train_batch_size: 2\nfsdp: full_shard auto_wrap\nfsdp_config:\n  version: 2\n", "sft.yaml");
  EXPECT_EQ(option(v2, "fsdp-version"), "2");
  EXPECT_EQ(option(v2, "strategy"), "fsdp-full");
  try {
    (void)read_training_config_text("per_device_train_batch_size: 2\nfsdp: full_shard\nfsdp_config:\n  version: 3\n",
                                    "sft.yaml");
    ADD_FAILURE() << "version 3 accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("fsdp_config.version"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace trainplan::request
