// smoke_test.cpp — launches the real qklab binary with a tiny config, lets it train ~50 steps,
// and checks the exit code, the screenshot file and that the loss plot had data points.
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

#include "gui_test_util.h"
#include "qklab/store/run_store.h"

class SmokeTest : public QObject {
    Q_OBJECT
  private slots:
    void appTrainsAndScreenshots() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString shot = dir.filePath(QStringLiteral("smoke.png"));
        QStringList args{
            QStringLiteral("--preset"),
            qklab::gui::test::sourceDir() + QStringLiteral("/experiments/blowup_no_qknorm.json"),
            QStringLiteral("--db"),
            dir.filePath(QStringLiteral("smoke.db")),
            QStringLiteral("--autostart"),
            QStringLiteral("--quit-after-steps"),
            QStringLiteral("50"),
            QStringLiteral("--screenshot"),
            shot};
        for (const QString& s : qklab::gui::test::tinyOverrides(60))
            args << QStringLiteral("--set") << s;
        QProcess app;
        app.setProcessChannelMode(QProcess::MergedChannels);
        // Settings of this test must not leak into a user's QSettings.
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("XDG_CONFIG_HOME"), dir.filePath(QStringLiteral("config")));
        if (!env.contains(QStringLiteral("QT_QPA_PLATFORM")))
            env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
        app.setProcessEnvironment(env);
        app.start(QString::fromUtf8(qklab::testpaths::appPath()), args);
        QVERIFY2(app.waitForStarted(10000), qPrintable(app.errorString()));
        QVERIFY2(app.waitForFinished(300000), "qklab did not quit");
        const QString out = QString::fromLocal8Bit(app.readAll());
        QVERIFY2(app.exitStatus() == QProcess::NormalExit && app.exitCode() == 0, qPrintable(out));
        const auto m = QRegularExpression(QStringLiteral("loss points: (\\d+)")).match(out);
        QVERIFY2(m.hasMatch(), qPrintable(out));
        QVERIFY2(m.captured(1).toInt() >= 50, qPrintable(out));
        QVERIFY(QFileInfo(shot).size() > 10000);
        // The window fills the screen (the offscreen platform's 800x800, less a frame of a few
        // pixels): it fits, so the first start maximizes it.
        const QImage image(shot);
        QVERIFY2(image.width() >= 780 && image.height() >= 500,
                 qPrintable(QStringLiteral("%1x%2").arg(image.width()).arg(image.height())));
    }

    // An installed app has no source tree next to it: the presets come from inside the binary.
    void presetsLoadFromTheBinaryInAnEmptyFolder() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString copy = dir.filePath(QStringLiteral("qklab"));
        QVERIFY(QFile::copy(QString::fromUtf8(qklab::testpaths::appPath()), copy));
        QVERIFY(QFile::setPermissions(copy, QFile::permissions(copy) | QFileDevice::ExeOwner));
        QStringList args{QStringLiteral("--preset"),    QStringLiteral("blowup_no_qknorm"),
                         QStringLiteral("--db"),        dir.filePath(QStringLiteral("r.db")),
                         QStringLiteral("--autostart"), QStringLiteral("--quit-after-steps"),
                         QStringLiteral("3"),           QStringLiteral("--quiet")};
        for (const QString& s : qklab::gui::test::tinyOverrides(6))
            args << QStringLiteral("--set") << s;
        QProcess app;
        app.setProcessChannelMode(QProcess::MergedChannels);
        app.setWorkingDirectory(dir.path());
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.remove(QStringLiteral("QKLAB_EXPERIMENTS_DIR"));  // no hint where the source tree is
        env.insert(QStringLiteral("XDG_CONFIG_HOME"), dir.filePath(QStringLiteral("config")));
        env.insert(QStringLiteral("XDG_DATA_HOME"), dir.filePath(QStringLiteral("data")));
        if (!env.contains(QStringLiteral("QT_QPA_PLATFORM")))
            env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
        app.setProcessEnvironment(env);
        app.start(copy, args);
        QVERIFY2(app.waitForFinished(300000), "qklab did not quit");
        const QString out = QString::fromLocal8Bit(app.readAll());
        QVERIFY2(app.exitStatus() == QProcess::NormalExit && app.exitCode() == 0, qPrintable(out));
        // The run carries the embedded preset's settings (LR 3e-2, symlog histograms).
        qklab::RunStore store(dir.filePath(QStringLiteral("r.db")).toStdString());
        const auto runs = store.listRuns();
        QCOMPARE(int(runs.size()), 1);
        const qklab::RunConfig c = qklab::configFromJsonText(runs[0].configJson, "stored");
        QCOMPARE(c.optim.lr, 0.03);
        QCOMPARE(c.probes.histScale, qklab::HistScale::Symlog);
        QVERIFY(!c.why.empty());
    }
};

QTEST_MAIN(SmokeTest)
#include "smoke_test.moc"
#include "support/test_paths.h"
