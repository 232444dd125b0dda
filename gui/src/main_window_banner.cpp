// The banner above the charts: the verdict on the current configuration in one sentence, its speed
// and what the library noted, coloured by the verdict.
#include <QFrame>
#include <QLabel>
#include <QTextDocument>
#include <QVBoxLayout>

#include "charts.hpp"
#include "display.hpp"
#include "main_window.hpp"

namespace trainplan::gui {
namespace {

QString plain(const QString& rich) {
  QTextDocument d;
  d.setHtml(rich);
  return d.toPlainText();
}

// Why a configuration does not fit is followed by what would: a smaller micro-batch, or the
// strategy fit recommends.
QString does_not_fit_hint(const planner::Estimate& est, const planner::FitResult& strategies) {
  if (est.max_micro_batch > 0) return QStringLiteral(" Micro-batch %1 would fit.").arg(est.max_micro_batch);
  if (!strategies.recommended) return {};
  return QStringLiteral(" %1 would fit: press Recommend (Ctrl+M) or see the Strategies table.")
      .arg(strategy_label(strategies.candidates[*strategies.recommended].training.strategy));
}

// The verdict in one sentence: fits, tight or does not fit, by how much, and what would.
QString headline(const Evaluation& e, const planner::FitResult& strategies, MainWindow::Verdict& verdict) {
  const planner::Estimate& est = e.estimate;
  const QString what = QStringLiteral("%1 (%2 parameters, %3)")
                           .arg(qstr(e.arch.name).toHtmlEscaped(), count_text(e.params.total),
                                qstr(to_string(est.training.method)));
  const QString where = e.cluster_text().toHtmlEscaped();
  const Bytes headroom = e.usable() - est.memory.device_total;
  if (est.fits && est.verdict.verdict == planner::Verdict::tight) {
    // The peak fits but the allocator's cache may not (planner::judge): it says why.
    verdict = MainWindow::Verdict::fits;
    return QStringLiteral("<b>Tight</b> — %1 on %2 with %3: %4.%5")
        .arg(what, where, e.plan_text().toHtmlEscaped(), qstr(est.verdict.reason).toHtmlEscaped(),
             est.max_micro_batch > 0
                 ? QStringLiteral(" Micro-batch %1 fits with room.").arg(est.max_micro_batch)
                 : QString());
  }
  if (est.fits) {
    verdict = MainWindow::Verdict::fits;
    return QStringLiteral(
               "<b>Fits</b> — %1 on %2 with %3: <b>%4</b> of %5 usable per GPU, <b>%6 headroom</b>; "
               "largest micro-batch %7.")
        .arg(what, where, e.plan_text().toHtmlEscaped(), gib_text(est.memory.device_total),
             gib_text(e.usable()), gib_text(headroom))
        .arg(est.max_micro_batch);
  }
  verdict = MainWindow::Verdict::does_not_fit;
  const QString hint = does_not_fit_hint(est, strategies);
  if (headroom.value() >= 0.0)  // the GPUs have room: the nodes' CPU memory does not
    return QStringLiteral(
               "<b>Does not fit</b> — %1 on %2 with %3 fits the GPUs but needs <b>%4</b> of "
               "CPU memory per node of %5 for what it offloads.%6")
        .arg(what, where, e.plan_text().toHtmlEscaped(), gib_text(est.memory.host),
             gib_text(e.cluster.host_memory), hint);
  return QStringLiteral(
             "<b>Does not fit</b> — %1 on %2 with %3 needs <b>%4</b> per GPU of %5 usable "
             "(<b>%6 over</b>).%7")
      .arg(what, where, e.plan_text().toHtmlEscaped(), gib_text(est.memory.device_total),
           gib_text(e.usable()), gib_text(-headroom), hint);
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
    verdict_label_->setText(headline(*cur, session_.strategies(), verdict_));
    details_label_->setText(details(*cur));
  } else {
    verdict_ = Verdict::invalid;
    verdict_label_->setText(
        QStringLiteral("<b>Cannot evaluate</b> — %1").arg(session_.error().toHtmlEscaped()));
    details_label_->setText(QStringLiteral(
        "Change the option it names; hover any option for what it means and its valid values."));
  }
  verdict_label_->setProperty("verdict", verdict_ == Verdict::fits ? QStringLiteral("fits")
                                         : verdict_ == Verdict::does_not_fit
                                             ? QStringLiteral("does-not-fit")
                                             : QStringLiteral("invalid"));
  restyle();
}

void MainWindow::restyle() {
  const bool dark = charts::is_dark(palette());
  QString bg;
  QString border;
  switch (verdict_) {
    case Verdict::fits:
      bg = dark ? QStringLiteral("#1f3a27") : QStringLiteral("#e3f4e8");
      border = dark ? QStringLiteral("#4caf50") : QStringLiteral("#2e7d32");
      break;
    case Verdict::does_not_fit:
      bg = dark ? QStringLiteral("#4a1f1f") : QStringLiteral("#fdecea");
      border = dark ? QStringLiteral("#ef5350") : QStringLiteral("#c62828");
      break;
    case Verdict::invalid:
      bg = dark ? QStringLiteral("#4a3418") : QStringLiteral("#fff4e5");
      border = dark ? QStringLiteral("#ffa726") : QStringLiteral("#ef6c00");
      break;
  }
  banner_->setStyleSheet(
      QStringLiteral(
          "QFrame#banner { background: %1; border: 1px solid %2; border-left: 6px solid %2; "
          "border-radius: 3px; } QFrame#banner QLabel { background: transparent; "
          "border: none; color: %3; }")
          .arg(bg, border, palette().color(QPalette::WindowText).name()));
}

QString MainWindow::verdictText() const { return plain(verdict_label_->text()); }

}  // namespace trainplan::gui
