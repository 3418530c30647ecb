// input_files.h — how the app reads files someone else made: an embedded resource
// (":/experiments/...", ":/lessons/...") through QFile, anything on disk through core's
// readInputFile() (regular files only, within the size limit, never blocking: qklab/input_file.h).
#pragma once

#include <QString>
#include <string>

#include "qklab/input_file.h"

namespace qklab::gui {

// The file's bytes. Throws qklab::Error naming the kind, the path and, when it is too large,
// the limit.
std::string readAppFile(const QString& path, const InputFileKind& kind);

}  // namespace qklab::gui
