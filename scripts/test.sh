#!/usr/bin/env bash
# One command for a new user and for CI: install what the build needs, build, run every test
# (GoogleTest suites for the engine and store, Qt Test suites for the app, offscreen).
# Then installs the Python package and runs its tests (scripts/python-check.sh), runs the
# Slurm sweep check (scripts/slurm-check.sh), compiles core + CLI against
# Debian's LibTorch 1.13 as well (the offline fallback) and trains a few steps with it, so
# that its version guards stay honest; QKLAB_TORCH=debian runs everything against 1.13 only.
#
# The tests run in parallel, one ctest job per core (docs/TESTING.md: the tiers, their times
# and how to run one); each phase says how long it took.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
started=$(date +%s)
phase_start=$started
phase() {  # "test: NAME took N s", for docs/TESTING.md's table of where the time goes
  local now
  now=$(date +%s)
  echo "test: $1 took $((now - phase_start)) s ($((now - started)) s in all)"
  phase_start=$now
}
QKLAB_WITH_DEBIAN_TORCH=1 QKLAB_WITH_SLURM=1 scripts/setup.sh
phase set-up
scripts/check-format.sh
cached=$(scripts/ccache-stats.sh count)
scripts/build.sh -DQKLAB_WERROR=ON
scripts/ccache-stats.sh since "$cached" "test: build"
phase build
export QT_QPA_PLATFORM=offscreen
ctest --test-dir build --output-on-failure --timeout 900 -j"$jobs"
phase "ctest -j$jobs"
# ctest lists skipped tests without their reason; GoogleTest wrote it to the log.
grep -h -A1 ': Skipped$' build/Testing/Temporary/LastTest.log 2>/dev/null |
  grep -v -e ': Skipped$' -e '^--$' | sort | uniq -c | sed 's/^ */test: skipped /; s/^test: skipped \([0-9]*\) /test: skipped \1 x: /' || true
# The Python package (app/python) built as a user builds it, and its tests.
if [ "${QKLAB_TORCH:-pip}" != debian ]; then
  scripts/python-check.sh --config-settings=cmake.define.QKLAB_WERROR=ON
  phase "Python package"
fi
# Sweeps on a real Slurm: a single-node cluster on localhost, a 4-point job array, merge
# (about 15 s). It needs root (munge and the daemons run as root here).
if [ "$(id -u)" -eq 0 ]; then
  scripts/slurm-check.sh --cli build/app/cli/qklab-cli
else
  echo "test: skipped scripts/slurm-check.sh (needs root to start munge and the Slurm daemons)"
fi
phase Slurm
if [ "${QKLAB_TORCH:-pip}" != debian ]; then
  # Only the engine's files include LibTorch: the torch-free layers and the CLI are the same
  # objects as build/'s and come from ccache (its base directory is the checkout).
  echo "test: core + CLI against Debian's LibTorch 1.13 (build-debian)"
  cached=$(scripts/ccache-stats.sh count)
  QKLAB_TORCH=debian QKLAB_BUILD_DIR=build-debian scripts/build.sh -DQKLAB_GUI=OFF \
    -DQKLAB_WERROR=ON -DQKLAB_TESTS=OFF -DQKLAB_BENCH=OFF >/dev/null
  scripts/ccache-stats.sh since "$cached" "test: the 1.13 build"
  db=$(mktemp -d)/fallback.db
  build-debian/app/cli/qklab-cli run '{}' --db "$db" --name fallback --set schedule.steps=12 \
    --set schedule.warmup_steps=2 --set probes.every=4 --set eval.every=0 >"$db.log" 2>&1 ||
    { cat "$db.log" >&2; exit 1; }
  shown=$(build-debian/app/cli/qklab-cli show fallback --db "$db")
  grep -q '"status": "finished"' <<<"$shown" ||
    { cat "$db.log" >&2; echo "test: the 1.13 build did not finish its run" >&2; exit 1; }
  echo "test: 1.13 build trains"
  rm -rf "$(dirname "$db")"
  phase "LibTorch 1.13 build"
fi
