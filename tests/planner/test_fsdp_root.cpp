// FSDP's root unit forming its gradient, worked by hand from PyTorch's sources: FSDP1 hands the
// modules views of each unit's flat parameter, made by one split_with_sizes
// (torch/distributed/fsdp/_flat_param.py _get_unflat_views_aligned/_unaligned), whose backward waits
// for every view's gradient and concatenates them into the flat gradient; FSDP2 copies a unit's
// gradients into the reduce-scatter input (_fully_shard/_fsdp_collectives.py foreach_reduce,
// chunk_cat). The root unit (embedding, final norm, head) forms the head's gradient first and the
// embedding's last, so:
//   - the head's gradient is alive through backward beside the gradients accumulated so far;
//   - at the end of backward the gathered root, its gradients and their flat copy are alive at once.
// Llama-3.1-8B: root = 128256 x 4096 (embedding) + 4096 (final norm) + 128256 x 4096 (untied head)
// = 1,050,677,248 parameters. Llama-3.2-1B ties its head to the embedding: its root is
// 128256 x 2048 + 2048, and the tied matrix is the head's gradient.
#include <gtest/gtest.h>

#include "../common/catalog.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/planner/evaluator.hpp"

namespace trainplan::planner {
namespace {

constexpr double kRoot8b = 1'050'677'248.0;
constexpr double kHead8b = 128256.0 * 4096.0;
constexpr double kHead1b = 128256.0 * 2048.0;

struct Run {
  std::string model = "llama-3.1-8b";
  Library library = Library::hf_trainer;
  int fsdp_version = 1;
  std::int64_t seq = 256;
  std::int64_t micro_batch = 1;
  int grad_accum = 1;
  Method method = Method::full;
};

MemoryBreakdown memory_of(const Run& r) {
  const model::Architecture a = test::catalog().resolve_model(r.model).arch;
  const model::ParameterCounts n = model::count_parameters(a);
  const hardware::Cluster c = test::catalog().resolve_cluster("8xH100-80GB", std::nullopt).cluster;
  model::Training t;
  t.library = r.library;
  t.method = r.method;
  if (r.method == Method::lora) {
    t.lora.rank = 16;
    t.lora.targets = {"q", "v"};
  }
  t.strategy = Strategy::fsdp_full;
  t.precision = Precision::bf16_mixed;  // FSDP's MixedPrecision(param_dtype=bf16): 2-byte gathers and gradients
  t.fsdp_version = r.fsdp_version;
  t.seq = r.seq;
  t.micro_batch = r.micro_batch;
  t.grad_accum = r.grad_accum;
  return Evaluator(a, n, c).estimate(t).memory;
}

// Short sequences: little activation memory, so the root's end of backward is the peak. Beside the
// sharded gradients reduced so far: the root gathered (2 bytes), its views' gradients (2 bytes) and
// the flat gradient they are concatenated into (2 bytes).
TEST(FsdpRoot, Fsdp1EndsBackwardWithTheRootGatheredItsGradientsAndTheirConcatenation) {
  const MemoryBreakdown m = memory_of({});
  ASSERT_EQ(m.peak_phase, "end of backward");
  EXPECT_DOUBLE_EQ(m.activations.value(), 0.0);
  EXPECT_DOUBLE_EQ(m.gradients.value() - m.states.gradients.value(), 2.0 * kRoot8b);
  EXPECT_DOUBLE_EQ(m.buffers.value(), (2.0 + 2.0) * kRoot8b);
}

// torchtitan's FSDP2 reduces in fp32: the reduce-scatter input is 4 bytes a gradient.
TEST(FsdpRoot, Fsdp2CopiesTheRootsGradientsIntoItsReduceDtype) {
  const MemoryBreakdown m = memory_of({.library = Library::torchtitan, .fsdp_version = 2});
  ASSERT_EQ(m.peak_phase, "end of backward");
  EXPECT_DOUBLE_EQ(m.gradients.value() - m.states.gradients.value(), 2.0 * kRoot8b);
  EXPECT_DOUBLE_EQ(m.buffers.value(), (2.0 + 4.0) * kRoot8b);
}

// Long sequences under accumulation (the Trainer's no_sync: every gradient unsharded, 2 bytes):
// the start of backward peaks, and the head's fresh gradient sits beside the accumulated ones.
TEST(FsdpRoot, HeadGradientIsHeldThroughBackwardBesideAccumulatedGradients) {
  const MemoryBreakdown m = memory_of({.seq = 8192, .micro_batch = 2, .grad_accum = 4});
  ASSERT_EQ(m.peak_phase, "backward");
  EXPECT_DOUBLE_EQ(m.gradients.value() - m.states.gradients.value(), 2.0 * kHead8b);
}

// A tied head is the embedding's matrix: its gradient from the head waits for the embedding's.
TEST(FsdpRoot, TiedHeadHoldsTheEmbeddingsGradient) {
  const MemoryBreakdown m = memory_of({.model = "llama-3.2-1b", .seq = 8192, .micro_batch = 4, .grad_accum = 4});
  ASSERT_EQ(m.peak_phase, "backward");
  EXPECT_DOUBLE_EQ(m.gradients.value() - m.states.gradients.value(), 2.0 * kHead1b);
}

// Adapters leave the root frozen: no gradient of it is held or formed.
TEST(FsdpRoot, AdaptersLeaveTheRootAlone) {
  const MemoryBreakdown m = memory_of({.seq = 8192, .micro_batch = 2, .grad_accum = 4, .method = Method::lora});
  EXPECT_NE(m.peak_phase, "end of backward");
  EXPECT_DOUBLE_EQ(m.gradients.value(), m.states.gradients.value());
}

}  // namespace
}  // namespace trainplan::planner
