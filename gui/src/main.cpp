// trainplan-gui: the Qt6 explorer. Copyright the trainplan authors; GPL-3.0-or-later (gui/LICENSE).
#include <QApplication>
#include <QCoreApplication>
#include <QEventLoop>
#include <QPalette>
#include <QSettings>
#include <cstdio>
#include <optional>

#include "main_window.hpp"
#include "session.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/request/catalog.hpp"

namespace {

void name_the_application() {
  QCoreApplication::setOrganizationName(QStringLiteral("trainplan"));
  QCoreApplication::setApplicationName(QStringLiteral("trainplan-gui"));
  QCoreApplication::setApplicationVersion(QStringLiteral(TRAINPLAN_VERSION));
}

// A dark Fusion palette instead of the system's (--dark: screenshots of dark mode).
void use_dark_palette() {
  QApplication::setStyle(QStringLiteral("Fusion"));
  QPalette p;
  const QColor window(0x2b, 0x2b, 0x30), base(0x1e, 0x1e, 0x22), text(0xe8, 0xe8, 0xe8);
  p.setColor(QPalette::Window, window);
  p.setColor(QPalette::WindowText, text);
  p.setColor(QPalette::Base, base);
  p.setColor(QPalette::AlternateBase, window);
  p.setColor(QPalette::Text, text);
  p.setColor(QPalette::Button, window);
  p.setColor(QPalette::ButtonText, text);
  p.setColor(QPalette::ToolTipBase, base);
  p.setColor(QPalette::ToolTipText, text);
  p.setColor(QPalette::Highlight, QColor(0x3d, 0x7e, 0xc6));
  p.setColor(QPalette::HighlightedText, Qt::white);
  p.setColor(QPalette::PlaceholderText, QColor(0x90, 0x90, 0x90));
  p.setColor(QPalette::Disabled, QPalette::Text, QColor(0x80, 0x80, 0x80));
  p.setColor(QPalette::Disabled, QPalette::WindowText, QColor(0x80, 0x80, 0x80));
  p.setColor(QPalette::Disabled, QPalette::ButtonText, QColor(0x80, 0x80, 0x80));
  QApplication::setPalette(p);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace trainplan;
  gui::CommandLine cl;
  std::optional<request::Catalog> catalog;
  try {
    // The command line is read before any window: --help and a bad option answer without a display.
    const QCoreApplication probe(argc, argv);
    name_the_application();
    catalog = request::Catalog::builtin();
    cl = gui::parse_command_line(QCoreApplication::arguments(), *catalog);
    if (cl.help) {
      std::fputs(cl.help_text.toLocal8Bit().constData(), stdout);
      return 0;
    }
  } catch (const InputError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  QApplication app(argc, argv);
  name_the_application();
  try {
    if (cl.dark) use_dark_palette();
    // Options on the command line start from the defaults; a bare start resumes the last session.
    const bool from_command_line = QApplication::arguments().size() > 1;
    const bool screenshot = !cl.screenshot.isEmpty();
    gui::Session session(*catalog);
    gui::Settings s = from_command_line ? cl.settings : gui::restore_settings(QSettings());
    if (from_command_line) {
      try {
        s = session.completed(s);
      } catch (const InputError&) {
        // The window shows what is wrong with these settings.
      }
    }
    gui::MainWindow window(session, gui::MainWindow::Options{!screenshot});
    window.applySettings(s);
    if (!cl.tab.isEmpty() && !window.showTableTab(cl.tab))
      throw InputError(
          "--tab: unknown tab '" + cl.tab.toStdString() +
          "' (expected memory, time, communication, strategies, sweep, plans or compare)");
    if (!cl.chart.isEmpty() && !window.showChartTab(cl.chart))
      throw InputError("--chart: unknown chart '" + cl.chart.toStdString() +
                       "' (expected time, sweep or plans)");
    if (cl.search) {
      QEventLoop wait;
      QObject::connect(&session, &gui::Session::searchFinished, &wait, &QEventLoop::quit);
      session.startSearch();
      if (session.searching()) wait.exec();
    }
    if (screenshot) {
      if (!window.saveScreenshot(cl.screenshot, cl.size)) {
        std::fprintf(stderr, "error: cannot write the screenshot '%s'\n",
                     cl.screenshot.toLocal8Bit().constData());
        return 1;
      }
      std::fprintf(stderr, "%s\n", window.verdictText().toLocal8Bit().constData());
      return 0;
    }
    window.show();
    return QApplication::exec();
  } catch (const InputError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "internal error: %s\n", e.what());
    return 3;
  }
}
