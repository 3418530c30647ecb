// custom_scalar_points.cpp — see custom_scalar_points.h.
#include "common/custom_scalar_points.h"

#include <qcustomplot.h>

#include <cmath>

#include "common/plot_style.h"

namespace qklab::gui {

namespace {
// Above this max/min ratio of positive values, a linear axis flattens the small series.
constexpr double kLogSpan = 100.0;
}  // namespace

QMap<QString, ScalarPoints> customScalarPoints(const std::vector<CustomScalar>& scalars) {
    QMap<QString, ScalarPoints> out;
    for (const CustomScalar& s : scalars) {
        if (std::isnan(s.value)) continue;  // not logged at this step: no point, not a zero
        ScalarPoints& p = out[QString::fromStdString(s.name)];
        p.steps << double(s.step);
        p.values << (std::isfinite(s.value) ? s.value : qQNaN());
    }
    return out;
}

void chooseCustomScalarScale(QCustomPlot* plot, const QList<QCPGraph*>& graphs) {
    double low = INFINITY, high = 0;
    bool positive = true;
    for (QCPGraph* g : graphs) {
        if (!g->visible()) continue;
        for (auto p = g->data()->constBegin(); p != g->data()->constEnd(); ++p) {
            if (!std::isfinite(p->value)) continue;
            positive = positive && p->value > 0;
            low = std::min(low, p->value);
            high = std::max(high, p->value);
        }
    }
    const bool log = positive && low > 0 && high / low > kLogSpan;
    setLogAxis(plot->yAxis, log);
    plot->yAxis->setLabel(log ? QObject::tr("value (log)") : QObject::tr("value"));
}

}  // namespace qklab::gui
