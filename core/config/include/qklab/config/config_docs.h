// qklab/config/config_docs.h — the configuration reference, written from the registries.
#pragma once

#include <string>

namespace qklab {

std::string configKeysText();           // `qklab-cli keys`: one line per key, then events
std::string configReferenceMarkdown();  // docs/CONFIG.md, exactly

}  // namespace qklab
