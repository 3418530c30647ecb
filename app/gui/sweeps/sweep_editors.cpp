// sweep_editors.cpp — an axis row and a fixed-value row of the New sweep dialog.
#include "sweeps/sweep_editors.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>
#include <QToolButton>

#include "common/theme.h"
#include "qklab/config/sweep.h"

namespace qklab::gui {

using nlohmann::json;

namespace {

bool numeric(const FieldInfo& f) {
    return f.type == FieldType::Float || f.type == FieldType::Int;
}

bool ticked(const FieldInfo& f) {
    return f.type == FieldType::Choice || f.type == FieldType::Bool;
}

QLabel* keyLabel(const FieldInfo& field) {
    auto* name = new QLabel(QStringLiteral("<b>%1</b>").arg(QString::fromStdString(field.key)));
    name->setToolTip(QString::fromStdString(field.label + ": " + field.help));
    name->setMinimumWidth(150);
    return name;
}

QToolButton* removeButton(const QString& tip) {
    auto* remove = new QToolButton;
    remove->setText(QStringLiteral("✕"));
    remove->setToolTip(tip);
    return remove;
}

}  // namespace

json parseSweepValue(const QString& text) {
    const std::string s = text.trimmed().toStdString();
    const json parsed = json::parse(s, nullptr, /*allow_exceptions=*/false);
    return parsed.is_discarded() ? json(s) : parsed;
}

QString sweepValueText(const json& v) {
    return v.is_string() ? QString::fromStdString(v.get<std::string>())
                         : QString::fromStdString(v.dump());
}

// ---- one axis ------------------------------------------------------------------------------

SweepAxisEditor::SweepAxisEditor(const FieldInfo& field, const json& current, QWidget* parent)
    : QWidget(parent), m_field(field) {
    auto* row = new QHBoxLayout(this);
    row->setContentsMargins(0, 0, 0, 0);
    m_zip = new QCheckBox(tr("zip ↑"));
    m_zip->setObjectName(QStringLiteral("sweepZip"));
    m_zip->setToolTip(
        tr("Zip with the axis above: their values move together (the first "
           "with the first, …) as one dimension of the grid instead of every "
           "combination. Zipped axes need the same number of values."));
    connect(m_zip, &QCheckBox::toggled, this, &SweepAxisEditor::changed);
    row->addWidget(m_zip);
    row->addWidget(keyLabel(field));
    m_mode = new QComboBox;
    if (numeric(field)) {
        m_mode->addItem(tr("log grid"), int(Mode::Log));
        m_mode->addItem(tr("linear grid"), int(Mode::Linear));
    }
    if (ticked(field)) m_mode->addItem(tr("ticks"), int(Mode::Choices));
    m_mode->addItem(tr("list"), int(Mode::List));
    row->addWidget(m_mode);
    m_choiceBox = new QWidget;
    buildChoices(m_choiceBox, current);
    row->addWidget(m_choiceBox, 1);
    m_gridBox = new QWidget;
    buildGrid(m_gridBox);
    row->addWidget(m_gridBox);
    m_list = new QLineEdit(sweepValueText(current));
    m_list->setPlaceholderText(tr("values, comma separated"));
    connect(m_list, &QLineEdit::textChanged, this, &SweepAxisEditor::changed);
    row->addWidget(m_list, 1);
    QToolButton* remove = removeButton(tr("Remove this axis"));
    connect(remove, &QToolButton::clicked, this, &SweepAxisEditor::removeRequested);
    row->addWidget(remove);
    const double v = current.is_number() ? current.get<double>() : 0;
    if (field.type == FieldType::Float && v > 0)
        setGrid(Mode::Log, v / 10, v * 10, 5);
    else
        setMode(ticked(field) ? Mode::Choices : Mode::List);  // starting with the form's value
    connect(m_mode, &QComboBox::currentIndexChanged, this, [this] {
        showMode();
        emit changed();
    });
    showMode();
}

// A choice or bool key: one tick per value, the form's value ticked.
void SweepAxisEditor::buildChoices(QWidget* box, const json& current) {
    auto* row = new QHBoxLayout(box);
    row->setContentsMargins(0, 0, 0, 0);
    if (!ticked(m_field)) return;
    const std::vector<std::string> names = m_field.type == FieldType::Bool
                                               ? std::vector<std::string>{"false", "true"}
                                               : m_field.choices;
    for (const std::string& c : names) {
        auto* tick = new QCheckBox(QString::fromStdString(c));
        tick->setChecked(sweepValueText(current) == tick->text());
        connect(tick, &QCheckBox::toggled, this, &SweepAxisEditor::changed);
        m_choices.push_back(tick);
        row->addWidget(tick);
    }
    row->addStretch(1);
}

// A numeric key: from, to and the number of points of a log or linear grid.
void SweepAxisEditor::buildGrid(QWidget* box) {
    auto* grid = new QHBoxLayout(box);
    grid->setContentsMargins(0, 0, 0, 0);
    m_lo = new QLineEdit;
    m_hi = new QLineEdit;
    m_count = new QSpinBox;
    m_count->setRange(1, int(kMaxSweepPoints));
    for (QLineEdit* e : {m_lo, m_hi}) {
        e->setMaximumWidth(90);
        connect(e, &QLineEdit::textChanged, this, &SweepAxisEditor::changed);
    }
    connect(m_count, &QSpinBox::valueChanged, this, &SweepAxisEditor::changed);
    grid->addWidget(new QLabel(tr("from")));
    grid->addWidget(m_lo);
    grid->addWidget(new QLabel(tr("to")));
    grid->addWidget(m_hi);
    grid->addWidget(m_count);
    grid->addWidget(new QLabel(tr("points")));
}

SweepAxisEditor::Mode SweepAxisEditor::mode() const {
    return Mode(m_mode->currentData().toInt());
}

void SweepAxisEditor::setMode(Mode mode) {
    const int index = m_mode->findData(int(mode));
    if (index >= 0) m_mode->setCurrentIndex(index);
    showMode();
}

void SweepAxisEditor::showMode() {
    const Mode m = mode();
    m_gridBox->setVisible(m == Mode::Log || m == Mode::Linear);
    m_choiceBox->setVisible(m == Mode::Choices);
    m_list->setVisible(m == Mode::List);
}

void SweepAxisEditor::setGrid(Mode mode, double lo, double hi, int points) {
    if (!numeric(m_field) || (mode != Mode::Log && mode != Mode::Linear)) return;
    m_lo->setText(QString::number(lo, 'g', 6));
    m_hi->setText(QString::number(hi, 'g', 6));
    m_count->setValue(points);
    setMode(mode);
}

void SweepAxisEditor::setList(const QString& commaSeparated) {
    m_list->setText(commaSeparated);
    setMode(Mode::List);
}

void SweepAxisEditor::setChecked(const QStringList& choices) {
    for (QCheckBox* tick : m_choices) tick->setChecked(choices.contains(tick->text()));
    setMode(Mode::Choices);
}

bool SweepAxisEditor::zipWithPrevious() const {
    return m_zip->isEnabled() && m_zip->isChecked();
}

void SweepAxisEditor::setZipWithPrevious(bool zip) {
    m_zip->setChecked(zip);
}

void SweepAxisEditor::setZipAllowed(bool allowed) {
    if (m_zip->isEnabled() == allowed) return;
    m_zip->setEnabled(allowed);
    emit changed();  // a ticked row that became the first no longer zips
}

json SweepAxisEditor::spec(QString* problem) const {
    json values = json::array();
    switch (mode()) {
        case Mode::Choices:
            for (QCheckBox* tick : m_choices)
                if (tick->isChecked()) values.push_back(parseSweepValue(tick->text()));
            if (values.empty() && problem) *problem = tr("axis %1: tick at least one").arg(key());
            return values;
        case Mode::List: {
            const QString text = m_list->text().trimmed();
            // A JSON list as it is ([[0.9, 0.95], [0.8, 0.9]] for a pair); else commas.
            if (text.startsWith(QLatin1Char('['))) {
                const json parsed = parseSweepValue(text);
                if (parsed.is_array()) return parsed;
            }
            for (const QString& part : text.split(QLatin1Char(','), Qt::SkipEmptyParts))
                values.push_back(parseSweepValue(part));
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

// ---- one fixed value -----------------------------------------------------------------------

SweepSetEditor::SweepSetEditor(const FieldInfo& field, const RunConfig& base, QWidget* parent)
    : QWidget(parent), m_field(field), m_base(base) {
    auto* row = new QHBoxLayout(this);
    row->setContentsMargins(0, 0, 0, 0);
    row->addWidget(keyLabel(field));
    row->addWidget(new QLabel(QStringLiteral("=")));
    m_value = new QLineEdit(sweepValueText(field.get(base)));
    m_value->setObjectName(QStringLiteral("sweepSetValue"));
    row->addWidget(m_value, 1);
    QToolButton* remove = removeButton(tr("Remove this fixed value"));
    connect(remove, &QToolButton::clicked, this, &SweepSetEditor::removeRequested);
    row->addWidget(remove);
    connect(m_value, &QLineEdit::textChanged, this, [this] {
        check();
        emit changed();
    });
    check();
}

void SweepSetEditor::setValueText(const QString& text) {
    m_value->setText(text);
}

json SweepSetEditor::value() const {
    return parseSweepValue(m_value->text());
}

// The core's override parser decides, on a copy of the base: what `--set` would refuse.
void SweepSetEditor::check() {
    m_problem.clear();
    RunConfig c = m_base;
    try {
        applyOverride(c, m_field.key + "=" + m_value->text().trimmed().toStdString());
    } catch (const std::exception& e) {
        m_problem = tr("Fixed value: %1").arg(QString::fromStdString(e.what()));
    }
    markInvalid(m_value, isInvalid());
    m_value->setToolTip(
        isInvalid() ? m_problem
                    : tr("The value every point gets, as `--set %1=value` reads it").arg(key()));
}

}  // namespace qklab::gui
