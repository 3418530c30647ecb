// intervention_panel.cpp — one row per intervention kind; choices come from the registry.
#include "intervention_panel.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QGridLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>

#include "plot_style.h"
#include "run_controller.h"

namespace qklab::gui {

namespace {
QStringList choicesOf(const char* key, const QStringList& fallback) {
    const FieldInfo* f = findField(key);
    if (!f || f->choices.empty()) return fallback;
    QStringList out;
    for (const auto& c : f->choices) out << QString::fromStdString(c);
    return out;
}
}  // namespace

InterventionPanel::InterventionPanel(RunController* controller, QWidget* parent)
    : QWidget(parent), m_controller(controller) {
    auto* grid = new QGridLayout(this);
    int row = 0;
    auto addButton = [&](const QString& text, const QString& tip, std::function<Event()> make) {
        auto* b = new QPushButton(text);
        b->setToolTip(tip);
        b->setObjectName(text);
        connect(b, &QPushButton::clicked, this, [this, make] { post(make()); });
        grid->addWidget(b, row++, 3);
        m_buttons << b;
    };

    m_lrFactor = new QDoubleSpinBox;
    m_lrFactor->setDecimals(3);
    m_lrFactor->setRange(0.001, 100);
    m_lrFactor->setValue(0.5);
    grid->addWidget(new QLabel(tr("LR ×")), row, 0);
    grid->addWidget(m_lrFactor, row, 1, 1, 2);
    addButton(tr("Change LR"), tr("Multiply the LR schedule by this factor from the next step"),
              [this] { return lrEvent(); });

    m_qkVariant = new QComboBox;
    m_qkVariant->addItems(choicesOf("attention.qk_norm", {"none", "rms"}));
    m_qkVariant->setCurrentText(QStringLiteral("rms"));
    grid->addWidget(new QLabel(tr("QK-norm")), row, 0);
    grid->addWidget(m_qkVariant, row, 1, 1, 2);
    addButton(tr("Switch QK-norm"),
              tr("Normalise q and k from the next step (the 'engine removal')"),
              [this] { return qkNormEvent(); });

    m_annealSteps = new QSpinBox;
    m_annealSteps->setRange(1, 10000000);
    m_annealSteps->setValue(100);
    m_annealShape = new QComboBox;
    m_annealShape->addItems(choicesOf("anneal.qk_norm.shape", {"linear", "cosine", "hard"}));
    grid->addWidget(new QLabel(tr("Anneal over")), row, 0);
    grid->addWidget(m_annealSteps, row, 1);
    grid->addWidget(m_annealShape, row, 2);
    addButton(tr("Start anneal"),
              tr("Move alpha from 1 to 0 over this many steps (QK-norm fades out; s stays fixed)"),
              [this] { return annealEvent(); });

    m_capKind = new QComboBox;
    m_capKind->addItems(choicesOf("attention.softcap.kind", {"none", "tanh", "clamp"}));
    m_capKind->setCurrentText(QStringLiteral("tanh"));
    m_capC = new QDoubleSpinBox;
    m_capC->setRange(0.1, 10000);
    m_capC->setValue(50);
    m_capC->setPrefix(QStringLiteral("C = "));
    grid->addWidget(new QLabel(tr("Softcap")), row, 0);
    grid->addWidget(m_capKind, row, 1);
    grid->addWidget(m_capC, row, 2);
    addButton(tr("Set softcap"),
              tr("Switch the attention-logit softcap (the 'gate'); Gemma 2 uses tanh C=50"),
              [this] { return softcapEvent(); });

    m_dirtyText = new QLineEdit;
    m_dirtyText->setPlaceholderText(tr("(default repeated text)"));
    grid->addWidget(new QLabel(tr("Dirty batch")), row, 0);
    grid->addWidget(m_dirtyText, row, 1, 1, 2);
    addButton(tr("Inject batch"), tr("Replace the next batch with heavily repeated text"),
              [this] { return dirtyBatchEvent(); });

    m_seqLen = new QSpinBox;
    m_seqLen->setRange(2, 65536);
    m_seqLen->setValue(256);
    grid->addWidget(new QLabel(tr("Context")), row, 0);
    grid->addWidget(m_seqLen, row, 1, 1, 2);
    addButton(tr("Switch context"),
              tr("Train with this context length from the next step (e.g. 512 → 2048)"),
              [this] { return contextEvent(); });

    m_status = new QLabel(tr("Interventions apply to the training run."));
    m_status->setWordWrap(true);
    m_status->setObjectName(QStringLiteral("interventionStatus"));
    grid->addWidget(m_status, row++, 0, 1, 4);
    grid->setColumnStretch(1, 1);

    connect(m_controller, &RunController::started, this, [this] {
        // A context switch cannot exceed what the model's positions were built for.
        const RunConfig& c = m_controller->activeRequest().config;
        m_seqLen->setRange(2, int(std::max<int64_t>(2, c.maxSeqLen())));
        m_seqLen->setValue(int(std::max<int64_t>(2, c.model.seqLen / 2)));
        m_seqLen->setToolTip(tr("Up to %1 (the longest context this model was built for); "
                                "longer switches belong in the preset's events")
                                 .arg(c.maxSeqLen()));
        refreshEnabled();
    });
    connect(m_controller, &RunController::queueChanged, this, &InterventionPanel::refreshEnabled);
    connect(m_controller, &RunController::finished, this, [this] { refreshEnabled(); });
    refreshEnabled();
}

Event InterventionPanel::lrEvent() const {
    return Event{0, "lr_multiplier", {{"factor", m_lrFactor->value()}}};
}

Event InterventionPanel::qkNormEvent() const {
    return Event{0, "qk_norm", {{"variant", m_qkVariant->currentText().toStdString()}}};
}

Event InterventionPanel::annealEvent() const {
    return Event{0,
                 "qk_anneal",
                 {{"steps", int64_t(m_annealSteps->value())},
                  {"shape", m_annealShape->currentText().toStdString()}}};
}

Event InterventionPanel::softcapEvent() const {
    return Event{
        0, "softcap", {{"cap", m_capKind->currentText().toStdString()}, {"c", m_capC->value()}}};
}

Event InterventionPanel::dirtyBatchEvent() const {
    Event e{0, "dirty_batch", nlohmann::json::object()};
    if (!m_dirtyText->text().isEmpty()) e.params["text"] = m_dirtyText->text().toStdString();
    return e;
}

Event InterventionPanel::contextEvent() const {
    return Event{0, "context_length", {{"seq_len", int64_t(m_seqLen->value())}}};
}

bool InterventionPanel::post(const Event& event) {
    EventRecord shown{0, event.kind, event.params.dump(), "user"};
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

void InterventionPanel::refreshEnabled() {
    const bool busy = m_controller->isBusy();
    for (QWidget* b : m_buttons) b->setEnabled(busy);
}

}  // namespace qklab::gui
