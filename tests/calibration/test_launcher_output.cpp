// What launchers do to nccl-tests output, one case each: the prefixes of mpirun --tag-output,
// srun --label and torchrun, a line one rank wrote in two pieces (mpirun tags each piece, so the
// second tag lands mid-line), and a host name garbled by interleaved output. Each log is the same
// 2-node run (tests/calibration/data/gen3_mpirun_tag_output_alltoall_2node.txt, its tags taken
// off) rewritten the way the launcher writes it, and must read as that run: 4 ranks on 2 hosts,
// 5 sizes.

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "paths.hpp"
#include "trainplan/request/collective_log.hpp"

namespace trainplan::request {
namespace {

// The run's lines without mpirun's tags.
std::vector<std::string> bare_lines() {
  std::ifstream in(test::synthetic("gen3_mpirun_tag_output_alltoall_2node.txt"));
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line.substr(line.find(':') + 1));
  return out;
}

std::string rewrite(const std::function<std::string(const std::string&, std::size_t)>& each) {
  std::string text;
  const std::vector<std::string> lines = bare_lines();
  for (std::size_t i = 0; i < lines.size(); ++i) text += each(lines[i], i) + "\n";
  return text;
}

void expect_the_run(const CollectiveLog& log) {
  ASSERT_EQ(log.blocks.size(), 1u);
  const LogBlock& b = log.blocks.front();
  EXPECT_EQ(b.ranks, 4);
  EXPECT_EQ(b.nodes, 2);
  EXPECT_EQ(b.hosts, (std::vector<std::string>{"gpu-a01", "gpu-a02"}));
  EXPECT_EQ(b.rows.size(), 5u);
  EXPECT_EQ(b.gpu, "NVIDIA A100-SXM4-80GB");
}

TEST(LauncherOutput, MpirunTagOutput) {
  const std::string text = rewrite([](const std::string& l, std::size_t) { return "[1,0]<stdout>:" + l; });
  expect_the_run(parse_nccl_tests_log(text, "all_to_all_perf.txt"));
}

TEST(LauncherOutput, SrunLabel) {
  const std::string text = rewrite([](const std::string& l, std::size_t) { return "0: " + l; });
  expect_the_run(parse_nccl_tests_log(text, "all_to_all_perf.txt"));
}

TEST(LauncherOutput, TorchrunPrefix) {
  const std::string text = rewrite([](const std::string& l, std::size_t) { return "[default0]:" + l; });
  expect_the_run(parse_nccl_tests_log(text, "all_to_all_perf.txt"));
}

// Rank 3's device line forwarded in two pieces: "... on    gpu-a0[1,0]<stdout>:2 device  1 ...".
TEST(LauncherOutput, LineSplitByASecondTag) {
  const std::string text = rewrite([](const std::string& l, std::size_t) {
    std::string tagged = "[1,0]<stdout>:" + l;
    const std::size_t at = tagged.find("gpu-a02 device  1");
    if (at != std::string::npos) tagged.insert(at + 6, "[1,0]<stdout>:");
    return tagged;
  });
  ASSERT_NE(text.find("gpu-a0[1,0]<stdout>:2 device  1"), std::string::npos);
  const CollectiveLog log = parse_nccl_tests_log(text, "all_to_all_perf.txt");
  expect_the_run(log);
  EXPECT_EQ(log.spliced_lines, 1);
  ASSERT_EQ(log.blocks.front().warnings.size(), 1u);
  EXPECT_NE(log.blocks.front().warnings.front().find("read whole"), std::string::npos);
}

// 12 ranks, 4 on each of 3 hosts, with the given host name on rank 5's device line; rows of an
// all-to-all whose busbw is algbw x 11/12 (the bus factor at 12 ranks).
std::string twelve_ranks(const std::string& rank5_host) {
  const std::vector<std::string> bare = bare_lines();
  std::string text = "[1,0]<stdout>:" + bare[0] + "\n[1,0]<stdout>:# Using devices\n";
  for (int r = 0; r < 12; ++r) {
    const std::string host = r == 5 ? rank5_host : "n0" + std::to_string(r / 4 + 1);
    text += "[1,0]<stdout>:#  Rank " + std::to_string(r) + " Group  0 Pid " + std::to_string(5100 + r) + " on " +
            host + " device  " + std::to_string(r % 4) + " [0x07] NVIDIA A100-SXM4-80GB\n";
  }
  for (std::size_t i = 10; i < 13; ++i) text += "[1,0]<stdout>:" + bare[i] + "\n";
  for (const auto& [bytes, us] : {std::pair{1048576, 70.75}, std::pair{4194304, 177.99}}) {
    const double algbw = bytes / us / 1e3;
    char row[256];
    std::snprintf(row, sizeof row, "%12d %13d     float    none      -1 %8.2f %7.2f %7.2f       0 %8.2f %7.2f %7.2f       0",
                  bytes, bytes / 4, us, algbw, algbw * 11 / 12, us, algbw, algbw * 11 / 12);
    text += std::string("[1,0]<stdout>:") + row + "\n";
  }
  return text;
}

// Rank 5's host garbled by interleaved output ("n0[2"): named once, while n02 now shows 3 ranks
// of the 4 the others run. The garbled name is not a node, and the log says so.
TEST(LauncherOutput, HostNamedOnceIsNotANode) {
  const CollectiveLog log = parse_nccl_tests_log(twelve_ranks("n0[2"), "all_to_all_perf.txt");
  const LogBlock& b = log.blocks.front();
  EXPECT_EQ(b.ranks, 12);
  EXPECT_EQ(b.nodes, 3);
  EXPECT_EQ(b.hosts, (std::vector<std::string>{"n01", "n02", "n03"}));
  ASSERT_EQ(b.warnings.size(), 1u);
  EXPECT_NE(b.warnings.front().find("host 'n0[2' is named on one '# Rank' line only"), std::string::npos);
  // The same log read whole: three hosts, no warning.
  const CollectiveLog read_whole = parse_nccl_tests_log(twelve_ranks("n02"), "all_to_all_perf.txt");
  const LogBlock& whole = read_whole.blocks.front();
  EXPECT_EQ(whole.nodes, 3);
  EXPECT_TRUE(whole.warnings.empty());
}

// A fourth host that really ran one rank (13 ranks) is not garbled: no other host misses one.
TEST(LauncherOutput, AHostWithOneRankOfItsOwnIsKept) {
  std::string text = twelve_ranks("n02");
  const std::string last = "[1,0]<stdout>:#  Rank 11 Group  0 Pid 5111 on n03 device  3 [0x07] NVIDIA A100-SXM4-80GB\n";
  text.insert(text.find(last) + last.size(),
              "[1,0]<stdout>:#  Rank 12 Group  0 Pid 5112 on n04 device  0 [0x07] NVIDIA A100-SXM4-80GB\n");
  ImportHints hints;
  hints.ranks = 12;  // the rows' bus factor is of 12 ranks; the host count is what is tested
  const CollectiveLog log = parse_nccl_tests_log(text, "all_to_all_perf.txt", hints);
  ASSERT_EQ(log.blocks.size(), 1u);
  const LogBlock& b = log.blocks.front();
  EXPECT_EQ(b.hosts, (std::vector<std::string>{"n01", "n02", "n03", "n04"}));
  EXPECT_TRUE(b.warnings.empty());
}

}  // namespace
}  // namespace trainplan::request
