#!/usr/bin/env python3
"""Re-run every numbered claim of the docs and lessons and check it on every seed.

    scripts/check-claims.py [--fast] [--threads N] [--db FILE] [--only ID ...] [--run RUN]
                            [--markdown]

The claims live in one table, experiments/claims/claims.json (its "about" says what a row holds).
For each claim the checker

  1. finds the claim's exact text in its file (whitespace runs count as one space; in a JSON
     file, in its strings): a claim whose text is gone fails, so docs and table cannot drift;
  2. trains the claim's run once per seed (preset + "set" overrides + run.seed, + run.threads
     from --threads), cached by name in --db, so a second claim on the same run costs nothing
     and a re-run with the same --db trains nothing;
  3. reads the measure with `qklab-cli value` (the lessons' placeholder syntax:
     "logit_max_raw max", "val_loss at=99", "logit_max_raw first_above=100" ...), or
     "summary:KEY" from `qklab-cli show --json`, or "seconds" (the run's wall time);
     "minus" subtracts another run's measure on the same seed;
  4. checks that every seed's value lies in "range" [lo, hi] (null: open). A value that does
     not exist (a line never crossed, a step never probed) is out of range.

Prints one line per claim (a Markdown table with --markdown) and exits 1 naming each claim out
of range. --fast runs the claims marked "fast" (CI: tests/CMakeLists.txt, threads 1 and 2).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE = os.path.join(ROOT, "experiments", "claims", "claims.json")


def strings_of(node):
    """Every string in a JSON document, in order."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for v in node.values():
            yield from strings_of(v)
    elif isinstance(node, list):
        for v in node:
            yield from strings_of(v)


def squeeze(text):
    return re.sub(r"\s+", " ", text).strip()


def file_text(path, cache={}):
    if path not in cache:
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            raw = f.read()
        cache[path] = squeeze("\n".join(strings_of(json.loads(raw))) if path.endswith(".json")
                              else raw)
    return cache[path]


class Runner:
    """Trains each (run, seed) once into one database and reads measures from it."""

    def __init__(self, cli, db, runs, threads, reused_db):
        self.cli, self.db, self.runs, self.threads = cli, db, runs, threads
        self.reused_db = reused_db  # --db given: runs an earlier call trained are reused
        self.seconds, self.values, self.summaries = {}, {}, {}

    def name(self, run, seed):
        return "%s-s%d-t%d" % (run, seed, self.threads)

    def cli_out(self, *args):
        out = subprocess.run([self.cli] + list(args) + ["--db", self.db], capture_output=True,
                             text=True)
        if out.returncode != 0:
            raise RuntimeError("qklab-cli %s: exit %d: %s" % (" ".join(args), out.returncode,
                                                              out.stderr.strip()))
        return out.stdout

    def ensure(self, run, seed):
        name = self.name(run, seed)
        if name in self.seconds:
            return name
        if self.reused_db:
            probe = subprocess.run([self.cli, "show", name, "--json", "--db", self.db],
                                   capture_output=True, text=True)
            if probe.returncode == 0 and json.loads(probe.stdout)["summary"]["status"] == "finished":
                self.seconds[name] = None  # trained by an earlier call with this --db
                return name
        spec = self.runs[run]
        cmd = ["run", os.path.join(ROOT, "experiments", spec["preset"]), "--name", name,
               "--set", "run.seed=%d" % seed, "--set", "run.threads=%d" % self.threads]
        for key, value in spec.get("set", {}).items():
            cmd += ["--set", "%s=%s" % (key, json.dumps(value) if not isinstance(value, str)
                                        else value)]
        t0 = time.time()
        self.cli_out(*cmd)
        self.seconds[name] = time.time() - t0
        print("  trained %s in %.0f s" % (name, self.seconds[name]), file=sys.stderr)
        return name

    def prefetch(self, run, seed, measures):
        """Reads every value expression a run's claims need with one `value` call: each call
        starts a process that loads LibTorch, and one call per claim and seed made the fast
        claims spend a third of their time starting processes."""
        name = self.ensure(run, seed)
        wanted = sorted({m for m in measures if m != "seconds" and not m.startswith("summary:")
                         and (name, m) not in self.values})
        if wanted:
            read = json.loads(self.cli_out("value", name, *wanted, "--json"))
            for m in wanted:
                self.values[(name, m)] = read[m]

    def measure(self, run, seed, what):
        name = self.ensure(run, seed)
        key = (name, what)
        if key not in self.values:
            if what == "seconds":
                self.values[key] = self.seconds[name]
            elif what.startswith("summary:"):
                if name not in self.summaries:
                    self.summaries[name] = json.loads(self.cli_out("show", name, "--json"))
                self.values[key] = self.summaries[name]["summary"][what[len("summary:"):]]
            else:
                self.values[key] = json.loads(self.cli_out("value", name, what, "--json"))[what]
        return self.values[key]


def prefetch_all(runner, claims, runs):
    """One `value` call per (run, seed) for every measure the chosen claims read of it."""
    needs = {}
    for c in claims:
        reads = [(c["run"], c["measure"])] + ([(c["minus"]["run"], c["minus"]["measure"])]
                                              if "minus" in c else [])
        for seed in seeds_of(c, runs):
            for run, what in reads:
                needs.setdefault((run, seed), set()).add(what)
    for (run, seed), measures in needs.items():
        runner.prefetch(run, seed, measures)


def seeds_of(claim, runs):
    return claim.get("seeds", runs[claim["run"]]["seeds"])


def value_of(runner, claim, seed):
    v = runner.measure(claim["run"], seed, claim["measure"])
    minus = claim.get("minus")
    if minus is None or v is None:
        return v
    w = runner.measure(minus["run"], seed, minus["measure"])
    return None if w is None else v - w


def in_range(v, bounds):
    lo, hi = bounds
    return v is not None and (lo is None or v >= lo) and (hi is None or v <= hi)


def number(v):
    if v is None:
        return "none"
    return "%.4g" % v if abs(v) < 1000 else "%.0f" % v


def check(runner, claim, runs):
    """(holds, measured text, why) of one claim."""
    values = [(seed, value_of(runner, claim, seed)) for seed in seeds_of(claim, runs)]
    bad = [(s, v) for s, v in values if not in_range(v, claim["range"])]
    measured = ", ".join("%s: %s" % (s, number(v)) for s, v in values)
    why = ["seed %s gives %s" % (s, number(v)) for s, v in bad]
    if squeeze(claim["text"]) not in file_text(claim["file"]):
        why.append("its text is no longer in %s" % claim["file"])
    return not why, measured, "; ".join(why)


def load_table(path):
    with open(path, encoding="utf-8") as f:
        table = json.load(f)
    runs, claims = table["runs"], table["claims"]
    ids = [c["id"] for c in claims]
    for c in claims:
        for ref in [c["run"]] + ([c["minus"]["run"]] if "minus" in c else []):
            if ref not in runs:
                sys.exit("claims.json: claim %s: run %r is not in \"runs\"" % (c["id"], ref))
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        sys.exit("claims.json: ids used twice: %s" % ", ".join(dup))
    return runs, claims


def main():
    sys.stdout.reconfigure(line_buffering=True)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--cli", default=os.path.join(ROOT, "build/app/cli/qklab-cli"))
    ap.add_argument("--fast", action="store_true", help="only the claims marked fast (CI)")
    ap.add_argument("--threads", type=int, default=1, help="run.threads of every run")
    ap.add_argument("--db", help="train into / reuse this database (default: a temporary one)")
    ap.add_argument("--only", nargs="*", help="claim ids to check")
    ap.add_argument("--run", dest="only_runs", action="append",
                    help="only the claims on this run of the table (repeatable; ctest runs "
                         "the fast claims as one test per run, side by side)")
    ap.add_argument("--markdown", action="store_true", help="a Markdown table")
    ap.add_argument("--list-runs", action="store_true",
                    help="print the runs the chosen claims are on, one a line, and exit "
                         "(tests/CMakeLists.txt makes one test of each)")
    ap.add_argument("--table", default=TABLE, help="the claims table (default: %(default)s)")
    args = ap.parse_args()
    runs, claims = load_table(args.table)
    chosen = [c for c in claims if (not args.fast or c.get("fast"))
              and (not args.only or c["id"] in args.only)
              and (not args.only_runs or c["run"] in args.only_runs)]
    if args.list_runs:
        print("\n".join(sorted({c["run"] for c in chosen})))
        return 0
    if args.only_runs and not chosen:
        sys.exit("check-claims: no claim on run %s" % ", ".join(args.only_runs))
    with tempfile.TemporaryDirectory() as tmp:
        runner = Runner(args.cli, args.db or os.path.join(tmp, "claims.db"), runs, args.threads,
                        reused_db=args.db is not None)
        prefetch_all(runner, chosen, runs)
        results = [(c,) + check(runner, c, runs) for c in chosen]
    if args.markdown:
        print("| claim | where | run | measure | range | measured (seed: value) | holds |")
        print("|---|---|---|---|---|---|---|")
    for c, holds, measured, why in results:
        measure = c["measure"] + (" minus %s's %s" % (c["minus"]["run"], c["minus"]["measure"])
                                  if "minus" in c else "")
        bounds = "[%s, %s]" % tuple("-" if b is None else b for b in c["range"])
        if args.markdown:
            cells = [c["id"], c["file"], c["run"], measure, bounds, measured]
            cells = [str(x).replace("|", "\\|") for x in cells]
            print("| %s | %s |" % (" | ".join(cells), "yes" if holds else "**no**"))
        else:
            print("%-4s %-34s %s in %s: %s" % ("ok" if holds else "FAIL", c["id"], measure,
                                              bounds, measured))
    failed = [(c["id"], why) for c, holds, _, why in results if not holds]
    for cid, why in failed:
        print("claim fails: %s (%s)" % (cid, why), file=sys.stderr)
    print("%d of %d claims hold (threads %d)" % (len(results) - len(failed), len(results),
                                                args.threads), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
