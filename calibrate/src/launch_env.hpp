// How this process was launched: by mpirun/srun with MPI, by torchrun or Slurm (environment
// variables only), or alone. Reads the environment through a lookup function so tests can feed it.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace trainplan::calibrate {

enum class LaunchMode {
  kSingleProcess,  // one process drives every local GPU (like nccl-tests -g N)
  kMpi,            // rank 0 gets the NCCL id and MPI_Bcasts it
  kEnv,            // NCCL_COMM_ID=MASTER_ADDR:(MASTER_PORT+1): every rank computes the same id
};

struct LaunchInfo {
  LaunchMode mode = LaunchMode::kSingleProcess;
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;  // kMpi: -1 when the launcher does not say (then derived from host names)
  std::string launcher = "single process";
  // kEnv: the NCCL_COMM_ID to export before ncclGetUniqueId, empty if the user already set one.
  std::string nccl_comm_id;
};

using EnvLookup = std::function<std::optional<std::string>(const char* name)>;

[[nodiscard]] EnvLookup process_environment();

// Precedence: MPI launcher variables (when built with MPI), torchrun (RANK/WORLD_SIZE/LOCAL_RANK),
// Open MPI variables without MPI support, Slurm (SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID), alone.
// Throws std::invalid_argument naming the variable when one is malformed or a needed one missing.
[[nodiscard]] LaunchInfo detect_launch(const EnvLookup& env, bool mpi_built);

// First host of a Slurm hostlist: "gpu[01-04,07],cpu1" -> "gpu01".
[[nodiscard]] std::string slurm_first_host(std::string_view nodelist);

}  // namespace trainplan::calibrate
