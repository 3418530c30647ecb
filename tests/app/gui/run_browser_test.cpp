// run_browser_test.cpp — the run list is backed by SQLite, refreshes when another process adds
// a run, edits names/notes/tags, and reports a bad database clearly.
#include <QAction>
#include <QApplication>
#include <QFile>
#include <QFileInfo>
#include <QInputDialog>
#include <QProcess>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>

#include "common/gui_types.h"
#include "common/run_data.h"
#include "gui_test_util.h"
#include "qklab/store/run_store.h"
#include "qklab/store/run_writer.h"
#include "run/run_browser_panel.h"
#include "run/run_list_model.h"

using namespace qklab;
using namespace qklab::gui;

class RunBrowserTest : public QObject {
    Q_OBJECT
  private:
    QTemporaryDir m_dir;

  private slots:
    void initTestCase() {
        registerGuiMetaTypes();
        QVERIFY(m_dir.isValid());
    }

    void newRunFromAnotherProcessAppears() {
        const QString db = m_dir.filePath(QStringLiteral("shared.db"));
        RunBrowserPanel browser;
        browser.setPollInterval(200);
        QVERIFY(browser.openDatabase(db));
        QCOMPARE(browser.model()->rowCount(), 0);
        QSignalSpy changed(&browser, &RunBrowserPanel::runsChanged);

        // The real CLI, as a separate process writing to the same file.
        QProcess cli;
        QStringList args{QStringLiteral("run"),
                         test::sourceDir() + QStringLiteral("/experiments/default.json"),
                         QStringLiteral("--db"),
                         db,
                         QStringLiteral("--name"),
                         QStringLiteral("from-cli")};
        for (const QString& s : test::tinyOverrides(20)) args << QStringLiteral("--set") << s;
        cli.start(QString::fromUtf8(qklab::testpaths::cliPath()), args);
        QVERIFY2(cli.waitForStarted(10000), qPrintable(cli.errorString()));
        // The row appears while the CLI is still training or right after, without any refresh call.
        QTRY_COMPARE_WITH_TIMEOUT(browser.model()->rowCount(), 1, 60000);
        QVERIFY(changed.count() >= 1);
        QCOMPARE(QString::fromStdString(browser.model()->runs()[0].name),
                 QStringLiteral("from-cli"));
        // waitForFinished() is false when the process already ended inside the QTRY loop above.
        QVERIFY(cli.state() == QProcess::NotRunning || cli.waitForFinished(120000));
        QCOMPARE(cli.exitCode(), 0);
        // Status follows the other process to the end.
        QTRY_VERIFY_WITH_TIMEOUT(browser.model()->runs()[0].status == RunStatus::Finished, 10000);
    }

    void newRunFromAnotherConnectionAppears() {
        const QString db = m_dir.filePath(QStringLiteral("writer.db"));
        RunBrowserPanel browser;
        browser.setPollInterval(100);
        QVERIFY(browser.openDatabase(db));
        NewRun nr;
        nr.name = "writer";
        nr.configJson = configToJson(test::tinyConfig()).dump();
        RunWriter w(db.toStdString(), nr);
        QTRY_COMPARE_WITH_TIMEOUT(browser.model()->rowCount(), 1, 5000);
        QCOMPARE(browser.model()->runs()[0].status, RunStatus::Running);
        w.finish(RunStatus::Diverged, "loss became nan");
        QTRY_VERIFY_WITH_TIMEOUT(browser.model()->runs()[0].status == RunStatus::Diverged, 5000);
    }

    void renameNotesTagsAndDeleteThroughTheStore() {
        const QString db = m_dir.filePath(QStringLiteral("edit.db"));
        int64_t id = 0;
        {
            NewRun nr;
            nr.name = "old";
            nr.configJson = configToJson(test::tinyConfig()).dump();
            RunWriter w(db.toStdString(), nr);
            id = w.runId();
            w.finish(RunStatus::Finished);
        }
        RunBrowserPanel browser;
        QVERIFY(browser.openDatabase(db));
        browser.store()->renameRun(id, "new");
        browser.store()->setNotes(id, "blew up at step 40");
        browser.store()->setTags(id, "lesson,blowup");
        browser.refresh();
        const RunInfo* r = browser.model()->runById(id);
        QVERIFY(r);
        QCOMPARE(QString::fromStdString(r->name), QStringLiteral("new"));
        QCOMPARE(QString::fromStdString(r->tags), QStringLiteral("lesson,blowup"));
        browser.selectRun(id);
        QCOMPARE(browser.selectedRunId(), id);
        browser.store()->deleteRun(id);
        browser.refresh();
        QCOMPARE(browser.model()->rowCount(), 0);
    }

    // Issue 37: a double-click on a run opens it and nothing else (it used to open Rename
    // over it too); F2 and the context menu rename.
    void doubleClickOpensTheRunAndF2Renames() {
        const QString db = m_dir.filePath(QStringLiteral("dclick.db"));
        for (const char* name : {"first", "second"}) {
            NewRun nr;
            nr.name = name;
            nr.configJson = configToJson(test::tinyConfig()).dump();
            RunWriter(db.toStdString(), nr).finish(RunStatus::Finished);
        }
        RunBrowserPanel browser;
        QVERIFY(browser.openDatabase(db));
        browser.resize(800, 300);
        browser.show();
        QVERIFY(QTest::qWaitForWindowExposed(&browser));
        auto* table = browser.findChild<QTableView*>(QStringLiteral("runTable"));
        QVERIFY(table);
        // Every dialog that opens is counted, renamed to "renamed" and accepted.
        int dialogs = 0;
        QTimer watch;
        connect(&watch, &QTimer::timeout, &browser, [&dialogs] {
            if (auto* d = qobject_cast<QInputDialog*>(QApplication::activeModalWidget())) {
                ++dialogs;
                d->setTextValue(QStringLiteral("renamed"));
                d->accept();
            }
        });
        watch.start(20);
        QSignalSpy activated(&browser, &RunBrowserPanel::runActivated);
        const QModelIndex second = table->model()->index(0, 0);  // newest first: run 2
        const QPoint at = table->visualRect(second).center();
        QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, at);
        QTest::mouseDClick(table->viewport(), Qt::LeftButton, {}, at);
        // A dialog opened by the double-click would run (and be accepted by the watcher)
        // inside mouseDClick's own call: none did, so none is still to come.
        QCOMPARE(dialogs, 0);
        QVERIFY(activated.count() >= 1);
        QCOMPARE(activated.last().at(0).toLongLong(), qint64(2));
        QCOMPARE(QString::fromStdString(browser.model()->runById(2)->name),
                 QStringLiteral("second"));

        // F2 is Rename, and the context menu offers it with that key.
        table->setFocus();
        QTest::keyClick(table, Qt::Key_F2);
        QTRY_COMPARE(dialogs, 1);
        QCOMPARE(QString::fromStdString(browser.model()->runById(2)->name),
                 QStringLiteral("renamed"));
        QCOMPARE(table->contextMenuPolicy(), Qt::ActionsContextMenu);
        bool offered = false;
        for (QAction* a : table->actions())
            offered |= a->text().startsWith(QStringLiteral("Rename")) &&
                       a->shortcut() == QKeySequence(Qt::Key_F2);
        QVERIFY(offered);
    }

    void replayConfigTurnsInterventionsIntoEvents() {
        const QString db = m_dir.filePath(QStringLiteral("replay.db"));
        int64_t id = 0;
        RunConfig c = test::tinyConfig(50);
        {
            NewRun nr;
            nr.name = "with-intervention";
            nr.configJson = configToJson(c).dump();
            RunWriter w(db.toStdString(), nr);
            id = w.runId();
            w.addEvent(
                EventRecord{21, "qk_norm", "{\"variant\":\"rms\",\"_intervention\":true}", "user"});
            w.flush();
            w.finish(RunStatus::Finished);
        }
        RunStore store(db.toStdString());
        const RunConfig replay = RunBrowserPanel::replayConfig(store, id);
        QCOMPARE(int(replay.events.size()), 1);
        QCOMPARE(replay.events[0].step, int64_t(21));
        QCOMPARE(replay.events[0].kind, EventKind::QkNorm);
        QCOMPARE(replay.events[0].args.variant, QkNormVariant::Rms);
        QCOMPARE(replay.events[0].source, EventSource::Config);
        QVERIFY(validationProblems(replay).empty());
    }

    // Issue 11, item 3: "open" never creates a file; a missing path is created only when the
    // user says so.
    void openNeverCreatesAFile() {
        const QString good = m_dir.filePath(QStringLiteral("open-good.db"));
        const QString typo = m_dir.filePath(QStringLiteral("runz.db"));
        RunBrowserPanel browser;
        QVERIFY(browser.openDatabase(good));
        QStringList asked;
        browser.setCreateConfirmation([&](const QString& path) {
            asked << path;
            return false;
        });
        QVERIFY(!browser.openExistingDatabase(typo));
        QCOMPARE(asked, QStringList{typo});
        QVERIFY(!QFileInfo::exists(typo));
        QCOMPARE(browser.databasePath(), good);
        browser.setCreateConfirmation([](const QString&) { return true; });
        QVERIFY(browser.openExistingDatabase(typo));
        QVERIFY(QFileInfo::exists(typo));
        QVERIFY(browser.openExistingDatabase(good));  // an existing file: no question
    }

    void badDatabaseIsReportedAndPreviousKept() {
        const QString good = m_dir.filePath(QStringLiteral("good.db"));
        const QString bad = m_dir.filePath(QStringLiteral("bad.db"));
        QFile f(bad);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(QByteArray(8192, 'x'));
        f.close();
        {  // at start-up (--db bad.db) nothing was open before: nothing "stays open"
            RunBrowserPanel first;
            QSignalSpy errors(&first, &RunBrowserPanel::error);
            QVERIFY(!first.openDatabase(bad));
            QCOMPARE(errors.count(), 1);
            const QString text = errors.at(0).at(1).toString();
            QVERIFY2(text.contains(QStringLiteral("No database is open")), qPrintable(text));
            QVERIFY2(!text.contains(QStringLiteral("stays open")), qPrintable(text));
            QVERIFY(first.databasePath().isEmpty());
        }
        RunBrowserPanel browser;
        QVERIFY(browser.openDatabase(good));
        QSignalSpy errors(&browser, &RunBrowserPanel::error);
        QVERIFY(!browser.openDatabase(bad));
        QCOMPARE(errors.count(), 1);
        const QString text = errors.at(0).at(1).toString();
        QVERIFY(text.contains(QStringLiteral("bad.db")));
        QVERIFY2(text.contains(QStringLiteral("good.db stays open.")), qPrintable(text));
        QCOMPARE(browser.databasePath(), good);
    }
};

QTEST_MAIN(RunBrowserTest)
#include "run_browser_test.moc"
#include "support/test_paths.h"
