// lesson_stage.cpp — a step's view, action and pause conditions, and the callouts.
#include "lessons/lesson_stage.h"

#include <qcustomplot.h>

#include <QStringList>
#include <QTimer>
#include <map>
#include <memory>

#include "common/lab_window.h"
#include "common/run_controller.h"
#include "lessons/lesson_library.h"
#include "lessons/lesson_player.h"
#include "lessons/plot_highlight.h"
#include "lessons/replay_player.h"
#include "qklab/analysis/lesson_fit.h"
#include "qklab/analysis/lesson_values.h"
#include "qklab/config/names.h"
#include "qklab/store/run_store.h"

namespace qklab::gui {

namespace {

QString qs(const std::string& s) {
    return QString::fromStdString(s);
}

QString textOf(const nlohmann::json& a, const char* key) {
    return a.contains(key) && a[key].is_string() ? qs(a[key].get<std::string>()) : QString();
}

// "optim.lr": 0.03 → "optim.lr=0.03"; text values go in as they are (as the check in core).
QStringList assignments(const nlohmann::json& set) {
    QStringList out;
    for (const std::string& a : lessonSetAssignments(set)) out << qs(a);
    return out;
}

}  // namespace

LessonStage::LessonStage(LabWindow* window, LessonPlayer* player, ReplayPlayer* replay)
    : QObject(window), m_window(window), m_player(player), m_replay(replay) {
    RunController* c = m_window->controller();
    m_player->setValueFiller([this](const QString& markdown) { return fillValues(markdown); });
    // The numbers in the text follow the run as it trains or replays, a few times a second.
    m_valuesTimer = new QTimer(this);
    m_valuesTimer->setSingleShot(true);
    m_valuesTimer->setInterval(300);
    connect(m_valuesTimer, &QTimer::timeout, m_player, &LessonPlayer::refreshValues);
    connect(m_replay, &ReplayPlayer::positionChanged, this, [this] {
        if (m_replaying && !m_valuesTimer->isActive()) m_valuesTimer->start();
    });
    connect(m_player, &LessonPlayer::stepEntered, this, &LessonStage::enterStep);
    connect(m_player, &LessonPlayer::resumeRequested, this, &LessonStage::resumeSource);
    connect(m_player, &LessonPlayer::replayInsteadRequested, this, [this] {
        const LessonStep* step = m_player->currentStep();
        if (!step) return;
        m_preferReplay = true;
        stopLessonRun();
        const QString fallback = textOf(step->action, "fallback_run");
        this->replay(fallback.isEmpty() ? QStringLiteral("id:%1").arg(m_recordedRun) : fallback,
                     nlohmann::json(), *step);
    });
    connect(m_player, &LessonPlayer::trainLiveRequested, this, [this] {
        const LessonStep* step = m_player->currentStep();
        if (!step || step->actionKind() != "start_preset") return;
        m_preferReplay = false;
        trainLive(*step);
    });
    connect(c, &RunController::calloutFired, this, [this](qint64 runId, const Callout& callout) {
        if (runId == m_lessonRun) onCallout(callout, true);
    });
    connect(m_replay, &ReplayPlayer::calloutFired, this, [this](qint64, const Callout& callout) {
        if (m_replaying) onCallout(callout, false);
    });
    connect(c, &RunController::interventionRefused, this,
            [this](qint64, const QString& message) { say(tr("Not applied: %1").arg(message)); });
    // The panels rebuild their layer and head lists for each run they show.
    // Queued: after the window has handed the new run to the panels (its slots were
    // connected later than these).
    connect(
        c, &RunController::started, this, [this] { applyLayerHead(); }, Qt::QueuedConnection);
    connect(m_window, &LabWindow::runOpened, this, [this] { applyLayerHead(); });
    connect(
        m_replay, &ReplayPlayer::reset, this, [this] { applyLayerHead(); }, Qt::QueuedConnection);
    connect(m_replay, &ReplayPlayer::finished, this, [this] {
        if (m_replaying) m_player->setCalloutResumable(false);
    });
    // How far the lesson's run has come, as the views know it: an intervention for a step
    // already past applies now rather than never.
    connect(c, &RunController::batchReady, this, [this](const LiveBatch& batch) {
        if (batch.runId != m_lessonRun) return;
        if (!batch.steps.isEmpty()) m_lessonRunStep = batch.steps.back().step;
        if (!m_valuesTimer->isActive()) m_valuesTimer->start();
    });
    connect(c, &RunController::finished, this,
            [this](qint64 runId, const QString& status, const QString& message) {
                if (runId != m_lessonRun) return;
                m_lessonRun = 0;
                m_player->setCalloutResumable(false);
                // "Training … live" must not outlive the run.
                if (status == QLatin1String("finished"))
                    say(tr("“%1” has finished training (stored for the steps that compare or "
                           "replay it).")
                            .arg(m_lessonRunName));
                else
                    say(tr("“%1” ended: %2. %3").arg(m_lessonRunName, status, message));
            });
}

bool LessonStage::openLesson(const QString& nameOrFile, int startIndex) {
    const QString path = resolveLesson(nameOrFile);
    if (path.isEmpty()) {
        m_player->showLoadError(nameOrFile,
                                tr("There is no lesson file or shipped lesson called %1. Shipped "
                                   "lessons: File ▸ Open lesson…")
                                    .arg(nameOrFile));
        return false;
    }
    try {
        const Lesson lesson = readLesson(path);
        m_lessonRun = 0;
        if (m_replaying) m_window->stopReplay();
        m_replaying = false;
        m_player->setReplaying(false);
        m_player->setLesson(lesson, startIndex);
        return true;
    } catch (const std::exception& e) {
        m_player->showLoadError(path, qs(e.what()));
        return false;
    }
}

QWidget* LessonStage::highlightedPlot() const {
    return m_highlight ? m_highlight->target() : nullptr;
}

void LessonStage::say(const QString& text) {
    m_player->setStatus(text);
}

void LessonStage::enterStep(int index) {
    const Lesson* lesson = m_player->lesson();
    if (!lesson || index < 0 || index >= int(lesson->steps.size())) return;
    const LessonStep& step = lesson->steps[size_t(index)];
    if (m_highlight) m_highlight->clear();
    applyView(step);
    runAction(step);
    applyLayerHead();
}

void LessonStage::applyView(const LessonStep& step) {
    m_layer = step.layer.value_or(-1);
    m_head = step.head.value_or(-1);
    m_window->setLessonPlots(plotsOf(step));
    m_window->showTab(qs(step.view));
}

// The live plots presenter mode shows for a step: the ones it names, else the four a lesson
// talks about (loss, raw max logit, q/k norms, entropy) and those its conditions watch.
QStringList LessonStage::plotsOf(const LessonStep& step) {
    QStringList metrics;
    for (const std::string& m : step.plots) metrics << qs(m);
    if (!metrics.isEmpty()) return metrics;
    metrics = {QStringLiteral("loss"), QStringLiteral("logit_max_raw"),
               QStringLiteral("q_norm_p90"), QStringLiteral("entropy")};
    for (const PauseCondition& c : step.pauses)
        if (!c.plot.empty()) metrics << qs(c.plot);
    return metrics;
}

void LessonStage::applyLayerHead() {
    if (m_layer < 0 && m_head < 0) return;
    m_window->selectLayerHead(std::max(0, m_layer), m_head);
}

// The dispatch over lessonActionKinds(); a kind the table gains without a case here says so.
void LessonStage::runAction(const LessonStep& step) {
    const std::string kind = step.actionKind();
    if (kind == "start_preset") return startPreset(step);
    if (kind == "intervene") return intervene(step);
    if (kind == "open_run") return openStoredRun(step);
    if (kind == "compare") return compare(step);
    if (kind == "replay")
        return replay(textOf(step.action, "run"),
                      step.action.value("steps_per_second", nlohmann::json()), step);
    if (kind != "none") say(tr("This app does not know the action “%1”.").arg(qs(kind)));
    showOwnRun(step);
    armConditions(step);
}

// A step that runs nothing talks about the run of the step that trained it. Opened at that
// step (a lesson begun mid-way, a recorded database), the views would show no run: they show
// that run's stored rows instead.
void LessonStage::showOwnRun(const LessonStep& step) {
    if (m_replaying || step.view == "compare" || step.view == "sweeps" || step.view == "config")
        return;
    const int64_t own = ownRunId();
    if (m_lessonRun && m_window->controller()->activeRunId() == m_lessonRun) return;
    if (own == 0) {  // not another lesson's run: none
        if (m_window->shownLiveRun().runId != 0) m_window->showNoRun();
        return;
    }
    if (m_window->shownLiveRun().runId == own) return;
    m_window->openRun(own);
    m_window->showTab(qs(step.view));
}

// The step's conditions go to whatever runs now: the lesson's live run or its replay.
void LessonStage::armConditions(const LessonStep& step) {
    if (m_lessonRun && m_window->controller()->activeRunId() == m_lessonRun)
        m_window->controller()->setPauseConditions(step.pauses);
    if (m_replaying) m_replay->setPauseConditions(step.pauses);
    // A step that watches for something, or changes the run, means "go on": a run a callout
    // paused continues.
    if ((!step.pauses.empty() || step.actionKind() == "intervene") && sourcePaused())
        resumeSource();
}

// The newest finished run of this step's name series stored before this playing (a rehearsal
// the day before): what "Replay the recorded run instead" plays when the step has no
// fallback_run. 0: none.
int64_t LessonStage::recordedRun(const QString& stepName) const {
    int64_t id = 0;
    try {
        RunStore store(m_window->databasePath().toStdString(), StoreAccess::ReadOnly);
        for (const RunInfo& r : store.listRuns())
            if (r.status == RunStatus::Finished &&
                numberInSeries(r.name, stepName.toStdString()) > 0)
                id = std::max(id, r.id);
    } catch (const std::exception&) {
    }
    return id;
}

// A step with a recording (a fallback_run, or a run of its name trained before) waits for
// the teacher's choice before anything trains; one without trains at once.
void LessonStage::startPreset(const LessonStep& step) {
    const QString stepName =
        qs(lessonRunName(*m_player->lesson(), size_t(m_player->currentIndex())));
    m_recordedRun = recordedRun(stepName);
    m_player->setRecordedRunAvailable(m_recordedRun > 0);
    if (m_recordedRun > 0 || step.action.contains("fallback_run")) {
        m_player->offerSourceChoice(m_preferReplay);
        return say(m_preferReplay ? tr("A recording of this step is stored: Space replays it.")
                                  : tr("A recording of this step is stored: Space trains live, "
                                       "or replay the recording."));
    }
    trainLive(step);
}

void LessonStage::trainLive(const LessonStep& step) {
    // "blowup_no_qknorm.json" names a shipped preset as well as "blowup_no_qknorm"; found the
    // way the lesson's check found it when the lesson was opened.
    const QString preset = findLessonPreset(textOf(step.action, "preset"));
    if (preset.isEmpty() || !m_window->loadPreset(preset))
        return say(tr("The preset %1 does not load.").arg(textOf(step.action, "preset")));
    QString error;
    if (!m_window->applyOverrides(assignments(step.action.value("set", nlohmann::json())), &error))
        return say(error);
    QStringList problems;
    RunRequest request;
    request.config = m_window->formConfig(&problems);
    if (!problems.isEmpty())
        return say(tr("The preset's config is not valid: %1").arg(problems.first()));
    request.dbPath = m_window->databasePath();
    // A lesson runs again into the same database (a class, a rehearsal the day before): the
    // step's run name, numbered when taken ("lesson-blowup (2)"). Later steps find it by the
    // step's name through m_started.
    const QString stepName =
        qs(lessonRunName(*m_player->lesson(), size_t(m_player->currentIndex())));
    request.name = qs(numberedName(stepName.toStdString(), storedRunNames()));
    request.pauses = step.pauses;
    m_window->stopReplay();
    m_replaying = false;
    m_player->setReplaying(false);
    stopLessonRun();
    RunController* c = m_window->controller();
    c->stopAll();
    // The lesson's run is known once it starts (the queue may still be ending the last one).
    auto connection = std::make_shared<QMetaObject::Connection>();
    *connection =
        connect(c, &RunController::started, this,
                [this, connection, name = request.name, stepName](qint64 runId, const QString& n) {
                    if (n != name) return;
                    m_lessonRun = runId;
                    m_lessonRunName = name;
                    m_lessonRunStep = -1;
                    m_started.insert(stepName, runId);
                    disconnect(*connection);
                });
    c->enqueue(request);
    // With the config's warnings: presenter mode hides the setup dock that shows them.
    say(qs(lessonStartStatus(request.name.toStdString(), request.config)));
}

// The lesson lets go of its live run before stopping it: its end ("stopped at step 11") is
// no news to report while the next run trains or a replay plays.
void LessonStage::stopLessonRun() {
    const int64_t run = m_lessonRun;
    m_lessonRun = 0;
    if (run && m_window->controller()->activeRunId() == run) m_window->controller()->stop();
}

void LessonStage::intervene(const LessonStep& step) {
    armConditions(step);
    const int64_t atStep = step.action.value("at_step", int64_t{0});
    nlohmann::json j = step.action.value("event", nlohmann::json::object());
    j["step"] = atStep;
    Event event;
    try {
        event = eventFromJson(j, "lesson");
    } catch (const std::exception& e) {
        return say(qs(e.what()));
    }
    event.source = EventSource::User;
    const QString label = qs(eventLabel(nameOf(event.kind), eventParamsJson(event).dump()));
    if (m_replaying)
        return say(tr("The recorded run shows its own interventions (%1 is not applied to a "
                      "replay).")
                       .arg(label));
    RunController* c = m_window->controller();
    if (!m_lessonRun || c->activeRunId() != m_lessonRun)
        return say(tr("Nothing of this lesson is training: start the run of an earlier step."));
    const int64_t reached = m_lessonRunStep;
    if (atStep > reached + 1) {
        c->interveneAt(event, atStep);
        return say(tr("%1 applies at step %2.").arg(label).arg(atStep));
    }
    // Already past it: now, through the intervention panel like a click.
    if (m_window->postIntervention(event))
        say(tr("%1 applied at step %2 (the run was past step %3).")
                .arg(label)
                .arg(reached + 1)
                .arg(atStep));
}

// The step's {{…}} placeholders, filled from the run each names: the live views' rows when
// they show it (the numbers on screen), else its stored rows.
QString LessonStage::fillValues(const QString& markdown) {
    struct Stored {
        std::vector<StepMetrics> steps;
        std::vector<ProbeStats> probes;
        std::vector<CustomScalar> scalars;
        std::vector<Forecast> forecasts;
    };
    std::map<int64_t, Stored> stored;
    const auto rows = [&](const std::string& run) -> std::optional<LessonRunRows> {
        const int64_t id = run.empty() ? ownRunId() : runIdQuietly(qs(run));
        if (id == 0) return std::nullopt;
        const RunSnapshot& shown = m_window->shownLiveRun();
        if (shown.runId == id)
            return LessonRunRows{&shown.steps, &shown.probes, &shown.customScalars,
                                 &shown.forecasts};
        auto found = stored.find(id);
        if (found == stored.end()) {
            try {
                RunStore store(m_window->databasePath().toStdString(), StoreAccess::ReadOnly);
                found = stored
                            .emplace(id, Stored{store.stepMetrics(id), store.probeStats(id, -1),
                                                store.customScalars(id), store.forecasts(id)})
                            .first;
            } catch (const std::exception&) {
                return std::nullopt;
            }
        }
        return LessonRunRows{&found->second.steps, &found->second.probes, &found->second.scalars,
                             &found->second.forecasts};
    };
    return qs(fillLessonValues(markdown.toStdString(), rows));
}

// The run a placeholder without run= reads: the replay's, else the run of the latest
// start_preset step up to this one (this playing's, else the newest stored one).
int64_t LessonStage::ownRunId() {
    if (m_replaying) return m_replay->runId();
    const Lesson* lesson = m_player->lesson();
    for (int i = m_player->currentIndex(); lesson && i >= 0; --i)
        if (lesson->steps[size_t(i)].actionKind() == "start_preset")
            return runIdQuietly(qs(lessonRunName(*lesson, size_t(i))));
    // A step before the lesson's first run talks about that run (recorded, or none yet).
    for (size_t i = 0; lesson && i < lesson->steps.size(); ++i)
        if (lesson->steps[i].actionKind() == "start_preset")
            return runIdQuietly(qs(lessonRunName(*lesson, i)));
    return 0;
}

// findRun without a word in the lesson when there is none (yet): 0.
int64_t LessonStage::runIdQuietly(const QString& name) {
    if (m_started.contains(name)) return m_started.value(name);
    int64_t id = 0;
    try {
        RunStore store(m_window->databasePath().toStdString(), StoreAccess::ReadOnly);
        for (const RunInfo& r : store.listRuns())
            if (numberInSeries(r.name, name.toStdString()) > 0) id = std::max(id, r.id);
    } catch (const std::exception&) {
    }
    return id;
}

// The names of the runs stored now (none when the database is new).
std::vector<std::string> LessonStage::storedRunNames() const {
    std::vector<std::string> names;
    try {
        RunStore store(m_window->databasePath().toStdString(), StoreAccess::ReadOnly);
        for (const RunInfo& r : store.listRuns()) names.push_back(r.name);
    } catch (const std::exception&) {
        // A database not created yet holds no names; the run's writer reports real errors.
    }
    return names;
}

// A run this lesson trained for that step name, else the newest stored run of that name or
// its numbered series ("lesson-blowup (3)": a class runs a lesson many times into one
// database), else an id or "id:"/"name:" reference.
bool LessonStage::findRun(const QString& idOrName, int64_t* id) {
    if (m_started.contains(idOrName)) {
        *id = m_started.value(idOrName);
        return true;
    }
    try {
        RunStore store(m_window->databasePath().toStdString(), StoreAccess::ReadOnly);
        *id = 0;
        for (const RunInfo& r : store.listRuns())
            if (numberInSeries(r.name, idOrName.toStdString()) > 0) *id = std::max(*id, r.id);
        if (*id == 0) *id = store.findRun(idOrName.toStdString()).id;
        return true;
    } catch (const std::exception& e) {
        say(tr("Run %1: %2").arg(idOrName, qs(e.what())));
        return false;
    }
}

void LessonStage::openStoredRun(const LessonStep& step) {
    int64_t id = 0;
    if (!findRun(textOf(step.action, "run"), &id)) return;
    m_window->stopReplay();
    m_replaying = false;
    m_player->setReplaying(false);
    m_window->openRun(id);
    if (step.view != "config") m_window->showTab(qs(step.view));
    armConditions(step);
}

void LessonStage::compare(const LessonStep& step) {
    // A comparison reads whole stored runs: a replay playing on would only take the lesson
    // column's height (its bar) and the views' attention.
    if (m_replaying) {
        m_window->stopReplay();
        m_replaying = false;
        m_player->setReplaying(false);
    }
    const QString saved = textOf(step.action, "comparison");
    if (!saved.isEmpty()) {
        m_window->openComparison(saved);
    } else {
        std::vector<int64_t> ids;
        for (const auto& r : step.action.value("runs", nlohmann::json::array())) {
            int64_t id = 0;
            if (!r.is_string() || !findRun(qs(r.get<std::string>()), &id)) return;
            ids.push_back(id);
        }
        m_window->compareRuns(ids);
    }
    armConditions(step);
}

void LessonStage::replay(const QString& run, const nlohmann::json& speed, const LessonStep& step) {
    int64_t id = 0;
    if (!findRun(run, &id)) return;
    QString error;
    const double sps = speed.is_number() ? speed.get<double>() : 0;
    // The replay is there because the machine is slow: the lesson's live run stops.
    stopLessonRun();
    m_replay->setPauseConditions(step.pauses);
    if (!m_window->startReplay(id, sps, &error)) return say(error);
    m_replaying = true;
    if (step.view != "config") m_window->showTab(qs(step.view));
    m_player->setReplaying(true);
    say(tr("Replaying run %1.").arg(id));  // one line in the lesson column's budget
}

bool LessonStage::sourcePaused() const {
    if (m_replaying) return m_replay->hasRun() && !m_replay->isPlaying() && !m_replay->atEnd();
    RunController* c = m_window->controller();
    return m_lessonRun && c->activeRunId() == m_lessonRun && c->isPaused();
}

void LessonStage::resumeSource() {
    m_player->clearCallout();
    if (m_highlight) m_highlight->clear();
    if (m_replaying) {
        m_replay->play();
        return;
    }
    RunController* c = m_window->controller();
    if (m_lessonRun && c->activeRunId() == m_lessonRun) c->resume();
}

void LessonStage::onCallout(const Callout& callout, bool live) {
    const QString text = qs(callout.text);
    m_player->showCallout(text, live ? m_window->controller()->isBusy() : !m_replay->atEnd());
    // A spike names no plot: its markers sit on the loss plot (or the grad norm's, for a
    // grad-norm spike); a step condition points at no curve.
    QString plot = qs(callout.plot);
    const LessonStep* step = m_player->currentStep();
    const std::string kind = step && callout.condition < step->pauses.size()
                                 ? step->pauses[callout.condition].kind
                                 : std::string();
    if (plot.isEmpty() && kind == "spike") plot = QStringLiteral("loss");
    m_window->showTab(QStringLiteral("live"));
    if (!m_highlight) m_highlight = new PlotHighlight(this);
    if (kind != "step") m_highlight->show(m_window->livePlotOf(plot), 0);
    emit calloutShown(text, plot);
}

}  // namespace qklab::gui
