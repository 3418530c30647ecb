// config_form.cpp — building editors from FieldInfo and converting between editors and JSON.
#include "setup/config_form.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QRegularExpression>
#include <QScrollArea>
#include <QSpinBox>
#include <QStackedWidget>
#include <QTimer>
#include <QVBoxLayout>
#include <climits>
#include <cmath>

#include "common/theme.h"
#include "qklab/config/corpus.h"
#include "qklab/config/resources.h"
#include "qklab/util/error.h"

namespace qklab::gui {

using nlohmann::json;

namespace {

QString numberText(double v) {
    return QString::number(v, 'g', 10);
}

bool parseDouble(const QString& text, double* out) {
    bool ok = false;
    const double v = text.trimmed().toDouble(&ok);
    if (!ok || !std::isfinite(v)) return false;
    *out = v;
    return true;
}

// The estimate's parts, for the status line's tooltip.
QString memoryTip(const RunConfig& c) {
    const MemoryEstimate m = estimateMemory(c);
    const auto b = [](double bytes) { return QString::fromStdString(formatBytes(bytes)); };
    QString tip = QObject::tr(
                      "Memory a training step needs, estimated from the config:\n"
                      "parameters %1 (%2 values), gradients %3, AdamW state %4,\n"
                      "activations %5, attention %6, logits %7,\n"
                      "causal mask and tables %8, data %9, validation %10")
                      .arg(b(m.parameters), QString::number(m.parameterCount, 'g', 4),
                           b(m.gradients), b(m.optimizer), b(m.activations), b(m.attention),
                           b(m.logits), b(m.buffers), b(m.data))
                      .arg(b(m.validation));
    const double limit = memoryLimitBytes(c);
    if (limit <= 0)
        tip += QObject::tr("\nnot checked: run.device = cuda and run.max_memory = 0");
    else if (c.run.maxMemoryGiB > 0)
        tip += QObject::tr("\nlimit %1 (run.max_memory)").arg(b(limit));
    else
        tip += QObject::tr("\nlimit %1 (this machine's available memory)").arg(b(limit));
    return tip;
}

// Problems in red, warnings in orange; a valid config gets the green line with d_head, the
// logit scale and the memory the run needs (on a line of its own below any warnings).
QString messagesHtml(const RunConfig& c, const QStringList& problems, const QStringList& warnings) {
    QString html;
    for (const QString& p : problems)
        html += QStringLiteral("<div style='color:#b00000'>✖ %1</div>").arg(p.toHtmlEscaped());
    for (const QString& w : warnings)
        html += QStringLiteral("<div style='color:#a06000'>⚠ %1</div>").arg(w.toHtmlEscaped());
    if (!problems.isEmpty()) return html;
    const QString need = QStringLiteral("≈ %1 to train")
                             .arg(QString::fromStdString(formatBytes(estimateMemory(c).total)));
    if (!warnings.isEmpty())
        return html + QStringLiteral("<div style='color:#505050'>%1</div>").arg(need);
    return QStringLiteral("<div style='color:#2a7a2a'>✔ config is valid (%1, s %2) · %3</div>")
        .arg(c.attention.kind == AttentionKind::Mla
                 ? QStringLiteral("MLA, d_head %1 + d_rope %2, latent %3")
                       .arg(c.model.nHeads > 0 ? c.dHead() : 0)
                       .arg(c.attention.mla.dRope)
                       .arg(c.attention.mla.dC)
                 : QStringLiteral("d_head %1").arg(c.model.nHeads > 0 ? c.dHead() : 0))
        .arg(c.model.nHeads > 0 ? c.logitScale() : 0.0, 0, 'g', 4)
        .arg(need);
}

}  // namespace

ConfigForm::ConfigForm(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    // Group list on the left, the group's fields on the right (a settings-dialog layout): all
    // groups stay visible and the fields get the full height of the dock.
    auto* body = new QHBoxLayout;
    m_groups = new QListWidget;
    m_groups->setObjectName(QStringLiteral("configGroups"));
    m_groups->setMaximumWidth(150);
    m_groups->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_groups->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Expanding);
    m_pages = new QStackedWidget;
    body->addWidget(m_groups);
    body->addWidget(m_pages, 1);
    layout->addLayout(body, 1);
    connect(m_groups, &QListWidget::currentRowChanged, m_pages, &QStackedWidget::setCurrentIndex);

    // Groups in registry order: the engine decides what belongs together.
    QMap<QString, QFormLayout*> forms;
    QStringList order;
    for (const FieldInfo& f : configFields()) {
        const QString group = QString::fromStdString(f.group);
        if (!forms.contains(group)) {
            forms[group] = addGroupPage(group);
            order << group;
        }
        addField(f, forms[group]);
    }
    addEventsEditor(forms.value(QStringLiteral("Data & events"), nullptr));

    // Bold labels carry meaning; say which.
    auto* legend = new QLabel(tr("<b>Bold</b> labels: changed from the default"));
    legend->setObjectName(QStringLiteral("boldLegend"));
    legend->setStyleSheet(QStringLiteral("color: palette(mid);"));
    layout->addWidget(legend);

    m_messages = new QLabel(this);
    m_messages->setWordWrap(true);
    m_messages->setTextFormat(Qt::RichText);
    m_messages->setObjectName(QStringLiteral("validationMessages"));
    layout->addWidget(m_messages);

    m_revalidateTimer = new QTimer(this);
    m_revalidateTimer->setSingleShot(true);
    m_revalidateTimer->setInterval(120);
    connect(m_revalidateTimer, &QTimer::timeout, this, &ConfigForm::revalidateNow);

    setConfig(RunConfig{});
    m_groups->setCurrentRow(0);  // "Preset": where a new user starts
}

QFormLayout* ConfigForm::addGroupPage(const QString& group) {
    auto* page = new QWidget;
    auto* form = new QFormLayout(page);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    form->setLabelAlignment(Qt::AlignRight);
    auto* scroll = new QScrollArea;
    scroll->setWidget(page);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    m_pages->addWidget(scroll);
    m_groups->addItem(group);
    return form;
}

// One row: the registry's human label (and unit), an editor, and a tooltip with the help
// text, the range and the dotted key for people who script.
void ConfigForm::addField(const FieldInfo& f, QFormLayout* form) {
    const QString key = QString::fromStdString(f.key);
    QWidget* editor = createEditor(f);
    editor->setObjectName(key);
    QString tip = QString::fromStdString(f.help);
    if ((f.type == FieldType::Float || f.type == FieldType::Int) && f.maxValue > f.minValue)
        tip += QStringLiteral("\nrange %1 … %2").arg(f.minValue).arg(f.maxValue);
    tip += QStringLiteral("\nkey: %1").arg(key);
    editor->setToolTip(tip);
    QString text = QString::fromStdString(f.label.empty() ? f.key : f.label);
    if (!f.unit.empty()) text += QStringLiteral(" (%1)").arg(QString::fromStdString(f.unit));
    auto* label = new QLabel(text);
    label->setToolTip(tip);
    form->addRow(label, editor);
    m_editors[key] = editor;
    m_labels[key] = label;
}

// Events are a list, not a registry field: edited as the same JSON the presets use, with the
// placeholder and the tooltip written by the event registry.
void ConfigForm::addEventsEditor(QFormLayout* form) {
    if (!form) form = addGroupPage(QStringLiteral("Data & events"));
    m_events = new QPlainTextEdit;
    m_events->setObjectName(QStringLiteral("events"));
    std::string examples;
    for (const auto& k : eventKinds())
        if (k.kind == EventKind::ContextLength || k.kind == EventKind::QkNorm)
            examples +=
                (examples.empty() ? "" : ",\n ") + eventText(eventFromJson(k.example, k.name));
    m_events->setPlaceholderText(QString::fromStdString("[" + examples + "]"));
    QString tip =
        tr("Timed events as a JSON list; each is {\"step\": N, \"kind\": ..., its parameters}:");
    for (const auto& k : eventKinds()) {
        QStringList params;
        for (const auto& p : k.params)
            params << QStringLiteral("\"%1\"%2 %3")
                          .arg(QString::fromStdString(p.key),
                               p.required ? QString() : tr(" (optional)"),
                               QString::fromStdString(p.help));
        tip += QStringLiteral("\n\n%1: %2\n  e.g. %3")
                   .arg(QString::fromStdString(k.name), QString::fromStdString(k.help),
                        QString::fromStdString(eventText(eventFromJson(k.example, k.name))));
        if (!params.isEmpty()) tip += QStringLiteral("\n  ") + params.join(QStringLiteral("; "));
    }
    m_events->setToolTip(tip);
    m_events->setFixedHeight(90);
    auto* label = new QLabel(tr("Timed events"));
    label->setToolTip(tip);
    form->addRow(label, m_events);
    connect(m_events, &QPlainTextEdit::textChanged, this, &ConfigForm::scheduleRevalidate);
}

QWidget* ConfigForm::createEditor(const FieldInfo& f) {
    switch (f.type) {
        case FieldType::Bool: {
            auto* box = new QCheckBox;
            connect(box, &QCheckBox::toggled, this, &ConfigForm::scheduleRevalidate);
            return box;
        }
        case FieldType::Int: {
            auto* spin = new QSpinBox;
            spin->setRange(
                f.minValue < f.maxValue ? int(std::max<double>(f.minValue, INT_MIN)) : 0,
                f.minValue < f.maxValue ? int(std::min<double>(f.maxValue, INT_MAX)) : INT_MAX);
            spin->setAccelerated(true);
            connect(spin, &QSpinBox::valueChanged, this, &ConfigForm::scheduleRevalidate);
            return spin;
        }
        case FieldType::Choice: {
            auto* combo = new QComboBox;
            for (const auto& c : f.choices) combo->addItem(QString::fromStdString(c));
            connect(combo, &QComboBox::currentIndexChanged, this, &ConfigForm::scheduleRevalidate);
            return combo;
        }
        case FieldType::Scale: {
            auto* combo = new QComboBox;
            combo->setEditable(true);
            combo->addItem(QStringLiteral("inv_sqrt_d"));
            connect(combo, &QComboBox::currentTextChanged, this, &ConfigForm::scheduleRevalidate);
            return combo;
        }
        case FieldType::Float:
        case FieldType::Text:
        case FieldType::FloatPair:
        default: {
            auto* edit = new QLineEdit;
            if (f.type == FieldType::FloatPair)
                edit->setPlaceholderText(QStringLiteral("0.9, 0.95"));
            connect(edit, &QLineEdit::textChanged, this, &ConfigForm::scheduleRevalidate);
            return edit;
        }
    }
}

void ConfigForm::setEditorValue(const FieldInfo& f, const json& v) {
    QWidget* w = m_editors.value(QString::fromStdString(f.key));
    if (!w) return;
    switch (f.type) {
        case FieldType::Bool:
            static_cast<QCheckBox*>(w)->setChecked(v.is_boolean() && v.get<bool>());
            break;
        case FieldType::Int:
            static_cast<QSpinBox*>(w)->setValue(v.is_number() ? int(v.get<double>()) : 0);
            break;
        case FieldType::Choice: {
            auto* combo = static_cast<QComboBox*>(w);
            combo->setCurrentIndex(combo->findText(QString::fromStdString(v.get<std::string>())));
            break;
        }
        case FieldType::Scale:
            static_cast<QComboBox*>(w)->setCurrentText(
                v.is_number() ? numberText(v.get<double>())
                              : QString::fromStdString(v.get<std::string>()));
            break;
        case FieldType::FloatPair: {
            QStringList parts;
            for (const auto& x : v) parts << numberText(x.get<double>());
            static_cast<QLineEdit*>(w)->setText(parts.join(QStringLiteral(", ")));
            break;
        }
        case FieldType::Float:
            static_cast<QLineEdit*>(w)->setText(numberText(v.get<double>()));
            break;
        case FieldType::Text:
        default:
            static_cast<QLineEdit*>(w)->setText(QString::fromStdString(v.get<std::string>()));
            break;
    }
}

bool ConfigForm::editorValue(const FieldInfo& f, json* value, QString* error) const {
    QWidget* w = m_editors.value(QString::fromStdString(f.key));
    switch (f.type) {
        case FieldType::Bool:
            *value = static_cast<QCheckBox*>(w)->isChecked();
            return true;
        case FieldType::Int:
            *value = int64_t(static_cast<QSpinBox*>(w)->value());
            return true;
        case FieldType::Choice:
            *value = static_cast<QComboBox*>(w)->currentText().toStdString();
            return true;
        case FieldType::Scale: {
            const QString text = static_cast<QComboBox*>(w)->currentText().trimmed();
            double d = 0;
            if (text.isEmpty() || text == QLatin1String("inv_sqrt_d")) {
                *value = "inv_sqrt_d";
            } else if (parseDouble(text, &d)) {
                *value = d;
            } else {
                *error = QStringLiteral("\"%1\" is not a number or inv_sqrt_d").arg(text);
                return false;
            }
            return true;
        }
        case FieldType::FloatPair: {
            const QStringList parts = static_cast<QLineEdit*>(w)->text().split(
                QRegularExpression(QStringLiteral("[,\\s]+")), Qt::SkipEmptyParts);
            double a = 0, b = 0;
            if (parts.size() != 2 || !parseDouble(parts[0], &a) || !parseDouble(parts[1], &b)) {
                *error = QStringLiteral("expected two numbers like \"0.9, 0.95\"");
                return false;
            }
            *value = json::array({a, b});
            return true;
        }
        case FieldType::Float: {
            const QString text = static_cast<QLineEdit*>(w)->text();
            double d = 0;
            if (!parseDouble(text, &d)) {
                *error = QStringLiteral("\"%1\" is not a number").arg(text);
                return false;
            }
            *value = d;
            return true;
        }
        case FieldType::Text:
        default:
            *value = static_cast<QLineEdit*>(w)->text().toStdString();
            return true;
    }
}

RunConfig ConfigForm::config(QStringList* problems) const {
    RunConfig c;
    for (const FieldInfo& f : configFields()) {
        const QString key = QString::fromStdString(f.key);
        json v;
        QString error;
        if (!editorValue(f, &v, &error)) {
            if (problems) problems->append(QStringLiteral("%1: %2").arg(key, error));
            continue;
        }
        try {
            f.set(c, v);
        } catch (const std::exception& e) {
            if (problems) problems->append(QString::fromStdString(e.what()));
        }
    }
    const QString eventsText = m_events->toPlainText().trimmed();
    if (!eventsText.isEmpty()) {
        try {
            // Read without value checks: an event's step is checked against this form's
            // schedule.steps below (validationProblems), not against the defaults'.
            // Through the same reader as presets: nesting, size and duplicate-key limits.
            const RunConfig withEvents = configFromJsonText(
                "{\"events\": " + eventsText.toStdString() + "\n}", "the events list", false);
            c.events = withEvents.events;
        } catch (const std::exception& e) {
            if (problems) problems->append(QString::fromStdString(e.what()));
        }
    }
    return c;
}

void ConfigForm::setConfig(const RunConfig& c) {
    m_loading = true;
    for (const FieldInfo& f : configFields()) setEditorValue(f, f.get(c));
    const json j = configToJson(c);
    m_events->setPlainText(j.contains("events") && !j["events"].empty()
                               ? QString::fromStdString(j["events"].dump(1))
                               : QString());
    m_loading = false;
    revalidateNow();  // emits configChanged
}

void ConfigForm::scheduleRevalidate() {
    if (!m_loading) m_revalidateTimer->start();
}

void ConfigForm::revalidateNow() {
    m_revalidateTimer->stop();
    QStringList problems;
    const RunConfig c = config(&problems);
    const RunConfig defaults;
    // Rule breaks ("optim.lr = -1: must be in (0, 1]") as well as text that does not parse
    // ("abc"): both mark their editor red.
    for (const auto& p : validationProblems(c)) problems << QString::fromStdString(p);
    // Highlight the editors a problem names; bold the labels of non-default fields.
    for (const FieldInfo& f : configFields()) {
        const QString key = QString::fromStdString(f.key);
        // The key as a whole word: "optim.lr" is not named by "optim.lr_min".
        const QRegularExpression named(QStringLiteral("(^|[^a-z_.])") +
                                       QRegularExpression::escape(key) +
                                       QStringLiteral("($|[^a-z_])"));
        bool bad = false;
        for (const QString& p : problems) bad = bad || p.contains(named);
        markInvalid(m_editors[key], bad);
        QFont font = m_labels[key]->font();
        font.setBold(f.get(c) != f.get(defaults));
        m_labels[key]->setFont(font);
    }
    // What would fail only once the run is built block Start the same way: a data.source that
    // is no readable text file (a FIFO would hang the worker) and a run this machine's memory
    // (or run.max_memory) cannot hold. Both are a stat and some arithmetic: no allocation.
    for (const std::string& p : {dataSourceProblem(c.data.source), memoryProblem(c)})
        if (!p.empty()) problems << QString::fromStdString(p);
    QStringList warnings;
    for (const auto& w : configWarnings(c)) warnings << QString::fromStdString(w);
    m_problems = problems;
    m_warnings = warnings;
    m_messages->setText(messagesHtml(c, problems, warnings));
    m_messages->setToolTip(problems.isEmpty() ? memoryTip(c) : QString());

    const bool valid = problems.isEmpty();
    if (!m_loading) emit configChanged();
    if (valid != m_lastValid) {
        m_lastValid = valid;
        emit validityChanged(valid);
    }
}

}  // namespace qklab::gui
