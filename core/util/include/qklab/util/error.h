// qklab/util/error.h — the one exception type core throws.
//
// Every failure that a user can cause (a bad config value, a malformed preset, a corrupt or
// locked database, a missing file) becomes an Error whose message names the culprit. A
// diverging run is *not* an error: it is an outcome recorded as RunStatus::Diverged.
#pragma once

#include <stdexcept>
#include <string>

namespace qklab {

enum class ErrorCode {
    InvalidConfig,     // a RunConfig key, type or value is wrong
    MissingFile,       // a data file, preset or checkpoint does not exist / cannot be read
    Database,          // SQLite failed (locked, I/O, constraint)
    NotQklabDatabase,  // the file is corrupt or was not written by qklab
    NotFound,          // a run id or name that does not exist
    Unsupported,       // e.g. CUDA asked for but LibTorch has none, a newer file format
    BadCheckpoint,     // a checkpoint is corrupt or does not fit the run's model
    InvalidRequest,  // an action the current state refuses (a taken name, resuming a finished run)
    Io,              // a file could not be written (a full disk, read-only media)
    Internal,
};

class Error : public std::runtime_error {
  public:
    Error(ErrorCode code, const std::string& message) : std::runtime_error(message), m_code(code) {}
    ErrorCode code() const noexcept { return m_code; }

  private:
    ErrorCode m_code;
};

}  // namespace qklab
