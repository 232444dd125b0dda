// The collectives of a replayed plan among the job's ranks: every set of `ranks` world ranks
// `stride` apart (tensor-parallel ranks adjacent, then data-parallel, then pipeline stages, as the
// plan places them) is one NCCL group, and all groups of the job run the collective at once, as
// they do in training. Communicators are nonblocking so that a hang ends in an error after the
// --timeout instead of holding the job.
#pragma once

#include <nccl.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bootstrap.hpp"
#include "device.hpp"
#include "nccl_comms.hpp"
#include "names.hpp"

namespace trainplan::calibrate {

class ReplayComm {
 public:
  // Creates the world communicator and gathers the host names. Collective over all ranks.
  ReplayComm(const Bootstrap& boot, double timeout_s);
  ~ReplayComm();
  ReplayComm(const ReplayComm&) = delete;
  ReplayComm& operator=(const ReplayComm&) = delete;

  [[nodiscard]] std::vector<std::string> hosts() const;  // distinct, in rank order
  [[nodiscard]] int world() const { return world_; }

  // Whether the job holds at least one whole group of `ranks` members `stride` apart.
  [[nodiscard]] bool fits(int ranks, int stride) const;

  // Mean time over the ranks of the whole groups of one collective of nccl-tests size `bytes`
  // (16-bit elements), every group running it at once: `warmup` runs, then `iters` timed back to
  // back. Collective over all ranks; ranks outside a whole group sit it out.
  [[nodiscard]] double time_us(Collective c, std::int64_t bytes, int ranks, int stride, int warmup,
                               int iters);

  // Finalizes and destroys the communicators; without it the destructor aborts them.
  void shutdown();

 private:
  struct Local : RankGpu {
    ncclComm_t world = nullptr;
    std::map<std::pair<int, int>, ncclComm_t> groups;  // by (ranks, stride); null: not a member
    DeviceBuffer send;
    DeviceBuffer recv;
    DeviceBuffer scratch;  // results and host names
    PinnedBuffer host;
  };
  using Clock = std::chrono::steady_clock;

  void gather_hosts();
  void split(int ranks, int stride);
  // Element-wise sum over every rank of the job of a few doubles (results, a barrier).
  [[nodiscard]] std::vector<double> sum_over_world(const std::vector<std::vector<double>>& values);
  // The streams of `gpus`, polled with their world communicators.
  [[nodiscard]] static std::vector<PolledStream> world_streams(const std::vector<Local*>& gpus);

  const Bootstrap& boot_;
  int world_ = 1;
  std::vector<Local> gpus_;
  NcclComms comms_;  // after gpus_: the communicators go before the streams and buffers
  std::vector<std::string> rank_hosts_;
};

}  // namespace trainplan::calibrate
