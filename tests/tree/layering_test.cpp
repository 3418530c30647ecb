// layering_test.cpp — the folders say what the build says. core/ is five layers (util < config <
// store < analysis < engine), each a folder with its own library that links only the layer below
// it, so a wrong-way include does not compile: the higher layer's headers are not on the lower
// one's include path. What the compiler cannot see is checked here: that each layer's
// CMakeLists.txt links exactly the layer below, that every public header sits in
// include/qklab/<its layer>/, and that only the engine's sources include LibTorch.
//
// app/gui is in folders by feature: a feature includes common/ and core's public headers,
// never another feature; common/ includes only itself; shell/ assembles the window from them
// all (GuiFolders.*).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "support/test_paths.h"

namespace fs = std::filesystem;

namespace {

const fs::path kCore = fs::path(qklab::testpaths::sourceDir()) / "core";

// Lowest first. The index is the layer's rank.
const std::vector<std::string> kLayers = {"util", "config", "store", "analysis", "engine"};

std::string readFile(const fs::path& file) {
    std::ifstream in(file);
    return {std::istreambuf_iterator<char>(in), {}};
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

// The qklab_* libraries a layer's own library links (its target_link_libraries call).
std::set<std::string> linkedLayers(const std::string& layer) {
    const std::string text = readFile(kCore / layer / "CMakeLists.txt");
    const std::regex call("target_link_libraries\\(qklab_" + layer + "\\s([^)]*)\\)");
    std::set<std::string> linked;
    for (std::sregex_iterator it(text.begin(), text.end(), call), end; it != end; ++it) {
        const std::string args = (*it)[1];
        static const std::regex lib("qklab_([a-z]+)");
        for (std::sregex_iterator l(args.begin(), args.end(), lib); l != end; ++l)
            if (std::find(kLayers.begin(), kLayers.end(), (*l)[1].str()) != kLayers.end())
                linked.insert((*l)[1]);
    }
    return linked;
}

}  // namespace

TEST(Layering, CoreIsFiveLayerFoldersEachWithItsHeadersAndSources) {
    std::set<std::string> folders;
    for (const auto& e : fs::directory_iterator(kCore))
        if (e.is_directory()) folders.insert(e.path().filename().string());
    std::set<std::string> expected(kLayers.begin(), kLayers.end());
    expected.insert("cmake");
    EXPECT_EQ(folders, expected);
    for (const auto& layer : kLayers) {
        const fs::path include = kCore / layer / "include";
        for (const auto& e : fs::recursive_directory_iterator(include)) {
            if (!e.is_regular_file()) continue;
            EXPECT_EQ(e.path().parent_path(), include / "qklab" / layer)
                << e.path() << ": a public header of " << layer << " sits in include/qklab/"
                << layer << "/, spelled \"qklab/" << layer << "/NAME.h\"";
        }
        EXPECT_TRUE(fs::is_directory(kCore / layer / "src")) << layer;
    }
}

// The compiler refuses a wrong-way include only while each layer links the one below and no
// other: a link to a higher layer would put its headers on the include path.
TEST(Layering, EachLayerLinksOnlyTheLayerBelowIt) {
    for (size_t i = 0; i < kLayers.size(); ++i) {
        const std::set<std::string> expected =
            i == 0 ? std::set<std::string>{} : std::set<std::string>{kLayers[i - 1]};
        EXPECT_EQ(linkedLayers(kLayers[i]), expected) << "core/" << kLayers[i] << "/CMakeLists.txt";
    }
}

// A public header names its layer: "qklab/store/run_store.h", never a flat
// "qklab/store/run_store.h".
TEST(Layering, EveryIncludeOfAPublicHeaderNamesItsLayer) {
    const fs::path root = kCore.parent_path();
    int checked = 0;
    for (const char* top : {"core", "app", "tests"})
        for (auto it = fs::recursive_directory_iterator(root / top); it != decltype(it)(); ++it) {
            if (it->is_directory() && it->path().filename() == "build") {
                it.disable_recursion_pending();  // app/python/build: the package's own build
                continue;
            }
            const auto ext = it->path().extension();
            if (!it->is_regular_file() || (ext != ".cpp" && ext != ".h")) continue;
            for (const std::string& include : quotedIncludes(it->path())) {
                if (include.rfind("qklab/", 0) != 0) continue;
                ++checked;
                const std::string layer = include.substr(6, include.find('/', 6) - 6);
                EXPECT_TRUE(fs::exists(kCore / layer / "include" / include))
                    << it->path().lexically_relative(root) << " includes " << include;
            }
        }
    EXPECT_GT(checked, 300);  // the scan saw the includes
}

TEST(Layering, OnlyTheEnginesSourcesIncludeTorch) {
    static const std::regex torch(R"re(#\s*include\s*<(torch|ATen|c10)/)re");
    int checked = 0;
    for (const auto& layer : kLayers)
        for (const auto& e : fs::recursive_directory_iterator(kCore / layer)) {
            if (!e.is_regular_file()) continue;
            if (layer == "engine" && e.path().parent_path().filename() == "src") continue;
            ++checked;
            EXPECT_FALSE(std::regex_search(readFile(e.path()), torch))
                << e.path() << " includes LibTorch";
        }
    EXPECT_GT(checked, 60);
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
