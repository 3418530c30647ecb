#!/usr/bin/env python3
"""Error of the sampled p99/p90 probes against exact ones (docs/BENCHMARKS.md).

    scripts/percentile-error.py [--cli build/app/cli/qklab-cli] [--preset P] [--set k=v ...]

Trains the preset twice with the same seed, probes.exact_percentiles off and on. Probes do
not touch the model or the data order, so both runs see the same logits, and every
percentile column can be compared probe by probe (the layer rows the plots draw). Prints the
relative error (median, p95, max) of each percentile column and the wall time of both runs.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLUMNS = ["logit_p99_raw", "q_norm_p90", "k_norm_p90", "q_raw_norm_p90", "k_raw_norm_p90"]


def run(cli, db, preset, name, sets):
    cmd = [cli, "run", preset, "--db", db, "--name", name]
    for s in sets:
        cmd += ["--set", s]
    t0 = time.time()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seconds = time.time() - t0
    out = subprocess.run([cli, "export", name, "--db", db, "--format", "json"],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout), seconds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default=os.path.join(ROOT, "build/app/cli/qklab-cli"))
    ap.add_argument("--preset", default=os.path.join(ROOT, "experiments/default.json"))
    ap.add_argument("--set", dest="sets", action="append", default=[])
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "p.db")
        sampled, ts = run(a.cli, db, a.preset, "sampled", a.sets + ["probes.exact_percentiles=false"])
        exact, te = run(a.cli, db, a.preset, "exact", a.sets + ["probes.exact_percentiles=true"])
    key = lambda p: (p["step"], p["layer"], p["head"])
    exact_rows = {key(p): p for p in exact["probes"]}
    print("| column | rows | median rel. error | p95 | max |")
    print("|---|---|---|---|---|")
    for c in COLUMNS:
        errs = []
        for p in sampled["probes"]:
            ref = exact_rows[key(p)][c]
            if ref:
                errs.append(abs(p[c] - ref) / abs(ref))
        errs.sort()
        print("| %s | %d | %.2f%% | %.2f%% | %.2f%% |" % (
            c, len(errs), 100 * statistics.median(errs), 100 * errs[int(0.95 * (len(errs) - 1))],
            100 * errs[-1]))
    print("\nwall time: sampled %.1f s, exact %.1f s" % (ts, te))
    return 0


if __name__ == "__main__":
    sys.exit(main())
