#include "replay_comm.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <thread>

#include "comm.hpp"
#include "kernels.hpp"
#include "sweep.hpp"

namespace trainplan::calibrate {
namespace {

constexpr std::size_t kHostNameBytes = 256;
constexpr std::size_t kElementBytes = 2;  // bf16: what activations and 16-bit gradients carry

[[nodiscard]] bool ok(ncclResult_t r) { return r == ncclSuccess || r == ncclInProgress; }


// Group of world rank r: the block of stride x ranks consecutive ranks it falls in, and its offset
// inside the stride; ranks of a block cut short by the end of the job form no group.
int color_of(int r, int ranks, int stride, int world) {
  const int span = stride * ranks;
  const int block = r / span;
  if ((block + 1) * span > world) return NCCL_SPLIT_NOCOLOR;
  return block * stride + r % stride;
}

}  // namespace

ReplayComm::ReplayComm(const Bootstrap& boot, double timeout_s)
    : boot_(boot), timeout_(timeout_s), world_(boot.world_size()) {
  const ncclUniqueId id = boot_.unique_id();
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  gpus_.resize(boot_.devices().size());
  std::vector<ncclComm_t> made(gpus_.size(), nullptr);
  for (std::size_t i = 0; i < gpus_.size(); ++i) {
    gpus_[i].device = boot_.devices()[i];
    gpus_[i].world_rank = boot_.first_rank() + static_cast<int>(i);
    const DeviceGuard guard(gpus_[i].device);
    gpus_[i].stream = make_stream();
    gpus_[i].scratch = DeviceBuffer(kHostNameBytes * static_cast<std::size_t>(world_));
    gpus_[i].host = PinnedBuffer(kHostNameBytes * static_cast<std::size_t>(world_));
  }
  TP_NCCL(ncclGroupStart());
  for (std::size_t i = 0; i < gpus_.size(); ++i) {
    const DeviceGuard guard(gpus_[i].device);
    const ncclResult_t r =
        ncclCommInitRankConfig(&made[i], world_, id, gpus_[i].world_rank, &config);
    if (!ok(r)) {
      ncclGroupEnd();
      check_nccl(r, "ncclCommInitRankConfig");
    }
  }
  const ncclResult_t end = ncclGroupEnd();
  for (std::size_t i = 0; i < gpus_.size(); ++i) {
    if (made[i] != nullptr) owned_.push_back(made[i]);
    gpus_[i].world = made[i];
  }
  if (!ok(end)) check_nccl(end, "ncclGroupEnd (ncclCommInitRank)");
  wait_ready(made, fmt::format("ncclCommInitRank ({} ranks)", world_));

  // Host of every rank, gathered over NCCL (no MPI needed).
  for (auto& g : gpus_) {
    const DeviceGuard guard(g.device);
    std::array<char, kHostNameBytes> name{};
    gethostname(name.data(), name.size() - 1);
    char* mine = g.scratch.as<char>() + kHostNameBytes * static_cast<std::size_t>(g.world_rank);
    std::memcpy(g.host.get(), name.data(), kHostNameBytes);
    TP_CUDA(cudaMemcpyAsync(mine, g.host.get(), kHostNameBytes, cudaMemcpyHostToDevice,
                            g.stream.get()));
  }
  std::vector<Local*> all;
  TP_NCCL(ncclGroupStart());
  for (auto& g : gpus_) {
    all.push_back(&g);
    char* mine = g.scratch.as<char>() + kHostNameBytes * static_cast<std::size_t>(g.world_rank);
    const ncclResult_t r =
        ncclAllGather(mine, g.scratch.get(), kHostNameBytes, ncclChar, g.world, g.stream.get());
    if (!ok(r)) {
      ncclGroupEnd();
      check_nccl(r, "ncclAllGather (host names)");
    }
  }
  end_group(ncclGroupEnd(), made, "ncclAllGather (host names)");
  Local& first = gpus_.front();
  {
    const DeviceGuard guard(first.device);
    TP_CUDA(cudaMemcpyAsync(first.host.get(), first.scratch.get(), first.scratch.bytes(),
                            cudaMemcpyDeviceToHost, first.stream.get()));
  }
  wait_streams(all, "ncclAllGather (host names)");
  for (int r = 0; r < world_; ++r)
    rank_hosts_.emplace_back(first.host.as<char>() + kHostNameBytes * static_cast<std::size_t>(r));
}

ReplayComm::~ReplayComm() {
  for (ncclComm_t c : owned_) ncclCommAbort(c);
}

std::vector<std::string> ReplayComm::hosts() const {
  std::vector<std::string> out;
  for (const auto& h : rank_hosts_)
    if (std::find(out.begin(), out.end(), h) == out.end()) out.push_back(h);
  return out;
}

bool ReplayComm::fits(int ranks, int stride) const {
  return ranks >= 2 && stride >= 1 && stride * ranks <= world_;
}

void ReplayComm::abort_all(const std::string& what) {
  for (ncclComm_t c : owned_) ncclCommAbort(c);
  owned_.clear();
  for (auto& g : gpus_) {
    g.world = nullptr;
    g.groups.clear();
  }
  throw GpuError(fmt::format(
      "timeout: {} did not complete within {:.0f} s (--timeout); NCCL communicators aborted", what,
      timeout_.count()));
}

void ReplayComm::wait_ready(const std::vector<ncclComm_t>& comms, const std::string& what) {
  const auto deadline = Clock::now() + timeout_;
  for (ncclComm_t c : comms) {
    if (c == nullptr) continue;
    for (;;) {
      ncclResult_t state = ncclSuccess;
      TP_NCCL(ncclCommGetAsyncError(c, &state));
      if (state == ncclSuccess) break;
      if (state != ncclInProgress)
        throw GpuError(fmt::format("NCCL error in {}: {} ({})", what, ncclGetErrorString(state),
                                   ncclGetLastError(c)));
      if (Clock::now() > deadline) abort_all(what);
      std::this_thread::yield();
    }
  }
}

void ReplayComm::end_group(ncclResult_t r, const std::vector<ncclComm_t>& comms,
                           const std::string& what) {
  if (r == ncclSuccess) return;
  if (r != ncclInProgress)
    throw GpuError(fmt::format("NCCL error in {}: {} ({})", what, ncclGetErrorString(r),
                               ncclGetLastError(nullptr)));
  wait_ready(comms, what);
}

void ReplayComm::wait_streams(const std::vector<Local*>& gpus, const std::string& what) {
  const auto deadline = Clock::now() + timeout_;
  std::size_t polls = 0;
  for (Local* g : gpus) {
    for (;;) {
      const cudaError_t q = cudaStreamQuery(g->stream.get());
      if (q == cudaSuccess) break;
      if (q != cudaErrorNotReady) check_cuda(q, fmt::format("cudaStreamQuery ({})", what).c_str());
      // NCCL's error state and the clock, not on every poll: that would slow small messages.
      if (++polls % 256 == 0) {
        ncclResult_t state = ncclSuccess;
        TP_NCCL(ncclCommGetAsyncError(g->world, &state));
        if (state != ncclSuccess && state != ncclInProgress)
          throw GpuError(fmt::format("NCCL error in {}: {} ({})", what, ncclGetErrorString(state),
                                     ncclGetLastError(g->world)));
        if (Clock::now() > deadline) abort_all(what);
      }
    }
  }
}

void ReplayComm::split(int ranks, int stride) {
  const std::pair key{ranks, stride};
  if (gpus_.front().groups.contains(key)) return;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  std::vector<ncclComm_t> made(gpus_.size(), nullptr);
  TP_NCCL(ncclGroupStart());
  for (std::size_t i = 0; i < gpus_.size(); ++i) {
    const int r = gpus_[i].world_rank;
    const ncclResult_t res =
        ncclCommSplit(gpus_[i].world, color_of(r, ranks, stride, world_), r, &made[i], &config);
    if (!ok(res)) {
      ncclGroupEnd();
      check_nccl(res, "ncclCommSplit");
    }
  }
  const ncclResult_t end = ncclGroupEnd();
  for (std::size_t i = 0; i < gpus_.size(); ++i) {
    if (made[i] != nullptr) owned_.push_back(made[i]);
    gpus_[i].groups[key] = made[i];
  }
  if (!ok(end)) check_nccl(end, "ncclGroupEnd (ncclCommSplit)");
  wait_ready(made, fmt::format("ncclCommSplit ({} ranks, {} apart)", ranks, stride));
}

std::vector<double> ReplayComm::sum_over_world(const std::vector<std::vector<double>>& values) {
  const std::size_t n = values.at(0).size();
  const std::size_t bytes = n * sizeof(double);
  std::vector<Local*> all;
  std::vector<ncclComm_t> comms;
  for (std::size_t i = 0; i < gpus_.size(); ++i) {
    Local& g = gpus_[i];
    all.push_back(&g);
    comms.push_back(g.world);
    const DeviceGuard guard(g.device);
    std::memcpy(g.host.get(), values[i].data(), bytes);
    TP_CUDA(cudaMemcpyAsync(g.scratch.get(), g.host.get(), bytes, cudaMemcpyHostToDevice,
                            g.stream.get()));
  }
  TP_NCCL(ncclGroupStart());
  for (Local* g : all) {
    const ncclResult_t r = ncclAllReduce(g->scratch.get(), g->scratch.get(), n, ncclFloat64,
                                         ncclSum, g->world, g->stream.get());
    if (!ok(r)) {
      ncclGroupEnd();
      check_nccl(r, "ncclAllReduce (results)");
    }
  }
  end_group(ncclGroupEnd(), comms, "ncclAllReduce (results)");
  Local& first = gpus_.front();
  {
    const DeviceGuard guard(first.device);
    TP_CUDA(cudaMemcpyAsync(first.host.get(), first.scratch.get(), bytes, cudaMemcpyDeviceToHost,
                            first.stream.get()));
  }
  wait_streams(all, "ncclAllReduce (results)");
  const double* p = first.host.as<double>();
  return {p, p + n};
}

double ReplayComm::time_us(Collective c, std::int64_t bytes, int ranks, int stride, int warmup,
                           int iters) {
  split(ranks, stride);
  const std::pair key{ranks, stride};
  const auto shape = collective_shape(c, bytes, ranks, kElementBytes);
  if (!shape)
    throw GpuError(fmt::format("{} of {} bytes over {} ranks: too small to split", to_string(c),
                               bytes, ranks));
  const std::string what = fmt::format("{} {} over {} ranks {} apart", to_string(c),
                                       format_bytes(shape->bytes), ranks, stride);
  std::vector<Local*> in;
  std::vector<ncclComm_t> comms;
  std::vector<int> rank_in;
  for (auto& g : gpus_) {
    ncclComm_t comm = g.groups.at(key);
    if (comm == nullptr) continue;
    in.push_back(&g);
    comms.push_back(comm);
    int rank = 0;
    TP_NCCL(ncclCommUserRank(comm, &rank));
    rank_in.push_back(rank);
    const DeviceGuard guard(g.device);
    const std::size_t need = std::max(shape->send_count, shape->recv_count) * kElementBytes;
    if (g.send.bytes() < need) {
      g.send = DeviceBuffer();
      g.recv = DeviceBuffer();
      g.send = DeviceBuffer(need);
      g.recv = DeviceBuffer(need);
    }
    fill_random(g.send.get(), shape->send_count, ElemType::kBf16, 51, 1.0f, g.stream.get());
  }
  const auto issue_all = [&] {
    TP_NCCL(ncclGroupStart());
    for (std::size_t i = 0; i < in.size(); ++i) {
      Local* g = in[i];
      const ncclResult_t r = issue_collective(c, *shape, ncclBfloat16, g->send.get(), g->recv.get(),
                                              comms[i], rank_in[i], ranks, g->stream.get());
      if (!ok(r)) {
        ncclGroupEnd();
        throw GpuError(fmt::format("NCCL error in {}: {} ({})", what, ncclGetErrorString(r),
                                   ncclGetLastError(comms[i])));
      }
    }
    end_group(ncclGroupEnd(), comms, what);
  };
  const std::vector<std::vector<double>> zero(gpus_.size(), std::vector<double>{0.0});
  for (int i = 0; i < warmup; ++i) issue_all();
  wait_streams(in, what);
  (void)sum_over_world(zero);  // a barrier: every group starts its clock together
  const auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) issue_all();
  wait_streams(in, what);
  const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / iters;
  // Mean over the ranks that took part.
  std::vector<std::vector<double>> mine(gpus_.size(), std::vector<double>{0.0, 0.0});
  for (std::size_t i = 0; i < gpus_.size(); ++i)
    if (gpus_[i].groups.at(key) != nullptr) mine[i] = {us, 1.0};
  const std::vector<double> sums = sum_over_world(mine);
  return sums.at(1) > 0.0 ? sums.at(0) / sums.at(1) : us;
}

void ReplayComm::shutdown() {
  if (owned_.empty()) return;
  TP_NCCL(ncclGroupStart());
  for (ncclComm_t c : owned_) {
    const ncclResult_t r = ncclCommFinalize(c);
    if (!ok(r)) {
      ncclGroupEnd();
      check_nccl(r, "ncclCommFinalize");
    }
  }
  const ncclResult_t end = ncclGroupEnd();
  if (!ok(end)) check_nccl(end, "ncclGroupEnd (ncclCommFinalize)");
  wait_ready(owned_, "ncclCommFinalize");
  // Finalized: destroy instead of the destructor's abort, newest first.
  while (!owned_.empty()) {
    ncclComm_t c = owned_.back();
    owned_.pop_back();
    TP_NCCL(ncclCommDestroy(c));
  }
  for (auto& g : gpus_) {
    g.world = nullptr;
    g.groups.clear();
  }
}

}  // namespace trainplan::calibrate
