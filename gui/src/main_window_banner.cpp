// The banner above the charts: the verdict on the current configuration in one sentence, its speed
// and what the library noted, coloured by the verdict.
#include <QFrame>
#include <QLabel>
#include <QTextDocument>
#include <QVBoxLayout>

#include "charts.hpp"
#include "display.hpp"
#include "main_window.hpp"
#include "trainplan/reports/text.hpp"
#include "trainplan/reports/verdict.hpp"

namespace trainplan::gui {
namespace {

QString plain(const QString& rich) {
  QTextDocument d;
  d.setHtml(rich);
  return d.toPlainText();
}

// What would fit when the configuration does not: the fastest single change `trainplan explain`
// finds (a pair when no single change fits), in the window's words.
QString change_hint(const planner::Estimate& est, const std::optional<planner::Explanation>& x) {
  if (est.fits || !x || x->suggestions.empty()) return {};
  const planner::Suggestion& s = x->suggestions.front();
  QStringList parts;
  for (const planner::OptionChange& c : s.changes)
    if (!c.to.empty())
      parts << QStringLiteral("%1 %2").arg(qstr(field_label(c.option)), qstr(c.to));
  return QStringLiteral(" It fits with %1 (%2 of the tokens/s; trainplan explain lists every change).")
      .arg(parts.join(QStringLiteral(" and ")), percent_text(s.throughput_kept));
}

// When the plan search, run on this very request, found a plan well ahead of the settings shown.
QString plan_hint(const planner::Estimate& est, const Session& session) {
  if (session.plans().empty() || !session.plansStaleBecause().isEmpty()) return {};
  const planner::Estimate& best = session.plans().front().estimate;
  const QString label = qstr(planner::plan_label(best.training, best.layout)).toHtmlEscaped();
  if (!est.fits) return QStringLiteral(" The plan search found plans that fit, the fastest %1 (Plans tab).").arg(label);
  const double ratio = est.throughput.tokens_per_s > 0 ? best.throughput.tokens_per_s / est.throughput.tokens_per_s : 0;
  if (ratio < 1.05) return {};
  return QStringLiteral(" The plan search found %1x the tokens/s with %2, micro-batch %3 (Plans tab).")
      .arg(ratio, 0, 'f', 1)
      .arg(label)
      .arg(best.training.micro_batch);
}

// The verdict in one sentence (reports::verdict_sentence, the CLI's wording): fits, tight or does
// not fit, by how much, and what would.
QString headline(const Evaluation& e, const Session& session, MainWindow::Verdict& verdict) {
  const planner::Estimate& est = e.estimate;
  const reports::VerdictSubject subject{
      reports::model_words(e.arch, e.params, est.training),
      sstr(e.cluster_text()), sstr(e.plan_text())};
  const reports::VerdictSentence s = reports::verdict_sentence(
      subject, {est.verdict, est.memory.device_total, e.usable(), est.training.micro_batch, est.max_micro_batch, 0.0});
  verdict = s.verdict == planner::Verdict::fits    ? MainWindow::Verdict::fits
            : s.verdict == planner::Verdict::tight ? MainWindow::Verdict::tight
                                                   : MainWindow::Verdict::does_not_fit;
  return QStringLiteral("<b>%1</b> — %2.%3%4")
      .arg(qstr(s.headline), qstr(s.rest).toHtmlEscaped(), change_hint(est, session.explanation()).toHtmlEscaped(),
           plan_hint(est, session));
}

// The second line: speed, batch, where memory peaks, communication, time to train, whose hardware
// numbers, and the library's notes.
QString details(const Evaluation& e) {
  const planner::Estimate& est = e.estimate;
  const Bytes sent = est.communication_bytes();
  QString details =
      QStringLiteral(
          "Step %1 · %2 · MFU %3 · global batch %4 sequences · memory peaks in %5 · %6")
          .arg(seconds_text(est.time.step),
               rate_text(est.throughput.tokens_per_s, QStringLiteral("tokens/s")),
               percent_text(est.throughput.mfu))
          .arg(est.global_batch)
          .arg(est.memory.peak_stage.empty()
                   ? qstr(est.memory.peak_phase)
                   : QStringLiteral("%1 (%2 pipeline stage)")
                         .arg(qstr(est.memory.peak_phase), qstr(est.memory.peak_stage)),
               sent.value() > 0 ? QStringLiteral("%1 sent per GPU per step").arg(bytes_text(sent))
                                : QStringLiteral("no communication"));
  if (e.time_to_train)
    details += QStringLiteral(" · %1 tokens in <b>%2</b>")
                   .arg(qstr(e.settings.tokens).toHtmlEscaped(), duration_text(*e.time_to_train));
  details += e.profile_name.empty()
                 ? QStringLiteral(" · datasheet hardware numbers")
                 : QStringLiteral(" · profile %1").arg(qstr(e.profile_name).toHtmlEscaped());
  for (const std::string& n : e.notes)
    details += QStringLiteral("<br><i>Note:</i> %1").arg(qstr(n).toHtmlEscaped());
  return details;
}

}  // namespace

QFrame* MainWindow::buildBanner() {
  banner_ = new QFrame;
  banner_->setObjectName(QStringLiteral("banner"));
  auto* bl = new QVBoxLayout(banner_);
  bl->setContentsMargins(10, 6, 10, 6);
  bl->setSpacing(2);
  verdict_label_ = new QLabel;
  verdict_label_->setObjectName(QStringLiteral("verdict"));
  verdict_label_->setWordWrap(true);
  verdict_label_->setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::TextSelectableByKeyboard);
  verdict_label_->setFocusPolicy(Qt::StrongFocus);
  verdict_label_->setAccessibleName(QStringLiteral("Verdict"));
  details_label_ = new QLabel;
  details_label_->setObjectName(QStringLiteral("details"));
  details_label_->setWordWrap(true);
  details_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  bl->addWidget(verdict_label_);
  bl->addWidget(details_label_);
  return banner_;
}

void MainWindow::refreshBanner() {
  if (const auto& cur = session_.current()) {
    verdict_label_->setText(headline(*cur, session_, verdict_));
    details_label_->setText(details(*cur));
  } else {
    verdict_ = Verdict::invalid;
    verdict_label_->setText(
        QStringLiteral("<b>Cannot evaluate</b> — %1").arg(session_.error().toHtmlEscaped()));
    details_label_->setText(QStringLiteral(
        "Change the option it names; hover any option for what it means and its valid values."));
  }
  verdict_label_->setProperty("verdict", verdict_ == Verdict::fits           ? QStringLiteral("fits")
                                         : verdict_ == Verdict::tight        ? QStringLiteral("tight")
                                         : verdict_ == Verdict::does_not_fit ? QStringLiteral("does-not-fit")
                                                                             : QStringLiteral("invalid"));
  restyle();
}

// The banner in the verdict's colour (reports::verdict_look, the tables' colour too): the border
// itself, the background a tint of it over the window's base; grey when nothing was evaluated.
void MainWindow::restyle() {
  const bool dark = charts::is_dark(palette());
  QColor colour(0x9e, 0x9e, 0x9e);
  if (verdict_ != Verdict::invalid) {
    const planner::Verdict v = verdict_ == Verdict::fits    ? planner::Verdict::fits
                               : verdict_ == Verdict::tight ? planner::Verdict::tight
                                                            : planner::Verdict::no;
    colour = QColor(QRgb(reports::verdict_look(v).rgb));
  }
  const QColor base = palette().color(QPalette::Base);
  const double share = dark ? 0.30 : 0.14;
  const auto mix = [&](int a, int b) { return static_cast<int>(a * share + b * (1.0 - share)); };
  const QString bg = QColor(mix(colour.red(), base.red()), mix(colour.green(), base.green()),
                            mix(colour.blue(), base.blue()))
                         .name();
  const QString border = colour.name();
  banner_->setStyleSheet(
      QStringLiteral(
          "QFrame#banner { background: %1; border: 1px solid %2; border-left: 6px solid %2; "
          "border-radius: 3px; } QFrame#banner QLabel { background: transparent; "
          "border: none; color: %3; }")
          .arg(bg, border, palette().color(QPalette::WindowText).name()));
}

QString MainWindow::verdictText() const { return plain(verdict_label_->text()); }

}  // namespace trainplan::gui
