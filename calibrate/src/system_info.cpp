#include "system_info.hpp"

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "gpu_error.hpp"
#include "provenance.hpp"

namespace trainplan::calibrate {
namespace {

// Output of a shell command, or nothing when it cannot run or fails.
std::string command_output(const char* command) {
  struct Closer {
    int* status;
    void operator()(std::FILE* f) const noexcept { *status = pclose(f); }
  };
  int status = -1;
  std::string out;
  {
    std::unique_ptr<std::FILE, Closer> pipe(popen(command, "r"), Closer{&status});
    if (!pipe) return {};
    std::array<char, 4096> buf{};
    std::size_t n = 0;
    while ((n = std::fread(buf.data(), 1, buf.size(), pipe.get())) > 0) out.append(buf.data(), n);
  }
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return {};
  return out;
}

std::string first_line(const std::string& text) {
  const auto end = text.find('\n');
  return text.substr(0, end);
}

}  // namespace

SoftwareVersions query_versions() {
  SoftwareVersions v;
  int runtime = 0;
  int driver_api = 0;
  TP_CUDA(cudaRuntimeGetVersion(&runtime));
  TP_CUDA(cudaDriverGetVersion(&driver_api));
  v.cuda = cuda_version_string(runtime);
  const std::string smi = first_line(
      command_output("nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null"));
  v.driver = smi.empty() ? fmt::format("CUDA driver API {}", cuda_version_string(driver_api))
                         : fmt::format("{} (CUDA driver API {})", smi, cuda_version_string(driver_api));
  int nccl = 0;
  TP_NCCL(ncclGetVersion(&nccl));
  v.nccl = version_5digit(nccl);
  v.cublas = version_5digit(static_cast<long long>(cublasLtGetVersion()));
  v.cudnn = version_5digit(static_cast<long long>(cudnnGetVersion()));
  return v;
}

std::string gpu_name(int device) {
  cudaDeviceProp prop{};
  TP_CUDA(cudaGetDeviceProperties(&prop, device));
  return prop.name;
}

Provenance run_provenance(int device, int world_size, const std::string& command) {
  const SoftwareVersions v = query_versions();
  return {.gpu = gpu_name(device),
          .gpu_count = world_size,
          .hosts = {},
          .nodes = 1,
          .ranks = world_size,
          .driver = v.driver,
          .cuda = v.cuda,
          .nccl = v.nccl,
          .cublas = v.cublas,
          .cudnn = v.cudnn,
          .command = command,
          .date = iso8601_utc_now(),
          .sources = {}};
}

std::string topology_text() {
  std::string smi = command_output("nvidia-smi topo -m 2>/dev/null");
  if (!smi.empty()) return smi;
  int count = 0;
  TP_CUDA(cudaGetDeviceCount(&count));
  std::string out = "nvidia-smi not available; cudaDeviceCanAccessPeer (1 = peer access):\n     ";
  for (int j = 0; j < count; ++j) out += fmt::format(" GPU{:<2}", j);
  out += '\n';
  for (int i = 0; i < count; ++i) {
    out += fmt::format("GPU{:<2}", i);
    for (int j = 0; j < count; ++j) {
      int can = 0;
      if (i != j) TP_CUDA(cudaDeviceCanAccessPeer(&can, i, j));
      out += i == j ? "     X" : fmt::format("{:>6}", can);
    }
    out += '\n';
  }
  return out;
}

}  // namespace trainplan::calibrate
