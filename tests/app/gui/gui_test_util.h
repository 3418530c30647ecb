// gui_test_util.h — shared fixtures for the GUI tests: a config small enough to train tens of
// steps in a second or two on a laptop CPU, and the paths CMake passes in.
#pragma once

#include <QApplication>
#include <QFile>
#include <QSize>
#include <QString>
#include <QTemporaryDir>
#include <QTest>

#include "qklab/config/run_config.h"
#include "support/test_paths.h"
#include "support/tiny_config.h"

namespace qklab::gui::test {

// One layer, d_model 32, T 32: a few ms per step, yet every probe, histogram and attention
// map is produced so the views have real data.
inline RunConfig tinyConfig(int64_t steps = 40) {
    RunConfig c = qklab::testsupport::tinyRunConfig(steps);
    c.why = "gui test: tiny model";
    return c;
}

// The same settings as --set assignments for launching the app or the CLI.
inline QStringList tinyOverrides(int64_t steps = 50) {
    return {QStringLiteral("model.d_model=32"),
            QStringLiteral("model.n_layers=1"),
            QStringLiteral("model.n_heads=2"),
            QStringLiteral("model.seq_len=32"),
            QStringLiteral("data.batch_size=4"),
            QStringLiteral("schedule.steps=%1").arg(steps),
            QStringLiteral("schedule.warmup_steps=2"),
            QStringLiteral("eval.every=10"),
            QStringLiteral("eval.batches=1"),
            QStringLiteral("probes.every=5"),
            QStringLiteral("probes.hist_bins=32"),
            QStringLiteral("probes.attn_map_every=10"),
            QStringLiteral("run.threads=1")};
}

inline QString sourceDir() {
    return QString::fromUtf8(qklab::testpaths::sourceDir());
}

// Runs the Qt Test object `Test` on one offscreen screen of `screen` pixels, without window
// frames (the offscreen platform's default is 800x800): presenter mode fills that screen, and a
// first start fits it. `QKLAB_TEST_SCREEN=WxH` in the environment picks another size.
template <class Test>
int execOnScreen(QSize screen, int argc, char** argv) {
    const QList<QByteArray> wh = qgetenv("QKLAB_TEST_SCREEN").split('x');
    if (wh.size() == 2 && wh[0].toInt() > 0 && wh[1].toInt() > 0)
        screen = QSize(wh[0].toInt(), wh[1].toInt());
    QTemporaryDir dir;
    const QString config = dir.filePath(QStringLiteral("screen.json"));
    QFile file(config);
    if (!file.open(QIODevice::WriteOnly)) return 1;
    file.write(QStringLiteral(R"({"windowFrameMargins": false, "screens": [{"name": "screen",
        "x": 0, "y": 0, "width": %1, "height": %2, "logicalDpi": 96, "logicalBaseDpi": 96,
        "dpr": 1}]})")
                   .arg(screen.width())
                   .arg(screen.height())
                   .toUtf8());
    file.close();
    qputenv("QT_QPA_PLATFORM", "offscreen:configfile=" + config.toLocal8Bit());
    QApplication app(argc, argv);
    Test test;
    return QTest::qExec(&test, argc, argv);
}

}  // namespace qklab::gui::test
