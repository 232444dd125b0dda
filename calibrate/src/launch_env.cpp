#include "launch_env.hpp"

#include <cstdlib>
#include <stdexcept>

#include <fmt/format.h>

namespace trainplan::calibrate {
namespace {

constexpr int kDefaultMasterPort = 29500;

int env_int(const EnvLookup& env, const char* name, int min_value) {
  const auto text = env(name);
  if (!text) throw std::invalid_argument(fmt::format("environment variable {} is not set", name));
  std::size_t pos = 0;
  int value = 0;
  try {
    value = std::stoi(*text, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  if (pos == 0 || pos != text->size() || value < min_value) {
    throw std::invalid_argument(
        fmt::format("environment variable {}='{}' is not an integer >= {}", name, *text, min_value));
  }
  return value;
}

std::optional<int> env_int_opt(const EnvLookup& env, const char* name, int min_value) {
  if (!env(name)) return std::nullopt;
  return env_int(env, name, min_value);
}

// NCCL_COMM_ID for the torchrun-style rendezvous; one above MASTER_PORT so that a launcher still
// listening on MASTER_PORT does not collide with NCCL's bootstrap root.
std::string comm_id_for(const EnvLookup& env, int world_size) {
  if (env("NCCL_COMM_ID")) return {};
  std::optional<std::string> addr = env("MASTER_ADDR");
  if (!addr) {
    if (const auto list = env("SLURM_STEP_NODELIST")) {
      addr = slurm_first_host(*list);
    } else if (const auto job_list = env("SLURM_JOB_NODELIST")) {
      addr = slurm_first_host(*job_list);
    }
  }
  if (!addr || addr->empty()) {
    if (world_size == 1) return {};
    throw std::invalid_argument(
        "launched with several ranks but neither MASTER_ADDR nor NCCL_COMM_ID is set");
  }
  const int port = env_int_opt(env, "MASTER_PORT", 1).value_or(kDefaultMasterPort);
  const bool ipv6 = addr->find(':') != std::string::npos;
  return ipv6 ? fmt::format("[{}]:{}", *addr, port + 1) : fmt::format("{}:{}", *addr, port + 1);
}

void check_rank(const LaunchInfo& info, const char* rank_var, const char* size_var) {
  if (info.rank >= info.world_size) {
    throw std::invalid_argument(fmt::format("{}={} is not below {}={}", rank_var, info.rank,
                                            size_var, info.world_size));
  }
}

// A launcher that tells each process who it is through environment variables alone.
struct EnvLauncher {
  const char* name;
  const char* rank_var;
  const char* size_var;
  const char* local_rank_var;
};

// Rank, world size and local rank as `launcher` sets them, and the NCCL_COMM_ID every rank derives.
LaunchInfo from_env(const EnvLookup& env, const EnvLauncher& launcher) {
  LaunchInfo info;
  info.mode = LaunchMode::kEnv;
  info.launcher = launcher.name;
  info.rank = env_int(env, launcher.rank_var, 0);
  info.world_size = env_int(env, launcher.size_var, 1);
  info.local_rank = env_int(env, launcher.local_rank_var, 0);
  check_rank(info, launcher.rank_var, launcher.size_var);
  info.nccl_comm_id = comm_id_for(env, info.world_size);
  return info;
}

}  // namespace

EnvLookup process_environment() {
  return [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

LaunchInfo detect_launch(const EnvLookup& env, bool mpi_built) {
  LaunchInfo info;
  const bool open_mpi = env("OMPI_COMM_WORLD_SIZE").has_value();
  const bool mpi_env = open_mpi || env("PMI_SIZE") || env("PMIX_RANK");
  if (mpi_env && mpi_built) {
    // Rank and size come from MPI_Comm_rank/size; the local rank from the launcher if it says.
    info.mode = LaunchMode::kMpi;
    info.launcher = "mpi";
    info.local_rank = env_int_opt(env, "OMPI_COMM_WORLD_LOCAL_RANK", 0)
                          .value_or(env_int_opt(env, "MPI_LOCALRANKID", 0)
                                        .value_or(env_int_opt(env, "SLURM_LOCALID", 0).value_or(-1)));
    return info;
  }
  if (env("RANK") && env("WORLD_SIZE")) {
    return from_env(env, {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"});
  }
  if (open_mpi) {
    return from_env(env, {"mpirun (built without MPI: MASTER_ADDR rendezvous)",
                          "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                          "OMPI_COMM_WORLD_LOCAL_RANK"});
  }
  if (env("SLURM_PROCID") && (env("SLURM_STEP_NUM_TASKS") || env("SLURM_NTASKS"))) {
    // srun sets the step's task count; a batch script only has the job's.
    const char* size_var = env("SLURM_STEP_NUM_TASKS") ? "SLURM_STEP_NUM_TASKS" : "SLURM_NTASKS";
    return from_env(env, {"slurm", "SLURM_PROCID", size_var, "SLURM_LOCALID"});
  }
  return info;
}

std::string slurm_first_host(std::string_view nodelist) {
  std::string host;
  std::size_t i = 0;
  while (i < nodelist.size() && nodelist[i] != ',') {
    if (nodelist[i] != '[') {
      host += nodelist[i++];
      continue;
    }
    // "[01-04,07]": keep the first number of the first range, skip to the closing bracket.
    ++i;
    while (i < nodelist.size() && nodelist[i] != '-' && nodelist[i] != ',' && nodelist[i] != ']') {
      host += nodelist[i++];
    }
    while (i < nodelist.size() && nodelist[i] != ']') ++i;
    if (i < nodelist.size()) ++i;
  }
  return host;
}

}  // namespace trainplan::calibrate
