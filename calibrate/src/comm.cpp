#include "comm.hpp"

#include <algorithm>
#include <cstring>
#include <functional>

#include <fmt/format.h>

#include "kernels.hpp"
#include "provenance.hpp"

namespace trainplan::calibrate {
namespace {

constexpr std::size_t kHostNameBytes = 256;
// Left free on every GPU besides the send and receive buffers (NCCL's own buffers, kernels).
constexpr std::size_t kReserveBytes = std::size_t{1} << 30;

[[nodiscard]] int idx(Scope s) { return static_cast<int>(s); }

[[nodiscard]] ncclDataType_t nccl_type(CollDtype t) {
  switch (t) {
    case CollDtype::kFloat:
      return ncclFloat32;
    case CollDtype::kBf16:
      return ncclBfloat16;
    case CollDtype::kHalf:
      return ncclFloat16;
  }
  return ncclFloat32;
}

// Largest integer n such that every integer up to n is exact in the datatype.
[[nodiscard]] double exact_integer_limit(CollDtype t) {
  switch (t) {
    case CollDtype::kFloat:
      return 16777216.0;  // 2^24
    case CollDtype::kBf16:
      return 256.0;  // 2^8
    case CollDtype::kHalf:
      return 2048.0;  // 2^11
  }
  return 0.0;
}

[[nodiscard]] float unit_roundoff(CollDtype t) {
  switch (t) {
    case CollDtype::kFloat:
      return 0x1p-24f;
    case CollDtype::kBf16:
      return 0x1p-8f;
    case CollDtype::kHalf:
      return 0x1p-11f;
  }
  return 0.0f;
}

// Values are integers up to 2n: exact while 2n is; beyond, each of up to n-1 roundings may cost
// a unit roundoff.
[[nodiscard]] float verify_tolerance(CollDtype t, int n) {
  if (2.0 * n <= exact_integer_limit(t)) return 0.0f;
  return unit_roundoff(t) * static_cast<float>(n);
}


}  // namespace

ncclResult_t issue_collective(Collective c, const CollectiveShape& s, ncclDataType_t type, const void* send,
                   void* recv, ncclComm_t comm, int rank, int n, cudaStream_t stream) {
  switch (c) {
    case Collective::kAllReduce:
      return ncclAllReduce(send, recv, s.send_count, type, ncclSum, comm, stream);
    case Collective::kAllGather:
      return ncclAllGather(send, recv, s.send_count, type, comm, stream);
    case Collective::kReduceScatter:
      return ncclReduceScatter(send, recv, s.recv_count, type, ncclSum, comm, stream);
    case Collective::kAllToAll:
      return ncclAlltoAll(send, recv, s.chunk, type, comm, stream);
    case Collective::kBroadcast:
      return ncclBroadcast(send, recv, s.send_count, type, 0, comm, stream);
    case Collective::kSendRecv: {
      // A ring, as nccl-tests sendrecv: send to the next rank, receive from the previous one.
      if (const ncclResult_t r = ncclGroupStart(); r != ncclSuccess) return r;
      ncclResult_t r = ncclSend(send, s.send_count, type, (rank + 1) % n, comm, stream);
      // Non-blocking communicators (the replay's) answer ncclInProgress while they work.
      const auto going = [](ncclResult_t x) { return x == ncclSuccess || x == ncclInProgress; };
      if (going(r)) r = ncclRecv(recv, s.recv_count, type, (rank + n - 1) % n, comm, stream);
      const ncclResult_t end = ncclGroupEnd();
      return going(r) ? end : r;
    }
  }
  return ncclInvalidArgument;
}

CommSuite::CommSuite(const Bootstrap& boot, double timeout_s)
    : boot_(boot), comms_(timeout_s, [this] {
        for (auto& g : gpus_) std::fill(std::begin(g.comm), std::end(g.comm), nullptr);
      }) {
  const ncclUniqueId id = boot_.unique_id();
  gpus_ = rank_gpus<LocalGpu>(
      boot_, [](LocalGpu& g) { g.error_count = DeviceBuffer(sizeof(unsigned long long)); });
  const std::vector<ncclComm_t> world =
      comms_.init(id, boot_.world_size(), boot_.first_rank(), boot_.devices());
  for (std::size_t i = 0; i < gpus_.size(); ++i) {
    gpus_[i].comm[idx(Scope::kWorld)] = world[i];
    gpus_[i].rank_in[idx(Scope::kWorld)] = gpus_[i].world_rank;
    gpus_[i].size_of[idx(Scope::kWorld)] = boot_.world_size();
  }
  find_hosts();
  split_scopes();
}

CommSuite::~CommSuite() = default;

// Host of every rank, gathered over NCCL so that no MPI is needed.
void CommSuite::find_hosts() {
  std::vector<std::vector<char>> blocks(gpus_.size(), std::vector<char>(kHostNameBytes, '\0'));
  const std::string host = local_hostname();
  for (auto& b : blocks) std::copy(host.begin(), host.end(), b.begin());
  const std::vector<char> all = all_gather_bytes(blocks);
  std::vector<std::string> distinct;
  for (int r = 0; r < boot_.world_size(); ++r) {
    const std::string h(&all[static_cast<std::size_t>(r) * kHostNameBytes]);
    rank_hosts_.push_back(h);
    auto it = std::find(distinct.begin(), distinct.end(), h);
    node_of_rank_.push_back(static_cast<int>(it - distinct.begin()));
    if (it == distinct.end()) distinct.push_back(h);
    local_index_of_rank_.push_back(
        static_cast<int>(std::count(rank_hosts_.begin(), rank_hosts_.end() - 1, h)));
  }
  nodes_ = static_cast<int>(distinct.size());
  ranks_on_node0_ = static_cast<int>(std::count(rank_hosts_.begin(), rank_hosts_.end(), distinct[0]));
}

std::vector<std::string> CommSuite::hosts() const {
  std::vector<std::string> distinct;
  for (const auto& h : rank_hosts_) {
    if (std::find(distinct.begin(), distinct.end(), h) == distinct.end()) distinct.push_back(h);
  }
  return distinct;
}

void CommSuite::split_scopes() {
  const auto split = [&](Scope s, const std::function<int(int)>& color_of) {
    std::vector<ncclComm_t> parents;
    std::vector<int> ranks;
    for (const auto& g : gpus_) {
      parents.push_back(g.comm[idx(Scope::kWorld)]);
      ranks.push_back(g.world_rank);
    }
    const std::vector<ncclComm_t> made =
        comms_.split(parents, ranks, color_of, fmt::format("ncclCommSplit ({})", to_string(s)));
    for (std::size_t i = 0; i < gpus_.size(); ++i) {
      if (made[i] == nullptr) continue;
      gpus_[i].comm[idx(s)] = made[i];
      TP_NCCL(ncclCommUserRank(made[i], &gpus_[i].rank_in[idx(s)]));
      TP_NCCL(ncclCommCount(made[i], &gpus_[i].size_of[idx(s)]));
    }
  };

  if (nodes_ == 1) {
    // The node is the world: the intra-node group is the world communicator.
    for (auto& g : gpus_) {
      g.comm[idx(Scope::kIntraNode)] = g.comm[idx(Scope::kWorld)];
      g.rank_in[idx(Scope::kIntraNode)] = g.rank_in[idx(Scope::kWorld)];
      g.size_of[idx(Scope::kIntraNode)] = g.size_of[idx(Scope::kWorld)];
    }
    return;
  }
  split(Scope::kIntraNode, [&](int r) { return node_of_rank_[static_cast<std::size_t>(r)]; });
  split(Scope::kInterNode, [&](int r) {
    return local_index_of_rank_[static_cast<std::size_t>(r)] == 0 ? 0 : NCCL_SPLIT_NOCOLOR;
  });
}

std::vector<CommSuite::LocalGpu*> CommSuite::members(Scope s) {
  std::vector<LocalGpu*> out;
  for (auto& g : gpus_) {
    if (g.comm[idx(s)] != nullptr) out.push_back(&g);
  }
  return out;
}

std::vector<ncclComm_t> CommSuite::comms_of(const std::vector<LocalGpu*>& gpus, Scope s) {
  std::vector<ncclComm_t> comms;
  for (const LocalGpu* g : gpus) comms.push_back(g->comm[idx(s)]);
  return comms;
}

std::vector<PolledStream> CommSuite::streams_of(const std::vector<LocalGpu*>& gpus, Scope s) {
  std::vector<PolledStream> work;
  for (const LocalGpu* g : gpus) work.push_back({g->stream.get(), g->comm[idx(s)]});
  return work;
}

void CommSuite::ensure_scratch(std::size_t bytes) {
  for (auto& g : gpus_) {
    if (g.scratch.bytes() >= bytes) continue;
    const DeviceGuard guard(g.device);
    g.scratch = DeviceBuffer(bytes);
    g.host_scratch = PinnedBuffer(bytes);
  }
}

std::vector<char> CommSuite::all_gather_bytes(const std::vector<std::vector<char>>& blocks) {
  const std::size_t block = blocks.at(0).size();
  const std::size_t total = block * static_cast<std::size_t>(boot_.world_size());
  ensure_scratch(total);
  std::vector<LocalGpu*> all = members(Scope::kWorld);
  for (std::size_t i = 0; i < gpus_.size(); ++i) {
    auto& g = gpus_[i];
    const DeviceGuard guard(g.device);
    std::memcpy(g.host_scratch.get(), blocks[i].data(), block);
    TP_CUDA(cudaMemcpyAsync(g.scratch.as<char>() + total - block, g.host_scratch.get(), block,
                            cudaMemcpyHostToDevice, g.stream.get()));
  }
  const ncclResult_t end = nccl_group(gpus_.size(), "ncclAllGather (host names)", [&](std::size_t i) {
    auto& g = gpus_[i];
    // The send block sits at the end of the buffer, out of the way of the gathered result.
    return ncclAllGather(g.scratch.as<char>() + total - block, g.scratch.get(), block, ncclChar,
                         g.comm[idx(Scope::kWorld)], g.stream.get());
  });
  comms_.end_group(end, comms_of(all, Scope::kWorld), "ncclAllGather (host names)");
  auto& g0 = gpus_[0];
  const DeviceGuard guard(g0.device);
  TP_CUDA(cudaMemcpyAsync(g0.host_scratch.get(), g0.scratch.get(), total, cudaMemcpyDeviceToHost,
                          g0.stream.get()));
  comms_.wait_streams(streams_of(all, Scope::kWorld), "ncclAllGather (host names)");
  const char* p = g0.host_scratch.as<char>();
  return {p, p + total};
}

std::vector<double> CommSuite::reduce_doubles(Scope s, const std::vector<std::vector<double>>& values,
                                              ncclRedOp_t op) {
  const std::vector<LocalGpu*> in = members(s);
  if (in.empty()) return {};
  ensure_scratch(values.at(0).size() * sizeof(double));
  std::vector<ScratchGpu> slots;
  std::vector<std::vector<double>> mine;
  for (std::size_t i = 0; i < gpus_.size(); ++i) {
    auto& g = gpus_[i];
    if (g.comm[idx(s)] == nullptr) continue;
    slots.push_back({g.device, g.stream.get(), g.comm[idx(s)], g.scratch.get(), g.host_scratch.get()});
    mine.push_back(values[i]);
  }
  return comms_.all_reduce_doubles(slots, mine, op);
}

std::vector<std::uint8_t> CommSuite::broadcast_from_rank0(std::vector<std::uint8_t> data) {
  // One process holding every rank has nothing to send.
  if (static_cast<int>(gpus_.size()) == boot_.world_size() || data.empty()) return data;
  const std::size_t bytes = data.size();
  ensure_scratch(bytes);
  std::vector<LocalGpu*> all = members(Scope::kWorld);
  auto& g = gpus_[0];
  const DeviceGuard guard(g.device);
  std::memcpy(g.host_scratch.get(), data.data(), bytes);
  TP_CUDA(cudaMemcpyAsync(g.scratch.get(), g.host_scratch.get(), bytes, cudaMemcpyHostToDevice,
                          g.stream.get()));
  const ncclResult_t end = nccl_group(1, "ncclBroadcast (resume state)", [&](std::size_t) {
    return ncclBroadcast(g.scratch.get(), g.scratch.get(), bytes, ncclUint8, 0,
                         g.comm[idx(Scope::kWorld)], g.stream.get());
  });
  comms_.end_group(end, comms_of(all, Scope::kWorld), "ncclBroadcast (resume state)");
  TP_CUDA(cudaMemcpyAsync(g.host_scratch.get(), g.scratch.get(), bytes, cudaMemcpyDeviceToHost,
                          g.stream.get()));
  comms_.wait_streams(streams_of(all, Scope::kWorld), "ncclBroadcast (resume state)");
  std::memcpy(data.data(), g.host_scratch.get(), bytes);
  return data;
}

std::vector<CommPoint> CommSuite::plan(const Options& o, const Progress& progress) {
  struct Group {
    Scope scope;
    int ranks;
    int nodes;
  };
  std::vector<Group> groups;
  if (ranks_on_node0_ >= 2) groups.push_back({Scope::kIntraNode, ranks_on_node0_, 1});
  if (nodes_ >= 2 && ranks_on_node0_ >= 2) groups.push_back({Scope::kInterNode, nodes_, nodes_});
  if (nodes_ >= 2) groups.push_back({Scope::kWorld, boot_.world_size(), nodes_});
  if (groups.empty()) {
    progress.note("one GPU in the job: no collectives to measure");
    return {};
  }

  // Send and receive buffers of the largest size must fit on the fullest GPU of the job.
  std::vector<std::vector<double>> free_bytes;
  for (auto& g : gpus_) {
    const DeviceGuard guard(g.device);
    free_bytes.push_back({static_cast<double>(free_device_memory())});
  }
  const double min_free = reduce_doubles(Scope::kWorld, free_bytes, ncclMin).at(0);
  std::vector<std::int64_t> sizes = sweep_sizes(o.min_bytes, o.max_bytes, o.step_factor);
  const double budget = min_free - static_cast<double>(kReserveBytes);
  while (!sizes.empty() && 2.0 * static_cast<double>(sizes.back()) > budget) sizes.pop_back();
  if (sizes.empty()) throw GpuError("not enough free device memory for the smallest collective size");
  if (sizes.back() < o.max_bytes) {
    progress.note(fmt::format("--max-bytes reduced to {} to fit in device memory",
                              format_bytes(sizes.back())));
  }

  std::vector<CommPoint> points;
  std::int64_t largest = 0;
  for (const Collective c : o.collectives) {
    for (const Group& g : groups) {
      for (const CollDtype dt : o.dtypes) {
        std::int64_t previous = -1;
        for (const std::int64_t size : sizes) {
          const auto shape = collective_shape(c, size, g.ranks, element_size(dt));
          if (!shape || shape->bytes == previous) continue;
          previous = shape->bytes;
          largest = std::max(largest, shape->bytes);
          points.push_back({c, g.scope, g.ranks, g.nodes, dt, *shape});
        }
      }
    }
  }
  buffer_bytes_ = static_cast<std::size_t>(largest);
  return points;
}

void CommSuite::run(const std::vector<CommPoint>& points, const Options& o, MeasurementLog* log,
                    Progress& progress) {
  if (points.empty()) return;
  std::vector<std::uint8_t> done(points.size(), 0);
  if (log != nullptr && o.resume) {
    for (std::size_t i = 0; i < points.size(); ++i) {
      const CommPoint& p = points[i];
      done[i] = log->contains(
          collective_params(p.collective, p.scope, p.ranks, p.nodes, p.dtype, p.shape.bytes));
    }
  }
  done = broadcast_from_rank0(std::move(done));
  progress.skip(static_cast<std::size_t>(std::count(done.begin(), done.end(), 1)));

  for (auto& g : gpus_) {
    const DeviceGuard guard(g.device);
    g.send = DeviceBuffer(buffer_bytes_);
    g.recv = DeviceBuffer(buffer_bytes_);
  }
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (done[i] == 0) measure(points[i], o, log, progress);
  }
  for (auto& g : gpus_) {
    g.send = DeviceBuffer();
    g.recv = DeviceBuffer();
  }
}

void CommSuite::measure(const CommPoint& p, const Options& o, MeasurementLog* log,
                        Progress& progress) {
  const Scope s = p.scope;
  const std::vector<LocalGpu*> in = members(s);
  const std::string what = fmt::format("{} {} {} ranks {}{}", to_string(p.collective), to_string(s),
                                       p.ranks, format_bytes(p.shape.bytes),
                                       p.dtype == CollDtype::kFloat
                                           ? std::string()
                                           : " " + std::string(to_string(p.dtype)));
  if (in.empty()) return;  // this process's GPUs are not in the group (inter_node)
  const ElemType type = elem_type(p.dtype);
  const ncclDataType_t nccl_dtype = nccl_type(p.dtype);

  for (auto* g : in) {
    const DeviceGuard guard(g->device);
    fill_pattern(g->send.get(), p.shape.send_count, type, g->rank_in[idx(s)], g->stream.get());
    fill_constant(g->recv.get(), p.shape.recv_count, type, -1.0f, g->stream.get());
  }
  const std::vector<ncclComm_t> comms = comms_of(in, s);
  const std::vector<PolledStream> streams = streams_of(in, s);
  const auto issue_all = [&] {
    const ncclResult_t end = nccl_group(
        in.size(),
        [&](std::size_t i) {
          const LocalGpu* g = in[i];
          return issue_collective(p.collective, p.shape, nccl_dtype, g->send.get(), g->recv.get(),
                                  comms[i], g->rank_in[idx(s)], g->size_of[idx(s)], g->stream.get());
        },
        [&](std::size_t i, ncclResult_t r) { throw nccl_error(what, r, comms[i]); });
    comms_.end_group(end, comms, what);
  };
  const std::vector<std::vector<double>> zero(gpus_.size(), std::vector<double>{0.0});

  for (int i = 0; i < o.warmup; ++i) issue_all();
  comms_.wait_streams(streams, what);
  (void)reduce_doubles(s, zero, ncclSum);  // a barrier, so that all ranks start the clock together
  const auto t0 = Clock::now();
  for (int i = 0; i < o.iters; ++i) issue_all();
  comms_.wait_streams(streams, what);
  const double time_us =
      std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / o.iters;

  // Check what the last iteration left in the receive buffers.
  std::vector<std::vector<double>> contribution(gpus_.size(), std::vector<double>{0.0, 0.0});
  for (std::size_t i = 0; i < gpus_.size(); ++i) {
    auto& g = gpus_[i];
    if (g.comm[idx(s)] == nullptr) continue;
    const DeviceGuard guard(g.device);
    TP_CUDA(cudaMemsetAsync(g.error_count.get(), 0, sizeof(unsigned long long), g.stream.get()));
    const VerifySpec spec{p.collective, g.size_of[idx(s)], g.rank_in[idx(s)], p.shape.chunk,
                          verify_tolerance(p.dtype, g.size_of[idx(s)])};
    count_collective_errors(g.recv.get(), p.shape.recv_count, type, spec,
                            g.error_count.as<unsigned long long>(), g.stream.get());
    unsigned long long errors = 0;
    TP_CUDA(cudaMemcpyAsync(&errors, g.error_count.get(), sizeof errors, cudaMemcpyDeviceToHost,
                            g.stream.get()));
    TP_CUDA(cudaStreamSynchronize(g.stream.get()));
    contribution[i] = {time_us, static_cast<double>(errors)};
  }
  // nccl-tests reports the time averaged over ranks.
  const std::vector<double> sums = reduce_doubles(s, contribution, ncclSum);
  const double mean_time_us = sums.at(0) / p.ranks;
  const bool valid = sums.at(1) == 0.0;

  if (log == nullptr) return;
  const Json line = with_collective_result(
      collective_params(p.collective, s, p.ranks, p.nodes, p.dtype, p.shape.bytes), mean_time_us,
      bus_factor(p.collective, p.ranks), valid);
  log->append(line);
  progress.step(fmt::format("{}  {:.1f} GB/s busbw{}", what, line["busbw_GBps"].get<double>(),
                            valid ? "" : fmt::format("  INVALID: {:.0f} wrong elements", sums[1])));
}

void CommSuite::shutdown() { comms_.shutdown(); }

}  // namespace trainplan::calibrate
