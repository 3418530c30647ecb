// lesson_check_test.cpp — one lesson check for the app and the CLI (issue 22, item 12): every
// lesson below is one the app could not play (a missing preset, /dev/zero as the preset, an
// unknown "set" key, compare with 1 or 20 runs or with numbers for run ids, a negative replay
// speed, layer 2^31). The app refuses it when opening it (no step runs) and `qklab-cli lesson`
// exits 2, both with the same message naming the step and the field; a playable lesson opens
// in both.
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>
#include <memory>

#include "gui_test_util.h"
#include "lessons/lesson_player.h"
#include "qklab/store/run_store.h"
#include "shell/main_window.h"

using namespace qklab;
using namespace qklab::gui;

class LessonCheckTest : public QObject {
    Q_OBJECT
  private:
    QTemporaryDir m_dir;
    QString m_db;

    QString writeLesson(const QString& name, const std::string& secondStep) {
        const QString path = m_dir.filePath(name);
        QFile f(path);
        if (!f.open(QIODevice::WriteOnly)) return {};
        const std::string text =
            R"({"title": "t", "steps": [{"text": "intro"}, )" + secondStep + "]}";
        f.write(text.data(), qint64(text.size()));
        return path;
    }

    // `qklab-cli lesson PATH` with the presets the app sees ($QKLAB_EXPERIMENTS_DIR, as CTest
    // sets it for both): exit code and stderr.
    static std::pair<int, QString> cliCheck(const QString& path) {
        QProcess cli;
        cli.start(QString::fromUtf8(qklab::testpaths::cliPath()), {QStringLiteral("lesson"), path});
        if (!cli.waitForFinished(60000)) return {-1, QStringLiteral("timeout")};
        return {cli.exitCode(), QString::fromUtf8(cli.readAllStandardError())};
    }

  private slots:
    void initTestCase() {
        registerGuiMetaTypes();
        QCoreApplication::setOrganizationName(QStringLiteral("qklab-tests"));
        QVERIFY(m_dir.isValid());
        m_db = m_dir.filePath(QStringLiteral("lessons.db"));
        RunStore(m_db.toStdString());  // an empty qklab database for the windows
    }

    std::unique_ptr<MainWindow> window() {
        auto w = std::make_unique<MainWindow>();
        w->setQuiet(true);
        if (!w->openDatabase(m_db)) return nullptr;
        return w;
    }

    void unplayableLessonsAreRefusedByBothWithTheSameMessage_data() {
        QTest::addColumn<QString>("step");
        QTest::addColumn<QString>("field");
        const std::string start =
            R"({"title": "S", "text": "x", "action": {"kind": "start_preset", )";
        const std::string plain = R"({"title": "S", "text": "x", )";
        const auto row = [](const char* name, const std::string& step, const char* field) {
            QTest::newRow(name) << QString::fromStdString(step) << QString::fromLatin1(field);
        };
        row("missing preset", start + R"("preset": "no-such-preset"}})", "action.preset");
        row("/dev/zero preset", start + R"("preset": "/dev/zero"}})", "action.preset");
        row("unknown set key", start + R"("preset": "default", "set": {"optim.lrr": 1}}})",
            "action.set");
        row("bad set value", start + R"("preset": "default", "set": {"optim.lr": "fast"}}})",
            "action.set.optim.lr");
        row("compare 1 run", plain + R"("action": {"kind": "compare", "runs": ["a"]}})",
            "action.runs");
        std::string twenty;
        for (int i = 0; i < 20; ++i) twenty += std::string(i ? ", " : "") + "\"r\"";
        row("compare 20 runs",
            plain + R"("action": {"kind": "compare", "runs": [)" + twenty + "]}}", "action.runs");
        row("numbers as run ids", plain + R"("action": {"kind": "compare", "runs": [1, 2]}})",
            "action.runs");
        row("negative replay speed",
            plain + R"("action": {"kind": "replay", "run": "r", "steps_per_second": -2}})",
            "action.steps_per_second");
        row("layer 2^31", plain + R"("layer": 2147483648})", "layer");
    }

    void unplayableLessonsAreRefusedByBothWithTheSameMessage() {
        QFETCH(QString, step);
        QFETCH(QString, field);
        const QString path = writeLesson(QStringLiteral("bad.json"), step.toStdString());
        auto w = window();
        QVERIFY(w);
        QVERIFY(!w->openLesson(path));  // refused when opened: the step never plays
        const QString app = w->part<LessonPlayer>()->errorText();
        QVERIFY2(app.contains(QStringLiteral("step 2 (\"S\"): ") + field), qPrintable(app));
        const auto [code, cli] = cliCheck(path);
        QCOMPARE(code, 2);
        QCOMPARE(cli.trimmed(), QStringLiteral("qklab-cli: ") + app);
    }

    void aPlayableLessonOpensInBoth() {
        const QString path =
            writeLesson(QStringLiteral("good.json"),
                        R"({"title": "S", "text": "x", "action": {"kind": "start_preset",
                "preset": "default.json", "set": {"schedule.steps": 100}}},
               {"text": "y", "action": {"kind": "compare", "runs": ["a", "b"]}},
               {"text": "z", "layer": 1, "action": {"kind": "replay", "run": "r",
                "steps_per_second": 5}})");
        const auto [code, cli] = cliCheck(path);
        QCOMPARE(code, 0);
        auto w = window();
        QVERIFY(w);
        // Opened at the last step: nothing trains (the start_preset step does not run).
        QVERIFY2(w->openLesson(path, 3), qPrintable(w->part<LessonPlayer>()->errorText()));
    }
};

QTEST_MAIN(LessonCheckTest)
#include "lesson_check_test.moc"
#include "support/test_paths.h"
