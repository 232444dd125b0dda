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

#include "models.hpp"
#include "trainplan/planner/search.hpp"

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

QPen dashed(const QColor& c, qreal width) {
  QPen p(c);
  p.setWidthF(width);
  p.setStyle(Qt::DashLine);
  return p;
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
  const int headroom_row = m.rowOf(Term::headroom).value_or(-1);
  const double headroom = m.value(headroom_row, 0);
  chart->setTitle(
      QStringLiteral("<b>Memory per GPU</b>: %1 of %2 GiB (%3)")
          .arg(m.value(total_row, 0), 0, 'f', 1)
          .arg(m.value(usable_row, 0), 0, 'f', 1)
          .arg(headroom >= 0 ? QStringLiteral("fits") : QStringLiteral("out of memory")));
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
    auto* line = new QLineSeries;
    line->setName(QStringLiteral("usable capacity"));
    line->setPen(dashed(kCapacity, 2.5));
    const double half = cols == 1 ? 0.3 : 0.4;
    line->append(c - half, usable);
    line->append(c + half, usable);
    chart->addSeries(line);
    line->attachAxis(hx);
    line->attachAxis(y);
    if (c > 0) hide_legend_marker(chart, line);
  }
}

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
    auto* set = new QBarSet(m.headerData(r, Qt::Vertical, Qt::DisplayRole).toString());
    QColor color;
    switch (m.term(r)) {
      case Term::compute:
        color = color_for(0);
        break;
      case Term::memory_bound:
        color = color_for(8);
        break;
      case Term::host_time:
        color = color_for(9);
        break;
      case Term::recompute:
        color = color_for(4);
        break;
      case Term::bubble:
        color = color_for(5);
        break;
      case Term::optimizer_step:
        color = color_for(2);
        break;
      case Term::offload_time:
        color = color_for(3);
        break;
      default: {
        static constexpr int kComm[] = {1, 7, 6};
        color = color_for(kComm[comm_index++ % 3]);
        break;
      }
    }
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

void build_sweep(QChart* chart, const SweepModel& m, const QPalette& pal) {
  clear(chart);
  style(chart, pal);
  const Sweep& s = m.sweep();
  if (s.points.empty()) return;
  const bool by_mb = s.axis == SweepAxis::micro_batch;
  const double usable = to_gib(s.usable);

  auto* memory = new QLineSeries;
  memory->setName(QStringLiteral("memory"));
  QPen mp(color_for(0));
  mp.setWidthF(2.5);
  memory->setPen(mp);
  auto* fit_points = new QScatterSeries;
  fit_points->setName(QStringLiteral("fits"));
  fit_points->setColor(color_for(0));
  fit_points->setBorderColor(color_for(0));
  fit_points->setMarkerSize(8);
  auto* oom_points = new QScatterSeries;
  oom_points->setName(QStringLiteral("out of memory"));
  oom_points->setColor(kCapacity);
  oom_points->setBorderColor(kCapacity);
  oom_points->setMarkerShape(QScatterSeries::MarkerShapeRectangle);
  oom_points->setMarkerSize(9);
  auto* tokens_fit = new QLineSeries;
  tokens_fit->setName(QStringLiteral("tokens/s"));
  QPen tp(color_for(2));
  tp.setWidthF(2.5);
  tokens_fit->setPen(tp);
  auto* tokens_oom = new QLineSeries;
  tokens_oom->setName(QStringLiteral("tokens/s (would not fit)"));
  tokens_oom->setPen(dashed(color_for(2), 1.5));

  double max_gib = usable;
  double max_tokens = 0;
  double min_x = 0;
  double max_x = 0;
  for (std::size_t i = 0; i < s.points.size(); ++i) {
    const SweepPoint& p = s.points[i];
    const auto x = static_cast<double>(p.x);
    const double gib = to_gib(p.estimate.memory.device_total);
    const double tok = p.estimate.throughput.tokens_per_s;
    min_x = i == 0 ? x : std::min(min_x, x);
    max_x = std::max(max_x, x);
    max_gib = std::max(max_gib, gib);
    max_tokens = std::max(max_tokens, tok);
    memory->append(x, gib);
    (p.estimate.fits ? fit_points : oom_points)->append(x, gib);
    if (p.estimate.fits) tokens_fit->append(x, tok);
    // The dashed continuation starts at the last point that fits.
    if (!p.estimate.fits || (i + 1 < s.points.size() && !s.points[i + 1].estimate.fits))
      tokens_oom->append(x, tok);
  }
  // Memory can run far past the capacity; keep the capacity in the upper part of the plot.
  const double gib_top = std::min(max_gib, usable * 2.5) * 1.08;

  auto* capacity = new QLineSeries;
  capacity->setName(QStringLiteral("capacity"));
  capacity->setPen(dashed(kCapacity, 2));
  capacity->append(min_x, usable);
  capacity->append(max_x, usable);

  auto* current = new QScatterSeries;
  current->setName(QStringLiteral("current"));
  current->setMarkerSize(16);
  current->setColor(Qt::transparent);
  current->setBorderColor(text_color(pal));
  QPen cp(text_color(pal));
  cp.setWidthF(2);
  current->setPen(cp);
  if (s.current) {
    const SweepPoint& p = s.points[*s.current];
    current->append(static_cast<double>(p.x), to_gib(p.estimate.memory.device_total));
  }
  auto* oom = new QScatterSeries;
  oom->setName(QStringLiteral("first OOM"));
  oom->setMarkerShape(QScatterSeries::MarkerShapeStar);
  oom->setMarkerSize(20);
  oom->setColor(kCapacity);
  oom->setBorderColor(kCapacity);
  oom->setPointLabelsColor(text_color(pal));
  if (s.first_oom) {
    const SweepPoint& p = s.points[*s.first_oom];
    oom->append(static_cast<double>(p.x),
                std::min(to_gib(p.estimate.memory.device_total), gib_top / 1.08));
    oom->setPointLabelsFormat(
        QStringLiteral("OOM at %1 %2")
            .arg(p.x)
            .arg(by_mb ? QStringLiteral("sequences") : QStringLiteral("tokens")));
    oom->setPointLabelsVisible(true);
    oom->setPointLabelsClipping(false);
  }

  QString title = by_mb ? QStringLiteral("<b>Micro-batch sweep</b>")
                        : QStringLiteral("<b>Sequence-length sweep</b>");
  if (s.first_oom)
    title += QStringLiteral(" — out of memory from %1 %2")
                 .arg(s.points[*s.first_oom].x)
                 .arg(by_mb ? QStringLiteral("sequences per GPU") : QStringLiteral("tokens"));
  else
    title += QStringLiteral(" — every point fits");
  chart->setTitle(title);
  for (QScatterSeries* series : {fit_points, oom_points}) {
    QObject::connect(
        series, &QScatterSeries::hovered, series, [&m, by_mb](const QPointF& point, bool on) {
          if (!on) {
            QToolTip::hideText();
            return;
          }
          for (const SweepPoint& p : m.sweep().points) {
            if (static_cast<double>(p.x) != point.x()) continue;
            QToolTip::showText(
                QCursor::pos(),
                QStringLiteral("<b>%1 %2</b>: %3 per GPU (%4) · %5 · step %6")
                    .arg(by_mb ? QStringLiteral("micro-batch") : QStringLiteral("sequence length"))
                    .arg(p.x)
                    .arg(gib_text(p.estimate.memory.device_total),
                         p.estimate.fits ? QStringLiteral("fits") : QStringLiteral("out of memory"),
                         rate_text(p.estimate.throughput.tokens_per_s, QStringLiteral("tokens/s")),
                         seconds_text(p.estimate.time.step)));
            return;
          }
        });
  }
  for (QAbstractSeries* sr : std::initializer_list<QAbstractSeries*>{
           memory, capacity, tokens_oom, tokens_fit, fit_points, oom_points, current, oom})
    chart->addSeries(sr);
  for (QAbstractSeries* sr :
       std::initializer_list<QAbstractSeries*>{fit_points, oom_points, tokens_oom})
    hide_legend_marker(chart, sr);
  if (!s.current) hide_legend_marker(chart, current);
  if (!s.first_oom) hide_legend_marker(chart, oom);

  auto* x = new QLogValueAxis;
  x->setBase(2);
  x->setLabelFormat(QStringLiteral("%.0f"));
  x->setTitleText(by_mb ? QStringLiteral("micro-batch (sequences per GPU, log scale)")
                        : QStringLiteral("sequence length (tokens, log scale)"));
  x->setRange(min_x / 1.25, max_x * 1.25);
  add_axis(chart, x, Qt::AlignBottom, pal,
           {memory, capacity, tokens_oom, tokens_fit, fit_points, oom_points, current, oom});
  auto* y = new QValueAxis;
  y->setTitleText(QStringLiteral("GiB per GPU"));
  y->setRange(0, gib_top);
  y->applyNiceNumbers();
  y->setLabelFormat(QStringLiteral("%.0f"));
  add_axis(chart, y, Qt::AlignLeft, pal, {memory, capacity, fit_points, oom_points, current, oom});
  auto* y2 = new QValueAxis;
  const bool kilo = max_tokens >= 1e4;
  y2->setTitleText(kilo ? QStringLiteral("thousand tokens/s") : QStringLiteral("tokens/s"));
  if (kilo) {
    for (QLineSeries* l : {tokens_fit, tokens_oom}) {
      QList<QPointF> pts = l->points();
      for (QPointF& p : pts) p.setY(p.y() / 1e3);
      l->replace(pts);
    }
  }
  y2->setRange(0, (kilo ? max_tokens / 1e3 : max_tokens) * 1.1);
  y2->applyNiceNumbers();
  y2->setLabelFormat(QStringLiteral("%.0f"));
  add_axis(chart, y2, Qt::AlignRight, pal, {tokens_fit, tokens_oom});
  y2->setLabelsColor(color_for(2).darker(is_dark(pal) ? 80 : 120));
}

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
  auto* others = new QScatterSeries;
  others->setName(QStringLiteral("plans"));
  others->setColor(color_for(5));
  others->setBorderColor(color_for(5));
  others->setMarkerSize(8);
  auto* front = new QScatterSeries;
  front->setName(QStringLiteral("Pareto front"));
  front->setColor(color_for(0));
  front->setBorderColor(color_for(0));
  front->setMarkerSize(12);
  auto* front_line = new QLineSeries;
  front_line->setPen(dashed(color_for(0), 1.5));
  auto* here = new QScatterSeries;
  here->setName(QStringLiteral("loaded plan"));
  here->setMarkerSize(20);
  here->setColor(Qt::transparent);
  QPen hp(text_color(pal));
  hp.setWidthF(2);
  here->setPen(hp);

  QVariantList other_rows;
  QVariantList front_rows;
  std::vector<QPointF> front_points;
  double max_gib = 0;
  double max_tokens = 0;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const planner::Estimate& e = plans[i].estimate;
    const QPointF p(to_gib(e.memory.device_total), e.throughput.tokens_per_s / 1e3);
    max_gib = std::max(max_gib, p.x());
    max_tokens = std::max(max_tokens, p.y());
    if (plans[i].pareto) {
      front->append(p);
      front_rows << static_cast<int>(i);
      front_points.push_back(p);
    } else {
      others->append(p);
      other_rows << static_cast<int>(i);
    }
    if (current && *current == static_cast<int>(i)) here->append(p);
  }
  std::sort(front_points.begin(), front_points.end(),
            [](QPointF a, QPointF b) { return a.x() < b.x(); });
  for (QPointF p : front_points) front_line->append(p);
  others->setProperty(kPlanRowsProperty, other_rows);
  front->setProperty(kPlanRowsProperty, front_rows);
  for (QScatterSeries* series : {others, front}) {
    QObject::connect(
        series, &QScatterSeries::hovered, series, [series, &m](const QPointF& point, bool on) {
          if (!on) {
            QToolTip::hideText();
            return;
          }
          const QVariantList rows = series->property(kPlanRowsProperty).toList();
          const QList<QPointF> points = series->points();
          for (qsizetype i = 0; i < points.size() && i < rows.size(); ++i) {
            if (points[i] != point) continue;
            const int row = rows[i].toInt();
            const PlanPoint& p = m.plans()[static_cast<std::size_t>(row)];
            QToolTip::showText(
                QCursor::pos(),
                QStringLiteral("<b>#%1 %2</b><br>%3 per GPU · %4 · MFU %5%6<br><i>Click to load "
                               "this plan.</i>")
                    .arg(row + 1)
                    .arg(qstr(planner::plan_label(p.estimate.training, p.estimate.layout))
                             .toHtmlEscaped(),
                         gib_text(p.estimate.memory.device_total),
                         rate_text(p.estimate.throughput.tokens_per_s, QStringLiteral("tokens/s")),
                         percent_text(p.estimate.throughput.mfu),
                         p.note.empty()
                             ? QString()
                             : QStringLiteral("<br>%1").arg(qstr(p.note).toHtmlEscaped())));
            return;
          }
        });
  }
  double min_tokens = max_tokens;
  for (const PlanPoint& p : plans)
    min_tokens = std::min(min_tokens, p.estimate.throughput.tokens_per_s / 1e3);
  const double usable = to_gib(m.usable());
  const double x_top = std::max(max_gib, usable) * 1.05;
  // Throughput differences between plans are often a few per cent: zoom on them.
  const double y_low =
      std::max(0.0, min_tokens - (max_tokens - min_tokens) * 0.3 - max_tokens * 0.02);
  const double y_high = max_tokens + (max_tokens - min_tokens) * 0.15 + max_tokens * 0.02;
  auto* capacity = new QLineSeries;
  capacity->setName(QStringLiteral("capacity"));
  capacity->setPen(dashed(kCapacity, 2));
  capacity->append(usable, y_low);
  capacity->append(usable, y_high);
  for (QAbstractSeries* s :
       std::initializer_list<QAbstractSeries*>{capacity, front_line, others, front, here})
    chart->addSeries(s);
  hide_legend_marker(chart, front_line);
  if (here->count() == 0) hide_legend_marker(chart, here);
  if (usable <= 0) hide_legend_marker(chart, capacity);
  chart->setTitle(QStringLiteral("<b>Plan search</b> — %1 plans that fit; click one to load it")
                      .arg(plans.size()));
  auto* x = new QValueAxis;
  x->setTitleText(QStringLiteral("GiB per GPU (device total)"));
  x->setRange(0, x_top);
  x->applyNiceNumbers();
  x->setLabelFormat(QStringLiteral("%.0f"));
  add_axis(chart, x, Qt::AlignBottom, pal, {capacity, front_line, others, front, here});
  auto* y = new QValueAxis;
  y->setTitleText(QStringLiteral("thousand tokens/s"));
  y->setRange(y_low, y_high);
  y->applyNiceNumbers();
  add_axis(chart, y, Qt::AlignLeft, pal, {capacity, front_line, others, front, here});
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
