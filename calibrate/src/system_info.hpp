// Versions and topology for provenance.json and topology.txt.
#pragma once

#include <string>

#include "provenance.hpp"

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
// What provenance.json says of every run: the GPU of `device`, the job's ranks, the software
// versions, the command and the time now. Hosts, nodes and sources are the caller's.
[[nodiscard]] Provenance run_provenance(int device, int world_size, const std::string& command);
// `nvidia-smi topo -m` where the program exists, else the cudaDeviceCanAccessPeer matrix.
[[nodiscard]] std::string topology_text();

}  // namespace trainplan::calibrate
