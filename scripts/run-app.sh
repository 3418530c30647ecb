#!/usr/bin/env bash
# One command for a new user: install packages, build, launch the desktop app.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
exec build/app/gui/qklab "$@"
