// ml-engineering all_reduce_bench.py output: the two published tables and synthetic full outputs.

#include <gtest/gtest.h>

#include "paths.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/request/collective_log.hpp"

namespace trainplan::request {
namespace {

using test::fixture;
using test::synthetic;

TEST(AllReduceBench, FourNodeTableInfersRanksFromTheBusFactor) {
  // stas00/ml-engineering network/benchmarks README: 4 nodes x 8 GPUs, busbw/algbw = 2*31/32.
  const CollectiveLog log =
      read_collective_log(fixture("real_all_reduce_bench_py_table_4node.txt"));
  EXPECT_EQ(log.tool, LogTool::all_reduce_bench);
  ASSERT_EQ(log.blocks.size(), 1u);
  const LogBlock& b = log.blocks.front();
  EXPECT_EQ(b.collective, hardware::Collective::all_reduce);
  ASSERT_EQ(b.rows.size(), 20u);
  EXPECT_EQ(b.ranks, 32);
  EXPECT_EQ(b.nodes, 4);
  EXPECT_TRUE(b.nodes_assumed);  // the table does not say; 8 GPUs per node assumed
  EXPECT_EQ(log.skipped_lines, 0);
  const LogRow& first = b.rows.front();
  EXPECT_EQ(first.bytes, 32768);
  EXPECT_EQ(first.dtype, "float");
  EXPECT_FALSE(first.out_of_place.has_value());
  ASSERT_TRUE(first.in_place.has_value());
  EXPECT_DOUBLE_EQ(first.in_place->busbw_GBps, 0.92);
  EXPECT_DOUBLE_EQ(first.in_place->algbw_GBps, 0.48);
  EXPECT_DOUBLE_EQ(first.in_place->time_us, 32768.0 / 480.0);  // t = size / algbw
  const LogRow& last = b.rows.back();
  EXPECT_EQ(last.bytes, 17179869184);
  EXPECT_DOUBLE_EQ(last.in_place->busbw_GBps, 91.69);
  EXPECT_DOUBLE_EQ(last.in_place->algbw_GBps, 47.32);
  EXPECT_EQ(b.rows[10].bytes, 32 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(b.rows[10].in_place->busbw_GBps, 98.34);
  const hardware::RunProvenance p = provenance_of(log);
  EXPECT_EQ(p.tool, "all_reduce_bench");
  EXPECT_FALSE(p.nodes.has_value());  // assumed, so not recorded as known
}

TEST(AllReduceBench, H200TableWithItsCommandLine) {
  const CollectiveLog log =
      read_collective_log(fixture("real_all_reduce_bench_py_table_8xH200.txt"));
  const LogBlock& b = log.blocks.front();
  ASSERT_EQ(b.rows.size(), 20u);
  EXPECT_EQ(b.ranks, 8);
  EXPECT_EQ(b.nodes, 1);  // torchrun without --nnodes runs one node
  EXPECT_FALSE(b.nodes_assumed);
  EXPECT_DOUBLE_EQ(b.rows.front().in_place->busbw_GBps, 1.44);
  EXPECT_DOUBLE_EQ(b.rows.front().in_place->algbw_GBps, 0.82);
  EXPECT_DOUBLE_EQ(b.rows.back().in_place->busbw_GBps, 482.26);
  EXPECT_DOUBLE_EQ(b.rows.back().in_place->algbw_GBps, 275.58);
  EXPECT_EQ(log.command,
            "python -u -m torch.distributed.run --nproc_per_node=8 all_reduce_bench.py");
}

TEST(AllReduceBench, FullOutputWithEnvironment) {
  const CollectiveLog log =
      read_collective_log(synthetic("all_reduce_bench_full_output_2node.txt"));
  const LogBlock& b = log.blocks.front();
  ASSERT_EQ(b.rows.size(), 10u);
  EXPECT_EQ(b.ranks, 16);
  EXPECT_EQ(b.nodes, 2);
  EXPECT_FALSE(b.nodes_assumed);
  EXPECT_EQ(b.gpu, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(log.cuda, "13.0");
  EXPECT_EQ(log.nccl, "2.27.7");
  EXPECT_EQ(log.skipped_lines, 0);
  EXPECT_EQ(b.rows.front().bytes, 32768);
  EXPECT_EQ(b.rows.back().bytes, 8589934592);
}

TEST(AllReduceBench, OldSinglePayloadOutput) {
  // The 2024 script printed one payload; "GB" meant GiB there.
  const CollectiveLog log =
      read_collective_log(synthetic("all_reduce_bench_2024_single_payload.txt"));
  const LogBlock& b = log.blocks.front();
  ASSERT_EQ(b.rows.size(), 1u);
  EXPECT_EQ(b.ranks, 16);
  EXPECT_EQ(b.rows.front().bytes, 4LL << 30);
  EXPECT_DOUBLE_EQ(b.rows.front().in_place->algbw_GBps, 46.327);
  EXPECT_DOUBLE_EQ(b.rows.front().in_place->busbw_GBps, 86.863);
}

TEST(AllReduceBench, StabilityTableAloneHasNoSizes) {
  const std::string text =
      "The 0.5GiB payload bandwidth of all_reduce over 8 ranks (5 warmups / 20 trials):\n\n"
      "|    busbw   |    algbw   |\n| ---------: | ---------: |\n| 401.00GBps | 229.14GBps |\n";
  EXPECT_THROW((void)parse_collective_log(text, "stability.txt"), InputError);
}

}  // namespace
}  // namespace trainplan::request
