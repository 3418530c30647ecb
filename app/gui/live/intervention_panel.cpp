// intervention_panel.cpp — one row per event kind of the registry: a label, an editor per
// parameter (spin box, combo box or line edit by the parameter's type), and an action button.
#include "live/intervention_panel.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>

#include "common/plot_style.h"
#include "common/run_controller.h"
#include "common/run_data.h"

namespace qklab::gui {

namespace {

QWidget* editorFor(const EventParamInfo& p, const nlohmann::json& initial) {
    QWidget* w = nullptr;
    switch (p.type) {
        case FieldType::Float: {
            auto* box = new QDoubleSpinBox;
            box->setDecimals(3);
            box->setRange(p.minValue, p.maxValue);
            box->setValue(initial.is_number() ? initial.get<double>() : 1.0);
            w = box;
            break;
        }
        case FieldType::Int: {
            auto* box = new QSpinBox;
            box->setRange(int(p.minValue), int(std::min(p.maxValue, 2e9)));
            box->setValue(initial.is_number() ? int(initial.get<double>()) : int(p.minValue));
            w = box;
            break;
        }
        case FieldType::Choice: {
            auto* box = new QComboBox;
            for (const auto& c : p.choices) box->addItem(QString::fromStdString(c));
            if (initial.is_string())
                box->setCurrentText(QString::fromStdString(initial.get<std::string>()));
            w = box;
            break;
        }
        case FieldType::Text:
        case FieldType::Bool:  // no event parameter has these form types: a text box
        case FieldType::FloatPair:
        case FieldType::Scale: {
            auto* edit = new QLineEdit;
            edit->setPlaceholderText(QStringLiteral("(%1)").arg(QString::fromStdString(p.help)));
            w = edit;
        }
    }
    w->setObjectName(QString::fromStdString(p.key));
    w->setToolTip(QString::fromStdString(p.key + ": " + p.help));
    return w;
}

nlohmann::json valueOf(const QWidget* w) {
    if (auto* d = qobject_cast<const QDoubleSpinBox*>(w)) return d->value();
    if (auto* i = qobject_cast<const QSpinBox*>(w)) return int64_t(i->value());
    if (auto* c = qobject_cast<const QComboBox*>(w)) return c->currentText().toStdString();
    if (auto* e = qobject_cast<const QLineEdit*>(w)) return e->text().toStdString();
    return {};
}

}  // namespace

InterventionPanel::InterventionPanel(RunController* controller, QWidget* parent)
    : QWidget(parent), m_controller(controller) {
    auto* grid = new QGridLayout(this);
    int row = 0;
    for (const auto& info : eventKinds()) addRow(info, grid, row++);

    m_status = new QLabel(tr("Interventions apply to the training run."));
    m_status->setWordWrap(true);
    m_status->setObjectName(QStringLiteral("interventionStatus"));
    grid->addWidget(m_status, row++, 0, 1, 3);
    grid->setColumnStretch(1, 1);
    grid->setRowStretch(row, 1);

    connect(m_controller, &RunController::started, this, [this](qint64 runId) {
        m_outsideQklab.clear();  // the views show the new run, which qklab trains
        limitToModel(m_controller->activeRequest().config);
        refreshEnabled();
        // "Posted: ..." belonged to the previous run.
        m_status->setText(tr("Interventions apply to run %1.").arg(runId));
    });
    connect(m_controller, &RunController::queueChanged, this, &InterventionPanel::refreshEnabled);
    connect(m_controller, &RunController::finished, this, [this] { refreshEnabled(); });
    refreshEnabled();
}

void InterventionPanel::addRow(const EventKindInfo& info, QGridLayout* grid, int row) {
    Row r;
    r.kind = info.kind;
    auto* label = new QLabel(QString::fromStdString(info.title));
    label->setToolTip(QString::fromStdString(info.name + ": " + info.help));
    grid->addWidget(label, row, 0);
    auto* editors = new QHBoxLayout;
    editors->setContentsMargins(0, 0, 0, 0);
    for (const auto& p : info.params) {
        // The registry's example event holds a sensible value for every parameter.
        QWidget* w = editorFor(p, info.example.value(p.key, nlohmann::json()));
        editors->addWidget(w, 1);
        r.editors.push_back(w);
    }
    grid->addLayout(editors, row, 1);
    r.button = new QPushButton(QString::fromStdString(info.action));
    r.button->setObjectName(QString::fromStdString(info.action));
    r.button->setToolTip(QString::fromStdString(info.help));
    const EventKind kind = info.kind;
    connect(r.button, &QPushButton::clicked, this, [this, kind] { post(eventFor(kind)); });
    grid->addWidget(r.button, row, 2);
    m_rows.push_back(r);
}

// Mid-run bounds that depend on the model (a context switch cannot exceed the positions the
// model was built for).
void InterventionPanel::limitToModel(const RunConfig& config) {
    for (auto& r : m_rows) {
        const auto& params = eventKindInfo(r.kind).params;
        for (size_t i = 0; i < params.size(); ++i) {
            if (!params[i].interventionMax) continue;
            const int max = int(params[i].interventionMax(config));
            if (auto* box = qobject_cast<QSpinBox*>(r.editors[i])) {
                box->setMaximum(max);
                box->setToolTip(tr("%1 (up to %2 for this model; longer switches belong in the "
                                   "preset's events)")
                                    .arg(QString::fromStdString(params[i].help))
                                    .arg(max));
            }
        }
    }
}

Event InterventionPanel::eventFor(EventKind kind) const {
    const auto& info = eventKindInfo(kind);
    nlohmann::json j = {{"step", 0}, {"kind", info.name}};
    for (const auto& r : m_rows) {
        if (r.kind != kind) continue;
        for (size_t i = 0; i < info.params.size(); ++i) {
            const auto v = valueOf(r.editors[i]);
            if (v.is_string() && v.get<std::string>().empty() && !info.params[i].required) continue;
            j[info.params[i].key] = v;
        }
    }
    Event e;
    e.kind = kind;
    try {
        e = eventFromJson(j, info.name);
    } catch (const std::exception&) {
        // The editors keep values in range; post() reports anything else the trainer refuses.
    }
    e.source = EventSource::User;
    return e;
}

void InterventionPanel::setParam(EventKind kind, const std::string& key,
                                 const nlohmann::json& value) {
    const auto& params = eventKindInfo(kind).params;
    for (auto& r : m_rows) {
        if (r.kind != kind) continue;
        for (size_t i = 0; i < params.size(); ++i) {
            if (params[i].key != key) continue;
            QWidget* w = r.editors[i];
            if (auto* d = qobject_cast<QDoubleSpinBox*>(w)) d->setValue(value.get<double>());
            if (auto* s = qobject_cast<QSpinBox*>(w)) s->setValue(int(value.get<double>()));
            if (auto* c = qobject_cast<QComboBox*>(w))
                c->setCurrentText(QString::fromStdString(value.get<std::string>()));
            if (auto* e = qobject_cast<QLineEdit*>(w))
                e->setText(QString::fromStdString(value.get<std::string>()));
        }
    }
}

bool InterventionPanel::post(const Event& event) {
    const EventRecord shown{0, nameOf(event.kind), eventParamsJson(event).dump(), "user"};
    QString error;
    if (!m_controller->intervene(event, &error)) {
        m_status->setText(
            tr("<span style='color:#b00000'>Not applied: %1</span>").arg(error.toHtmlEscaped()));
        return false;
    }
    m_status->setText(
        tr("Posted: %1 (applies at the next step, stored as an event)").arg(eventLabel(shown)));
    emit posted(event);
    return true;
}

void InterventionPanel::setShownRun(const RunInfo& info) {
    const QString reason = outsideQklabReason(info, tr("intervene in"));
    if (reason == m_outsideQklab) return;
    if (m_outsideQklab.isEmpty()) m_statusBefore = m_status->text();
    m_outsideQklab = reason;
    m_status->setText(reason.isEmpty() ? m_statusBefore : reason);
    refreshEnabled();
}

QString InterventionPanel::statusText() const {
    return m_status->text();
}

QPushButton* InterventionPanel::button(EventKind kind) const {
    for (const auto& r : m_rows)
        if (r.kind == kind) return r.button;
    return nullptr;
}

void InterventionPanel::refreshEnabled() {
    const bool busy = m_controller->isBusy();
    for (const auto& r : m_rows) {
        r.button->setEnabled(busy && m_outsideQklab.isEmpty());
        r.button->setToolTip(m_outsideQklab.isEmpty()
                                 ? QString::fromStdString(eventKindInfo(r.kind).help)
                                 : m_outsideQklab);
    }
}

}  // namespace qklab::gui
