// lesson_fit_gui_test.cpp — issue 37: the lesson column's budget (qklab/analysis/lesson_fit.h) fits
// at 1024x768 in presenter mode. The longest step text the budget allows, alone and with the
// longest callout (and a spike's reading) it allows beside it, is rendered in the lesson dock:
// nothing needs vertical scrolling and the callout's Continue button covers none of its lines.
// And a step text's table is laid out without breaking a word, and a step before the lesson's
// first run shows no other lesson's run.
#include <QApplication>
#include <QDockWidget>
#include <QFile>
#include <QLabel>
#include <QPushButton>
#include <QScreen>
#include <QScrollArea>
#include <QScrollBar>
#include <QTemporaryDir>
#include <QTest>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTextDocument>
#include <QTextLayout>
#include <QTextTable>
#include <nlohmann/json.hpp>

#include "common/run_controller.h"
#include "gui_test_util.h"
#include "lesson_test_util.h"
#include "lessons/lesson_player.h"
#include "qklab/analysis/lesson_fit.h"
#include "shell/main_window.h"
#include "shell/presenter_mode.h"

using namespace qklab;
using namespace qklab::gui;

namespace {

// Words of a lesson's prose, taken in turn until the text reaches `lines` of the budget at
// `chars` a line: the longest text the budget allows.
std::string prose(int lines, int chars) {
    static const char* const words[] = {
        "The",   "max",     "logit",   "passed", "20",      "at",       "step",
        "12:",   "without", "the",     "scale",  "every",   "logit",    "is",
        "5.66",  "times",   "larger,", "and",    "entropy", "falls",    "far",
        "below", "the",     "run",     "with",   "the",     "scale;",   "watch",
        "the",   "raw",     "q/k",     "norm",   "lanes",   "together", "(**QK-norm**)."};
    std::string text;
    for (size_t i = 0;; ++i) {
        const std::string next = text + (text.empty() ? "" : " ") + words[i % std::size(words)];
        if (lessonTextLines(next, chars) > lines) return text;
        text = next;
    }
}

}  // namespace

class LessonFitGuiTest : public QObject {
    Q_OBJECT
  private:
    QTemporaryDir m_dir;
    MainWindow* m_window = nullptr;
    QString m_db;
    int64_t m_other = 0;

    // A one-step lesson: its text, and a callout shown as a fired pause shows it.
    void show(const std::string& text, const QString& callout) {
        const nlohmann::json lesson = {{"title", "Reading the probes"},
                                       {"steps", {{{"title", "Incident 2"}, {"text", text}}}}};
        open(lesson);
        auto* player = m_window->part<LessonPlayer>();
        if (!callout.isEmpty()) player->showCallout(callout, true);
        // The dock takes its share of the width once the queued fit has run.
        if (m_window->part<PresenterMode>()->isActive()) QTRY_VERIFY(player->width() >= 280);
        QCoreApplication::processEvents();
    }

    void open(const nlohmann::json& lesson) {
        const QString path = m_dir.filePath(QStringLiteral("fit.json"));
        QFile file(path);
        QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Truncate));
        file.write(QByteArray::fromStdString(lesson.dump()));
        file.close();
        QVERIFY(m_window->openLesson(path));
    }

    void expectNoScrolling(const char* what) {
        auto* text = m_window->findChild<QTextBrowser*>(QStringLiteral("lessonText"));
        QTRY_VERIFY2(text->verticalScrollBar()->maximum() == 0,
                     qPrintable(QStringLiteral("%1: the step text scrolls by %2 px (viewport %3)")
                                    .arg(QLatin1String(what))
                                    .arg(text->verticalScrollBar()->maximum())
                                    .arg(text->viewport()->height())));
        auto* scroll = m_window->findChild<QScrollArea*>(QStringLiteral("lessonCalloutScroll"));
        if (!scroll->isVisible()) return;
        QVERIFY2(scroll->verticalScrollBar()->maximum() == 0,
                 qPrintable(QStringLiteral("%1: the callout scrolls by %2 px")
                                .arg(QLatin1String(what))
                                .arg(scroll->verticalScrollBar()->maximum())));
        // Continue lies below the callout's last line, not over it.
        auto* label = m_window->findChild<QWidget*>(QStringLiteral("lessonCalloutText"));
        auto* button = m_window->findChild<QPushButton*>(QStringLiteral("lessonContinue"));
        const int textBottom = label->mapTo(m_window, QPoint(0, label->height())).y();
        const int buttonTop = button->mapTo(m_window, QPoint(0, 0)).y();
        QTRY_VERIFY2(
            button->isVisible() && button->mapTo(m_window, QPoint(0, 0)).y() >=
                                       label->mapTo(m_window, QPoint(0, label->height())).y(),
            qPrintable(QStringLiteral("%1: Continue at y %2, the callout's text ends at %3")
                           .arg(QLatin1String(what))
                           .arg(buttonTop)
                           .arg(textBottom)));
    }

  private slots:
    void initTestCase() {
        registerGuiMetaTypes();
        QCoreApplication::setOrganizationName(QStringLiteral("qklab-tests"));
        QVERIFY(m_dir.isValid());
        m_window = new MainWindow;
        m_window->setQuiet(true);
        m_window->show();
        m_db = m_dir.filePath(QStringLiteral("fit.db"));
        m_other = test::writeKnownRun(m_db, "another lesson's run", 20);
        QVERIFY(m_window->openDatabase(m_db));
        // As the app does with --lesson --presenter: a lesson is open when presenting starts.
        show("A first lesson.", {});
        m_window->part<PresenterMode>()->setActive(true);
        const QSize screen = m_window->screen()->geometry().size();
        m_window->setGeometry(QRect(QPoint(0, 0), screen));
        QTRY_COMPARE(m_window->size(), screen);
    }

    void cleanupTestCase() { delete m_window; }

    void theLongestStepTextFits() {
        const std::string text = prose(kLessonColumnLines, kLessonTextChars);
        QCOMPARE(lessonTextLines(text, kLessonTextChars), kLessonColumnLines);
        show(text, {});
        expectNoScrolling("text alone");
    }

    // A table is shown as a list of rows: the longest the budget allows fits too.
    void theLongestTableFits() {
        std::string table = "| run | max | loss |\n|---|---|---|\n", text;
        for (int row = 0;; ++row) {
            const std::string next =
                table + "| run " + std::to_string(row) + " | 1063.25 | 2.51234 |\n";
            if (lessonTextLines(next, kLessonTextChars) > kLessonColumnLines) break;
            table = next;
        }
        QVERIFY(lessonTextLines(table, kLessonTextChars) >= kLessonColumnLines - 3);
        show(table, {});
        expectNoScrolling("a table");
    }

    void theLongestTextAndCalloutFit() {
        const int callout = 8;
        const int rest = kLessonColumnLines - kCalloutFrameLines - callout;
        show(prose(rest, kLessonTextChars),
             QString::fromStdString(prose(callout, kLessonCalloutChars)));
        expectNoScrolling("text and callout");
    }

    void aSpikeCalloutKeepsRoomForItsReading() {
        const int callout = 3;
        const int rest =
            kLessonColumnLines - kCalloutFrameLines - callout - kCalloutReadingLines - 1;
        const std::string shown = prose(callout, kLessonCalloutChars) + "\n\n" +
                                  prose(kCalloutReadingLines, kLessonCalloutChars);
        show(prose(rest, kLessonTextChars), QString::fromStdString(shown));
        expectNoScrolling("text and spike callout");
    }

    // Issue 37: lesson 7's first step (the Spikes view, before the lesson trains anything)
    // showed the previous lesson's run. It shows the lesson's own first run when one is
    // recorded, else none.
    void aStepBeforeTheFirstRunShowsNoOtherRun() {
        const nlohmann::json lesson = {
            {"title", "Reading the probes"},
            {"steps",
             {{{"title", "Intro"}, {"text", "The guide's cases."}, {"view", "spikes"}},
              {{"title", "Incident"},
               {"text", "Train."},
               {"action",
                {{"kind", "start_preset"},
                 {"preset", "healthy_attention"},
                 {"name", "fit-first-run"}}}}}}};
        m_window->openRun(m_other);
        QTRY_COMPARE(m_window->shownLiveRun().runId, m_other);
        open(lesson);
        QTRY_COMPARE(m_window->shownLiveRun().runId, int64_t{0});
        const int64_t recorded = test::writeKnownRun(m_db, "fit-first-run", 20);
        m_window->openRun(m_other);
        QTRY_COMPARE(m_window->shownLiveRun().runId, m_other);
        open(lesson);
        QTRY_COMPARE(m_window->shownLiveRun().runId, recorded);
    }

    // Issue 37: "incide nt", "probe s". A table in a step's text is laid out as a list, and no
    // line of the rendered text ends inside a word.
    void aTableBreaksNoWord() {
        show(
            "| incident | probes | entropy |\n|---|---|---|\n| LR 3e-2 | rising probes | "
            "entropy falls |\n| dirty batch | flat probes | entropy flat |",
            {});
        auto* text = m_window->findChild<QTextBrowser*>(QStringLiteral("lessonText"));
        QTextDocument* doc = text->document();
        for (QTextBlock b = doc->begin(); b.isValid(); b = b.next()) {
            QVERIFY2(!doc->rootFrame()->childFrames().size() ||
                         !qobject_cast<QTextTable*>(doc->rootFrame()->childFrames().front()),
                     "a table in the lesson column");
            const QString s = b.text();
            QTextLayout* layout = b.layout();
            for (int l = 0; l + 1 < layout->lineCount(); ++l) {
                const int end = layout->lineAt(l).textStart() + layout->lineAt(l).textLength();
                QVERIFY2(end <= 0 || end >= s.size() || !s[end - 1].isLetterOrNumber() ||
                             !s[end].isLetterOrNumber(),
                         qPrintable(QStringLiteral("a word broken: \"%1|%2\"")
                                        .arg(s.left(end).right(8), s.mid(end, 8))));
            }
        }
        QVERIFY(text->toPlainText().contains(QStringLiteral("incident")) ||
                text->toPlainText().contains(QStringLiteral("LR 3e-2")));
        QVERIFY(text->toPlainText().contains(QStringLiteral("probes: rising probes")));
    }
};

// A 1024x768 screen (QKLAB_TEST_SCREEN=WxH another): presenter mode fills the screen it is on.
int main(int argc, char** argv) {
    return qklab::gui::test::execOnScreen<LessonFitGuiTest>(QSize(1024, 768), argc, argv);
}
#include "lesson_fit_gui_test.moc"
