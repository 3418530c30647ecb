// sweep_dialog.cpp — defining a sweep from the form, checking it, writing and starting it.
#include "sweeps/sweep_dialog.h"

#include <QComboBox>
#include <QDateTime>
#include <QDialogButtonBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QThread>
#include <QTimer>
#include <QVBoxLayout>
#include <set>

#include "qklab/config/sweep.h"
#include "qklab/store/run_store.h"
#include "sweeps/sweep_launch.h"

namespace qklab::gui {

using nlohmann::json;

SweepDialog::SweepDialog(const RunConfig& base, const QString& dbPath, QWidget* parent)
    : QDialog(parent), m_base(base), m_db(QFileInfo(dbPath).absoluteFilePath()) {
    setWindowTitle(tr("New sweep from the form"));
    m_launch = startDetachedCli;
    auto* v = new QVBoxLayout(this);
    auto* intro =
        new QLabel(tr("The set-up form's config is the base of every point. Pick the "
                      "keys to vary; the grid is every combination of their values "
                      "and the seeds, except that zipped axes move together. Fixed "
                      "values apply to every point. The sweep runs in the background "
                      "(qklab-cli) and keeps running when the app closes."));
    intro->setWordWrap(true);
    v->addWidget(intro);
    v->addLayout(buildDetails());
    v->addWidget(buildAxesBox());
    v->addWidget(buildSetBox());
    buildFooter(v);
    m_timer = new QTimer(this);
    m_timer->setSingleShot(true);
    m_timer->setInterval(150);
    connect(m_timer, &QTimer::timeout, this, &SweepDialog::revalidate);
    for (QLineEdit* e : {m_name, m_why, m_seeds})
        connect(e, &QLineEdit::textChanged, this, &SweepDialog::scheduleRevalidate);
    // Wortsman's sweep to start from: the LR on a log grid, 3e-4 to 3e-1.
    if (SweepAxisEditor* lr = addAxis(QStringLiteral("optim.lr")))
        lr->setGrid(SweepAxisEditor::Mode::Log, 3e-4, 3e-1, 7);
    revalidate();
    resize(860, 600);
}

// Name, why, seeds and parallel jobs: what the sweep is, beside its axes.
QFormLayout* SweepDialog::buildDetails() {
    auto* form = new QFormLayout;
    m_name = new QLineEdit(
        QStringLiteral("sweep-%1")
            .arg(QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmm"))));
    m_why = new QLineEdit;
    m_why->setPlaceholderText(tr("what the sweep is for (optional)"));
    m_seeds = new QLineEdit(QString::number(m_base.run.seed));
    m_seeds->setPlaceholderText(tr("e.g. 1, 2, 3"));
    m_seeds->setToolTip(tr("Each configuration runs once per seed (run.seed)"));
    m_jobs = new QSpinBox;
    m_jobs->setRange(0, std::max(1, QThread::idealThreadCount()) * 2);
    m_jobs->setSpecialValueText(tr("auto (cores / threads per run)"));
    m_jobs->setToolTip(tr("How many points train at once (qklab-cli sweep --jobs)"));
    form->addRow(tr("Name"), m_name);
    form->addRow(tr("Why"), m_why);
    form->addRow(tr("Seeds"), m_seeds);
    form->addRow(tr("Parallel jobs"), m_jobs);
    return form;
}

// A picker of the config keys a sweep may vary or fix (seeds and why have their own fields).
QComboBox* SweepDialog::keyPicker(const QString& objectName, const QString& current) const {
    auto* keys = new QComboBox;
    keys->setObjectName(objectName);
    for (const FieldInfo& f : configFields()) {
        if (f.key == "run.seed" || f.key == "why") continue;  // seeds above; why is a note
        keys->addItem(QStringLiteral("%1 — %2").arg(QString::fromStdString(f.key),
                                                    QString::fromStdString(f.label)),
                      QString::fromStdString(f.key));
    }
    keys->setCurrentIndex(std::max(0, keys->findData(current)));
    return keys;
}

// The axes: a key picker and Add, then one editor per axis.
QGroupBox* SweepDialog::buildAxesBox() {
    auto* axesBox = new QGroupBox(tr("Axes"));
    auto* axesV = new QVBoxLayout(axesBox);
    auto* pick = new QHBoxLayout;
    m_keys = keyPicker(QStringLiteral("sweepKeyPicker"), QStringLiteral("attention.qk_norm"));
    auto* add = new QPushButton(tr("Add axis"));
    connect(add, &QPushButton::clicked, this, &SweepDialog::addChosenAxis);
    pick->addWidget(m_keys, 1);
    pick->addWidget(add);
    axesV->addLayout(pick);
    m_axesLayout = new QVBoxLayout;
    axesV->addLayout(m_axesLayout);
    return axesBox;
}

// Fixed values ("set"): a key picker and Add, then one key = value row per key.
QGroupBox* SweepDialog::buildSetBox() {
    auto* box = new QGroupBox(tr("Fixed values (the same on every point)"));
    auto* boxV = new QVBoxLayout(box);
    auto* pick = new QHBoxLayout;
    m_setKeys = keyPicker(QStringLiteral("sweepSetKeyPicker"), QStringLiteral("schedule.steps"));
    auto* add = new QPushButton(tr("Add fixed value"));
    connect(add, &QPushButton::clicked, this,
            [this] { addSetValue(m_setKeys->currentData().toString()); });
    pick->addWidget(m_setKeys, 1);
    pick->addWidget(add);
    boxV->addLayout(pick);
    m_setLayout = new QVBoxLayout;
    boxV->addLayout(m_setLayout);
    return box;
}

// The point count, the problem (if any), the sweep file's path, and Start / Cancel.
void SweepDialog::buildFooter(QVBoxLayout* v) {
    m_count = new QLabel;
    m_count->setObjectName(QStringLiteral("sweepPointCount"));
    m_errorLabel = new QLabel;
    m_errorLabel->setWordWrap(true);
    m_errorLabel->setStyleSheet(QStringLiteral("color: rgb(200, 0, 0);"));
    m_errorLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_file = new QLabel;
    m_file->setWordWrap(true);
    m_file->setTextInteractionFlags(Qt::TextSelectableByMouse);
    v->addWidget(m_count);
    v->addWidget(m_errorLabel);
    v->addWidget(m_file);
    v->addStretch(1);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Cancel);
    m_start = buttons->addButton(tr("Start sweep"), QDialogButtonBox::AcceptRole);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(m_start, &QPushButton::clicked, this, [this] {
        QString error;
        if (start(&error))
            accept();
        else
            m_errorLabel->setText(error);
    });
    v->addWidget(buttons);
}

SweepDialog::~SweepDialog() = default;

void SweepDialog::scheduleRevalidate() {
    m_start->setEnabled(false);  // until the check has run on what is shown
    m_timer->start();
}

SweepAxisEditor* SweepDialog::axis(const QString& key) const {
    for (SweepAxisEditor* a : m_axes)
        if (a->key() == key) return a;
    return nullptr;
}

SweepAxisEditor* SweepDialog::addAxis(const QString& key) {
    if (SweepAxisEditor* existing = axis(key)) return existing;
    const FieldInfo* field = findField(key.toStdString());
    if (!field) return nullptr;
    auto* editor = new SweepAxisEditor(*field, field->get(m_base));
    m_axes.push_back(editor);
    m_axesLayout->addWidget(editor);
    connect(editor, &SweepAxisEditor::changed, this, &SweepDialog::scheduleRevalidate);
    connect(editor, &SweepAxisEditor::removeRequested, this, [this, key] { removeAxis(key); });
    allowZipBelowTheFirstRow();
    scheduleRevalidate();
    return editor;
}

void SweepDialog::removeAxis(const QString& key) {
    SweepAxisEditor* editor = axis(key);
    if (!editor) return;
    m_axes.erase(std::find(m_axes.begin(), m_axes.end(), editor));
    editor->deleteLater();
    allowZipBelowTheFirstRow();
    scheduleRevalidate();
}

// The first row has no axis above it to zip with.
void SweepDialog::allowZipBelowTheFirstRow() {
    for (size_t i = 0; i < m_axes.size(); ++i) m_axes[i]->setZipAllowed(i > 0);
}

std::vector<std::vector<std::string>> SweepDialog::zipGroups() const {
    std::vector<std::vector<std::string>> groups;
    std::vector<std::string> run;
    for (SweepAxisEditor* a : m_axes) {
        if (!a->zipWithPrevious()) {
            if (run.size() > 1) groups.push_back(run);
            run.clear();
        }
        run.push_back(a->key().toStdString());
    }
    if (run.size() > 1) groups.push_back(run);
    return groups;
}

SweepSetEditor* SweepDialog::setValue(const QString& key) const {
    for (SweepSetEditor* s : m_sets)
        if (s->key() == key) return s;
    return nullptr;
}

SweepSetEditor* SweepDialog::addSetValue(const QString& key) {
    if (SweepSetEditor* existing = setValue(key)) return existing;
    const FieldInfo* field = findField(key.toStdString());
    if (!field) return nullptr;
    auto* editor = new SweepSetEditor(*field, m_base);
    m_sets.push_back(editor);
    m_setLayout->addWidget(editor);
    connect(editor, &SweepSetEditor::changed, this, &SweepDialog::scheduleRevalidate);
    connect(editor, &SweepSetEditor::removeRequested, this, [this, key] { removeSetValue(key); });
    scheduleRevalidate();
    return editor;
}

void SweepDialog::removeSetValue(const QString& key) {
    SweepSetEditor* editor = setValue(key);
    if (!editor) return;
    m_sets.erase(std::find(m_sets.begin(), m_sets.end(), editor));
    editor->deleteLater();
    scheduleRevalidate();
}

void SweepDialog::addChosenAxis() {
    addAxis(m_keys->currentData().toString());
}

json SweepDialog::sweepJson() const {
    json j;
    j["name"] = m_name->text().trimmed().toStdString();
    const QString why = m_why->text().trimmed();
    j["why"] = why.isEmpty() ? "defined in the app from the set-up form" : why.toStdString();
    j["base"] = configToJson(m_base);
    json axes = json::object();
    for (SweepAxisEditor* a : m_axes) axes[a->key().toStdString()] = a->spec(nullptr);
    j["axes"] = axes;
    if (const auto zips = zipGroups(); !zips.empty()) j["zip"] = zips;
    json set = json::object();
    for (SweepSetEditor* s : m_sets) set[s->key().toStdString()] = s->value();
    if (!set.empty()) j["set"] = set;
    json seeds = json::array();
    for (const QString& part : m_seeds->text().split(QLatin1Char(','), Qt::SkipEmptyParts))
        seeds.push_back(parseSweepValue(part));
    if (!seeds.empty()) j["seeds"] = seeds;
    return j;
}

QString SweepDialog::sweepFilePath() const {
    return QDir(sweepFolder(m_db))
        .filePath(sweepFileStem(m_name->text().trimmed()) + QStringLiteral(".json"));
}

// The name must be one the store takes: checkRunName's rules, and not another sweep's.
QString SweepDialog::checkName() const {
    const std::string name = m_name->text().trimmed().toStdString();
    try {
        checkRunName(name);
    } catch (const std::exception& e) {
        return tr("Name: %1").arg(QString::fromStdString(e.what()));
    }
    if (!QFileInfo::exists(m_db)) return {};
    try {
        RunStore store(m_db.toStdString(), StoreAccess::ReadOnly);
        for (const SweepInfo& s : store.sweeps())
            if (s.name == name)
                return tr("Name: a sweep named “%1” is already in this database (resume it in "
                          "the Sweeps tab, or pick another name)")
                    .arg(QString::fromStdString(name));
    } catch (const std::exception&) {
        // An older or unreadable database: the CLI says what is wrong when it starts.
    }
    return {};
}

// "3 × (weight_decay, qk_norm zipped) · 2 × lr · 1 seed": one part per dimension.
QString SweepDialog::describeGrid(const json& definition) const {
    const auto shortKey = [](const std::string& key) {
        return QString::fromStdString(key).section(QLatin1Char('.'), -1);
    };
    QStringList parts;
    std::set<std::string> zipped;
    for (const json& group : definition.value("zip", json::array())) {
        QStringList names;
        for (const json& key : group) {
            names << shortKey(key.get<std::string>());
            zipped.insert(key.get<std::string>());
        }
        parts << tr("%1 × (%2 zipped)")
                     .arg(definition["axes"][group[0].get<std::string>()].size())
                     .arg(names.join(QStringLiteral(", ")));
    }
    for (const auto& [key, values] : definition["axes"].items())
        if (!zipped.count(key)) parts << tr("%1 × %2").arg(values.size()).arg(shortKey(key));
    if (definition.contains("seeds"))
        parts << tr("%n seed(s)", nullptr, int(definition["seeds"].size()));
    if (!definition.value("set", json::object()).empty())
        parts << tr("%n fixed value(s)", nullptr, int(definition["set"].size()));
    return parts.join(QStringLiteral(" · "));
}

// What the rows themselves say is wrong: an axis without values, a fixed value the override
// parser refuses, a key that is both an axis and fixed (the axis would silently win).
QString SweepDialog::rowProblem() const {
    QString problem;
    for (SweepAxisEditor* a : m_axes)
        if (problem.isEmpty()) a->spec(&problem);
    for (SweepSetEditor* s : m_sets) {
        if (!problem.isEmpty()) break;
        if (s->isInvalid())
            problem = s->problem();
        else if (axis(s->key()))
            problem = tr("%1 is both an axis and a fixed value: remove one of them").arg(s->key());
    }
    return problem;
}

void SweepDialog::revalidate() {
    m_points = -1;
    m_error.clear();
    QString problem = rowProblem();
    if (problem.isEmpty()) problem = checkName();
    if (problem.isEmpty()) {
        try {
            const SweepDefinition d = parseSweep(sweepJson().dump(), sweepFilePath().toStdString());
            m_points = int(expandSweep(d).size());
            m_count->setText(tr("<b>%n point(s)</b>: %1", nullptr, m_points)
                                 .arg(describeGrid(sweepToJson(d)).toHtmlEscaped()));
        } catch (const std::exception& e) {
            problem = QString::fromStdString(e.what());
        }
    }
    m_error = problem;
    if (!problem.isEmpty()) m_count->setText(tr("<b>Not a valid sweep yet.</b>"));
    m_errorLabel->setText(problem);
    m_file->setText(
        tr("Writes %1 and runs qklab-cli sweep on %2.")
            .arg(QDir::toNativeSeparators(sweepFilePath()), QDir::toNativeSeparators(m_db)));
    m_start->setEnabled(m_points > 0);
}

bool SweepDialog::start(QString* error) {
    revalidate();
    if (m_points <= 0) {
        if (error) *error = m_error;
        return false;
    }
    const QString path = sweepFilePath();
    QDir().mkpath(QFileInfo(path).absolutePath());
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate)) {
        if (error) *error = tr("Cannot write %1: %2").arg(path, file.errorString());
        return false;
    }
    file.write(QByteArray::fromStdString(sweepJson().dump(2) + "\n"));
    file.close();
    const QString name = m_name->text().trimmed();
    QStringList args{QStringLiteral("sweep"),  path, QStringLiteral("--db"), m_db,
                     QStringLiteral("--name"), name};
    if (m_jobs->value() > 0) args << QStringLiteral("--jobs") << QString::number(m_jobs->value());
    QString message;
    const QString log =
        QDir(sweepFolder(m_db)).filePath(sweepFileStem(name) + QStringLiteral(".log"));
    if (m_launch(args, log, &message) <= 0) {
        if (error) *error = message;
        return false;
    }
    m_startedName = name;
    return true;
}

}  // namespace qklab::gui
