#!/usr/bin/env bash
# Screenshots of every lesson callout, live and in replay, in presenter mode at 1024x768 and
# 1280x720, for docs/screenshots/lessons/ (issue 37): LessonRehearsal plays each shipped lesson
# by keyboard and saves the window at each callout.
#   tests/app/gui/shoot_rehearsal.sh [BUILD_DIR] [LESSON_ID...]     (default: build, every lesson)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
shift || true
out=$PWD/docs/screenshots/lessons
mkdir -p "$out"
ids=("$@")
if [ ${#ids[@]} -eq 0 ]; then
  for f in resources/lessons/*.json; do ids+=("$(basename "$f" .json)"); done
fi
for size in 1024x768 1280x720; do
  for id in "${ids[@]}"; do
    tmp=$(mktemp -d)
    echo "shoot_rehearsal: $id at $size"
    QT_QPA_PLATFORM=offscreen OMP_WAIT_POLICY=PASSIVE QKLAB_EXPERIMENTS_DIR=$PWD/experiments \
      XDG_CONFIG_HOME=$tmp/config XDG_DATA_HOME=$tmp/data QTEST_FUNCTION_TIMEOUT=1490000 \
      QKLAB_TEST_SCREEN=$size QKLAB_REHEARSAL_SHOTS=$out \
      "$build/tests/gui/lesson_rehearsal_test" "rehearse:$id" >"$tmp/log" 2>&1 ||
      { echo "shoot_rehearsal: $id at $size failed:" >&2; grep -A3 FAIL "$tmp/log" >&2 || true; }
    rm -rf "$tmp"
  done
done
