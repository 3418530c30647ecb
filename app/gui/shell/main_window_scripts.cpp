// main_window_scripts.cpp — MainWindow's side of what a script asks beyond a lesson
// (LabWindow's second part) that main_window.cpp does not already have: each forwards to the
// panel or dock a user would work.
#include <QDockWidget>
#include <QLineEdit>

#include "compare/compare_panel.h"
#include "lessons/lesson_player.h"
#include "lessons/lesson_stage.h"
#include "live/attention_map_panel.h"
#include "live/histogram_panel.h"
#include "live/live_plots_panel.h"
#include "live/sample_panel.h"
#include "run/run_controls_panel.h"
#include "shell/main_window.h"
#include "shell/presenter_mode.h"
#include "sweeps/sweep_panel.h"

namespace qklab::gui {

// Connected last, after the window's own connections, so that a script hears a part's signal
// after the window has acted on it, as when it connected to the part itself.
void MainWindow::connectScriptSignals() {
    connect(m_lessonStage, &LessonStage::calloutShown, this, &LabWindow::lessonCalloutShown);
    connect(m_sample, &SamplePanel::runReady, this, &LabWindow::sampleRunReady);
    connect(m_sample, &SamplePanel::sampleFinished, this, &LabWindow::sampleFinished);
}

void MainWindow::setPresenterMode(bool on) {
    m_presenter->setActive(on);
}

void MainWindow::setNextRunName(const QString& name) {
    m_controls->setRunName(name);
}

void MainWindow::startRun() {
    m_controls->startRun();
}

void MainWindow::setHistogramOverlay(bool on) {
    m_histograms->setOverlay(on);
}

void MainWindow::reloadStoreViews() {
    m_histograms->reload();
    m_attention->reloadSteps();
}

void MainWindow::replotLiveNow() {
    m_live->replotNow();
}

int MainWindow::lossPointCount() const {
    return m_live->lossPointCount();
}

bool MainWindow::alignComparison(const QString& rule, QString* error) {
    if (m_compare->setAlignment(rule)) return true;
    if (error) *error = m_compare->alignArgument()->toolTip();
    return false;
}

bool MainWindow::saveComparisonFigure(const QString& path, QString* error, const FigureSize& size) {
    return m_compare->saveFigure(path, error, size);
}

void MainWindow::setSweepTableShare(double share) {
    m_sweeps->setTableShare(share);
}

void MainWindow::showSampleBox() {
    m_sampleDock->show();
    m_sampleDock->raise();
}

void MainWindow::pickSampleRun(int64_t runId) {
    m_sample->setRun(runId);
}

void MainWindow::generateSample() {
    m_sample->generate();
}

QString MainWindow::sampleNotice() const {
    return m_sample->notice();
}

}  // namespace qklab::gui
