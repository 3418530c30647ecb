// input_files.cpp — see input_files.h.
#include "common/input_files.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QStandardPaths>

#include "qklab/util/error.h"

namespace qklab::gui {

QString presetDirectory() {
    const QString env = qEnvironmentVariable("QKLAB_EXPERIMENTS_DIR");
    return env.isEmpty() ? QStringLiteral(":/experiments") : env;
}

QString userPresetDirectory() {
    return QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation) +
           QStringLiteral("/qklab/presets");
}

QString presetDialogDirectory() {
    const QStringList candidates = {qEnvironmentVariable("QKLAB_EXPERIMENTS_DIR"),
                                    QStringLiteral(QKLAB_SHIPPED_PRESETS), userPresetDirectory()};
    for (const QString& dir : candidates)
        if (!dir.isEmpty() && !dir.startsWith(QLatin1Char(':')) && QFileInfo(dir).isDir())
            return dir;
    return QDir::homePath();
}

std::string readAppFile(const QString& path, const InputFileKind& kind) {
    if (!path.startsWith(QLatin1Char(':'))) return readInputFile(path.toStdString(), kind);
    // Embedded in the binary: ours, but bounded all the same.
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        throw Error(ErrorCode::MissingFile,
                    std::string(kind.what) + ": cannot read " + path.toStdString());
    if (file.size() > kind.maxBytes)
        throw Error(ErrorCode::InvalidConfig, std::string(kind.what) + ": " + path.toStdString() +
                                                  " is larger than " + limitText(kind.maxBytes));
    return file.readAll().toStdString();
}

}  // namespace qklab::gui
