// generate_command.cpp — see generate_command.h.
#include "generate_command.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>

#include "qklab/error.h"
#include "qklab/generate.h"
#include "qklab/generate_source.h"
#include "qklab/resources.h"
#include "qklab/run_store.h"

namespace qklab::cli {
namespace {

std::string shown(double v) {
    std::ostringstream s;
    s << v;
    return s.str();
}

// Bad values are refused before anything is opened; returns the cache asked for.
DecodeCache checkOptions(const GenerateCommandOptions& o) {
    if (o.tokens < 1 || o.tokens > kMaxGenerateTokens)
        throw Error(ErrorCode::InvalidRequest,
                    "--tokens = " + std::to_string(o.tokens) + ": give 1 to " +
                        std::to_string(kMaxGenerateTokens) + " bytes to generate");
    if (!std::isfinite(o.temperature) || o.temperature < 0)
        throw Error(ErrorCode::InvalidRequest,
                    "--temperature = " + shown(o.temperature) +
                        ": must be 0 (greedy) or a positive finite number");
    if (o.seed < 0)
        throw Error(ErrorCode::InvalidRequest,
                    "--seed = " + std::to_string(o.seed) + ": must be 0 or more");
    if (o.threads < 0 || o.threads > kMaxThreadsOption)
        throw Error(ErrorCode::InvalidRequest,
                    "--threads = " + std::to_string(o.threads) + ": give 0 (all cores) to " +
                        std::to_string(kMaxThreadsOption) + " (more than the cores are capped)");
    const auto cache = parseChoice<DecodeCache>(o.cache);
    if (!cache)
        throw Error(ErrorCode::InvalidRequest,
                    "--cache = " + o.cache + ": expected " + choiceList<DecodeCache>());
    return *cache;
}

// Read-only, as `show`: a missing database file is "no such run", not a new empty file.
GenerationSource readSource(const GenerateCommandOptions& o) {
    std::unique_ptr<RunStore> store;
    try {
        store = std::make_unique<RunStore>(o.dbPath, StoreAccess::ReadOnly);
    } catch (const Error& e) {
        if (e.code() != ErrorCode::MissingFile) throw;
        throw Error(ErrorCode::NotFound, std::string(e.what()) + ", so there is no run '" +
                                             o.runRef.substr(0, 80) + "'");
    }
    return generationSource(*store, store->findRun(o.runRef).id);
}

}  // namespace

int generateText(const GenerateCommandOptions& o) {
    GenerateOptions options;
    options.cache = checkOptions(o);
    options.prompt = o.prompt;
    options.tokens = o.tokens;
    options.temperature = o.temperature;
    options.seed = static_cast<uint64_t>(o.seed);
    // As run.threads: more than the cores is capped, and said.
    std::string threadsWarning;
    options.threads = o.threads > 0 ? cappedThreads(o.threads, &threadsWarning) : 0;
    if (!threadsWarning.empty())
        std::cerr << "warning: --threads" << threadsWarning.substr(threadsWarning.find(" = "))
                  << "\n";
    const GenerationSource source = readSource(o);
    try {
        cacheLayout(source.config, options.cache);  // absorbed on an MHA run: refused here
    } catch (const Error& e) {
        throw Error(e.code(), "--cache = " + o.cache + ": " + e.what());
    }
    std::fwrite(o.prompt.data(), 1, o.prompt.size(), stdout);
    std::fflush(stdout);
    const GenerateResult r = generateFromCheckpoint(
        source.config, source.checkpoint.path, options, [](const std::string& text) {
            std::fwrite(text.data(), 1, text.size(), stdout);
            std::fflush(stdout);
            return true;
        });
    if (isatty(STDOUT_FILENO)) std::fputc('\n', stdout);  // a pipe gets the bytes exactly
    std::fflush(stdout);
    char timing[64];
    std::snprintf(timing, sizeof timing, "%.3f ms/token", r.msPerToken);
    std::cerr << "run " << source.run.id << " \"" << printableText(source.run.name)
              << "\", checkpoint step " << r.checkpointStep << ": " << r.text.size() << " bytes, "
              << nameOf(r.cache.kind) << " cache " << r.cache.bytesPerToken << " bytes/token";
    if (!r.cache.description.empty()) std::cerr << " (" << r.cache.description << ")";
    std::cerr << ", " << timing << "\n";
    return 0;
}

}  // namespace qklab::cli
