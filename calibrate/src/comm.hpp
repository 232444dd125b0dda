// NCCL collective sweeps over the intra-node group, one GPU per node across nodes, and the world.
// Every rank runs the same plan in the same order; world rank 0 writes the results.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <nccl.h>

#include "bootstrap.hpp"
#include "device.hpp"
#include "measurement.hpp"
#include "nccl_comms.hpp"
#include "names.hpp"
#include "options.hpp"
#include "progress.hpp"
#include "sweep.hpp"

namespace trainplan::calibrate {

struct CommPoint {
  Collective collective = Collective::kAllReduce;
  Scope scope = Scope::kIntraNode;
  int ranks = 0;
  int nodes = 0;
  CollDtype dtype = CollDtype::kFloat;
  CollectiveShape shape;
};

class CommSuite {
 public:
  // Creates the world communicator over all ranks (nonblocking, so that a hang can be aborted),
  // gathers the host names and splits the scope communicators. Collective over all ranks.
  CommSuite(const Bootstrap& boot, double timeout_s);
  ~CommSuite();
  CommSuite(const CommSuite&) = delete;
  CommSuite& operator=(const CommSuite&) = delete;

  // Distinct hosts in order of first appearance.
  [[nodiscard]] std::vector<std::string> hosts() const;
  [[nodiscard]] int nodes() const { return nodes_; }

  // The points to measure, the same on every rank. Shrinks the size range to what fits in the
  // smallest free device memory of any rank (and says so through `progress`).
  [[nodiscard]] std::vector<CommPoint> plan(const Options& o, const Progress& progress);

  // Measures the points. `log` is non-null on world rank 0 only. Collective over all ranks.
  void run(const std::vector<CommPoint>& points, const Options& o, MeasurementLog* log,
           Progress& progress);

  // Finalizes and destroys the communicators; without it the destructor aborts them.
  void shutdown();

 private:
  struct LocalGpu : RankGpu {
    // Per Scope (by enum value): the communicator, or null where this GPU is not a member.
    ncclComm_t comm[3] = {nullptr, nullptr, nullptr};
    int rank_in[3] = {0, 0, 0};
    int size_of[3] = {0, 0, 0};
    DeviceBuffer send;
    DeviceBuffer recv;
    DeviceBuffer scratch;
    PinnedBuffer host_scratch;
    DeviceBuffer error_count;
  };

  using Clock = std::chrono::steady_clock;

  [[nodiscard]] std::vector<LocalGpu*> members(Scope s);
  [[nodiscard]] static std::vector<ncclComm_t> comms_of(const std::vector<LocalGpu*>& gpus, Scope s);
  [[nodiscard]] static std::vector<PolledStream> streams_of(const std::vector<LocalGpu*>& gpus,
                                                            Scope s);
  void ensure_scratch(std::size_t bytes);

  // Small host-side helpers over NCCL (no MPI needed): gather, sum/min, broadcast.
  [[nodiscard]] std::vector<char> all_gather_bytes(const std::vector<std::vector<char>>& blocks);
  [[nodiscard]] std::vector<double> reduce_doubles(Scope s,
                                                   const std::vector<std::vector<double>>& values,
                                                   ncclRedOp_t op);
  [[nodiscard]] std::vector<std::uint8_t> broadcast_from_rank0(std::vector<std::uint8_t> data);

  void find_hosts();
  void split_scopes();
  void measure(const CommPoint& p, const Options& o, MeasurementLog* log, Progress& progress);

  const Bootstrap& boot_;
  std::vector<LocalGpu> gpus_;
  NcclComms comms_;  // after gpus_: the communicators go before the streams and buffers
  std::vector<std::string> rank_hosts_;
  std::vector<int> node_of_rank_;
  std::vector<int> local_index_of_rank_;
  int nodes_ = 1;
  int ranks_on_node0_ = 1;
  std::size_t buffer_bytes_ = 0;
};

// Enqueues one collective of `shape` on `stream` (send/recv as a ring: to the next rank, from
// the previous one, as nccl-tests' sendrecv); the sweep and the replay both issue through it.
[[nodiscard]] ncclResult_t issue_collective(Collective c, const CollectiveShape& s,
                                           ncclDataType_t type, const void* send, void* recv,
                                           ncclComm_t comm, int rank, int n, cudaStream_t stream);

}  // namespace trainplan::calibrate
