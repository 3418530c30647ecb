// lesson_player.h — the lesson player panel, the lesson's face in the app: the lesson's
// title, a step counter ("3 / 7"), the step's text rendered as Markdown, Back and Next, the
// teacher notes (collapsed until asked for) and the callout area where a fired pause condition
// speaks.
//
// A view only: entering a step emits stepEntered(); what the step does to the window (its
// view, its action, its pause conditions) is LessonStage's business. A lesson file that does
// not load shows the parser's message (file, step and field) here, in the panel, and nothing
// else happens: the app keeps running.
#pragma once

#include <QWidget>
#include <functional>
#include <optional>

#include "qklab/analysis/lesson.h"

class QLabel;
class QPushButton;
class QResizeEvent;
class QScrollArea;
class QTextBrowser;
class QToolButton;
class QEvent;
class QFrame;
class QVBoxLayout;

namespace qklab::gui {

class LessonPlayer : public QWidget {
    Q_OBJECT
  public:
    explicit LessonPlayer(QWidget* parent = nullptr);

    // Shows the lesson at step `startIndex` (0-based; the first by default) and emits
    // stepEntered() for it alone: the steps before it do not run.
    void setLesson(const Lesson& lesson, int startIndex = 0);
    // The lesson did not load: the message, instead of any step.
    void showLoadError(const QString& source, const QString& message);
    void clear();

    bool hasLesson() const { return m_lesson.has_value(); }
    const Lesson* lesson() const { return m_lesson ? &*m_lesson : nullptr; }
    int currentIndex() const { return m_index; }
    const LessonStep* currentStep() const;
    QString counterText() const;
    QString shownText() const;                          // the rendered text, as a reader sees it
    QString filledText() const { return m_shownText; }  // the step's Markdown, numbers filled
    QString calloutSource() const { return m_calloutSource; }  // as written, placeholders too
    QString errorText() const;
    QString calloutText() const;
    bool calloutVisible() const;
    bool notesVisible() const;

  public slots:
    void next();
    void back();
    void goTo(int index);
    // What Space, Page Down and Right do (LessonKeys): Continue while a callout waits, else Next.
    void forward();
    // Page Up and Left: Back.
    void backward();
    // A fired pause condition (Markdown); `resumable`: the run waits and can go on.
    void showCallout(const QString& markdown, bool resumable);
    void clearCallout();
    // The run behind a shown callout ended: nothing left to continue.
    void setCalloutResumable(bool resumable);
    void setNotesVisible(bool visible);
    // A line under the step's text: what the step's action did or why it could not.
    void setStatus(const QString& text);
    // Fills the step text's and callout's {{…}} placeholders (qklab/analysis/lesson_values.h) again
    // from the rows the filler reads now; cheap when the text has none.
    void refreshValues();
    // A finished run of this step's name is stored (a rehearsal): "Replay the recorded run
    // instead" is offered even without a fallback_run.
    void setRecordedRunAvailable(bool available);
    // A training step with a recording waits for the teacher before anything trains: "Train
    // live" or "Replay the recorded run"; forward() (Space, a clicker) takes the choice
    // `replayFirst` names. Entering another step or choosing ends the wait.
    void offerSourceChoice(bool replayFirst);
    // The lesson plays a recording now: "Replay the recorded run instead" has nothing to add.
    void setReplaying(bool replaying);
    bool sourceChoiceWaiting() const { return m_choiceWaiting; }

  public:
    // Turns Markdown with placeholders into Markdown with numbers (LessonStage's).
    void setValueFiller(std::function<QString(const QString&)> filler);

  signals:
    void stepEntered(int index);
    void resumeRequested();         // the callout's "Continue"
    void replayInsteadRequested();  // the step's recorded run instead of training live
    void trainLiveRequested();      // the source choice's "Train live"

  protected:
    void changeEvent(QEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

  private:
    void applyFonts();  // title, step title and callout, relative to the panel's font
    void fitCallout();
    void buildNavigation(QVBoxLayout* layout);
    void buildCallout(QVBoxLayout* layout);
    void buildNotes(QVBoxLayout* layout);
    void buildSourceChoice(QVBoxLayout* layout);
    void endSourceChoice();
    void showReplayButton();
    void refresh();
    void setText(const QString& markdown);  // the step's text, lists without item margins
    QString filled(const QString& markdown) const;

    std::optional<Lesson> m_lesson;
    int m_index = -1;
    QLabel* m_title = nullptr;
    QLabel* m_counter = nullptr;
    QLabel* m_stepTitle = nullptr;
    QTextBrowser* m_text = nullptr;
    QLabel* m_status = nullptr;
    QLabel* m_error = nullptr;
    QFrame* m_callout = nullptr;
    QLabel* m_calloutText = nullptr;
    QScrollArea* m_calloutScroll = nullptr;
    QPushButton* m_continue = nullptr;
    QPushButton* m_replayInstead = nullptr;
    QPushButton* m_trainLive = nullptr;
    bool m_choiceWaiting = false;
    bool m_replayFirst = false;
    bool m_replaying = false;
    QPushButton* m_back = nullptr;
    QPushButton* m_next = nullptr;
    QToolButton* m_notesToggle = nullptr;
    QTextBrowser* m_notes = nullptr;
    std::function<QString(const QString&)> m_filler;
    QString m_calloutSource;  // the callout as written, placeholders and all
    QString m_shownText;      // the step text as last filled
    bool m_recordedAvailable = false;
};

}  // namespace qklab::gui
