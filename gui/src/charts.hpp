#pragma once
// Every chart of the window is built here, from the table models (never from raw results), styled
// after the system palette, and exported as PNG or SVG.

#include <QColor>
#include <QPalette>
#include <QString>
#include <optional>

class QChart;
class QChartView;
class QWidget;

namespace trainplan::gui {

class MemoryModel;
class StepTimeModel;
class SweepModel;
class PlansModel;

namespace charts {

// The dynamic property on a plans-chart series holding, per point, the row of the plan it draws.
inline constexpr const char* kPlanRowsProperty = "trainplan_plan_rows";

[[nodiscard]] QColor color_for(int index);  // Okabe-Ito, readable on light and dark backgrounds
[[nodiscard]] bool is_dark(const QPalette& pal);

// Background, text, grid and legend from the palette; also re-applied on palette changes.
void style(QChart* chart, const QPalette& pal);

// Stacked bars of the model's part rows, one bar per configuration, with each configuration's
// usable capacity as a dashed line.
void build_memory(QChart* chart, const MemoryModel& m, const QPalette& pal);
// Horizontal stacked bars of the step-time parts, one bar per configuration.
void build_step_time(QChart* chart, const StepTimeModel& m, const QPalette& pal);
// Memory (left axis) and tokens/s (right axis) along the sweep, with the capacity and the first
// out-of-memory point marked.
void build_sweep(QChart* chart, const SweepModel& m, const QPalette& pal);
// Memory against tokens/s of every plan, the Pareto front highlighted; `current` is a plan row.
void build_plans(QChart* chart, const PlansModel& m, std::optional<int> current,
                 const QPalette& pal);

[[nodiscard]] bool save_png(QWidget* view, const QString& path);
[[nodiscard]] bool save_svg(QWidget* view, const QString& path, const QString& title);

}  // namespace charts
}  // namespace trainplan::gui
