// Published multi-node nccl-tests logs, five clusters, each at its published node counts
// (tests/calibration/data/real/multinode/README.md has each file's source): ABCI's A100 and V100
// nodes (1-16 and 1-32 nodes, the 2021 output format), CSCS Alps GH200 (1-256 nodes, srun -l labels,
// set -x traces, runs that failed validation), OCI GB300 NVL72 (1-32 nodes, device lists and tables
// shortened by hand), AWS p5 H100 (2 nodes, mpirun --tag-output with every table row forwarded in
// three pieces) and an H100 cluster running five collectives in one file. Every block must read as
// the run its source states: the node and rank counts in the file's name (<nodes>n<ranks>r).

#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <regex>
#include <string>
#include <vector>

#include "paths.hpp"
#include "trainplan/calibration/profile_fit.hpp"
#include "trainplan/request/collective_log.hpp"

namespace trainplan::request {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> multinode_logs() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(test::fixture("multinode")))
    if (e.path().extension() == ".txt") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(MultinodeLogs, HostAndRankCountsAreTheSourcesOwn) {
  static const std::regex kCounts(R"(-(\d+)n(\d+)r\.txt$)");
  const std::vector<fs::path> logs = multinode_logs();
  ASSERT_EQ(logs.size(), 33u);
  int blocks = 0;
  for (const fs::path& p : logs) {
    SCOPED_TRACE(p.filename().string());
    std::smatch m;
    const std::string name = p.filename().string();
    ASSERT_TRUE(std::regex_search(name, m, kCounts));
    const int nodes = std::stoi(m[1].str());
    const int ranks = std::stoi(m[2].str());
    const CollectiveLog log = read_collective_log(p);
    ASSERT_FALSE(log.blocks.empty());
    for (const LogBlock& b : log.blocks) {
      ++blocks;
      EXPECT_EQ(b.ranks, ranks);
      EXPECT_EQ(b.nodes, nodes);
      EXPECT_FALSE(b.nodes_assumed);
      EXPECT_FALSE(b.rows.empty());
      for (const std::string& w : b.warnings) std::cout << name << ": " << w << "\n";
    }
  }
  EXPECT_GE(blocks, 33);
}

// The p5 log's 32 table rows each arrived in three tagged pieces: every one is read.
TEST(MultinodeLogs, RowsForwardedInPiecesAreReadWhole) {
  const CollectiveLog log = read_collective_log(test::fixture("multinode/aws-p5-h100-all_reduce-2n16r.txt"));
  ASSERT_EQ(log.blocks.size(), 1u);
  EXPECT_EQ(log.blocks.front().rows.size(), 32u);
  EXPECT_EQ(log.spliced_lines, 32);
}

// calibrate fit on one cluster's logs at every node count: the profile answers each measured size
// (median 3 %, max 10 %: issue 27's bar, met by interpolation). Each node count predicted from the
// others is where the collective model stands, printed; the bounds below guard against a
// regression and are not the bar (issue 27 asks for a median within 15 %; the nearest-curve model
// with NCCL's ring latencies is far from it on ABCI's latency-bound sizes, 4 B to 32 MiB).
TEST(MultinodeLogs, ProfileAnswersEveryScaleAndSaysHowOthersHoldOut) {
  for (const std::string cluster : {"abci-anode-a100", "alps-gh200"}) {
    SCOPED_TRACE(cluster);
    std::vector<CollectiveLog> logs;
    for (const fs::path& p : multinode_logs())
      if (p.filename().string().starts_with(cluster)) logs.push_back(read_collective_log(p));
    ASSERT_GE(logs.size(), 5u);
    const calibration::Run run = imported_run(logs, cluster);
    calibration::ProfileFitOptions opt;
    opt.name = cluster;
    const calibration::ProfileFit fit = calibration::fit_profile(std::vector<calibration::Run>{run}, opt);
    ASSERT_EQ(fit.curves.size(), logs.size());
    for (const calibration::CurveReport& c : fit.curves) {
      EXPECT_LE(c.profile.median_rel_err, 0.03);
      EXPECT_LE(c.profile.max_rel_err, 0.10);
      if (c.nodes == 1) continue;
      ASSERT_TRUE(c.held_out_scale.has_value());
      std::cout << cluster << " " << c.ranks << " ranks on " << c.nodes << " nodes, from the others: median "
                << 100 * c.held_out_scale->median_rel_err << " %, max " << 100 * c.held_out_scale->max_rel_err
                << " %\n";
      EXPECT_LE(c.held_out_scale->median_rel_err, 0.9);
    }
  }
}

}  // namespace
}  // namespace trainplan::request
