// sample_panel.cpp — see sample_panel.h.
#include "live/sample_panel.h"

#include <QApplication>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QFile>
#include <QGridLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPointer>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QStandardItemModel>
#include <QThreadPool>
#include <QVBoxLayout>
#include <array>
#include <atomic>
#include <climits>

#include "common/async_store.h"
#include "common/run_data.h"
#include "live/sample_view.h"
#include "qklab/analysis/compare.h"
#include "qklab/analysis/generate_source.h"
#include "qklab/util/input_file.h"

namespace qklab::gui {

struct SampleJob {
    std::atomic<bool> cancel{false};
    int64_t runId = 0;
    std::string db;
    GenerateOptions options;
    QString settings;  // "greedy" or "T 0.80, seed 3", for the status line
};

struct SampleRun {
    int64_t runId = 0;
    QString title;
    bool haveCheckpoint = false;
    int64_t checkpointStep = 0;
    QString noCheckpoint;  // "run 5 has no checkpoint: ..."
    QString outsideQklab;  // a run trained outside qklab: why there is no model to decode
    QString defaultPrompt;
    std::array<QString, 4> cacheRefused;  // per DecodeCache: why it does not apply, or ""
};

namespace {

constexpr int kSendEveryMs = 30;  // streamed text reaches the GUI thread at most ~33 times/s

QString runTitle(const RunInfo& info) {
    QString t = QStringLiteral("Run %1 “%2” · %3")
                    .arg(info.id)
                    .arg(QString::fromStdString(info.name), toString(info.status));
    if (info.finalLoss) t += QStringLiteral(" · loss %1").arg(*info.finalLoss, 0, 'f', 3);
    if (info.maxLogitRaw) t += QStringLiteral(" · max logit %1").arg(*info.maxLogitRaw, 0, 'g', 4);
    return t;
}

// The first bytes of the run's corpus: the built-in text's tales start "The tale of ", a file
// gives its first line (at most 32 bytes).
QString defaultPrompt(const RunConfig& config) {
    if (config.data.source == "builtin") return QStringLiteral("The tale of ");
    // A stored run's data.source may be a FIFO by now: opening it would block the window.
    if (!inputFileProblem(config.data.source, kCorpusFile).empty()) return {};
    QFile file(QString::fromStdString(config.data.source));
    if (!file.open(QIODevice::ReadOnly)) return {};
    const QByteArray line = file.readLine(33).trimmed();
    return QString::fromUtf8(line);
}

SampleRun readSampleRun(RunStore& store, int64_t runId) {
    SampleRun r;
    r.runId = runId;
    const RunInfo info = store.run(runId);
    r.title = runTitle(info);
    // A run logged from the user's own loop never has a checkpoint qklab could load: say why
    // rather than "no checkpoint was saved", which suggests waiting for one.
    r.outsideQklab = outsideQklabReason(info, QObject::tr("generate from"));
    if (!r.outsideQklab.isEmpty()) return r;
    std::string why;
    if (const auto checkpoint = newestExistingCheckpoint(store, runId, &why)) {
        r.haveCheckpoint = true;
        r.checkpointStep = checkpoint->step;
    } else {
        r.noCheckpoint = QStringLiteral("Run %1 has no checkpoint: %2.")
                             .arg(runId)
                             .arg(QString::fromStdString(why));
    }
    const RunConfig config = configAsTrained(info);
    r.defaultPrompt = defaultPrompt(config);
    for (size_t i = 0; i < r.cacheRefused.size(); ++i) {
        try {
            cacheLayout(config, static_cast<DecodeCache>(i));
        } catch (const std::exception& e) {
            r.cacheRefused[i] = QString::fromStdString(e.what());
        }
    }
    return r;
}

QString settingsText(const GenerateOptions& o) {
    if (o.temperature == 0) return QObject::tr("greedy");
    return QObject::tr("T %1, seed %2").arg(o.temperature, 0, 'f', 2).arg(o.seed);
}

QString resultText(const SampleJob& job, const GenerateResult& r, qsizetype bytes) {
    return QObject::tr("%1 · checkpoint step %2 · %3 cache %4 bytes/token · %5 ms/token · %6 bytes")
        .arg(job.settings)
        .arg(r.checkpointStep)
        .arg(QString::fromLatin1(nameOf(r.cache.kind)))
        .arg(r.cache.bytesPerToken)
        .arg(r.msPerToken, 0, 'f', 2)
        .arg(bytes);
}

}  // namespace

SamplePanel::SamplePanel(QWidget* parent) : QWidget(parent) {
    m_pool = new QThreadPool(this);
    m_pool->setMaxThreadCount(1);  // one decode at a time; a cancelled one ends at its next byte
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(buildSettings());
    m_notice = new QLabel;
    m_notice->setObjectName(QStringLiteral("sampleNotice"));
    m_notice->setWordWrap(true);
    m_notice->setTextFormat(Qt::PlainText);
    layout->addWidget(m_notice);
    auto* split = new QSplitter(Qt::Vertical);
    m_current = new SampleView;
    m_previous = new SampleView;
    m_previous->setObjectName(QStringLiteral("previousSample"));
    m_current->setObjectName(QStringLiteral("currentSample"));
    split->addWidget(m_current);
    split->addWidget(m_previous);
    split->setChildrenCollapsible(false);
    m_previous->hide();  // until a second run is picked
    layout->addWidget(split, 1);
    setDatabase(QString());
}

SamplePanel::~SamplePanel() {
    if (m_job) m_job->cancel = true;
    m_job.reset();
    m_pool->waitForDone();  // the decode thread never outlives the panel
}

QWidget* SamplePanel::buildSettings() {
    auto* box = new QWidget;
    auto* grid = new QGridLayout(box);
    grid->setContentsMargins(0, 0, 0, 0);
    m_prompt = new QLineEdit;
    m_prompt->setObjectName(QStringLiteral("samplePrompt"));
    m_prompt->setToolTip(tr("Bytes fed to the model before it writes (UTF-8)"));
    m_tokens = new QSpinBox;
    m_tokens->setRange(1, kMaxTokens);
    m_tokens->setValue(300);
    m_tokens->setSuffix(tr(" bytes"));
    m_tokens->setToolTip(tr("How many bytes (tokens) to generate"));
    m_temperature = new QDoubleSpinBox;
    m_temperature->setRange(0, 5);
    m_temperature->setDecimals(2);
    m_temperature->setSingleStep(0.1);
    m_temperature->setSpecialValueText(tr("0 (greedy)"));
    m_temperature->setToolTip(
        tr("0: always the most likely byte (the same text every time); above 0: sample from "
           "softmax(logits / T)"));
    m_seed = new QSpinBox;
    m_seed->setRange(0, INT_MAX);
    m_seed->setToolTip(tr("Sampling seed: the same seed writes the same text"));
    m_seed->setEnabled(false);
    m_cache = new QComboBox;
    for (const auto& name : choiceNames<DecodeCache>())
        m_cache->addItem(QString::fromStdString(name));
    m_cache->setToolTip(
        tr("What decoding keeps per past byte (auto: absorbed for MLA, "
           "materialised for MHA)"));
    m_generate = new QPushButton(tr("Generate"));
    m_generate->setObjectName(QStringLiteral("sampleGenerate"));
    m_stop = new QPushButton(tr("Stop"));
    grid->addWidget(new QLabel(tr("Prompt")), 0, 0);
    grid->addWidget(m_prompt, 0, 1, 1, 3);
    grid->addWidget(new QLabel(tr("Length")), 1, 0);
    grid->addWidget(m_tokens, 1, 1);
    grid->addWidget(new QLabel(tr("Temperature")), 1, 2);
    grid->addWidget(m_temperature, 1, 3);
    grid->addWidget(new QLabel(tr("Seed")), 2, 0);
    grid->addWidget(m_seed, 2, 1);
    grid->addWidget(new QLabel(tr("Cache")), 2, 2);
    grid->addWidget(m_cache, 2, 3);
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(m_generate);
    buttons->addWidget(m_stop);
    buttons->addStretch(1);
    grid->addLayout(buttons, 3, 0, 1, 4);
    grid->setColumnStretch(1, 1);
    grid->setColumnStretch(3, 1);
    connect(m_prompt, &QLineEdit::textEdited, this, [this] { m_promptEdited = true; });
    connect(m_prompt, &QLineEdit::returnPressed, this, &SamplePanel::generate);
    connect(m_temperature, &QDoubleSpinBox::valueChanged, this,
            [this](double t) { m_seed->setEnabled(t > 0); });
    connect(m_generate, &QPushButton::clicked, this, &SamplePanel::generate);
    connect(m_stop, &QPushButton::clicked, this, &SamplePanel::stop);
    return box;
}

void SamplePanel::setDatabase(const QString& path) {
    cancelJob(tr("stopped: another database was opened"));
    m_db = path;
    m_runId = 0;
    m_runTitle.clear();
    m_haveCheckpoint = false;
    m_outsideQklab.clear();
    ++m_readGeneration;
    m_current->reset(0, QString());
    m_previous->reset(0, QString());
    m_previous->hide();
    m_notice->setText(tr("Pick a run in the Runs list to read the text it writes."));
    updateButtons();
}

void SamplePanel::setRun(int64_t runId) {
    if (runId == m_runId) return readRun();
    cancelJob(tr("stopped: another run was picked"));
    if (m_current->hasSample()) {
        m_previous->copyFrom(*m_current);
        m_previous->show();
    }
    m_runId = runId;
    m_runTitle = tr("Run %1").arg(runId);
    m_haveCheckpoint = false;
    m_outsideQklab.clear();
    m_current->reset(runId, m_runTitle);
    m_notice->setText(tr("Looking for run %1's checkpoint…").arg(runId));
    updateButtons();
    readRun();
}

void SamplePanel::refreshRun(int64_t runId) {
    if (runId == m_runId && runId > 0) readRun();
}

void SamplePanel::readRun() {
    if (m_runId <= 0 || m_db.isEmpty()) return;
    const uint64_t generation = ++m_readGeneration;
    const int64_t id = m_runId;
    readStoreAsync<SampleRun>(
        this, m_db, [id](RunStore& store) { return readSampleRun(store, id); },
        [this, generation](SampleRun run) {
            if (generation == m_readGeneration) showRun(run);
        },
        [this, generation, id](const QString& error) {
            if (generation != m_readGeneration) return;
            m_haveCheckpoint = false;
            m_outsideQklab.clear();
            m_notice->setText(tr("Cannot read run %1: %2").arg(id).arg(error));
            updateButtons();
            emit runReady(id, false);
        });
}

void SamplePanel::showRun(const SampleRun& run) {
    m_runTitle = run.title;
    if (m_current->runId() == run.runId) m_current->setTitle(run.title);
    m_haveCheckpoint = run.haveCheckpoint;
    m_outsideQklab = run.outsideQklab;
    if (!m_outsideQklab.isEmpty())
        m_notice->setText(m_outsideQklab);
    else
        m_notice->setText(run.haveCheckpoint
                              ? QString()
                              : run.noCheckpoint + tr(" There is nothing to generate from yet."));
    m_generate->setToolTip(
        !m_outsideQklab.isEmpty()
            ? m_outsideQklab
            : tr("Decode from the checkpoint of step %1").arg(run.checkpointStep));
    if (!m_promptEdited && !run.defaultPrompt.isEmpty()) m_prompt->setText(run.defaultPrompt);
    auto* items = qobject_cast<QStandardItemModel*>(m_cache->model());
    for (int i = 0; items && i < m_cache->count(); ++i) {
        items->item(i)->setEnabled(run.cacheRefused[size_t(i)].isEmpty());
        items->item(i)->setToolTip(run.cacheRefused[size_t(i)]);
    }
    if (!run.cacheRefused[size_t(m_cache->currentIndex())].isEmpty()) m_cache->setCurrentIndex(0);
    updateButtons();
    emit runReady(run.runId, run.haveCheckpoint);
}

void SamplePanel::setPrompt(const QString& prompt) {
    m_prompt->setText(prompt);
    m_promptEdited = true;
}

void SamplePanel::setTokens(int tokens) {
    m_tokens->setValue(tokens);
}

void SamplePanel::setTemperature(double temperature) {
    m_temperature->setValue(temperature);
}

void SamplePanel::setSeed(int seed) {
    m_seed->setValue(seed);
}

bool SamplePanel::canGenerate() const {
    return m_runId > 0 && m_haveCheckpoint && m_outsideQklab.isEmpty() && !m_job && !m_db.isEmpty();
}

QString SamplePanel::notice() const {
    return m_notice->text();
}

GenerateOptions SamplePanel::options() const {
    GenerateOptions o;
    o.prompt = m_prompt->text().toStdString();
    o.tokens = m_tokens->value();
    o.temperature = m_temperature->value();
    o.seed = static_cast<uint64_t>(m_seed->value());
    o.cache = static_cast<DecodeCache>(m_cache->currentIndex());
    return o;
}

void SamplePanel::generate() {
    if (!canGenerate()) return;
    auto job = std::make_shared<SampleJob>();
    job->runId = m_runId;
    job->db = m_db.toStdString();
    job->options = options();
    job->settings = settingsText(job->options);
    m_current->reset(m_runId, m_runTitle);
    m_current->begin(m_prompt->text());
    m_current->setStatus(tr("%1 · reading the checkpoint…").arg(job->settings));
    m_job = job;
    updateButtons();
    // The worker touches only `job`; the panel only on the GUI thread, behind the guard.
    m_pool->start([job, guard = QPointer<SamplePanel>(this)] { runJob(job, guard); });
}

void SamplePanel::stop() {
    if (!m_job) return;
    m_job->cancel = true;  // onText says stop at the next byte; onJobDone writes the status
    updateButtons();
}

void SamplePanel::cancelJob(const QString& why) {
    if (!m_job) return;
    m_job->cancel = true;
    m_current->setStatus(
        tr("%1 · %2 after %3 bytes").arg(m_job->settings, why).arg(m_current->generated().size()));
    const int64_t runId = m_job->runId;
    m_job.reset();  // its late text is dropped
    updateButtons();
    emit sampleFinished(runId, false, why);
}

void SamplePanel::updateButtons() {
    // A run trained outside qklab keeps the button, disabled, its tooltip saying why.
    m_generate->setVisible(m_runId > 0 && (m_haveCheckpoint || !m_outsideQklab.isEmpty()));
    m_generate->setEnabled(canGenerate());
    m_stop->setVisible(m_runId > 0 && m_haveCheckpoint);
    m_stop->setEnabled(m_job && !m_job->cancel);
    m_notice->setVisible(!m_notice->text().isEmpty());
}

void SamplePanel::runJob(std::shared_ptr<SampleJob> job, QPointer<SamplePanel> guard) {
    QByteArray pending;
    QElapsedTimer sinceSent;
    sinceSent.start();
    const auto post = [guard](auto call) {
        QMetaObject::invokeMethod(
            qApp,
            [guard, call] {
                if (guard) call(*guard);
            },
            Qt::QueuedConnection);
    };
    GenerateResult result;
    QString error;
    try {
        GenerationSource source;
        {
            RunStore store(job->db, StoreAccess::ReadOnly);  // readers never write
            source = generationSource(store, job->runId);
        }
        result = generateFromCheckpoint(
            source.config, source.checkpoint.path, job->options, [&](const std::string& text) {
                if (job->cancel) return false;
                pending.append(text.data(), static_cast<qsizetype>(text.size()));
                if (sinceSent.elapsed() >= kSendEveryMs) {
                    post([job, bytes = pending](SamplePanel& p) { p.onJobText(job, bytes); });
                    pending.clear();
                    sinceSent.restart();
                }
                return !job->cancel;
            });
    } catch (const std::exception& e) {
        error = QString::fromStdString(e.what());
    } catch (...) {
        error = QStringLiteral("unknown error while generating");
    }
    post([job, pending, result, error](SamplePanel& p) {
        p.onJobDone(job, pending, result, error);
    });
}

void SamplePanel::onJobText(const std::shared_ptr<SampleJob>& job, const QByteArray& bytes) {
    if (job != m_job) return;  // cancelled: another run or database was picked
    m_current->appendGenerated(bytes);
    m_current->setStatus(tr("%1 · writing… %2 of %3 bytes")
                             .arg(job->settings)
                             .arg(m_current->generated().size())
                             .arg(job->options.tokens));
}

void SamplePanel::onJobDone(const std::shared_ptr<SampleJob>& job, const QByteArray& rest,
                            const GenerateResult& result, const QString& error) {
    if (job != m_job) return;
    m_current->appendGenerated(rest);
    m_job.reset();
    const bool stopped = job->cancel;
    if (!error.isEmpty())
        m_current->setStatus(tr("%1 · failed: %2").arg(job->settings, error));
    else
        m_current->setStatus(resultText(*job, result, m_current->generated().size()) +
                             (stopped ? tr(" · stopped") : QString()));
    updateButtons();
    emit sampleFinished(job->runId, !stopped && error.isEmpty(), error);
}

}  // namespace qklab::gui
