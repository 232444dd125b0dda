// Who this process is among the NCCL ranks and how the ranks agree on one ncclUniqueId:
// MPI_Bcast from rank 0 (mpirun/srun, when built with MPI), NCCL_COMM_ID (torchrun/Slurm
// environment: every rank computes the same id), or nothing to agree on (one process, all GPUs).
#pragma once

#include <string>
#include <vector>

#include <nccl.h>

#include "launch_env.hpp"

namespace trainplan::calibrate {

[[nodiscard]] bool built_with_mpi();

class Bootstrap {
 public:
  // Calls MPI_Init in MPI mode. `device_count` is what cudaGetDeviceCount reported.
  Bootstrap(const LaunchInfo& launch, int device_count);
  ~Bootstrap();
  Bootstrap(const Bootstrap&) = delete;
  Bootstrap& operator=(const Bootstrap&) = delete;

  [[nodiscard]] const LaunchInfo& launch() const { return launch_; }
  // NCCL ranks in the job and the first one driven by this process.
  [[nodiscard]] int world_size() const { return world_size_; }
  [[nodiscard]] int first_rank() const { return first_rank_; }
  [[nodiscard]] bool is_rank0() const { return first_rank_ == 0; }
  // CUDA devices this process drives, one NCCL rank each.
  [[nodiscard]] const std::vector<int>& devices() const { return devices_; }

  // The same id on every rank. Collective over the launcher's processes.
  [[nodiscard]] ncclUniqueId unique_id() const;

  // After an error: under MPI, ends every rank of the job now (MPI_Abort) instead of leaving the
  // others waiting in a collective; otherwise nothing (they hit their own --timeout).
  void abort_job();

 private:
  LaunchInfo launch_;
  int world_size_ = 1;
  int first_rank_ = 0;
  std::vector<int> devices_;
  bool mpi_initialized_ = false;
};

}  // namespace trainplan::calibrate
