// preset_picker.cpp — listing, loading and writing preset files.
#include "preset_picker.h"

#include <QComboBox>
#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QInputDialog>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

#include "qklab/error.h"

namespace qklab::gui {

using nlohmann::json;

namespace {

// Keys whose value differs from the defaults; nested objects are compared key by key so a
// preset that changes one model field does not repeat the whole model section.
json diffJson(const json& value, const json& defaults) {
    json out = json::object();
    for (auto it = value.begin(); it != value.end(); ++it) {
        const auto d = defaults.find(it.key());
        if (d == defaults.end()) {
            out[it.key()] = it.value();
        } else if (it.value().is_object() && d->is_object()) {
            json sub = diffJson(it.value(), *d);
            if (!sub.empty()) out[it.key()] = sub;
        } else if (it.value() != *d) {
            out[it.key()] = it.value();
        }
    }
    return out;
}

}  // namespace

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
    row->addWidget(m_combo, 1);
    row->addWidget(open);
    row->addWidget(m_save);
    layout->addLayout(row);
    m_why = new QLabel;
    m_why->setWordWrap(true);
    m_why->setObjectName(QStringLiteral("presetWhy"));
    m_why->setStyleSheet(QStringLiteral("color: #304060; font-style: italic;"));
    layout->addWidget(m_why);

    connect(m_combo, &QComboBox::activated, this, [this](int index) {
        const QString path = m_combo->itemData(index).toString();
        if (!path.isEmpty()) loadPath(path);
    });
    connect(open, &QPushButton::clicked, this, [this] {
        const QString path =
            QFileDialog::getOpenFileName(this, tr("Open preset"), m_dir, tr("Presets (*.json)"));
        if (!path.isEmpty()) loadPath(path);
    });
    connect(m_save, &QPushButton::clicked, this, &PresetPicker::saveAs);
    setDirectory(defaultDirectory());
}

QString PresetPicker::defaultDirectory() {
    const QString env = qEnvironmentVariable("QKLAB_EXPERIMENTS_DIR");
    if (!env.isEmpty()) return env;
    const QStringList candidates{QDir::current().filePath(QStringLiteral("experiments")),
                                 QDir(QCoreApplication::applicationDirPath())
                                     .filePath(QStringLiteral("../../../experiments")),
                                 QStringLiteral(QKLAB_EXPERIMENTS_DIR)};
    for (const QString& c : candidates)
        if (QFileInfo(c).isDir()) return QDir(c).canonicalPath();
    return QDir::currentPath();
}

void PresetPicker::setDirectory(const QString& dir) {
    m_dir = dir;
    rescan();
}

void PresetPicker::rescan() {
    m_combo->clear();
    m_combo->addItem(tr("(choose a preset)"), QString());
    const QFileInfoList files =
        QDir(m_dir).entryInfoList({QStringLiteral("*.json")}, QDir::Files, QDir::Name);
    for (const QFileInfo& f : files) {
        m_combo->addItem(f.completeBaseName(), f.absoluteFilePath());
        // The why of each preset as its tooltip, so browsing the list teaches.
        try {
            const RunConfig c = loadPreset(f.absoluteFilePath().toStdString());
            m_combo->setItemData(m_combo->count() - 1, QString::fromStdString(c.why),
                                 Qt::ToolTipRole);
        } catch (...) {
            m_combo->setItemData(m_combo->count() - 1, tr("(this preset does not load)"),
                                 Qt::ToolTipRole);
        }
    }
}

bool PresetPicker::loadPath(const QString& path) {
    if (!QFileInfo::exists(path)) {
        emit error(tr("Preset not found"), tr("The preset file %1 does not exist.").arg(path));
        return false;
    }
    try {
        const RunConfig c = loadPreset(path.toStdString());
        m_currentPath = QFileInfo(path).absoluteFilePath();
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
    json out = diffJson(configToJson(config), configToJson(RunConfig{}));
    out["why"] = config.why;
    return out;
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
    const QString path =
        QFileDialog::getSaveFileName(this, tr("Save as preset"), m_dir, tr("Presets (*.json)"));
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
