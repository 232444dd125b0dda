// nccl-tests logs: every real log its authors published (8x A100 all_reduce_perf runs from public
// blog notes on building nccl-tests, the ABCI user guide's "Using SHARP" run, NRIS "NCCL on Olivia",
// DGX Spark notes, stas00/ml-engineering all_reduce_bench.py tables) and one synthetic log per
// format generation, checked row by row at the ends and in the counts.

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "paths.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/request/collective_log.hpp"

namespace trainplan::request {
namespace {

using hardware::Collective;
using test::fixture;
using test::synthetic;

struct Timing {
  double time_us;
  double algbw;
  double busbw;
};

struct Row {
  std::int64_t bytes;
  std::int64_t count;
  Timing oop;
  std::optional<Timing> ip;
};

struct LogCase {
  std::string name;
  std::filesystem::path path;
  Collective collective;
  std::string test;
  std::string dtype;
  int generation;
  int rows;
  int ranks;
  int nodes;
  std::string gpu;
  std::vector<std::string> hosts;
  int skipped;
  bool footer;
  Row first;
  Row last;
  std::string source;  // where the log was published
};

// gtest prints a parameter in test names and failures; the case name says enough.
void PrintTo(const LogCase& c, std::ostream* os) { *os << c.name; }

void expect_timing(const std::optional<TimingColumns>& got, const Timing& want) {
  ASSERT_TRUE(got.has_value());
  EXPECT_DOUBLE_EQ(got->time_us, want.time_us);
  EXPECT_DOUBLE_EQ(got->algbw_GBps, want.algbw);
  EXPECT_DOUBLE_EQ(got->busbw_GBps, want.busbw);
}

void expect_row(const LogRow& got, const Row& want) {
  EXPECT_EQ(got.bytes, want.bytes);
  EXPECT_EQ(got.count, want.count);
  expect_timing(got.out_of_place, want.oop);
  if (want.ip) expect_timing(got.in_place, *want.ip);
}

std::vector<LogCase> real_cases() {
  return {
      {"1proc_8xA100",
       fixture("real_all_reduce_perf_fmt2.13_1proc_8xA100.txt"),
       Collective::all_reduce,
       "all_reduce_perf",
       "float",
       3,
       30,
       8,
       1,
       "NVIDIA A100-SXM4-80GB",
       {"thanos"},
       0,
       true,
       {8, 2, {40.12, 0.00, 0.00}, Timing{38.85, 0.00, 0.00}},
       {4294967296, 1073741824, {32336, 132.82, 232.44}, Timing{32455, 132.34, 231.59}},
       "blog notes, host thanos"},
      {"mpirun8_ompi_noise",
       fixture("real_all_reduce_perf_fmt2.13_mpirun8_8xA100_with_ompi_noise.txt"),
       Collective::all_reduce,
       "all_reduce_perf",
       "float",
       3,
       30,
       8,
       1,
       "NVIDIA A100-SXM4-80GB",
       {"thanos"},
       2,
       true,
       {8, 2, {20.26, 0.00, 0.00}, Timing{17.74, 0.00, 0.00}},
       {4294967296, 1073741824, {32285, 133.03, 232.81}, Timing{32268, 133.10, 232.93}},
       "same machine under mpirun: two Open MPI help lines, one starting with a digit"},
      {"pre2.13_2node_sharp",
       fixture("real_all_reduce_perf_fmt_pre2.13_16xA100_2node_sharp_noise.txt"),
       Collective::all_reduce,
       "all_reduce_perf",
       "float",
       2,
       29,
       16,
       2,
       "NVIDIA A100-SXM4-40GB",
       {"a0000", "a0001"},
       3,
       true,
       {8, 2, {22.54, 0.00, 0.00}, Timing{24.94, 0.00, 0.00}},
       {2147483648, 536870912, {38180, 56.25, 105.46}, Timing{38163, 56.27, 105.51}},
       "ABCI user guide, SHARP: two SHARP INFO lines and a '--(snip)--'"},
      {"v2.17.9_16xGH200_wrong",
       fixture("real_all_reduce_perf_v2.17.9_16xGH200_4node_int8_wrong_nofooter.txt"),
       Collective::all_reduce,
       "all_reduce_perf",
       "int8",
       4,
       28,
       16,
       4,
       "NVIDIA GH200 120GB",
       {"gpu-1-43", "gpu-1-47", "gpu-1-49", "gpu-1-51"},
       0,
       false,
       {1, 1, {24.41, 0.00, 0.00}, Timing{21.26, 0.00, 0.00}},
       {134217728, 134217728, {2800.93, 47.92, 89.85}, Timing{3023.61, 44.39, 83.23}},
       "NRIS 'NCCL on Olivia': data corruption, no footer"},
      {"v2.18.5_2xGB10_all_gather",
       fixture("real_all_gather_perf_v2.18.5_2xGB10_2node_full.txt"),
       Collective::all_gather,
       "all_gather_perf",
       "float",
       4,
       1,
       2,
       2,
       "NVIDIA GB10",
       {"promaxgb10-4c75", "promaxgb10-4c99"},
       0,
       true,
       {17179869184, 2147483648, {374425, 45.88, 22.94}, Timing{373792, 45.96, 22.98}},
       {17179869184, 2147483648, {374425, 45.88, 22.94}, Timing{373792, 45.96, 22.98}},
       "DGX Spark notes"},
  };
}

std::vector<LogCase> synthetic_cases() {
  return {
      {"gen1_2017_ms_res",
       synthetic("gen1_2017_all_reduce_ms.txt"),
       Collective::all_reduce,
       "all_reduce_perf",
       "float",
       1,
       9,
       4,
       1,
       "Tesla V100-SXM2-16GB",
       {"dgx1-07"},
       0,
       true,
       // Gen-1 prints milliseconds: 0.025 ms = 25 us.
       {8, 2, {25.0, 0.00, 0.00}, Timing{25.0, 0.00, 0.00}},
       {524288, 131072, {38.0, 13.76, 20.64}, Timing{38.0, 13.62, 20.43}},
       "synthetic, format of nccl-tests b188a15 (2017)"},
      {"gen3_pasted_without_hash",
       synthetic("gen3_2022_reduce_scatter_pasted_without_hash.txt"),
       Collective::reduce_scatter,
       "reduce_scatter_perf",
       "bfloat16",
       3,
       7,
       8,
       1,
       "NVIDIA H100 80GB HBM3",
       {"hgx-a"},
       0,
       true,
       {131072, 4096, {18.32, 7.15, 6.26}, Timing{18.68, 7.02, 6.14}},
       {536870912, 16777216, {1322.89, 405.83, 355.10}, Timing{1349.35, 397.87, 348.14}},
       "synthetic, nccl-tests 51af557 (2022) format as rendered without '#'"},
      {"gen3_mpirun_tag_output",
       synthetic("gen3_mpirun_tag_output_alltoall_2node.txt"),
       Collective::all_to_all,
       "alltoall_perf",
       "float",
       3,
       5,
       4,
       2,
       "NVIDIA A100-SXM4-80GB",
       {"gpu-a01", "gpu-a02"},
       3,
       true,
       {1048576, 65536, {70.75, 14.82, 11.12}, Timing{71.45, 14.68, 11.01}},
       {268435456, 16777216, {9186.21, 29.22, 21.92}, Timing{9278.07, 28.93, 21.70}},
       "synthetic, mpirun --tag-output with NCCL INFO and Open MPI lines"},
  };
}

class RealAndSyntheticLogs : public ::testing::TestWithParam<LogCase> {};

TEST_P(RealAndSyntheticLogs, ParsesEveryRow) {
  const LogCase& c = GetParam();
  SCOPED_TRACE(c.name + " (" + c.source + ")");
  ASSERT_TRUE(std::filesystem::exists(c.path)) << c.path;
  const CollectiveLog log = read_collective_log(c.path);
  EXPECT_EQ(log.tool, LogTool::nccl_tests);
  ASSERT_EQ(log.blocks.size(), 1u);
  const LogBlock& b = log.blocks.front();
  EXPECT_EQ(b.collective, c.collective);
  EXPECT_EQ(b.test, c.test);
  EXPECT_EQ(b.format_generation, c.generation);
  ASSERT_EQ(static_cast<int>(b.rows.size()), c.rows);
  EXPECT_EQ(b.ranks, c.ranks);
  EXPECT_EQ(b.nodes, c.nodes);
  EXPECT_FALSE(b.nodes_assumed);
  EXPECT_EQ(b.gpu, c.gpu);
  EXPECT_EQ(b.hosts, c.hosts);
  EXPECT_EQ(b.footer, c.footer);
  EXPECT_EQ(log.skipped_lines, c.skipped);
  for (const LogRow& row : b.rows) EXPECT_EQ(row.dtype, c.dtype);
  expect_row(b.rows.front(), c.first);
  expect_row(b.rows.back(), c.last);
  // Sizes ascend without gaps: no data row was lost to noise.
  for (std::size_t i = 1; i < b.rows.size(); ++i) EXPECT_GT(b.rows[i].bytes, b.rows[i - 1].bytes);
}

INSTANTIATE_TEST_SUITE_P(Real, RealAndSyntheticLogs, ::testing::ValuesIn(real_cases()),
                         [](const ::testing::TestParamInfo<LogCase>& p) {
                           return "real_" + std::to_string(p.index);
                         });
INSTANTIATE_TEST_SUITE_P(Synthetic, RealAndSyntheticLogs, ::testing::ValuesIn(synthetic_cases()),
                         [](const ::testing::TestParamInfo<LogCase>& p) {
                           return "synthetic_" + std::to_string(p.index);
                         });

TEST(NcclTestsFixtures, EveryFixtureFileIsCovered) {
  std::vector<std::string> covered;
  for (const LogCase& c : real_cases()) covered.push_back(c.path.filename().string());
  covered.push_back("real_all_reduce_bench_py_table_4node.txt");
  covered.push_back("real_all_reduce_bench_py_table_8xH200.txt");
  const auto dir = fixture("");
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".txt") continue;
    EXPECT_NE(std::find(covered.begin(), covered.end(), name), covered.end())
        << name << " has no parser test";
  }
}

TEST(NcclTestsFixtures, Gh200WrongRowsAreKeptButInvalid) {
  const CollectiveLog log = read_collective_log(
      fixture("real_all_reduce_perf_v2.17.9_16xGH200_4node_int8_wrong_nofooter.txt"));
  const LogBlock& b = log.blocks.front();
  std::vector<std::int64_t> wrong_oop;
  std::vector<std::int64_t> wrong_ip;
  for (const LogRow& row : b.rows) {
    if (!row.out_of_place->valid()) wrong_oop.push_back(row.bytes);
    if (!row.in_place->valid()) wrong_ip.push_back(row.bytes);
  }
  EXPECT_EQ(wrong_oop,
            (std::vector<std::int64_t>{2097152, 4194304, 8388608, 16777216, 33554432, 67108864}));
  EXPECT_EQ(wrong_ip, (std::vector<std::int64_t>{2097152, 4194304, 8388608, 16777216, 33554432}));
  const auto row_4m = std::find_if(b.rows.begin(), b.rows.end(),
                                   [](const LogRow& r) { return r.bytes == 4194304; });
  EXPECT_DOUBLE_EQ(*row_4m->out_of_place->wrong, 96817);
  EXPECT_DOUBLE_EQ(*row_4m->in_place->wrong, 124342);
  EXPECT_DOUBLE_EQ(row_4m->in_place->time_us, 10542.7);
  // The 128 KiB spike (597.83 us) is a valid row: the parser keeps what the log says.
  EXPECT_DOUBLE_EQ(b.rows[17].out_of_place->time_us, 597.83);
  EXPECT_TRUE(b.rows[17].out_of_place->valid());

  const auto m = to_measurements(log);
  ASSERT_EQ(m.size(), 56u);
  EXPECT_EQ(std::count_if(m.begin(), m.end(), [](const auto& x) { return !x.valid; }), 11);
  EXPECT_EQ(log.tool_version, "2.17.9");
  EXPECT_EQ(log.nccl, "2.29.2");
}

TEST(NcclTestsFixtures, SharpBusBandwidthIsNeverClamped) {
  // 8x H200 all_bench busbw 482 GB/s is above NVLink4's 450 GB/s line rate (NVLS); nccl-tests
  // numbers pass through unchanged, including the SHARP log's error column.
  const CollectiveLog log = read_collective_log(
      fixture("real_all_reduce_perf_fmt_pre2.13_16xA100_2node_sharp_noise.txt"));
  const LogRow& first = log.blocks.front().rows.front();
  EXPECT_DOUBLE_EQ(*first.out_of_place->max_error, 4e-07);
  EXPECT_FALSE(first.out_of_place->wrong.has_value());
  const CollectiveLog h200 =
      read_collective_log(fixture("real_all_reduce_bench_py_table_8xH200.txt"));
  EXPECT_DOUBLE_EQ(h200.blocks.front().rows.back().in_place->busbw_GBps, 482.26);
}

TEST(NcclTestsFixtures, MeasurementsCarryScopeAndUnits) {
  const CollectiveLog log =
      read_collective_log(fixture("real_all_reduce_perf_fmt2.13_1proc_8xA100.txt"));
  const auto m = to_measurements(log);
  ASSERT_EQ(m.size(), 60u);
  EXPECT_EQ(m.front().scope, hardware::LinkScope::intra_node);
  EXPECT_FALSE(m.front().in_place);
  EXPECT_TRUE(m[1].in_place);
  EXPECT_DOUBLE_EQ(m.back().bytes.value(), 4294967296.0);
  EXPECT_NEAR(m.back().time.value(), 32455e-6, 1e-15);
  EXPECT_NEAR(to_gbps(m.back().busbw), 231.59, 1e-12);
  const hardware::RunProvenance p = provenance_of(log);
  EXPECT_EQ(p.tool, "nccl-tests");
  EXPECT_EQ(p.gpu, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(p.ranks, 8);
  EXPECT_EQ(p.nodes, 1);
  EXPECT_EQ(p.sources, std::vector<std::string>{"real_all_reduce_perf_fmt2.13_1proc_8xA100.txt"});

  const CollectiveLog sharp = read_collective_log(
      fixture("real_all_reduce_perf_fmt_pre2.13_16xA100_2node_sharp_noise.txt"));
  EXPECT_EQ(to_measurements(sharp).front().scope, hardware::LinkScope::inter_node);
}

TEST(NcclTestsSynthetic, Gen2PerTestHeadersAndConcatenatedRuns) {
  const CollectiveLog log =
      read_collective_log(synthetic("gen2_2019_all_gather_then_broadcast.txt"));
  ASSERT_EQ(log.blocks.size(), 2u);
  const LogBlock& ag = log.blocks[0];
  const LogBlock& bc = log.blocks[1];
  EXPECT_EQ(ag.collective, Collective::all_gather);
  EXPECT_EQ(bc.collective, Collective::broadcast);
  EXPECT_EQ(ag.format_generation, 2);
  ASSERT_EQ(ag.rows.size(), 9u);
  ASSERT_EQ(bc.rows.size(), 9u);
  EXPECT_EQ(ag.ranks, 4);
  EXPECT_EQ(bc.ranks, 4);
  EXPECT_EQ(ag.gpu, "Tesla V100-SXM2-32GB");
  // all_gather has no redop or root column; broadcast has root, no redop.
  EXPECT_EQ(ag.rows.front().redop, "");
  EXPECT_FALSE(ag.rows.front().root.has_value());
  EXPECT_EQ(bc.rows.front().root, 0);
  EXPECT_DOUBLE_EQ(ag.rows.front().out_of_place->time_us, 12.01);
  EXPECT_DOUBLE_EQ(ag.rows.back().out_of_place->time_us, 469.6);
  EXPECT_DOUBLE_EQ(*ag.rows.back().out_of_place->max_error, 0.0);
  EXPECT_DOUBLE_EQ(bc.rows.back().out_of_place->time_us, 619.1);
  EXPECT_DOUBLE_EQ(bc.rows.back().out_of_place->busbw_GBps, 108.4);
  EXPECT_EQ(log.command, "./build/all_gather_perf -b 1K -e 64M -f 4 -g 4");
}

TEST(NcclTestsSynthetic, Gen4VersionTimestampsAndPerIterationColumns) {
  const CollectiveLog log =
      read_collective_log(synthetic("gen4_2025_timestamps_then_per_iteration.txt"));
  ASSERT_EQ(log.blocks.size(), 2u);
  const LogBlock& ar = log.blocks[0];
  const LogBlock& rs = log.blocks[1];
  EXPECT_EQ(ar.collective, Collective::all_reduce);
  EXPECT_EQ(rs.collective, Collective::reduce_scatter);
  EXPECT_EQ(ar.test, "all_reduce_perf");
  EXPECT_EQ(rs.test, "reduce_scatter_perf");
  EXPECT_EQ(ar.format_generation, 4);
  EXPECT_EQ(rs.format_generation, 4);
  EXPECT_EQ(ar.ranks, 16);
  EXPECT_EQ(ar.nodes, 2);
  EXPECT_EQ(ar.hosts, (std::vector<std::string>{"h200-n0", "h200-n1"}));
  ASSERT_EQ(ar.rows.size(), 7u);
  ASSERT_EQ(rs.rows.size(), 4u);
  // -S: the timestamp has a space inside; -c 0: #wrong is N/A, which is not "wrong".
  EXPECT_EQ(ar.rows.front().timestamp, "2025-11-03 09:41:00");
  EXPECT_EQ(ar.rows.back().timestamp, "2025-11-03 09:41:18");
  EXPECT_FALSE(ar.rows.front().out_of_place->wrong.has_value());
  EXPECT_TRUE(ar.rows.front().out_of_place->valid());
  EXPECT_DOUBLE_EQ(ar.rows.front().out_of_place->time_us, 48.01);
  EXPECT_DOUBLE_EQ(ar.rows.back().out_of_place->time_us, 1372.52);
  EXPECT_DOUBLE_EQ(ar.rows.back().in_place->busbw_GBps, 364.89);
  // -I: four per-iteration columns after each group.
  EXPECT_DOUBLE_EQ(rs.rows.front().out_of_place->time_us, 33.28);
  EXPECT_DOUBLE_EQ(rs.rows.front().in_place->time_us, 33.61);
  EXPECT_DOUBLE_EQ(*rs.rows.front().out_of_place->wrong, 0.0);
  EXPECT_EQ(log.tool_version, "2.19.6");
  EXPECT_EQ(log.nccl, "2.28.9");
  EXPECT_EQ(log.date, "2025-11-03T09:41:00");
}

TEST(NcclTestsSynthetic, MpirunPrefixesAndNcclVersionLine) {
  const CollectiveLog log =
      read_collective_log(synthetic("gen3_mpirun_tag_output_alltoall_2node.txt"));
  EXPECT_EQ(log.nccl, "2.18.3");
  EXPECT_EQ(log.cuda, "12.2");
  const LogBlock& b = log.blocks.front();
  EXPECT_EQ(b.rows.front().redop, "none");
  EXPECT_EQ(b.rows.front().root, -1);
}

TEST(NcclTestsHints, GivenValuesReplaceTheLog) {
  ImportHints h;
  h.ranks = 8;
  h.nodes = 2;
  h.collective = Collective::all_reduce;
  const CollectiveLog log =
      read_collective_log(fixture("real_all_reduce_perf_fmt2.13_1proc_8xA100.txt"), h);
  EXPECT_EQ(log.blocks.front().ranks, 8);
  EXPECT_EQ(log.blocks.front().nodes, 2);
}

TEST(NcclTestsHints, ContradictingBusFactorIsAnError) {
  ImportHints h;
  h.ranks = 16;  // the log's busbw/algbw = 1.75 says 8 ranks
  try {
    (void)read_collective_log(fixture("real_all_reduce_perf_fmt2.13_1proc_8xA100.txt"), h);
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bus factor"), std::string::npos) << e.what();
  }
}

TEST(NcclTestsText, RowsWithoutContextNeedTheCollective) {
  const std::string text =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong\n"
      "     1048576        262144     float     sum      -1    52.61   19.93   34.88      0    "
      "53.03   19.77   34.60      0\n"
      "     2097152        524288     float     sum      -1    59.30   35.37   61.89      0    "
      "71.33   29.40   51.45      0\n";
  // busbw/algbw = 1.75 > 1: only all_reduce prints that, over 2 / (2 - 1.75) = 8 ranks.
  const CollectiveLog log = parse_collective_log(text, "pasted.txt");
  EXPECT_EQ(log.blocks.front().collective, Collective::all_reduce);
  EXPECT_EQ(log.blocks.front().ranks, 8);
  EXPECT_TRUE(log.blocks.front().nodes_assumed);
  EXPECT_EQ(log.blocks.front().nodes, 1);

  const std::string gather =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong\n"
      "     1048576        262144     float    none      -1    52.61   19.93    9.97      0    "
      "53.03   19.77    9.89      0\n";
  try {
    (void)parse_collective_log(gather, "pasted.txt");
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("pasted.txt"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("--collective"), std::string::npos);
  }
  ImportHints h;
  h.collective = Collective::all_gather;
  EXPECT_EQ(parse_collective_log(gather, "pasted.txt", h).blocks.front().ranks, 2);
}

TEST(NcclTestsText, WindowsLineEndingsAndByteOrderMark) {
  const std::string text =
      "\xEF\xBB\xBF# Collective test starting: all_gather_perf\r\n"
      "#  Rank  0 Group  0 Pid  1 on a device  0 [0000:01:00] NVIDIA L4\r\n"
      "#  Rank  1 Group  0 Pid  2 on a device  1 [0000:02:00] NVIDIA L4\r\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong\r\n"
      "     1048576        131072     float    none      -1    52.61   19.93    9.97      0    "
      "53.03   19.77    9.89      0\r\n";
  const CollectiveLog log = parse_collective_log(text, "windows.log");
  EXPECT_EQ(log.skipped_lines, 0);
  EXPECT_EQ(log.blocks.front().collective, Collective::all_gather);
  EXPECT_EQ(log.blocks.front().ranks, 2);
  EXPECT_EQ(log.blocks.front().gpu, "NVIDIA L4");
}

TEST(NcclTestsText, UnmodelledTestIsNamed) {
  const std::string text =
      "# Collective test starting: hypercube_perf\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong\n"
      "     1048576        262144     float    none      -1    52.61   19.93   19.93      0    "
      "53.03   19.77   19.77      0\n";
  try {
    (void)parse_collective_log(text, "cube.log");
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("hypercube_perf"), std::string::npos) << e.what();
  }
}

// nccl-tests -J writes the rows of its stdout as JSON (src/util.cu, version 2). The fixture is the
// real 1proc_8xA100 log in that structure (its run metadata, which the text does not state, are
// placeholders): both must give the same measurements.
TEST(NcclTestsJson, SameMeasurementsAsTheTextOfTheSameRun) {
  const CollectiveLog text = read_collective_log(fixture("real_all_reduce_perf_fmt2.13_1proc_8xA100.txt"));
  const CollectiveLog json = read_collective_log(synthetic("nccl_tests_json_v2_1proc_8xA100.json"));
  ASSERT_EQ(json.blocks.size(), 1u);
  const LogBlock& t = text.blocks.front();
  const LogBlock& j = json.blocks.front();
  EXPECT_EQ(j.collective, Collective::all_reduce);
  EXPECT_EQ(j.test, "all_reduce_perf");
  EXPECT_EQ(j.ranks, 8);  // one process, nthreads 1 x ngpus 8
  EXPECT_EQ(j.nodes, 1);
  EXPECT_FALSE(j.nodes_assumed);
  EXPECT_EQ(j.hosts, t.hosts);
  EXPECT_EQ(j.gpu, t.gpu);
  EXPECT_TRUE(j.footer);
  EXPECT_EQ(json.command, "./build/all_reduce_perf -b 8 -e 4G -f 2 -g 8 -J all_reduce.json");
  EXPECT_FALSE(json.nccl.has_value());  // the placeholder version 0 means unknown
  const auto a = to_measurements(text);
  const auto b = to_measurements(json);
  ASSERT_EQ(a.size(), b.size());
  ASSERT_EQ(a.size(), 60u);  // 30 sizes, out-of-place and in-place
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i] == b[i]) << "measurement " << i;
}

// Several processes (mpirun): one device line per process, each driving nthreads x ngpus ranks;
// hosts give the nodes. A "nan" time drops its group; null nwrong means not checked.
TEST(NcclTestsJson, ProcessesHostsAndMissingValues) {
  const std::string doc = R"({"version":2,"args":["/opt/nccl-tests/build/all_gather_perf","-g","4"],
    "nccl_version":22803,"start_time":"2025-11-02 10:20:30",
    "config":{"nthreads":1,"ngpus":4,"devices":[
      {"rank":0,"hostname":"n1","device":0,"device_info":"NVIDIA H100 80GB HBM3"},
      {"rank":4,"hostname":"n2","device":0,"device_info":"NVIDIA H100 80GB HBM3"}]},
    "results":[
      {"size":1048576,"count":32768,"type":"float","redop":"none","root":"    -1",
       "out_of_place":{"time":100.0,"alg_bw":10.48576,"bus_bw":9.17504,"nwrong":0},
       "in_place":{"time":"nan","alg_bw":"nan","bus_bw":"nan","nwrong":null}},
      {"size":2097152,"count":65536,"type":"float","redop":"none","root":"    -1",
       "out_of_place":{"time":150.0,"alg_bw":13.981013,"bus_bw":12.233387,"nwrong":null},
       "in_place":null}]})";
  const CollectiveLog log = parse_collective_log(doc, "ag.json");
  const LogBlock& b = log.blocks.front();
  EXPECT_EQ(b.collective, Collective::all_gather);
  EXPECT_EQ(b.ranks, 8);
  EXPECT_EQ(b.nodes, 2);
  EXPECT_EQ(b.hosts, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_EQ(log.nccl, "2.28.3");
  EXPECT_EQ(log.date, "2025-11-02T10:20:30");
  ASSERT_EQ(b.rows.size(), 2u);
  EXPECT_FALSE(b.rows[0].in_place.has_value());
  EXPECT_FALSE(b.rows[0].root.has_value());
  ASSERT_TRUE(b.rows[1].out_of_place.has_value());
  EXPECT_FALSE(b.rows[1].out_of_place->wrong.has_value());
  EXPECT_EQ(to_measurements(log).size(), 2u);
}

TEST(NcclTestsJson, BadReportsNameTheFile) {
  auto message = [](const std::string& text) {
    try {
      (void)parse_collective_log(text, "report.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string truncated = message(R"({"version":2,"results":[{"size":8)");
  EXPECT_NE(truncated.find("report.json"), std::string::npos) << truncated;
  EXPECT_NE(truncated.find("invalid JSON"), std::string::npos) << truncated;
  const std::string version = message(R"({"version":3,"results":[]})");
  EXPECT_NE(version.find("version 3"), std::string::npos) << version;
  const std::string no_results = message(R"({"version":2,"args":["all_reduce_perf"]})");
  EXPECT_NE(no_results.find("no 'results' list"), std::string::npos) << no_results;
  const std::string empty = message(R"({"version":2,"args":["all_reduce_perf"],"results":[]})");
  EXPECT_NE(empty.find("no timed results"), std::string::npos) << empty;
  const std::string bad_row = message(R"({"version":2,"args":["all_reduce_perf"],"results":[{"size":"8"}]})");
  EXPECT_NE(bad_row.find("results[0]"), std::string::npos) << bad_row;
  const std::string unmodelled =
      message(R"({"version":2,"args":["./gather_perf"],"config":{"nthreads":1,"ngpus":2,"devices":[{"rank":0,"hostname":"h"}]},
                  "results":[{"size":8,"count":2,"out_of_place":{"time":1.0,"alg_bw":0.1,"bus_bw":0.1,"nwrong":0}}]})");
  EXPECT_NE(unmodelled.find("gather_perf"), std::string::npos) << unmodelled;
}

TEST(NcclTestsText, HeaderWithoutRowsAndUnknownTool) {
  EXPECT_THROW((void)parse_collective_log("", "x.txt"), InputError);
  EXPECT_THROW((void)parse_collective_log(" \n\n", "x.txt"), InputError);
  try {
    (void)parse_nccl_tests_log(
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
        "time   algbw   busbw #wrong\n",
        "only_header.txt");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no data rows"), std::string::npos) << e.what();
  }
  try {
    (void)read_collective_log(synthetic("osu_allreduce_not_supported.txt"));
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("osu_allreduce_not_supported.txt"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("not a log of a known tool"), std::string::npos);
  }
}

TEST(NcclVersion, Codes) {
  EXPECT_EQ(nccl_version_string(22809), "2.28.9");
  EXPECT_EQ(nccl_version_string(21903), "2.19.3");
  EXPECT_EQ(nccl_version_string(2708), "2.7.8");
}

}  // namespace
}  // namespace trainplan::request
