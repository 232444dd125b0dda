#include "charts.hpp"

#include <QCursor>
#include <QFile>
#include <QPainter>
#include <QSvgGenerator>
#include <QToolTip>
#include <QWidget>
#include <QtCharts/QBarCategoryAxis>
#include <QtCharts/QBarSet>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>
#include <QtCharts/QHorizontalStackedBarSeries>
#include <QtCharts/QLegendMarker>
#include <QtCharts/QLineSeries>
#include <QtCharts/QLogValueAxis>
#include <QtCharts/QScatterSeries>
#include <QtCharts/QStackedBarSeries>
#include <QtCharts/QValueAxis>
#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <utility>
#include <vector>

#include "models.hpp"
#include "trainplan/planner/search.hpp"
#include "trainplan/reports/verdict.hpp"

namespace trainplan::gui::charts {
namespace {

// Okabe & Ito (2008) colour-blind-safe palette.
constexpr std::array<QRgb, 10> kColors{0xff0072b2, 0xffe69f00, 0xff009e73, 0xffcc79a7,
                                       0xff56b4e9, 0xff999999, 0xfff0e442, 0xffd55e00,
                                       0xff88ccee, 0xff332288};
const QColor kCapacity{0xd5, 0x5e, 0x00};

void clear(QChart* chart) {
  chart->removeAllSeries();
  const QList<QAbstractAxis*> axes = chart->axes();
  for (QAbstractAxis* a : axes) {
    chart->removeAxis(a);
    delete a;
  }
  chart->setTitle({});
}

QColor text_color(const QPalette& pal) { return pal.color(QPalette::Text); }

QColor grid_color(const QPalette& pal) {
  QColor c = pal.color(QPalette::Text);
  c.setAlpha(45);
  return c;
}

void style_axis(QAbstractAxis* a, const QPalette& pal) {
  a->setLabelsColor(text_color(pal));
  a->setTitleBrush(text_color(pal));
  QPen line(grid_color(pal));
  a->setLinePen(line);
  a->setGridLineColor(grid_color(pal));
  a->setMinorGridLineColor(grid_color(pal));
  QFont f = a->titleFont();
  f.setBold(false);
  a->setTitleFont(f);
}

void add_axis(QChart* chart, QAbstractAxis* a, Qt::Alignment where, const QPalette& pal,
              std::initializer_list<QAbstractSeries*> series) {
  style_axis(a, pal);
  chart->addAxis(a, where);
  for (QAbstractSeries* s : series) s->attachAxis(a);
}

void hide_legend_marker(QChart* chart, QAbstractSeries* s) {
  for (QLegendMarker* m : chart->legend()->markers(s)) m->setVisible(false);
}

void tooltip_on_hover(QBarSet* set, const QString& unit, const QString& explanation) {
  QObject::connect(set, &QBarSet::hovered, set, [set, unit, explanation](bool on, int i) {
    if (!on) {
      QToolTip::hideText();
      return;
    }
    QToolTip::showText(QCursor::pos(), QStringLiteral("<b>%1</b>: %2 %3%4")
                                           .arg(set->label().toHtmlEscaped())
                                           .arg(set->at(i), 0, 'f', 2)
                                           .arg(unit, explanation));
  });
}

QPen solid(const QColor& c, qreal width) {
  QPen p(c);
  p.setWidthF(width);
  return p;
}

QPen dashed(const QColor& c, qreal width) {
  QPen p = solid(c, width);
  p.setStyle(Qt::DashLine);
  return p;
}

QLineSeries* line(const QString& name, const QPen& pen) {
  auto* l = new QLineSeries;
  l->setName(name);
  l->setPen(pen);
  return l;
}

// Filled markers, their border the same colour.
QScatterSeries* markers(const QString& name, const QColor& color, qreal size) {
  auto* s = new QScatterSeries;
  s->setName(name);
  s->setColor(color);
  s->setBorderColor(color);
  s->setMarkerSize(size);
  return s;
}

// A ring in the text colour around the point it marks.
QScatterSeries* ring(const QString& name, qreal size, const QPalette& pal) {
  auto* s = new QScatterSeries;
  s->setName(name);
  s->setMarkerSize(size);
  s->setColor(Qt::transparent);
  s->setPen(solid(text_color(pal), 2));
  return s;
}

// Shows what `text` says of the point under the mouse, if anything.
void tooltip_on_hover(QScatterSeries* series, std::function<QString(QPointF)> text) {
  QObject::connect(series, &QScatterSeries::hovered, series,
                   [text = std::move(text)](const QPointF& point, bool on) {
                     if (!on) {
                       QToolTip::hideText();
                       return;
                     }
                     if (const QString t = text(point); !t.isEmpty()) QToolTip::showText(QCursor::pos(), t);
                   });
}

}  // namespace

QColor color_for(int index) {
  return QColor::fromRgba(kColors[static_cast<std::size_t>(index) % kColors.size()]);
}

bool is_dark(const QPalette& pal) { return pal.color(QPalette::Window).lightness() < 128; }

void style(QChart* chart, const QPalette& pal) {
  chart->setBackgroundBrush(pal.color(QPalette::Base));
  chart->setBackgroundPen(Qt::NoPen);
  chart->setBackgroundRoundness(0);
  chart->setPlotAreaBackgroundVisible(false);
  chart->setTitleBrush(text_color(pal));
  chart->legend()->setLabelColor(text_color(pal));
  chart->legend()->setAlignment(Qt::AlignBottom);
  chart->setMargins(QMargins(6, 6, 6, 6));
  chart->setAnimationOptions(QChart::NoAnimation);
  for (QAbstractAxis* a : chart->axes()) style_axis(a, pal);
}

void build_memory(QChart* chart, const MemoryModel& m, const QPalette& pal) {
  clear(chart);
  style(chart, pal);
  const int cols = m.columnCount();
  if (cols == 0) return;
  auto* bars = new QStackedBarSeries;
  for (int r = 0; r < m.partRows(); ++r) {
    auto* set = new QBarSet(m.headerData(r, Qt::Vertical, Qt::DisplayRole).toString());
    set->setColor(color_for(r));
    set->setBorderColor(color_for(r));
    for (int c = 0; c < cols; ++c) set->append(m.value(r, c));
    tooltip_on_hover(set, QStringLiteral("GiB"),
                     m.headerData(r, Qt::Vertical, Qt::ToolTipRole).toString());
    bars->append(set);
  }
  bars->setBarWidth(cols == 1 ? 0.4 : 0.6);
  chart->addSeries(bars);

  const int total_row = m.rowOf(Term::device_total).value_or(-1);
  const int usable_row = m.rowOf(Term::usable).value_or(-1);
  QStringList categories;
  double top = 0;
  for (int c = 0; c < cols; ++c) {
    const double total = m.value(total_row, c);
    const double usable = m.value(usable_row, c);
    top = std::max({top, total, usable});
    categories << m.columnTitles()[c];
  }
  const std::optional<planner::Verdict> verdict = m.verdict(0);
  chart->setTitle(QStringLiteral("<b>Memory per GPU</b>: %1 of %2 GiB (%3)")
                      .arg(m.value(total_row, 0), 0, 'f', 1)
                      .arg(m.value(usable_row, 0), 0, 'f', 1)
                      .arg(verdict ? verdict_word(*verdict) : QString()));
  chart->legend()->setAlignment(Qt::AlignRight);
  chart->legend()->setReverseMarkers(true);
  auto* x = new QBarCategoryAxis;
  x->append(categories);
  add_axis(chart, x, Qt::AlignBottom, pal, {bars});
  auto* y = new QValueAxis;
  y->setTitleText(QStringLiteral("GiB per GPU (as nvidia-smi shows)"));
  y->setRange(0, top * 1.08);
  y->applyNiceNumbers();
  y->setLabelFormat(QStringLiteral("%.0f"));
  add_axis(chart, y, Qt::AlignLeft, pal, {bars});

  // The capacity, drawn across each bar on a hidden linear axis aligned with the categories.
  auto* hx = new QValueAxis;
  hx->setRange(-0.5, cols - 0.5);
  hx->setVisible(false);
  style_axis(hx, pal);
  chart->addAxis(hx, Qt::AlignBottom);
  for (int c = 0; c < cols; ++c) {
    const double usable = m.value(usable_row, c);
    // "capacity", as the sweep names it: short enough for the legend of a 1024-px window.
    auto* capacity = line(QStringLiteral("capacity"), dashed(kCapacity, 2.5));
    const double half = cols == 1 ? 0.3 : 0.4;
    capacity->append(c - half, usable);
    capacity->append(c + half, usable);
    chart->addSeries(capacity);
    capacity->attachAxis(hx);
    capacity->attachAxis(y);
    if (c > 0) hide_legend_marker(chart, capacity);
  }
}

namespace {

// Each part of the step keeps its colour whichever parts are shown; the communication rows take
// turns at three hues, each round of three a shade darker or lighter than the one before, so no two
// rows share a colour.
QColor step_part_color(Term t, int& comm_index) {
  static constexpr std::pair<Term, int> kColours[] = {
      {Term::compute, 0}, {Term::memory_bound, 8},   {Term::host_time, 9},   {Term::recompute, 4},
      {Term::bubble, 5},  {Term::optimizer_step, 2}, {Term::offload_time, 3},
  };
  for (const auto& [term, index] : kColours)
    if (term == t) return color_for(index);
  // A second forward: the compute colour, darker (a shade no communication row takes).
  if (t == Term::reference_forward) return color_for(0).darker(160);
  static constexpr int kComm[] = {1, 7, 6};
  const int i = comm_index++;
  const QColor base = color_for(kComm[i % 3]);
  const int round = i / 3;
  if (round == 0) return base;
  return round % 2 == 1 ? base.darker(100 + 35 * ((round + 1) / 2)) : base.lighter(100 + 25 * (round / 2));
}

// A step part's name as a legend beside the chart can hold it (about 20 characters at 1280 px):
// the table row keeps the full name. "comm: forward parameter all-gather" -> "fwd param all-gather".
QString legend_words(QString label) {
  static const std::pair<const char*, const char*> kShort[] = {
      {"comm: ", ""},          {"forward ", "fwd "},    {"backward ", "bwd "},  {"parameters ", "params "},
      {"parameter ", "param "}, {"gradients ", "grads "}, {"gradient ", "grad "}, {"activations ", "activ. "},
  };
  for (const auto& [from, to] : kShort) label.replace(QString::fromUtf8(from), QString::fromUtf8(to));
  return label;
}

}  // namespace

void build_step_time(QChart* chart, const StepTimeModel& m, const QPalette& pal) {
  clear(chart);
  style(chart, pal);
  const int cols = m.columnCount();
  if (cols == 0) return;
  const int step_row = m.rowOf(Term::step).value_or(-1);
  double longest = 0;
  for (int c = 0; c < cols; ++c) longest = std::max(longest, m.value(step_row, c));
  const bool ms = longest < 1.0;
  const double scale = ms ? 1e3 : 1.0;
  const QString unit = ms ? QStringLiteral("ms") : QStringLiteral("s");

  auto* bars = new QHorizontalStackedBarSeries;
  int comm_index = 0;
  for (int r = 0; r < m.partRows(); ++r) {
    bool any = false;
    for (int c = 0; c < cols; ++c) any = any || m.value(r, c) > 0;
    if (!any)
      continue;  // a part no configuration has (no bubble without PP): keep the legend short
    auto* set = new QBarSet(legend_words(m.headerData(r, Qt::Vertical, Qt::DisplayRole).toString()));
    const QColor color = step_part_color(m.term(r), comm_index);
    set->setColor(color);
    set->setBorderColor(color);
    // Bottom-up categories: the current configuration goes on top.
    for (int c = cols - 1; c >= 0; --c) set->append(m.value(r, c) * scale);
    tooltip_on_hover(set, unit, m.headerData(r, Qt::Vertical, Qt::ToolTipRole).toString());
    bars->append(set);
  }
  bars->setBarWidth(cols == 1 ? 0.4 : 0.6);
  chart->addSeries(bars);
  chart->legend()->setAlignment(Qt::AlignRight);
  const int tokens_row = m.rowOf(Term::tokens_per_s).value_or(-1);
  const int mfu_row = m.rowOf(Term::mfu).value_or(-1);
  QStringList categories;
  for (int c = cols - 1; c >= 0; --c) categories << m.columnTitles()[c];
  chart->setTitle(QStringLiteral("<b>Step time</b> — %1: %2 per step, %3, MFU %4")
                      .arg(m.columnTitles()[0], m.index(step_row, 0).data().toString(),
                           m.index(tokens_row, 0).data().toString(),
                           m.index(mfu_row, 0).data().toString()));
  auto* y = new QBarCategoryAxis;
  y->append(categories);
  add_axis(chart, y, Qt::AlignLeft, pal, {bars});
  auto* x = new QValueAxis;
  x->setTitleText(QStringLiteral("%1 per optimizer step").arg(unit));
  x->setRange(0, longest * scale * 1.05);
  x->applyNiceNumbers();
  add_axis(chart, x, Qt::AlignBottom, pal, {bars});
}

// ---- The sweep ----------------------------------------------------------------------------------

namespace {

// The series of the sweep chart, in the order they are drawn.
struct SweepSeries {
  QLineSeries* memory;
  QLineSeries* capacity;
  QLineSeries* tokens_oom;
  QLineSeries* tokens_fit;
  QScatterSeries* fit_points;  // by verdict (reports::verdict_look)
  QScatterSeries* tight_points;
  QScatterSeries* oom_points;
  QScatterSeries* current;
  QScatterSeries* oom;
};

struct Extent {
  double min_x = 0;
  double max_x = 0;
  double max_gib = 0;
  double max_tokens = 0;
};

SweepSeries sweep_series(const QPalette& pal) {
  SweepSeries ss{};
  ss.memory = line(QStringLiteral("memory"), solid(color_for(0), 2.5));
  ss.fit_points = markers(QStringLiteral("fits"), color_for(0), 8);
  ss.tight_points = markers(verdict_word(planner::Verdict::tight),
                            QColor(QRgb(reports::verdict_look(planner::Verdict::tight).rgb)), 8);
  ss.oom_points = markers(verdict_word(planner::Verdict::no), kCapacity, 9);
  ss.oom_points->setMarkerShape(QScatterSeries::MarkerShapeRectangle);
  ss.tokens_fit = line(QStringLiteral("tokens/s"), solid(color_for(2), 2.5));
  ss.tokens_oom = line(QStringLiteral("tokens/s (would not fit)"), dashed(color_for(2), 1.5));
  ss.capacity = line(QStringLiteral("capacity"), dashed(kCapacity, 2));
  ss.current = ring(QStringLiteral("current"), 16, pal);
  ss.oom = markers(QStringLiteral("first OOM"), kCapacity, 20);
  ss.oom->setMarkerShape(QScatterSeries::MarkerShapeStar);
  ss.oom->setPointLabelsColor(text_color(pal));
  return ss;
}

// Memory and throughput of every point: solid where it fits, dashed on from the last that does.
Extent plot_sweep(const Sweep& s, const SweepSeries& ss) {
  Extent x{0, 0, to_gib(s.usable), 0};
  for (std::size_t i = 0; i < s.points.size(); ++i) {
    const SweepPoint& p = s.points[i];
    const auto px = static_cast<double>(p.x);
    const double gib = to_gib(p.estimate.memory.device_total);
    const double tok = p.estimate.throughput.tokens_per_s;
    x.min_x = i == 0 ? px : std::min(x.min_x, px);
    x.max_x = std::max(x.max_x, px);
    x.max_gib = std::max(x.max_gib, gib);
    x.max_tokens = std::max(x.max_tokens, tok);
    ss.memory->append(px, gib);
    const planner::Verdict v = p.estimate.verdict.verdict;
    (v == planner::Verdict::fits ? ss.fit_points : v == planner::Verdict::tight ? ss.tight_points : ss.oom_points)
        ->append(px, gib);
    if (p.estimate.fits) ss.tokens_fit->append(px, tok);
    // The dashed continuation starts at the last point that fits.
    if (!p.estimate.fits || (i + 1 < s.points.size() && !s.points[i + 1].estimate.fits))
      ss.tokens_oom->append(px, tok);
  }
  return x;
}

// The capacity across the sweep, the current point ringed and the first out-of-memory point starred
// (below the top of the plot, `gib_top`, however far past it memory runs).
void mark_sweep(const Sweep& s, const SweepSeries& ss, const Extent& x, double gib_top) {
  const double usable = to_gib(s.usable);
  ss.capacity->append(x.min_x, usable);
  ss.capacity->append(x.max_x, usable);
  if (s.current) {
    const SweepPoint& p = s.points[*s.current];
    ss.current->append(static_cast<double>(p.x), to_gib(p.estimate.memory.device_total));
  }
  if (s.first_oom) {
    const SweepPoint& p = s.points[*s.first_oom];
    ss.oom->append(static_cast<double>(p.x),
                   std::min(to_gib(p.estimate.memory.device_total), gib_top / 1.08));
    ss.oom->setPointLabelsFormat(
        QStringLiteral("OOM at %1 %2")
            .arg(p.x)
            .arg(s.axis == SweepAxis::micro_batch ? QStringLiteral("sequences") : QStringLiteral("tokens")));
    ss.oom->setPointLabelsVisible(true);
    ss.oom->setPointLabelsClipping(false);
  }
}

QString sweep_title(const Sweep& s) {
  const bool by_mb = s.axis == SweepAxis::micro_batch;
  QString title = by_mb ? QStringLiteral("<b>Micro-batch sweep</b>")
                        : QStringLiteral("<b>Sequence-length sweep</b>");
  if (s.first_oom)
    title += QStringLiteral(" — does not fit from %1 %2")
                 .arg(s.points[*s.first_oom].x)
                 .arg(by_mb ? QStringLiteral("sequences per GPU") : QStringLiteral("tokens"));
  else
    title += QStringLiteral(" — every point fits");
  return title;
}

// What a point of the sweep says, for its tooltip.
QString sweep_point_text(const SweepModel& m, QPointF point) {
  const bool by_mb = m.sweep().axis == SweepAxis::micro_batch;
  for (const SweepPoint& p : m.sweep().points) {
    if (static_cast<double>(p.x) != point.x()) continue;
    return QStringLiteral("<b>%1 %2</b>: %3 per GPU (%4) · %5 · step %6")
        .arg(by_mb ? QStringLiteral("micro-batch") : QStringLiteral("sequence length"))
        .arg(p.x)
        .arg(gib_text(p.estimate.memory.device_total),
             verdict_word(p.estimate.verdict.verdict),
             rate_text(p.estimate.throughput.tokens_per_s, QStringLiteral("tokens/s")),
             seconds_text(p.estimate.time.step));
  }
  return {};
}

// A log-scale x axis, memory on the left and tokens/s (in thousands when large) on the right.
void add_sweep_axes(QChart* chart, const Sweep& s, const SweepSeries& ss, const Extent& e, double gib_top,
                    const QPalette& pal) {
  auto* x = new QLogValueAxis;
  x->setBase(2);
  x->setLabelFormat(QStringLiteral("%.0f"));
  x->setTitleText(s.axis == SweepAxis::micro_batch
                      ? QStringLiteral("micro-batch (sequences per GPU, log scale)")
                      : QStringLiteral("sequence length (tokens, log scale)"));
  x->setRange(e.min_x / 1.25, e.max_x * 1.25);
  add_axis(chart, x, Qt::AlignBottom, pal,
           {ss.memory, ss.capacity, ss.tokens_oom, ss.tokens_fit, ss.fit_points, ss.tight_points, ss.oom_points, ss.current,
            ss.oom});
  auto* y = new QValueAxis;
  y->setTitleText(QStringLiteral("GiB per GPU"));
  y->setRange(0, gib_top);
  y->applyNiceNumbers();
  y->setLabelFormat(QStringLiteral("%.0f"));
  add_axis(chart, y, Qt::AlignLeft, pal,
           {ss.memory, ss.capacity, ss.fit_points, ss.tight_points, ss.oom_points, ss.current, ss.oom});
  auto* y2 = new QValueAxis;
  const bool kilo = e.max_tokens >= 1e4;
  y2->setTitleText(kilo ? QStringLiteral("k tokens/s") : QStringLiteral("tokens/s"));
  if (kilo) {
    for (QLineSeries* l : {ss.tokens_fit, ss.tokens_oom}) {
      QList<QPointF> pts = l->points();
      for (QPointF& p : pts) p.setY(p.y() / 1e3);
      l->replace(pts);
    }
  }
  y2->setRange(0, (kilo ? e.max_tokens / 1e3 : e.max_tokens) * 1.1);
  y2->applyNiceNumbers();
  y2->setLabelFormat(QStringLiteral("%.0f"));
  add_axis(chart, y2, Qt::AlignRight, pal, {ss.tokens_fit, ss.tokens_oom});
  y2->setLabelsColor(color_for(2).darker(is_dark(pal) ? 80 : 120));
}

}  // namespace

void build_sweep(QChart* chart, const SweepModel& m, const QPalette& pal) {
  clear(chart);
  style(chart, pal);
  const Sweep& s = m.sweep();
  if (s.points.empty()) return;
  const SweepSeries ss = sweep_series(pal);
  const Extent e = plot_sweep(s, ss);
  // Memory can run far past the capacity; keep the capacity in the upper part of the plot.
  const double gib_top = std::min(e.max_gib, to_gib(s.usable) * 2.5) * 1.08;
  mark_sweep(s, ss, e, gib_top);
  chart->setTitle(sweep_title(s));
  for (QScatterSeries* series : {ss.fit_points, ss.tight_points, ss.oom_points})
    tooltip_on_hover(series, [&m](QPointF point) { return sweep_point_text(m, point); });
  for (QAbstractSeries* sr :
       std::initializer_list<QAbstractSeries*>{ss.memory, ss.capacity, ss.tokens_oom, ss.tokens_fit,
                                               ss.fit_points, ss.tight_points, ss.oom_points, ss.current, ss.oom})
    chart->addSeries(sr);
  for (QAbstractSeries* sr :
       std::initializer_list<QAbstractSeries*>{ss.fit_points, ss.tight_points, ss.oom_points, ss.tokens_oom})
    hide_legend_marker(chart, sr);
  if (!s.current) hide_legend_marker(chart, ss.current);
  if (!s.first_oom) hide_legend_marker(chart, ss.oom);
  add_sweep_axes(chart, s, ss, e, gib_top, pal);
}

// ---- The plan search ----------------------------------------------------------------------------

namespace {

// The series of the plans chart, in the order they are drawn.
struct PlanSeries {
  QLineSeries* capacity;
  QLineSeries* front_line;
  QScatterSeries* others;
  QScatterSeries* front;
  QScatterSeries* here;
};

// Every plan a point (GiB, thousand tokens/s), the Pareto front joined, the loaded plan ringed;
// each series holds the plan row of each of its points.
Extent plot_plans(const std::vector<PlanPoint>& plans, std::optional<int> current, const PlanSeries& ps) {
  QVariantList other_rows;
  QVariantList front_rows;
  std::vector<QPointF> front_points;
  Extent x;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const planner::Estimate& e = plans[i].estimate;
    const QPointF p(to_gib(e.memory.device_total), e.throughput.tokens_per_s / 1e3);
    x.max_gib = std::max(x.max_gib, p.x());
    x.max_tokens = std::max(x.max_tokens, p.y());
    if (plans[i].pareto) {
      ps.front->append(p);
      front_rows << static_cast<int>(i);
      front_points.push_back(p);
    } else {
      ps.others->append(p);
      other_rows << static_cast<int>(i);
    }
    if (current && *current == static_cast<int>(i)) ps.here->append(p);
  }
  std::sort(front_points.begin(), front_points.end(),
            [](QPointF a, QPointF b) { return a.x() < b.x(); });
  for (QPointF p : front_points) ps.front_line->append(p);
  ps.others->setProperty(kPlanRowsProperty, other_rows);
  ps.front->setProperty(kPlanRowsProperty, front_rows);
  return x;
}

// What the plan under a point of `series` is, for its tooltip.
QString plan_point_text(const PlansModel& m, const QScatterSeries* series, QPointF point) {
  const QVariantList rows = series->property(kPlanRowsProperty).toList();
  const QList<QPointF> points = series->points();
  for (qsizetype i = 0; i < points.size() && i < rows.size(); ++i) {
    if (points[i] != point) continue;
    const int row = rows[i].toInt();
    const PlanPoint& p = m.plans()[static_cast<std::size_t>(row)];
    return QStringLiteral("<b>#%1 %2</b><br>%3 per GPU · %4 · MFU %5%6<br><i>Click to load "
                          "this plan.</i>")
        .arg(row + 1)
        .arg(qstr(planner::plan_label(p.estimate.training, p.estimate.layout)).toHtmlEscaped(),
             gib_text(p.estimate.memory.device_total),
             rate_text(p.estimate.throughput.tokens_per_s, QStringLiteral("tokens/s")),
             percent_text(p.estimate.throughput.mfu),
             p.note.empty() ? QString() : QStringLiteral("<br>%1").arg(qstr(p.note).toHtmlEscaped()));
  }
  return {};
}

// Memory per GPU across, throughput up; the capacity a dashed vertical line.
void add_plans_axes(QChart* chart, const PlanSeries& ps, double x_top, double y_low, double y_high,
                    const QPalette& pal) {
  auto* x = new QValueAxis;
  x->setTitleText(QStringLiteral("GiB per GPU (device total)"));
  x->setRange(0, x_top);
  x->applyNiceNumbers();
  x->setLabelFormat(QStringLiteral("%.0f"));
  add_axis(chart, x, Qt::AlignBottom, pal, {ps.capacity, ps.front_line, ps.others, ps.front, ps.here});
  auto* y = new QValueAxis;
  y->setTitleText(QStringLiteral("k tokens/s"));
  y->setRange(y_low, y_high);
  y->applyNiceNumbers();
  add_axis(chart, y, Qt::AlignLeft, pal, {ps.capacity, ps.front_line, ps.others, ps.front, ps.here});
}

}  // namespace

void build_plans(QChart* chart, const PlansModel& m, std::optional<int> current,
                 const QPalette& pal) {
  clear(chart);
  style(chart, pal);
  const std::vector<PlanPoint>& plans = m.plans();
  if (plans.empty()) {
    chart->setTitle(
        QStringLiteral("Run the plan search (Search > Run, Ctrl+R) to see memory against "
                       "throughput of every plan"));
    return;
  }
  const PlanSeries ps{line(QStringLiteral("capacity"), dashed(kCapacity, 2)),
                      line({}, dashed(color_for(0), 1.5)),
                      markers(QStringLiteral("plans"), color_for(5), 8),
                      markers(QStringLiteral("Pareto front"), color_for(0), 12),
                      ring(QStringLiteral("loaded plan"), 20, pal)};
  const Extent e = plot_plans(plans, current, ps);
  for (QScatterSeries* series : {ps.others, ps.front})
    tooltip_on_hover(series, [series, &m](QPointF point) { return plan_point_text(m, series, point); });
  double min_tokens = e.max_tokens;
  for (const PlanPoint& p : plans)
    min_tokens = std::min(min_tokens, p.estimate.throughput.tokens_per_s / 1e3);
  const double usable = to_gib(m.usable());
  const double x_top = std::max(e.max_gib, usable) * 1.05;
  // Throughput differences between plans are often a few per cent: zoom on them.
  const double spread = e.max_tokens - min_tokens;
  const double y_low = std::max(0.0, min_tokens - spread * 0.3 - e.max_tokens * 0.02);
  const double y_high = e.max_tokens + spread * 0.15 + e.max_tokens * 0.02;
  ps.capacity->append(usable, y_low);
  ps.capacity->append(usable, y_high);
  for (QAbstractSeries* s :
       std::initializer_list<QAbstractSeries*>{ps.capacity, ps.front_line, ps.others, ps.front, ps.here})
    chart->addSeries(s);
  hide_legend_marker(chart, ps.front_line);
  if (ps.here->count() == 0) hide_legend_marker(chart, ps.here);
  if (usable <= 0) hide_legend_marker(chart, ps.capacity);
  chart->setTitle(m.staleBecause().isEmpty()
                      ? QStringLiteral("<b>Plan search</b> — %1 plans that fit").arg(plans.size())
                      : QStringLiteral("<b>Plan search</b> — stale: found for an earlier request; run it again "
                                       "(Ctrl+R)"));
  add_plans_axes(chart, ps, x_top, y_low, y_high, pal);
}

bool save_png(QWidget* view, const QString& path) { return view->grab().save(path, "PNG"); }

bool save_svg(QWidget* view, const QString& path, const QString& title) {
  QSvgGenerator svg;
  svg.setFileName(path);
  svg.setSize(view->size());
  svg.setViewBox(view->rect());
  svg.setTitle(title);
  svg.setDescription(QStringLiteral("trainplan-gui chart"));
  QPainter painter;
  if (!painter.begin(&svg)) return false;
  view->render(&painter);
  painter.end();
  return QFile::exists(path);
}

}  // namespace trainplan::gui::charts
