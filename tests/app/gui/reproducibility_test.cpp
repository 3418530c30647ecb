// reproducibility_test.cpp — the same config gives the same run in the app (a lesson's run),
// the CLI and a sweep worker, bit for bit (issue 22, item 3).
//
// `qklab --lesson 02-blowup` gave one of two step-0 losses: the app's start-up BLAS check drew
// from LibTorch's global generator while the lesson's model was being initialised from it. A
// thread that draws from that generator without pause stands in for it here; the model now
// draws its weights from a generator of its own.
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/run_controller.h"
#include "gui_test_util.h"
#include "qklab/config/resources.h"
#include "qklab/store/run_store.h"
#include "shell/main_window.h"
#include "support/global_rng_hammer.h"

using namespace qklab;
using namespace qklab::gui;

namespace {

bool sameBits(double a, double b) {
    return std::memcmp(&a, &b, sizeof a) == 0;
}

bool sameBits(const std::optional<double>& a, const std::optional<double>& b) {
    return a.has_value() == b.has_value() && (!a || sameBits(*a, *b));
}

// Lesson 2's first run (healthy_attention.json) cut to 12 steps: bit-identity shows from the
// first step's weights on (the hazard was the initialisation), and 12 steps take in probes at 0,
// 5 and 10 and the final evaluation. The app plays it as a one-step lesson of the same kind as
// lesson 2's first step (02-blowup itself refuses a 12-step run: its text reads step 95); the
// lesson finds the preset through QKLAB_EXPERIMENTS_DIR, the CLI and the sweep by path.
constexpr int kSteps = 12;

bool writeShortLesson(const QString& dir) {
    namespace fs = std::filesystem;
    std::ifstream in(qklab::testpaths::source("/experiments/healthy_attention.json"));
    nlohmann::json preset = nlohmann::json::parse(in);
    preset.merge_patch({{"schedule", {{"steps", kSteps}, {"warmup_steps", 4}}}});
    const fs::path folder(dir.toStdString());
    std::ofstream(folder / "healthy_attention.json") << preset.dump(2);
    const nlohmann::json lesson = {{"title", "Reproducibility"},
                                   {"summary", "Lesson 2's first step, cut short."},
                                   {"minutes", 1},
                                   {"steps",
                                    {{{"title", "The healthy reference"},
                                      {"text", "Let it finish."},
                                      {"view", "live"},
                                      {"action",
                                       {{"kind", "start_preset"},
                                        {"preset", "healthy_attention.json"},
                                        {"name", "lesson-blowup-healthy"}}}}}}};
    std::ofstream out(folder / "lesson.json");
    out << lesson.dump(2);
    return static_cast<bool>(out);
}

// Every step's loss, validation loss and grad norm, and every probe value, bit for bit.
QString firstDifference(const QString& dbA, const std::string& runA, const QString& dbB,
                        const std::string& runB) {
    RunStore a(dbA.toStdString(), StoreAccess::ReadOnly),
        b(dbB.toStdString(), StoreAccess::ReadOnly);
    const int64_t ia = a.findRun(runA).id, ib = b.findRun(runB).id;
    const auto sa = a.stepMetrics(ia), sb = b.stepMetrics(ib);
    if (sa.size() != sb.size() || sa.empty())
        return QStringLiteral("%1 vs %2 steps").arg(sa.size()).arg(sb.size());
    for (size_t i = 0; i < sa.size(); ++i)
        if (!sameBits(sa[i].loss, sb[i].loss) || !sameBits(sa[i].gradNorm, sb[i].gradNorm) ||
            !sameBits(sa[i].valLoss, sb[i].valLoss))
            return QStringLiteral("step %1: loss %2 vs %3")
                .arg(sa[i].step)
                .arg(sa[i].loss, 0, 'g', 17)
                .arg(sb[i].loss, 0, 'g', 17);
    const auto pa = a.probeStats(ia), pb = b.probeStats(ib);
    if (pa.size() != pb.size())
        return QStringLiteral("%1 vs %2 probe rows").arg(pa.size()).arg(pb.size());
    for (size_t i = 0; i < pa.size(); ++i)
        for (const auto& column : probeColumns())
            if (!sameBits(pa[i].*column.field, pb[i].*column.field))
                return QStringLiteral("probe step %1 layer %2 head %3: %4 differs")
                    .arg(pa[i].step)
                    .arg(pa[i].layer)
                    .arg(pa[i].head)
                    .arg(QString::fromLatin1(column.name));
    return {};
}

int cli(const QStringList& args, QString* err) {
    QProcess p;
    p.start(QString::fromUtf8(qklab::testpaths::cliPath()), args);
    p.waitForFinished(600000);
    *err = QString::fromLocal8Bit(p.readAllStandardError());
    return p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
}

}  // namespace

class ReproducibilityTest : public QObject {
    Q_OBJECT
  private:
    QTemporaryDir m_dir;
    QTemporaryDir m_presets;

    QString preset() const { return m_presets.filePath(QStringLiteral("healthy_attention.json")); }

  private slots:
    void initTestCase() {
        registerGuiMetaTypes();
        QCoreApplication::setOrganizationName(QStringLiteral("qklab-tests"));
        QVERIFY(m_dir.isValid());
        QVERIFY(m_presets.isValid());
        QVERIFY(writeShortLesson(m_presets.path()));
        qputenv("QKLAB_EXPERIMENTS_DIR", m_presets.path().toUtf8());
    }

    void aLessonRunEqualsTheCliAndASweepWorkerBitForBit() {
        // The app: lesson 2's first step trains healthy_attention while the global generator
        // is drawn from on another thread, from before the run is built until it trains.
        const QString appDb = m_dir.filePath(QStringLiteral("app.db"));
        qklab::testsupport::GlobalRngHammer hammer;
        hammer.start();
        {
            MainWindow w;
            w.setQuiet(true);
            w.show();
            QVERIFY(w.openDatabase(appDb));
            QSignalSpy started(w.controller(), &RunController::started);
            QSignalSpy finished(w.controller(), &RunController::finished);
            QVERIFY(w.openLesson(m_presets.filePath(QStringLiteral("lesson.json"))));
            QTRY_COMPARE_WITH_TIMEOUT(started.count(), 1, 60000);
            QTest::qWait(500);
            hammer.stop();
            QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 120000);
        }
        QVERIFY2(hammer.draws() > 100, "the hammer drew while the run was built");

        // The CLI, with the app's thread count (run.threads 0 = every core).
        const QString cliDb = m_dir.filePath(QStringLiteral("cli.db"));
        QString err;
        QCOMPARE(cli({QStringLiteral("run"), preset(), QStringLiteral("--db"), cliDb,
                      QStringLiteral("--name"), QStringLiteral("cli")},
                     &err),
                 0);
        const QString diff = firstDifference(appDb, "lesson-blowup-healthy", cliDb, "cli");
        QVERIFY2(diff.isEmpty(), qPrintable(QStringLiteral("app vs CLI: ") + diff));

        // A sweep worker: the same preset as a one-point sweep, with the same thread count.
        std::ifstream in(preset().toStdString());
        nlohmann::json base = nlohmann::json::parse(in);
        base.erase("why");
        const nlohmann::json sweep = {{"why", "one point: the lesson's healthy run"},
                                      {"base", base},
                                      {"axes", {{"run.seed", {1337}}}}};
        const QString sweepFile = m_dir.filePath(QStringLiteral("one.json"));
        std::ofstream(sweepFile.toStdString()) << sweep.dump();
        const QString threads = QString::number(cappedThreads(0));
        QCOMPARE(cli({QStringLiteral("sweep"), sweepFile, QStringLiteral("--db"), cliDb,
                      QStringLiteral("--threads-per-run"), threads, QStringLiteral("--jobs"),
                      QStringLiteral("1")},
                     &err),
                 0);
        RunStore store(cliDb.toStdString(), StoreAccess::ReadOnly);
        const std::vector<RunInfo> runs = store.listRuns();
        QCOMPARE(int(runs.size()), 2);
        const QString sweepDiff = firstDifference(cliDb, "cli", cliDb, runs.back().name);
        QVERIFY2(sweepDiff.isEmpty(),
                 qPrintable(QStringLiteral("CLI vs sweep worker: ") + sweepDiff));
    }
};

QTEST_MAIN(ReproducibilityTest)
#include "reproducibility_test.moc"
#include "support/test_paths.h"
