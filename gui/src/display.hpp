#pragma once
// Display formatting and the glossary behind every tooltip. Nothing here computes a planner number:
// values arrive from the library and leave as text.

#include <QComboBox>
#include <QString>
#include <optional>
#include <cstdint>
#include <string>
#include <string_view>

#include "trainplan/core/enum_table.hpp"
#include "trainplan/core/modes.hpp"
#include "trainplan/core/units.hpp"
#include "trainplan/model/training.hpp"

namespace trainplan::gui {

[[nodiscard]] inline QString qstr(std::string_view s) {
  return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}
[[nodiscard]] inline std::string sstr(const QString& s) { return s.toStdString(); }

[[nodiscard]] QString gib_text(Bytes b, int decimals = 1);  // "52.3 GiB"; from 1024 GiB on "1.2 TiB", "296.0 PiB"
[[nodiscard]] QString bytes_text(Bytes b);                  // "512 MiB", "3.2 GiB"
// "1.23 s", "45.6 ms", "12 µs", "0 ms"; with `scale`, in the unit scale would take (one unit down a
// column of parts of a step).
[[nodiscard]] QString seconds_text(Seconds s, std::optional<Seconds> scale = std::nullopt);
[[nodiscard]] QString duration_text(Seconds s);  // "12.3 days", "5.2 hours", "40 minutes"
[[nodiscard]] QString rate_text(double per_s, const QString& unit);  // "12.3k tokens/s"
[[nodiscard]] QString percent_text(double fraction);                 // "41.7 %"
[[nodiscard]] QString count_text(std::int64_t n);                    // "6.74B"
[[nodiscard]] QString thousands_text(std::int64_t n);                // "6,738,415,616"
[[nodiscard]] QString strategy_label(Strategy s);                    // "FSDP full shard"
[[nodiscard]] QString strategy_label(const model::Training& t);      // "FSDP2 full-shard" where it runs

// Every term the window shows, with the sentence and the source its tooltip carries.
enum class Term {
  weights,
  gradients,
  optimizer_state,
  activations,
  buffers,
  overhead,
  peak_allocated,
  device_total,
  usable,
  headroom,
  host,
  max_micro_batch,
  step,
  compute,
  memory_bound,
  host_time,
  recompute,
  communication_exposed,
  overlap_slowdown,
  bubble,
  optimizer_step,
  offload_time,
  reference_forward,
  tokens_per_s,
  samples_per_s,
  mfu,
  hfu,
  global_batch,
  communication_bytes,
  collective,
  link_tier,
};

[[nodiscard]] QString term_label(Term t);
[[nodiscard]] QString term_tooltip(Term t);  // rich text: meaning, then "Source: ..."

// What each training option means, for the form's tooltips.
// Plain text as a tooltip Qt wraps (rich text): a long explanation stays a paragraph, not one line
// across the screen.
[[nodiscard]] QString wrapped(const QString& plain);
[[nodiscard]] QString option_tooltip(std::string_view option);

// Combo boxes list exactly the strings of the mode's table (the CLI's and JSON's spelling).
template <class E>
void fill_enum_combo(QComboBox* box) {
  for (const auto& [value, name] : EnumTable<E>::kEntries) box->addItem(qstr(name));
}
template <class E>
[[nodiscard]] E combo_enum(const QComboBox* box) {
  return parse_enum<E>(sstr(box->currentText()));
}
template <class E>
void set_combo_enum(QComboBox* box, E value) {
  box->setCurrentIndex(box->findText(qstr(to_string(value))));
}

}  // namespace trainplan::gui
