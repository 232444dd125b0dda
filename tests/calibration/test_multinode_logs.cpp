// Published multi-node nccl-tests logs, five clusters, each at its published node counts
// (tests/calibration/data/real/multinode/README.md has each file's source): ABCI's A100 and V100
// nodes (1-16 and 1-32 nodes, the 2021 output format), CSCS Alps GH200 (1-256 nodes, srun -l labels,
// set -x traces, runs that failed validation), OCI GB300 NVL72 (1-32 nodes, device lists and tables
// shortened by hand), AWS p5 H100 (2 nodes, mpirun --tag-output with every table row forwarded in
// three pieces) and an H100 cluster running five collectives in one file. Every block must read as
// the run its source states: the node and rank counts in the file's name (<nodes>n<ranks>r).

#include <gtest/gtest.h>

#include <algorithm>
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

// calibrate fit on one cluster's logs at every node count (issue 27's bars). The profile answers
// each measured size within median 3 % / max 10 % (interpolation of the measured points). Each
// multi-node count is then taken out, the collective model refitted to the other counts and the
// taken-out points predicted (held-out scale): pooled over the counts, the median must be within
// 15 %. Three clusters at three or more multi-node counts each: ABCI's A100 nodes (2-16 nodes,
// 4 B - 32 MiB, NCCL 2.8.4), its V100 nodes (2-32) and CSCS Alps GH200 (2-256 nodes, 8 B - 4 GiB,
// NCCL 2.23.4 over Slingshot). Per count, the held-out errors are printed; where one count is
// above 15 % (Alps at 2 nodes and at 128-256) the log's own mid-size bumps, which no other count
// shows, are what is missed.
TEST(MultinodeLogs, ProfileAnswersEveryScaleAndPredictsTheOthers) {
  for (const std::string cluster : {"abci-anode-a100", "abci-vnode-v100", "alps-gh200"}) {
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
    int multi_node_counts = 0;
    for (const calibration::CurveReport& c : fit.curves) {
      EXPECT_LE(c.profile.median_rel_err, 0.03);
      EXPECT_LE(c.profile.max_rel_err, 0.10);
      if (c.nodes == 1) continue;
      ++multi_node_counts;
      ASSERT_TRUE(c.held_out_scale.has_value());
      std::cout << cluster << " " << c.ranks << " ranks on " << c.nodes << " nodes, from the others: median "
                << 100 * c.held_out_scale->median_rel_err << " %, max " << 100 * c.held_out_scale->max_rel_err
                << " %\n";
    }
    EXPECT_GE(multi_node_counts, 3);
    const auto inter = std::find_if(fit.scopes.begin(), fit.scopes.end(), [](const calibration::ScopeReport& s) {
      return s.scope == hardware::LinkScope::inter_node;
    });
    ASSERT_NE(inter, fit.scopes.end());
    ASSERT_TRUE(inter->held_out_scale.has_value());
    std::cout << cluster << " pooled held-out scale: median " << 100 * inter->held_out_scale->median_rel_err
              << " %, max " << 100 * inter->held_out_scale->max_rel_err << " %\n";
    EXPECT_LE(inter->held_out_scale->median_rel_err, 0.15);
  }
}

}  // namespace
}  // namespace trainplan::request
