#!/usr/bin/env bash
# Learning-rate sensitivity sweep (Wortsman et al. 2023; domain brief section 7): train the
# preset at each LR of a log grid, with and without QK-norm, then print final loss per LR and
# each configuration's LR sensitivity = mean over the grid of
# min(final_loss(lr), loss_at_init) - best_final_loss (a diverged run counts as the initial loss).
#
# usage: scripts/lr_sweep.sh [PRESET] [DB] [LRS...]
#   defaults: experiments/lr_sensitivity_point.json, lr-sweep.db, 3e-4 1e-3 3e-3 1e-2 3e-2 1e-1 3e-1
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-experiments/lr_sensitivity_point.json}
db=${2:-lr-sweep.db}
shift $(( $# > 2 ? 2 : $# )) || true
lrs=("$@")
[ ${#lrs[@]} -gt 0 ] || lrs=(3e-4 1e-3 3e-3 1e-2 3e-2 1e-1 3e-1)
cli=build/app/cli/qklab-cli
[ -x $cli ] || { echo "lr_sweep.sh: build first (scripts/build.sh)" >&2; exit 2; }
tag=sweep-$(date +%s)
for qk in none rms; do
  for lr in "${lrs[@]}"; do
    echo "lr_sweep: qk_norm=$qk lr=$lr" >&2
    $cli run "$preset" --db "$db" --name "$tag:$qk:$lr" --set optim.lr=$lr --set attention.qk_norm=$qk \
      >/dev/null 2>>"$db.log" || { echo "lr_sweep: run failed, see $db.log" >&2; exit 1; }
  done
done
$cli list --json --db "$db" | python3 -c '
import json, math, sys
tag = sys.argv[1]
runs = [r for r in json.load(sys.stdin) if r["name"].startswith(tag + ":")]
init = math.log(256)  # loss of a uniform byte predictor: the loss at init
by = {}
for r in runs:
    _, qk, lr = r["name"].rsplit(":", 2)
    loss = r["final_loss"] if r["status"] == "finished" and isinstance(r["final_loss"], float) else init
    ml = r["max_logit_raw"] if r["max_logit_raw"] is not None else float("nan")
    by.setdefault(qk, {})[float(lr)] = (min(loss, init), r["status"], ml)
lrs = sorted({lr for d in by.values() for lr in d})
print("| LR | " + " | ".join(f"{qk}: final loss (max logit)" for qk in by) + " |")
print("|---|" + "---|" * len(by))
for lr in lrs:
    cells = []
    for qk in by:
        loss, status, ml = by[qk][lr]
        cells.append(f"{loss:.3f} ({ml:.3g})" + ("" if status == "finished" else f" {status}"))
    print(f"| {lr:g} | " + " | ".join(cells) + " |")
for qk, d in by.items():
    best = min(v[0] for v in d.values())
    sens = sum(v[0] - best for v in d.values()) / len(d)
    print(f"LR sensitivity, qk_norm={qk}: {sens:.3f}")
' "$tag"
