// qklab/config/corpus.h — training text as bytes (byte-level tokens, vocab 256).
//
// The built-in corpus is generated, deterministically, from a small grammar (characters,
// places, actions, dialogue, arithmetic and lists) so that it ships inside the binary, needs
// no download, and has real structure: a small model's loss falls far below log(256).
#pragma once

#include <cstdint>
#include <string>

#include "qklab/util/error.h"
#include "qklab/util/input_file.h"

namespace qklab {

// About `bytes` bytes of built-in text (the same text for the same size, on every machine).
std::string builtinCorpus(int64_t bytes = 2'000'000);

// The largest text file data.source may name: the whole file is read into memory (twice,
// briefly, while the data loader copies it).
constexpr int64_t kMaxCorpusBytes = kCorpusFile.maxBytes;  // 1 GiB

// Why `source` cannot be a corpus, or "" when it can: "builtin", or a regular file (after
// following symlinks) of 4096 bytes to kMaxCorpusBytes. A FIFO, a device such as /dev/zero or
// a directory is refused without being opened (reading one blocks forever or never ends).
// Cheap (one stat): callers check before they create anything. *code (when given) is the
// ErrorCode to throw: MissingFile for a path that does not exist, InvalidConfig otherwise.
std::string dataSourceProblem(const std::string& source, ErrorCode* code = nullptr);

// "builtin" or a path to a text file. Throws Error{MissingFile} naming a missing path and
// Error{InvalidConfig} for anything dataSourceProblem() refuses.
std::string loadCorpus(const std::string& source);

// The heavily repeated "advertising text" of a dirty batch (domain brief section 1).
std::string defaultDirtyText();

}  // namespace qklab
