// The verdict on a memory breakdown (fits, tight, does not fit, and why), the allocator's cache it
// expects, and the largest micro-batch that fits: what the front ends and the search read from
// memory().
#include "trainplan/planner/memory.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include <fmt/format.h>

namespace trainplan::planner {

Bytes allocator_cache(Bytes peak_allocated, Bytes transient, bool recompute, bool expandable_segments,
                      const MemoryConventions& mc) {
  // Round the peak up to the allocator's page: what an expandable segment maps, and at least what
  // the last 2 MiB-rounded segment adds.
  const double page = mc.page.value();
  const Bytes rounding(std::ceil(peak_allocated.value() / page) * page - peak_allocated.value());
  if (expandable_segments) return rounding;
  const double f = recompute ? mc.cache_fraction_recompute : mc.cache_fraction;
  return std::max(rounding, transient * f);
}

namespace {

// Which band of the verdict a breakdown falls in, and the numbers that say why (GiB).
enum class Band { host, peak, stuck_cache, tight, fits };
struct Judged {
  Band band = Band::fits;
  double usable = 0, peak = 0, outside = 0, total = 0, budget = 0, stuck = 0;
};

Judged judged(const MemoryBreakdown& m, const hardware::Cluster& c, double margin, const MemoryConventions& mc) {
  Judged j;
  j.usable = to_gib(c.gpu.usable_memory);
  j.peak = to_gib(m.peak_allocated);
  j.outside = to_gib(m.outside_torch);
  j.total = to_gib(m.device_total);
  j.budget = j.usable * (1.0 - margin);
  j.stuck = to_gib(m.allocator_cache) * mc.unreleasable_cache_fraction;
  if (c.host_memory.value() > 0.0 && m.host > c.host_memory)
    j.band = Band::host;
  else if (j.peak + j.outside > j.usable)
    j.band = Band::peak;
  else if (j.peak + j.outside + j.stuck > j.usable)
    j.band = Band::stuck_cache;
  else if (j.total > j.budget)
    j.band = Band::tight;
  return j;
}

Verdict verdict_of_band(Band b) {
  if (b == Band::fits) return Verdict::fits;
  return b == Band::tight ? Verdict::tight : Verdict::no;
}

}  // namespace

Verdict verdict_of(const MemoryBreakdown& m, const hardware::Cluster& c, double margin,
                   const MemoryConventions& mc) {
  return verdict_of_band(judged(m, c, margin, mc).band);
}

MemoryVerdict judge(const MemoryBreakdown& m, const hardware::Cluster& c, double margin,
                    const MemoryConventions& mc) {
  const Judged j = judged(m, c, margin, mc);
  const Verdict v = verdict_of_band(j.band);
  switch (j.band) {
    case Band::host:
      return {v, fmt::format("the offloaded share needs {:.1f} GiB of CPU memory per node, of {:.1f} GiB",
                             to_gib(m.host), to_gib(c.host_memory))};
    case Band::peak:
      return {v, fmt::format("the peak alone ({:.1f} GiB allocated + {:.1f} GiB CUDA context and NCCL) exceeds the "
                             "{:.1f} GiB usable",
                             j.peak, j.outside, j.usable)};
    case Band::stuck_cache:
      return {v, fmt::format("the peak ({:.1f} GiB allocated + {:.1f} GiB CUDA context and NCCL) and the {:.1f} GiB of "
                             "the allocator's cache it cannot release (blocks split in segments that hold live "
                             "tensors) exceed the {:.1f} GiB usable",
                             j.peak, j.outside, j.stuck, j.usable)};
    case Band::tight:
      return {v, fmt::format("the peak fits ({:.1f} GiB allocated + {:.1f} GiB CUDA context and NCCL of {:.1f} GiB "
                             "usable), but with the allocator's expected cache of {:.1f} GiB it needs {:.1f} GiB{}; "
                             "PyTorch frees cached blocks and retries before raising out-of-memory, so it runs unless "
                             "fragmentation strands too much{}",
                             j.peak, j.outside, j.usable, to_gib(m.allocator_cache), j.total,
                             j.total <= j.usable ? fmt::format(", more than the {:.1f} GiB the margin leaves", j.budget)
                                                 : std::string(),
                             m.expandable_segments ? std::string()
                                                   : " (--expandable-segments on, PYTORCH_CUDA_ALLOC_CONF="
                                                     "expandable_segments:True, avoids most of it)")};
    case Band::fits:
      break;
  }
  return {v, fmt::format("{:.1f} GiB per GPU ({:.1f} allocated + {:.1f} allocator cache + {:.1f} CUDA context and "
                         "NCCL) of {:.1f} GiB usable",
                         j.total, j.peak, to_gib(m.allocator_cache), j.outside, j.usable)};
}

bool fits(const MemoryBreakdown& m, const hardware::Cluster& c) { return verdict_of(m, c) != Verdict::no; }

std::int64_t max_micro_batch(const model::Architecture& a, const model::ParameterCounts& n,
                             model::Training tr, const Layout& l, const hardware::Cluster& c,
                             const MemoryConventions& mc, std::int64_t limit, double margin) {
  auto ok = [&](std::int64_t b) {
    tr.micro_batch = b;
    return verdict_of(memory(a, n, tr, l, mc), c, margin, mc) == Verdict::fits;
  };
  if (!ok(1)) return 0;
  // Memory grows with the micro-batch: double until it no longer fits, then bisect.
  std::int64_t lo = 1;
  std::int64_t hi = 2;
  while (hi <= limit && ok(hi)) {
    lo = hi;
    hi *= 2;
  }
  if (hi > limit) return lo;
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    (ok(mid) ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace trainplan::planner
