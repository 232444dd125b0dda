#pragma once
// A hardware profile: what `trainplan calibrate fit` learned from measurements on one cluster,
// as plain values, with the queries the time model asks. No I/O here; trainplan/io/profile_json.hpp
// reads and writes it. Every section may be empty, and every query answers nullopt when the
// profile cannot say, so the caller falls back to datasheet defaults.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trainplan/core/enum_table.hpp"
#include "trainplan/core/units.hpp"
#include "trainplan/hardware/collective.hpp"

namespace trainplan::hardware {

// Where the measurements came from (provenance.json of each run, merged).
struct RunProvenance {
  std::optional<std::string> tool;  // trainplan-calibrate | nccl-tests | all_reduce_bench
  std::optional<std::string> gpu;   // device name as the driver reports it
  std::optional<int> gpu_count;
  std::vector<std::string> hosts;
  std::optional<int> nodes;
  std::optional<int> ranks;
  std::optional<std::string> driver;
  std::optional<std::string> cuda;
  std::optional<std::string> nccl;
  std::optional<std::string> cublas;
  std::optional<std::string> cudnn;
  std::optional<std::string> command;
  std::optional<std::string> date;  // ISO-8601
  std::vector<std::string> sources;
  friend bool operator==(const RunProvenance&, const RunProvenance&) = default;
};

// How well a fitted model reproduces the points it was fitted to: relative errors |pred - t| / t.
struct FitQuality {
  double median_rel_err = 0.0;
  double max_rel_err = 0.0;
  int points = 0;
  friend bool operator==(const FitQuality&, const FitQuality&) = default;
};

struct TimedSize {
  Bytes bytes;
  Seconds time;
  friend bool operator==(const TimedSize&, const TimedSize&) = default;
};

// One alpha-beta line of a piecewise fit; max_bytes is the largest size it was fitted to.
// A curve's regimes predict with the minimum over regimes, as NCCL picks the fastest protocol.
struct Regime {
  Bytes max_bytes;
  Seconds alpha;
  BytesPerSecond busbw;
  friend bool operator==(const Regime&, const Regime&) = default;
};

struct CollectiveCurve {
  Collective collective = Collective::all_reduce;
  LinkScope scope = LinkScope::intra_node;
  int ranks = 0;
  int nodes = 0;
  Seconds alpha;  // one alpha-beta line over all points
  BytesPerSecond busbw;
  std::vector<Regime> regimes;    // ascending in size, alpha and busbw
  std::vector<TimedSize> points;  // measured, ascending and distinct in bytes
  FitQuality fit;                 // of the regimes against the points
  friend bool operator==(const CollectiveCurve&, const CollectiveCurve&) = default;
};

enum class GemmDtype { bf16, fp16, tf32, fp8 };

struct GemmPoint {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  FlopsPerSecond rate;
  friend bool operator==(const GemmPoint&, const GemmPoint&) = default;
};

// eta(M, N, K) = peak_efficiency * tile(M, N) * wave(M, N) * K / (K + k0), efficiency relative to
// the dense datasheet peak. NVIDIA Matrix Multiplication Background User's Guide, Sections 3.1-3.2.
struct GemmModel {
  GemmDtype dtype = GemmDtype::bf16;
  double peak_efficiency = 0.0;
  double k0 = 0.0;
  int tile_m = 128;
  int tile_n = 128;
  int sm_count = 0;     // of the GPU measured; 0: no wave quantization
  FlopsPerSecond peak;  // the dense datasheet peak efficiencies refer to
  std::vector<GemmPoint> points;
  FitQuality fit;
  friend bool operator==(const GemmModel&, const GemmModel&) = default;
};

struct SeqRate {
  std::int64_t seq = 0;
  FlopsPerSecond rate;
  friend bool operator==(const SeqRate&, const SeqRate&) = default;
};

// eta(s) = efficiency * s / (s + seq_half): attention nears its peak as sequences grow.
struct AttentionModel {
  double efficiency = 0.0;
  double seq_half = 0.0;
  FlopsPerSecond peak;
  std::vector<SeqRate> points;
  FitQuality fit;
  friend bool operator==(const AttentionModel&, const AttentionModel&) = default;
};

struct MemoryBandwidths {
  std::optional<BytesPerSecond> hbm;
  std::optional<BytesPerSecond> h2d;
  std::optional<BytesPerSecond> d2h;
  friend bool operator==(const MemoryBandwidths&, const MemoryBandwidths&) = default;
};

struct HardwareProfile {
  std::string name;
  std::string gpu;  // catalogue name or device string
  RunProvenance provenance;
  std::vector<CollectiveCurve> collectives;
  std::vector<GemmModel> gemm;
  std::optional<AttentionModel> attention_fwd;
  std::optional<AttentionModel> attention_bwd;
  MemoryBandwidths memory;
  std::optional<double> cpu_adam_params_per_s;
  RingLatency latency_weights;  // relative step latencies for scaling to unmeasured rank counts

  // Time of one collective. On a measured (collective, ranks, nodes) curve inside its sizes:
  // log-log linear interpolation of the measured points (exact at them). Outside its sizes: the
  // curve's alpha-beta regimes, anchored to the nearest measured point. For another rank or node
  // count: the nearest measured curve on the same side of the node boundary, its regimes' alpha
  // scaled by NCCL's ring latency steps and its bus bandwidth reused with this rank count's bus
  // factor. nullopt when no curve of this collective is on that side of the boundary.
  [[nodiscard]] std::optional<Seconds> collective_time(Collective c, int ranks, int nodes,
                                                       Bytes bytes) const;

  // The measured curve for exactly these ranks and nodes, or nullptr.
  [[nodiscard]] const CollectiveCurve* find_curve(Collective c, int ranks, int nodes) const;

  // GEMM efficiency (fraction of the dense peak) of an M x K by K x N product; sm_count <= 0 uses
  // the SM count the profile was measured on. nullopt when the dtype was not calibrated.
  [[nodiscard]] std::optional<double> gemm_efficiency(std::int64_t m, std::int64_t n,
                                                      std::int64_t k, std::string_view dtype,
                                                      int sm_count) const;

  [[nodiscard]] std::optional<double> attention_efficiency(bool backward, std::int64_t seq) const;
  [[nodiscard]] std::optional<BytesPerSecond> hbm_bandwidth() const { return memory.hbm; }
  [[nodiscard]] std::optional<BytesPerSecond> h2d_bandwidth() const { return memory.h2d; }
  [[nodiscard]] std::optional<BytesPerSecond> d2h_bandwidth() const { return memory.d2h; }
  [[nodiscard]] std::optional<double> cpu_adam_rate() const { return cpu_adam_params_per_s; }
  [[nodiscard]] bool empty() const;

  friend bool operator==(const HardwareProfile&, const HardwareProfile&) = default;
};

// Piecewise-linear interpolation in log(bytes)-log(time) between measured points, which must be
// ascending and distinct in bytes with positive sizes and times; clamps to the end points.
[[nodiscard]] Seconds interpolate_log_log(std::span<const TimedSize> points, Bytes bytes);

// min over regimes of alpha * latency_scale + factor * S / B.
[[nodiscard]] Seconds regimes_time(std::span<const Regime> regimes, double factor, Bytes bytes,
                                   double latency_scale = 1.0);

// Useful fraction of the padded tiles: M N / (ceil(M/Tm) Tm ceil(N/Tn) Tn).
// NVIDIA Matrix Multiplication Background User's Guide, Section 3.1 (tile quantization).
[[nodiscard]] double tile_efficiency(std::int64_t m, std::int64_t n, int tile_m, int tile_n);

// tiles / (waves * SMs), one tile per SM per wave. Same guide, Section 3.2 (wave quantization).
[[nodiscard]] double wave_efficiency(std::int64_t m, std::int64_t n, int tile_m, int tile_n,
                                     int sm_count);

// K / (K + K0): short reductions cannot hide the tile's prologue and epilogue.
[[nodiscard]] constexpr double small_k_efficiency(double k, double k0) { return k / (k + k0); }

// The GEMM model of `g` at one shape.
[[nodiscard]] double gemm_model_efficiency(const GemmModel& g, std::int64_t m, std::int64_t n,
                                           std::int64_t k, int sm_count);

// eta_max * s / (s + s_half).
[[nodiscard]] constexpr double saturating_efficiency(double eta_max, double s, double s_half) {
  return eta_max * s / (s + s_half);
}

}  // namespace trainplan::hardware

namespace trainplan {
template <>
struct EnumTable<hardware::GemmDtype> {
  static constexpr std::string_view kWhat = "GEMM dtype";
  static constexpr std::array kEntries{
      std::pair{hardware::GemmDtype::bf16, std::string_view{"bf16"}},
      std::pair{hardware::GemmDtype::fp16, std::string_view{"fp16"}},
      std::pair{hardware::GemmDtype::tf32, std::string_view{"tf32"}},
      std::pair{hardware::GemmDtype::fp8, std::string_view{"fp8"}}};
};
}  // namespace trainplan
