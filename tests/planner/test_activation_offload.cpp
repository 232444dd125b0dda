// Megatron-Core's CPU offloading of activations (--offload-activations N; TransformerConfig
// cpu_offloading with cpu_offloading_num_layers, Transformer Engine's double-buffered offload
// handler): N layers' saved activations wait in host memory, one layer's is on the GPU in transit,
// each copy goes behind the next layer's compute; Megatron-Core's own limits refused by name.

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "../common/catalog.hpp"
#include "../common/megatron_training.hpp"
#include "../common/input_error.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/model/activations.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/planner/evaluator.hpp"

namespace trainplan::planner {
namespace {

model::Training megatron_run(int offloaded) {
  model::Training t = test::megatron_tp2();
  t.seq = 8192;
  t.checkpointing = Checkpointing::none;
  t.offload_activation_layers = offloaded;
  return t;
}

// Llama 3.1 8B (32 layers): offloading 20 keeps 12 layers' activations and one in transit on the
// GPU, 20 on the host; the layer's own size is unchanged.
TEST(ActivationOffload, OffloadedLayersWaitOnTheHostOneInTransit) {
  const model::Architecture a = test::catalog().resolve_model("llama-3.1-8b").arch;
  const model::ActivationMemory all = model::activation_memory(a, megatron_run(0));
  const model::ActivationMemory off = model::activation_memory(a, megatron_run(20));
  EXPECT_DOUBLE_EQ(off.per_block.value(), all.per_block.value());
  EXPECT_DOUBLE_EQ(all.blocks.value(), 32.0 * all.per_block.value());
  EXPECT_DOUBLE_EQ(off.blocks.value(), (12.0 + 1.0) * all.per_block.value());
  EXPECT_DOUBLE_EQ(off.host.value(), 20.0 * all.per_block.value());
}

// Each offloaded layer's activations cross the host link twice a micro-batch (out after its
// forward, back before its backward), and the step pays only what the layers' compute does not
// hide: on an H100's PCIe (63 GB/s) a layer of 16k tokens' activations outlasts its forward.
TEST(ActivationOffload, CopiesCrossTheHostLinkBehindTheLayers) {
  const model::Architecture a = test::catalog().resolve_model("llama-3.1-8b").arch;
  const hardware::Cluster c = test::catalog().resolve_cluster("8xH100-80GB", std::nullopt).cluster;
  const Evaluator ev(a, model::count_parameters(a), c);
  model::Training t = megatron_run(20);
  t.micro_batch = 2;
  const Estimate e = ev.estimate(t);
  const double layer = e.memory.activation_detail.per_block.value();
  double d2h = 0.0;
  for (const CommunicationItem& item : e.communication)
    if (item.collective == "d2h") d2h += item.bytes.value();
  EXPECT_DOUBLE_EQ(d2h, 20.0 * layer);
  EXPECT_GT(e.time.offload.value(), 0.0);
  EXPECT_LT(ev.estimate(megatron_run(0)).time.step.value(), e.time.step.value());
}

TEST(ActivationOffload, RefusesWhatMegatronCoreRefuses) {
  const model::Architecture a = test::catalog().resolve_model("llama-3.1-8b").arch;
  const hardware::Cluster c = test::catalog().resolve_cluster("8xH100-80GB", std::nullopt).cluster;
  const Evaluator ev(a, model::count_parameters(a), c);
  auto error_of = [&](const model::Training& t) { return test::input_error_of([&] { (void)ev.cost(t); }); };
  model::Training every = megatron_run(32);
  EXPECT_NE(error_of(every).find("fewer layers than the model's 32"), std::string::npos) << error_of(every);
  model::Training piped = megatron_run(4);
  piped.pp = 2;
  EXPECT_NE(error_of(piped).find("pipeline parallelism"), std::string::npos) << error_of(piped);
  model::Training recomputed = megatron_run(4);
  recomputed.checkpointing = Checkpointing::full;
  EXPECT_NE(error_of(recomputed).find("recomputation"), std::string::npos) << error_of(recomputed);
  model::Training hf = megatron_run(4);
  hf.framework = Framework::pytorch;
  hf.library = Library::hf_trainer;
  hf.strategy = Strategy::fsdp_full;
  EXPECT_NE(error_of(hf).find("framework megatron"), std::string::npos) << error_of(hf);
}

}  // namespace
}  // namespace trainplan::planner
