// lesson_stage.h — what a lesson step does to the window: it switches to the step's view
// (tab, layer, head), runs its action (train a preset live, intervene, open a stored run,
// compare, replay, nothing) and arms its pause conditions on whatever feeds the views (the
// live run through the training worker, or a replay). When a condition fires, the source has
// already paused itself at that step; the stage shows the callout in the player and frames
// the plot it names.
//
// The player (LessonPlayer) only shows; the window, seen through LabWindow, carries out what
// the step asks (a tab, a preset, a run to open, compare or replay); the dispatch over
// lessonActionKinds() lives here.
#pragma once

#include <QHash>
#include <QObject>
#include <QPointer>
#include <QString>
#include <QStringList>

#include "common/gui_types.h"

class QTimer;
class QWidget;

namespace qklab::gui {

class LabWindow;
class LessonPlayer;
class PlotHighlight;
class ReplayPlayer;

class LessonStage : public QObject {
    Q_OBJECT
  public:
    LessonStage(LabWindow* window, LessonPlayer* player, ReplayPlayer* replay);

    // Opens an embedded lesson (by id) or a file; a lesson that does not load shows the
    // parser's message in the player. False when it did not load.
    // startIndex: the step to begin at (0-based).
    bool openLesson(const QString& nameOrFile, int startIndex = 0);

    // The live run the lesson started (0: none, or it ended).
    int64_t lessonRunId() const { return m_lessonRun; }
    // The plot framed by the last callout (null: none now).
    QWidget* highlightedPlot() const;
    // What a training step with a recorded run offers first (Space, a clicker): its replay
    // (a slow laptop, `--lesson-replay`) or training live. The teacher's last choice in the
    // lesson becomes the next step's first offer.
    void setPreferReplay(bool replay) { m_preferReplay = replay; }
    bool prefersReplay() const { return m_preferReplay; }
    // The stage plays a replay of the lesson's run (not a live run).
    bool replaying() const { return m_replaying; }

  signals:
    // A callout was shown (tests, screenshots).
    void calloutShown(const QString& text, const QString& plot);

  private:
    void enterStep(int index);
    void applyView(const LessonStep& step);
    void applyLayerHead();
    static QStringList plotsOf(const LessonStep& step);
    void runAction(const LessonStep& step);
    void startPreset(const LessonStep& step);
    void trainLive(const LessonStep& step);
    void stopLessonRun();
    void intervene(const LessonStep& step);
    void openStoredRun(const LessonStep& step);
    void compare(const LessonStep& step);
    void replay(const QString& run, const nlohmann::json& speed, const LessonStep& step);
    void armConditions(const LessonStep& step);
    void showOwnRun(const LessonStep& step);
    bool findRun(const QString& idOrName, int64_t* id);
    std::vector<std::string> storedRunNames() const;
    QString fillValues(const QString& markdown);
    int64_t ownRunId();
    int64_t runIdQuietly(const QString& name);
    int64_t recordedRun(const QString& stepName) const;
    void onCallout(const Callout& callout, bool live);
    void resumeSource();
    bool sourcePaused() const;
    void say(const QString& text);

    LabWindow* m_window;
    LessonPlayer* m_player;
    ReplayPlayer* m_replay;
    int64_t m_lessonRun = 0;
    QString m_lessonRunName;
    int64_t m_lessonRunStep = -1;  // the last step of it the views were sent
    bool m_replaying = false;      // the views show the lesson's replay
    int m_layer = -1, m_head = -1;
    QHash<QString, int64_t> m_started;  // runs this lesson trained, by name
    QPointer<PlotHighlight> m_highlight;
    QTimer* m_valuesTimer = nullptr;
    int64_t m_recordedRun = 0;  // recordedRun() of the step that trains now
    bool m_preferReplay = false;
};

}  // namespace qklab::gui
