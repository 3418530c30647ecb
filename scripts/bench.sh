#!/usr/bin/env bash
# Side-by-side training speed: the C++ engine (bench_train) against the same model in PyTorch
# Python (tests/bench/peer_model.py, Debian's python3-torch: the same LibTorch 1.13), run
# alternately in one session so both see the same machine state. Prints a Markdown table of
# medians; docs/BENCHMARKS.md holds the published numbers.
#
# usage: scripts/bench.sh [ROUNDS_TINY=3] [ROUNDS_10M=2]      (needs: build/, python3-torch)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds_tiny=${1:-3}
rounds_10m=${2:-2}
threads=$(nproc)
bench=build/tests/bench/bench_train
peer="/usr/bin/python3 tests/bench/peer_model.py"
[ -x "$bench" ] || { echo "bench.sh: build first (scripts/build.sh)" >&2; exit 2; }
/usr/bin/python3 -c 'import torch' 2>/dev/null || { echo "bench.sh: needs python3-torch (apt-get install python3-torch)" >&2; exit 2; }
data=../shared/data/tinyshakespeare.txt
[ -f "$data" ] || data=""
cpp_data=(); py_data=()
if [ -n "$data" ]; then cpp_data=(--set "data.source=$data"); py_data=(--data "$data"); fi
# What the engine sets for itself with mallopt (see core/src/trainer.cpp), for the fair peer run.
heap_env="MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=536870912"
out=$(mktemp)
run() { echo "$1 $(eval "$2")" >>"$out"; }
for cfg in tiny 10m; do
  if [ $cfg = tiny ]; then n=$rounds_tiny steps=60 warm=10; else n=$rounds_10m steps=8 warm=3; fi
  for ((r = 0; r < n; r++)); do
    run "cpp_probes" "$bench --config $cfg --steps $steps --warmup $warm --probes-every 10 --threads $threads ${cpp_data[*]}"
    run "py_default" "$peer --config $cfg --steps $steps --warmup $warm --probes-every 10 --threads $threads ${py_data[*]}"
    run "cpp_noprobes" "$bench --config $cfg --steps $steps --warmup $warm --probes-every 0 --threads $threads ${cpp_data[*]}"
    run "py_heap" "env $heap_env $peer --config $cfg --steps $steps --warmup $warm --probes-every 10 --threads $threads ${py_data[*]}"
  done
done
/usr/bin/python3 - "$out" <<'PY'
import json, statistics, sys, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    tag, js = line.split(" ", 1)
    d = json.loads(js)
    rows[(d["config"], tag)].append(d)
def med(cfg, tag, key):
    v = [d[key] for d in rows.get((cfg, tag), [])]
    return statistics.median(v) if v else float("nan")
print("| config | params | C++ steps/s (probes every 10) | C++ no probes | probe overhead | Python peer steps/s | Python + same heap setting | C++ / Python | C++ / Python (same heap) | C++ model GFLOP/s | matmul GFLOP/s | MFU |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for cfg in ("tiny", "10m"):
    c, c0 = med(cfg, "cpp_probes", "steps_per_s"), med(cfg, "cpp_noprobes", "steps_per_s")
    p, ph = med(cfg, "py_default", "steps_per_s"), med(cfg, "py_heap", "steps_per_s")
    g, mm = med(cfg, "cpp_probes", "model_gflops"), med(cfg, "cpp_probes", "matmul_gflops")
    params = rows[(cfg, "cpp_probes")][0]["params"]
    print(f"| {cfg} | {params/1e6:.2f}M | {c:.2f} | {c0:.2f} | {100*(c0/c-1):.1f}% | {p:.2f} | {ph:.2f} | {c/p:.2f}x | {c/ph:.2f}x | {g:.1f} | {mm:.1f} | {100*g/mm:.0f}% |")
print(f"\nrounds: {len(rows[('tiny','cpp_probes')])} tiny, {len(rows[('10m','cpp_probes')])} 10m; median of alternating runs")
PY
rm -f "$out"
