// file_dialogs.cpp — see file_dialogs.h: a QFileDialog whose icon provider works from names.
#include "common/file_dialogs.h"

#include <QFileDialog>
#include <QFileIconProvider>
#include <QFileInfo>

namespace qklab::gui {
namespace {

// Icons and type names from the file name alone: Qt's default provider asks QMimeDatabase,
// which reads a file's first bytes whenever its name does not settle the type.
class NameOnlyIconProvider : public QFileIconProvider {
  public:
    QIcon icon(const QFileInfo& info) const override {
        return QFileIconProvider::icon(info.isDir() ? Folder : File);
    }
    QString type(const QFileInfo& info) const override {
        if (info.isDir()) return QStringLiteral("Folder");
        const QString suffix = info.suffix();
        return suffix.isEmpty() ? QStringLiteral("File")
                                : QStringLiteral("%1 file").arg(suffix.toUpper());
    }
    using QFileIconProvider::icon;
};

NameOnlyIconProvider* nameOnlyProvider() {
    static NameOnlyIconProvider provider;  // outlives every dialog
    return &provider;
}

QString runDialog(QWidget* parent, const QString& caption, const QString& start,
                  const QString& filter, QFileDialog::AcceptMode mode) {
    // No start path in the constructor: it already looks up the initial selection, through
    // the default (sniffing) provider, before setIconProvider could replace it.
    QFileDialog dialog(parent, caption, QString(), filter);
    dialog.setOption(QFileDialog::DontUseNativeDialog);
    dialog.setIconProvider(nameOnlyProvider());
    dialog.setAcceptMode(mode);
    dialog.setFileMode(mode == QFileDialog::AcceptOpen ? QFileDialog::ExistingFile
                                                       : QFileDialog::AnyFile);
    const QFileInfo info(start);
    if (!start.isEmpty() && info.isDir()) {
        dialog.setDirectory(info.absoluteFilePath());
    } else if (!start.isEmpty()) {
        if (info.absoluteDir().exists()) dialog.setDirectory(info.absolutePath());
        dialog.selectFile(info.fileName());
    }
    if (dialog.exec() != QDialog::Accepted || dialog.selectedFiles().isEmpty()) return {};
    return dialog.selectedFiles().constFirst();
}

}  // namespace

QString chooseFileToOpen(QWidget* parent, const QString& caption, const QString& directory,
                         const QString& filter) {
    return runDialog(parent, caption, directory, filter, QFileDialog::AcceptOpen);
}

QString chooseFileToSave(QWidget* parent, const QString& caption, const QString& suggested,
                         const QString& filter) {
    return runDialog(parent, caption, suggested, filter, QFileDialog::AcceptSave);
}

}  // namespace qklab::gui
