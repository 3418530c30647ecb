// main.cpp — qklab desktop app entry point: options, the main window, the scripted driver.
//
// The app never dies with a run: training errors are caught in the worker and shown as
// dialogs; here only setup errors (bad database, bad preset, bad --set) end the process, and
// only when asked to do so by the command line.
#include <QApplication>

#include "automation.h"
#include "gui_types.h"
#include "main_window.h"

int main(int argc, char** argv)
{
    QApplication app(argc, argv);
    QCoreApplication::setOrganizationName(QStringLiteral("qklab"));
    QCoreApplication::setApplicationName(QStringLiteral("qklab"));
    QCoreApplication::setApplicationVersion(QStringLiteral("0.1"));
    qklab::gui::registerGuiMetaTypes();

    qklab::gui::LaunchOptions options;
    int exitCode = 0;
    if (!qklab::gui::parseLaunchOptions(app.arguments(), &options, &exitCode)) return exitCode;

    qklab::gui::MainWindow window;
    qklab::gui::AutomationDriver driver(&window, options);
    window.show();
    if (!driver.begin()) {
        // Interactive users keep the window (the error was shown); scripts get an exit code.
        if (options.quiet) return driver.exitCode();
    }
    const int rc = app.exec();
    return rc != 0 ? rc : driver.exitCode();
}
