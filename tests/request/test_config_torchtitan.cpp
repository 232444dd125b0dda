// torchtitan job configs (TOML) beyond the real files of readings.json: the TOML forms such files
// use, torchtitan's defaults where a file is silent (torchtitan/config/job_config.py at 238fa995),
// what is not modelled left to the user by name, and TOML errors naming the line.

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "config_fixture.hpp"
#include "trainplan/request/request_files.hpp"

namespace trainplan::request {
namespace {

using namespace config_test;

ConfigRead toml(const std::string& text) { return read_training_config_text(text, "job.toml"); }

TEST(ConfigTorchtitan, TomlForms) {
  // Dotted keys, a literal string, underscores in an integer, an array over lines with a trailing
  // comma and comments, an inline table, comments after values.
  const ConfigRead r = toml(
      "# a job\n"
      "[model]\nname = 'llama3'  # literal\nflavor = \"8B\"\nconverters = [\n  \"float8\", # on\n]\n"
      "[training]\nlocal_batch_size = 4\nseq_len = 4_096\nmixed_precision_param = \"float32\"\n"
      "[parallelism]\ndata_parallel_shard_degree = 8\ncontext_parallel_degree = 2\n"
      "context_parallel_rotate_method = \"alltoall\"\n"
      "activation_checkpoint.mode = \"none\"\n"
      "[quantize.linear]\nfloat8 = {recipe_name = \"rowwise\", enable_fsdp_float8_all_gather = false}\n");
  EXPECT_EQ(r.kind, "torchtitan config");
  EXPECT_EQ(option(r, "model"), "llama-3.1-8b");
  EXPECT_EQ(option(r, "micro-batch"), "4");
  EXPECT_EQ(option(r, "seq"), "4096");
  EXPECT_EQ(option(r, "precision"), "fp32");
  EXPECT_EQ(option(r, "strategy"), "fsdp-full");
  EXPECT_EQ(option(r, "cp"), "2");
  EXPECT_EQ(option(r, "cp-comm"), "ring");  // torch's alltoall rotation passes K/V round the ranks
  EXPECT_EQ(option(r, "fp8"), "torchao-rowwise");
  EXPECT_EQ(option(r, "fp8-param-gather"), "false");
  // A dotted key inside [parallelism] is parallelism's own, not the top-level table's.
  EXPECT_NE(option(r, "checkpointing"), "none");
}

TEST(ConfigTorchtitan, DefaultsAndPipelineMicroBatches) {
  // torchtitan's defaults: local batch 8, seq 2048, FSDP2 over every rank, activation
  // checkpointing of every 2nd block (selective, selective_ac_option "2").
  const ConfigRead d = toml("[training]\nsteps = 10\n");
  EXPECT_EQ(option(d, "micro-batch"), "8");
  EXPECT_EQ(option(d, "seq"), "2048");
  EXPECT_EQ(option(d, "strategy"), "fsdp-full");
  EXPECT_EQ(option(d, "offload"), "none");  // training.enable_cpu_offload false
  EXPECT_EQ(option(toml("[training]\nenable_cpu_offload = true\n"), "offload"), "optimizer+params");
  EXPECT_TRUE(d.unmodelled.empty());
  EXPECT_EQ(option(d, "checkpointing"), "full");
  EXPECT_EQ(option(d, "checkpoint-every"), "2");
  // Under pipeline parallelism the local batch is split into micro-batches of
  // pipeline_parallel_microbatch_size, which accumulate.
  const ConfigRead pp = toml(
      "[training]\nlocal_batch_size = 16\n[parallelism]\npipeline_parallel_degree = 4\n"
      "pipeline_parallel_microbatch_size = 2\ndata_parallel_replicate_degree = 2\n"
      "[activation_checkpoint]\nmode = \"full\"\n");
  EXPECT_EQ(option(pp, "micro-batch"), "2");
  EXPECT_EQ(option(pp, "grad-accum"), "8");
  EXPECT_EQ(option(pp, "strategy"), "fsdp-hybrid");
  // "default" keeps the gathered parameters from forward to backward under pipeline parallelism.
  EXPECT_EQ(option(toml("[parallelism]\npipeline_parallel_degree = 2\n[activation_checkpoint]\nmode = \"full\"\n"),
                   "strategy"),
            "fsdp-grad-op");
  // A global batch leaves the accumulation to the data-parallel degree, which the cluster decides.
  const ConfigRead g = toml("[training]\nlocal_batch_size = 2\nglobal_batch_size = 64\n"
                            "[activation_checkpoint]\nmode = \"full\"\n");
  EXPECT_EQ(option(g, "global-batch"), "64");
  EXPECT_NE(std::find(g.unresolved_options.begin(), g.unresolved_options.end(), "grad-accum"),
            g.unresolved_options.end());
}

// Layer-selective checkpointing as _apply_layer_sac reads selective_ac_option: int(option), 0 or 1
// every block, N one block in N; "op" the per-op policy; anything else torchtitan refuses.
TEST(ConfigTorchtitan, LayerSelectiveCheckpointing) {
  auto ac = [](const std::string& option) {
    return toml("[training]\nsteps = 1\n[activation_checkpoint]\nmode = \"selective\"\nselective_ac_option = \"" +
                option + "\"\n");
  };
  EXPECT_EQ(option(ac("3"), "checkpointing"), "full");
  EXPECT_EQ(option(ac("3"), "checkpoint-every"), "3");
  for (const std::string every_block : {"0", "1"}) {
    EXPECT_EQ(option(ac(every_block), "checkpointing"), "full") << every_block;
    EXPECT_EQ(option(ac(every_block), "checkpoint-every"), "") << every_block;
  }
  EXPECT_EQ(option(ac("op"), "checkpointing"), "selective-op");
  for (const std::string bad : {"two", "-2", "2.5", "", "99999"}) {
    const std::string m = refusal([&] { return ac(bad); });
    EXPECT_NE(m.find("activation_checkpoint.selective_ac_option"), std::string::npos) << bad << ": " << m;
  }
}

TEST(ConfigTorchtitan, TomlErrorsNameTheLine) {
  const std::vector<std::pair<std::string, std::string>> bad{
      {"[training]\nlocal_batch_size = 2\nlocal_batch_size = 4\n", "line 3: key 'local_batch_size' is given twice"},
      {"[training]\n[[layers]]\nx = 1\n", "line 2: arrays of tables"},
      {"[training]\nseq_len = 12abc\n", "line 2: '12abc' is not a TOML value"},
      {"[training]\ndataset = \"\"\"c4\"\"\"\n", "line 2: multi-line strings are not read"},
      {"[parallelism]\ntensor_parallel_degree = [1, 2\n", "an array is not closed"},
      {"[training]\nlocal_batch_size = 2 3\n", "line 2: unexpected '3' after a value"},
      {"[training]\nlocal_batch_size = \"two\"\n", "training.local_batch_size"},
  };
  for (const auto& [text, part] : bad) {
    SCOPED_TRACE(text);
    try {
      (void)toml(text);
      ADD_FAILURE() << "accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("job.toml"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace trainplan::request
