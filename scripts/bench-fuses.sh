#!/usr/bin/env bash
# What each newer fuse costs per training step (issue 41): the engine's default step against the
# same model with sigmaReparam, the output gate, Muon, QuacK, output centring (mu_centring and
# mu_loss) and a 4096-token BPE, in alternating rounds so that every arm sees the same machine
# state. Probes off (their cost is in docs/BENCHMARKS.md already); the tiny and 10m configs of
# bench_train. Prints a Markdown table of medians: steps/s and the slowdown against the default.
#
# usage: scripts/bench-fuses.sh [ROUNDS=3] [THREADS=all cores]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
threads=${2:-$(nproc)}
bench=build/tests/bench/bench_train
python=${QKLAB_VENV:-$HOME/.local/share/qklab/venv}/bin/python
[ -x "$bench" ] || { echo "bench-fuses.sh: build first (scripts/build.sh)" >&2; exit 2; }
command -v "$python" >/dev/null || python=python3
# name|overrides (space-separated --set values)
arms=(
  "default|"
  "sigma_reparam attention|attention.sigma_reparam=attention"
  "sigma_reparam all|attention.sigma_reparam=all"
  "gate headwise|attention.gate=headwise"
  "gate elementwise|attention.gate=elementwise"
  "muon|optim.kind=muon"
  "quack|optim.quack=true"
  "mu_centring|optim.output_centring=mu_centring"
  "mu_loss|optim.output_centring=mu_loss"
  "bpe 4096|data.tokenizer=bpe data.vocab_size=4096"
)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for cfg in tiny 10m; do
  if [ $cfg = tiny ]; then steps=40 warm=10; else steps=6 warm=3; fi
  for ((r = 0; r < rounds; r++)); do
    for arm in "${arms[@]}"; do
      name=${arm%%|*}
      sets=()
      for kv in ${arm#*|}; do sets+=(--set "$kv"); done
      json=$("$bench" --config $cfg --steps $steps --warmup $warm --threads "$threads" \
        --probes-every 0 "${sets[@]}")
      printf '%s\t%s\t%s\n' "$cfg" "$name" "$json" >>"$out"
    done
  done
done
"$python" - "$out" <<'PY'
import json, statistics, sys, collections
rows = collections.defaultdict(list)
order = []
for line in open(sys.argv[1]):
    cfg, name, js = line.rstrip("\n").split("\t", 2)
    rows[(cfg, name)].append(json.loads(js))
    if name not in order:
        order.append(name)
print("| arm | tiny steps/s | tiny vs default | 10m steps/s | 10m vs default |")
print("|---|---|---|---|---|")
med = lambda cfg, name: statistics.median(d["steps_per_s"] for d in rows[(cfg, name)])
for name in order:
    t, m = med("tiny", name), med("10m", name)
    t0, m0 = med("tiny", "default"), med("10m", "default")
    print(f"| {name} | {t:.2f} | {t0 / t:.2f}x | {m:.3f} | {m0 / m:.2f}x |")
d = rows[("tiny", "default")][0]
print(f"\nLibTorch {d['torch']}, {d['engine']}; {len(rows[('tiny', 'default')])} rounds, "
      "median of alternating runs; 'vs default' is the step time's ratio (1.10x = 10% slower)")
PY
