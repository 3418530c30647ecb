// recommend_command.cpp — `qklab-cli recommend`: the guide's size table as a preset, the config
// on stdout (or --output) and one reason per choice on stderr.
#include "recommend_command.h"

#include <iostream>

#include "qklab/config/recommend.h"
#include "stored_runs.h"

namespace qklab::cli {

void addRecommendOptions(CLI::App& cmd, RecommendArgs& args, Database& db) {
    cmd.add_option("--params", args.params, "model size, e.g. 300M, 1.3B, 125e6");
    cmd.add_option("--d-model", args.dModel, "or: the width ...");
    cmd.add_option("--layers", args.nLayers, "... and the number of blocks");
    cmd.add_option("--d-head", args.dHead, "head width (default: the guide's)");
    cmd.add_option("--precision", args.precision, "bf16 (default) or fp32")
        ->check(CLI::IsMember({"bf16", "fp32"}));
    cmd.add_flag("--ship-without-qk-norm", args.shipWithoutQkNorm,
                 "anneal QK-norm away at the end of training");
    cmd.add_option("--output,-o", args.output, "preset file to write (default: stdout)");
    db.use(args.dbPath);  // --output never writes over the run database
}

int cmdRecommend(const RecommendArgs& args) {
    RecommendRequest request;
    if (!args.params.empty()) request.parameters = parseParameterCount(args.params);
    request.dModel = args.dModel;
    request.nLayers = args.nLayers;
    request.dHead = args.dHead;
    request.precision = args.precision == "fp32" ? Precision::Fp32 : Precision::Bf16;
    request.shipWithoutQkNorm = args.shipWithoutQkNorm;
    const Recommendation r = recommendSettings(request);
    std::cerr << "the guide's " << r.tier << " row:\n";
    for (const auto& [key, reason] : r.reasons) std::cerr << "  " << key << ": " << reason << "\n";
    const std::string text = recommendationToJson(r).dump(2) + "\n";
    if (args.output.empty()) {
        std::cout << text;
        return 0;
    }
    writeExport(text, args.output, args.dbPath, /*force=*/false);
    std::cerr << "wrote " << args.output << "\n";
    return 0;
}

}  // namespace qklab::cli
