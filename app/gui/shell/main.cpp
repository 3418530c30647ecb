// main.cpp — qklab desktop app entry point: options, the main window, the scripted driver.
//
// The app never dies with a run: training errors are caught in the worker and shown as
// dialogs; here only setup errors (bad database, bad preset, bad --set) end the process, and
// only when asked to do so by the command line.
#include <QApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QIcon>
#include <QThread>
#include <QTimer>
#include <cstdio>

#include "common/gui_types.h"
#include "common/theme.h"
#include "qklab/engine/environment.h"
#include "qklab/engine/trainer.h"
#include "shell/automation.h"
#include "shell/main_window.h"

namespace {
// With QKLAB_TRACE_EVENTS=MS set, names every GUI-thread event that takes longer than MS
// milliseconds: how the slow spots behind docs/gui-benchmarks.md were found.
class TracingApplication : public QApplication {
  public:
    TracingApplication(int& argc, char** argv) : QApplication(argc, argv) {
        m_thresholdMs = qEnvironmentVariableIntValue("QKLAB_TRACE_EVENTS");
    }
    bool notify(QObject* receiver, QEvent* event) override {
        // Only the GUI thread matters here; the training thread blocks in runOne() by design.
        if (m_thresholdMs <= 0 || QThread::currentThread() != thread())
            return QApplication::notify(receiver, event);
        QElapsedTimer t;
        t.start();
        const int type = int(event->type());
        const bool result = QApplication::notify(receiver, event);
        if (t.elapsed() >= m_thresholdMs)
            std::fprintf(stderr, "slow event: %lld ms, %s \"%s\", event type %d\n",
                         (long long)t.elapsed(), receiver->metaObject()->className(),
                         qPrintable(receiver->objectName()), type);
        return result;
    }

  private:
    int m_thresholdMs = 0;
};
}  // namespace

void nameTheApplication() {
    QCoreApplication::setOrganizationName(QStringLiteral("qklab"));
    QCoreApplication::setApplicationName(QStringLiteral("qklab"));
    QCoreApplication::setApplicationVersion(QString::fromStdString(qklab::appVersion()));
}

int main(int argc, char** argv) {
    // --help, --version and bad options are answered before the GUI application exists: it
    // aborts without a display, and a command-line tool must not need one to print its help.
    {
        QCoreApplication console(argc, argv);
        nameTheApplication();
        qklab::gui::LaunchOptions ignored;
        int exitCode = 0;
        if (!qklab::gui::parseLaunchOptions(console.arguments(), &ignored, &exitCode))
            return exitCode;
    }
    TracingApplication app(argc, argv);
    nameTheApplication();
    QGuiApplication::setDesktopFileName(QStringLiteral("qklab"));  // resources/qklab.desktop
    QApplication::setWindowIcon(QIcon(QStringLiteral(":/qklab/qklab.png")));
    QFile style(QStringLiteral(":/qklab/qklab.qss"));
    if (style.open(QIODevice::ReadOnly))
        qklab::gui::setBaseStyleSheet(QString::fromUtf8(style.readAll()));
    qklab::gui::registerGuiMetaTypes();

    qklab::gui::LaunchOptions options;
    int exitCode = 0;
    if (!qklab::gui::parseLaunchOptions(app.arguments(), &options, &exitCode)) return exitCode;

    qklab::gui::applyTheme(options.theme.isEmpty() ? qklab::gui::savedTheme()
                                                   : (options.theme == QLatin1String("dark")
                                                          ? qklab::gui::Theme::Dark
                                                          : qklab::gui::Theme::Light));
    qklab::gui::MainWindow window;
    qklab::gui::AutomationDriver driver(&window, options);
    window.show();
    // Debian's LibTorch without libopenblas0-openmp trains ~20x slower: say so once, after
    // the window is up (the check is a ~50 ms matmul).
    QTimer::singleShot(0, &window, [&window] {
        const qklab::BlasCheck blas = qklab::checkBlasSpeed();
        if (blas.slow)
            window.showError(QObject::tr("Slow matrix library"),
                             QString::fromStdString(blas.message));
    });
    if (!driver.begin()) {
        // Interactive users keep the window (the error was shown); scripts get an exit code.
        if (options.quiet) return driver.exitCode();
    }
    const int rc = app.exec();
    return rc != 0 ? rc : driver.exitCode();
}
