// Published configs of every framework (sources in configs/SOURCES.md): configs/readings.json holds,
// for each file it lists, the kind, every option the file states in trainplan's terms, what it
// leaves open and each warning. Each row was checked against what the file's framework does with
// it, read in the framework's sources (the rules cited in request/src/config_*.cpp); where
// trainplan still answers differently (a key it cannot price yet, said in a warning, or a valid
// file it refuses) the row says how in `misread`, and those count against the share of files read
// with every stated option right.
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "../common/catalog.hpp"
#include "config_fixture.hpp"
#include "trainplan/request/request_files.hpp"

namespace trainplan::request {
namespace {

using namespace config_test;

const nlohmann::json& readings() {
  static const nlohmann::json kReadings = [] {
    std::ifstream f(config_path("readings.json"));
    return nlohmann::json::parse(f);
  }();
  return kReadings;
}

TEST(ConfigReadings, PublishedConfigsReadAsTheirFrameworksDo) {
  ASSERT_GE(readings().size(), 60u);
  for (const auto& row : readings()) {
    const std::string file = row.at("file");
    SCOPED_TRACE(file);
    if (row.contains("refused")) {
      try {
        (void)read_training_config(config_path(file));
        ADD_FAILURE() << "read, not refused";
      } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find(row.at("refused").get<std::string>()), std::string::npos) << e.what();
      }
      continue;
    }
    const ConfigRead r = read_training_config(config_path(file));
    EXPECT_EQ(r.kind, row.at("kind").get<std::string>());
    EXPECT_EQ(options_of(r), row.at("expected").get<Options>());
    EXPECT_EQ(r.unresolved_options, row.at("unresolved").get<std::vector<std::string>>());
    const auto warnings = row.at("warnings").get<std::vector<std::string>>();
    ASSERT_EQ(r.warnings.size(), warnings.size()) << (r.warnings.empty() ? "" : r.warnings[0]);
    for (std::size_t i = 0; i < warnings.size(); ++i)
      EXPECT_NE(r.warnings[i].find(warnings[i]), std::string::npos) << r.warnings[i];
  }
}

// Every real file in configs/ (the hand-made bad-* files aside) has its source in SOURCES.md; the
// share read with every stated option right is printed and may not fall (the issue asks 95 %, met: 106 of 110).
TEST(ConfigReadings, ShareOfRealFilesReadRight) {
  std::ifstream s(config_path("SOURCES.md"));
  const std::string sources((std::istreambuf_iterator<char>(s)), std::istreambuf_iterator<char>());
  int real = 0;
  for (const auto& entry : std::filesystem::directory_iterator(config_path(""))) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("bad-", 0) == 0 || name == "SOURCES.md" || name == "readings.json") continue;
    ++real;
    EXPECT_NE(sources.find(name), std::string::npos) << name << " has no source in SOURCES.md";
  }
  int misread = 0;
  for (const auto& row : readings())
    if (row.contains("misread")) {
      ++misread;
      EXPECT_FALSE(row.at("misread").get<std::string>().empty());
    }
  const double share = static_cast<double>(real - misread) / real;
  std::printf("%d of %d real configs read with every stated option right (%.1f %%)\n", real - misread, real,
              100.0 * share);
  EXPECT_GE(real, 95);
  EXPECT_GE(share, 0.95);
}

// DeepSpeed derives the micro-batch from train_batch_size and the accumulation
// (runtime/config.py _set_batch_related_parameters): 256 / (1 x 8) on eight GPUs.
TEST(ConfigReadings, DeepSpeedMicroBatchFromTheGlobalBatch) {
  const std::vector<GivenValue> values{{"model", "llama-3.1-8b", "model"}, {"cluster", "8xH100-80GB", "cluster"}};
  const Resolved r = resolve(test::catalog(),
                             make_request({config_path("ds-dsexamples-imagenet-fp16-z1.json")}, values, command::estimate),
                             command::estimate);
  const model::Training t = configuration(r);
  EXPECT_EQ(t.micro_batch, 32);
  EXPECT_EQ(t.grad_accum, 1);
}

// One message style: the file as named, key = value once, then what is wrong (the label of a
// file's value stands where a flag's name would, without repeating the value).
TEST(ConfigReadings, RefusalsNameTheFileKeyAndValueOnce) {
  const std::vector<GivenValue> values{{"model", "llama-3.1-8b", "model"}, {"cluster", "8xH100-80GB", "cluster"}};
  const std::string path = config_path("ds-dsexamples-sglang-nvme.json");
  try {
    (void)configuration(resolve(test::catalog(), make_request({path}, values, command::estimate), command::estimate));
    ADD_FAILURE() << "a global batch of 1 on 8 GPUs is not refused";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("ds-dsexamples-sglang-nvme.json: train_batch_size = 1 is smaller than"),
              std::string::npos)
        << e.what();
  }
}

// torchtune's Gemma 2 attention is its own matmul, soft-cap and fp32 softmax, not torch's SDPA
// (torchtune/models/gemma2/_attention.py Gemma2Attention.forward).
TEST(ConfigReadings, TorchtuneGemma2AttentionIsEager) {
  const std::vector<GivenValue> values{{"model", "gemma-2-9b", "model"}, {"cluster", "4xH100-80GB", "cluster"}};
  const Resolved r = resolve(test::catalog(),
                             make_request({config_path("torchtune-gemma2-9B-lora.yaml")}, values, command::estimate),
                             command::estimate);
  EXPECT_EQ(configuration(r).attention, Attention::eager);
}

// An `if [ ... ]` over the script's own values runs one branch, as bash does; one over what the
// script does not set (the environment, $1) is read through.
TEST(ConfigReadings, ScriptBranchesFollowTheirConditions) {
  const ConfigRead r = read_training_config_text(
      "#!/bin/bash\nckpt=\"false\"\nMODE=${1:-x}\nARGS=\"--tensor-model-parallel-size 2\"\n"
      "if [ \"${ckpt}\" = \"true\" ]; then\n  ARGS=\"$ARGS --recompute-activations\"\nelse\n  ARGS=\"$ARGS --bf16\"\nfi\n"
      "if [ $MODE == y ]; then ARGS=\"$ARGS --use-distributed-optimizer\"; fi\n"
      "torchrun --nproc_per_node 8 pretrain_gpt.py $ARGS --micro-batch-size 1\n",
      "run.sh");
  const Options o = options_of(r);
  EXPECT_EQ(o.at("checkpointing"), "none");      // the false branch skipped
  EXPECT_EQ(o.at("precision"), "bf16-mixed");    // its else taken
  EXPECT_EQ(o.at("strategy"), "zero1");          // $1 unknown: read through
}

// The launch scripts' own argument rules: llamafactory-cli's flags are LLaMA-Factory keys,
// DeepSpeed-Chat's --zero_stage/--dtype/--offload its own, and a wrapper's "-- accelerate launch"
// starts the command that trains.
TEST(ConfigReadings, LaunchersReadByTheirOwnArguments) {
  const ConfigRead lf = read_training_config_text(
      "FORCE_TORCHRUN=1 NNODES=2 llamafactory-cli train --model_name_or_path m --finetuning_type lora "
      "--lora_rank 16 --per_device_train_batch_size 2 --bf16\n",
      "lf.sh");
  EXPECT_EQ(lf.kind, "llamafactory-cli command");
  EXPECT_EQ(options_of(lf).at("lora-rank"), "16");
  EXPECT_EQ(options_of(lf).at("nodes"), "2");
  const ConfigRead yaml = read_training_config_text("llamafactory-cli train examples/x.yaml\n", "lf.sh");
  ASSERT_EQ(yaml.warnings.size(), 1u);  // said, not left silently open
  EXPECT_NE(yaml.warnings[0].find("examples/x.yaml"), std::string::npos);
  const ConfigRead chat = read_training_config_text(
      "deepspeed main.py --zero_stage 3 --offload --dtype bf16 --lora_dim 64 --only_optimize_lora\n", "run.sh");
  EXPECT_EQ(chat.kind, "DeepSpeed-Chat command");
  const Options c = options_of(chat);
  EXPECT_EQ(c.at("strategy"), "zero3");
  EXPECT_EQ(c.at("offload"), "optimizer+params");
  EXPECT_EQ(c.at("optimizer-impl"), "deepspeed-cpu");
  EXPECT_EQ(c.at("precision"), "bf16-mixed");
  EXPECT_EQ(c.at("lora-rank"), "64");
  const ConfigRead wrapped = read_training_config_text(
      "python mason.py --gpus 8 -- accelerate launch --num_processes 8 --mixed_precision bf16 --use_deepspeed "
      "train.py --per_device_train_batch_size 2\n",
      "job.sh");
  const Options w = options_of(wrapped);
  EXPECT_EQ(w.at("gpus"), "8");
  EXPECT_EQ(w.at("framework"), "deepspeed");
  EXPECT_EQ(w.at("precision"), "bf16-mixed");
  EXPECT_EQ(w.count("strategy"), 0u);  // not the Trainer's DDP: DeepSpeed's config decides
}

// open-instruct's own loop (open_instruct/finetune.py at e6c3044a): its defaults, the model loaded
// in bf16 (so without DeepSpeed the optimizer steps bf16 weights), bitsandbytes' paged AdamW under
// QLoRA, and mason.py's --num_nodes multiplying accelerate's per-node --num_processes.
TEST(ConfigReadings, OpenInstructLoopReadByItsOwnArguments) {
  const ConfigRead lora = read_training_config_text(
      "python mason.py --num_nodes 2 --gpus 8 -- accelerate launch --mixed_precision bf16 --num_processes 8 "
      "open_instruct/finetune.py --model_name_or_path m --use_qlora --max_seq_length 2048 --sync_each_batch\n",
      "job.sh");
  EXPECT_EQ(lora.kind, "open-instruct command");
  const Options q = options_of(lora);
  EXPECT_EQ(q.at("nodes"), "2");
  EXPECT_EQ(q.at("gpus"), "16");
  EXPECT_EQ(q.at("strategy"), "ddp");
  EXPECT_EQ(q.at("method"), "qlora");
  EXPECT_EQ(q.at("optimizer"), "paged-adamw");
  EXPECT_EQ(q.at("lora-rank"), "64");
  EXPECT_EQ(q.at("micro-batch"), "8");
  EXPECT_EQ(q.at("precision"), "bf16-mixed");
  ASSERT_EQ(lora.warnings.size(), 1u);  // a flag that changes memory is said, not dropped
  EXPECT_NE(lora.warnings[0].find("--sync_each_batch"), std::string::npos);
  const Options full = options_of(read_training_config_text(
      "accelerate launch --num_processes 1 open_instruct/finetune.py --model_name_or_path m\n", "run.sh"));
  EXPECT_EQ(full.at("precision"), "bf16-true");
  EXPECT_EQ(full.at("optimizer-impl"), "fused");
  EXPECT_EQ(full.at("strategy"), "single");
  // Bad values name the file, the flag and the value.
  try {
    (void)read_training_config_text(
        "python mason.py --num_nodes 0 -- accelerate launch --num_processes 8 open_instruct/finetune.py\n", "job.sh");
    ADD_FAILURE() << "mason.py --num_nodes 0 read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("job.sh: key 'mason.py --num_nodes' = \"0\": must be a positive integer"),
              std::string::npos)
        << e.what();
  }
}

// Bad values in the launch scripts' own arguments are refused naming the script, the flag and
// the value.
TEST(ConfigReadings, BadLauncherArgumentsAreRefusedByName) {
  const auto refusal = [](const std::string& script) {
    try {
      (void)read_training_config_text(script, "run.sh");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(read)");
  };
  EXPECT_NE(refusal("deepspeed main.py --zero_stage 4\n").find("run.sh: key '--zero_stage' = \"4\": must be 0, 1, 2 or 3"),
            std::string::npos);
  EXPECT_NE(refusal("deepspeed main.py --zero_stage 2 --dtype fp8\n").find("run.sh: key '--dtype' = \"fp8\""),
            std::string::npos);
  EXPECT_NE(refusal("llamafactory-cli export x.yaml\n").find("trainplan reads `llamafactory-cli train`"),
            std::string::npos);
  EXPECT_NE(refusal("NNODES=two llamafactory-cli train --stage sft\n").find("run.sh: key 'NNODES' = \"two\""),
            std::string::npos);
}

}  // namespace
}  // namespace trainplan::request
