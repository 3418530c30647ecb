// command.cpp — see command.h.
#include "command.h"

#include "qklab/store/run_store.h"

namespace qklab::cli {

Database::Database(CLI::App& app) {
    m_options.push_back(
        app.add_option("--db", m_path, "run database (default: " + defaultDatabasePath() + ")"));
}

void Database::addOption(CLI::App& cmd, std::string& target, const std::string& help) {
    m_options.push_back(cmd.add_option("--db", m_path, help));
    use(target);
}

void Database::use(std::string& target) {
    m_targets.push_back(&target);
}

bool Database::resolve() {
    for (const CLI::Option* option : m_options)
        if (option->count() > 0 && m_path.empty()) return false;
    const std::string path = m_path.empty() ? defaultDatabasePath() : m_path;
    for (std::string* target : m_targets) *target = path;
    return true;
}

CLI::App* addCommand(CLI::App& app, const Command& c, Database& db) {
    CLI::App* cmd = app.add_subcommand(c.name, c.help);
    c.addOptions(*cmd, db);
    return cmd;
}

}  // namespace qklab::cli
