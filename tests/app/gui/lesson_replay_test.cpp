// lesson_replay_test.cpp — replay (the lessons issue): a stored run comes back through the
// live views in step order, every stored step exactly once, at the requested rate (driven by
// hand through advance(), never by wall time); pause stops it and play continues at the same
// step; scrubbing to step k shows exactly the rows up to k.
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <set>

#include "lesson_test_util.h"
#include "lessons/replay_bar.h"
#include "lessons/replay_player.h"
#include "live/attention_map_panel.h"
#include "live/histogram_panel.h"
#include "live/live_plots_panel.h"
#include "shell/main_window.h"

using namespace qklab;
using namespace qklab::gui;

class LessonReplayTest : public QObject {
    Q_OBJECT
  private:
    QTemporaryDir m_dir;
    QString m_db;
    int64_t m_run = 0;
    std::vector<int64_t> m_storedSteps;

    // Every step of every batch the spy saw, in order.
    static std::vector<int64_t> emittedSteps(const QSignalSpy& spy) {
        std::vector<int64_t> out;
        for (const QList<QVariant>& args : spy)
            for (const StepMetrics& m : args.at(0).value<LiveBatch>().steps) out.push_back(m.step);
        return out;
    }

  private slots:
    void initTestCase() {
        registerGuiMetaTypes();
        QCoreApplication::setOrganizationName(QStringLiteral("qklab-tests"));
        QVERIFY(m_dir.isValid());
        m_db = m_dir.filePath(QStringLiteral("replay.db"));
        m_run = test::writeKnownRun(m_db, "replay-me", 100);
        RunStore store(m_db.toStdString(), StoreAccess::ReadOnly);
        for (const StepMetrics& m : store.stepMetrics(m_run)) m_storedSteps.push_back(m.step);
        QCOMPARE(m_storedSteps.size(), size_t(100));
    }

    // 50 steps/s: 100 steps take 2 s of replay time, 50 per second, in order, each once.
    void emitsEveryStepOnceInOrderAtTheRate() {
        ReplayPlayer player;
        player.load(m_db, m_run);
        QSignalSpy batches(&player, &ReplayPlayer::batchReady);
        player.setStepsPerSecond(50);
        QVERIFY(player.timerIntervalMs() > 0 && player.timerIntervalMs() <= 50);
        player.advance(0.5);
        QCOMPARE(emittedSteps(batches).size(), size_t(25));
        player.advance(0.5);
        QCOMPARE(emittedSteps(batches).size(), size_t(50));
        player.advance(0.99);
        QCOMPARE(emittedSteps(batches).size(), size_t(99));  // not yet at 2 s
        QVERIFY(!player.atEnd());
        QSignalSpy finished(&player, &ReplayPlayer::finished);
        player.advance(0.01);
        QCOMPARE(finished.count(), 1);
        const std::vector<int64_t> steps = emittedSteps(batches);
        QCOMPARE(steps, m_storedSteps);  // strictly increasing, every stored step exactly once
        QCOMPARE(player.timeAtStep(99), 2.0);
        // The probes, events, spikes and alarms of the run: all of them, each once.
        size_t probes = 0, events = 0, spikes = 0, alarms = 0;
        for (const QList<QVariant>& args : batches) {
            const LiveBatch b = args.at(0).value<LiveBatch>();
            QCOMPARE(b.runId, m_run);
            probes += size_t(b.probes.size());
            events += size_t(b.events.size());
            spikes += size_t(b.spikes.size());
            alarms += size_t(b.alarms.size());
        }
        QCOMPARE(probes, size_t(40));
        QCOMPARE(events, size_t(1));
        QCOMPARE(spikes, size_t(1));
        QCOMPARE(alarms, size_t(1));
    }

    // Recorded wall time: step s lasted 0.1 s (even) or 0.05 s (odd) when it trained; x2 halves.
    void recordedWallTime() {
        ReplayPlayer player;
        player.load(m_db, m_run);
        player.setRecordedTime(1.0);
        QVERIFY(qAbs(player.timeAtStep(0) - 0.1) < 1e-9);
        QVERIFY(qAbs(player.timeAtStep(1) - 0.15) < 1e-9);
        QVERIFY(qAbs(player.timeAtStep(99) - 7.5) < 1e-9);
        QSignalSpy batches(&player, &ReplayPlayer::batchReady);
        player.advance(0.3);  // steps 0-3 end at 0.1, 0.15, 0.25, 0.3
        QCOMPARE(emittedSteps(batches), (std::vector<int64_t>{0, 1, 2, 3}));
        player.setRecordedTime(2.0);  // twice as fast from here on
        player.advance(0.075);        // steps 4 and 5 take 0.05 + 0.025
        QCOMPARE(player.position(), int64_t(5));
    }

    // Pause: nothing more comes, whatever the clock does; play continues at the next step.
    void pauseStopsAndResumeContinues() {
        ReplayPlayer player;
        player.load(m_db, m_run);
        player.setStepsPerSecond(10);
        QSignalSpy batches(&player, &ReplayPlayer::batchReady);
        player.play();
        QVERIFY(player.isPlaying());
        player.advance(1.0);
        QCOMPARE(player.position(), int64_t(9));
        player.pause();
        QVERIFY(!player.isPlaying());
        const auto before = emittedSteps(batches).size();
        QTest::qWait(3 * player.timerIntervalMs());  // the timer is stopped: no tick emits
        QCOMPARE(emittedSteps(batches).size(), before);
        player.play();
        player.advance(0.1);
        const auto steps = emittedSteps(batches);
        QCOMPARE(steps.size(), size_t(11));
        QCOMPARE(steps.back(), int64_t(10));  // the step after the pause, not a later one
        player.pause();
    }

    // Issue 37, item 2: a replay showed the whole stored run. The histograms and attention
    // maps read the store, and the window's two-second "follow a run being written" timer
    // reloaded the whole run under the replay (its header never said "finished"). Paused at
    // step 20 of 100, every view must still end at 20 after that timer has had its chance.
    void everyViewEndsAtTheReplayedStep() {
        const QString db = m_dir.filePath(QStringLiteral("maps.db"));
        const int64_t run = test::writeKnownRun(db, "with-maps", 100, true);
        MainWindow w;
        w.setQuiet(true);
        w.show();
        QVERIFY(w.openDatabase(db));
        QString error;
        QVERIFY2(w.startReplay(run, 50, &error), qPrintable(error));
        ReplayPlayer* player = w.part<ReplayPlayer>();
        player->pause();
        player->seek(25);
        const auto endsAt25 = [&] {
            QCOMPARE(w.part<LivePlotsPanel>()->run().steps.back().step, int64_t(25));
            QTRY_COMPARE(w.part<HistogramPanel>()->lastLoadedStep(), int64_t(20));
            QCOMPARE(w.part<HistogramPanel>()->loadedSteps(), 3);
            QTRY_COMPARE(w.part<AttentionMapPanel>()->shownStep(), int64_t(20));
            QCOMPARE(w.part<AttentionMapPanel>()->stepCount(), 3);
        };
        endsAt25();
        QTest::qWait(2500);  // the follow timer (2 s) would have reloaded the stored run
        endsAt25();
        player->seek(99);  // the whole run, once the replay reaches its end
        QTRY_COMPARE(w.part<HistogramPanel>()->loadedSteps(), 10);
        QTRY_COMPARE(w.part<AttentionMapPanel>()->stepCount(), 10);
    }

    // Scrub to k (the bar's slider and seek()): the live views hold exactly the steps 0..k and
    // the probes up to k; scrubbing back shows fewer.
    void scrubShowsExactlyTheRowsUpToK() {
        MainWindow w;
        w.setQuiet(true);
        QVERIFY(w.openDatabase(m_db));
        QString error;
        QVERIFY2(w.startReplay(m_run, 50, &error), qPrintable(error));
        ReplayPlayer* player = w.part<ReplayPlayer>();
        player->pause();
        for (int64_t k : {63, 17, 99, 0}) {
            player->seek(k);
            const RunSnapshot& shown = w.part<LivePlotsPanel>()->run();
            QCOMPARE(shown.runId, m_run);
            QCOMPARE(int64_t(shown.steps.size()), k + 1);
            QCOMPARE(shown.steps.back().step, k);
            for (size_t i = 0; i < shown.steps.size(); ++i)
                QCOMPARE(shown.steps[i].step, int64_t(i));
            QCOMPARE(int64_t(shown.probes.size()), 2 * (k / 5 + 1));
            for (const ProbeStats& p : shown.probes) QVERIFY(p.step <= k);
            QCOMPARE(player->position(), k);
        }
        QVERIFY(w.part<ReplayBar>()->positionText().contains(QStringLiteral("step 0 / 99")));
        // Playing on from a scrub continues after k.
        player->seek(40);
        player->advance(0.02);
        QCOMPARE(w.part<LivePlotsPanel>()->run().steps.back().step, int64_t(41));
    }

    // Space pauses a replay when nothing trains; Run > Replay's path leaves the views on it.
    void spaceTogglesTheReplay() {
        MainWindow w;
        w.setQuiet(true);
        w.show();
        QVERIFY(w.openDatabase(m_db));
        QVERIFY(w.startReplay(m_run, 5));
        QVERIFY(w.part<ReplayPlayer>()->isPlaying());
        w.togglePause();
        QVERIFY(!w.part<ReplayPlayer>()->isPlaying());
        w.togglePause();
        QVERIFY(w.part<ReplayPlayer>()->isPlaying());
        w.stopReplay();
        QVERIFY(!w.part<ReplayPlayer>()->hasRun());
    }
};

QTEST_MAIN(LessonReplayTest)
#include "lesson_replay_test.moc"
