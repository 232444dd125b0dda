// The lines trainplan-calibrate writes are read back by the project's run-directory reader
// (trainplan/request/measurements.hpp), which rejects unknown keys: the two sides of the contract.
#include <gtest/gtest.h>

#include <string>

#include "measurement.hpp"
#include "provenance.hpp"
#include "sweep.hpp"
#include "trainplan/request/measurements.hpp"

namespace tb = trainplan::calibrate;

TEST(CalibrateContract, ReaderAcceptsEveryLineKind) {
  const tb::GemmShape g{4096, 12288, 4096, tb::GemmLabel::kQkv};
  const tb::AttentionShape a{2, 32, 8, 128, 8192, false};
  std::string text;
  for (const tb::Scope scope : {tb::Scope::kIntraNode, tb::Scope::kInterNode, tb::Scope::kWorld}) {
    const int nodes = scope == tb::Scope::kIntraNode ? 1 : 2;
    text += tb::with_collective_result(
                tb::collective_params(tb::Collective::kReduceScatter, scope, nodes == 1 ? 8 : 16, nodes,
                                      tb::CollDtype::kBf16, tb::kMiB),
                120.0, 0.9, true)
                .dump() +
            "\n";
  }
  text += tb::with_gemm_result(tb::gemm_params(tb::GemmDtype::kFp8, g), g, 300.0).dump() + "\n";
  for (const auto impl : {tb::AttentionImpl::kCudnn, tb::AttentionImpl::kUnfused}) {
    text += tb::with_attention_result(tb::attention_params(tb::AttentionPass::kFwd, impl, a), a,
                                      tb::AttentionPass::kFwd, 900.0)
                .dump() +
            "\n";
  }
  for (const auto dir : {tb::MemDirection::kD2D, tb::MemDirection::kH2D, tb::MemDirection::kD2H}) {
    text += tb::with_memory_result(tb::memory_params(dir, tb::kGiB), 1.0 * tb::kGiB, 800.0).dump() +
            "\n";
  }
  text += tb::with_cpu_adam_result(tb::cpu_adam_params(100), 100, 5.0).dump() + "\n";

  const auto m = trainplan::request::parse_measurements_jsonl(text, "measurements.jsonl");
  EXPECT_EQ(m.collectives.size(), 3u);
  EXPECT_EQ(m.gemms.size(), 1u);
  EXPECT_EQ(m.attention.size(), 2u);
  EXPECT_EQ(m.bandwidth.size(), 3u);
  EXPECT_EQ(m.cpu_adam.size(), 1u);
  EXPECT_EQ(m.gemms[0].label, "qkv");
}

TEST(CalibrateContract, ReaderAcceptsProvenance) {
  tb::Provenance p;
  p.gpu = "NVIDIA H100 80GB HBM3";
  p.gpu_count = 16;
  p.hosts = {"node1", "node2"};
  p.nodes = 2;
  p.ranks = 16;
  p.driver = "580.65.06 (CUDA driver API 13.0)";
  p.cuda = "13.0";
  p.nccl = "2.28.9";
  p.cublas = "13.1.0";
  p.cudnn = "9.19.0";
  p.command = "trainplan-calibrate --comm -o runs/2nodes";
  p.date = tb::iso8601_utc_now();
  const auto r = trainplan::request::parse_provenance_json(tb::to_json(p).dump(2), "provenance.json");
  EXPECT_EQ(r.tool, "trainplan-calibrate");
  EXPECT_EQ(r.ranks, 16);
  EXPECT_EQ(r.hosts.size(), 2u);
}
