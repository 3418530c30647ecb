#!/usr/bin/env bash
# Screenshots of the lessons' key moments for docs/screenshots/lessons/ (the lessons issue):
# each lesson of resources/lessons/ opens in presenter mode on a 1920x1080 virtual screen at
# its first step with a pause condition, trains live until that condition's callout shows,
# and the window is saved as docs/screenshots/lessons/NN-name-WxH.png (a fresh database each).
#   tests/app/gui/shoot_lessons.sh [BUILD_DIR] [LESSON_ID...]     (default: build, every lesson)
# SIZE=1280x720 or SIZE=1024x768 checks a projector size; every file is named NN-name-WxH.png.
# Needs xvfb-run.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
shift || true
app=$build/app/gui/qklab
size=${SIZE:-1920x1080}
suffix="-$size"
out=docs/screenshots/lessons
mkdir -p "$out"
ids=("$@")
if [ ${#ids[@]} -eq 0 ]; then
  for f in resources/lessons/*.json; do ids+=("$(basename "$f" .json)"); done
fi
for id in "${ids[@]}"; do
  # The first step that waits for something: the lesson's key moment.
  step=$(python3 -c "import json,sys; s=json.load(open(sys.argv[1]))['steps']; \
print(next((i+1 for i,x in enumerate(s) if x.get('pause')), 1))" "resources/lessons/$id.json")
  tmp=$(mktemp -d)
  echo "shoot_lessons: $id, step $step"
  XDG_CONFIG_HOME=$tmp/config XDG_DATA_HOME=$tmp/data xvfb-run -a -s "-screen 0 ${size}x24" \
    "$app" --db "$tmp/runs.db" --lesson "$id" --lesson-step "$step" --presenter \
    --screenshot "$out/$id$suffix.png" --shot-on-callout --quit-after-ms 300000 ||
    echo "shoot_lessons: $id: the app exited with $?" >&2
  rm -rf "$tmp"
done
