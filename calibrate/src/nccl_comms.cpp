#include "nccl_comms.hpp"

#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "device.hpp"

namespace trainplan::calibrate {

GpuError nccl_error(const std::string& what, ncclResult_t r, ncclComm_t comm) {
  return GpuError(
      fmt::format("NCCL error in {}: {} ({})", what, ncclGetErrorString(r), ncclGetLastError(comm)));
}

NcclComms::NcclComms(double timeout_s, std::function<void()> forget)
    : timeout_(timeout_s), forget_(std::move(forget)) {}

NcclComms::~NcclComms() {
  for (ncclComm_t c : owned_) ncclCommAbort(c);
}

std::vector<ncclComm_t> NcclComms::init(const ncclUniqueId& id, int world, int first_rank,
                                        const std::vector<int>& devices) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  std::vector<ncclComm_t> made(devices.size(), nullptr);
  const ncclResult_t end = nccl_group(made.size(), "ncclCommInitRankConfig", [&](std::size_t i) {
    const DeviceGuard guard(devices[i]);
    return ncclCommInitRankConfig(&made[i], world, id, first_rank + static_cast<int>(i), &config);
  });
  for (ncclComm_t c : made) {
    if (c != nullptr) owned_.push_back(c);
  }
  if (!nccl_ok(end)) check_nccl(end, "ncclGroupEnd (ncclCommInitRank)");
  wait_ready(made, fmt::format("ncclCommInitRank ({} ranks)", world));
  return made;
}

std::vector<ncclComm_t> NcclComms::split(const std::vector<ncclComm_t>& parents,
                                         const std::vector<int>& world_ranks,
                                         const std::function<int(int)>& color_of,
                                         const std::string& what) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  std::vector<ncclComm_t> made(parents.size(), nullptr);
  const ncclResult_t end = nccl_group(made.size(), "ncclCommSplit", [&](std::size_t i) {
    const int r = world_ranks[i];
    return ncclCommSplit(parents[i], color_of(r), r, &made[i], &config);
  });
  for (ncclComm_t c : made) {
    if (c != nullptr) owned_.push_back(c);
  }
  if (!nccl_ok(end)) check_nccl(end, "ncclGroupEnd (ncclCommSplit)");
  wait_ready(made, what);
  return made;
}

void NcclComms::wait_ready(const std::vector<ncclComm_t>& comms, const std::string& what) {
  const auto deadline = Clock::now() + timeout_;
  for (ncclComm_t c : comms) {
    if (c == nullptr) continue;
    for (;;) {
      ncclResult_t state = ncclSuccess;
      TP_NCCL(ncclCommGetAsyncError(c, &state));
      if (state == ncclSuccess) break;
      if (state != ncclInProgress) throw nccl_error(what, state, c);
      if (Clock::now() > deadline) abort_all(what);
      std::this_thread::yield();
    }
  }
}

void NcclComms::end_group(ncclResult_t r, const std::vector<ncclComm_t>& comms,
                          const std::string& what) {
  if (r == ncclSuccess) return;
  if (r != ncclInProgress) throw nccl_error(what, r, nullptr);
  wait_ready(comms, what);
}

void NcclComms::wait_streams(const std::vector<PolledStream>& work, const std::string& what) {
  const auto deadline = Clock::now() + timeout_;
  std::size_t polls = 0;
  for (const PolledStream& w : work) {
    for (;;) {
      const cudaError_t q = cudaStreamQuery(w.stream);
      if (q == cudaSuccess) break;
      if (q != cudaErrorNotReady) check_cuda(q, fmt::format("cudaStreamQuery ({})", what).c_str());
      // NCCL's error state and the clock, not on every poll: that would slow small messages.
      if (++polls % 256 == 0) {
        ncclResult_t state = ncclSuccess;
        TP_NCCL(ncclCommGetAsyncError(w.comm, &state));
        if (!nccl_ok(state)) throw nccl_error(what, state, w.comm);
        if (Clock::now() > deadline) abort_all(what);
      }
    }
  }
}

std::vector<double> NcclComms::all_reduce_doubles(const std::vector<ScratchGpu>& gpus,
                                                  const std::vector<std::vector<double>>& values,
                                                  ncclRedOp_t op) {
  const std::size_t n = values.at(0).size();
  const std::size_t bytes = n * sizeof(double);
  std::vector<ncclComm_t> comms;
  std::vector<PolledStream> streams;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const ScratchGpu& g = gpus[i];
    comms.push_back(g.comm);
    streams.push_back({g.stream, g.comm});
    const DeviceGuard guard(g.device);
    std::memcpy(g.host, values[i].data(), bytes);
    TP_CUDA(cudaMemcpyAsync(g.scratch, g.host, bytes, cudaMemcpyHostToDevice, g.stream));
  }
  const ncclResult_t end = nccl_group(gpus.size(), "ncclAllReduce (results)", [&](std::size_t i) {
    return ncclAllReduce(gpus[i].scratch, gpus[i].scratch, n, ncclFloat64, op, gpus[i].comm,
                         gpus[i].stream);
  });
  end_group(end, comms, "ncclAllReduce (results)");
  const ScratchGpu& first = gpus.front();
  {
    const DeviceGuard guard(first.device);
    TP_CUDA(cudaMemcpyAsync(first.host, first.scratch, bytes, cudaMemcpyDeviceToHost, first.stream));
  }
  wait_streams(streams, "ncclAllReduce (results)");
  const double* p = static_cast<const double*>(first.host);
  return {p, p + n};
}

void NcclComms::abort_all(const std::string& what) {
  for (ncclComm_t c : owned_) ncclCommAbort(c);
  owned_.clear();
  forget_();
  throw GpuError(fmt::format(
      "timeout: {} did not complete within {:.0f} s (--timeout); NCCL communicators aborted", what,
      timeout_.count()));
}

void NcclComms::shutdown() {
  if (owned_.empty()) return;
  const ncclResult_t end = nccl_group(owned_.size(), "ncclCommFinalize",
                                      [&](std::size_t i) { return ncclCommFinalize(owned_[i]); });
  if (!nccl_ok(end)) check_nccl(end, "ncclGroupEnd (ncclCommFinalize)");
  wait_ready(owned_, "ncclCommFinalize");
  // Finalized: destroyed instead of aborted, newest first.
  while (!owned_.empty()) {
    ncclComm_t c = owned_.back();
    owned_.pop_back();
    TP_NCCL(ncclCommDestroy(c));
  }
  forget_();
}

}  // namespace trainplan::calibrate
