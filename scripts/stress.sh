#!/usr/bin/env bash
# Runs a command on a machine made busy: LOAD CPU hogs per core (default 3, so 6 busy loops on
# 2 cores), like `stress --cpu`, stopped when the command ends, however it ends. The test
# suite must pass like this: no test may fail because the machine is slow (docs/TESTING.md).
#
#   scripts/stress.sh ctest --test-dir build -j2          # the whole suite at 3x the cores
#   QKLAB_STRESS_LOAD=1 scripts/stress.sh CMD ARGS...     # one hog per core
#
# The hogs run at the command's own priority (no nice), so they take their full share.
set -euo pipefail
load=${QKLAB_STRESS_LOAD:-3}
if ! [[ $load =~ ^[1-9][0-9]?$ ]]; then
  echo "stress: QKLAB_STRESS_LOAD must be 1-99 hogs per core, not '$load'" >&2
  exit 2
fi
if [ $# -eq 0 ]; then
  echo "usage: scripts/stress.sh COMMAND [ARGS...]" >&2
  exit 2
fi
cores=$(nproc 2>/dev/null || echo 2)
hogs=()
stop_hogs() {
  if [ ${#hogs[@]} -gt 0 ]; then kill "${hogs[@]}" 2>/dev/null || true; fi
  wait 2>/dev/null || true
}
trap stop_hogs EXIT
trap 'exit 130' INT TERM
for ((i = 0; i < load * cores; i++)); do
  # A busy loop in its own shell: no output, no memory, one core's worth of demand each.
  bash -c 'while :; do :; done' &
  hogs+=($!)
done
echo "stress: $((load * cores)) CPU hogs on $cores cores while running: $*" >&2
start=$(date +%s)
status=0
"$@" || status=$?
echo "stress: '$1' exited $status after $(($(date +%s) - start)) s under load" >&2
exit "$status"
