// sweep_launch.h — starting `qklab-cli sweep` from the app as a detached process, so that a
// sweep keeps running when the app closes (the CLI owns the sweep in the store; the app only
// reads it). Its output goes to a log file next to the sweep's JSON.
#pragma once

#include <QString>
#include <QStringList>

namespace qklab::gui {

// qklab-cli next to the app: <app dir>/../cli/qklab-cli in the build tree, <app dir>/qklab-cli
// when installed side by side, else the one on PATH; empty when none is found.
// QKLAB_CLI overrides (tests).
QString findQklabCli();

// Where the app keeps the sweep files it writes for a database: <db>.sweeps/.
QString sweepFolder(const QString& dbPath);

// A sweep name as a file name: characters other than letters, digits, '.', '-' and '_'
// become '_' (a sweep may be named "lr/3e-4..3e-1").
QString sweepFileStem(const QString& name);

// Starts `qklab-cli ARGS` detached, stdout and stderr to `logPath` (appended). Returns the
// process id, or 0 with *error set.
qint64 startDetachedCli(const QStringList& args, const QString& logPath, QString* error);

// `qklab-cli sweep --resume NAME --db DB`, logging to <db>.sweeps/<name>.log.
qint64 resumeSweep(const QString& dbPath, const QString& name, QString* error);

}  // namespace qklab::gui
