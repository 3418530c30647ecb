// lesson_library.cpp — listing, resolving and reading lessons; the chooser dialog.
#include "lessons/lesson_library.h"

#include <QCheckBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QVBoxLayout>

#include "common/file_dialogs.h"
#include "common/input_files.h"
#include "qklab/util/error.h"

namespace qklab::gui {

QString lessonDirectory() {
    const QString env = qEnvironmentVariable("QKLAB_LESSONS_DIR");
    return env.isEmpty() ? QStringLiteral(":/lessons") : env;
}

QList<LessonEntry> embeddedLessons() {
    QList<LessonEntry> out;
    const QFileInfoList files =
        QDir(lessonDirectory()).entryInfoList({QStringLiteral("*.json")}, QDir::Files, QDir::Name);
    for (const QFileInfo& f : files) {
        LessonEntry e;
        e.id = f.completeBaseName();
        e.path = f.absoluteFilePath();
        try {
            const Lesson l = readLesson(e.path);
            e.title = QString::fromStdString(l.title);
            e.summary = QString::fromStdString(l.summary);
            e.minutes = l.minutes;
        } catch (const std::exception& ex) {
            e.title = QObject::tr("%1 (does not load)").arg(f.fileName());
            e.summary = QString::fromStdString(ex.what());
            e.loads = false;
        }
        out << e;
    }
    return out;
}

QString resolveLesson(const QString& nameOrFile) {
    if (nameOrFile.isEmpty()) return {};
    const QFileInfo file(nameOrFile);
    if (file.isFile()) return file.absoluteFilePath();
    for (const QString& candidate :
         {lessonDirectory() + QLatin1Char('/') + nameOrFile + QStringLiteral(".json"),
          lessonDirectory() + QLatin1Char('/') + nameOrFile})
        if (QFileInfo(candidate).isFile()) return candidate;
    return {};
}

QString findLessonPreset(const QString& name) {
    std::vector<std::string> dirs;
    for (const QString& dir : {presetDirectory(), userPresetDirectory()})
        dirs.push_back(dir.toStdString());
    // QFileInfo sees embedded presets too; a FIFO or a device "exists" (and is refused when
    // read, with the reason) rather than being "not found".
    return QString::fromStdString(resolveLessonPreset(
        name.toStdString(), dirs,
        [](const std::string& p) { return QFileInfo::exists(QString::fromStdString(p)); }));
}

Lesson readLesson(const QString& path) {
    // Embedded lessons are named by their file name: ":/lessons/" says nothing to an author.
    const QString origin = path.startsWith(QLatin1Char(':')) ? QFileInfo(path).fileName() : path;
    // The same checks as `qklab-cli lesson` (core): what would fail when a step plays is
    // refused now, with the step and the field.
    const LessonPresetLookup presets = [](const std::string& name) -> std::optional<std::string> {
        const QString found = findLessonPreset(QString::fromStdString(name));
        if (found.isEmpty()) return std::nullopt;
        return readAppFile(found, kPresetFile);
    };
    return parsePlayableLesson(readAppFile(path, kLessonFile), origin.toStdString(), presets);
}

bool LessonChooser::freshDatabase() const {
    return m_fresh->isChecked();
}

bool LessonChooser::replayRecorded() const {
    return m_replayRecorded->isChecked() && !m_fresh->isChecked();
}

LessonChooser::LessonChooser(QWidget* parent) : QDialog(parent) {
    setWindowTitle(tr("Open lesson"));
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(new QLabel(tr("Lessons shipped with qklab:")));
    m_list = new QListWidget;
    m_list->setObjectName(QStringLiteral("lessonList"));
    // Titles in the list; the chosen lesson's summary (or why it does not load) below it.
    auto* summary = new QLabel;
    summary->setObjectName(QStringLiteral("lessonSummary"));
    summary->setWordWrap(true);
    summary->setMinimumHeight(4 * summary->fontMetrics().lineSpacing());
    summary->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    for (const LessonEntry& e : embeddedLessons()) {
        QString text = e.title;
        if (e.minutes > 0) text += tr("  (%1 min)").arg(e.minutes);
        auto* item = new QListWidgetItem(text, m_list);
        item->setData(Qt::UserRole, e.path);
        item->setData(Qt::UserRole + 1, e.summary);
        item->setToolTip(e.id);
    }
    connect(m_list, &QListWidget::currentItemChanged, summary, [summary](QListWidgetItem* item) {
        summary->setText(item ? item->data(Qt::UserRole + 1).toString() : QString());
    });
    if (m_list->count() > 0) m_list->setCurrentRow(0);
    layout->addWidget(m_list, 1);
    layout->addWidget(summary);
    m_fresh =
        new QCheckBox(tr("Start from a fresh database (a new class-<date>.db beside this "
                         "one; this one is kept)"));
    m_fresh->setObjectName(QStringLiteral("lessonFreshDatabase"));
    layout->addWidget(m_fresh);
    m_replayRecorded = new QCheckBox(
        tr("Replay recorded runs first (a slow laptop: each training step with a run recorded "
           "in this database replays it at Space)"));
    m_replayRecorded->setObjectName(QStringLiteral("lessonReplayRecorded"));
    layout->addWidget(m_replayRecorded);
    connect(m_fresh, &QCheckBox::toggled, m_replayRecorded, &QWidget::setDisabled);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Open | QDialogButtonBox::Cancel);
    QPushButton* file = buttons->addButton(tr("Open file…"), QDialogButtonBox::ActionRole);
    layout->addWidget(buttons);
    connect(buttons, &QDialogButtonBox::accepted, this, &LessonChooser::acceptCurrent);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(m_list, &QListWidget::itemActivated, this, &LessonChooser::acceptCurrent);
    connect(file, &QPushButton::clicked, this, [this] {
        const QString path =
            chooseFileToOpen(this, tr("Open lesson file"), QString(), tr("Lessons (*.json)"));
        if (path.isEmpty()) return;
        m_chosen = path;
        accept();
    });
    resize(560, 420);
}

void LessonChooser::acceptCurrent() {
    if (QListWidgetItem* item = m_list->currentItem()) {
        m_chosen = item->data(Qt::UserRole).toString();
        accept();
    }
}

}  // namespace qklab::gui
