// config_form_test.cpp — the generated form covers every registry field, round-trips a config
// exactly, and names problems inline before a run can start.
#include "setup/config_form.h"

#include <qcustomplot.h>

#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>

#include "common/input_files.h"
#include "gui_test_util.h"
#include "setup/preset_picker.h"
#include "setup/recommend_dialog.h"
#include "setup/schedule_preview.h"

using namespace qklab;
using namespace qklab::gui;

class ConfigFormTest : public QObject {
    Q_OBJECT
  private slots:
    // Load preset… and the picker's Open… open in a folder a file dialog can browse.
    void presetDialogsOpenInAFolderThatExists() {
        const QByteArray saved = qgetenv("QKLAB_EXPERIMENTS_DIR");
        QTemporaryDir mine;
        qputenv("QKLAB_EXPERIMENTS_DIR", mine.path().toUtf8());
        QCOMPARE(presetDialogDirectory(), mine.path());  // the folder the user named
        const QString shipped = QString::fromStdString(qklab::testpaths::source("/experiments"));
        for (const char* unusable : {":/experiments", "/no/such/folder", ""}) {
            qputenv("QKLAB_EXPERIMENTS_DIR", unusable);  // embedded, missing, unset
            QCOMPARE(presetDialogDirectory(), shipped);
        }
        qputenv("QKLAB_EXPERIMENTS_DIR", saved);
    }

    // Issue 14: "Recommend settings" fills the form from the guide's size table, with reasons.
    void recommendDialogFollowsTheGuideAndFillsTheForm() {
        RecommendDialog dialog;
        dialog.sizeEdit()->setText(QStringLiteral("300M"));
        QVERIFY(dialog.recommendedConfig().has_value());
        QCOMPARE(dialog.recommendedConfig()->model.dModel, int64_t(1024));  // 350M: 24 x 1024
        QCOMPARE(dialog.recommendedConfig()->attention.qkNorm, QkNormVariant::Rms);
        QVERIFY(dialog.reasonsText().contains(QStringLiteral("300M-1B")));
        QVERIFY(dialog.reasonsText().contains(QStringLiteral("attention.softcap.c")));
        dialog.shipWithoutQkNorm()->setChecked(true);
        QCOMPARE(dialog.recommendedConfig()->anneal.qkNorm.start, 0.92);
        dialog.sizeEdit()->setText(QStringLiteral("300X"));  // not a size: no config, says why
        QVERIFY(!dialog.recommendedConfig().has_value());
        QVERIFY(dialog.reasonsText().contains(QStringLiteral("300X")));
        dialog.sizeEdit()->setText(QStringLiteral("50M"));
        PresetPicker picker;
        QSignalSpy loaded(&picker, &PresetPicker::presetLoaded);
        picker.showRecommendation(*dialog.recommendedConfig());
        QCOMPARE(loaded.count(), 1);
        const auto config = loaded.at(0).at(0).value<RunConfig>();
        QCOMPARE(config.attention.qkNorm, QkNormVariant::None);  // < 100M: probe first
        QVERIFY(picker.whyText().contains(QStringLiteral("< 100M")));
    }

    // Issue 11, item 8: the form opens where a new user starts, says what bold labels mean,
    // and an invalid config draws no schedule (a negative LR was drawn as if it would run).
    void opensOnThePresetPageAndExplainsBoldLabels() {
        ConfigForm form;
        auto* groups = form.findChild<QListWidget*>(QStringLiteral("configGroups"));
        QVERIFY(groups && groups->currentItem());
        QCOMPARE(groups->currentItem()->text(), QStringLiteral("Preset"));
        auto* legend = form.findChild<QLabel*>(QStringLiteral("boldLegend"));
        QVERIFY(legend && legend->text().contains(QStringLiteral("changed from the default")));
    }

    // Issue 11, item 7: after "Reuse config" the picker no longer names an unrelated preset.
    void reusedRunReplacesThePresetShown() {
        PresetPicker picker;
        picker.setDirectory(QString::fromStdString(qklab::testpaths::source("/experiments")));
        QVERIFY(picker.loadPath(QStringLiteral("blowup_no_qknorm")));
        QVERIFY(!picker.currentPath().isEmpty());
        RunConfig c;
        c.why = "a stored run's own why";
        picker.showReusedRun(QStringLiteral("run 7"), c);
        QVERIFY(picker.currentPath().isEmpty());
        QCOMPARE(picker.whyText(), QStringLiteral("Config of run 7: a stored run's own why"));
    }

    void invalidConfigDrawsNoSchedule() {
        SchedulePreview preview;
        RunConfig c;
        preview.setConfig(c);
        QVERIFY(preview.plot()->graph(0)->dataCount() > 0);
        c.optim.lr = -1;
        preview.setConfig(c);
        QCOMPARE(preview.plot()->graph(0)->dataCount(), 0);
    }

    // "abc" (does not parse) and -1 (parses, breaks the rule) in a positive field are both red;
    // the neighbour whose name starts the same ("optim.lr" / "schedule.lr_min"…) is not.
    void aRuleBreakMarksItsEditorRed() {
        ConfigForm form;
        auto* lr = form.editorFor(QStringLiteral("optim.lr"));
        auto* steps = form.editorFor(QStringLiteral("schedule.steps"));
        RunConfig c;
        c.optim.lr = -1;
        form.setConfig(c);
        QVERIFY(lr->property("invalid").toBool());
        QVERIFY(!steps->property("invalid").toBool());
        c.optim.lr = 1e-3;
        c.schedule.steps = -1;
        form.setConfig(c);
        QVERIFY(!lr->property("invalid").toBool());
        QVERIFY(steps->property("invalid").toBool());
        int red = 0;
        for (const FieldInfo& f : configFields())
            red += form.editorFor(QString::fromStdString(f.key))->property("invalid").toBool();
        QVERIFY2(red <= 2, "only schedule.steps and what its rule names");
    }

    void everyFieldHasAnEditor() {
        ConfigForm form;
        for (const FieldInfo& f : configFields())
            QVERIFY2(form.editorFor(QString::fromStdString(f.key)), f.key.c_str());
    }

    void defaultsRoundTrip() {
        ConfigForm form;
        QStringList problems;
        const RunConfig c = form.config(&problems);
        QVERIFY2(problems.isEmpty(), qPrintable(problems.join('\n')));
        QCOMPARE(configToJson(c).dump(), configToJson(RunConfig{}).dump());
    }

    void nonDefaultConfigRoundTrips() {
        RunConfig c = test::tinyConfig();
        c.optim.lr = 0.0321;
        c.optim.betas = {0.8, 0.99};
        c.attention.qkNorm = QkNormVariant::RmsAffine;
        c.attention.scale = 0.125;
        c.attention.softcap.kind = SoftcapKind::Tanh;
        c.attention.softcap.c = 30;
        c.model.rope = false;
        c.anneal.qkNorm.start = 0.9;
        c.anneal.qkNorm.end = 0.98;
        c.probes.histScale = HistScale::Symlog;
        c.probes.histMin = -4;
        c.probes.histMax = 4;
        c.events.push_back(
            eventFromJson({{"step", 20}, {"kind", "lr_multiplier"}, {"factor", 0.5}}, "test"));
        c.events.push_back(
            eventFromJson({{"step", 30}, {"kind", "context_length"}, {"seq_len", 16}}, "test"));
        ConfigForm form;
        form.setConfig(c);
        QStringList problems;
        const RunConfig back = form.config(&problems);
        QVERIFY2(problems.isEmpty(), qPrintable(problems.join('\n')));
        QCOMPARE(QString::fromStdString(configToJson(back).dump()),
                 QString::fromStdString(configToJson(c).dump()));
    }

    void badNumberIsNamedInline() {
        ConfigForm form;
        QSignalSpy validity(&form, &ConfigForm::validityChanged);
        auto* lr = qobject_cast<QLineEdit*>(form.editorFor(QStringLiteral("optim.lr")));
        QVERIFY(lr);
        lr->setText(QStringLiteral("fast"));
        form.revalidateNow();
        QVERIFY(!form.isValid());
        QVERIFY(form.problems().join('\n').contains(QStringLiteral("optim.lr")));
        QCOMPARE(validity.count(), 1);
        QCOMPARE(validity.at(0).at(0).toBool(), false);
        auto* messages = form.findChild<QLabel*>(QStringLiteral("validationMessages"));
        QVERIFY(messages->text().contains(QStringLiteral("optim.lr")));
        lr->setText(QStringLiteral("3e-3"));
        form.revalidateNow();
        QVERIFY(form.isValid());
    }

    void crossFieldProblemIsShown() {
        ConfigForm form;
        // d_model 128 is not divisible by 3 heads: validate() must say so before a run starts.
        auto* heads = qobject_cast<QSpinBox*>(form.editorFor(QStringLiteral("model.n_heads")));
        QVERIFY(heads);
        heads->setValue(3);
        form.revalidateNow();
        QVERIFY(!form.isValid());
        QVERIFY2(form.problems().join('\n').contains(QStringLiteral("n_heads")),
                 qPrintable(form.problems().join('\n')));
    }

    void badEventsJsonIsNamed() {
        ConfigForm form;
        form.eventsEditor()->setPlainText(QStringLiteral("[{\"step\": 3, \"kind\": \"nope\"}]"));
        form.revalidateNow();
        QVERIFY(!form.isValid());
        QVERIFY(form.problems().join('\n').contains(QStringLiteral("events")));
        form.eventsEditor()->setPlainText(QStringLiteral("[{"));
        form.revalidateNow();
        QVERIFY(form.problems().join('\n').contains(QStringLiteral("JSON")));
    }

    void eventsAreCheckedAgainstTheFormsOwnSteps() {
        ConfigForm form;
        auto* steps = form.editorFor(QStringLiteral("schedule.steps"));
        QVERIFY(steps);
        if (auto* box = qobject_cast<QSpinBox*>(steps))
            box->setValue(1000);
        else
            qobject_cast<QLineEdit*>(steps)->setText(QStringLiteral("1000"));
        // Step 800 of a 1000-step run is fine (the CLI accepts it too); 1000 is past the end.
        form.eventsEditor()->setPlainText(
            QStringLiteral("[{\"step\": 800, \"kind\": \"dirty_batch\"}]"));
        form.revalidateNow();
        QVERIFY2(form.isValid(), qPrintable(form.problems().join('\n')));
        QCOMPARE(int(form.config().events.size()), 1);
        form.eventsEditor()->setPlainText(
            QStringLiteral("[{\"step\": 1000, \"kind\": \"dirty_batch\"}]"));
        form.revalidateNow();
        QVERIFY(!form.isValid());
        QVERIFY2(form.problems().join('\n').contains(QStringLiteral("events[0].step = 1000")),
                 qPrintable(form.problems().join('\n')));
    }

    void eventsEditorTeachesTheRegistrysSyntax() {
        ConfigForm form;
        // The placeholder is valid input: pasted as it is, the form accepts it.
        const QString placeholder = form.eventsEditor()->placeholderText();
        form.eventsEditor()->setPlainText(placeholder);
        form.revalidateNow();
        QVERIFY2(form.isValid(), qPrintable(placeholder + "\n" + form.problems().join('\n')));
        // The tooltip shows every kind with its parameters, as the parser reads them.
        const QString tip = form.eventsEditor()->toolTip();
        for (const auto& k : eventKinds()) {
            QVERIFY2(tip.contains(QString::fromStdString(k.name)), qPrintable(tip));
            for (const auto& p : k.params)
                QVERIFY2(tip.contains(QString::fromStdString("\"" + p.key + "\"")),
                         qPrintable(tip));
        }
        QVERIFY(!placeholder.contains(QStringLiteral("params")));
    }

    void warningsAreShownButDoNotBlock() {
        RunConfig c;
        // Annealing both fuses at once is legal but inadvisable (domain brief section 3).
        c.attention.qkNorm = QkNormVariant::Rms;
        c.attention.softcap.kind = SoftcapKind::Tanh;
        c.anneal.qkNorm.start = 0.9;
        c.anneal.qkNorm.end = 1.0;
        c.anneal.softcap.start = 0.9;
        c.anneal.softcap.end = 1.0;
        ConfigForm form;
        form.setConfig(c);
        if (configWarnings(c).empty()) QSKIP("engine reports no warning for this combination");
        QVERIFY(form.isValid());
        QVERIFY(!form.warnings().isEmpty());
    }

    void presetsLoadIntoTheForm() {
        PresetPicker picker;
        picker.setDirectory(test::sourceDir() + QStringLiteral("/experiments"));
        QSignalSpy loaded(&picker, &PresetPicker::presetLoaded);
        QVERIFY(picker.loadPath(test::sourceDir() +
                                QStringLiteral("/experiments/blowup_qknorm_rms.json")));
        QCOMPARE(loaded.count(), 1);
        const RunConfig c = loaded.at(0).at(0).value<RunConfig>();
        QCOMPARE(c.attention.qkNorm, QkNormVariant::Rms);
        QVERIFY(!c.why.empty());
        QSignalSpy errors(&picker, &PresetPicker::error);
        QVERIFY(!picker.loadPath(QStringLiteral("/nonexistent/preset.json")));
        QCOMPARE(errors.count(), 1);
    }

    void savedPresetOnlyOverridesDefaults() {
        RunConfig c;
        c.why = "test";
        c.optim.lr = 0.02;
        c.attention.qkNorm = QkNormVariant::Rms;
        const auto j = PresetPicker::presetJson(c);
        QCOMPARE(j.size(), size_t(3));  // why, optim, attention
        QCOMPARE(j["optim"].size(), size_t(1));
        QCOMPARE(configToJson(configFromJson(j)).dump(), configToJson(c).dump());
    }

    void schedulePreviewDrawsEveryLane() {
        RunConfig c;
        c.anneal.qkNorm.start = 0.8;
        c.anneal.qkNorm.end = 0.95;
        SchedulePreview preview;
        preview.setConfig(c);
        QVERIFY(preview.findChild<QWidget*>());
    }
};

QTEST_MAIN(ConfigFormTest)
#include "config_form_test.moc"
#include "support/test_paths.h"
