// store_round_trip_test.cpp — records written through RunWriter read back bit for bit (NaN losses
// and histogram counts included), the enum names they are stored under, the CSV export's column
// names, the summary kept across flushes, interventions in the run list, logit alarms.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "qklab/store/record_columns.h"
#include "qklab/store/run_export.h"
#include "support/store_fixture.h"

using namespace qklab;
using namespace qklab::testsupport;

TEST(RecordsTest, StatusAndSpikeKindNamesRoundTrip) {
    for (RunStatus s : {RunStatus::Running, RunStatus::Finished, RunStatus::Diverged,
                        RunStatus::Stopped, RunStatus::Interrupted, RunStatus::Failed})
        EXPECT_EQ(runStatusFromString(toString(s)), s);
    EXPECT_STREQ(toString(RunStatus::Interrupted), "interrupted");
    EXPECT_STREQ(toString(SpikeKind::QkRunaway), "qk_runaway");
    EXPECT_STREQ(toString(SpikeKind::DataOrAccumulation), "data_or_accumulation");
    for (SpikeKind k : {SpikeKind::QkRunaway, SpikeKind::TokenSpike, SpikeKind::DataOrAccumulation,
                        SpikeKind::HighLogits})
        EXPECT_EQ(spikeKindFromString(toString(k)), k);
    EXPECT_STREQ(toString(SpikeKind::HighLogits), "high_logits");
    EXPECT_STREQ(spikeKindTitle(SpikeKind::HighLogits), "logits high, no jump");
    std::string msg;
    EXPECT_EQ(errorCodeOf([] { runStatusFromString("exploded"); }, &msg), ErrorCode::Unsupported);
    EXPECT_NE(msg.find("exploded"), std::string::npos) << msg;
    EXPECT_EQ(errorCodeOf([] { spikeKindFromString("Token_Spike"); }), ErrorCode::Unsupported);
}

// Percentiles are exact (issue 25): the CSV names every probe column plainly, per layer, in
// probeColumns() order, and no column carries the "_sampled" suffix of the sampled estimates.
TEST(RunExportTest, CsvNamesEveryProbeColumnPerLayer) {
    StepMetrics m;
    ProbeStats p0, p1;
    p1.layer = 1;
    const std::string csv = runCsv({m}, {p0, p1});
    const std::string header = csv.substr(0, csv.find('\n')) + ",";
    size_t at = 0;
    for (int layer : {0, 1})
        for (const ProbeColumn& c : probeColumns()) {
            const std::string name = ",layer" + std::to_string(layer) + "_" + c.name + ",";
            const size_t found = header.find(name, at);
            ASSERT_NE(found, std::string::npos) << name << " in " << header;
            at = found + 1;
        }
    EXPECT_NE(header.find(",layer0_logit_p99_raw,"), std::string::npos);
    EXPECT_EQ(header.find("_sampled"), std::string::npos);
}

// RFC 4180 records: quoted fields may hold commas, doubled quotes and line breaks.
std::vector<std::vector<std::string>> parseCsv(const std::string& text) {
    std::vector<std::vector<std::string>> rows(1, std::vector<std::string>(1));
    bool quoted = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char ch = text[i];
        std::string& cell = rows.back().back();
        if (quoted && ch == '"' && i + 1 < text.size() && text[i + 1] == '"') {
            cell += '"';
            ++i;
        } else if (ch == '"') {
            quoted = !quoted;
        } else if (!quoted && ch == ',') {
            rows.back().emplace_back();
        } else if (!quoted && ch == '\n') {
            rows.emplace_back(1);
        } else {
            cell += ch;
        }
    }
    if (rows.back() == std::vector<std::string>(1)) rows.pop_back();  // after the last newline
    return rows;
}

// Issue 38: the CSV export left out what a Python run logged besides qklab's step metrics. One
// column per name after the step metrics, aligned by step, empty where the step has none; a
// name with a comma, quotes and a line break stays one header field.
TEST(RunExportTest, CsvHasACustomScalarColumnPerNameAlignedByStep) {
    std::vector<StepMetrics> steps(3);
    for (int64_t s = 0; s < 3; ++s) steps[size_t(s)].step = s;
    const std::string hostile = "evil,\"name\"\nx";
    const std::vector<CustomScalar> scalars = {
        {1, hostile, 3.0},
        {2, hostile, std::nan("")},  // logged as NaN: "nan", not empty
        {3, "tokens", 4096},         // a step with no step row (killed before its end)
        {0, "train/acc", 0.5},
        {2, "train/acc", 0.75}};
    ProbeStats probe;
    probe.step = 2;
    const auto rows = parseCsv(runCsv(steps, {probe}, scalars));
    const size_t n = stepMetricTable().columns.size();
    ASSERT_EQ(rows.size(), 5u);  // the header and steps 0 to 3
    for (const auto& row : rows) ASSERT_EQ(row.size(), n + 3 + probeColumns().size());
    EXPECT_EQ(rows[0][n], hostile);
    EXPECT_EQ(rows[0][n + 1], "tokens");
    EXPECT_EQ(rows[0][n + 2], "train/acc");
    EXPECT_EQ(rows[0][n + 3], "layer0_" + std::string(probeColumns().front().name));
    const std::vector<std::vector<std::string>> cells = {
        {"", "", "0.5"}, {"3", "", ""}, {"nan", "", "0.75"}, {"", "4096", ""}};
    for (size_t s = 0; s < 4; ++s) {
        EXPECT_EQ(rows[s + 1][0], std::to_string(s));  // the step column
        for (size_t k = 0; k < 3; ++k) EXPECT_EQ(rows[s + 1][n + k], cells[s][k]) << s << k;
    }
    EXPECT_EQ(rows[4][1], "");      // step 3's step metrics: none stored
    EXPECT_NE(rows[3][n + 3], "");  // step 2's probe
    EXPECT_EQ(rows[1][n + 3], "");  // none at step 0
    EXPECT_EQ(runCsv(steps, {probe}), runCsv(steps, {probe}, {}));  // qklab's runs: as before
}

TEST_F(StoreTest, EveryRecordTypeRoundTrips) {
    NewRun nr;
    nr.name = "roundtrip";
    nr.configJson = R"({"model":{"layers":2}})";
    nr.seed = 1234;
    nr.device = "cpu";
    nr.torchVersion = "2.1.0";
    nr.appVersion = "0.1.0+abc";
    int64_t id;
    {
        RunWriter w(m_path, nr);
        id = w.runId();
        StepMetrics a = step(0, 2.5);
        a.valLoss = 2.75;
        a.alpha = 0.25;
        a.softcapC = 30;
        a.tokensPerSec = 12345.5;
        a.attentionPath = "fused";
        StepMetrics b = step(1, 2.25);
        b.valLoss = kNaN;  // validated, and it diverged
        StepMetrics c = step(2, kNaN);
        c.gradNorm = kInf;
        w.addStep(a);
        w.addStep(b);
        w.addStep(c);

        ProbeStats p = probe(2, 1, -1, 40.0);
        double v = 0.5;
        for (double* f :
             {&p.logitP99Raw, &p.logitMeanRaw, &p.logitP99Capped, &p.logitMeanCapped, &p.qNormP90,
              &p.kNormP90, &p.qRawNormP90, &p.kRawNormP90, &p.entropy, &p.fracAtCap})
            *f = (v += 1.25);
        w.addProbe(p);
        w.addProbe(probe(2, 1, 3, 99.0));  // a head row: must not count in the run's maximum

        LogitHistogram h;
        h.step = 2;
        h.layer = 1;
        h.head = -1;
        h.counts = {0, 1, 255, 256, int64_t(1) << 40, -7, std::numeric_limits<int64_t>::max()};
        h.underflow = 3;
        h.overflow = 9;
        h.nan = 4;
        w.addHistogram(h);

        AttentionMap am;
        am.step = 2;
        am.layer = 0;
        am.head = 1;
        am.size = 2;
        am.weights = {1.0f, 0.0f, 0.3f, 0.7f};
        am.tokens = std::string("a\0", 2);  // bytes, a NUL included
        am.reason = MapReason::LogitAlarm;
        w.addAttentionMap(am);

        Spike s;
        s.step = 2;
        s.metric = "loss";
        s.value = 9.5;
        s.zScore = 7.25;
        s.kind = SpikeKind::QkRunaway;
        s.tier = 3;
        s.probeStep = 2;
        s.probeMaxLogit = 40;
        s.baselineMaxLogit = 12;
        s.probeQkNorm = 8;
        s.baselineQkNorm = 4;
        s.diagnosis = "logits ran away";
        w.addSpike(s);
        w.addEvent({1, "lr_scale", R"({"factor":0.5})", "user"});
        // In the database's own checkpoint folder, where the trainer writes (issue 22, item 6).
        w.addCheckpoint({2, m_path + ".checkpoints/run-" + std::to_string(id) + "/step2.pt", {}});
        w.finish(RunStatus::Diverged, "loss is NaN at step 2");
    }

    RunStore store(m_path);
    RunInfo r = store.run(id);
    EXPECT_EQ(r.name, "roundtrip");
    EXPECT_EQ(r.status, RunStatus::Diverged);
    EXPECT_EQ(r.statusMessage, "loss is NaN at step 2");
    EXPECT_EQ(r.configJson, nr.configJson);
    EXPECT_EQ(r.seed, 1234);
    EXPECT_EQ(r.device, "cpu");
    EXPECT_EQ(r.torchVersion, "2.1.0");
    EXPECT_EQ(r.appVersion, "0.1.0+abc");
    EXPECT_FALSE(r.createdAt.empty());
    EXPECT_FALSE(r.finishedAt.empty());
    EXPECT_EQ(r.stepsDone, 3);
    ASSERT_TRUE(r.finalLoss.has_value());
    EXPECT_DOUBLE_EQ(*r.finalLoss, 2.25);  // the last *finite* loss
    ASSERT_TRUE(r.maxLogitRaw.has_value());
    EXPECT_DOUBLE_EQ(*r.maxLogitRaw, 40.0);
    EXPECT_DOUBLE_EQ(*r.maxLogitCapped, 20.0);
    EXPECT_EQ(r.spikes, 1);

    auto ms = store.stepMetrics(id);
    ASSERT_EQ(ms.size(), 3u);
    EXPECT_DOUBLE_EQ(ms[0].loss, 2.5);
    EXPECT_EQ(ms[0].valLoss, std::optional<double>(2.75));
    EXPECT_DOUBLE_EQ(ms[0].alpha, 0.25);
    EXPECT_DOUBLE_EQ(ms[0].softcapC, 30);
    EXPECT_DOUBLE_EQ(ms[0].tokensPerSec, 12345.5);
    EXPECT_DOUBLE_EQ(ms[0].gradNorm, 1.0);
    EXPECT_EQ(ms[0].seqLen, 64);
    EXPECT_EQ(ms[0].attentionPath, "fused");
    EXPECT_EQ(ms[1].attentionPath, "");  // not recorded
    ASSERT_TRUE(ms[1].valLoss.has_value());
    EXPECT_TRUE(std::isnan(*ms[1].valLoss));
    EXPECT_TRUE(std::isnan(ms[2].loss));
    EXPECT_FALSE(ms[2].valLoss.has_value());
    EXPECT_TRUE(std::isinf(ms[2].gradNorm));
    EXPECT_EQ(store.stepMetrics(id, 2).size(), 1u);

    auto ps = store.probeStats(id);
    ASSERT_EQ(ps.size(), 2u);
    EXPECT_EQ(ps[0].head, -1);
    EXPECT_EQ(ps[0].layer, 1);
    EXPECT_DOUBLE_EQ(ps[0].logitMaxRaw, 40.0);
    EXPECT_DOUBLE_EQ(ps[0].logitP99Raw, 1.75);
    EXPECT_DOUBLE_EQ(ps[0].fracAtCap, 0.5 + 10 * 1.25);
    EXPECT_DOUBLE_EQ(ps[0].entropy, 0.5 + 9 * 1.25);
    EXPECT_EQ(ps[1].head, 3);

    auto hs = store.histograms(id, 1, -1);
    ASSERT_EQ(hs.size(), 1u);
    EXPECT_EQ(hs[0].counts, (std::vector<int64_t>{0, 1, 255, 256, int64_t(1) << 40, -7,
                                                  std::numeric_limits<int64_t>::max()}));
    EXPECT_EQ(hs[0].underflow, 3);
    EXPECT_EQ(hs[0].overflow, 9);
    EXPECT_EQ(hs[0].nan, 4);
    EXPECT_EQ(store.histograms(id, 1, 0).size(), 0u);
    EXPECT_EQ(store.histogramSteps(id), std::vector<int64_t>{2});
    // The blob is little-endian int64, 8 bytes per bin, whatever the host's byte order.
    EXPECT_EQ(rawInt("SELECT length(counts) FROM histograms"), 7 * 8);
    EXPECT_EQ(rawText("SELECT hex(substr(counts, 17, 8)) FROM histograms"), "FF00000000000000");

    auto maps = store.attentionMaps(id, 2);
    ASSERT_EQ(maps.size(), 1u);
    EXPECT_EQ(maps[0].size, 2);
    EXPECT_EQ(maps[0].head, 1);
    EXPECT_EQ(maps[0].weights, (std::vector<float>{1.0f, 0.0f, 0.3f, 0.7f}));
    EXPECT_EQ(maps[0].tokens, std::string("a\0", 2));
    EXPECT_EQ(maps[0].reason, MapReason::LogitAlarm);
    EXPECT_EQ(store.attentionMapSteps(id), std::vector<int64_t>{2});

    auto sp = store.spikes(id);
    ASSERT_EQ(sp.size(), 1u);
    EXPECT_EQ(sp[0].kind, SpikeKind::QkRunaway);
    EXPECT_EQ(sp[0].tier, 3);
    EXPECT_EQ(sp[0].metric, "loss");
    EXPECT_DOUBLE_EQ(sp[0].zScore, 7.25);
    EXPECT_DOUBLE_EQ(sp[0].baselineQkNorm, 4);
    EXPECT_EQ(sp[0].diagnosis, "logits ran away");

    auto ev = store.events(id);
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].kind, "lr_scale");
    EXPECT_EQ(ev[0].paramsJson, R"({"factor":0.5})");
    EXPECT_EQ(ev[0].source, "user");
    auto ck = store.checkpoints(id);
    ASSERT_EQ(ck.size(), 1u);
    EXPECT_EQ(ck[0].path, fs::weakly_canonical(m_path + ".checkpoints/run-1/step2.pt").string());
    EXPECT_EQ(rawText("SELECT path FROM checkpoints"), "run-1/step2.pt");  // relative to it
}

TEST_F(StoreTest, SummaryIsKeptAcrossFlushesAndProbesFilter) {
    RunWriter w(m_path, NewRun{});
    w.addStep(step(0, 3.0));
    w.addProbe(probe(0, 0, -1, 10));
    w.addProbe(probe(0, 1, -1, 12));
    w.addProbe(probe(0, 0, 0, 50));
    w.flush();
    w.addStep(step(1, 2.0));
    w.addStep(step(2, kNaN));  // a NaN last step leaves the final loss at the last finite one
    w.addProbe(probe(2, 0, -1, 7));
    w.addProbe(probe(2, 0, 1, 8));
    w.flush();

    RunStore store(m_path);
    RunInfo r = store.run(w.runId());
    EXPECT_EQ(r.name, "run-" + std::to_string(w.runId()));
    EXPECT_EQ(r.stepsDone, 3);
    EXPECT_DOUBLE_EQ(r.finalLoss.value(), 2.0);
    EXPECT_DOUBLE_EQ(r.maxLogitRaw.value(), 12);
    EXPECT_EQ(store.probeStats(w.runId()).size(), 5u);
    auto layers = store.probeStats(w.runId(), -1);
    ASSERT_EQ(layers.size(), 3u);
    EXPECT_EQ(layers[0].layer, 0);
    EXPECT_EQ(layers[1].layer, 1);
    EXPECT_EQ(layers[2].step, 2);
    EXPECT_EQ(store.probeStats(w.runId(), 1).size(), 1u);
    EXPECT_EQ(store.probeStats(w.runId(), std::nullopt, 1).size(), 2u);
}

TEST_F(StoreTest, ListedRunsCarryTheirInterventionsInStepOrder) {
    {
        RunWriter w(m_path, NewRun{});
        w.addEvent({80, "softcap", R"({"cap":"tanh","c":30})", "user"});
        w.addEvent({50, "qk_norm", R"({"variant":"rms"})", "user"});
        w.addEvent({50, "lr_multiplier", R"({"factor":0.5})", "user"});  // same step: id order
        w.addEvent({10, "dirty_batch", "{}", "config"});  // the config's own: not listed
        w.finish(RunStatus::Finished);
    }
    RunStore store(m_path, StoreAccess::ReadOnly);
    const auto runs = store.listRuns();
    ASSERT_EQ(runs.size(), 1u);
    const auto& iv = runs[0].interventions;
    ASSERT_EQ(iv.size(), 3u);
    EXPECT_EQ(iv[0].step, 50);
    EXPECT_EQ(iv[0].kind, "qk_norm");
    EXPECT_EQ(iv[0].paramsJson, R"({"variant":"rms"})");
    EXPECT_EQ(iv[1].kind, "lr_multiplier");
    EXPECT_EQ(iv[2].step, 80);
    EXPECT_EQ(iv[2].source, "user");
    EXPECT_EQ(store.run(1).interventions.size(), 3u);
}

TEST_F(StoreTest, LogitAlarmsKeepTheFirstCrossingPerLayerAndRule) {
    {
        RunWriter w(m_path, NewRun{});
        LogitAlarm a;
        a.step = 10;
        a.layer = 0;
        a.metric = "logit_max_raw";
        a.value = 134;
        a.threshold = 30;
        a.kind = SpikeKind::QkRunaway;
        a.tier = 3;
        a.text = "first";
        w.addLogitAlarm(a);
        a.step = 15;  // the same layer and rule again (a resumed run): ignored
        a.text = "again";
        w.addLogitAlarm(a);
        a.layer = 1;
        a.step = 12;
        a.text = "layer 1";
        w.addLogitAlarm(a);
        w.finish(RunStatus::Finished);
    }
    RunStore store(m_path);
    const auto alarms = store.logitAlarms(1);
    ASSERT_EQ(alarms.size(), 2u);
    EXPECT_EQ(alarms[0].step, 10);
    EXPECT_EQ(alarms[0].text, "first");
    EXPECT_EQ(alarms[0].kind, SpikeKind::QkRunaway);
    EXPECT_DOUBLE_EQ(alarms[0].value, 134);
    EXPECT_EQ(alarms[1].layer, 1);
    EXPECT_EQ(store.run(1).logitAlarms, 2);
}
