// command.h — what a row of qklab-cli's command table (commands.cpp) is, and the run database
// the rows share.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace qklab::cli {

// The run database: `--db FILE` before the command name or after it (one path for both; the
// parser sets the one before first, so the one after wins), else the default database. A --db
// given empty is refused (exit 2): an empty path names no file.
class Database {
  public:
    explicit Database(CLI::App& app);  // declares the --db before the command name
    // Declares `cmd`'s own --db; `target` gets the path when it is resolved.
    void addOption(CLI::App& cmd, std::string& target, const std::string& help = "run database");
    // A command without its own --db that still needs the path (so as not to write over it).
    void use(std::string& target);
    // After parsing: false when a --db was given empty, else every target gets the path.
    bool resolve();

  private:
    std::string m_path;
    std::vector<CLI::Option*> m_options;
    std::vector<std::string*> m_targets;
};

// One subcommand. A command's header, xxx_command.h, declares `struct XxxArgs` (what its
// command line holds), `void addXxxOptions(CLI::App&, XxxArgs&, Database&)` (declares them) and
// `int cmdXxx(const XxxArgs&)`, which returns the exit status or throws qklab::Error; its
// xxx_command.cpp defines the two functions.
struct Command {
    std::string name;
    std::string help;  // its line in `qklab-cli --help`
    std::function<void(CLI::App& cmd, Database& db)> addOptions;
    std::function<int()> run;  // with what the parser filled in
};

// A row from a command's two functions; the args they share live as long as the row.
template <class Args>
Command command(std::string name, std::string help, void (*addOptions)(CLI::App&, Args&, Database&),
                int (*run)(const Args&)) {
    auto args = std::make_shared<Args>();
    return {std::move(name), std::move(help),
            [args, addOptions](CLI::App& cmd, Database& db) { addOptions(cmd, *args, db); },
            [args, run] { return run(*args); }};
}

// Adds the row's subcommand to `app`, its options declared.
CLI::App* addCommand(CLI::App& app, const Command& c, Database& db);

}  // namespace qklab::cli
