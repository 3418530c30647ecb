// sweep_dialog.cpp — defining a sweep from the form, checking it, writing and starting it.
#include "sweeps/sweep_dialog.h"

#include <QCheckBox>
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
#include <QScrollArea>
#include <QSpinBox>
#include <QThread>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>
#include <cmath>

#include "qklab/run_store.h"
#include "qklab/sweep.h"
#include "sweeps/sweep_launch.h"

namespace qklab::gui {

using nlohmann::json;

namespace {

bool numeric(const FieldInfo& f) {
    return f.type == FieldType::Float || f.type == FieldType::Int;
}

// A typed value: JSON when it parses (3e-4, 30, "x", [1,2]), else the bare text.
json parseValue(const QString& text) {
    const std::string s = text.trimmed().toStdString();
    const json parsed = json::parse(s, nullptr, /*allow_exceptions=*/false);
    return parsed.is_discarded() ? json(s) : parsed;
}

QString valueText(const json& v) {
    return v.is_string() ? QString::fromStdString(v.get<std::string>())
                         : QString::fromStdString(v.dump());
}

}  // namespace

// ---- one axis ------------------------------------------------------------------------------

SweepAxisEditor::SweepAxisEditor(const FieldInfo& field, const json& current, QWidget* parent)
    : QWidget(parent), m_field(field) {
    auto* row = new QHBoxLayout(this);
    row->setContentsMargins(0, 0, 0, 0);
    auto* name = new QLabel(QStringLiteral("<b>%1</b>").arg(key()));
    name->setToolTip(QString::fromStdString(field.label + ": " + field.help));
    name->setMinimumWidth(150);
    row->addWidget(name);
    auto* remove = new QToolButton;
    remove->setText(QStringLiteral("✕"));
    remove->setToolTip(tr("Remove this axis"));
    connect(remove, &QToolButton::clicked, this, &SweepAxisEditor::removeRequested);
    if (field.type == FieldType::Choice || field.type == FieldType::Bool) {
        const std::vector<std::string> names = field.type == FieldType::Bool
                                                   ? std::vector<std::string>{"false", "true"}
                                                   : field.choices;
        for (const std::string& c : names) {
            auto* box = new QCheckBox(QString::fromStdString(c));
            box->setChecked(valueText(current) == box->text());
            connect(box, &QCheckBox::toggled, this, &SweepAxisEditor::changed);
            m_choices.push_back(box);
            row->addWidget(box);
        }
        row->addStretch(1);
        row->addWidget(remove);
        return;
    }
    m_mode = new QComboBox;
    if (numeric(field)) m_mode->addItems({tr("log grid"), tr("linear grid")});
    m_mode->addItem(tr("list"));
    row->addWidget(m_mode);
    m_gridBox = new QWidget;
    auto* grid = new QHBoxLayout(m_gridBox);
    grid->setContentsMargins(0, 0, 0, 0);
    m_lo = new QLineEdit;
    m_hi = new QLineEdit;
    m_count = new QSpinBox;
    m_count->setRange(1, int(kMaxSweepPoints));
    for (QLineEdit* e : {m_lo, m_hi}) e->setMaximumWidth(90);
    grid->addWidget(new QLabel(tr("from")));
    grid->addWidget(m_lo);
    grid->addWidget(new QLabel(tr("to")));
    grid->addWidget(m_hi);
    grid->addWidget(m_count);
    grid->addWidget(new QLabel(tr("points")));
    row->addWidget(m_gridBox);
    m_list = new QLineEdit(valueText(current));
    m_list->setPlaceholderText(tr("values, comma separated"));
    row->addWidget(m_list, 1);
    row->addWidget(remove);
    const double v = current.is_number() ? current.get<double>() : 0;
    if (field.type == FieldType::Float && v > 0)
        setGrid(Mode::Log, v / 10, v * 10, 5);
    else
        m_mode->setCurrentIndex(m_mode->count() - 1);  // a list, starting with the form's value
    for (QLineEdit* e : {m_lo, m_hi, m_list})
        connect(e, &QLineEdit::textChanged, this, &SweepAxisEditor::changed);
    connect(m_count, &QSpinBox::valueChanged, this, &SweepAxisEditor::changed);
    connect(m_mode, &QComboBox::currentIndexChanged, this, [this] {
        showMode();
        emit changed();
    });
    showMode();
}

SweepAxisEditor::Mode SweepAxisEditor::mode() const {
    if (!m_mode) return Mode::Choices;
    if (m_mode->currentIndex() == m_mode->count() - 1) return Mode::List;
    return m_mode->currentIndex() == 0 ? Mode::Log : Mode::Linear;
}

void SweepAxisEditor::showMode() {
    if (!m_mode) return;
    const bool list = mode() == Mode::List;
    m_gridBox->setVisible(!list);
    m_list->setVisible(list);
}

void SweepAxisEditor::setGrid(Mode mode, double lo, double hi, int points) {
    if (!m_mode || !numeric(m_field)) return;
    m_mode->setCurrentIndex(mode == Mode::Log ? 0 : 1);
    m_lo->setText(QString::number(lo, 'g', 6));
    m_hi->setText(QString::number(hi, 'g', 6));
    m_count->setValue(points);
    showMode();
}

void SweepAxisEditor::setList(const QString& commaSeparated) {
    if (!m_mode) return;
    m_mode->setCurrentIndex(m_mode->count() - 1);
    m_list->setText(commaSeparated);
    showMode();
}

void SweepAxisEditor::setChecked(const QStringList& choices) {
    for (QCheckBox* box : m_choices) box->setChecked(choices.contains(box->text()));
}

json SweepAxisEditor::spec(QString* problem) const {
    json values = json::array();
    switch (mode()) {
        case Mode::Choices:
            for (QCheckBox* box : m_choices)
                if (box->isChecked()) values.push_back(parseValue(box->text()));
            if (values.empty() && problem) *problem = tr("axis %1: tick at least one").arg(key());
            return values;
        case Mode::List: {
            const QString text = m_list->text().trimmed();
            // A JSON list as it is ([[0.9, 0.95], [0.8, 0.9]] for a pair); else commas.
            if (text.startsWith(QLatin1Char('['))) {
                const json parsed = parseValue(text);
                if (parsed.is_array()) return parsed;
            }
            for (const QString& part : text.split(QLatin1Char(','), Qt::SkipEmptyParts))
                values.push_back(parseValue(part));
            if (values.empty() && problem) *problem = tr("axis %1: give some values").arg(key());
            return values;
        }
        case Mode::Log:
        case Mode::Linear: {
            bool okLo = false, okHi = false;
            const double lo = m_lo->text().toDouble(&okLo), hi = m_hi->text().toDouble(&okHi);
            if ((!okLo || !okHi) && problem)
                *problem = tr("axis %1: “from” and “to” must be numbers").arg(key());
            const char* kind = mode() == Mode::Log ? "log" : "linear";
            return {{kind,
                     {okLo ? json(lo) : json(m_lo->text().toStdString()),
                      okHi ? json(hi) : json(m_hi->text().toStdString())}},
                    {"points", m_count->value()}};
        }
    }
    return values;
}

}  // namespace qklab::gui

// ---- the dialog ----------------------------------------------------------------------------

namespace qklab::gui {

SweepDialog::SweepDialog(const RunConfig& base, const QString& dbPath, QWidget* parent)
    : QDialog(parent), m_base(base), m_db(QFileInfo(dbPath).absoluteFilePath()) {
    setWindowTitle(tr("New sweep from the form"));
    m_launch = startDetachedCli;
    auto* v = new QVBoxLayout(this);
    auto* intro =
        new QLabel(tr("The set-up form's config is the base of every point. Pick the "
                      "keys to vary; the grid is every combination of their values "
                      "and the seeds. The sweep runs in the background "
                      "(qklab-cli) and keeps running when the app closes."));
    intro->setWordWrap(true);
    v->addWidget(intro);
    v->addLayout(buildDetails());
    v->addWidget(buildAxesBox());
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
    resize(760, 520);
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

// The axes: a key picker and Add, then one editor per axis.
QGroupBox* SweepDialog::buildAxesBox() {
    auto* axesBox = new QGroupBox(tr("Axes"));
    auto* axesV = new QVBoxLayout(axesBox);
    auto* pick = new QHBoxLayout;
    m_keys = new QComboBox;
    m_keys->setObjectName(QStringLiteral("sweepKeyPicker"));
    for (const FieldInfo& f : configFields()) {
        if (f.key == "run.seed" || f.key == "why") continue;  // seeds above; why is a note
        m_keys->addItem(QStringLiteral("%1 — %2").arg(QString::fromStdString(f.key),
                                                      QString::fromStdString(f.label)),
                        QString::fromStdString(f.key));
    }
    m_keys->setCurrentIndex(std::max(0, m_keys->findData(QStringLiteral("attention.qk_norm"))));
    auto* add = new QPushButton(tr("Add axis"));
    connect(add, &QPushButton::clicked, this, &SweepDialog::addChosenAxis);
    pick->addWidget(m_keys, 1);
    pick->addWidget(add);
    axesV->addLayout(pick);
    m_axesLayout = new QVBoxLayout;
    axesV->addLayout(m_axesLayout);
    return axesBox;
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
    scheduleRevalidate();
    return editor;
}

void SweepDialog::removeAxis(const QString& key) {
    SweepAxisEditor* editor = axis(key);
    if (!editor) return;
    m_axes.erase(std::find(m_axes.begin(), m_axes.end(), editor));
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
    json seeds = json::array();
    for (const QString& part : m_seeds->text().split(QLatin1Char(','), Qt::SkipEmptyParts))
        seeds.push_back(parseValue(part));
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

QString SweepDialog::describeGrid(const json& definition) const {
    QStringList parts;
    for (const auto& [key, values] : definition["axes"].items())
        parts << tr("%1 × %2")
                     .arg(values.size())
                     .arg(QString::fromStdString(key).section(QLatin1Char('.'), -1));
    if (definition.contains("seeds"))
        parts << tr("%n seed(s)", nullptr, int(definition["seeds"].size()));
    return parts.join(QStringLiteral(" · "));
}

void SweepDialog::revalidate() {
    m_points = -1;
    m_error.clear();
    QString problem;
    for (SweepAxisEditor* a : m_axes)
        if (problem.isEmpty()) a->spec(&problem);
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
