#!/usr/bin/env bash
# gui_benchmark.sh — the responsiveness numbers in docs/gui-benchmarks.md.
#
# Writes a synthetic 100k-step run (make_big_run), then starts the app with that run opened
# while a second (tiny, fast) run trains, and records GUI-thread stalls for 20 s per view.
#   tests/app/gui/gui_benchmark.sh [BUILD_DIR] [REPEATS]
set -euo pipefail
build=${1:-build-gui}
repeats=${2:-3}
out=$(mktemp -d)
"$build/tests/gui/make_big_run" "$out/big.db" 100000
tiny=(--set model.d_model=32 --set model.n_layers=1 --set model.n_heads=2 --set model.seq_len=32
      --set data.batch_size=4 --set schedule.steps=100000 --set run.threads=1)
echo "cores: $(nproc), load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for tab in live histograms; do
  for i in $(seq "$repeats"); do
    QT_QPA_PLATFORM=${QT_QPA_PLATFORM:-offscreen} XDG_CONFIG_HOME="$out/cfg" \
      "$build/app/gui/qklab" --preset experiments/default.json "${tiny[@]}" --db "$out/big.db" \
      --autostart --open-run 1 --tab "$tab" --quit-after-ms 20000 \
      --latency-report "$out/lat-$tab-$i.json" 2>/dev/null | grep -E "^opened" | sed "s/^/[$tab $i] /"
    echo "[$tab $i] $(cat "$out/lat-$tab-$i.json")"
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
rm -rf "$out"
