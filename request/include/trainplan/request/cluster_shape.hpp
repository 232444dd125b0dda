#pragma once
// A cluster spec as a form's fields hold it: a cluster file, or nodes x GPUs per node x a GPU.
// Request::cluster_spec stays the one place a cluster is kept; the GUI reads its fields from it and
// writes them back through ClusterShape::spec().

#include <string>

namespace trainplan::request {

struct ClusterShape {
  std::string file;  // a cluster JSON; when set, the fields below are not used
  std::string gpu = "A100-80GB";
  int gpus_per_node = 8;
  int nodes = 1;
  [[nodiscard]] std::string spec() const;  // the file, or "NODESxGPUSxGPU"
  friend bool operator==(const ClusterShape&, const ClusterShape&) = default;
};

// The shape a spec spells, without looking anything up: "2x8xH100-80GB" is 2 nodes of 8, "4xA100"
// one node of 4 and "A100" one GPU until Catalog::resolve_cluster fills nodes the GPU's way; a
// ".json" spec is a file. Throws InputError for counts that are not positive numbers.
[[nodiscard]] ClusterShape cluster_shape(const std::string& spec);

}  // namespace trainplan::request
