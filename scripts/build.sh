#!/usr/bin/env bash
# Configures and builds qklab in ./build (Release, ccache). Extra arguments go to cmake,
# e.g. scripts/build.sh -DQKLAB_GUI=OFF.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build build -j"$jobs"
