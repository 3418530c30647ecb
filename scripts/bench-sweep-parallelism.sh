#!/usr/bin/env bash
# Runs per hour of a sweep on this machine: N worker processes x T threads each, for the
# layouts given (default: 2x1 and 1x2, the two ways to use 2 cores). Each layout runs the same
# grid (experiments/default.json, SWEEP_STEPS steps, POINTS seeds) into its own database;
# layouts alternate over REPS rounds so a load change hits both alike.
#
# usage: scripts/bench-sweep-parallelism.sh [--points N] [--steps S] [--reps R] [JOBSxTHREADS...]
set -euo pipefail
cd "$(dirname "$0")/.."
points=6 steps=300 reps=2 layouts=()
while [ $# -gt 0 ]; do
  case $1 in
    --points) points=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    *x*) layouts+=("$1"); shift ;;
    *) echo "usage: $0 [--points N] [--steps S] [--reps R] [JOBSxTHREADS...]" >&2; exit 2 ;;
  esac
done
[ ${#layouts[@]} -gt 0 ] || layouts=(2x1 1x2)
cli=build/app/cli/qklab-cli
[ -x $cli ] || { echo "build first (scripts/build.sh)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
seeds=$(seq -s, 1 "$points")
cat >"$tmp/sweep.json" <<JSON
{"why": "bench-sweep-parallelism: the default model, $points seeds of $steps steps",
 "base": "$PWD/experiments/default.json", "axes": {"run.seed": [$seeds]},
 "set": {"schedule.steps": $steps, "eval.every": 0}}
JSON
echo "| layout | round | points | wall s | runs/hour |"
echo "|---|---|---|---|---|"
for r in $(seq 1 "$reps"); do
  for l in "${layouts[@]}"; do
    jobs=${l%x*} threads=${l#*x}
    db="$tmp/$l-$r.db"
    t0=$(date +%s.%N)
    $cli sweep "$tmp/sweep.json" --db "$db" --jobs "$jobs" --threads-per-run "$threads" \
      >/dev/null 2>"$tmp/log" || { cat "$tmp/log" >&2; exit 1; }
    t1=$(date +%s.%N)
    python3 -c "import sys; w=$t1-$t0; print(f'| {sys.argv[1]} processes x threads | $r | $points | {w:.1f} | {3600*$points/w:.0f} |')" "$l"
  done
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
