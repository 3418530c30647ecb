// custom_scalars_plot.cpp — see custom_scalars_plot.h.
#include "live/custom_scalars_plot.h"

#include <qcustomplot.h>

#include <QComboBox>
#include <QSignalBlocker>
#include <cmath>

#include "common/custom_scalar_points.h"
#include "common/plot_style.h"

namespace qklab::gui {

CustomScalarsPlot::CustomScalarsPlot(QCustomPlot* plot, std::function<void()> replot)
    : m_plot(plot), m_choice(new QComboBox) {
    m_choice->setObjectName(QStringLiteral("customScalarChoice"));
    m_choice->setToolTip(
        QObject::tr("Which of the scalars the run logged besides qklab's step metrics the "
                    "Custom scalars plot shows"));
    m_choice->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    m_choice->hide();
    QObject::connect(m_choice, &QComboBox::currentIndexChanged, m_plot,
                     [this, replot = std::move(replot)] {
                         showOnly(m_choice->currentData().toString());
                         replot();
                     });
}

void CustomScalarsPlot::fillChoice() {
    const QSignalBlocker block(m_choice);
    m_choice->clear();
    m_choice->addItem(QObject::tr("custom: all"), QString());
    for (const QString& name : names())
        m_choice->addItem(QObject::tr("custom: %1").arg(name), name);
    m_choice->setCurrentIndex(std::max(0, m_choice->findData(m_only)));
    m_choice->setVisible(!empty());
}

void CustomScalarsPlot::clear() {
    for (QCPGraph* g : m_graphs) m_plot->removeGraph(g);
    m_graphs.clear();
    m_plot->legend->setVisible(false);
    fillChoice();
}

void CustomScalarsPlot::set(const std::vector<CustomScalar>& scalars, const StepToXFn& xOfStep) {
    clear();
    const QMap<QString, ScalarPoints> series = customScalarPoints(scalars);
    int index = 0;
    for (auto it = series.cbegin(); it != series.cend(); ++it) {
        QVector<double> keys;
        keys.reserve(it.value().steps.size());
        for (double step : it.value().steps) keys << xOfStep(step);
        QCPGraph* g = m_plot->addGraph();
        g->setName(it.key());
        g->setPen(QPen(layerColor(index++), 1.3));
        g->setData(keys, it.value().values, /*alreadySorted=*/true);
        m_graphs.insert(it.key(), g);
    }
    m_plot->legend->setVisible(!m_graphs.isEmpty());
    if (!m_graphs.contains(m_only)) m_only.clear();
    showOnly(m_only);
    fillChoice();
}

void CustomScalarsPlot::showOnly(const QString& name) {
    m_only = m_graphs.contains(name) ? name : QString();
    if (m_choice->currentData().toString() != m_only) {
        const QSignalBlocker block(m_choice);
        m_choice->setCurrentIndex(std::max(0, m_choice->findData(m_only)));
    }
    for (auto it = m_graphs.cbegin(); it != m_graphs.cend(); ++it)
        it.value()->setVisible(m_only.isEmpty() || it.key() == m_only);
    chooseCustomScalarScale(m_plot, m_graphs.values());
}

}  // namespace qklab::gui
