// Versions and topology for provenance.json and topology.txt.
#pragma once

#include <string>

namespace trainplan::calibrate {

struct SoftwareVersions {
  std::string driver;
  std::string cuda;
  std::string nccl;
  std::string cublas;
  std::string cudnn;
};

[[nodiscard]] SoftwareVersions query_versions();
[[nodiscard]] std::string gpu_name(int device);
// `nvidia-smi topo -m` where the program exists, else the cudaDeviceCanAccessPeer matrix.
[[nodiscard]] std::string topology_text();

}  // namespace trainplan::calibrate
