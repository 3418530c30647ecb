#!/usr/bin/env bash
# Side-by-side CPU training speed: the C++ engine (bench_train) against the same model in
# PyTorch Python (tests/bench/peer_model.py on the venv's torch, the LibTorch the engine
# links), run alternately in one session so that both see the same machine state. Also the
# fused attention kernel against the explicit path, and start-up time and memory of
# qklab-cli. Prints Markdown tables of medians; docs/BENCHMARKS.md holds the published numbers.
#
# usage: scripts/bench.sh [ROUNDS_TINY=3] [ROUNDS_10M=2]
#   BASELINE_BENCH=path/to/bench_train   adds a column for another build of the engine (e.g.
#                                        one against Debian's LibTorch 1.13)
#   BASELINE_CLI=path/to/qklab-cli       adds that build to the start-up table
set -euo pipefail
cd "$(dirname "$0")/.."
rounds_tiny=${1:-3}
rounds_10m=${2:-2}
threads=$(nproc)
bench=build/tests/bench/bench_train
cli=build/app/cli/qklab-cli
python=${QKLAB_VENV:-$HOME/.local/share/qklab/venv}/bin/python
peer="$python tests/bench/peer_model.py"
[ -x "$bench" ] || { echo "bench.sh: build first (scripts/build.sh)" >&2; exit 2; }
"$python" -c 'import torch' 2>/dev/null || { echo "bench.sh: needs the torch venv (scripts/setup.sh)" >&2; exit 2; }
data=../shared/data/tinyshakespeare.txt
[ -f "$data" ] || data=""
cpp_data=(); py_data=()
if [ -n "$data" ]; then cpp_data=(--set "data.source=$data"); py_data=(--data "$data"); fi
# What the engine sets for itself with mallopt (see core/engine/src/trainer.cpp), for the fair peer run.
heap_env="MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=536870912"
out=$(mktemp)
run() { echo "$1 $(eval "$2")" >>"$out"; }
for cfg in tiny 10m; do
  if [ $cfg = tiny ]; then n=$rounds_tiny steps=60 warm=10; else n=$rounds_10m steps=8 warm=3; fi
  common="--config $cfg --steps $steps --warmup $warm --threads $threads"
  for ((r = 0; r < n; r++)); do
    run "cpp_probes" "$bench $common --probes-every 10 ${cpp_data[*]}"
    run "py_default" "$peer $common --probes-every 10 ${py_data[*]}"
    run "cpp_noprobes" "$bench $common --probes-every 0 ${cpp_data[*]}"
    run "cpp_explicit" "$bench $common --probes-every 0 --set run.fused_attention=false ${cpp_data[*]}"
    run "py_heap" "env $heap_env $peer $common --probes-every 10 ${py_data[*]}"
    if [ -n "${BASELINE_BENCH:-}" ]; then
      run "cpp_baseline" "$BASELINE_BENCH $common --probes-every 10 ${cpp_data[*]}"
    fi
  done
done
"$python" - "$out" <<'PY'
import json, statistics, sys, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    tag, js = line.split(" ", 1)
    d = json.loads(js)
    rows[(d["config"], tag)].append(d)
def med(cfg, tag, key):
    v = [d[key] for d in rows.get((cfg, tag), [])]
    return statistics.median(v) if v else float("nan")
base = any(t == "cpp_baseline" for _, t in rows)
print("| config | params | C++ steps/s (probes every 10) | C++ no probes | probe overhead "
      "| C++ no probes, explicit attention | fused / explicit | Python peer steps/s "
      "| Python + same heap setting | C++ / Python | C++ / Python (same heap) "
      + ("| baseline C++ (probes every 10) | 2.x / baseline " if base else "")
      + "| C++ model GFLOP/s | matmul GFLOP/s | MFU |")
print("|---" * (14 + 2 * base) + "|")
for cfg in ("tiny", "10m"):
    c, c0 = med(cfg, "cpp_probes", "steps_per_s"), med(cfg, "cpp_noprobes", "steps_per_s")
    ce = med(cfg, "cpp_explicit", "steps_per_s")
    p, ph = med(cfg, "py_default", "steps_per_s"), med(cfg, "py_heap", "steps_per_s")
    g, mm = med(cfg, "cpp_probes", "model_gflops"), med(cfg, "cpp_probes", "matmul_gflops")
    params = rows[(cfg, "cpp_probes")][0]["params"]
    extra = ""
    if base:
        b = med(cfg, "cpp_baseline", "steps_per_s")
        extra = f" {b:.2f} | {c / b:.2f}x |"
    print(f"| {cfg} | {params/1e6:.2f}M | {c:.2f} | {c0:.2f} | {100*(c0/c-1):.1f}% | {ce:.2f} | {c0/ce:.2f}x "
          f"| {p:.2f} | {ph:.2f} | {c/p:.2f}x | {c/ph:.2f}x |{extra} {g:.1f} | {mm:.1f} | {100*g/mm:.0f}% |")
torch = rows[("tiny", "cpp_probes")][0]["torch"]
print(f"\nLibTorch {torch}; rounds: {len(rows[('tiny','cpp_probes')])} tiny, "
      f"{len(rows[('10m','cpp_probes')])} 10m; median of alternating runs")
PY
rm -f "$out"

# Start-up: process start to the end of a one-step run (model build, first step, store),
# wall time and peak resident memory, 5 alternating runs each.
startup() {
  local label=$1 bin=$2 tmp
  tmp=$(mktemp -d)
  /usr/bin/time -f "$label %e %M" "$bin" run '{}' --db "$tmp/s.db" --name s \
    --set schedule.steps=1 --set schedule.warmup_steps=0 --set eval.every=0 >/dev/null 2>>"$tmp/t"
  tail -1 "$tmp/t"
  rm -rf "$tmp"
}
times=$(mktemp)
for ((r = 0; r < 5; r++)); do
  startup "this_build" "$cli" >>"$times"
  if [ -n "${BASELINE_CLI:-}" ]; then startup "baseline" "$BASELINE_CLI" >>"$times"; fi
done
echo
echo "| build | start-up + 1 step, wall s (median of 5) | peak RSS MB |"
echo "|---|---|---|"
for label in this_build baseline; do
  grep "^$label " "$times" | sort -k2 -n | awk -v l=$label '{ t[NR] = $2; m[NR] = $3 }
    END { if (NR) printf "| %s | %.2f | %.0f |\n", l, t[int((NR + 1) / 2)], m[int((NR + 1) / 2)] / 1024 }'
done
rm -f "$times"
