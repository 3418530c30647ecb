#!/usr/bin/env bash
# What exact probe percentiles cost: bench_train with probes.exact_percentiles off (kthvalue
# on an evenly strided sample of at most 32,768 values per row) and on (torch::topk on every
# value), alternating in one session so that both see the same machine state, on the tiny
# (default) and 10M configs at probes every 10 and every 1. Prints a Markdown table of
# medians for docs/BENCHMARKS.md.
#
# usage: scripts/bench-percentiles.sh [ROUNDS=3] [THREADS=nproc]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
threads=${2:-$(nproc)}
bench=build/tests/bench/bench_train
[ -x "$bench" ] || { echo "bench-percentiles.sh: build first (scripts/build.sh)" >&2; exit 2; }
out=$(mktemp)
for ((r = 0; r < rounds; r++)); do
  for cfg in tiny 10m; do
    if [ $cfg = tiny ]; then steps=60 warm=10; else steps=6 warm=2; fi
    for every in 10 1; do
      for exact in false true; do
        echo "$cfg $every $exact $("$bench" --config $cfg --steps $steps --warmup $warm \
          --threads "$threads" --probes-every $every --set probes.exact_percentiles=$exact)" >>"$out"
      done
    done
  done
done
python3 - "$out" <<'PY'
import json, statistics, sys, collections
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    cfg, every, exact, js = line.split(" ", 3)
    runs[(cfg, int(every), exact)].append(json.loads(js)["steps_per_s"])
print("| config | probes every | sampled steps/s | exact steps/s | exact costs | rounds |")
print("|---|---|---|---|---|---|")
for cfg in ("tiny", "10m"):
    for every in (10, 1):
        s, e = runs[(cfg, every, "false")], runs[(cfg, every, "true")]
        ms, me = statistics.median(s), statistics.median(e)
        print("| %s | %d | %.2f (%s) | %.2f (%s) | %+.1f%% | %d |" % (
            cfg, every, ms, ", ".join("%.2f" % v for v in s), me,
            ", ".join("%.2f" % v for v in e), 100 * (ms / me - 1), len(s)))
PY
rm -f "$out"
