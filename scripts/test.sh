#!/usr/bin/env bash
# One command for a new user and for CI: install packages, build, run every test
# (GoogleTest suites for the engine and store, Qt Test suites for the app, offscreen).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
export QT_QPA_PLATFORM=offscreen
ctest --test-dir build --output-on-failure --timeout 900
