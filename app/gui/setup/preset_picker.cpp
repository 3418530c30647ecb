// preset_picker.cpp — listing, loading and writing preset files.
#include "setup/preset_picker.h"

#include <QComboBox>
#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QInputDialog>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

#include "common/file_dialogs.h"
#include "common/input_files.h"
#include "qklab/util/error.h"
#include "setup/recommend_dialog.h"

namespace qklab::gui {

using nlohmann::json;

PresetPicker::PresetPicker(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    auto* row = new QHBoxLayout;
    m_combo = new QComboBox;
    m_combo->setObjectName(QStringLiteral("presetCombo"));
    m_combo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_combo->setMinimumContentsLength(14);
    auto* open = new QPushButton(tr("Open…"));
    open->setToolTip(tr("Load a preset file from anywhere"));
    m_save = new QPushButton(tr("Save as preset…"));
    auto* recommend = new QPushButton(tr("Recommend…"));
    recommend->setObjectName(QStringLiteral("recommendButton"));
    recommend->setToolTip(tr("Fill the form from the guide's settings for a model size"));
    // The box on a line of its own, the buttons under it: in one row they made the set-up
    // column 465 px wide, too wide beside the views on a 1024-px screen.
    layout->addWidget(m_combo);
    row->addWidget(open);
    row->addWidget(m_save);
    row->addWidget(recommend);
    row->addStretch(1);
    layout->addLayout(row);
    m_why = new QLabel;
    m_why->setWordWrap(true);
    m_why->setObjectName(QStringLiteral("presetWhy"));
    layout->addWidget(m_why);

    connect(m_combo, &QComboBox::activated, this, [this](int index) {
        const QString path = m_combo->itemData(index).toString();
        if (!path.isEmpty()) loadPath(path);
    });
    connect(open, &QPushButton::clicked, this, [this] {
        const QString path = chooseFileToOpen(this, tr("Open preset"), presetDialogDirectory(),
                                              tr("Presets (*.json)"));
        if (!path.isEmpty()) loadPath(path);
    });
    connect(m_save, &QPushButton::clicked, this, &PresetPicker::saveAs);
    connect(recommend, &QPushButton::clicked, this, &PresetPicker::recommend);
    setDirectory(presetDirectory());
}

void PresetPicker::setDirectory(const QString& dir) {
    m_dir = dir;
    rescan();
}

// The shipped presets (embedded in the binary), then the ones the user saved.
void PresetPicker::rescan() {
    m_combo->clear();
    m_combo->addItem(tr("(choose a preset)"), QString());
    for (const QString& dir : {m_dir, userPresetDirectory()}) {
        const QFileInfoList files =
            QDir(dir).entryInfoList({QStringLiteral("*.json")}, QDir::Files, QDir::Name);
        for (const QFileInfo& f : files) {
            m_combo->addItem(f.completeBaseName(), f.absoluteFilePath());
            // The why of each preset as its tooltip, so browsing the list teaches.
            QString tip;
            try {
                tip = QString::fromStdString(readPreset(f.absoluteFilePath()).why);
            } catch (...) {
                tip = tr("(this preset does not load)");
            }
            m_combo->setItemData(m_combo->count() - 1, tip, Qt::ToolTipRole);
        }
    }
}

// A preset file, or the name of one in the list ("blowup_no_qknorm").
QString PresetPicker::resolve(const QString& pathOrName) const {
    if (QFileInfo::exists(pathOrName)) return QFileInfo(pathOrName).absoluteFilePath();
    for (const QString& dir : {m_dir, userPresetDirectory()}) {
        const QString candidate = dir + QLatin1Char('/') + pathOrName + QStringLiteral(".json");
        if (QFileInfo::exists(candidate)) return candidate;
    }
    return {};
}

RunConfig PresetPicker::readPreset(const QString& path) {
    // Embedded presets (":/experiments/...") and files alike; a file only when it is a regular
    // one within the limit (a lesson naming /dev/zero as its preset once took 21 GB).
    return configFromJsonText(readAppFile(path, kPresetFile), path.toStdString());
}

void PresetPicker::showReusedRun(const QString& runLabel, const RunConfig& config) {
    m_currentPath.clear();
    m_combo->setCurrentIndex(0);  // "(choose a preset)"; activated() is not emitted
    m_why->setText(config.why.empty()
                       ? tr("Config of %1.").arg(runLabel)
                       : tr("Config of %1: %2").arg(runLabel, QString::fromStdString(config.why)));
}

QString PresetPicker::whyText() const {
    return m_why->text();
}

void PresetPicker::recommend() {
    RecommendDialog dialog(this);
    if (dialog.exec() != QDialog::Accepted || !dialog.recommendedConfig()) return;
    showRecommendation(*dialog.recommendedConfig());
}

void PresetPicker::showRecommendation(const RunConfig& config) {
    m_currentPath.clear();
    m_combo->setCurrentIndex(0);
    m_why->setText(QString::fromStdString(config.why));
    emit presetLoaded(config, QString());
}

bool PresetPicker::loadPath(const QString& pathOrName) {
    const QString path = resolve(pathOrName);
    if (path.isEmpty()) {
        emit error(tr("Preset not found"),
                   tr("There is no preset file or shipped preset called %1.").arg(pathOrName));
        return false;
    }
    try {
        const RunConfig c = readPreset(path);
        m_currentPath = path;
        const int index = m_combo->findData(m_currentPath);
        if (index >= 0) {
            m_combo->setCurrentIndex(index);
        } else {
            m_combo->addItem(QFileInfo(path).completeBaseName(), m_currentPath);
            m_combo->setCurrentIndex(m_combo->count() - 1);
        }
        m_why->setText(c.why.empty() ? tr("(this preset has no \"why\")")
                                     : QString::fromStdString(c.why));
        emit presetLoaded(c, m_currentPath);
        return true;
    } catch (const std::exception& e) {
        emit error(
            tr("Preset does not load"),
            tr("%1\n\n%2").arg(QDir::toNativeSeparators(path), QString::fromStdString(e.what())));
        return false;
    }
}

json PresetPicker::presetJson(const RunConfig& config) {
    return qklab::presetJson(config);
}

bool PresetPicker::savePreset(const RunConfig& config, const QString& path, QString* error) {
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate | QIODevice::Text)) {
        if (error) *error = tr("Could not write %1: %2").arg(path, file.errorString());
        return false;
    }
    const std::string text = presetJson(config).dump(2) + "\n";
    file.write(text.data(), qint64(text.size()));
    return true;
}

void PresetPicker::saveAs() {
    if (!m_source) return;
    QStringList problems;
    RunConfig c = m_source(&problems);
    if (!problems.isEmpty()) {
        emit error(tr("Cannot save preset"),
                   tr("Fix these first:\n%1").arg(problems.join(QLatin1Char('\n'))));
        return;
    }
    if (c.why.empty()) {
        bool ok = false;
        const QString why = QInputDialog::getText(
            this, tr("Save as preset"), tr("What does this preset demonstrate (\"why\")?"),
            QLineEdit::Normal, QString(), &ok);
        if (!ok) return;
        c.why = why.toStdString();
    }
    // The shipped presets are read-only (inside the binary): new ones go to the user's folder.
    QDir().mkpath(userPresetDirectory());
    const QString path =
        chooseFileToSave(this, tr("Save as preset"), userPresetDirectory(), tr("Presets (*.json)"));
    if (path.isEmpty()) return;
    QString err;
    if (!savePreset(c, path, &err)) {
        emit error(tr("Cannot save preset"), err);
        return;
    }
    rescan();
    loadPath(path);
}

}  // namespace qklab::gui
