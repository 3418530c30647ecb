#!/usr/bin/env bash
# Configures and builds qklab (Release, ccache) in ${QKLAB_BUILD_DIR:-build}. Extra arguments go
# to cmake, e.g. scripts/build.sh -DQKLAB_GUI=OFF. QKLAB_TORCH (pip | debian | a path) picks
# the LibTorch; the default is the torch wheel that scripts/setup.sh installs.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
build=${QKLAB_BUILD_DIR:-build}
torch_args=()
if [ -n "${QKLAB_TORCH:-}" ]; then torch_args=(-DQKLAB_TORCH="$QKLAB_TORCH"); fi
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release "${torch_args[@]}" "$@"
cmake --build "$build" -j"$jobs"
