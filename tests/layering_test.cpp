// layering_test.cpp — the folders say what the build says: core/src is in layers, and nothing
// in a lower layer includes a higher one (util < config < store < analysis < engine; the first
// four make qklab_base, torch-free, engine/ makes qklab_engine). A public header
// (core/include/qklab/X.h) belongs to the layer of the folder that holds X.cpp.
//
// app/gui is in folders by feature: a feature includes common/ and core's public headers,
// never another feature; common/ includes only itself; shell/ assembles the window from them
// all (GuiFolders.*).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "support/test_paths.h"

namespace fs = std::filesystem;

namespace {

const fs::path kCore = fs::path(qklab::testpaths::sourceDir()) / "core";

// Lowest first. The index is the layer's rank.
const std::vector<std::string> kLayers = {"util", "config", "store", "analysis", "engine"};

// Public headers without a .cpp of their own (printable_text.h's function is text_util.cpp's).
const std::map<std::string, std::string> kHeaderOnly = {
    {"choices.h", "util"}, {"error.h", "util"}, {"printable_text.h", "util"}};

int rankOf(const std::string& layer) {
    for (size_t i = 0; i < kLayers.size(); ++i)
        if (kLayers[i] == layer) return static_cast<int>(i);
    return -1;
}

// The layer of a public header: where its .cpp lives, or the header-only table.
std::string publicHeaderLayer(const std::string& header) {
    if (auto it = kHeaderOnly.find(header); it != kHeaderOnly.end()) return it->second;
    const std::string cpp = fs::path(header).stem().string() + ".cpp";
    for (const auto& layer : kLayers)
        if (fs::exists(kCore / "src" / layer / cpp)) return layer;
    return {};
}

// Every `#include "..."` of a file.
std::vector<std::string> quotedIncludes(const fs::path& file) {
    static const std::regex include(R"re(^\s*#\s*include\s*"([^"]+)")re");
    std::ifstream in(file);
    std::vector<std::string> out;
    std::string line;
    std::smatch m;
    while (std::getline(in, line))
        if (std::regex_search(line, m, include)) out.push_back(m[1]);
    return out;
}

// The layer an include names, or "" when it is not one of core's files (generated headers).
std::string includedLayer(const std::string& include) {
    if (include.rfind("qklab/", 0) == 0) return publicHeaderLayer(include.substr(6));
    const auto slash = include.find('/');
    if (slash != std::string::npos && rankOf(include.substr(0, slash)) >= 0)
        return include.substr(0, slash);
    return {};
}

// (file, its layer) for every file of core.
std::vector<std::pair<fs::path, std::string>> coreFiles() {
    std::vector<std::pair<fs::path, std::string>> files;
    for (const auto& layer : kLayers)
        for (const auto& e : fs::directory_iterator(kCore / "src" / layer))
            files.emplace_back(e.path(), layer);
    for (const auto& e : fs::directory_iterator(kCore / "include" / "qklab"))
        files.emplace_back(e.path(), publicHeaderLayer(e.path().filename().string()));
    return files;
}

}  // namespace

TEST(Layering, EveryFileOfCoreIsInALayer) {
    for (const auto& e : fs::directory_iterator(kCore / "src"))
        if (e.is_regular_file())
            ADD_FAILURE() << e.path() << " sits in core/src itself: put it in a layer's folder";
        else
            EXPECT_GE(rankOf(e.path().filename().string()), 0)
                << e.path() << " is not a layer (" << kLayers.size() << " layers)";
    for (const auto& [file, layer] : coreFiles())
        EXPECT_FALSE(layer.empty()) << file << ": a public header without a .cpp in a layer "
                                    << "folder; add it to kHeaderOnly";
}

TEST(Layering, NoIncludeRunsFromALowerLayerToAHigherOne) {
    int checked = 0;
    for (const auto& [file, layer] : coreFiles())
        for (const std::string& include : quotedIncludes(file)) {
            const std::string target = includedLayer(include);
            if (target.empty()) continue;
            ++checked;
            EXPECT_LE(rankOf(target), rankOf(layer))
                << file.lexically_relative(kCore) << " (" << layer << ") includes " << include
                << " (" << target << ")";
        }
    EXPECT_GT(checked, 100);  // the scan saw the includes
}

TEST(Layering, OnlyTheEngineIncludesTorch) {
    static const std::regex torch(R"re(#\s*include\s*<(torch|ATen|c10)/)re");
    for (const auto& [file, layer] : coreFiles()) {
        if (layer == "engine" && file.parent_path().filename() != "qklab") continue;
        std::ifstream in(file);
        const std::string text((std::istreambuf_iterator<char>(in)), {});
        EXPECT_FALSE(std::regex_search(text, torch)) << file << " includes LibTorch";
    }
}

// ---- app/gui: folders by feature -----------------------------------------------------------

namespace {

const fs::path kGui = fs::path(qklab::testpaths::sourceDir()) / "app" / "gui";

// The features of the app; each may include only itself, common/ and core.
const std::vector<std::string> kGuiFeatures = {"setup",   "live",   "run",
                                               "compare", "sweeps", "lessons"};
const std::string kGuiCommon = "common";  // what two features share
const std::string kGuiShell = "shell";    // the window: includes every feature

bool isGuiFolder(const std::string& folder) {
    return folder == kGuiCommon || folder == kGuiShell ||
           std::find(kGuiFeatures.begin(), kGuiFeatures.end(), folder) != kGuiFeatures.end();
}

bool guiFolderMayInclude(const std::string& from, const std::string& to) {
    return from == to || to == kGuiCommon || from == kGuiShell;
}

// (file, its folder) for every file of app/gui's folders.
std::vector<std::pair<fs::path, std::string>> guiFiles() {
    std::vector<std::pair<fs::path, std::string>> files;
    for (const auto& folder : fs::directory_iterator(kGui))
        if (folder.is_directory())
            for (const auto& e : fs::directory_iterator(folder.path()))
                files.emplace_back(e.path(), folder.path().filename().string());
    return files;
}

}  // namespace

TEST(GuiFolders, EveryFileOfTheGuiIsInAKnownFolder) {
    for (const auto& e : fs::directory_iterator(kGui))
        if (e.is_regular_file()) {
            EXPECT_EQ(e.path().filename().string(), "CMakeLists.txt")
                << e.path() << " sits in app/gui itself: put it in a feature's folder or common/";
        } else
            EXPECT_TRUE(isGuiFolder(e.path().filename().string()))
                << e.path() << " is not a known folder: add the feature to kGuiFeatures";
    const auto files = guiFiles();
    for (const auto& [file, folder] : files)
        EXPECT_TRUE(fs::is_regular_file(file)) << file << ": one level of folders only";
    EXPECT_GT(files.size(), 50u);  // the scan saw the app
}

TEST(GuiFolders, NoFeatureIncludesAnother) {
    int checked = 0;
    for (const auto& [file, folder] : guiFiles())
        for (const std::string& include : quotedIncludes(file)) {
            if (include.rfind("qklab/", 0) == 0) continue;  // core's public, torch-free headers
            const auto slash = include.find('/');
            const std::string target = slash == std::string::npos ? "" : include.substr(0, slash);
            const std::string where = file.lexically_relative(kGui).string();
            if (!isGuiFolder(target)) {
                ADD_FAILURE() << where << " includes \"" << include
                              << "\": a GUI include names its folder (\"common/theme.h\")";
                continue;
            }
            ++checked;
            EXPECT_TRUE(guiFolderMayInclude(folder, target))
                << where << " includes " << include << ": a feature reaches another only "
                << "through common/ (LabWindow for the window)";
        }
    EXPECT_GT(checked, 100);  // the scan saw the includes
}

// The automation driver asks the window for everything through LabWindow, as the lesson stage
// does: neither a feature's header nor MainWindow's (whose part<T>() only the tests use).
TEST(GuiFolders, TheAutomationDriverReachesTheWindowOnlyThroughLabWindow) {
    int checked = 0;
    for (const char* name : {"automation.h", "automation.cpp"})
        for (const std::string& include : quotedIncludes(kGui / kGuiShell / name)) {
            const std::string folder = include.substr(0, include.find('/'));
            ++checked;
            EXPECT_TRUE(std::find(kGuiFeatures.begin(), kGuiFeatures.end(), folder) ==
                        kGuiFeatures.end())
                << "shell/" << name << " includes " << include << ": ask LabWindow instead";
            EXPECT_NE(include, "shell/main_window.h")
                << "shell/" << name << " includes " << include << ": ask LabWindow instead";
        }
    EXPECT_GT(checked, 3);  // the scan saw the includes
}
