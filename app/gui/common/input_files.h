// input_files.h — where the app finds presets, and how it reads files someone else made: an
// embedded resource (":/experiments/...", ":/lessons/...") through QFile, anything on disk
// through core's readInputFile() (regular files only, within the size limit, never blocking:
// qklab/util/input_file.h).
#pragma once

#include <QString>
#include <string>

#include "qklab/util/input_file.h"

namespace qklab::gui {

// Where presets are: $QKLAB_EXPERIMENTS_DIR, else the ones embedded in the binary
// (":/experiments"); and where the presets a user saves go, $XDG_DATA_HOME/qklab/presets (also
// listed). The set-up form's picker lists both, and a lesson's start_preset looks in both.
QString presetDirectory();
QString userPresetDirectory();
// Where the preset file dialogs open: $QKLAB_EXPERIMENTS_DIR, else the source tree's
// experiments/ when the app runs from a build, else the user's presets, else home. Always a
// folder that exists on disk: a dialog cannot browse the embedded ":/experiments", and a missing
// folder opens it at "/".
QString presetDialogDirectory();

// The file's bytes. Throws qklab::Error naming the kind, the path and, when it is too large,
// the limit.
std::string readAppFile(const QString& path, const InputFileKind& kind);

}  // namespace qklab::gui
