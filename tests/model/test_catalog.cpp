// The catalogue and the names users type: models, GPUs, clusters.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "../common/catalog.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/request/catalog.hpp"
#include "trainplan/request/cluster_shape.hpp"

namespace trainplan {
namespace {

using test::catalog;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Catalog, CoversTheIssueList) {
  for (const char* name : {"llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b",
                           "codellama-7b", "open-llama-3b", "open-llama-7b", "open-llama-13b", "tinyllama-1.1b",
                           "mistral-7b", "mixtral-8x7b", "qwen2.5-7b", "gemma-2b", "gemma-7b", "falcon-7b", "falcon-40b",
                           "bloom-560m", "bloom-176b", "gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl", "gpt3-175b",
                           "mpt-7b", "mpt-30b", "phi-2", "t5-3b"}) {
    SCOPED_TRACE(name);
    EXPECT_NO_THROW((void)catalog().resolve_model(name));
  }
  for (const char* gpu : {"A100-40GB", "A100-80GB", "A100-80GB-PCIe", "H100-80GB", "H100-80GB-PCIe", "H200", "V100-16GB",
                          "V100-32GB", "A10G", "L4", "L40S", "RTX-3090", "RTX-4090", "RTX-A6000", "MI250X", "MI300X"}) {
    SCOPED_TRACE(gpu);
    EXPECT_NO_THROW((void)catalog().resolve_gpu(gpu));
  }
}

TEST(Catalog, AliasesResolve) {
  EXPECT_EQ(catalog().resolve_model("meta-llama/Llama-2-13b-hf").arch.name, "llama-2-13b");
  EXPECT_EQ(catalog().resolve_model("13B").arch.name, "llama-2-13b");
  EXPECT_NE(catalog().resolve_model("13b").note.find("size alias"), std::string::npos);
  for (const char* size : {"1b", "3b", "7b", "8b", "13b", "34b", "70b", "405b"}) {
    SCOPED_TRACE(size);
    EXPECT_EQ(catalog().resolve_model(size).arch.family, "llama");
  }
  const auto g = catalog().resolve_gpu("A100");
  EXPECT_EQ(g.spec.name, "A100-80GB");
  EXPECT_NE(g.note.find("family default"), std::string::npos);
}

TEST(Catalog, UnknownModelSuggestsNearNames) {
  const std::string msg = error_of([] { (void)catalog().resolve_model("llama-2-13"); });
  EXPECT_NE(msg.find("unknown model 'llama-2-13'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("llama-2-13b"), std::string::npos) << msg;
}

TEST(Catalog, ClusterSpecs) {
  struct Row {
    const char* spec;
    int nodes, gpus_per_node;
    const char* gpu;
  };
  for (const Row& r : {Row{"A100-80GB", 1, 1, "A100-80GB"}, Row{"1xA100-80GB", 1, 1, "A100-80GB"},
                       Row{"4xA100-80GB", 1, 4, "A100-80GB"}, Row{"2x8xH100-80GB", 2, 8, "H100-80GB"},
                       Row{"4xA100", 1, 4, "A100-80GB"}, Row{"16xH100", 2, 8, "H100-80GB"},
                       Row{"8xMI300X", 1, 8, "MI300X"}}) {
    SCOPED_TRACE(r.spec);
    const auto c = catalog().resolve_cluster(r.spec, std::nullopt).cluster;
    EXPECT_EQ(c.nodes, r.nodes);
    EXPECT_EQ(c.gpus_per_node, r.gpus_per_node);
    EXPECT_EQ(c.gpu.name, r.gpu);
  }
  const auto c = catalog().resolve_cluster("2x8xA100-80GB", std::string("4x400Gbps")).cluster;
  EXPECT_EQ(c.inter_node.links_per_node, 4);
  EXPECT_DOUBLE_EQ(c.inter_node.per_node().value(), 4 * 400e9 / 8);
  const auto f = catalog().resolve_cluster(std::string(TRAINPLAN_TEST_DATA) + "/cluster_ok.json", std::nullopt).cluster;
  EXPECT_EQ(f.world(), 16);
  EXPECT_DOUBLE_EQ(f.host_memory.value(), 1024.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(c.host_memory.value(), 0.0);  // not stated: not checked
  // A GPU the catalogue lacks, described inline in the cluster file: its own numbers, and a note.
  const auto inl = catalog().resolve_cluster(std::string(TRAINPLAN_TEST_DATA) + "/cluster_inline_gpu.json", std::nullopt);
  EXPECT_EQ(inl.cluster.gpu.name, "MI350X");
  EXPECT_DOUBLE_EQ(inl.cluster.gpu.peak.bf16, 2291.7);
  EXPECT_DOUBLE_EQ(inl.cluster.gpu.hbm_bandwidth.value(), 8000e9);
  EXPECT_EQ(inl.cluster.world(), 8);
  ASSERT_FALSE(inl.notes.empty());
  EXPECT_NE(inl.notes.front().find("not catalogued"), std::string::npos);
}

// The GUI keeps its cluster in the request's spec and shows it as fields (request::ClusterShape):
// every spec reads as the fields it spells (a count of GPUs alone is one node of them until the
// catalogue fills nodes the GPU's way), a file stays a file, and the fields written back spell the
// nodes, so the catalogue resolves them to the same cluster.
TEST(Catalog, ClusterShapesRoundTripThroughTheSpec) {
  const request::ClusterShape two = request::cluster_shape("2x8xH100-80GB");
  EXPECT_EQ(two, (request::ClusterShape{"", "H100-80GB", 8, 2}));
  EXPECT_EQ(two.spec(), "2x8xH100-80GB");
  EXPECT_EQ(request::cluster_shape("4xA100"), (request::ClusterShape{"", "A100", 4, 1}));
  EXPECT_EQ(request::cluster_shape("8xMI300X"), (request::ClusterShape{"", "MI300X", 8, 1}));
  EXPECT_EQ(request::cluster_shape("A100-80GB"), (request::ClusterShape{"", "A100-80GB", 1, 1}));
  EXPECT_EQ(request::cluster_shape("racks/CL.JSON").file, "racks/CL.JSON");
  EXPECT_EQ(request::cluster_shape("racks/CL.JSON").spec(), "racks/CL.JSON");
  EXPECT_EQ(request::cluster_shape("16xH100"), (request::ClusterShape{"", "H100", 16, 1}));
  for (const char* spec : {"2x8xA100-80GB", "8xMI300X", "1x4xH100-80GB", "GB200"}) {
    SCOPED_TRACE(spec);
    const hardware::Cluster a = catalog().resolve_cluster(spec, std::nullopt).cluster;
    const hardware::Cluster b =
        catalog().resolve_cluster(request::cluster_shape(spec).spec(), std::nullopt).cluster;
    EXPECT_EQ(b.nodes, a.nodes);
    EXPECT_EQ(b.gpus_per_node, a.gpus_per_node);
    EXPECT_EQ(b.gpu.name, a.gpu.name);
  }
  try {
    (void)request::cluster_shape("99999999999999999999x8xA100-80GB");
    FAIL() << "a count past int was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("99999999999999999999x8xA100-80GB"), std::string::npos) << e.what();
  }
}

TEST(Catalog, BadClusterSpecsNameTheInput) {
  struct Row {
    std::string spec;
    std::optional<std::string> inter;
    const char* must_mention;
  };
  const Row rows[] = {
      {"4xR100", std::nullopt, "unknown GPU 'R100'"},
      {"0xA100-80GB", std::nullopt, "at least 1"},
      {"12xA100-80GB", std::nullopt, "do not fill nodes of 8"},
      {"2x8xA100-80GB", std::string("fast"), "inter-node 'fast'"},
      {std::string(TRAINPLAN_TEST_DATA) + "/cluster_typo.json", std::nullopt, "'gpus_per_node' is missing (unknown keys present: 'gpus_per_nodes')"},
      {"missing_cluster.json", std::nullopt, "cannot read cluster file"},
      {std::string(TRAINPLAN_TEST_DATA) + "/cluster_bad_host.json", std::nullopt, "'host_memory_GiB' must be positive"},
      // Counts whose product would overflow int, rates no NIC has, names no catalogue holds.
      {"1000000x1000000xA100-80GB", std::nullopt, "more than 1,000,000 GPUs"},
      {"2x8xA100-80GB", std::string("2000x200Gbps"), "too large (at most 1024 per node)"},
      {"2x8xA100-80GB", std::string("8x99999999Gbps"), "at most 100000 Gb/s"},
      {std::string(5000, 'x') + ".json", std::nullopt, "cluster is 5005 characters long"},
      // A GPU described inline is checked as a catalogue file is.
      {std::string(TRAINPLAN_TEST_DATA) + "/cluster_inline_gpu_bad.json", std::nullopt,
       "gpu: keys 'hbm_bandwidth_GBps' and 'peak_dense_TFLOPS.fp32' must be positive"},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.spec);
    const std::string msg = error_of([&] { (void)catalog().resolve_cluster(r.spec, r.inter); });
    EXPECT_NE(msg.find(r.must_mention), std::string::npos) << msg;
  }
  // The unknown-GPU message lists the known ones.
  EXPECT_NE(error_of([] { (void)catalog().resolve_gpu("R100"); }).find("H100-80GB"), std::string::npos);
}

// Cluster files: counts beyond int, and an unknown GPU, are named with the file and the key.
TEST(Catalog, ClusterFileValuesAreBounded) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "trainplan-test-cluster-files";
  fs::create_directories(dir);
  struct Row {
    const char* file;
    const char* json;
    const char* must_mention;
  };
  for (const Row& r : {Row{"nodes.json", R"({"gpu":"A100-80GB","nodes":4294967304,"gpus_per_node":8})",
                           "'nodes' must be at most 1000000 (got 4294967304)"},
                       Row{"huge.json", R"({"gpu":"A100-80GB","nodes":99999999999999999999,"gpus_per_node":8})",
                           "'nodes' must be an integer"},
                       Row{"gpu.json", R"({"gpu":"R100","nodes":1,"gpus_per_node":8})", "key 'gpu': unknown GPU 'R100'"},
                       Row{"domain.json", R"({"gpu":"GB200","nodes":4,"gpus_per_node":4,"nvlink_domain_gpus":10})",
                           "key 'nvlink_domain_gpus' 10 is not a whole number of its nodes of 4 GPUs"},
                       Row{"link.json",
                           R"({"gpu":"A100-80GB","nodes":2,"gpus_per_node":8,
                               "inter_node":{"links_per_node":8,"link_Gbps":-1,"fabric":"infiniband"}})",
                           "'link_Gbps' must be a rate above 0"}}) {
    SCOPED_TRACE(r.file);
    const std::string path = (dir / r.file).string();
    std::ofstream(path) << r.json;
    const std::string msg = error_of([&] { (void)catalog().resolve_cluster(path, std::nullopt); });
    EXPECT_NE(msg.find(r.file), std::string::npos) << msg;
    EXPECT_NE(msg.find(r.must_mention), std::string::npos) << msg;
  }
  fs::remove_all(dir);
}

// Model names are bounded and echoed short.
TEST(Catalog, LongModelNamesAreRefused) {
  const std::string msg = error_of([] { (void)catalog().resolve_model(std::string(40000, 'x')); });
  EXPECT_NE(msg.find("model name is 40000 characters long"), std::string::npos) << msg.substr(0, 200);
  const std::string near = error_of([] { (void)catalog().resolve_model(std::string(300, 'y')); });
  EXPECT_LT(near.size(), 400u) << near.substr(0, 200);
}

// Our own JSON files reject unknown keys: checked through the same reader on a typo'd copy.
TEST(Catalog, OwnFilesRejectUnknownKeys) {
  const request::Json j = request::Json::parse(R"({"name":"x","gpu":"A100-80GB","nodes":1,"gpus_per_node":1,"colour":"red"})");
  request::ObjectReader r(j, "cluster file 'x.json'");
  r.ignore({"name", "gpu", "nodes", "gpus_per_node"});
  EXPECT_THROW(r.reject_unknown(), InputError);
}

}  // namespace
}  // namespace trainplan
