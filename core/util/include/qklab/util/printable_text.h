// qklab/util/printable_text.h — text from someone else's file made safe to print on a terminal.
//
// Names read from a file (someone else's database, or one written before checkRunName existed)
// may hold ESC sequences that would clear the screen; every table and message that prints one,
// in core, the CLI and the Python package, uses this. Defined in util/text_util.cpp beside the
// UTF-8 reading it shares with firstUnsafeCharacter (util/text_util.h), so the util layer owns
// it (layering_test's kHeaderOnly).
#pragma once

#include <string>

namespace qklab {

// s safe to print on a terminal: every character firstUnsafeCharacter names (bytes that are
// not UTF-8, control characters, bidi controls) becomes \xNN per byte, so that text read from
// someone else's file (a run name) can never clear the screen, retitle the window (ESC, OSC) or
// show itself reversed. Other text is unchanged.
std::string printableText(const std::string& s);

}  // namespace qklab
