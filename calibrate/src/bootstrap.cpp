#include "bootstrap.hpp"

#include <unistd.h>

#include <array>
#include <cstdlib>
#include <stdexcept>

#include <fmt/format.h>

#include "gpu_error.hpp"

#ifdef TRAINPLAN_HAVE_MPI
#include <mpi.h>
#endif

namespace trainplan::calibrate {
namespace {

#ifdef TRAINPLAN_HAVE_MPI
void check_mpi(int status, const char* call) {
  if (status == MPI_SUCCESS) return;
  std::array<char, MPI_MAX_ERROR_STRING> text{};
  int len = 0;
  MPI_Error_string(status, text.data(), &len);
  throw std::runtime_error(fmt::format("{} failed: {}", call, text.data()));
}
#define TP_MPI(call) check_mpi((call), #call)

// Local rank = number of lower ranks on the same host (what nccl-tests derives from host hashes).
int local_rank_from_hostnames(int rank, int size) {
  constexpr int kLen = 256;
  std::array<char, kLen> mine{};
  gethostname(mine.data(), kLen - 1);
  std::vector<char> all(static_cast<std::size_t>(kLen) * static_cast<std::size_t>(size));
  TP_MPI(MPI_Allgather(mine.data(), kLen, MPI_CHAR, all.data(), kLen, MPI_CHAR, MPI_COMM_WORLD));
  int local = 0;
  for (int r = 0; r < rank; ++r) {
    if (std::string(&all[static_cast<std::size_t>(r) * kLen]) == mine.data()) ++local;
  }
  return local;
}
#endif

}  // namespace

bool built_with_mpi() {
#ifdef TRAINPLAN_HAVE_MPI
  return true;
#else
  return false;
#endif
}

Bootstrap::Bootstrap(const LaunchInfo& launch, int device_count) : launch_(launch) {
  switch (launch_.mode) {
    case LaunchMode::kSingleProcess:
      world_size_ = device_count;
      first_rank_ = 0;
      for (int d = 0; d < device_count; ++d) devices_.push_back(d);
      return;
    case LaunchMode::kMpi: {
#ifdef TRAINPLAN_HAVE_MPI
      TP_MPI(MPI_Init(nullptr, nullptr));
      mpi_initialized_ = true;
      TP_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &launch_.rank));
      TP_MPI(MPI_Comm_size(MPI_COMM_WORLD, &launch_.world_size));
      if (launch_.local_rank < 0) {
        launch_.local_rank = local_rank_from_hostnames(launch_.rank, launch_.world_size);
      }
      break;
#else
      throw std::logic_error("MPI launch mode in a build without MPI");
#endif
    }
    case LaunchMode::kEnv:
      if (!launch_.nccl_comm_id.empty()) setenv("NCCL_COMM_ID", launch_.nccl_comm_id.c_str(), 0);
      break;
  }
  world_size_ = launch_.world_size;
  first_rank_ = launch_.rank;
  // One GPU per rank: the only visible one (Slurm --gpus-per-task), else by local rank.
  devices_.push_back(device_count == 1 ? 0 : launch_.local_rank % device_count);
}

Bootstrap::~Bootstrap() {
#ifdef TRAINPLAN_HAVE_MPI
  if (mpi_initialized_) MPI_Finalize();
#endif
}

void Bootstrap::abort_job() {
#ifdef TRAINPLAN_HAVE_MPI
  if (mpi_initialized_) MPI_Abort(MPI_COMM_WORLD, 1);
#endif
}

ncclUniqueId Bootstrap::unique_id() const {
  ncclUniqueId id{};
  switch (launch_.mode) {
    case LaunchMode::kSingleProcess:
    case LaunchMode::kEnv:
      // With NCCL_COMM_ID set every rank derives the same id from the address.
      TP_NCCL(ncclGetUniqueId(&id));
      break;
    case LaunchMode::kMpi:
#ifdef TRAINPLAN_HAVE_MPI
      if (launch_.rank == 0) TP_NCCL(ncclGetUniqueId(&id));
      TP_MPI(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD));
#endif
      break;
  }
  return id;
}

}  // namespace trainplan::calibrate
