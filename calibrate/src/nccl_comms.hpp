// The NCCL communicators of one process and the waits on them, shared by the collective sweep
// (comm.cpp) and the replay (replay_comm.cpp). Communicators are nonblocking: a call still at work
// answers ncclInProgress, so that a hang ends in an error after the --timeout instead of holding
// the job.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime.h>
#include <nccl.h>

#include "bootstrap.hpp"
#include "device.hpp"
#include "gpu_error.hpp"

namespace trainplan::calibrate {

// Whether a call on a nonblocking communicator went through: done, or still at work.
[[nodiscard]] inline bool nccl_ok(ncclResult_t r) { return r == ncclSuccess || r == ncclInProgress; }

// "NCCL error in `what`: ..." with NCCL's last error on `comm` (null: the last of any).
[[nodiscard]] GpuError nccl_error(const std::string& what, ncclResult_t r, ncclComm_t comm);

// Runs enqueue(i) for each i < n between ncclGroupStart and ncclGroupEnd and returns what
// ncclGroupEnd answers. A call that fails ends the group, then fail(i, r) throws.
template <class Enqueue, class Fail>
[[nodiscard]] ncclResult_t nccl_group(std::size_t n, Enqueue&& enqueue, Fail&& fail) {
  TP_NCCL(ncclGroupStart());
  for (std::size_t i = 0; i < n; ++i) {
    const ncclResult_t r = enqueue(i);
    if (!nccl_ok(r)) {
      ncclGroupEnd();
      fail(i, r);
    }
  }
  return ncclGroupEnd();
}

// The same, a failed call reported as check_nccl reports `call`.
template <class Enqueue>
[[nodiscard]] ncclResult_t nccl_group(std::size_t n, const char* call, Enqueue&& enqueue) {
  return nccl_group(n, std::forward<Enqueue>(enqueue),
                    [call](std::size_t, ncclResult_t r) { check_nccl(r, call); });
}

// One GPU of this process in a job: its device, its world rank (the process's first rank plus its
// index) and the stream its collectives run on.
struct RankGpu {
  int device = 0;
  int world_rank = 0;
  StreamPtr stream;
};

// One Gpu (a RankGpu) per device of `boot`, each with a stream made on it; setup(gpu) runs with
// the device current.
template <class Gpu, class Setup>
[[nodiscard]] std::vector<Gpu> rank_gpus(const Bootstrap& boot, Setup&& setup) {
  std::vector<Gpu> gpus(boot.devices().size());
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    gpus[i].device = boot.devices()[i];
    gpus[i].world_rank = boot.first_rank() + static_cast<int>(i);
    const DeviceGuard guard(gpus[i].device);
    gpus[i].stream = make_stream();
    setup(gpus[i]);
  }
  return gpus;
}

// What a stream's work is polled by: the stream and a communicator whose asynchronous errors
// stop the wait.
struct PolledStream {
  cudaStream_t stream;
  ncclComm_t comm;
};

// A GPU taking part in a host-side reduction: its communicator and the device and pinned host
// buffers the values pass through.
struct ScratchGpu {
  int device;
  cudaStream_t stream;
  ncclComm_t comm;
  void* scratch;
  void* host;
};

class NcclComms {
 public:
  // `forget` is called when the communicators go (aborted or finalized), so that the owner drops
  // its copies of them.
  NcclComms(double timeout_s, std::function<void()> forget);
  // Aborts every communicator that shutdown() did not finalize, in the order they were made.
  ~NcclComms();
  NcclComms(const NcclComms&) = delete;
  NcclComms& operator=(const NcclComms&) = delete;

  // One communicator per device of this process, world ranks first_rank, first_rank + 1, ... of
  // `world`, made in one NCCL group and waited for.
  [[nodiscard]] std::vector<ncclComm_t> init(const ncclUniqueId& id, int world, int first_rank,
                                             const std::vector<int>& devices);
  // parents[i], of world rank world_ranks[i], split by color_of(world rank) in one NCCL group and
  // waited for; null where the color is NCCL_SPLIT_NOCOLOR. `what` names the split in messages.
  [[nodiscard]] std::vector<ncclComm_t> split(const std::vector<ncclComm_t>& parents,
                                              const std::vector<int>& world_ranks,
                                              const std::function<int(int)>& color_of,
                                              const std::string& what);

  // Waits until no communicator of `comms` (null ones skipped) is still initialising or
  // enqueueing.
  void wait_ready(const std::vector<ncclComm_t>& comms, const std::string& what);
  // What ncclGroupEnd answered for `comms`: an error throws, in-progress waits for them.
  void end_group(ncclResult_t r, const std::vector<ncclComm_t>& comms, const std::string& what);
  // Waits for the streams, polling their communicators for asynchronous errors and the timeout.
  void wait_streams(const std::vector<PolledStream>& work, const std::string& what);
  // Element-wise all-reduce of values[i], a few doubles on gpus[i], over their communicators: the
  // result as the first of them has it.
  [[nodiscard]] std::vector<double> all_reduce_doubles(const std::vector<ScratchGpu>& gpus,
                                                       const std::vector<std::vector<double>>& values,
                                                       ncclRedOp_t op);
  // Aborts every communicator and throws the timeout of `what`.
  [[noreturn]] void abort_all(const std::string& what);

  // Finalizes and destroys the communicators, newest first.
  void shutdown();

 private:
  using Clock = std::chrono::steady_clock;

  std::chrono::duration<double> timeout_;
  std::function<void()> forget_;
  std::vector<ncclComm_t> owned_;  // in the order they were made
};

}  // namespace trainplan::calibrate
