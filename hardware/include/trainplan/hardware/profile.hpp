#pragma once
// A hardware profile: what `trainplan calibrate fit` learned from measurements on one cluster,
// as plain values, with the queries the time model asks. No I/O here; trainplan/request/profile_json.hpp
// reads and writes it. Every section may be empty, and every query answers nullopt when the
// profile cannot say, so the caller falls back to datasheet defaults.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trainplan/core/enum_table.hpp"
#include "trainplan/core/units.hpp"
#include "trainplan/hardware/collective.hpp"
#include "trainplan/hardware/fit_quality.hpp"
#include "trainplan/hardware/gpu.hpp"
#include "trainplan/hardware/nccl_model.hpp"

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
  std::string dtype;  // nccl-tests' data type ("float", "bfloat16", ...); empty: not recorded
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

// A GEMM of one dtype (cuBLASLt TN layout, as trainplan-calibrate measures it). Two forms:
//  * efficiency form (profiles fitted before the roofline form; read_bandwidth zero):
//      eta(M, N, K) = peak_efficiency * tile(M, N) * wave(M, N) * K / (K + k0), full 128 tiles.
//  * roofline form: t = overhead + (C^p + B^p)^(1/p), with C = 2 M N K / (peak eta(M, N, K)) on
//    tiles narrowed to thin operands and B = (M K + K N) a_bytes / read_bandwidth +
//    M N c_bytes / write_bandwidth (Williams, Waterman & Patterson 2009, a roofline joined by a
//    p-norm instead of a max, so that the corner is as soft as measured).
// With interpolation_octaves = sigma > 0 the measured points are honoured: the log ratio of
// measured to model time at each point is interpolated to the query shape, weighting point i by
// exp(-d_i^2 / 2 sigma^2) / d_i^2 with d_i its distance in log2(M, N, K) (inverse-distance
// weighting, Shepard 1968, under a Gaussian window), against interpolation_prior, the weight of
// the model itself, which takes over far from every point; a measured shape answers its measured
// time (the geometric mean of repeats).
// NVIDIA Matrix Multiplication Background User's Guide, Sections 3.1-3.2 (tile and wave).
struct GemmModel {
  GemmDtype dtype = GemmDtype::bf16;
  double peak_efficiency = 0.0;
  double k0 = 0.0;
  int tile_m = 128;
  int tile_n = 128;
  int sm_count = 0;                // of the GPU measured; 0: no wave quantization
  FlopsPerSecond peak;             // the dense datasheet peak efficiencies refer to
  Seconds overhead;                // roofline form: fixed time of one kernel
  BytesPerSecond read_bandwidth;   // roofline form; zero: the efficiency form
  BytesPerSecond write_bandwidth;  // roofline form
  double smoothness = 0.0;         // p; roofline form
  double a_bytes = 0.0;            // bytes per element of A and B; roofline form
  double c_bytes = 0.0;            // bytes per element of C; roofline form
  double interpolation_octaves = 0.0;
  double interpolation_prior = 0.0;
  std::vector<GemmPoint> points;
  FitQuality fit;            // what the profile predicts at its own points (interpolation included)
  FitQuality model_fit;      // the model alone at the same points
  FitQuality leave_one_out;  // each point predicted from a fit to the others
  [[nodiscard]] bool roofline() const { return read_bandwidth.value() > 0.0; }
  friend bool operator==(const GemmModel&, const GemmModel&) = default;
};

struct SeqRate {
  std::int64_t seq = 0;
  FlopsPerSecond rate;
  std::int64_t head_dim = 0;  // 0: not recorded (profiles before head dims were kept)
  friend bool operator==(const SeqRate&, const SeqRate&) = default;
};

// Which kernel an attention model was measured on: the fused (flash-style, cuDNN) kernel that
// training runs, or the unfused proxy (two batched GEMMs and a softmax) kept only as a labelled
// fallback: queries for the fused kernel never answer from it.
enum class AttentionKernel { fused, unfused };

// eta(s) = efficiency * s / (s + seq_half): attention nears its peak as sequences grow. With
// head dims recorded, a query that names its head dim interpolates the measured points of the
// nearest head dim in log(seq) instead, the model's shape continuing past the end points.
struct AttentionModel {
  double efficiency = 0.0;
  double seq_half = 0.0;
  FlopsPerSecond peak;
  AttentionKernel kernel = AttentionKernel::fused;
  std::vector<SeqRate> points;
  FitQuality fit;           // the saturation model at its points
  FitQuality interpolated;  // what a query with the point's head dim answers (exact but repeats)
  friend bool operator==(const AttentionModel&, const AttentionModel&) = default;
};

struct MemoryBandwidths {
  std::optional<BytesPerSecond> hbm;
  std::optional<BytesPerSecond> h2d;
  std::optional<BytesPerSecond> d2h;
  friend bool operator==(const MemoryBandwidths&, const MemoryBandwidths&) = default;
};

// Memory-bound kernels measured on their own (trainplan-calibrate --optimizer, --elementwise).
struct KernelBandwidths {
  // AdamW step, one multi-tensor launch: traffic / time, traffic = params (2 P + G + 4 S) bytes.
  std::optional<BytesPerSecond> optimizer_fp32_states;  // fp32 parameters and moments
  std::optional<BytesPerSecond> optimizer_bf16_states;  // bf16 parameters and moments
  // Eager elementwise kernels (copy, cast, add, RMSNorm): the median over ops and sizes of at
  // least elementwise_min_bytes, large enough that the L2 cache does not serve them.
  std::optional<BytesPerSecond> elementwise;
  Bytes elementwise_min_bytes;
  std::vector<std::pair<std::string, BytesPerSecond>> elementwise_by_op;  // median per op
  friend bool operator==(const KernelBandwidths&, const KernelBandwidths&) = default;
};

// Host time per kernel launch, back to back (trainplan-calibrate --launch).
struct LaunchOverheads {
  std::optional<Seconds> empty_kernel;
  std::optional<Seconds> small_gemm;  // the smallest GEMM measured: cuBLASLt's host path
  std::int64_t small_gemm_size = 0;   // its M = N = K
  friend bool operator==(const LaunchOverheads&, const LaunchOverheads&) = default;
};

struct HardwareProfile {
  std::string name;
  std::string gpu;  // catalogue name or device string
  RunProvenance provenance;
  std::vector<CollectiveCurve> collectives;
  std::vector<GemmModel> gemm;
  std::optional<AttentionModel> attention_fwd;  // non-causal
  std::optional<AttentionModel> attention_bwd;
  std::optional<AttentionModel> attention_fwd_causal;
  std::optional<AttentionModel> attention_bwd_causal;
  MemoryBandwidths memory;
  std::optional<double> cpu_adam_params_per_s;
  KernelBandwidths kernels;
  LaunchOverheads launch;
  // NCCL-structured models per (collective, scope, dtype), fitted to the curves of that scope and
  // dtype (calibration::fit_collective_models).
  std::vector<CollectiveModel> collective_models;

  // Time of one collective. Of the collective's curves and models, those of `dtype` answer when
  // the profile measured it, else those of the dtype with the most measured points
  // (answering_dtype). On a measured (collective, ranks, nodes) curve inside its sizes: log-log
  // linear interpolation of the measured points (exact at them). Outside its sizes: the curve's
  // alpha-beta regimes, anchored to the nearest measured point. For another rank or node count:
  // the scope's collective model (nccl_model.hpp) times the measured curves' own departure from
  // it at this size (log ratio), interpolated in log2 of the node count (one node: of the rank
  // count) between the nearest measured counts on either side, among the curves of the nearest
  // ranks per node; beyond the measured counts, the nearest one's. nullopt when the scope has no
  // model of this collective.
  [[nodiscard]] std::optional<Seconds> collective_time(Collective c, int ranks, int nodes,
                                                       Bytes bytes,
                                                       std::string_view dtype = {}) const;

  // The dtype whose curves and models answer for this collective: `wanted` when the profile has
  // it, else the one with the most measured points ("" when none is recorded).
  [[nodiscard]] std::string answering_dtype(Collective c, std::string_view wanted = {}) const;

  // The model of this collective on this scope (of answering_dtype(c, dtype)), or nullptr.
  [[nodiscard]] const CollectiveModel* find_model(Collective c, LinkScope scope,
                                                  std::string_view dtype = {}) const;

  // The measured curve for exactly these ranks and nodes (of answering_dtype(c, dtype)), or
  // nullptr.
  [[nodiscard]] const CollectiveCurve* find_curve(Collective c, int ranks, int nodes,
                                                  std::string_view dtype = {}) const;

  // GEMM efficiency (fraction of the dense peak) of an M x K by K x N product: 2 M N K over the
  // peak times the predicted time (GemmModel), so that a measured shape answers its measured
  // rate; sm_count <= 0 uses the SM count the profile was measured on. nullopt when the dtype was
  // not calibrated.
  [[nodiscard]] std::optional<double> gemm_efficiency(std::int64_t m, std::int64_t n,
                                                      std::int64_t k, std::string_view dtype,
                                                      int sm_count) const;
  // The same for `count` back-to-back products in one batched kernel (a batched matmul): their
  // tiles share the waves and the kernel's fixed time is paid once; the efficiency is of all
  // 2 M N K count FLOPs.
  [[nodiscard]] std::optional<double> gemm_efficiency(std::int64_t m, std::int64_t n,
                                                      std::int64_t k, std::string_view dtype,
                                                      int sm_count, double count) const;

  // Fused attention efficiency (fraction of the dense peak, FLOPs counted as the benchmark
  // does: 4 b h s^2 d forward, half of it causal, 2.5x backward). The two-argument form answers
  // for a non-causal mask; `causal` prefers the causal model and falls back to the non-causal
  // one; head_dim > 0 interpolates the measured points of the nearest head dim. nullopt when no
  // fused-kernel model exists for the pass (an unfused proxy does not answer).
  [[nodiscard]] std::optional<double> attention_efficiency(bool backward, std::int64_t seq) const;
  [[nodiscard]] std::optional<double> attention_efficiency(bool backward, std::int64_t seq,
                                                           bool causal,
                                                           std::int64_t head_dim = 0) const;
  [[nodiscard]] std::optional<BytesPerSecond> hbm_bandwidth() const { return memory.hbm; }
  [[nodiscard]] std::optional<BytesPerSecond> h2d_bandwidth() const { return memory.h2d; }
  [[nodiscard]] std::optional<BytesPerSecond> d2h_bandwidth() const { return memory.d2h; }
  [[nodiscard]] std::optional<double> cpu_adam_rate() const { return cpu_adam_params_per_s; }
  // Streaming rate of the GPU optimizer step (bytes moved per second, traffic as in
  // KernelBandwidths) with fp32 or with bf16 parameters and moments.
  [[nodiscard]] std::optional<BytesPerSecond> optimizer_bandwidth(bool fp32_states) const {
    return fp32_states ? kernels.optimizer_fp32_states : kernels.optimizer_bf16_states;
  }
  // Eager elementwise kernels, bytes read and written per second, beyond the L2 cache.
  [[nodiscard]] std::optional<BytesPerSecond> elementwise_bandwidth() const {
    return kernels.elementwise;
  }
  // Host time per launch of an empty kernel, back to back.
  [[nodiscard]] std::optional<Seconds> launch_overhead() const { return launch.empty_kernel; }
  // Host time per launch of a small cuBLASLt GEMM, back to back (more host work than a kernel).
  [[nodiscard]] std::optional<Seconds> gemm_launch_overhead() const { return launch.small_gemm; }
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

// The GEMM model of `g` at one shape, measured points left aside: the time of `count` products
// in one kernel, and 2 M N K count over the peak times that time (for the efficiency form,
// eta(M, N, K) itself, waves shared by the products).
[[nodiscard]] Seconds gemm_model_time(const GemmModel& g, std::int64_t m, std::int64_t n,
                                      std::int64_t k, int sm_count, double count = 1.0);
[[nodiscard]] double gemm_model_efficiency(const GemmModel& g, std::int64_t m, std::int64_t n,
                                           std::int64_t k, int sm_count, double count = 1.0);

// What a profile predicts for `count` products of `g` in one kernel: the model time corrected by
// the interpolated log ratio of measured to model time at the points (GemmModel). `skip` >= 0
// leaves that point out (leave-one-out checks).
[[nodiscard]] Seconds gemm_predicted_time(const GemmModel& g, std::int64_t m, std::int64_t n,
                                          std::int64_t k, int sm_count, int skip = -1,
                                          double count = 1.0);

// cuBLAS picks narrower tiles for thin operands: the operand rounded up to a power of two, at
// least 16, at most `tile`.
[[nodiscard]] int narrow_tile(std::int64_t dim, int tile);

// The attention model's efficiency at `seq` for head dim `head_dim` (0: the saturation model).
[[nodiscard]] double attention_model_efficiency(const AttentionModel& a, std::int64_t seq,
                                                std::int64_t head_dim);

// eta_max * s / (s + s_half).
[[nodiscard]] constexpr double saturating_efficiency(double eta_max, double s, double s_half) {
  return eta_max * s / (s + s_half);
}

// The GPU model a name gives: its first word that holds a digit, lower-cased ("NVIDIA H200" and
// "H200" -> "h200"; "NVIDIA A100-SXM4-80GB" and "A100-80GB" -> "a100"; "NVIDIA GeForce RTX 4090"
// and "RTX-4090" -> "4090"; "AMD Instinct MI300X" -> "mi300x"). Empty when no word has a digit.
[[nodiscard]] std::string gpu_model(std::string_view name);

// Whether a profile describes this GPU: the model of the GPU it names (the catalogue name it was
// fitted for, else the driver's device name) is the GPU's. A profile naming no GPU applies to any.
[[nodiscard]] bool profile_applies(const HardwareProfile& p, const GpuSpec& g);

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
template <>
struct EnumTable<hardware::AttentionKernel> {
  static constexpr std::string_view kWhat = "attention kernel";
  static constexpr std::array kEntries{
      std::pair{hardware::AttentionKernel::fused, std::string_view{"fused"}},
      std::pair{hardware::AttentionKernel::unfused, std::string_view{"unfused"}}};
};
}  // namespace trainplan
