// qklab-cli — train, list, show, export and resume runs without the GUI. The commands are the
// rows of one table (commands.cpp); `qklab-cli --help` lists them.
//
// Exit status: 0 when a run finished or diverged (divergence is a result), 2 for bad input
// (message names the problem), 3 when stopped by Ctrl-C (resumable), 1 for other failures.
#include <CLI/CLI.hpp>
#include <iostream>

#include "commands.h"
#include "qklab/engine/environment.h"
#include "qklab/store/run_store.h"
#include "qklab/util/error.h"
#include "qklab/util/version.h"

using namespace qklab;

namespace {

// An error message quotes names and values from files: each line's control characters are
// escaped (the line breaks between lines stay).
std::string printableMessage(const std::string& message) {
    std::string out, line;
    for (char c : message + "\n") {
        if (c != '\n') {
            line += c;
            continue;
        }
        out += (out.empty() ? "" : "\n") + printableText(line);
        line.clear();
    }
    return out;
}

// Runs the command; an error is said on stderr: exit 2 for bad input, 1 for the rest.
int runCommand(const cli::Command& command) {
    try {
        return command.run();
    } catch (const Error& e) {
        std::cerr << "qklab-cli: " << printableMessage(e.what()) << "\n";
        const bool badInput = e.code() != ErrorCode::Internal && e.code() != ErrorCode::Database &&
                              e.code() != ErrorCode::Io;
        return badInput ? 2 : 1;
    } catch (const std::exception& e) {
        std::cerr << "qklab-cli: " << printableMessage(e.what()) << "\n";
        return 1;
    }
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"qklab-cli: train small transformers and watch their attention logits"};
    app.set_version_flag("--version", appVersion() + " (LibTorch " + torchVersion() + ")");
    app.require_subcommand(1);
    cli::Database db(app);
    const std::vector<cli::Command> commands = cli::commandTable();
    std::vector<CLI::App*> subcommands;
    for (const cli::Command& c : commands) subcommands.push_back(cli::addCommand(app, c, db));
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        // --help and --version exit 0; every other parser error is bad input: 2, as the
        // README promises (CLI11's own codes are 105..114).
        return app.exit(e) == 0 ? 0 : 2;
    }
    if (!db.resolve()) {
        std::cerr << "qklab-cli: --db: the path is empty\n";
        return 2;
    }
    for (size_t i = 0; i < commands.size(); ++i)
        if (subcommands[i]->parsed()) return runCommand(commands[i]);
    return 2;  // not reached: the parser requires a command
}
