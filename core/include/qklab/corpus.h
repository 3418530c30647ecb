// qklab/corpus.h — training text as bytes (byte-level tokens, vocab 256).
//
// The built-in corpus is generated, deterministically, from a small grammar (characters,
// places, actions, dialogue, arithmetic and lists) so that it ships inside the binary, needs
// no download, and has real structure: a small model's loss falls far below log(256).
#pragma once

#include <cstdint>
#include <string>

namespace qklab {

// About `bytes` bytes of built-in text (the same text for the same size, on every machine).
std::string builtinCorpus(int64_t bytes = 2'000'000);

// "builtin" or a path to a text file. Throws Error{MissingFile} naming the path.
std::string loadCorpus(const std::string& source);

// The heavily repeated "advertising text" of a dirty batch (domain brief section 1).
std::string defaultDirtyText();

}  // namespace qklab
