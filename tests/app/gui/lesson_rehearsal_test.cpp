// lesson_rehearsal_test.cpp — LessonRehearsal (issue 37): a class played by keyboard. Every
// step of a shipped lesson is played at 1024x768 in presenter mode with Space and Page Down
// only (focus moved around by mouse clicks between the keys), first live into a fresh
// database, then again in that database as replays of the runs the live playing recorded.
// At each pause (a callout, or the run or replay at rest) it asserts:
//   - the lesson is at the step whose text is shown;
//   - no run was started or queued that the lesson did not train (none at all in replay);
//   - every view's data ends at the current step: the live plots, the spikes, the histograms
//     and the attention maps hold no row past it;
//   - each placeholder in the step text and the callout equals the stored value at that step;
//   - no callout or step text needs scrolling;
//   - no threshold label covers a curve point.
// One ctest entry per lesson (gui_lesson_rehearsal_<id>), so that they run side by side.
#include <QAbstractScrollArea>
#include <QDir>
#include <QFileInfo>
#include <QLabel>
#include <QPushButton>
#include <QScreen>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QTextBrowser>

#include "common/plot_style.h"
#include "common/run_controller.h"
#include "compare/compare_panel.h"
#include "lesson_test_util.h"
#include "lessons/lesson_library.h"
#include "lessons/lesson_player.h"
#include "lessons/lesson_stage.h"
#include "lessons/replay_player.h"
#include "live/attention_map_panel.h"
#include "live/histogram_panel.h"
#include "live/live_plots_panel.h"
#include "qcustomplot.h"
#include "qklab/analysis/lesson_fit.h"
#include "qklab/analysis/lesson_values.h"
#include "qklab/config/names.h"
#include "shell/main_window.h"
#include "shell/presenter_mode.h"

using namespace qklab;
using namespace qklab::gui;

namespace {

constexpr int kSettleMs = 1200000;  // a live run on a busy 2-core machine; ctest allows 1500 s

QString qs(const std::string& s) {
    return QString::fromStdString(s);
}

}  // namespace

class LessonRehearsal : public QObject {
    Q_OBJECT
  private:
    QTemporaryDir m_dir;
    std::unique_ptr<MainWindow> m_w;
    Lesson m_lesson;
    QString m_path;
    QString m_db;
    bool m_replay = false;
    int m_clicks = 0;
    int m_callouts = 0;         // callouts shown at the current step
    int64_t m_sentStep = -1;    // the last step the live trainer sent
    size_t m_runsExpected = 0;  // runs the lesson trained so far

    LessonPlayer* player() const { return m_w->part<LessonPlayer>(); }
    RunController* controller() const { return m_w->controller(); }
    ReplayPlayer* replayer() const { return m_w->part<ReplayPlayer>(); }

    std::vector<RunInfo> storedRuns() const {
        RunStore store(m_db.toStdString(), StoreAccess::ReadOnly);
        return store.listRuns();
    }

    // A click somewhere harmless (the step text, a plot, the lesson title), then the key to
    // whatever has focus now: the lesson must act on it, not the focused widget.
    void press(Qt::Key key) {
        QList<QWidget*> spots = {player()->findChild<QWidget*>(QStringLiteral("lessonText")),
                                 player()->findChild<QWidget*>(QStringLiteral("lessonTitle"))};
        for (QCustomPlot* p : m_w->part<LivePlotsPanel>()->shownPlots())
            if (p->isVisible()) spots << p;
        QWidget* spot = spots[m_clicks++ % spots.size()];
        if (spot && spot->isVisible())
            QTest::mouseClick(spot, Qt::LeftButton, {}, QPoint(spot->width() / 2, 5));
        QWidget* focus = QApplication::focusWidget();
        QTest::keyClick(focus ? focus : static_cast<QWidget*>(m_w.get()), key);
    }
    // Space and Page Down take turns (a keyboard and a clicker).
    void forward() { press(m_clicks % 2 ? Qt::Key_PageDown : Qt::Key_Space); }

    const LessonStep& step() const { return *player()->currentStep(); }
    bool trains(const LessonStep& s) const { return s.actionKind() == "start_preset"; }

    bool sourceRunning() const {
        if (m_w->part<LessonStage>()->replaying()) return replayer()->isPlaying();
        return controller()->isBusy() && !controller()->isPaused();
    }

    // The step waits for the teacher: a callout shows, the source rests, or every condition of
    // the step fired and the next step watches the same run (the teacher goes on while it
    // trains, as lesson 1 does).
    void settle() {
        const int index = player()->currentIndex();
        const bool nextWatches = index + 1 < int(m_lesson.steps.size()) &&
                                 !m_lesson.steps[size_t(index + 1)].pauses.empty() &&
                                 m_lesson.steps[size_t(index + 1)].actionKind() == "none";
        QTRY_VERIFY_WITH_TIMEOUT(player()->calloutVisible() || player()->sourceChoiceWaiting() ||
                                     !sourceRunning() ||
                                     (nextWatches && m_callouts >= int(step().pauses.size())),
                                 kSettleMs);
        if (step().view == "compare")
            QTRY_VERIFY_WITH_TIMEOUT(!m_w->part<ComparePanel>()->runIds().empty(), 60000);
    }

    // The run a placeholder without run= reads: the replay's, else the newest of the series of
    // the latest training step up to this one (the first one's, before it).
    int64_t ownRun() const {
        if (m_w->part<LessonStage>()->replaying()) return replayer()->runId();
        for (int i = player()->currentIndex(); i >= 0; --i)
            if (trains(m_lesson.steps[size_t(i)])) return newestOf(lessonRunName(m_lesson, i));
        // A step before the lesson's first run talks about that run (recorded, or none yet).
        for (size_t i = 0; i < m_lesson.steps.size(); ++i)
            if (trains(m_lesson.steps[i])) return newestOf(lessonRunName(m_lesson, i));
        return 0;
    }
    int64_t newestOf(const std::string& name) const {
        int64_t id = 0;
        for (const RunInfo& r : storedRuns())
            if (numberInSeries(r.name, name) > 0) id = std::max(id, r.id);
        return id;
    }

    // The step the source stands at: the replay's position, a paused live run's callout step,
    // else the own run's last stored step.
    int64_t currentRunStep(int64_t own) const {
        if (m_w->part<LessonStage>()->replaying()) return replayer()->position();
        // Paused: after the last step the trainer sent (a spike's callout comes at the probe
        // its report waited for, after the spike's own step).
        if (controller()->isPaused() && m_sentStep >= 0) return m_sentStep;
        RunStore store(m_db.toStdString(), StoreAccess::ReadOnly);
        const std::vector<StepMetrics> steps = store.stepMetrics(own);
        return steps.empty() ? -1 : steps.back().step;
    }

    // What the text says once filled from the store: the own run cut at `at`, others whole.
    std::string expectedText(const std::string& markdown, int64_t own, int64_t at) const {
        RunStore store(m_db.toStdString(), StoreAccess::ReadOnly);
        std::map<int64_t, std::pair<std::vector<StepMetrics>, std::vector<ProbeStats>>> rows;
        return fillLessonValues(
            markdown, [&](const std::string& run) -> std::optional<LessonRunRows> {
                const int64_t id = run.empty() ? own : newestOf(run);
                if (id == 0) return std::nullopt;
                auto& r = rows[id];
                r.first = store.stepMetrics(id);
                r.second = store.probeStats(id, -1);
                if (id == own) {
                    r.first.erase(std::remove_if(r.first.begin(), r.first.end(),
                                                 [&](const StepMetrics& m) { return m.step > at; }),
                                  r.first.end());
                    r.second.erase(std::remove_if(r.second.begin(), r.second.end(),
                                                  [&](const ProbeStats& p) { return p.step > at; }),
                                   r.second.end());
                }
                return LessonRunRows{&r.first, &r.second};
            });
    }

    void checkViewsEndAt(int64_t at, const QString& where) {
        LivePlotsPanel* live = m_w->part<LivePlotsPanel>();
        const RunSnapshot& shown = live->run();
        const int64_t shownEnd = shown.steps.empty() ? -1 : shown.steps.back().step;
        QVERIFY2(shownEnd == at, qPrintable(where + QStringLiteral(": the views end at step %1, "
                                                                   "not %2")
                                                        .arg(shownEnd)
                                                        .arg(at)));
        for (const ProbeStats& p : shown.probes) QVERIFY2(p.step <= at, qPrintable(where));
        for (const Spike& s : shown.spikes) QVERIFY2(spikeReportStep(s) <= at, qPrintable(where));
        for (QCustomPlot* plot : live->plots())
            for (int g = 0; g < plot->graphCount(); ++g) {
                bool found = false;
                const QCPRange keys = plot->graph(g)->getKeyRange(found);
                QVERIFY2(!found || keys.upper <= double(at) + 0.5,
                         qPrintable(where + QStringLiteral(": %1 reaches %2")
                                                .arg(plot->graph(g)->name())
                                                .arg(keys.upper)));
            }
        QTRY_VERIFY2(m_w->part<HistogramPanel>()->lastLoadedStep() <= at, qPrintable(where));
        QTRY_VERIFY2(m_w->part<AttentionMapPanel>()->shownStep() <= at, qPrintable(where));
    }

    void checkFits(const QString& where) {
        auto* text = player()->findChild<QTextBrowser*>(QStringLiteral("lessonText"));
        QTRY_VERIFY2_WITH_TIMEOUT(
            text->verticalScrollBar()->maximum() == 0,
            qPrintable(where + QStringLiteral(": the step text scrolls by %1 px")
                                   .arg(text->verticalScrollBar()->maximum())),
            2000);
        if (player()->calloutVisible()) {
            auto* scroll = player()->findChild<QScrollArea*>(QStringLiteral("lessonCalloutScroll"));
            QVERIFY2(scroll->verticalScrollBar()->maximum() == 0,
                     qPrintable(where + QStringLiteral(": the callout scrolls")));
            // Its last line above Continue, not under it.
            auto* label = player()->findChild<QLabel*>(QStringLiteral("lessonCalloutText"));
            auto* resume = player()->findChild<QPushButton*>(QStringLiteral("lessonContinue"));
            const int textBottom = scroll->mapTo(player(), QPoint(0, scroll->height())).y();
            const int labelBottom =
                label->mapTo(player(), QPoint(0, label->heightForWidth(label->width()))).y();
            QVERIFY2(labelBottom <= textBottom,
                     qPrintable(where + QStringLiteral(": the callout's text ends %1 px below "
                                                       "its area")
                                            .arg(labelBottom - textBottom)));
            if (resume->isVisible())
                QVERIFY2(labelBottom <= resume->mapTo(player(), QPoint(0, 0)).y(),
                         qPrintable(where + QStringLiteral(": Continue covers the callout")));
        }
        for (QCustomPlot* plot : m_w->part<LivePlotsPanel>()->shownPlots()) {
            if (!plot->isVisible()) continue;
            plot->replot();
            const QList<QRectF> covering = labelBoxesCoveringData(plot);
            QVERIFY2(
                covering.isEmpty(),
                qPrintable(where + QStringLiteral(": a label box at %1,%2 covers a point of %3")
                                       .arg(covering.value(0).x())
                                       .arg(covering.value(0).y())
                                       .arg(plot->objectName())));
        }
    }

    // $QKLAB_REHEARSAL_SHOTS (a folder): the window at each callout, as the class saw it
    // (tests/app/gui/shoot_rehearsal.sh fills docs/screenshots/lessons/ this way).
    void shoot() {
        const QString dir = qEnvironmentVariable("QKLAB_REHEARSAL_SHOTS");
        if (dir.isEmpty() || !player()->calloutVisible()) return;
        const QSize size = m_w->screen()->geometry().size();
        const QString name = QStringLiteral("%1-step%2-%3-%4-%5x%6.png")
                                 .arg(QFileInfo(m_path).completeBaseName())
                                 .arg(player()->currentIndex() + 1)
                                 .arg(m_callouts)
                                 .arg(m_replay ? QStringLiteral("replay") : QStringLiteral("live"))
                                 .arg(size.width())
                                 .arg(size.height());
        QVERIFY(m_w->grab().save(QDir(dir).filePath(name)));
    }

    void checkPause() {
        m_w->part<LivePlotsPanel>()->replotNow();
        QTest::qWait(50);  // the views' queued replots
        shoot();
        const int index = player()->currentIndex();
        const QString where = QStringLiteral("%1 %2 step %3")
                                  .arg(m_replay ? QStringLiteral("replay") : QStringLiteral("live"))
                                  .arg(qs(m_lesson.title))
                                  .arg(index + 1);
        QCOMPARE(player()->counterText(),
                 QStringLiteral("%1 / %2").arg(index + 1).arg(m_lesson.steps.size()));
        QCOMPARE(player()->findChild<QLabel*>(QStringLiteral("lessonStepTitle"))->text(),
                 qs(step().title));
        QVERIFY2(storedRuns().size() == m_runsExpected, qPrintable(where));
        QVERIFY2(controller()->queued().isEmpty(), qPrintable(where));
        checkFits(where);
        // Numbers and views are checked where the source rests: a run that trains on (the
        // teacher went on to a step that watches it) changes them between two reads.
        if (sourceRunning()) return;
        const int64_t own = ownRun();
        const int64_t at = own ? currentRunStep(own) : -1;
        if (own && step().view != "compare" && m_w->part<LivePlotsPanel>()->runId() == own)
            checkViewsEndAt(at, where);
        if (own || step().view == "compare") {
            // As the lesson column lays it out (a table as a list).
            QTRY_COMPARE_WITH_TIMEOUT(player()->filledText(),
                                      qs(expectedText(lessonColumnMarkdown(step().text), own, at)),
                                      3000);
            if (player()->calloutVisible())
                QTRY_COMPARE_WITH_TIMEOUT(
                    player()->calloutText(),
                    qs(expectedText(lessonColumnMarkdown(player()->calloutSource().toStdString()),
                                    own, at)),
                    3000);
        }
    }

    // Plays the open lesson from its first step to its last by keyboard.
    void playThrough() {
        m_callouts = 0;
        for (;;) {
            const int index = player()->currentIndex();
            if (player()->sourceChoiceWaiting()) {
                QVERIFY(m_replay);  // a fresh database has no recordings
                forward();          // the recording, offered first
                QTRY_VERIFY(replayer()->isPlaying() || replayer()->atEnd());
            } else if (!m_replay && trains(step()) && m_callouts == 0) {
                ++m_runsExpected;
                QTRY_VERIFY_WITH_TIMEOUT(controller()->isBusy(), 60000);
            }
            settle();
            if (QTest::currentTestFailed()) return;
            checkPause();
            if (QTest::currentTestFailed()) return;
            auto* resume = player()->findChild<QPushButton*>(QStringLiteral("lessonContinue"));
            if (player()->calloutVisible() && resume->isVisibleTo(player())) {
                forward();  // Continue
                QCOMPARE(player()->currentIndex(), index);
                continue;
            }
            if (index + 1 == int(m_lesson.steps.size())) return;
            forward();
            QCOMPARE(player()->currentIndex(), index + 1);
            m_callouts = 0;
        }
    }

  private slots:
    void initTestCase() {
        registerGuiMetaTypes();
        QCoreApplication::setOrganizationName(QStringLiteral("qklab-tests"));
        QVERIFY(m_dir.isValid());
    }

    void rehearse_data() {
        QTest::addColumn<QString>("path");
        for (const LessonEntry& lesson : embeddedLessons())
            QTest::newRow(qPrintable(lesson.id)) << lesson.path;
    }

    void rehearse() {
        QFETCH(QString, path);
        m_lesson = readLesson(path);
        m_path = path;
        m_db = m_dir.filePath(QFileInfo(path).completeBaseName() + QStringLiteral(".db"));
        m_w = std::make_unique<MainWindow>();
        m_w->setQuiet(true);
        m_w->show();
        QVERIFY(m_w->openDatabase(m_db));
        m_w->part<PresenterMode>()->setActive(true);
        QTRY_COMPARE(m_w->size(), m_w->screen()->geometry().size());  // full screen
        connect(controller(), &RunController::calloutFired, this,
                [this](qint64, const Callout&) { ++m_callouts; });
        connect(replayer(), &ReplayPlayer::calloutFired, this,
                [this](qint64, const Callout&) { ++m_callouts; });
        connect(controller(), &RunController::batchReady, this, [this](const LiveBatch& b) {
            if (!b.steps.isEmpty()) m_sentStep = b.steps.back().step;
        });
        // A replay plays fast: the test is about what it shows, not its pace.
        connect(replayer(), &ReplayPlayer::playingChanged, this, [this](bool playing) {
            if (playing && replayer()->stepsPerSecond() != 400) replayer()->setStepsPerSecond(400);
        });
        m_runsExpected = 0;
        for (int pass = 0; pass < 2; ++pass) {
            m_replay = pass == 1;
            m_w->part<LessonStage>()->setPreferReplay(m_replay);
            QVERIFY(m_w->openLesson(path));
            playThrough();
            if (QTest::currentTestFailed()) break;
            QTRY_VERIFY_WITH_TIMEOUT(!controller()->isBusy(), kSettleMs);
        }
        m_w.reset();
    }
};

// A 1024x768 projector (QKLAB_TEST_SCREEN=1280x720 another), filled by presenter mode.
int main(int argc, char** argv) {
    return test::execOnScreen<LessonRehearsal>(QSize(1024, 768), argc, argv);
}
#include "lesson_rehearsal_test.moc"
