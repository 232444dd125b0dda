// Context parallelism (--cp, --cp-comm): one degree of 1 changes nothing; the keys and values each
// exchange moves are the volumes of the papers that define them; a long sequence split N ways keeps
// what 1/N of it keeps; what no library runs is refused by name.

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "../common/catalog.hpp"
#include "../common/input_error.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/model/activations.hpp"
#include "trainplan/model/library.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/planner/communication.hpp"
#include "trainplan/planner/emit.hpp"
#include "trainplan/planner/evaluator.hpp"
#include "trainplan/planner/search.hpp"
#include "trainplan/request/catalog.hpp"

namespace trainplan::planner {
namespace {

struct Problem {
  model::Architecture a;
  model::ParameterCounts n;
  hardware::Cluster c;
};

Problem problem(const std::string& model, const std::string& cluster) {
  Problem p{test::catalog().resolve_model(model).arch, {},
            test::catalog().resolve_cluster(cluster, std::nullopt).cluster};
  p.n = model::count_parameters(p.a);
  return p;
}

// The context-parallel term of a step, or nullptr.
const CommTerm* cp_term(const StepCost& s) {
  for (std::size_t i = 0; i < s.comm_count; ++i)
    if (s.comm[i].purpose == CommPurpose::context_parallel) return &s.comm[i];
  return nullptr;
}

model::Training long_context(std::int64_t seq, int cp, CpComm kind) {
  model::Training t;
  t.strategy = Strategy::fsdp_full;
  t.seq = seq;
  t.cp = cp;
  t.cp_comm = kind;
  t.checkpointing = Checkpointing::none;
  return t;
}

// cp = 1 under every exchange is the plan without context parallelism, to the bit.
TEST(ContextParallel, DegreeOneChangesNothing) {
  for (const char* model : {"llama-3.1-8b", "qwen3-30b-a3b", "gemma-3-4b"}) {
    SCOPED_TRACE(model);
    const Problem p = problem(model, "8xH100-80GB");
    const Evaluator ev(p.a, p.n, p.c);
    model::Training base;
    base.strategy = Strategy::fsdp_full;
    base.seq = 4096;
    const StepCost ref = ev.cost(base);
    for (const CpComm kind : {CpComm::ring, CpComm::all_gather, CpComm::all_to_all}) {
      model::Training t = base;
      t.cp = 1;
      t.cp_comm = kind;
      const StepCost s = ev.cost(t);
      EXPECT_EQ(s.memory.device_total.value(), ref.memory.device_total.value());
      EXPECT_EQ(s.time.step.value(), ref.time.step.value());
      EXPECT_EQ(s.comm_count, ref.comm_count);
      EXPECT_EQ(cp_term(s), nullptr);
    }
  }
}

// Ring attention (Liu et al. 2023, arXiv:2310.01889, Sec. 3): each of the N hosts passes its key
// and value block to the next N - 1 times a pass; backward the blocks and their gradients go
// round (Megatron-Core/TE AttnFuncWithCPAndKVP2P). Llama 3.1 8B, 32k tokens over 8 H100s: a
// block is b x s/N tokens x 8 KV heads x 128 x 2 (K and V) x 2 bytes = 16 MiB, so 7 x 16 MiB
// forward and 14 x 16 MiB backward, per layer and micro-batch.
TEST(ContextParallel, RingMovesEachBlockRoundTheRanks) {
  const Problem p = problem("llama-3.1-8b", "8xH100-80GB");
  const Evaluator ev(p.a, p.n, p.c);
  const StepCost s = ev.cost(long_context(32768, 8, CpComm::ring));
  const CommTerm* t = cp_term(s);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->kind, Transfer::send_recv);
  EXPECT_EQ(t->tier, LinkTier::nvlink);
  const double block = 1.0 * 32768 / 8 * 8 * 128 * 2 * 2;
  EXPECT_DOUBLE_EQ(block, 16.0 * 1024 * 1024);
  EXPECT_NEAR(t->bytes.value(), (7 + 14) * block * 32, 1e-6 * t->bytes.value());
  // At 4k tokens a rank, the sends hide behind the attention blocks on NVLink.
  EXPECT_LT(t->exposed.value(), 0.5 * t->time.value());
}

// DeepSpeed-Ulysses (Jacobs et al. 2023, arXiv:2309.14509, Sec. 3.2): the all-to-alls of Q, K, V
// and the output move 4Nh/P elements per GPU, of which a rank sends all but its own share,
// (P - 1)/P, forward and again backward. Llama 2 7B (32 heads, all of them key/value heads: MHA),
// 32k tokens over 8: 4 x 32768 x 4096 / 8 x 7/8 x 2 bytes = 112 MiB a pass and layer.
TEST(ContextParallel, UlyssesMovesFourNhOverPPerGpu) {
  const Problem p = problem("llama-2-7b", "8xH100-80GB");
  const Evaluator ev(p.a, p.n, p.c);
  const StepCost s = ev.cost(long_context(32768, 8, CpComm::all_to_all));
  const CommTerm* t = cp_term(s);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->kind, Transfer::all_to_all);
  const double pass = 4.0 * 32768 * 4096 / 8 * 7.0 / 8.0 * 2.0;
  EXPECT_DOUBLE_EQ(pass, 112.0 * 1024 * 1024);
  EXPECT_NEAR(t->bytes.value(), 2.0 * pass * 32, 1e-6 * t->bytes.value());
  EXPECT_DOUBLE_EQ(t->exposed.value(), t->time.value());  // nothing hides an all-to-all
}

// Llama 3's all-gather (Dubey et al. 2024, arXiv:2407.21783, Sec. 3.3.2): K and V gathered
// before attention, gathered again and their gradients reduce-scattered in backward: three
// collectives of the whole sequence's K/V, each rank sending (N-1)/N of it.
TEST(ContextParallel, AllGatherMovesTheWholeSequenceThreeTimes) {
  const Problem p = problem("llama-3.1-8b", "8xH100-80GB");
  const Evaluator ev(p.a, p.n, p.c);
  const StepCost s = ev.cost(long_context(32768, 8, CpComm::all_gather));
  const CommTerm* t = cp_term(s);
  ASSERT_NE(t, nullptr);
  const double kv = 1.0 * 32768 * 8 * 128 * 2 * 2;  // the sequence's K and V, 2 bytes
  EXPECT_NEAR(t->bytes.value(), 3.0 * kv * 7.0 / 8.0 * 32, 1e-6 * t->bytes.value());
  // Full recomputation gathers once more.
  model::Training again = long_context(32768, 8, CpComm::all_gather);
  again.checkpointing = Checkpointing::full;
  EXPECT_NEAR(cp_term(ev.cost(again))->bytes.value(), 4.0 * kv * 7.0 / 8.0 * 32, 1e-6 * kv);
}

// A rank keeps what 1/N of the sequence keeps: 128k tokens over 8 is 16k tokens' activations per
// GPU (Megatron-Core: the sequence is split, every activation with it), and the attention work
// is 1/8 of the whole sequence's (the load-balanced split).
TEST(ContextParallel, LongSequenceSplitKeepsASliceOfTheActivations) {
  const Problem p = problem("llama-3.1-8b", "8xH100-80GB");
  const Evaluator ev(p.a, p.n, p.c);
  model::Training split = long_context(131072, 8, CpComm::ring);
  split.checkpointing = Checkpointing::full;
  model::Training slice = split;
  slice.cp = 1;
  slice.seq = 16384;
  const StepCost a = ev.cost(split);
  const StepCost b = ev.cost(slice);
  EXPECT_NEAR(a.memory.activations.value(), b.memory.activations.value(),
              0.01 * b.memory.activations.value());
  // Without the split the same 128k sequence needs 8x the activations: no H100 holds it.
  model::Training whole = split;
  whole.cp = 1;
  EXPECT_FALSE(ev.cost(whole, false).fits);
  EXPECT_TRUE(a.fits);
}

// The exchange's own buffers, beside the saved tensors, as each implementation's source allocates
// them (model/src/context_exchange.cpp), worked per token of the rank (T = s/N tokens) with 2-byte
// K/V and outputs and fp32 accumulators.
model::ContextExchange exchange_of(const std::string& name, const model::Training& t) {
  return model::activation_memory(test::catalog().resolve_model(name).arch, t).exchange;
}

TEST(ContextParallel, PyTorchsExchangeHoldsTheGatheredKeysAndFp32Accumulators) {
  // Llama 3.1 8B under torchtitan at 256k tokens over 8 ranks: T = 32768; per token Q = O = 32 x
  // 128 = 4096 elements, K and V 8 x (128 + 128) = 2048.
  model::Training t = long_context(262144, 8, CpComm::all_gather);
  t.library = Library::torchtitan;
  t.checkpointing = Checkpointing::full;
  const double T = 32768.0;
  // all-gather: every rank's K/V (8 x 2 x 2048) and the fp32 merge of the output (4 x 4 x 4096)
  // forward; the K/V again and the fp32 gradients (4 x (3 x 2048 + 2 x 4096)) backward.
  model::ContextExchange x = exchange_of("llama-3.1-8b", t);
  EXPECT_DOUBLE_EQ(x.forward.value(), (32768.0 + 65536.0) * T);
  EXPECT_DOUBLE_EQ(x.backward.value(), (32768.0 + 57344.0) * T);
  // The ring holds three chunks of K/V (in use, sent on, arriving) instead of eight.
  t.cp_comm = CpComm::ring;
  x = exchange_of("llama-3.1-8b", t);
  EXPECT_DOUBLE_EQ(x.forward.value(), (12288.0 + 65536.0) * T);
  EXPECT_DOUBLE_EQ(x.backward.value(), (12288.0 + 57344.0) * T);
  // torchtitan before 0.1.0 copied K/V to all 32 heads (repeat_kv): 8192 elements a token.
  t.cp_comm = CpComm::all_gather;
  t.library_version = 2;  // 0.0.2
  x = exchange_of("llama-3.1-8b", t);
  EXPECT_DOUBLE_EQ(x.forward.value(), (131072.0 + 65536.0) * T);
  EXPECT_DOUBLE_EQ(x.backward.value(), (131072.0 + 131072.0) * T);
  // Ulysses' all-to-alls: two copies each of q, k, v and the output in flight (2 x 2 x 10240).
  model::Training u = long_context(65536, 8, CpComm::all_to_all);
  x = exchange_of("llama-3.1-8b", u);
  EXPECT_DOUBLE_EQ(x.backward.value(), 40960.0 * 8192.0);
  // No context parallelism, no exchange.
  EXPECT_EQ(exchange_of("llama-3.1-8b", long_context(8192, 1, CpComm::all_gather)).backward.value(), 0.0);
}

TEST(ContextParallel, TransformerEnginesExchangeAsItsSourceAllocates) {
  // Llama 3.1 70B under Megatron-Core, TP 8, CP 2, 8k tokens: T = 4096; per token and GPU 8 query
  // heads (Q = O = 1024), one K/V head (KV = 256), 8 fp32 log-sum-exp rows.
  model::Training t = long_context(8192, 2, CpComm::ring);
  t.framework = Framework::megatron;
  t.library = Library::megatron;
  t.strategy = Strategy::ddp;
  t.tp = 8;
  t.sequence_parallel = true;
  const double T = 4096.0;
  // p2p: forward keeps both ring buffers (one beyond the saved K/V: 256) and both steps' outputs
  // and log-sum-exps (2 x 1024, 2 x 8 fp32); backward two [kv, dkv] pairs (4 x 256), the query
  // gradient buffer (1024) and half the log-sum-exp in fp32.
  model::ContextExchange x = exchange_of("llama-3.1-70b", t);
  EXPECT_DOUBLE_EQ(x.forward.value(), (2.0 * (256 + 2048) + 64.0) * T);
  EXPECT_DOUBLE_EQ(x.backward.value(), (2.0 * (1024 + 1024) + 16.0) * T);
  // all_gather, G = 256 (one gathered K or V): forward max(3G, 2G + 2 O) less the output, backward
  // (7 + 1/2) G + 2 Q less the input gradients (Q + KV).
  t.cp_comm = CpComm::all_gather;
  x = exchange_of("llama-3.1-70b", t);
  EXPECT_DOUBLE_EQ(x.forward.value(), 2.0 * (2560.0 - 1024.0) * T);
  EXPECT_DOUBLE_EQ(x.backward.value(), 2.0 * (1920.0 + 2048.0 - 1280.0) * T);
  // a2a needs the K/V heads split: TP 4, 16 query and 2 K/V heads per GPU (Q = 2048, KV = 512):
  // forward max(2 Q, Q + 1.5 KV), backward Q + max(3 Q + 1.5 KV, 2 Q + 2.5 KV).
  t.cp_comm = CpComm::all_to_all;
  t.tp = 4;
  x = exchange_of("llama-3.1-70b", t);
  EXPECT_DOUBLE_EQ(x.forward.value(), 2.0 * 4096.0 * T);
  EXPECT_DOUBLE_EQ(x.backward.value(), 2.0 * (2048.0 + 6912.0) * T);
}

// Where a block's backward is the peak (a fused loss leaves a small head), the all-gather's
// eight K/V chunks against the ring's three are the whole difference: 5 x 2 bytes x T x 32 heads x
// 256 for Llama 2 7B (MHA) at 128k tokens over 8 ranks, T = 16384.
TEST(ContextParallel, TheExchangeIsPartOfTheBackwardPeak) {
  const Problem p = problem("llama-2-7b", "8xH100-80GB");
  const Evaluator ev(p.a, p.n, p.c);
  model::Training ring = long_context(131072, 8, CpComm::ring);
  ring.library = Library::torchtitan;
  ring.compile = true;
  ring.checkpointing = Checkpointing::full;
  model::Training gather = ring;
  gather.cp_comm = CpComm::all_gather;
  const double difference = ev.cost(gather).memory.activations.value() - ev.cost(ring).memory.activations.value();
  EXPECT_DOUBLE_EQ(difference, 5.0 * 2.0 * 16384.0 * 32.0 * 256.0);
}

// What no library runs, refused with the option's name.
TEST(ContextParallel, RefusesWhatNoLibraryRuns) {
  const Problem p = problem("llama-3.1-8b", "8xH100-80GB");
  const Evaluator ev(p.a, p.n, p.c);
  auto error_of = [&](const model::Training& t) { return test::input_error_of([&] { (void)ev.cost(t); }); };
  model::Training odd = long_context(4100, 4, CpComm::ring);  // 4100 is not a multiple of 2 x 4
  EXPECT_NE(error_of(odd).find("not divisible by 2 x cp = 8"), std::string::npos) << error_of(odd);
  model::Training heads = long_context(32768, 16, CpComm::all_to_all);  // 8 KV heads
  EXPECT_NE(error_of(heads).find("must divide the 32 query and 8 key/value heads"), std::string::npos)
      << error_of(heads);
  model::Training eager = long_context(32768, 8, CpComm::ring);
  eager.attention = Attention::eager;
  EXPECT_NE(error_of(eager).find("fused attention kernel"), std::string::npos) << error_of(eager);
  model::Training wide = long_context(32768, 16, CpComm::ring);  // 16 ranks on 8 GPUs
  EXPECT_NE(error_of(wide).find("context x pipeline parallel degree 1x16x1"), std::string::npos)
      << error_of(wide);
}

// The search tries context parallelism for long sequences: at 128k tokens Llama 3.1 8B fits 8
// H100s only split along the sequence, and the plan says so.
TEST(ContextParallel, PlanSplitsALongSequence) {
  const Problem p = problem("llama-3.1-8b", "8xH100-80GB");
  SearchRequest req;
  req.base.seq = 131072;
  req.top = 3;
  const PlanResult r = search(p.a, p.n, p.c, req);
  ASSERT_FALSE(r.plans.empty());
  EXPECT_GT(r.plans.front().training.cp * r.plans.front().training.tp, 1);
  bool split = false;
  for (const Estimate& e : r.plans) split = split || e.training.cp > 1;
  EXPECT_TRUE(split);
}

// Megatron-LM's command carries the split (--context-parallel-size, --cp-comm-type); the formats
// whose launchers cannot split a sequence refuse it by name.
TEST(ContextParallel, OnlyMegatronsCommandSplitsSequences) {
  const Problem p = problem("llama-3.2-1b", "8xH100-80GB");
  const Evaluator ev(p.a, p.n, p.c);
  model::Training t = long_context(32768, 4, CpComm::all_gather);
  t.strategy = Strategy::ddp;
  t.checkpointing = Checkpointing::full;
  t.framework = Framework::megatron;
  t.library = Library::megatron;
  const Estimate e = ev.estimate(t);
  const Emitted run = emit(EmitFormat::torchrun, e, p.c, p.a);
  EXPECT_NE(run.text.find("--context-parallel-size 4 --cp-comm-type allgather"), std::string::npos) << run.text;
  model::Training hf = long_context(32768, 4, CpComm::ring);
  std::string why;
  try {
    (void)emit(EmitFormat::deepspeed, ev.estimate(hf), p.c, p.a);
  } catch (const InputError& x) {
    why = x.what();
  }
  EXPECT_NE(why.find("splits sequences over ranks"), std::string::npos) << why;
}

}  // namespace
}  // namespace trainplan::planner
