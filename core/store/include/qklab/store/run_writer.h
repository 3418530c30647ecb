// qklab/store/run_writer.h — the single writer of one run.
//
// Rows are buffered and committed together by flush() (the trainer calls it at probe steps and
// at least every ~0.5 s), so a SIGKILL loses at most the last uncommitted batch. The writer
// also guards against losing rows without a word: it checks that the journal it writes
// through is still the database's (core/store/src/sqlite_files.h), and fail() stores why a run
// stopped even on a full disk (core/store/src/disk_reserve.h).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "qklab/store/records.h"
#include "qklab/store/run_store.h"

namespace qklab {

struct NewRun {
    std::string name;  // empty = "run-<id>"
    std::optional<SweepMembership> sweep;
    std::string configJson;
    int64_t seed = 0;
    std::string device, torchVersion, appVersion;
    std::string source = "qklab";  // RunInfo::source
    std::string userConfigJson;    // RunInfo::userConfigJson, stored as storedUserConfig says
};

// The user's own config (qklab.init(config=...)) as it is stored: a JSON object that every
// reader reads, the NaN, Infinity and -Infinity that Python's json module writes becoming the
// strings "nan", "inf" and "-inf" (no JSON reader reads the bare tokens; readers still take
// them in rows older packages wrote). "" stays "". Anything import would refuse (not JSON, not
// an object, beyond the stored-JSON limits) throws Error{InvalidRequest} naming user_config.
std::string storedUserConfig(const std::string& json);

// The single writer of one run. Rows are buffered and committed together by flush() (the
// trainer calls it at probe steps and at least every ~0.5 s), so a SIGKILL loses at most the
// last uncommitted batch.
class RunWriter {
  public:
    // Creates the run row (status running, with this process's pid and host).
    RunWriter(const std::string& dbPath, const NewRun& run);
    // Re-opens an existing run to continue it (resume): rows after fromStep are deleted.
    RunWriter(const std::string& dbPath, int64_t runId, int64_t fromStep);
    ~RunWriter();  // flushes; never throws
    RunWriter(const RunWriter&) = delete;
    RunWriter& operator=(const RunWriter&) = delete;

    int64_t runId() const;
    void addStep(const StepMetrics& m);
    void addProbe(const ProbeStats& p);
    void addHistogram(const LogitHistogram& h);
    void addAttentionMap(const AttentionMap& m);
    void addSpike(const Spike& s);
    void addLogitAlarm(const LogitAlarm& a);
    void addQkClip(const QkClip& c);
    void addChangeReport(const ChangeReport& r);
    void addForecast(const Forecast& f);
    void addCustomScalar(const CustomScalar& c);
    void addEvent(const EventRecord& e);
    void addCheckpoint(const CheckpointInfo& c);
    // One transaction for everything buffered. Throws Error when it cannot be committed (the
    // rows stay buffered), and Error{Database} once the database's journal was replaced under
    // this writer (see core/store/src/sqlite_files.h): from then on nothing is written.
    void flush();
    // Flushes and stores the final status; throws as flush does, then nothing is "finished".
    void finish(RunStatus status, const std::string& message = {});

    // The run failed (`reason`, e.g. the store error that stopped it). Commits what is buffered
    // when it can, otherwise drops it and names the steps lost; frees the disk reserve (a full
    // disk) and stores status failed with the message. Never throws.
    struct FailureRecord {
        std::string message;  // the status message: the reason and any rows not stored
        bool stored = false;  // false: the status could not be written, `why` says why
        std::string why;
    };
    FailureRecord fail(const std::string& reason);

  private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

}  // namespace qklab
