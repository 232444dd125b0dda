// The dtype a TrainingArguments file's script loads the model in (`dtype`, `torch_dtype` before it) and
// what the Trainer then keeps: bf16/fp16 autocast over that model, fp32 master weights only where
// DeepSpeed (its optimizer's fp32 partitions) or accelerate's FSDP under mixed precision (the
// trainable parameters upcast to fp32: huggingface/accelerate src/accelerate/accelerator.py,
// utils/fsdp_utils.py, PR #2674) keeps them; TRL loads float32 when the file says nothing
// (huggingface/trl trl/trainer/model_config.py, ModelConfig.dtype default "float32" from v0.27.0).
// axolotl loads the model in bf16 whenever bf16 (or bfloat16) is on (axolotl-ai-cloud/axolotl
// src/axolotl/utils/config/__init__.py: cfg.torch_dtype) and upcasts nothing that trains.

#include <algorithm>
#include <fstream>

#include "../common/catalog.hpp"
#include "config_fixture.hpp"
#include "trainplan/request/request_files.hpp"

namespace trainplan::request {
namespace {

using namespace config_test;

ConfigRead read(const std::string& text) { return read_training_config_text(text, "sft.yaml"); }

TEST(ConfigLoadDtype, SixteenBitModelWithoutEngineTrainsItsOwnWeights) {
  const ConfigRead r = read("per_device_train_batch_size: 2\ndtype: bfloat16\nbf16: true\n");
  EXPECT_EQ(option(r, "precision"), "bf16-true");
  ASSERT_NE(r.find("precision"), nullptr);
  EXPECT_TRUE(r.find("precision")->yields);  // another file's DeepSpeed or FSDP config wins
  EXPECT_NE(r.find("precision")->source.find("dtype = bfloat16"), std::string::npos) << r.find("precision")->source;
  // transformers' own spelling before v4.56, torch's names, and no autocast flag at all.
  EXPECT_EQ(option(read("per_device_train_batch_size: 2\ntorch_dtype: torch.float16\n"), "precision"), "fp16-true");
  // An fp32 model (the default) keeps the autocast reading.
  EXPECT_EQ(option(read("per_device_train_batch_size: 2\nbf16: true\n"), "precision"), "bf16-mixed");
  EXPECT_EQ(option(read("per_device_train_batch_size: 2\ndtype: float32\nbf16: true\n"), "precision"), "bf16-mixed");
}

TEST(ConfigLoadDtype, DeepSpeedOrFsdpKeepFp32MasterWeights) {
  for (const std::string engine : {"deepspeed: ds_zero3.json\n", "fsdp: full_shard auto_wrap\n"}) {
    SCOPED_TRACE(engine);
    const ConfigRead r = read("per_device_train_batch_size: 2\ntorch_dtype: bfloat16\nbf16: true\n" + engine);
    EXPECT_EQ(option(r, "precision"), "bf16-mixed");
    EXPECT_FALSE(r.find("precision")->yields);
  }
}

TEST(ConfigLoadDtype, AnAccelerateDeepSpeedConfigOverridesInEitherOrder) {
  // alignment-handbook's recipe and the accelerate config its README launches it with.
  const std::string recipe = config_path("trainargs-zephyr-sft-full.yaml");
  const std::string zero3 = config_path("accelerate-handbook-zero3.yaml");
  for (const std::vector<std::string>& files : {std::vector{recipe, zero3}, std::vector{zero3, recipe}}) {
    const Request r = make_request(files, {}, command::estimate);
    EXPECT_EQ(r.training.precision, Precision::bf16_mixed);
    EXPECT_NE(r.given.at("precision").find("accelerate-handbook-zero3.yaml"), std::string::npos)
        << r.given.at("precision");
  }
  EXPECT_EQ(make_request({recipe}, {}, command::estimate).training.precision, Precision::bf16_true);
}

TEST(ConfigLoadDtype, TrlAdaptersOverAnFp32Base) {
  // trl sft with use_peft and no dtype: ModelConfig loads float32, the frozen base stays fp32.
  const ConfigRead trl = read("per_device_train_batch_size: 2\nmodel_name_or_path: Qwen/Qwen3-8B\nuse_peft: true\nlora_r: 16\nbf16: true\n");
  EXPECT_EQ(option(trl, "precision"), "bf16-mixed");
  EXPECT_EQ(option(trl, "frozen-base-fp32"), "true");
  EXPECT_NE(trl.find("frozen-base-fp32")->source.find("TRL's ModelConfig loads float32"), std::string::npos);
  // A 16-bit base under autocast: Hugging Face + PEFT's usual layout.
  const ConfigRead bf = read("per_device_train_batch_size: 2\nmodel_name_or_path: Qwen/Qwen3-8B\nuse_peft: true\ndtype: bfloat16\nbf16: true\n");
  EXPECT_EQ(option(bf, "precision"), "bf16-mixed");
  EXPECT_EQ(option(bf, "frozen-base-fp32"), "");
}

TEST(ConfigLoadDtype, AutoIsTheCheckpointsDtype) {
  const ConfigRead r = read("per_device_train_batch_size: 2\ndtype: auto\nbf16: true\n");
  EXPECT_EQ(option(r, "precision"), "");
  EXPECT_TRUE(r.unresolved_options.empty());
  ASSERT_TRUE(r.precision_from_checkpoint.has_value());
  EXPECT_EQ(r.precision_from_checkpoint->autocast, "bf16");
  // Under DeepSpeed the master weights are fp32 whatever was loaded.
  EXPECT_EQ(option(read("per_device_train_batch_size: 2\ndtype: auto\nbf16: true\ndeepspeed: ds.json\n"), "precision"),
            "bf16-mixed");
}

// from_pretrained(dtype="auto") loads what the checkpoint's config.json declares (transformers
// modeling_utils.py _get_dtype: config.dtype first): Llama 3.2 1B's bfloat16 trains its own 16-bit
// weights, Gemma 2 9B's float32 under the Trainer's autocast; a config that declares none leaves the
// precision to its default, said; a flag still wins.
TEST(ConfigLoadDtype, AutoResolvesAgainstTheModelsConfig) {
  const std::string path = ::testing::TempDir() + "/auto-dtype.yaml";
  {
    std::ofstream f(path);
    f << "per_device_train_batch_size: 2\ndtype: auto\nbf16: true\n";
  }
  const auto resolved = [&](const std::string& model, std::vector<GivenValue> extra = {}) {
    std::vector<GivenValue> v{{"model", model, "model"}, {"cluster", "1xH100", "cluster"}};
    v.insert(v.end(), extra.begin(), extra.end());
    return resolve(test::catalog(), make_request({path}, v, command::estimate), command::estimate);
  };
  const Resolved llama = resolved("llama-3.2-1b");
  EXPECT_EQ(llama.search.base.precision, Precision::bf16_true);
  EXPECT_EQ(resolved("gemma-2-9b").search.base.precision, Precision::bf16_mixed);
  const Resolved unknown = resolved("gpt2");
  EXPECT_EQ(unknown.search.base.precision, Precision::bf16_mixed);
  EXPECT_TRUE(std::any_of(unknown.notes.begin(), unknown.notes.end(), [](const std::string& n) {
    return n.find("declares none") != std::string::npos;
  }));
  EXPECT_EQ(resolved("llama-3.2-1b", {{"precision", "bf16-mixed", "--precision"}}).search.base.precision,
            Precision::bf16_mixed);
}

TEST(ConfigLoadDtype, AxolotlFullFineTuneTrainsBf16WeightsWithoutAnEngine) {
  const std::string base = "base_model: Qwen/Qwen3-8B\nmicro_batch_size: 1\nsequence_len: 4096\n";
  const ConfigRead full = read_training_config_text(base + "bf16: true\n", "ax.yaml");
  EXPECT_EQ(option(full, "precision"), "bf16-true");
  EXPECT_TRUE(full.find("precision")->yields);
  EXPECT_EQ(option(read_training_config_text(base + "bfloat16: true\n", "ax.yaml"), "precision"), "bf16-true");
  // Adapters over the bf16 base (PEFT keeps them fp32), DeepSpeed's and FSDP's fp32 master weights.
  EXPECT_EQ(option(read_training_config_text(base + "bf16: true\nadapter: lora\n", "ax.yaml"), "precision"),
            "bf16-mixed");
  EXPECT_EQ(option(read_training_config_text(base + "bf16: true\ndeepspeed: zero3.json\n", "ax.yaml"), "precision"),
            "bf16-mixed");
  EXPECT_EQ(option(read_training_config_text(base + "bf16: true\nfsdp: [full_shard, auto_wrap]\n", "ax.yaml"),
                   "precision"),
            "bf16-mixed");
  // auto depends on the GPU: left open, saying what a full fine-tune then keeps.
  const ConfigRead automatic = read_training_config_text(base + "bf16: auto\n", "ax.yaml");
  EXPECT_EQ(option(automatic, "precision"), "");
  ASSERT_FALSE(automatic.unresolved.empty());
  EXPECT_NE(automatic.unresolved[0].find("--precision bf16-true"), std::string::npos) << automatic.unresolved[0];
}

TEST(ConfigLoadDtype, BadValuesNameTheKey) {
  EXPECT_NE(refusal([] { return read("per_device_train_batch_size: 2\ndtype: float64\nbf16: true\n"); }).find("key 'dtype' = \"float64\""),
            std::string::npos);
  EXPECT_NE(refusal([] { return read("per_device_train_batch_size: 2\ntorch_dtype: 16\n"); }).find("torch_dtype"), std::string::npos);
  EXPECT_NE(refusal([] { return read("per_device_train_batch_size: 2\ndtype: bfloat16\ntorch_dtype: float32\n"); }).find("contradicts torch_dtype"),
            std::string::npos);
  EXPECT_NE(refusal([] { return read("per_device_train_batch_size: 2\nbf16: true\nfp16: true\n"); }).find("bf16 and fp16"), std::string::npos);
}

}  // namespace
}  // namespace trainplan::request
