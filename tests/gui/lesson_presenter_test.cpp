// lesson_presenter_test.cpp — presenter mode (the lessons issue): F11 scales the application
// font and every plot font by at least 1.5, draws curves at least 2.5 px wide, hides the docks a
// lesson does not need, and leaving it restores every font, pen, dock and the window state
// exactly.
#include <QAction>
#include <QDockWidget>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <map>

#include "common/theme.h"
#include "lesson_test_util.h"
#include "live/live_plots_panel.h"
#include "qcustomplot.h"
#include "shell/main_window.h"
#include "shell/presenter_mode.h"

using namespace qklab;
using namespace qklab::gui;

class LessonPresenterTest : public QObject {
    Q_OBJECT
  private:
    QTemporaryDir m_dir;

    struct PlotLook {
        std::vector<double> tickPt, labelPt, legendPt, pens;
    };
    static PlotLook lookOf(QCustomPlot* plot) {
        PlotLook l;
        for (QCPAxisRect* rect : plot->axisRects())
            for (QCPAxis* a : rect->axes()) {
                l.tickPt.push_back(a->tickLabelFont().pointSizeF());
                l.labelPt.push_back(a->labelFont().pointSizeF());
            }
        l.legendPt.push_back(plot->legend ? plot->legend->font().pointSizeF() : 0.0);
        for (int i = 0; i < plot->graphCount(); ++i)
            l.pens.push_back(plot->graph(i)->pen().widthF());
        return l;
    }

  private slots:
    void initTestCase() {
        registerGuiMetaTypes();
        QCoreApplication::setOrganizationName(QStringLiteral("qklab-tests"));
        QVERIFY(m_dir.isValid());
    }

    void scalesFontsAndPensAndRestoresThem() {
        const QString db = m_dir.filePath(QStringLiteral("presenter.db"));
        const int64_t run = test::writeKnownRun(db, "shown", 60);
        MainWindow w;
        w.setQuiet(true);
        w.resize(1280, 720);
        w.show();
        QVERIFY(w.openDatabase(db));
        QSignalSpy opened(&w, &MainWindow::runOpened);
        w.openRun(run);
        QVERIFY(opened.wait(10000));
        w.part<LivePlotsPanel>()->replotNow();

        const QFont appFont = QApplication::font();
        std::map<QCustomPlot*, PlotLook> before;
        for (QCustomPlot* p : w.findChildren<QCustomPlot*>()) before[p] = lookOf(p);
        const Qt::WindowStates state = w.windowState();
        const QRect geometry = w.geometry();
        auto dock = [&w](const char* name) {
            return w.findChild<QDockWidget*>(QLatin1String(name));
        };
        QVERIFY(dock("setupDock")->isVisible() && dock("runsDock")->isVisible());

        auto* action = w.findChild<QAction*>(QStringLiteral("presenterAction"));
        QVERIFY(action);
        QCOMPARE(action->shortcut(), QKeySequence(Qt::Key_F11));
        action->trigger();  // View > Presenter mode (F11)
        QVERIFY(w.part<PresenterMode>()->isActive());
        QVERIFY(presenterActive());
        QVERIFY(QApplication::font().pointSizeF() >= 1.5 * appFont.pointSizeF());
        QVERIFY(w.isFullScreen());
        QVERIFY(!dock("setupDock")->isVisible());
        QVERIFY(!dock("interventionDock")->isVisible());
        QVERIFY(!dock("runsDock")->isVisible());
        QVERIFY(dock("runDock")->isVisible());  // Start / Pause stay
        w.part<LivePlotsPanel>()->replotNow();
        for (QCustomPlot* p : w.part<LivePlotsPanel>()->plots()) {
            const PlotLook now = lookOf(p), was = before[p];
            for (size_t i = 0; i < now.tickPt.size(); ++i)
                QVERIFY(now.tickPt[i] >= 1.5 * was.tickPt[i] - 1e-9);
            QVERIFY(now.legendPt[0] >= 1.5 * was.legendPt[0] - 1e-9);
            for (int i = 0; i < p->graphCount(); ++i)
                if (p->graph(i)->pen().style() != Qt::NoPen && p->graph(i)->dataCount() > 0)
                    QVERIFY2(p->graph(i)->pen().widthF() >= kPresenterPenWidth,
                             qPrintable(p->graph(i)->name()));
        }

        action->trigger();  // and off again: everything as it was
        QVERIFY(!w.part<PresenterMode>()->isActive());
        QVERIFY(!presenterActive());
        QCOMPARE(QApplication::font(), appFont);
        QCOMPARE(w.windowState(), state);
        // The size; the offscreen platform's window frame moves the position by a few pixels.
        QTRY_COMPARE(w.geometry().size(), geometry.size());
        QVERIFY(dock("setupDock")->isVisible() && dock("runsDock")->isVisible());
        w.part<LivePlotsPanel>()->replotNow();
        for (QCustomPlot* p : w.findChildren<QCustomPlot*>()) {
            const PlotLook now = lookOf(p), was = before[p];
            QCOMPARE(now.tickPt, was.tickPt);
            QCOMPARE(now.labelPt, was.labelPt);
            QCOMPARE(now.legendPt, was.legendPt);
            QCOMPARE(now.pens, was.pens);
        }
    }
};

QTEST_MAIN(LessonPresenterTest)
#include "lesson_presenter_test.moc"
