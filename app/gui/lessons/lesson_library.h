// lesson_library.h — where lessons come from: the ones embedded in the app (every
// resources/lessons/*.json, compiled in under ":/lessons"), and files a user opens; plus the
// File > Open lesson… chooser.
//
// A lesson is named by its id (the file stem, "02-blowup") or by a path; both go through
// resolveLesson(), so `qklab --lesson NAME|FILE` and the chooser agree.
#pragma once

#include <QDialog>
#include <QList>
#include <QString>

#include "qklab/analysis/lesson.h"

class QCheckBox;
class QListWidget;

namespace qklab::gui {

struct LessonEntry {
    QString id;     // file stem
    QString title;  // the lesson's title, or the file name with a note when it does not load
    QString path;   // ":/lessons/NN-name.json"
    QString summary;
    int minutes = 0;
    bool loads = true;
};

// $QKLAB_LESSONS_DIR when set (authors trying lessons without a rebuild), else ":/lessons".
QString lessonDirectory();
// Every lesson there, by file name.
QList<LessonEntry> embeddedLessons();
// A readable file, or the id of an embedded lesson; empty when neither.
QString resolveLesson(const QString& nameOrFile);
// The preset a start_preset step names, as the app plays it: a file, else a shipped preset
// (":/experiments" or $QKLAB_EXPERIMENTS_DIR), else one the user saved. Empty when none.
QString findLessonPreset(const QString& name);
// Reads a lesson (embedded or a file, through readAppFile) and checks it as `qklab-cli lesson`
// does (parsePlayableLesson). Throws qklab::Error whose message names the file, the step and
// the field.
Lesson readLesson(const QString& path);

// Lists the embedded lessons by title (with their summary and length), plus "Open file…".
class LessonChooser : public QDialog {
    Q_OBJECT
  public:
    explicit LessonChooser(QWidget* parent = nullptr);
    QString chosenPath() const { return m_chosen; }
    // "Start from a fresh database" was ticked: the class begins with no stored runs.
    bool freshDatabase() const;
    // "Replay recorded runs first" was ticked: Space at a training step with a recording
    // replays it (a slow laptop).
    bool replayRecorded() const;

  private:
    void acceptCurrent();
    QListWidget* m_list = nullptr;
    QCheckBox* m_fresh = nullptr;
    QCheckBox* m_replayRecorded = nullptr;
    QString m_chosen;
};

}  // namespace qklab::gui
