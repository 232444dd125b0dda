// Communication volumes against the published closed forms, bus factors against nccl-tests, and
// the placement of groups on the cluster.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../common/catalog.hpp"
#include "trainplan/hardware/collective.hpp"
#include "trainplan/request/catalog.hpp"
#include "trainplan/model/block_ops.hpp"
#include "trainplan/planner/communication.hpp"
#include "trainplan/planner/evaluator.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/hardware/profile.hpp"

namespace trainplan::planner {
namespace {

using hardware::Collective;

struct BusFactorRow {
  Collective c;
  int n;
  double expected;
  const char* source;
};

// NVIDIA/nccl-tests doc/PERFORMANCE.md: all_reduce 2(n-1)/n; reduce_scatter, all_gather and
// alltoall (n-1)/n; broadcast and reduce 1.
TEST(Communication, BytesSentIsTheNcclTestsBusFactorTimesTheSize) {
  const std::vector<BusFactorRow> rows{
      {Collective::all_reduce, 8, 2.0 * 7.0 / 8.0, "nccl-tests PERFORMANCE.md all_reduce"},
      {Collective::all_reduce, 2, 1.0, "nccl-tests PERFORMANCE.md all_reduce"},
      {Collective::all_gather, 8, 7.0 / 8.0, "nccl-tests PERFORMANCE.md all_gather"},
      {Collective::reduce_scatter, 16, 15.0 / 16.0, "nccl-tests PERFORMANCE.md reduce_scatter"},
      {Collective::all_to_all, 4, 3.0 / 4.0, "nccl-tests PERFORMANCE.md alltoall"},
      {Collective::broadcast, 8, 1.0, "nccl-tests PERFORMANCE.md broadcast"},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(std::string(to_string(r.c)) + " n=" + std::to_string(r.n) + " (" + r.source + ")");
    EXPECT_DOUBLE_EQ(hardware::bus_factor(r.c, r.n), r.expected);
    EXPECT_DOUBLE_EQ(bytes_sent(r.c, r.n, Bytes(1e9)).value(), r.expected * 1e9);
  }
  EXPECT_EQ(bytes_sent(Collective::all_reduce, 1, Bytes(1e9)).value(), 0.0);
}

struct VolumeRow {
  const char* name;
  Strategy s;
  std::int64_t k;     // micro-batches per step
  double all_reduce;  // in units of (n-1)/n psi (x bytes per element)
  double reduce_scatter;
  double all_gather;
  const char* source;
};

// Rajbhandari et al. 2020 (ZeRO, arXiv:1910.02054) Sec. 7.1-7.2: DDP 2 psi, ZeRO-1/2 2 psi,
// ZeRO-3 3 psi; with accumulation FSDP/ZeRO-3 gather twice and reduce-scatter once per micro-batch
// (3k psi for k micro-batches: the parameters are resharded after each one).
TEST(Communication, DataParallelVolumesEqualThePublishedFormulas) {
  const double psi = 7e9;
  const int n = 16;
  const double r = (n - 1.0) / n;
  const double g = 2.0;
  const std::vector<VolumeRow> rows{
      {"DDP", Strategy::ddp, 1, 2.0, 0.0, 0.0, "ZeRO Sec. 7.1: 2 psi"},
      {"DDP, 4 micro-batches (no_sync)", Strategy::ddp, 4, 2.0, 0.0, 0.0,
       "DDP no_sync: once per step"},
      {"ZeRO-1", Strategy::zero1, 1, 0.0, 1.0, 1.0, "ZeRO Sec. 7.2.1: 2 psi"},
      {"ZeRO-2", Strategy::zero2, 1, 0.0, 1.0, 1.0, "ZeRO Sec. 7.2.1: 2 psi"},
      {"ZeRO-3", Strategy::zero3, 1, 0.0, 1.0, 2.0, "ZeRO Sec. 7.2.2: 3 psi"},
      {"FSDP full-shard", Strategy::fsdp_full, 1, 0.0, 1.0, 2.0, "ZeRO Sec. 7.2.2: 3 psi"},
      {"FSDP full-shard, 4 micro-batches", Strategy::fsdp_full, 4, 0.0, 4.0, 8.0,
       "3 psi per micro-batch: 3k psi"},
      {"FSDP grad-op, 4 micro-batches", Strategy::fsdp_grad_op, 4, 0.0, 4.0, 4.0,
       "SHARD_GRAD_OP: 2k psi"},
      {"ZeRO-2, 4 micro-batches", Strategy::zero2, 4, 0.0, 4.0, 1.0,
       "reduce per micro-batch, gather per step"},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(std::string(row.name) + " (" + row.source + ")");
    const DataParallelVolume v =
        data_parallel_volume(row.s, Bytes(psi * g), Bytes(psi * g), n, row.k);
    EXPECT_DOUBLE_EQ(v.all_reduce.value(), row.all_reduce * r * psi * g);
    EXPECT_DOUBLE_EQ(v.reduce_scatter.value(), row.reduce_scatter * r * psi * g);
    EXPECT_DOUBLE_EQ(v.all_gather.value(), row.all_gather * r * psi * g);
  }
  // The headline ratio: ZeRO-3 moves 1.5x what DDP does.
  const double ddp =
      data_parallel_volume(Strategy::ddp, Bytes(psi), Bytes(psi), n, 1).total().value();
  const double z3 =
      data_parallel_volume(Strategy::zero3, Bytes(psi), Bytes(psi), n, 1).total().value();
  EXPECT_DOUBLE_EQ(z3 / ddp, 1.5);
  EXPECT_EQ(data_parallel_volume(Strategy::ddp, Bytes(psi), Bytes(psi), 1, 1).total().value(), 0.0);
}

// ZeRO++ (Wang et al. 2023, arXiv:2306.10209, Sec. 3): int8 forward gather (half of 16-bit),
// backward gather inside the node, int4 gradients (a quarter).
TEST(Communication, ZeroPlusPlusQuantizesTheGathersAndGradients) {
  const double psi = 1e9;
  const ZeroPlusPlusVolume v = zero_plus_plus_volume(psi, 32, 8, 2.0, 1);
  EXPECT_DOUBLE_EQ(v.forward_gather.value(), 31.0 / 32.0 * psi * 1.0);
  EXPECT_DOUBLE_EQ(v.backward_gather.value(), 7.0 / 8.0 * psi * 2.0);
  EXPECT_DOUBLE_EQ(v.gradient_all_to_all.value(), 31.0 / 32.0 * psi * 0.5);
}

// Korthikanti et al. 2022 Sec. 4.2.2 / Shoeybi et al. 2019 Sec. 3 (Fig. 3: f and g around the
// attention and the MLP): 4 all-reduces per GPT layer per micro-batch (2 forward, 2 backward), 6
// with full recomputation; sequence parallelism turns each into an all-gather and a reduce-scatter
// of the same bytes. The pairs come from the layer's op list: 2 in a GPT block under both
// accountings, 3 in a T5 decoder block (its cross-attention is a third sublayer).
TEST(Communication, TensorParallelFourAllReducesPerLayer) {
  model::Training tr;
  tr.tp = 2;
  const model::Architecture llama = test::catalog().resolve_model("llama-2-7b").arch;
  EXPECT_EQ(model::block_ops(llama, tr, model::Stack::decoder).collectives().tensor_parallel, 2.0);
  model::Training megatron = tr;
  megatron.framework = Framework::megatron;
  EXPECT_EQ(model::block_ops(llama, megatron, model::Stack::decoder).collectives().tensor_parallel, 2.0);
  const model::Architecture t5 = test::catalog().resolve_model("t5-3b").arch;
  EXPECT_EQ(model::block_ops(t5, tr, model::Stack::encoder).collectives().tensor_parallel, 2.0);
  EXPECT_EQ(model::block_ops(t5, tr, model::Stack::decoder).collectives().tensor_parallel, 3.0);
  const auto plain = tensor_parallel_collectives(2.0, false, Checkpointing::none);
  EXPECT_EQ(plain.all_reduce, 4);
  EXPECT_EQ(plain.all_gather + plain.reduce_scatter, 0);
  EXPECT_EQ(tensor_parallel_collectives(2.0, false, Checkpointing::selective).all_reduce, 4);
  EXPECT_EQ(tensor_parallel_collectives(2.0, false, Checkpointing::full).all_reduce, 6);
  const auto sp = tensor_parallel_collectives(2.0, true, Checkpointing::none);
  EXPECT_EQ(sp.all_reduce, 0);
  EXPECT_EQ(sp.all_gather, 4);
  EXPECT_EQ(sp.reduce_scatter, 4);
  // Worked example (Korthikanti et al. 2022, Sec. 4.2.2's f/g operators): GPT-3, b = 1, s = 2048, h = 12288, t = 8, bf16: X = 50.3
  // MB, 4 all-reduces of 2 (t-1)/t X = 352 MB per GPU per layer per micro-batch.
  const Bytes x = tensor_parallel_message(1, 2048, 12288, 2.0);
  EXPECT_DOUBLE_EQ(x.value(), 2048.0 * 12288.0 * 2.0);
  const Bytes per_layer =
      tensor_parallel_bytes_per_layer(1, 2048, 12288, 8, 2.0, 2.0, false, Checkpointing::none);
  EXPECT_DOUBLE_EQ(per_layer.value(), 4.0 * 2.0 * 7.0 / 8.0 * x.value());
  EXPECT_NEAR(per_layer.value() / 1e6, 352.0, 1.0);
  EXPECT_DOUBLE_EQ(
      tensor_parallel_bytes_per_layer(1, 2048, 12288, 8, 2.0, 2.0, true, Checkpointing::none).value(),
      per_layer.value());
}

TEST(Communication, PipelineAndExpertMessages) {
  // b s h c, split over t with Megatron's scatter-gather (Narayanan et al. 2021 Sec. 4.1).
  EXPECT_DOUBLE_EQ(pipeline_message(1, 2048, 12288, 2.0, 8, false).value(), 2048.0 * 12288.0 * 2.0);
  EXPECT_DOUBLE_EQ(pipeline_message(1, 2048, 12288, 2.0, 8, true).value(),
                   2048.0 * 12288.0 * 2.0 / 8.0);
  // GShard: top-k copies of every token's hidden state, 4 all-to-alls per MoE layer (dispatch and
  // combine, forward and backward): 2 a pass in the op list of both accountings; none in a dense one.
  EXPECT_DOUBLE_EQ(moe_all_to_all_message(2, 4, 4096, 4096, 2.0).value(),
                   2.0 * 4.0 * 4096.0 * 4096.0 * 2.0);
  model::Training tr;
  const model::Architecture mixtral = test::catalog().resolve_model("mixtral-8x7b").arch;
  EXPECT_EQ(model::block_ops(mixtral, tr, model::Stack::decoder).collectives().expert_all_to_all, 2.0);
  tr.framework = Framework::megatron;
  EXPECT_EQ(model::block_ops(mixtral, tr, model::Stack::decoder).collectives().expert_all_to_all, 2.0);
  EXPECT_EQ(model::block_ops(test::catalog().resolve_model("llama-2-7b").arch, tr, model::Stack::decoder).collectives().expert_all_to_all,
            0.0);
}

struct BubbleRow {
  int p, v;
  std::int64_t m;
  double expected;
};

// Narayanan et al. 2021 Sec. 2.2: (p - 1)/m for 1F1B, (p - 1)/(v m) interleaved.
TEST(Communication, PipelineBubbleFraction) {
  const std::vector<BubbleRow> rows{{1, 1, 8, 0.0},
                                    {8, 1, 64, 7.0 / 64.0},
                                    {8, 3, 64, 7.0 / 192.0},
                                    {35, 3, 280, 34.0 / 840.0},
                                    {4, 2, 4, 3.0 / 8.0}};
  for (const auto& r : rows) {
    SCOPED_TRACE("p=" + std::to_string(r.p) + " v=" + std::to_string(r.v) +
                 " m=" + std::to_string(r.m));
    EXPECT_DOUBLE_EQ(bubble_fraction(r.p, r.v, r.m), r.expected);
  }
}

Layout layout(int nodes, int gpn, int tp, int pp, int shard = 0) {
  Layout l;
  l.nodes = nodes;
  l.gpus_per_node = gpn;
  l.gpus_per_domain = gpn;
  l.world = nodes * gpn;
  l.tp = tp;
  l.pp = pp;
  l.dp = l.world / (tp * pp);
  l.shard = shard == 0 ? l.dp : shard;
  return l;
}

// Megatron's rank order (tp-dp-pp): TP ranks adjacent, DP strided by t, PP strided by t dp.
TEST(Communication, GroupsSitWhereMegatronPutsThem) {
  const Layout l = layout(4, 8, 8, 2);  // 32 GPUs, TP 8 fills a node, DP 2, PP 2
  EXPECT_EQ(tensor_parallel_group(l).nodes, 1);
  EXPECT_EQ(tensor_parallel_group(l).per_node, 8);
  const Placement dp = data_parallel_group(l);
  EXPECT_EQ(dp.ranks, 2);
  EXPECT_EQ(dp.per_node, 1);
  EXPECT_EQ(dp.nodes, 2);
  EXPECT_EQ(pipeline_pair(l).nodes, 2);
  const Layout flat = layout(2, 8, 1, 1);
  EXPECT_EQ(data_parallel_group(flat).per_node, 8);
  EXPECT_EQ(data_parallel_group(flat).nodes, 2);
  const Layout hybrid = layout(4, 8, 1, 1, 8);
  EXPECT_EQ(shard_group(hybrid).nodes, 1);
  EXPECT_EQ(shard_group(hybrid).ranks, 8);
  EXPECT_EQ(replica_group(hybrid).ranks, 4);
  EXPECT_EQ(replica_group(hybrid).nodes, 4);
  EXPECT_EQ(tensor_parallel_group(layout(2, 8, 16, 1)).nodes, 2);
}

hardware::Cluster dgx_a100(int nodes) {
  hardware::Cluster c;
  c.gpu.name = "A100-80GB";
  c.gpu.intra_node = {"NVLink3", hardware::IntraTopology::nvswitch, gbps(300.0)};
  c.gpu.pcie_bandwidth = gbps(31.5);
  c.nodes = nodes;
  c.gpus_per_node = 8;
  c.inter_node = {8, 200.0, "infiniband"};
  return c;
}

// Large all-reduces inside a DGX A100 run at the plateau nccl-tests measures (234.9 GB/s busbw,
// ml-engineering network/README): time = size x 2(n-1)/n / busbw, within the latency and pipeline fill.
TEST(Communication, RingAllReduceReachesTheMeasuredPlateau) {
  const LinkModel m = link_model(dgx_a100(1), nullptr, TimeConventions{});
  const Placement node{8, 8, 1};
  const Bytes s = gib(16.0);
  const Seconds t = collective_time(m, Collective::all_reduce, node, s);
  const double busbw =
      s.value() * hardware::bus_factor(Collective::all_reduce, 8) / t.value() / 1e9;
  EXPECT_NEAR(busbw, 234.9, 234.9 * 0.01);
  EXPECT_EQ(tier_of(m, node), LinkTier::nvlink);
  // Small messages are latency-bound: far below the plateau (1 MiB: 18 GB/s measured).
  const Seconds small = collective_time(m, Collective::all_reduce, node, mib(1.0));
  const double small_busbw = mib(1.0).value() * 1.75 / small.value() / 1e9;
  EXPECT_LT(small_busbw, 60.0);
  EXPECT_GT(small_busbw, 5.0);
}

// GB200 NVL72: 18 trays of 4 GPUs share one NVLink 5 fabric (900 GB/s per GPU each way; NVIDIA
// GB200 NVL72 specifications), each tray with four 400 Gb/s NICs. A 16-way tensor-parallel group
// spans four trays and stays on NVLink; on DGX B200 nodes of 8 (the same NVLink 5 and NICs per
// GPU) it crosses the network. A data-parallel all-gather over 64 GPUs is bound by NVLink inside
// the domain and by the NICs across 8 B200 nodes: the ratio of their bus bandwidths,
// 900 x 234.9/300 (NVSwitch efficiency) against 8 x 50 GB/s x 0.86 (the NICs of the 8 GPUs of a
// node each ring crosses, at the network efficiency), within the latency terms.
TEST(Communication, NvlinkDomainSpansTrays) {
  const hardware::Cluster nvl = test::catalog().resolve_cluster("64x4xGB200", std::nullopt).cluster;
  const hardware::Cluster dgx = test::catalog().resolve_cluster("32x8xB200", std::nullopt).cluster;
  ASSERT_EQ(nvl.gpus_per_domain(), 72);
  ASSERT_EQ(dgx.gpus_per_domain(), 8);
  auto layout_of = [](const hardware::Cluster& c, int tp) {
    Layout l = layout(c.nodes, c.gpus_per_node, tp, 1);
    l.gpus_per_domain = c.gpus_per_domain();
    return l;
  };
  const LinkModel mn = link_model(nvl, nullptr, TimeConventions{});
  const LinkModel md = link_model(dgx, nullptr, TimeConventions{});
  EXPECT_EQ(tier_of(mn, tensor_parallel_group(layout_of(nvl, 16))), LinkTier::nvlink);
  EXPECT_EQ(tier_of(md, tensor_parallel_group(layout_of(dgx, 16))), LinkTier::network);

  const Placement nvl64{64, 64, 1};
  const Placement dgx64{64, 8, 8};
  const Bytes s = gib(8.0);
  const double ratio = collective_time(md, Collective::all_gather, dgx64, s) /
                       collective_time(mn, Collective::all_gather, nvl64, s);
  EXPECT_NEAR(ratio, (900.0 * 234.9 / 300.0) / (8.0 * 50.0 * 0.86), 0.05 * ratio);
  // 256 GPUs in data parallel: four domains (three full racks and 40 GPUs), 72 ranks in each.
  const Placement dp = data_parallel_group(layout_of(nvl, 1));
  EXPECT_EQ(dp.per_node, 72);
  EXPECT_EQ(dp.nodes, 4);
}

// Across nodes the node's NICs bound the ring; slower links and wider groups cost more; a group
// with one rank per node gets one NIC.
TEST(Communication, InterNodeCollectivesAreBoundByTheNics) {
  const LinkModel m = link_model(dgx_a100(2), nullptr, TimeConventions{});
  const Bytes s = gib(4.0);
  const Seconds intra = collective_time(m, Collective::all_reduce, Placement{8, 8, 1}, s);
  const Seconds inter = collective_time(m, Collective::all_reduce, Placement{16, 8, 2}, s);
  const Seconds one_nic = collective_time(m, Collective::all_reduce, Placement{2, 1, 2}, s);
  EXPECT_GT(inter, intra);
  EXPECT_GT(one_nic, inter);
  EXPECT_EQ(tier_of(m, Placement{16, 8, 2}), LinkTier::network);
  hardware::Cluster slow = dgx_a100(2);
  slow.inter_node = {1, 100.0, "ethernet"};
  const LinkModel ms = link_model(slow, nullptr, TimeConventions{});
  EXPECT_GT(collective_time(ms, Collective::all_gather, Placement{16, 8, 2}, s),
            collective_time(m, Collective::all_gather, Placement{16, 8, 2}, s) * 10.0);
}

}  // namespace
}  // namespace trainplan::planner

namespace trainplan::planner {
namespace {

// The estimate says which communication times a hardware profile answered: a profile that
// measured all-reduce inside a node prices the tensor-parallel all-reduces of a plan on two DGX
// H100s ("profile"); the data-parallel all-reduce across the nodes, which it never measured, comes
// from the links' datasheet rates ("datasheet"). Without a profile everything is "datasheet".
TEST(Communication, EstimateSaysWhichTimesTheProfileMeasured) {
  const model::Architecture a = test::catalog().resolve_model("llama-3.1-8b").arch;
  const model::ParameterCounts n = model::count_parameters(a);
  const hardware::Cluster c = test::catalog().resolve_cluster("2x8xH100-80GB", std::nullopt).cluster;
  hardware::HardwareProfile p;
  p.name = "node";
  hardware::CollectiveCurve curve;
  curve.collective = Collective::all_reduce;
  curve.scope = hardware::LinkScope::intra_node;
  curve.ranks = 8;
  curve.nodes = 1;
  curve.alpha = Seconds(20e-6);
  curve.busbw = gbps(360.0);
  p.collectives.push_back(curve);
  model::Training t;
  t.strategy = Strategy::ddp;
  t.tp = 8;
  const Estimate measured = Evaluator(a, n, c, &p).estimate(t);
  const Estimate sheet = Evaluator(a, n, c).estimate(t);
  int from_profile = 0;
  int from_sheet = 0;
  for (const CommunicationItem& x : measured.communication) {
    SCOPED_TRACE(x.purpose + " " + x.tier);
    if (x.purpose == "tensor-parallel activations") {
      EXPECT_EQ(x.source, "profile");
      ++from_profile;
    }
    if (x.purpose == "data-parallel gradient all-reduce") {
      EXPECT_EQ(x.tier, "network");
      EXPECT_EQ(x.source, "datasheet");
      ++from_sheet;
    }
  }
  EXPECT_EQ(from_profile, 1);
  EXPECT_EQ(from_sheet, 1);
  for (const CommunicationItem& x : sheet.communication) EXPECT_EQ(x.source, "datasheet");
}

// Llama-3.1-8B in bf16 on 8 H100s, 4 micro-batches of 1,024 tokens: the accumulation setups below.
Estimate accumulating(Library library, Strategy strategy, bool sync_each_batch = false) {
  const model::Architecture a = test::catalog().resolve_model("llama-3.1-8b").arch;
  const hardware::Cluster c = test::catalog().resolve_cluster("8xH100-80GB", std::nullopt).cluster;
  model::Training t;
  t.library = library;
  t.strategy = strategy;
  t.precision = Precision::bf16_true;
  t.grad_accum = 4;
  t.seq = 1024;
  t.sync_each_batch = sync_each_batch;
  return Evaluator(a, model::count_parameters(a), c).estimate(t);
}

// The bytes an estimate's transfers of one collective send per step.
double sent(const Estimate& e, const std::string& collective) {
  double bytes = 0.0;
  for (const CommunicationItem& x : e.communication)
    if (x.collective == collective) bytes += x.bytes.value();
  return bytes;
}

// FSDP with gradient accumulation under transformers' Trainer (and Lightning Fabric) runs every
// micro-batch but the last under no_sync: each unit's gradient accumulates unsharded and is
// reduce-scattered once a step (torch FullyShardedDataParallel.no_sync docstring; transformers
// trainer.py: accelerator.no_sync unless DeepSpeed). Composer (llm-foundry) uses no_sync only
// under DDP, so its FSDP reduces every micro-batch and keeps the gradients sharded. Llama-3.1-8B,
// bf16-true, 8 ranks, 4 micro-batches: the Trainer holds all 8.03e9 gradients in bf16 on each rank
// and sends a quarter of llm-foundry's reduce-scatter bytes.
TEST(Communication, NoSyncAccumulationHoldsUnshardedGradientsAndReducesOnce) {
  const double params = static_cast<double>(
      model::count_parameters(test::catalog().resolve_model("llama-3.1-8b").arch).total);
  const Estimate trainer = accumulating(Library::hf_trainer, Strategy::fsdp_full);
  const Estimate foundry = accumulating(Library::llm_foundry, Strategy::fsdp_full);
  EXPECT_DOUBLE_EQ(trainer.memory.states.gradients.value(), 2.0 * params);
  EXPECT_DOUBLE_EQ(foundry.memory.states.gradients.value(), 2.0 * params / 8.0);
  EXPECT_GT(sent(foundry, "reduce_scatter"), 0.0);
  EXPECT_DOUBLE_EQ(sent(trainer, "reduce_scatter") * 4.0, sent(foundry, "reduce_scatter"));
}

// accelerate's GradientAccumulationPlugin(sync_each_batch=True): the Trainer's loop runs no
// micro-batch under no_sync (trainer.py: "We sync the gradients in the following cases: 1.
// sync_each_batch set to True ..."). Under FSDP each rank then keeps its gradients sharded and
// reduce-scatters every micro-batch, as llm-foundry does (the test above); under DDP it all-reduces
// every micro-batch instead of the last one only: 4 times the bytes at 4 micro-batches.
TEST(Communication, SyncEachBatchReducesEveryMicroBatch) {
  const double params = static_cast<double>(
      model::count_parameters(test::catalog().resolve_model("llama-3.1-8b").arch).total);
  const Estimate synced = accumulating(Library::hf_trainer, Strategy::fsdp_full, true);
  const Estimate foundry = accumulating(Library::llm_foundry, Strategy::fsdp_full);
  EXPECT_DOUBLE_EQ(synced.memory.states.gradients.value(), 2.0 * params / 8.0);
  EXPECT_DOUBLE_EQ(sent(synced, "reduce_scatter"), sent(foundry, "reduce_scatter"));
  const Estimate ddp = accumulating(Library::hf_trainer, Strategy::ddp);
  const Estimate ddp_synced = accumulating(Library::hf_trainer, Strategy::ddp, true);
  EXPECT_GT(sent(ddp, "all_reduce"), 0.0);
  EXPECT_DOUBLE_EQ(sent(ddp_synced, "all_reduce"), 4.0 * sent(ddp, "all_reduce"));
  EXPECT_GT(ddp_synced.time.communication_exposed.value(), ddp.time.communication_exposed.value());
}

}  // namespace
}  // namespace trainplan::planner
