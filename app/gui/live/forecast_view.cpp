// forecast_view.cpp — the forecast's words and its dashed extension.
#include "live/forecast_view.h"

#include <qcustomplot.h>

#include <QObject>

#include "common/plot_style.h"
#include "common/run_data.h"
#include "qklab/analysis/forecast.h"
#include "qklab/util/choices.h"

namespace qklab::gui {

namespace {

// "the raw max logit of layer 1" ("…, head 2" for a head row).
QString subjectOf(const Forecast& f) {
    QString s = QObject::tr("the raw max logit of layer %1").arg(f.layer);
    if (f.head >= 0) s += QObject::tr(", head %1").arg(f.head);
    return s;
}

// "came true" only when the onset is what the forecast named: its layer's raw max logit past
// the line. Another layer's crossing or a loss spike inside the horizon is what forecast-report
// counts as caught, but the forecast did not say it: "was followed by" (a forecast for layer 0
// read "came true: the raw max logit of layer 1 passed the line").
QString outcomeVerb(const Forecast& f, const Onset& o) {
    const bool named = o.kind == OnsetKind::MaxLogit && o.layer == f.layer;
    return named ? QObject::tr("came true:") : QObject::tr("was followed by");
}

}  // namespace

ForecastOutcome forecastOutcome(const Forecast& f, const std::vector<Onset>& onsets,
                                int64_t latestStep) {
    ForecastOutcome out;
    const int64_t end = f.step + kForecastHorizonSteps;
    for (const Onset& o : onsets) {
        if (o.step < f.step || o.step > end) continue;
        if (!out.onset || o.step < out.onset->step) out.onset = o;
    }
    if (out.onset)
        out.state = ForecastOutcome::State::CameTrue;
    else if (latestStep > end)
        out.state = ForecastOutcome::State::HorizonPassed;
    return out;
}

QString onsetText(const Onset& o) {
    switch (o.kind) {
        case OnsetKind::MaxLogit: {
            QString who = QObject::tr("layer %1").arg(o.layer);
            if (o.head >= 0) who += QObject::tr(", head %1").arg(o.head);
            return QObject::tr("the raw max logit of %1 passed the line (%2)")
                .arg(who, formatNumber(o.value));
        }
        case OnsetKind::LossSpike:
            return QObject::tr("a loss spike (%1)").arg(formatNumber(o.value));
        case OnsetKind::GradSpike:
            return QObject::tr("a grad-norm spike (%1)").arg(formatNumber(o.value));
        case OnsetKind::Divergence:
            return QObject::tr("the loss diverged");
        case OnsetKind::Unknown:
            break;
    }
    return QObject::tr("an onset");
}

QString forecastLineText(const Forecast& f, const ForecastOutcome& o, int64_t latestStep) {
    const QString subject = subjectOf(f);
    const QString line = formatNumber(f.threshold);
    switch (o.state) {
        case ForecastOutcome::State::CameTrue:
            return QObject::tr(
                       "Forecast at step %1 (%2 passes %3 at step %4) %5 %6 at step %7, "
                       "%8 steps later")
                .arg(f.step)
                .arg(subject, line)
                .arg(f.predictedStep)
                .arg(outcomeVerb(f, *o.onset), onsetText(*o.onset))
                .arg(o.onset->step)
                .arg(o.onset->step - f.step);
        case ForecastOutcome::State::HorizonPassed:
            return QObject::tr(
                       "Forecast at step %1 (%2 passes %3 at step %4): its horizon, step "
                       "%5, passed with no onset")
                .arg(f.step)
                .arg(subject, line)
                .arg(f.predictedStep)
                .arg(f.step + kForecastHorizonSteps);
        case ForecastOutcome::State::Pending:
            break;
    }
    const int64_t left = f.predictedStep - latestStep;
    if (left <= 0)
        return QObject::tr("Forecast: %1 was to pass %2 by step %3; not yet (%4)")
            .arg(subject, line)
            .arg(f.predictedStep)
            .arg(left == 0 ? QObject::tr("due now") : QObject::tr("%1 steps overdue").arg(-left));
    return QObject::tr("Forecast: at this rate %1 passes %2 in about %3 steps — step %4")
        .arg(subject, line)
        .arg(left)
        .arg(f.predictedStep);
}

QString forecastTimelineHtml(const Forecast& f, const ForecastOutcome& o) {
    QString then;
    switch (o.state) {
        case ForecastOutcome::State::CameTrue:
            then = QObject::tr("%1 %2 at <a href=\"step:%3\">step %3</a>, %4 steps later")
                       .arg(outcomeVerb(f, *o.onset), onsetText(*o.onset).toHtmlEscaped())
                       .arg(o.onset->step)
                       .arg(o.onset->step - f.step);
            break;
        case ForecastOutcome::State::HorizonPassed:
            then = QObject::tr("no onset by step %1 (a false alarm)")
                       .arg(f.step + kForecastHorizonSteps);
            break;
        case ForecastOutcome::State::Pending:
            then = QObject::tr("not decided yet");
            break;
    }
    return QObject::tr("<a href=\"step:%1\">step %1</a>: %2 passes %3 at about step %4 → %5")
        .arg(f.step)
        .arg(subjectOf(f).toHtmlEscaped(), formatNumber(f.threshold))
        .arg(f.predictedStep)
        .arg(then);
}

void setForecastExtensions(QCustomPlot* plot, const std::vector<Forecast>& forecasts,
                           const std::function<double(double)>& xOf) {
    const QString role = QStringLiteral("forecast");
    clearItems(plot, role);
    for (const Forecast& f : forecasts) {
        auto* line = new QCPItemLine(plot);
        setItemRole(line, role);
        line->start->setCoords(xOf(double(f.step)), f.value);
        line->end->setCoords(xOf(double(f.predictedStep)), f.threshold);
        // Not the layer's colour: the curve it extends would hide it where they meet.
        line->setPen(QPen(QColor(150, 0, 170), 2.0, Qt::DashLine));
        line->setSelectable(false);
    }
}

}  // namespace qklab::gui
