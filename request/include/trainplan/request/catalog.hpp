#pragma once
// The built-in catalogue (data/ embedded at build time) and the resolution of what a user types:
// a model name, Hugging Face id, size alias or config path; a GPU name or family; a cluster spec.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainplan/hardware/gpu.hpp"
#include "trainplan/request/json_util.hpp"
#include "trainplan/model/architecture.hpp"

namespace trainplan::request {

struct CatalogModel {
  std::string name;
  std::optional<std::string> hf_id;
  std::vector<std::string> aliases;
  std::optional<std::int64_t> parameters;  // published exact count, when one exists
  std::string parameters_source;
  std::string source;
  model::Architecture arch;
};

struct CatalogGpu {
  hardware::GpuSpec spec;
  std::vector<std::string> aliases;
  std::string source;  // the memory and FLOP/s sources, summarised
};

struct ResolvedModel {
  model::Architecture arch;
  std::string note;  // e.g. "13b = llama-2-13b (size alias)"
  const CatalogModel* entry = nullptr;
};

struct ResolvedGpu {
  hardware::GpuSpec spec;
  std::string note;  // e.g. "A100 = A100-80GB (family default)"
};

struct ResolvedCluster {
  hardware::Cluster cluster;
  std::vector<std::string> notes;
};

class Catalog {
 public:
  // Parses the embedded data; throws if our own files are malformed (a build defect, tested).
  [[nodiscard]] static Catalog builtin();

  [[nodiscard]] const std::vector<CatalogModel>& models() const { return models_; }
  [[nodiscard]] const std::vector<CatalogGpu>& gpus() const { return gpus_; }
  [[nodiscard]] const std::vector<std::pair<std::string, std::string>>& size_aliases() const { return sizes_; }
  [[nodiscard]] const std::vector<std::pair<std::string, std::string>>& gpu_families() const { return families_; }

  [[nodiscard]] ResolvedModel resolve_model(const std::string& spec) const;
  [[nodiscard]] ResolvedGpu resolve_gpu(const std::string& name) const;
  // "A100-80GB", "4xA100-80GB", "2x8xH100-80GB", a bare family ("A100"), or a cluster JSON file.
  // inter_node: "8x200Gbps" style override of the NICs per node.
  [[nodiscard]] ResolvedCluster resolve_cluster(const std::string& spec,
                                                const std::optional<std::string>& inter_node) const;

 private:
  std::vector<CatalogModel> models_;
  std::vector<CatalogGpu> gpus_;
  std::vector<std::pair<std::string, std::string>> sizes_;
  std::vector<std::pair<std::string, std::string>> families_;
};

// "8x200Gbps" -> 8 links of 200 Gb/s; "400Gbps" -> one link. Throws InputError naming the text.
[[nodiscard]] hardware::InterNodeLink parse_inter_node(const std::string& text);

// Case-insensitive nearest names (edit distance or substring), for "did you mean" messages.
[[nodiscard]] std::vector<std::string> nearest_names(const std::string& query,
                                                     const std::vector<std::string>& names,
                                                     std::size_t max = 5);

}  // namespace trainplan::request
