// file_dialogs.h — every file dialog of the app, built so that it never opens a file it lists.
//
// SQLite's locks are POSIX advisory locks, which belong to the process: closing ANY descriptor
// of a file drops every lock the process holds on it. Qt's file dialog sniffed the content of
// the files it listed (their MIME type, for the icon and the "Type" column), so merely showing
// the database's folder opened and closed runs.db, runs.db-wal and runs.db-shm, and released
// the locks of the app's open connections. The next qklab process to close that database
// then deleted the WAL the app was still writing to: the app trained on, "finished", and its
// rows never reached the file (and several writers corrupted it). These dialogs name files by
// their name only, and never use the platform's native dialog, which runs in this process
// too (GTK's sniffs the same way).
#pragma once

#include <QString>

class QWidget;

namespace qklab::gui {

// An existing file to open; empty when cancelled.
QString chooseFileToOpen(QWidget* parent, const QString& caption, const QString& directory,
                         const QString& filter);
// A file to write (the dialog asks before replacing one); empty when cancelled.
QString chooseFileToSave(QWidget* parent, const QString& caption, const QString& suggested,
                         const QString& filter);

}  // namespace qklab::gui
