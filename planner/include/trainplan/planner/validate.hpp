#pragma once
// Predictions against reference cases: measured runs from public sources (data/reference/*.json)
// and the PyTorch oracle's exact numbers (data/reference/oracle/*.json). Pure: the cases come in as
// values (request/reference.hpp reads them), the comparisons and their summary come out.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "trainplan/core/enum_table.hpp"
#include "trainplan/hardware/gpu.hpp"
#include "trainplan/hardware/profile.hpp"
#include "trainplan/model/architecture.hpp"
#include "trainplan/model/training.hpp"
#include "trainplan/planner/memory.hpp"

namespace trainplan::planner {

// What was measured. Those up to saved_for_backward_head are what the oracle records
// (tools/oracle/README.md); the rest are what public runs report.
enum class Metric {
  parameters,                // every unique parameter
  trainable_parameters,      // those with requires_grad
  flops_forward,             // torch.utils.flop_counter around the forward (loss included)
  flops_backward,            // the same around loss.backward(): recomputation included
  gradient_bytes,            // sum of p.grad.nbytes after backward
  optimizer_state_bytes,     // optimizer.state tensors after one step, `step` scalars excluded
  saved_for_backward_layer,  // bytes autograd keeps for backward in one block (Measurement::layer)
  saved_for_backward_head,   // the same after the last block: final norm, LM head, loss
  peak_allocated,            // torch.cuda.max_memory_allocated
  reserved,                  // torch.cuda.max_memory_reserved
  device_total,              // nvidia-smi memory used by the process
  step_time,                 // one optimizer step
  tokens_per_s,              // tokens per second over the whole job
};

// The unit a value is written in. GiB = 2^30 bytes, GB = 10^9 bytes, MiB = 2^20 bytes.
enum class Unit { parameters, flop, bytes, GiB, GB, MiB, s, ms, tokens_per_s };

enum class CaseKind { oracle, measured };

// Whether a value of this metric may be written in this unit (a memory metric in GiB, GB, MiB or
// bytes; a time in s or ms; ...).
[[nodiscard]] bool unit_fits(Metric m, Unit u);
// Base units (bytes, FLOPs, seconds, parameters, tokens/s) in one of this unit: GiB -> 2^30.
[[nodiscard]] double unit_scale(Unit u);
[[nodiscard]] std::string allowed_units(Metric m);  // "GiB, GB, MiB, bytes" for messages

struct Measurement {
  Metric metric = Metric::peak_allocated;
  Unit unit = Unit::GiB;
  double value = 0.0;  // as written, in `unit`
  std::string what;  // how it was measured: "torch.cuda.max_memory_allocated() / 1e9", "nvidia-smi"
  double tolerance_pct = 0.0;  // the pass band the source's issue sets
  int layer = -1;              // saved_for_backward_layer: block index in execution order
  // An open gap: why the model does not meet the band on this value yet. A value outside its
  // tolerance with an open gap is reported as open, not as a failure; a value back within it makes
  // the mark stale, which `validate --check` refuses, so marks cannot outlive the gap.
  std::string open;
};

struct ReferenceCase {
  std::string name;
  CaseKind kind = CaseKind::measured;
  std::string file;    // the file it was read from, for messages
  std::string source;  // document, table, row
  std::string note;
  // Non-empty when constants of the model were fitted on this case (what was fitted): its errors
  // are not evidence, and the held-out summary leaves it out.
  std::string fitted_by;
  model::Architecture arch;
  hardware::Cluster cluster;  // oracle cases: one GPU of no particular kind (they ran on CPU)
  model::Training training;
  std::vector<Measurement> measurements;
};

struct Comparison {
  Metric metric = Metric::peak_allocated;
  int layer = -1;
  Unit unit = Unit::GiB;
  double measured = 0.0;   // in `unit`
  double predicted = 0.0;  // in `unit`
  double tolerance_pct = 0.0;
  std::string what;
  std::string open;  // as in Measurement
  // (predicted - measured) / measured x 100.
  [[nodiscard]] double error_pct() const;
  [[nodiscard]] bool within_tolerance() const;
  // Outside its tolerance with an open gap stated.
  [[nodiscard]] bool open_gap() const { return !open.empty() && !within_tolerance(); }
  // An open gap stated for a value within its tolerance: the mark should go.
  [[nodiscard]] bool stale_open() const { return !open.empty() && within_tolerance(); }
};

struct CaseResult {
  std::string name;
  CaseKind kind = CaseKind::measured;
  std::string file;
  std::string source;
  std::vector<Comparison> comparisons;
  std::string fitted_by;  // as in ReferenceCase
};

struct MetricSummary {
  Metric metric = Metric::parameters;
  std::size_t count = 0;  // compared values
  double median_abs_pct = 0.0;
  double max_abs_pct = 0.0;
  std::string worst;  // the case (and layer) with the largest error; empty when every error is 0
  std::size_t outside_tolerance = 0;  // outside, with no open gap stated
  std::size_t open = 0;               // outside, with an open gap stated
};

struct Summary {
  std::size_t cases = 0;
  std::size_t compared = 0;  // measured values compared with a prediction
  std::size_t outside_tolerance = 0;  // outside, with no open gap stated
  std::size_t open = 0;               // outside, with an open gap stated
  double median_abs_pct = 0.0;  // over every compared value
  double max_abs_pct = 0.0;
  std::vector<MetricSummary> metrics;  // in enum order, only metrics that occur
};

struct ValidationReport {
  std::vector<CaseResult> cases;
  Summary all;
  Summary oracle;
  Summary measured;
  Summary held_out;  // measured cases no constant was fitted on
};

// Predicts every measurement of the case. Throws InputError naming the case and its file when its
// configuration is impossible (e.g. a parallel degree that does not divide the cluster).
// With a hardware profile, cases on the GPU the profile was measured on are predicted with it
// (hardware::profile_applies); the others with the datasheet.
[[nodiscard]] CaseResult validate_case(const ReferenceCase& c, const MemoryConventions& mc = {},
                                       const hardware::HardwareProfile* profile = nullptr);

// Summary of results, optionally of one kind only. Medians of an even count average the middle two.
[[nodiscard]] Summary summarise(std::span<const CaseResult> results,
                                std::optional<CaseKind> only = std::nullopt,
                                bool held_out_only = false);

[[nodiscard]] ValidationReport validate(std::span<const ReferenceCase> cases,
                                        const MemoryConventions& mc = {},
                                        const hardware::HardwareProfile* profile = nullptr);

}  // namespace trainplan::planner

namespace trainplan {
template <>
struct EnumTable<planner::Metric> {
  static constexpr std::string_view kWhat = "metric";
  static constexpr std::array kEntries{
      std::pair{planner::Metric::parameters, std::string_view{"parameters"}},
      std::pair{planner::Metric::trainable_parameters, std::string_view{"trainable_parameters"}},
      std::pair{planner::Metric::flops_forward, std::string_view{"flops_forward"}},
      std::pair{planner::Metric::flops_backward, std::string_view{"flops_backward"}},
      std::pair{planner::Metric::gradient_bytes, std::string_view{"gradient_bytes"}},
      std::pair{planner::Metric::optimizer_state_bytes, std::string_view{"optimizer_state_bytes"}},
      std::pair{planner::Metric::saved_for_backward_layer,
                std::string_view{"saved_for_backward_layer"}},
      std::pair{planner::Metric::saved_for_backward_head,
                std::string_view{"saved_for_backward_head"}},
      std::pair{planner::Metric::peak_allocated, std::string_view{"peak_allocated"}},
      std::pair{planner::Metric::reserved, std::string_view{"reserved"}},
      std::pair{planner::Metric::device_total, std::string_view{"device_total"}},
      std::pair{planner::Metric::step_time, std::string_view{"step_time"}},
      std::pair{planner::Metric::tokens_per_s, std::string_view{"tokens_per_s"}}};
};
template <>
struct EnumTable<planner::Unit> {
  static constexpr std::string_view kWhat = "unit";
  static constexpr std::array kEntries{
      std::pair{planner::Unit::parameters, std::string_view{"parameters"}},
      std::pair{planner::Unit::flop, std::string_view{"FLOP"}},
      std::pair{planner::Unit::bytes, std::string_view{"bytes"}},
      std::pair{planner::Unit::GiB, std::string_view{"GiB"}},
      std::pair{planner::Unit::GB, std::string_view{"GB"}},
      std::pair{planner::Unit::MiB, std::string_view{"MiB"}},
      std::pair{planner::Unit::s, std::string_view{"s"}},
      std::pair{planner::Unit::ms, std::string_view{"ms"}},
      std::pair{planner::Unit::tokens_per_s, std::string_view{"tokens/s"}}};
};
template <>
struct EnumTable<planner::CaseKind> {
  static constexpr std::string_view kWhat = "case kind";
  static constexpr std::array kEntries{
      std::pair{planner::CaseKind::oracle, std::string_view{"oracle"}},
      std::pair{planner::CaseKind::measured, std::string_view{"measured"}}};
};
}  // namespace trainplan
