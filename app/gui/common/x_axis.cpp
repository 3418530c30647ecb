// x_axis.cpp — the x-axis choice and the step -> tokens/seconds map.
#include "common/x_axis.h"

#include <QComboBox>
#include <algorithm>
#include <cmath>

namespace qklab::gui {

QString xAxisTitle(XAxisKind kind) {
    switch (kind) {
        case XAxisKind::Tokens:
            return QStringLiteral("tokens seen");
        case XAxisKind::Time:
            return QStringLiteral("training time (s)");
        case XAxisKind::Step:
            break;
    }
    return QStringLiteral("step");
}

QString xAxisValueText(XAxisKind kind, double x) {
    switch (kind) {
        case XAxisKind::Tokens:
            return QObject::tr("tokens seen %1").arg(x, 0, 'g', 4);
        case XAxisKind::Time:
            return QObject::tr("training time %1 s").arg(x, 0, 'g', 4);
        case XAxisKind::Step:
            break;
    }
    return QObject::tr("step %1").arg(qint64(std::llround(x)));
}

QComboBox* makeXAxisChoice(QWidget* parent) {
    auto* box = new QComboBox(parent);
    box->setObjectName(QStringLiteral("xAxisChoice"));
    box->setToolTip(QObject::tr(
        "What the x-axes count: optimizer steps, tokens seen (runs with other batch sizes or "
        "context lengths line up) or training time: the seconds spent in training steps, "
        "summed (validation, checkpoints and pauses left out; not wall-clock time)"));
    for (XAxisKind k : {XAxisKind::Step, XAxisKind::Tokens, XAxisKind::Time})
        box->addItem(QObject::tr("x: %1").arg(xAxisTitle(k)), int(k));
    return box;
}

XAxisKind xAxisKindOf(const QComboBox* choice) {
    return static_cast<XAxisKind>(choice->currentData().toInt());
}

void StepToX::add(const StepMetrics& m) {
    if (m_ends.empty()) m_firstStep = m.step;
    const int64_t index = m.step - m_firstStep;
    if (index < int64_t(m_ends.size())) return;  // a step seen already (a resumed run's overlap)
    const double tokens = double(m_batch) * double(m.seqLen > 0 ? m.seqLen : m_seqLen);
    double dx = tokens;
    if (m_kind == XAxisKind::Time) dx = m.tokensPerSec > 0 ? tokens / m.tokensPerSec : 0.0;
    // Before the first stored step (a fallback: runs store their steps from 0), and across a
    // gap of steps never stored: at this step's rate.
    double x = m_ends.empty() ? double(m_firstStep) * dx : m_ends.back();
    while (int64_t(m_ends.size()) < index) {
        x += dx;
        m_ends.push_back(x);
    }
    m_ends.push_back(x + dx);
}

void StepToX::add(const std::vector<StepMetrics>& steps, size_t from) {
    for (size_t i = from; i < steps.size(); ++i) add(steps[i]);
}

double StepToX::perStep() const {
    if (m_kind == XAxisKind::Tokens) return double(m_batch) * double(m_seqLen);
    const size_t n = m_ends.size();
    if (n >= 2) return m_ends[n - 1] - m_ends[n - 2];
    return n == 1 ? m_ends[0] / double(m_firstStep + 1) : 0.0;
}

double StepToX::operator()(double step) const {
    if (m_kind == XAxisKind::Step) return step;
    if (m_ends.empty()) return m_kind == XAxisKind::Tokens ? (step + 1) * perStep() : 0.0;
    const double index = step - double(m_firstStep);
    if (index < 0) return (step + 1) * (m_ends.front() / double(m_firstStep + 1));
    if (index < double(m_ends.size())) return m_ends[size_t(index)];
    return m_ends.back() + (index - double(m_ends.size() - 1)) * perStep();
}

int64_t StepToX::stepAt(double x) const {
    if (m_kind == XAxisKind::Step || m_ends.empty()) return int64_t(std::llround(x));
    const auto it = std::lower_bound(m_ends.begin(), m_ends.end(), x);
    if (it == m_ends.end()) {
        const double per = perStep();
        const double extra = per > 0 ? std::round((x - m_ends.back()) / per) : 0.0;
        return m_firstStep + int64_t(m_ends.size()) - 1 + int64_t(extra);
    }
    size_t i = size_t(it - m_ends.begin());
    if (i > 0 && x - m_ends[i - 1] < *it - x) --i;
    return m_firstStep + int64_t(i);
}

}  // namespace qklab::gui
