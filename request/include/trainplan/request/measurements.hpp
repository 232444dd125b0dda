#pragma once
// A calibration run directory on disk (docs/calibration.md, "Run directory"):
//   RUN_DIR/measurements.jsonl  one JSON object per line, "kind": collective | gemm | attention |
//                               memory_bandwidth | cpu_adam | optimizer | elementwise | launch |
//                               skipped (a point not measured, with its reason)
//   RUN_DIR/provenance.json     {"schema": "trainplan.run/1", "tool", "gpu", ...}
// Readers reject unknown keys and name them with the file and line.

#include <filesystem>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>

#include "trainplan/calibration/measurement.hpp"
#include "trainplan/hardware/profile.hpp"
#include "trainplan/request/collective_log.hpp"

namespace trainplan::request {

inline constexpr std::string_view kRunSchema = "trainplan.run/1";
inline constexpr std::string_view kMeasurementsSchema = "trainplan.measurements/1";
inline constexpr std::string_view kMeasurementsFile = "measurements.jsonl";
inline constexpr std::string_view kProvenanceFile = "provenance.json";

[[nodiscard]] std::string measurements_to_jsonl(const calibration::Measurements& m);
// `source` names the text in messages ("RUN/measurements.jsonl line 3: unknown key 'tflop'").
[[nodiscard]] calibration::Measurements parse_measurements_jsonl(std::string_view text,
                                                               std::string_view source);

[[nodiscard]] std::string provenance_to_json(const hardware::RunProvenance& p);
[[nodiscard]] hardware::RunProvenance parse_provenance_json(std::string_view text,
                                                            std::string_view source);
// The provenance object without "schema", as a hardware profile embeds it, and its reader.
[[nodiscard]] nlohmann::ordered_json provenance_object(const hardware::RunProvenance& p);
[[nodiscard]] hardware::RunProvenance provenance_from_object(const nlohmann::json& j,
                                                             const std::string& what);

// Reads RUN_DIR; the run is named by the path as given.
[[nodiscard]] calibration::Run read_run_dir(const std::filesystem::path& dir);
// Writes RUN_DIR. A new directory appears complete or not at all (written beside it, then renamed);
// in an existing one each file is replaced by rename, so no file is ever half-written.
void write_run_dir(const std::filesystem::path& dir, const calibration::Run& run);

// `trainplan calibrate import --json`:
// {"schema": "trainplan.measurements/1", "collectives": [...]}.
[[nodiscard]] std::string imported_logs_json(std::span<const CollectiveLog> logs);

// x rounded to 12 significant digits, so that unit conversions print as the numbers they came from.
[[nodiscard]] double round_significant(double x);

}  // namespace trainplan::request
