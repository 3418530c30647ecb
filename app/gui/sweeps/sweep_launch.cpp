// sweep_launch.cpp — finding qklab-cli and starting it detached.
#include "sweeps/sweep_launch.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QProcess>
#include <QStandardPaths>

namespace qklab::gui {

QString findQklabCli() {
    const QString fromEnv = qEnvironmentVariable("QKLAB_CLI");
    if (!fromEnv.isEmpty() && QFileInfo(fromEnv).isExecutable()) return fromEnv;
    const QDir appDir(QCoreApplication::applicationDirPath());
    for (const QString& relative : {QStringLiteral("../cli/qklab-cli"), QStringLiteral("qklab-cli"),
                                    QStringLiteral("../app/cli/qklab-cli")}) {
        const QFileInfo candidate(appDir.filePath(relative));
        if (candidate.isFile() && candidate.isExecutable()) return candidate.canonicalFilePath();
    }
    return QStandardPaths::findExecutable(QStringLiteral("qklab-cli"));
}

QString sweepFolder(const QString& dbPath) {
    return QFileInfo(dbPath).absoluteFilePath() + QStringLiteral(".sweeps");
}

QString sweepFileStem(const QString& name) {
    QString stem;
    for (const QChar ch : name)
        stem += (ch.isLetterOrNumber() && ch.unicode() < 128) || ch == QLatin1Char('.') ||
                        ch == QLatin1Char('-') || ch == QLatin1Char('_')
                    ? ch
                    : QLatin1Char('_');
    if (stem.startsWith(QLatin1Char('.'))) stem.prepend(QLatin1Char('_'));
    return stem.left(120);
}

qint64 startDetachedCli(const QStringList& args, const QString& logPath, QString* error) {
    const QString cli = findQklabCli();
    if (cli.isEmpty()) {
        if (error)
            *error = QCoreApplication::translate(
                "qklab", "qklab-cli was not found next to the app nor on PATH.");
        return 0;
    }
    QDir().mkpath(QFileInfo(logPath).absolutePath());
    QProcess process;
    process.setProgram(cli);
    process.setArguments(args);
    process.setStandardInputFile(QProcess::nullDevice());
    process.setStandardOutputFile(logPath, QIODevice::Append);
    process.setStandardErrorFile(logPath, QIODevice::Append);
    qint64 pid = 0;
    if (!process.startDetached(&pid) || pid <= 0) {
        if (error)
            *error = QCoreApplication::translate("qklab", "Could not start %1: %2")
                         .arg(cli, process.errorString());
        return 0;
    }
    return pid;
}

qint64 resumeSweep(const QString& dbPath, const QString& name, QString* error) {
    const QString log =
        QDir(sweepFolder(dbPath)).filePath(sweepFileStem(name) + QStringLiteral(".log"));
    return startDetachedCli(
        {QStringLiteral("sweep"), QStringLiteral("--resume"), name, QStringLiteral("--db"), dbPath},
        log, error);
}

}  // namespace qklab::gui
