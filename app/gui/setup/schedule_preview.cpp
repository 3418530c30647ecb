// schedule_preview.cpp — three stacked lanes in one QCustomPlot sharing the step axis.
#include "setup/schedule_preview.h"

#include <qcustomplot.h>

#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "qklab/config/schedules.h"

namespace qklab::gui {

namespace {
const char* kLaneNames[] = {"LR", "alpha", "softcap C"};
}

SchedulePreview::SchedulePreview(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_plot = new QCustomPlot(this);
    m_plot->setObjectName(QStringLiteral("schedulePreview"));
    m_plot->setMinimumHeight(170);
    layout->addWidget(m_plot);

    m_plot->plotLayout()->clear();
    QFont small = font();
    small.setPointSizeF(std::max(6.5, small.pointSizeF() - 2));
    auto* group = new QCPMarginGroup(m_plot);
    for (int lane = 0; lane < 3; ++lane) {
        auto* rect = new QCPAxisRect(m_plot);
        rect->setMarginGroup(QCP::msLeft | QCP::msRight, group);
        rect->setMinimumMargins(QMargins(4, 2, 4, 2));
        rect->axis(QCPAxis::atLeft)->setLabel(QString::fromLatin1(kLaneNames[lane]));
        for (auto* axis : rect->axes()) {
            axis->setTickLabelFont(small);
            axis->setLabelFont(small);
        }
        rect->axis(QCPAxis::atLeft)->ticker()->setTickCount(2);
        rect->axis(QCPAxis::atBottom)->setTickLabels(lane == 2);
        m_plot->plotLayout()->addElement(lane, 0, rect);
        auto* graph = m_plot->addGraph(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
        graph->setPen(QPen(QColor(31, 119, 180), 1.5));
    }
}

void SchedulePreview::setConfig(const RunConfig& config) {
    const int64_t steps = std::max<int64_t>(config.schedule.steps, 1);
    const int64_t stride = std::max<int64_t>(1, steps / 400);
    QVector<double> x, lr, alpha, cap;
    // An invalid config (the form says why) has no schedule: drawing one would show, e.g., a
    // negative LR as if it would run.
    const bool valid = validationProblems(config).empty();
    m_plot->graph(0)->valueAxis()->setLabel(valid ? QStringLiteral("LR")
                                                  : QStringLiteral("LR (invalid)"));
    try {
        for (int64_t s = 0; valid && s < steps; s += stride) {
            const StepSettings st = settingsAt(config, s);
            x << double(s);
            lr << st.lr;
            alpha << st.alpha;
            cap << (st.softcap == SoftcapKind::None ? 0.0 : st.softcapC);
        }
    } catch (...) {
        // An invalid config (the form shows why) has no schedule to draw.
        x.clear();
        lr.clear();
        alpha.clear();
        cap.clear();
    }
    const QVector<double>* lanes[] = {&lr, &alpha, &cap};
    for (int lane = 0; lane < 3; ++lane) {
        QCPGraph* g = m_plot->graph(lane);
        g->setData(x, *lanes[lane], true);
        g->keyAxis()->setRange(0, double(steps));
        bool found = false;
        QCPRange r = g->getValueRange(found);
        if (!found) r = QCPRange(0, 1);
        // A constant lane still needs a visible band around its value.
        const double pad =
            r.size() > 0 ? r.size() * 0.1 : (r.upper != 0 ? std::fabs(r.upper) * 0.1 : 1.0);
        g->valueAxis()->setRange(r.lower - pad, r.upper + pad);
    }
    m_plot->graph(2)->valueAxis()->setLabel(config.attention.softcap.kind == SoftcapKind::None
                                                ? QStringLiteral("softcap off")
                                                : QStringLiteral("softcap C"));
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace qklab::gui
