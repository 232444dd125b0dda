#include "replay_comm.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "comm.hpp"
#include "kernels.hpp"
#include "provenance.hpp"
#include "sweep.hpp"

namespace trainplan::calibrate {
namespace {

constexpr std::size_t kHostNameBytes = 256;
constexpr std::size_t kElementBytes = 2;  // bf16: what activations and 16-bit gradients carry

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
    : boot_(boot), world_(boot.world_size()), comms_(timeout_s, [this] {
        for (auto& g : gpus_) {
          g.world = nullptr;
          g.groups.clear();
        }
      }) {
  const ncclUniqueId id = boot_.unique_id();
  gpus_ = rank_gpus<Local>(boot_, [&](Local& g) {
    g.scratch = DeviceBuffer(kHostNameBytes * static_cast<std::size_t>(world_));
    g.host = PinnedBuffer(kHostNameBytes * static_cast<std::size_t>(world_));
  });
  const std::vector<ncclComm_t> made = comms_.init(id, world_, boot_.first_rank(), boot_.devices());
  for (std::size_t i = 0; i < gpus_.size(); ++i) gpus_[i].world = made[i];
  gather_hosts();
}

ReplayComm::~ReplayComm() = default;

// Host of every rank, gathered over NCCL (no MPI needed).
void ReplayComm::gather_hosts() {
  const std::string name = local_hostname();
  std::vector<Local*> all;
  std::vector<ncclComm_t> worlds;
  for (auto& g : gpus_) {
    all.push_back(&g);
    worlds.push_back(g.world);
    const DeviceGuard guard(g.device);
    char* mine = g.scratch.as<char>() + kHostNameBytes * static_cast<std::size_t>(g.world_rank);
    std::memset(g.host.get(), 0, kHostNameBytes);
    std::memcpy(g.host.get(), name.data(), name.size());
    TP_CUDA(cudaMemcpyAsync(mine, g.host.get(), kHostNameBytes, cudaMemcpyHostToDevice,
                            g.stream.get()));
  }
  const ncclResult_t end = nccl_group(all.size(), "ncclAllGather (host names)", [&](std::size_t i) {
    Local& g = *all[i];
    char* mine = g.scratch.as<char>() + kHostNameBytes * static_cast<std::size_t>(g.world_rank);
    return ncclAllGather(mine, g.scratch.get(), kHostNameBytes, ncclChar, g.world, g.stream.get());
  });
  comms_.end_group(end, worlds, "ncclAllGather (host names)");
  Local& first = gpus_.front();
  {
    const DeviceGuard guard(first.device);
    TP_CUDA(cudaMemcpyAsync(first.host.get(), first.scratch.get(), first.scratch.bytes(),
                            cudaMemcpyDeviceToHost, first.stream.get()));
  }
  comms_.wait_streams(world_streams(all), "ncclAllGather (host names)");
  for (int r = 0; r < world_; ++r)
    rank_hosts_.emplace_back(first.host.as<char>() + kHostNameBytes * static_cast<std::size_t>(r));
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

std::vector<PolledStream> ReplayComm::world_streams(const std::vector<Local*>& gpus) {
  std::vector<PolledStream> work;
  for (const Local* g : gpus) work.push_back({g->stream.get(), g->world});
  return work;
}

void ReplayComm::split(int ranks, int stride) {
  const std::pair key{ranks, stride};
  if (gpus_.front().groups.contains(key)) return;
  std::vector<ncclComm_t> parents;
  std::vector<int> world_ranks;
  for (const auto& g : gpus_) {
    parents.push_back(g.world);
    world_ranks.push_back(g.world_rank);
  }
  const std::vector<ncclComm_t> made =
      comms_.split(parents, world_ranks, [&](int r) { return color_of(r, ranks, stride, world_); },
                   fmt::format("ncclCommSplit ({} ranks, {} apart)", ranks, stride));
  for (std::size_t i = 0; i < gpus_.size(); ++i) gpus_[i].groups[key] = made[i];
}

std::vector<double> ReplayComm::sum_over_world(const std::vector<std::vector<double>>& values) {
  std::vector<ScratchGpu> slots;
  for (Local& g : gpus_) {
    slots.push_back({g.device, g.stream.get(), g.world, g.scratch.get(), g.host.get()});
  }
  return comms_.all_reduce_doubles(slots, values, ncclSum);
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
    const ncclResult_t end = nccl_group(
        in.size(),
        [&](std::size_t i) {
          const Local* g = in[i];
          return issue_collective(c, *shape, ncclBfloat16, g->send.get(), g->recv.get(), comms[i],
                                  rank_in[i], ranks, g->stream.get());
        },
        [&](std::size_t i, ncclResult_t r) { throw nccl_error(what, r, comms[i]); });
    comms_.end_group(end, comms, what);
  };
  const std::vector<std::vector<double>> zero(gpus_.size(), std::vector<double>{0.0});
  const std::vector<PolledStream> streams = world_streams(in);
  for (int i = 0; i < warmup; ++i) issue_all();
  comms_.wait_streams(streams, what);
  (void)sum_over_world(zero);  // a barrier: every group starts its clock together
  const auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) issue_all();
  comms_.wait_streams(streams, what);
  const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / iters;
  // Mean over the ranks that took part.
  std::vector<std::vector<double>> mine(gpus_.size(), std::vector<double>{0.0, 0.0});
  for (std::size_t i = 0; i < gpus_.size(); ++i)
    if (gpus_[i].groups.at(key) != nullptr) mine[i] = {us, 1.0};
  const std::vector<double> sums = sum_over_world(mine);
  return sums.at(1) > 0.0 ? sums.at(0) / sums.at(1) : us;
}

void ReplayComm::shutdown() { comms_.shutdown(); }

}  // namespace trainplan::calibrate
