// keys_command.cpp — `qklab-cli keys`: every config key and event kind with its default and
// meaning (--markdown: docs/CONFIG.md).
#include "keys_command.h"

#include <iostream>

#include "qklab/config/config_docs.h"

namespace qklab::cli {

void addKeysOptions(CLI::App& cmd, KeysArgs& args, Database&) {
    cmd.add_flag("--markdown", args.markdown, "docs/CONFIG.md");
}

int cmdKeys(const KeysArgs& args) {
    std::cout << (args.markdown ? configReferenceMarkdown() : configKeysText());
    return 0;
}

}  // namespace qklab::cli
