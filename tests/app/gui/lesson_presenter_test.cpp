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

#include "common/run_controller.h"
#include "common/theme.h"
#include "lesson_test_util.h"
#include "lessons/lesson_library.h"
#include "lessons/lesson_player.h"
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

    // The projector test: at every step of every shipped lesson the presenter window
    // can be as small as 1024x768, and at that size the lesson player (its text, callout and
    // Next) and the plots lie inside the window, not past its right edge.
    void fitsA1024x768ProjectorAtEveryShippedLessonStep() {
        const QString db = m_dir.filePath(QStringLiteral("fit.db"));
        test::writeKnownRun(db, "lesson-healthy", 60);
        test::writeKnownRun(db, "lesson-blowup", 60);
        MainWindow w;
        w.setQuiet(true);
        w.show();
        QVERIFY(w.openDatabase(db));
        w.part<PresenterMode>()->setActive(true);
        const QSize projector(1024, 768);
        for (const LessonEntry& lesson : embeddedLessons()) {
            const Lesson parsed = readLesson(lesson.path);
            for (size_t i = 0; i < parsed.steps.size(); ++i) {
                QVERIFY(w.openLesson(lesson.path, int(i)));
                w.part<RunController>()->stopAll();  // the layout, not the training
                w.part<LessonPlayer>()->showCallout(
                    QStringLiteral("A callout long enough to wrap over several lines of the "
                                   "lesson panel, as the shipped ones are: raw max 122 at step "
                                   "10."),
                    true);
                QCoreApplication::processEvents();
                const QString where = lesson.id + QStringLiteral(" step %1").arg(i + 1);
                const QSize min = w.minimumSizeHint().expandedTo(w.minimumSize());
                QVERIFY2(min.width() <= projector.width() && min.height() <= projector.height(),
                         qPrintable(
                             where +
                             QStringLiteral(": minimum %1x%2").arg(min.width()).arg(min.height())));
                w.setGeometry(QRect(QPoint(0, 0), projector));
                QTRY_COMPARE(w.size(), projector);
                for (QWidget* part : {static_cast<QWidget*>(w.part<LessonPlayer>()),
                                      static_cast<QWidget*>(w.part<LivePlotsPanel>())}) {
                    if (!part->isVisible()) continue;
                    // The dock takes its share once the layout has seen the new size.
                    QTRY_VERIFY2(
                        part->width() >= 240,
                        qPrintable(where + QStringLiteral(" width %1").arg(part->width())));
                    const QRect r(part->mapTo(&w, QPoint(0, 0)), part->size());
                    QVERIFY2(QRect(QPoint(0, 0), projector).contains(r),
                             qPrintable(where + QStringLiteral(": %1 at %2,%3 %4x%5")
                                                    .arg(part->metaObject()->className())
                                                    .arg(r.x())
                                                    .arg(r.y())
                                                    .arg(r.width())
                                                    .arg(r.height())));
                }
                QVERIFY2(!w.findChild<QDockWidget*>(QStringLiteral("sampleDock"))->isVisible(),
                         qPrintable(where));
            }
        }
    }
};

QTEST_MAIN(LessonPresenterTest)
#include "lesson_presenter_test.moc"
