// lesson_player_test.cpp — the lesson player (the lessons issue, "In the app"): it walks a
// lesson's steps and shows each step's text; a malformed lesson shows the parser's message,
// which names the step and the field, and the window goes on working; a pause condition on a
// replayed run fires at the first probe step whose stored value crosses the threshold, the
// player shows the callout and the plot it names is framed; on a live run the worker pauses
// the trainer at the exact step and a lesson's intervention lands at its at_step.
#include "lessons/lesson_player.h"

#include <QAction>
#include <QDockWidget>
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QProcess>
#include <QPushButton>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <nlohmann/json.hpp>

#include "common/run_controller.h"
#include "compare/compare_panel.h"
#include "lesson_test_util.h"
#include "lessons/lesson_library.h"
#include "lessons/lesson_stage.h"
#include "lessons/replay_player.h"
#include "live/histogram_panel.h"
#include "live/live_plots_panel.h"
#include "qcustomplot.h"
#include "shell/main_window.h"

using namespace qklab;
using namespace qklab::gui;

class LessonPlayerTest : public QObject {
    Q_OBJECT
  private:
    QTemporaryDir m_dir;
    QString m_db;
    int64_t m_run = 0;

    QString writeFile(const QString& name, const std::string& text) {
        const QString path = m_dir.filePath(name);
        QFile f(path);
        if (!f.open(QIODevice::WriteOnly)) return {};
        f.write(text.data(), qint64(text.size()));
        return path;
    }

    // The first probe step at which layer 0's stored raw max logit passes 30.
    int64_t firstCrossing() {
        RunStore store(m_db.toStdString(), StoreAccess::ReadOnly);
        for (const ProbeStats& p : store.probeStats(m_run, -1))
            if (p.layer == 0 && p.logitMaxRaw > 30) return p.step;
        return -1;
    }

    std::unique_ptr<MainWindow> window() {
        auto w = std::make_unique<MainWindow>();
        w->setQuiet(true);
        w->show();
        if (!w->openDatabase(m_db)) return nullptr;
        return w;
    }

    // The tiny test model as a lesson step's "set".
    static nlohmann::json tinySet() {
        nlohmann::json set = nlohmann::json::object();
        for (const QString& a : test::tinyOverrides(40)) {
            const QString key = a.section(QLatin1Char('='), 0, 0);
            set[key.toStdString()] =
                nlohmann::json::parse(a.section(QLatin1Char('='), 1).toStdString());
        }
        return set;
    }

  private slots:
    void initTestCase() {
        registerGuiMetaTypes();
        QCoreApplication::setOrganizationName(QStringLiteral("qklab-tests"));
        QVERIFY(m_dir.isValid());
        m_db = m_dir.filePath(QStringLiteral("lessons.db"));
        m_run = test::writeKnownRun(m_db, "replay-me", 100);
    }

    void walksTheStepsAndShowsTheirText() {
        auto w = window();
        QVERIFY(w);
        QVERIFY(w->openLesson(test::testLessonPath()));
        LessonPlayer* p = w->part<LessonPlayer>();
        QVERIFY(w->findChild<QDockWidget*>(QStringLiteral("lessonDock"))->isVisible());
        QCOMPARE(p->counterText(), QStringLiteral("1 / 3"));
        QVERIFY(p->shownText().contains(QStringLiteral("Welcome")));
        QVERIFY(p->shownText().contains(QStringLiteral("Look at the loss first.")));  // Markdown
        QVERIFY(!p->notesVisible());
        p->setNotesVisible(true);
        QVERIFY(p->notesVisible());
        p->next();
        QCOMPARE(p->counterText(), QStringLiteral("2 / 3"));
        QVERIFY(p->shownText().contains(QStringLiteral("raw max logit")));
        QVERIFY(w->part<ReplayPlayer>()->hasRun());  // the step's action: replay run "replay-me"
        QCOMPARE(w->part<ReplayPlayer>()->runId(), m_run);
        p->next();
        QCOMPARE(p->counterText(), QStringLiteral("3 / 3"));
        auto* tabs = w->findChild<QTabWidget*>();
        QCOMPARE(tabs->currentWidget(), static_cast<QWidget*>(w->part<HistogramPanel>()));
        QCOMPARE(w->part<HistogramPanel>()
                     ->findChild<QComboBox*>(QStringLiteral("histHead"))
                     ->currentData(),
                 QVariant(1));
        p->next();  // the last step: nothing after it
        QCOMPARE(p->counterText(), QStringLiteral("3 / 3"));
        p->back();
        p->back();
        QCOMPARE(p->counterText(), QStringLiteral("1 / 3"));
        // Opened at a later step, the steps before it do not run (no replay from step 2).
        QVERIFY(w->openLesson(test::testLessonPath(), 2));
        QCOMPARE(p->counterText(), QStringLiteral("3 / 3"));
        QVERIFY(!w->part<ReplayPlayer>()->hasRun());
        // A step's layer and head survive the panels' rebuild for a run shown after it.
        QSignalSpy opened(w.get(), &MainWindow::runOpened);
        w->openRun(m_run);
        QVERIFY(opened.wait(10000));
        QTRY_COMPARE(w->part<HistogramPanel>()
                         ->findChild<QComboBox*>(QStringLiteral("histHead"))
                         ->currentData(),
                     QVariant(1));
    }

    // A clicker has only Next (Page Down): while a callout waits it continues the run, and
    // the step stays; with nothing waiting it moves to the next step.
    void clickerNextContinuesAWaitingCalloutFirst() {
        auto w = window();
        QVERIFY(w);
        w->show();
        QVERIFY(QTest::qWaitForWindowExposed(w.get()));
        QVERIFY(w->openLesson(test::testLessonPath()));
        LessonPlayer* p = w->part<LessonPlayer>();
        QSignalSpy resumed(p, &LessonPlayer::resumeRequested);
        p->showCallout(QStringLiteral("Raw max logit passed **30**."), true);
        auto* cont = p->findChild<QPushButton*>(QStringLiteral("lessonContinue"));
        QVERIFY(cont->text().contains(QStringLiteral("Space")));
        QVERIFY(cont->text().contains(QStringLiteral("clicker")));
        QTest::keyClick(w.get(), Qt::Key_PageDown);
        QCOMPARE(resumed.count(), 1);
        QCOMPARE(p->counterText(), QStringLiteral("1 / 3"));
        QVERIFY(!p->calloutVisible());
        QTest::keyClick(w.get(), Qt::Key_PageDown);
        QCOMPARE(resumed.count(), 1);
        QCOMPARE(p->counterText(), QStringLiteral("2 / 3"));
    }

    // Issue 37, item 1: Space pressed whatever had focus. After a click on Next, Space at a
    // callout skipped a step; with Start focused it queued a stray run of the form's config.
    // Now Space, Page Down and Right continue or go on, Page Up and Left go back, whatever has
    // focus, and a text field being typed in keeps its Space.
    void lessonKeysActWhateverHasFocus() {
        auto w = window();
        QVERIFY(w);
        QVERIFY(QTest::qWaitForWindowExposed(w.get()));
        QVERIFY(w->openLesson(test::testLessonPath()));
        LessonPlayer* p = w->part<LessonPlayer>();
        QSignalSpy resumed(p, &LessonPlayer::resumeRequested);
        auto* next = p->findChild<QPushButton*>(QStringLiteral("lessonNext"));
        auto* start = w->findChild<QPushButton*>(QStringLiteral("startButton"));
        QVERIFY(next && start);
        const auto press = [](Qt::Key key) {
            QWidget* focus = QApplication::focusWidget();
            QVERIFY(focus);
            QTest::keyClick(focus, key);
        };
        QTest::mouseClick(next, Qt::LeftButton);  // the mouse leaves focus on Next
        QCOMPARE(p->counterText(), QStringLiteral("2 / 3"));
        next->setFocus();
        p->showCallout(QStringLiteral("passed **30**"), true);
        press(Qt::Key_Space);
        QCOMPARE(resumed.count(), 1);  // Continue, not Next
        QCOMPARE(p->counterText(), QStringLiteral("2 / 3"));
        start->setFocus();
        press(Qt::Key_Space);  // nothing waits: the next step, and no run
        QCOMPARE(p->counterText(), QStringLiteral("3 / 3"));
        QVERIFY(!w->controller()->isBusy());
        QVERIFY(w->controller()->queued().isEmpty());
        press(Qt::Key_Left);
        QCOMPARE(p->counterText(), QStringLiteral("2 / 3"));
        press(Qt::Key_PageUp);
        QCOMPARE(p->counterText(), QStringLiteral("1 / 3"));
        press(Qt::Key_Right);
        QCOMPARE(p->counterText(), QStringLiteral("2 / 3"));
        auto* name = w->findChild<QLineEdit*>(QStringLiteral("runName"));
        name->setFocus();
        QTest::keyClicks(name, QStringLiteral("a b"));
        QCOMPARE(name->text(), QStringLiteral("a b"));  // typed, not a step
        QCOMPARE(p->counterText(), QStringLiteral("2 / 3"));
        press(Qt::Key_PageDown);  // the clicker's key is always the lesson's
        QCOMPARE(p->counterText(), QStringLiteral("3 / 3"));
        QCOMPARE(resumed.count(), 1);
        QVERIFY(w->controller()->queued().isEmpty());
        QVERIFY(!w->controller()->isBusy());
    }

    // The parser's message, in the panel: file, step, field. The window carries on.
    void malformedLessonNamesStepAndField() {
        auto w = window();
        QVERIFY(w);
        nlohmann::json lesson = nlohmann::json::parse(
            R"({"title": "Broken", "steps": [{"text": "fine"},
                {"title": "Bad", "text": "x", "pause": [{"kind": "probe_above",
                 "metric": "max_logit", "threshold": 30}]}]})");
        const QString bad = writeFile(QStringLiteral("broken.json"), lesson.dump());
        QVERIFY(!w->openLesson(bad));
        const QString error = w->part<LessonPlayer>()->errorText();
        QVERIFY2(error.contains(QStringLiteral("step 2")), qPrintable(error));
        QVERIFY2(error.contains(QStringLiteral("pause[0].metric")), qPrintable(error));
        QVERIFY2(error.contains(QStringLiteral("max_logit")), qPrintable(error));
        QVERIFY(!w->part<LessonPlayer>()->hasLesson());
        // Not JSON at all, and a name that is nothing: messages too, no crash.
        QVERIFY(!w->openLesson(writeFile(QStringLiteral("junk.json"), "{ not json")));
        QVERIFY(w->part<LessonPlayer>()->errorText().contains(QStringLiteral("not valid JSON")));
        QVERIFY(!w->openLesson(QStringLiteral("no-such-lesson")));
        QVERIFY(w->part<LessonPlayer>()->errorText().contains(QStringLiteral("no-such-lesson")));
        // The window still works: a good lesson opens, a stored run opens.
        QVERIFY(w->openLesson(test::testLessonPath()));
        QVERIFY(w->part<LessonPlayer>()->errorText().isEmpty());
        QSignalSpy opened(w.get(), &MainWindow::runOpened);
        w->openRun(m_run);
        QVERIFY(opened.wait(10000));
    }

    // `qklab --lesson BAD --quiet` says why on stderr and exits 2; the app does not crash.
    void commandLineLessonError() {
        const QString bad =
            writeFile(QStringLiteral("cli-broken.json"),
                      R"({"title": "B", "steps": [{"text": "x", "view": "lvie"}]})");
        QProcess app;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("XDG_CONFIG_HOME"), m_dir.filePath(QStringLiteral("cfg")));
        app.setProcessEnvironment(env);
        app.start(QString::fromUtf8(qklab::testpaths::appPath()),
                  {QStringLiteral("--db"), m_db, QStringLiteral("--lesson"), bad,
                   QStringLiteral("--quiet")});
        QVERIFY(app.waitForFinished(60000));
        const QString err = QString::fromUtf8(app.readAllStandardError());
        QCOMPARE(app.exitStatus(), QProcess::NormalExit);
        QCOMPARE(app.exitCode(), 2);
        QVERIFY2(err.contains(QStringLiteral("step 1")) && err.contains(QStringLiteral("view")),
                 qPrintable(err));
    }

    // Every lesson built into the app parses (names resolve by id too).
    void embeddedLessonsLoad() {
        for (const LessonEntry& e : embeddedLessons()) {
            QVERIFY2(e.loads, qPrintable(e.summary));
            QCOMPARE(resolveLesson(e.id), e.path);
        }
        QCOMPARE(resolveLesson(test::testLessonPath()), test::testLessonPath());
        // File > Open lesson… lists them by title.
        LessonChooser chooser;
        auto* list = chooser.findChild<QListWidget*>(QStringLiteral("lessonList"));
        QVERIFY(list);
        QCOMPARE(list->count(), embeddedLessons().size());
        for (int i = 0; i < list->count(); ++i)
            QVERIFY(list->item(i)->text().startsWith(embeddedLessons()[i].title));
        if (list->count() == 0) return;
        QVERIFY(chooser.findChild<QLabel*>(QStringLiteral("lessonSummary"))->text() ==
                embeddedLessons().value(0).summary);
    }

    // Step 2 replays "replay-me" with "pause when layer 0's raw max logit passes 30": the
    // replay stops right after the first probe step whose stored value is above 30.
    void pauseConditionOnAReplayFiresAtTheCrossing() {
        const int64_t expected = firstCrossing();
        QVERIFY(expected > 0);
        auto w = window();
        QVERIFY(w);
        QVERIFY(w->openLesson(test::testLessonPath()));
        QSignalSpy shown(w->part<LessonStage>(), &LessonStage::calloutShown);
        w->part<LessonPlayer>()->next();
        ReplayPlayer* replay = w->part<ReplayPlayer>();
        QVERIFY(replay->isPlaying());
        replay->advance(100.0);  // far past the end: the condition must stop it
        QCOMPARE(shown.count(), 1);
        QCOMPARE(replay->position(), expected);
        QVERIFY(!replay->isPlaying());
        QCOMPARE(w->part<LivePlotsPanel>()->run().steps.back().step,
                 expected);  // nothing after it shown
        LessonPlayer* p = w->part<LessonPlayer>();
        QVERIFY(p->calloutVisible());
        QVERIFY2(p->calloutText().contains(QStringLiteral("passed **30**")),
                 qPrintable(p->calloutText()));
        QCOMPARE(w->part<LessonStage>()->highlightedPlot(),
                 static_cast<QWidget*>(w->part<LivePlotsPanel>()->logitPlot()));
        // Continue: the callout goes, the replay goes on from the next step, and the
        // condition does not fire twice.
        auto* go = p->findChild<QPushButton*>(QStringLiteral("lessonContinue"));
        QVERIFY(go && go->isVisible());
        go->click();
        QVERIFY(!p->calloutVisible());
        QVERIFY(replay->isPlaying());
        replay->advance(100.0);
        QVERIFY(replay->atEnd());
        QCOMPARE(shown.count(), 1);
        // Next clears a highlight.
        p->next();
        QVERIFY(w->part<LessonStage>()->highlightedPlot() == nullptr);
    }

    // A probe condition fires in the middle of a step's report (before its metrics): the
    // views still get every row of that step, and nothing after it.
    void liveCalloutCarriesTheRowsOfItsStep() {
        nlohmann::json set = tinySet();
        nlohmann::json lesson = {
            {"title", "Live probe"},
            {"steps",
             {{{"text", "Train."},
               {"action", {{"kind", "start_preset"}, {"preset", "default"}, {"set", set}}},
               {"pause",
                {{{"kind", "probe_above"}, {"metric", "logit_max_raw"}, {"threshold", 0.0}}}}}}}};
        auto w = window();
        QVERIFY(w);
        QSignalSpy shown(w->part<LessonStage>(), &LessonStage::calloutShown);
        QVERIFY(w->openLesson(writeFile(QStringLiteral("probe.json"), lesson.dump())));
        QVERIFY(shown.wait(60000));
        QTest::qWait(300);
        const RunSnapshot& run = w->part<LivePlotsPanel>()->run();
        QCOMPARE(run.steps.back().step, int64_t(0));  // paused after the first probed step
        QVERIFY(!run.probes.empty());
        QCOMPARE(run.probes.back().step, int64_t(0));
        QCOMPARE(w->part<LessonStage>()->highlightedPlot(),
                 static_cast<QWidget*>(w->part<LivePlotsPanel>()->logitPlot()));
        w->controller()->stopAll();
        QTRY_VERIFY_WITH_TIMEOUT(!w->controller()->isBusy(), 30000);
    }

    // A live run: a lesson trains the tiny preset with "pause at step 15"; the worker pauses
    // the trainer right there (the views end at step 15); the next step intervenes at step 25
    // and the run continues: the stored event sits at step 25.
    void liveRunPausesAtTheStepAndIntervenesAtItsStep() {
        nlohmann::json set = tinySet();
        nlohmann::json lesson = {
            {"title", "Live"},
            {"steps",
             {{{"title", "Train"},
               {"text", "Train the tiny model."},
               {"action", {{"kind", "start_preset"}, {"preset", "default.json"}, {"set", set}}},
               {"pause", {{{"kind", "step"}, {"step", 15}, {"callout", "Step 15 reached."}}}}},
              {{"title", "Lower the LR"},
               {"text", "Halve the LR at step 25."},
               {"action",
                {{"kind", "intervene"},
                 {"at_step", 25},
                 {"event", {{"kind", "lr_multiplier"}, {"factor", 0.5}}}}}}}}};
        const QString path = writeFile(QStringLiteral("live.json"), lesson.dump());
        auto w = window();
        QVERIFY(w);
        QSignalSpy shown(w->part<LessonStage>(), &LessonStage::calloutShown);
        QVERIFY2(w->openLesson(path), qPrintable(w->part<LessonPlayer>()->errorText()));
        QVERIFY(shown.wait(60000));
        RunController* c = w->controller();
        QVERIFY(c->isPaused());
        QTest::qWait(300);  // anything the trainer still reported would have arrived
        QCOMPARE(w->part<LivePlotsPanel>()->run().steps.back().step, int64_t(15));
        QVERIFY(w->part<LessonPlayer>()->calloutText().contains(QStringLiteral("Step 15")));
        const int64_t runId = c->activeRunId();
        QCOMPARE(w->part<LessonStage>()->lessonRunId(), runId);
        w->part<LessonPlayer>()->next();  // the intervention step resumes the run
        QVERIFY(!c->isPaused());
        QTRY_VERIFY_WITH_TIMEOUT(!c->isBusy(), 60000);
        RunStore store(m_db.toStdString(), StoreAccess::ReadOnly);
        const auto events = store.events(runId);
        QCOMPARE(events.size(), size_t(1));
        QCOMPARE(events[0].step, int64_t(25));
        QCOMPARE(events[0].kind, std::string("lr_multiplier"));
        QCOMPARE(events[0].source, std::string("user"));
    }

    // The issue's class: a lesson opened before class and again in class, into the same
    // database. The second time its run is "<name> (2)" (no "already exists"), the compare
    // step compares the runs of this playing, and the lesson's line says when training ended.
    void aLessonRunsAgainIntoTheSameDatabase() {
        nlohmann::json set = tinySet();
        nlohmann::json lesson = {
            {"title", "Twice"},
            {"steps",
             {{{"text", "Train."},
               {"action",
                {{"kind", "start_preset"},
                 {"preset", "default"},
                 {"name", "twice"},
                 {"set", set}}}},
              {{"text", "Train again."},
               {"action",
                {{"kind", "start_preset"},
                 {"preset", "default"},
                 {"name", "twice-b"},
                 {"set", set}}}},
              {{"text", "Compare."},
               {"view", "compare"},
               {"action", {{"kind", "compare"}, {"runs", {"twice", "twice-b"}}}}}}}};
        const QString path = writeFile(QStringLiteral("twice.json"), lesson.dump());
        auto w = window();
        QVERIFY(w);
        RunController* c = w->controller();
        LessonPlayer* player = w->part<LessonPlayer>();
        std::vector<int64_t> firstIds;
        auto* status = player->findChild<QLabel*>(QStringLiteral("lessonStatus"));
        auto* replayInstead =
            player->findChild<QPushButton*>(QStringLiteral("lessonReplayInstead"));
        auto* trainLive = player->findChild<QPushButton*>(QStringLiteral("lessonTrainLive"));
        // A step with a recording trains nothing until the teacher chooses (issue 37): the
        // second playing chooses "Train live".
        const auto trainStep = [&](int playing) {
            QCOMPARE(player->sourceChoiceWaiting(), playing == 2);
            QCOMPARE(trainLive->isVisibleTo(player), playing == 2);
            if (playing == 2) {
                QVERIFY(!c->isBusy() && c->queued().isEmpty());
                trainLive->click();
            }
            QVERIFY2(status->text().startsWith(QStringLiteral("Training")),
                     qPrintable(status->text()));
            QTRY_VERIFY_WITH_TIMEOUT(status->text().contains(QStringLiteral("has finished")),
                                     60000);
        };
        const auto trainedBoth = [&](int playing) {
            trainStep(playing);
            player->next();
            trainStep(playing);
            QVERIFY(!c->isBusy());
        };
        for (int playing = 1; playing <= 2; ++playing) {
            QVERIFY2(w->openLesson(path), qPrintable(player->errorText()));
            // The rehearsal's run is there to replay on the second playing.
            QCOMPARE(replayInstead->isVisibleTo(player), playing == 2);
            trainedBoth(playing);
            player->next();
            QTRY_COMPARE(w->part<ComparePanel>()->runIds().size(), size_t(2));
            if (playing == 1) firstIds = w->part<ComparePanel>()->runIds();
        }
        RunStore store(m_db.toStdString(), StoreAccess::ReadOnly);
        const std::vector<int64_t> again = w->part<ComparePanel>()->runIds();
        QCOMPARE(store.findRun("twice (2)").id, again[0]);
        QCOMPARE(store.findRun("twice-b (2)").id, again[1]);
        QVERIFY(again[0] > firstIds[1]);
        QCOMPARE(store.findRun("twice").id, firstIds[0]);
        // Too slow on the day: nothing trains, and the newest recorded run replays.
        player->goTo(0);
        QVERIFY(replayInstead->isVisibleTo(player));
        QVERIFY(!c->isBusy());
        replayInstead->click();
        QTRY_VERIFY(w->part<ReplayPlayer>()->hasRun());
        QCOMPARE(w->part<ReplayPlayer>()->runId(), again[0]);
        QTRY_VERIFY_WITH_TIMEOUT(!c->isBusy(), 30000);
    }

    // Issue 37: Back to a training step while its run trains stopped that run, and its end
    // ("“stale” ended: stopped at step 11") overwrote "Training “stale (2)” live." while the
    // new run trained.
    void aStoppedLessonRunLeavesNoStaleLine() {
        nlohmann::json set = tinySet();
        set["schedule.steps"] = 100000;  // still training when the step is entered again
        nlohmann::json lesson = {{"title", "Stale"},
                                 {"steps",
                                  {{{"text", "Train."},
                                    {"action",
                                     {{"kind", "start_preset"},
                                      {"preset", "default"},
                                      {"name", "stale"},
                                      {"set", set}}}}}}};
        const QString path = writeFile(QStringLiteral("stale.json"), lesson.dump());
        auto w = window();
        QVERIFY(w);
        RunController* c = w->controller();
        LessonPlayer* player = w->part<LessonPlayer>();
        auto* status = player->findChild<QLabel*>(QStringLiteral("lessonStatus"));
        QVERIFY2(w->openLesson(path), qPrintable(player->errorText()));
        QSignalSpy started(c, &RunController::started);
        QVERIFY(started.wait(60000));
        QSignalSpy ended(c, &RunController::finished);
        player->goTo(0);  // Back to the same step: "stale" stops, "stale (2)" trains
        QVERIFY(ended.wait(60000));
        QVERIFY(started.count() == 2 || started.wait(60000));
        QCoreApplication::processEvents();
        QCOMPARE(status->text(), QStringLiteral("Training “stale (2)” live."));
        c->stopAll();
        QTRY_VERIFY_WITH_TIMEOUT(!c->isBusy(), 60000);
    }

    // Numbers in the text are the run's own: the callout's {{loss at=3}} is step 3's stored
    // loss, and the step text's {{loss at=0}} fills in once step 0 has trained.
    void placeholdersShowTheRunOnScreen() {
        nlohmann::json lesson = {
            {"title", "Values"},
            {"steps",
             {{{"text", "Loss at the start: {{loss at=0}}."},
               {"action",
                {{"kind", "start_preset"},
                 {"preset", "default"},
                 {"name", "values"},
                 {"set", tinySet()}}},
               {"pause",
                {{{"kind", "step"}, {"step", 5}, {"callout", "Step 3 had {{loss at=3}}."}}}}}}}};
        auto w = window();
        QVERIFY(w);
        QSignalSpy shown(w->part<LessonStage>(), &LessonStage::calloutShown);
        QVERIFY(w->openLesson(writeFile(QStringLiteral("values.json"), lesson.dump())));
        QVERIFY(shown.wait(60000));
        const int64_t run = w->controller()->activeRunId();
        w->controller()->stopAll();
        QTRY_VERIFY_WITH_TIMEOUT(!w->controller()->isBusy(), 30000);
        RunStore store(m_db.toStdString(), StoreAccess::ReadOnly);
        const auto steps = store.stepMetrics(run);
        QVERIFY(steps.size() > 3);
        LessonPlayer* p = w->part<LessonPlayer>();
        QCOMPARE(p->calloutText(),
                 QStringLiteral("Step 3 had %1.").arg(QString::number(steps[3].loss, 'g', 3)));
        QTRY_VERIFY(p->shownText().contains(
            QStringLiteral("Loss at the start: %1.").arg(QString::number(steps[0].loss, 'g', 3))));
    }

    // Opened at a step that trains nothing (a lesson begun mid-way, a recorded database), the
    // views show the stored run of the step that trained it, not an empty view.
    void aLaterStepShowsItsRunFromTheStore() {
        const int64_t stored = test::writeKnownRun(m_db, "own-run", 30);
        nlohmann::json lesson = {
            {"title", "Own"},
            {"steps",
             {{{"text", "Train."},
               {"action",
                {{"kind", "start_preset"},
                 {"preset", "default"},
                 {"name", "own-run"},
                 {"set", tinySet()}}}},
              {{"text", "Its histogram."}, {"view", "histograms"}, {"layer", 0}}}}};
        auto w = window();
        QVERIFY(w);
        QVERIFY(w->openLesson(writeFile(QStringLiteral("own.json"), lesson.dump()), 1));
        QTRY_COMPARE(w->part<LivePlotsPanel>()->runId(), stored);
        QCOMPARE(w->findChild<QTabWidget*>()->currentWidget(),
                 static_cast<QWidget*>(w->part<HistogramPanel>()));
        QVERIFY(!w->controller()->isBusy());  // nothing trained
    }

    // File > Fresh class database: one click, a new empty database beside the open one; the
    // old one and its runs stay.
    void aClassStartsFromAFreshDatabaseInOneClick() {
        auto w = window();
        QVERIFY(w);
        const QString before = w->databasePath();
        auto* fresh = w->findChild<QAction*>(QStringLiteral("freshClassDatabase"));
        QVERIFY(fresh);
        fresh->trigger();
        const QString now = w->databasePath();
        QVERIFY(now != before);
        QCOMPARE(QFileInfo(now).absolutePath(), QFileInfo(before).absolutePath());
        QVERIFY2(QFileInfo(now).fileName().startsWith(QStringLiteral("class-")), qPrintable(now));
        QVERIFY(RunStore(now.toStdString(), StoreAccess::ReadOnly).listRuns().empty());
        QVERIFY(!RunStore(before.toStdString(), StoreAccess::ReadOnly).listRuns().empty());
        fresh->trigger();  // twice in one minute: another file, not the same one
        QVERIFY(w->databasePath() != now);
    }
};

QTEST_MAIN(LessonPlayerTest)
#include "lesson_player_test.moc"
#include "support/test_paths.h"
