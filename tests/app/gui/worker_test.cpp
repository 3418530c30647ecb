// worker_test.cpp — the worker/GUI bridge: queued signals for progress, batches, finished,
// diverged and failed; pause/resume/stop; queued runs; interventions stored as events.
#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "common/run_controller.h"
#include "common/training_worker.h"
#include "gui_test_util.h"
#include "qklab/store/run_store.h"

using namespace qklab;
using namespace qklab::gui;

namespace {
RunRequest request(const RunConfig& c, const QString& db, const QString& name = {}) {
    RunRequest r;
    r.config = c;
    r.dbPath = db;
    r.name = name;
    return r;
}
}  // namespace

class WorkerTest : public QObject {
    Q_OBJECT
  private:
    QTemporaryDir m_dir;
    QString db(const char* name) const { return m_dir.filePath(QString::fromLatin1(name)); }

  private slots:
    void initTestCase() {
        registerGuiMetaTypes();
        QVERIFY(m_dir.isValid());
    }

    void runReportsProgressBatchesAndFinished() {
        RunController controller;
        QSignalSpy started(&controller, &RunController::started);
        QSignalSpy progress(&controller, &RunController::progress);
        QSignalSpy batches(&controller, &RunController::batchReady);
        QSignalSpy finished(&controller, &RunController::finished);
        QSignalSpy failed(&controller, &RunController::failed);
        controller.enqueue(request(test::tinyConfig(30), db("a.db"), QStringLiteral("tiny")));
        QVERIFY(controller.isBusy());
        QTRY_COMPARE_WITH_TIMEOUT(finished.count() + failed.count(), 1, 180000);
        QVERIFY2(failed.isEmpty(),
                 failed.isEmpty() ? "" : qPrintable(failed.at(0).at(1).toString()));
        QCOMPARE(started.count(), 1);
        QVERIFY(progress.count() >= 1);
        const qint64 runId = finished.at(0).at(0).toLongLong();
        QCOMPARE(finished.at(0).at(1).toString(), QStringLiteral("finished"));
        // The last progress says the run is complete.
        QCOMPARE(progress.last().at(1).toLongLong(), qint64(30));
        QCOMPARE(progress.last().at(2).toLongLong(), qint64(30));
        // Batches are coalesced (fewer signals than steps) yet carry every step exactly once.
        int steps = 0, probes = 0;
        for (const auto& args : batches) {
            const auto b = args.at(0).value<LiveBatch>();
            QCOMPARE(b.runId, runId);
            steps += b.steps.size();
            probes += b.probes.size();
        }
        QCOMPARE(steps, 30);
        QVERIFY(probes > 0);
        QVERIFY(batches.count() < 30);
        RunStore store(db("a.db").toStdString());
        QCOMPARE(int(store.stepMetrics(runId).size()), 30);
        QCOMPARE(QString::fromStdString(store.run(runId).name), QStringLiteral("tiny"));
        QVERIFY(!controller.isBusy());
    }

    void invalidConfigFailsWithoutKillingTheApp() {
        RunController controller;
        QSignalSpy finished(&controller, &RunController::finished);
        QSignalSpy failed(&controller, &RunController::failed);
        RunConfig c = test::tinyConfig(10);
        c.model.nHeads = 3;  // 32 is not divisible by 3
        controller.enqueue(request(c, db("b.db")));
        QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 60000);
        QCOMPARE(finished.count(), 0);
        QVERIFY2(failed.at(0).at(1).toString().contains(QStringLiteral("n_heads")),
                 qPrintable(failed.at(0).at(1).toString()));
        // The controller is ready for the next run.
        controller.enqueue(request(test::tinyConfig(5), db("b.db")));
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
    }

    void unwritableDatabaseFails() {
        RunController controller;
        QSignalSpy failed(&controller, &RunController::failed);
        // A database "inside" a regular file cannot be created, even by root (who may create
        // any missing directory).
        const QString file = db("plain-file");
        QFile f(file);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.close();
        controller.enqueue(request(test::tinyConfig(5), file + QStringLiteral("/x/runs.db")));
        QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 60000);
        QVERIFY(!failed.at(0).at(1).toString().isEmpty());
    }

    void divergingRunEmitsDiverged() {
        RunController controller;
        QSignalSpy finished(&controller, &RunController::finished);
        QSignalSpy diverged(&controller, &RunController::diverged);
        QSignalSpy failed(&controller, &RunController::failed);
        RunConfig c = test::tinyConfig(200);
        // No clipping, an absurd LR (1e3) and a huge init: the loss leaves the finite range
        // quickly.
        c.optim.lr = 1e3;
        c.optim.gradClip = 0;
        c.model.initStd = 1.0;
        c.schedule.warmupSteps = 0;
        c.schedule.decay = LrDecay::Constant;
        controller.enqueue(request(c, db("c.db")));
        QTRY_COMPARE_WITH_TIMEOUT(finished.count() + failed.count(), 1, 180000);
        QVERIFY(failed.isEmpty());
        if (finished.at(0).at(1).toString() != QStringLiteral("diverged"))
            QSKIP("this config did not diverge on this machine");
        QCOMPARE(diverged.count(), 1);
        QCOMPARE(diverged.at(0).at(0).toLongLong(), finished.at(0).at(0).toLongLong());
    }

    void pauseResumeStop() {
        RunController controller;
        QSignalSpy progress(&controller, &RunController::progress);
        QSignalSpy paused(&controller, &RunController::pausedChanged);
        QSignalSpy finished(&controller, &RunController::finished);
        controller.enqueue(request(test::tinyConfig(100000), db("d.db")));
        QTRY_VERIFY_WITH_TIMEOUT(progress.count() >= 2, 60000);
        controller.pause();
        QVERIFY(controller.isPaused());
        QCOMPARE(paused.count(), 1);
        QTest::qWait(400);  // let the step in flight finish
        const int before = progress.count();
        const qint64 stepBefore = progress.last().at(1).toLongLong();
        QTest::qWait(500);
        QVERIFY(progress.count() <= before + 1);
        QVERIFY(progress.last().at(1).toLongLong() <= stepBefore + 1);
        controller.resume();
        QTRY_VERIFY_WITH_TIMEOUT(progress.last().at(1).toLongLong() > stepBefore + 3, 30000);
        controller.stop();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
        QCOMPARE(finished.at(0).at(1).toString(), QStringLiteral("stopped"));
    }

    void queuedRunsTrainInOrder() {
        RunController controller;
        QSignalSpy started(&controller, &RunController::started);
        QSignalSpy finished(&controller, &RunController::finished);
        QSignalSpy idle(&controller, &RunController::idle);
        controller.enqueue(request(test::tinyConfig(5), db("e.db"), QStringLiteral("first")));
        controller.enqueue(request(test::tinyConfig(5), db("e.db"), QStringLiteral("second")));
        QCOMPARE(controller.queued().size(), 1);
        QTRY_COMPARE_WITH_TIMEOUT(idle.count(), 1, 120000);
        QCOMPARE(finished.count(), 2);
        QCOMPARE(started.at(0).at(1).toString(), QStringLiteral("first"));
        QCOMPARE(started.at(1).at(1).toString(), QStringLiteral("second"));
    }

    void interventionsAreStoredAsEvents() {
        RunController controller;
        QSignalSpy progress(&controller, &RunController::progress);
        QSignalSpy batches(&controller, &RunController::batchReady);
        QSignalSpy finished(&controller, &RunController::finished);
        QVERIFY(!controller.intervene(eventFromJson(
            {{"step", 0}, {"kind", "lr_multiplier"}, {"factor", 0.5}}, "test")));  // idle
        controller.enqueue(request(test::tinyConfig(100000), db("f.db")));
        QTRY_VERIFY_WITH_TIMEOUT(progress.count() >= 1, 60000);
        QVERIFY(controller.intervene(
            eventFromJson({{"step", 0}, {"kind", "lr_multiplier"}, {"factor", 0.5}}, "test")));
        QVERIFY(controller.intervene(
            eventFromJson({{"step", 0}, {"kind", "qk_norm"}, {"variant", "rms"}}, "test")));
        QVERIFY(controller.intervene(eventFromJson(
            {{"step", 0}, {"kind", "softcap"}, {"cap", "tanh"}, {"c", 30.0}}, "test")));
        const int at = progress.count();
        QTRY_VERIFY_WITH_TIMEOUT(progress.count() > at + 2, 30000);
        controller.stop();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
        const qint64 runId = finished.at(0).at(0).toLongLong();

        QStringList live;
        for (const auto& args : batches)
            for (const EventRecord& e : args.at(0).value<LiveBatch>().events)
                if (e.source == "user") live << QString::fromStdString(e.kind);
        QCOMPARE(live, (QStringList{"lr_multiplier", "qk_norm", "softcap"}));

        RunStore store(db("f.db").toStdString());
        QStringList stored;
        for (const EventRecord& e : store.events(runId))
            if (e.source == "user") stored << QString::fromStdString(e.kind);
        QCOMPARE(stored, live);
        // The stored steps show the switch took effect: softcap C became 30.
        const auto steps = store.stepMetrics(runId);
        QVERIFY(!steps.empty());
        QCOMPARE(steps.back().softcapC, 30.0);
    }
};

QTEST_MAIN(WorkerTest)
#include "worker_test.moc"
