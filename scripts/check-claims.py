#!/usr/bin/env python3
"""Re-run every numbered claim of the docs and lessons on seeds its range was not made from.

    scripts/check-claims.py [--fast] [--threads N] [--db FILE] [--only ID ...] [--run RUN]
                            [--markdown] [--numbers] [--root DIR] [--table FILE]

The claims live in one table, experiments/claims/claims.json (its "about" says what a row holds).
For each claim the checker

  1. finds the claim's exact text in its file (whitespace runs count as one space; in a JSON
     file, in its strings; a preset: its "why"): a claim whose text is gone fails;
  2. trains the claim's run once per seed (preset + "set" overrides + run.seed, + run.threads
     from --threads), cached by name in --db, so a second claim on the same run costs nothing
     and a re-run with the same --db trains nothing;
  3. reads the measure with `qklab-cli value` (the lessons' placeholder syntax:
     "logit_max_raw max", "val_loss at=99", "logit_max_raw first_above=100" ...), or
     "summary:KEY" from `qklab-cli show --json`, or "seconds" (the run's wall time);
     "minus" subtracts another run's measure on the same seed, "over" divides by it (a ratio:
     gated attention's sink against the ungated run's, seed by seed);
  4. checks the range [lo, hi] (null: open) on the seeds it was made from (the run's
     "made_from") and on seeds it was not (its "held_out", never one of made_from): every
     value must lie in it, and the range must reach past the made-from values' min and max by
     the margin (the table's "margin", or the claim's: that fraction of their spread), so that
     a range is not the min-max of the seeds it is checked on (the margin stops at the
     claim's "limits", what the measure cannot pass: 0 for an entropy, sqrt(d_head) for a
     QK-normed logit). A claim may name its own
     "made_from" and "held_out" (a range re-made after it failed on held-out seeds). A claim
     on named seeds ("seeds": "C = 30 ended lower on seed 1") is checked on those seeds only.
     A value that does not exist (a line never crossed) is out of range;
  5. refuses every claim number of the documents that is not a row (scripts/claim_numbers.py
     has the rule; --numbers runs this step alone, without training).

Prints one line per claim (a Markdown table with --markdown) and exits 1 naming each claim that
fails, 2 for a table it cannot use. --fast runs the claims marked "fast" on the first made-from
and the first held-out seed of their run (and their named seeds) and skips the margin, which
needs every made-from seed (CI: tests/CMakeLists.txt); without --fast, every claim on every seed.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import claim_numbers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Runner:
    """Trains each (run, seed) once into one database and reads measures from it."""

    def __init__(self, cli, db, runs, threads, reused_db, root=ROOT):
        self.cli, self.db, self.runs, self.threads = cli, db, runs, threads
        self.reused_db = reused_db  # --db given: runs an earlier call trained are reused
        self.root = root
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
            done = probe.returncode == 0 and json.loads(probe.stdout)["summary"]["status"]
            if done == "finished":
                self.seconds[name] = None  # trained by an earlier call with this --db
                return name
        spec = self.runs[run]
        cmd = ["run", os.path.join(self.root, "experiments", spec["preset"]), "--name", name,
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


def seeds_of(claim, runs, fast):
    """(made-from seeds, held-out seeds) a claim is read on: its own lists, else its run's; a
    claim on named seeds: (those, none)."""
    if "seeds" in claim:
        return claim["seeds"], []
    lists = claim if "made_from" in claim else runs[claim["run"]]
    if fast:
        return lists["made_from"][:1], lists["held_out"][:1]
    return lists["made_from"], lists["held_out"]


def prefetch_all(runner, claims, runs, fast):
    """One `value` call per (run, seed) for every measure the chosen claims read of it."""
    needs = {}
    for c in claims:
        other = other_of(c)
        reads = [(c["run"], c["measure"])] + ([(other["run"], other["measure"])] if other else [])
        made, held = seeds_of(c, runs, fast)
        for seed in made + held:
            for run, what in reads:
                needs.setdefault((run, seed), set()).add(what)
    for (run, seed), measures in needs.items():
        runner.prefetch(run, seed, measures)


def other_of(claim):
    """The other run's measure a claim subtracts ("minus") or divides by ("over"), or None."""
    return claim.get("minus") or claim.get("over")


def value_of(runner, claim, seed):
    v = runner.measure(claim["run"], seed, claim["measure"])
    other = other_of(claim)
    if other is None or v is None:
        return v
    w = runner.measure(other["run"], seed, other["measure"])
    if w is None:
        return None
    if "minus" in claim:
        return v - w
    return v / w if w != 0 else None  # a ratio to nothing does not exist


def in_range(v, bounds):
    lo, hi = bounds
    return v is not None and (lo is None or v >= lo) and (hi is None or v <= hi)


def number(v):
    if v is None:
        return "none"
    return "%.4g" % v if abs(v) < 1000 else "%.0f" % v


def margin_problem(claim, made, margin):
    """Why a range does not reach the margin past its made-from values, or None."""
    values = [v for _, v in made]
    if len(values) < 2 or None in values:
        return None  # a value that does not exist already fails the range
    lo, hi = claim["range"]
    reach = margin * (max(values) - min(values))
    need_lo, need_hi = min(values) - reach, max(values) + reach
    floor, ceiling = claim.get("limits", [None, None])  # what the measure cannot pass
    need_lo = need_lo if floor is None else max(need_lo, floor)
    need_hi = need_hi if ceiling is None else min(need_hi, ceiling)
    if (lo is None or lo <= need_lo + 1e-12) and (hi is None or hi >= need_hi - 1e-12):
        return None
    return "the range sits on its made-from seeds' edge: their min-max %.6g-%.6g with margin %g " \
           "needs [%s, %s]" % (min(values), max(values), margin,
                               "%.6g" % need_lo if lo is not None else "-",
                               "%.6g" % need_hi if hi is not None else "-")


def check(runner, claim, runs, table_margin, fast):
    """(holds, measured text, why) of one claim."""
    made_seeds, held_seeds = seeds_of(claim, runs, fast)
    made = [(s, value_of(runner, claim, s)) for s in made_seeds]
    held = [(s, value_of(runner, claim, s)) for s in held_seeds]
    why = ["seed %s gives %s" % (s, number(v)) for s, v in made
           if not in_range(v, claim["range"])]
    why += ["held-out seed %s gives %s" % (s, number(v)) for s, v in held
            if not in_range(v, claim["range"])]
    if not fast and "seeds" not in claim:
        problem = margin_problem(claim, made, claim.get("margin", table_margin))
        if problem:
            why.append(problem)
    measured = ("named seeds " if "seeds" in claim else "made from ") + ", ".join(
        "%s: %s" % (s, number(v)) for s, v in made)
    if held:
        measured += "; held out " + ", ".join("%s: %s" % (s, number(v)) for s, v in held)
    text = claim_numbers.read_text(os.path.join(runner.root, claim["file"]))
    if claim_numbers.squeeze(claim["text"]) not in text:
        why.append("its text is no longer in %s" % claim["file"])
    return not why, measured, "; ".join(why)


def seed_problems(what, lists):
    """Why a run's or a claim's made_from / held_out seeds cannot check a range."""
    made, held = lists.get("made_from") or [], lists.get("held_out") or []
    out = []
    if not made:
        out.append("%s: no \"made_from\" seeds" % what)
    if not held:
        out.append("%s: no \"held_out\" seeds: a range checked only on the seeds it was made "
                   "from cannot fail" % what)
    both = sorted(set(made) & set(held))
    if both:
        out.append("%s: seeds %s are both made_from and held_out" % (what, ", ".join(
            map(str, both))))
    return out


def table_problems(runs, claims):
    """Why the table cannot be used (a list of strings)."""
    out = []
    for name, run in runs.items():
        out += seed_problems("run " + name, run)
    for c in claims:
        if "made_from" in c or "held_out" in c:
            out += seed_problems("claim " + c["id"], c)
    ids = [c["id"] for c in claims]
    for c in claims:
        if "minus" in c and "over" in c:
            out.append("claim %s: \"minus\" and \"over\" both given" % c["id"])
        for ref in [c["run"]] + ([other_of(c)["run"]] if other_of(c) else []):
            if ref not in runs:
                out.append("claim %s: run %r is not in \"runs\"" % (c["id"], ref))
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        out.append("ids used twice: %s" % ", ".join(dup))
    return out


def load_table(path):
    with open(path, encoding="utf-8") as f:
        table = json.load(f)
    problems = table_problems(table["runs"], table["claims"])
    if problems:
        print("\n".join("%s: %s" % (path, p) for p in problems), file=sys.stderr)
        sys.exit(2)
    return table


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--cli", default=os.path.join(ROOT, "build/app/cli/qklab-cli"))
    ap.add_argument("--fast", action="store_true",
                    help="only the claims marked fast, on one made-from and one held-out seed")
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
    ap.add_argument("--numbers", action="store_true",
                    help="only refuse document numbers that are not rows; train nothing")
    ap.add_argument("--root", default=ROOT, help="the checkout whose documents are read")
    ap.add_argument("--table", help="the claims table (default: ROOT/experiments/claims/"
                                    "claims.json)")
    return ap.parse_args()


def print_results(results, markdown, table_margin):
    if markdown:
        print("| claim | where | run | measure | range | margin | measured (seed: value) "
              "| holds |")
        print("|---|---|---|---|---|---|---|---|")
    for c, holds, measured, why in results:
        other = other_of(c)
        measure = c["measure"] + (" %s %s's %s" % ("minus" if "minus" in c else "over",
                                                   other["run"], other["measure"])
                                  if other else "")
        bounds = "[%s, %s]" % tuple("-" if b is None else b for b in c["range"])
        margin = "-" if "seeds" in c else "%g" % c.get("margin", table_margin)
        if markdown:
            cells = [c["id"], c["file"], c["run"], measure, bounds, margin, measured]
            cells = [str(x).replace("|", "\\|") for x in cells]
            print("| %s | %s |" % (" | ".join(cells), "yes" if holds else "**no**"))
        else:
            print("%-4s %-34s %s in %s: %s" % ("ok" if holds else "FAIL", c["id"], measure,
                                              bounds, measured))


def check_documents(args, table):
    problems = claim_numbers.check_numbers(args.root, table["claims"],
                                           table.get("not_claims", []))
    for p in problems:
        print("number refused: %s" % p, file=sys.stderr)
    return problems


def main():
    sys.stdout.reconfigure(line_buffering=True)
    args = parse_args()
    table = load_table(args.table or os.path.join(args.root, "experiments", "claims",
                                                  "claims.json"))
    runs, claims, margin = table["runs"], table["claims"], table.get("margin", 0)
    if args.numbers:
        problems = check_documents(args, table)
        print("%d numbers refused" % len(problems), file=sys.stderr)
        return 1 if problems else 0
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
                        reused_db=args.db is not None, root=args.root)
        prefetch_all(runner, chosen, runs, args.fast)
        results = [(c,) + check(runner, c, runs, margin, args.fast) for c in chosen]
    print_results(results, args.markdown, margin)
    failed = [(c["id"], why) for c, holds, _, why in results if not holds]
    for cid, why in failed:
        print("claim fails: %s (%s)" % (cid, why), file=sys.stderr)
    print("%d of %d claims hold (threads %d%s)" % (len(results) - len(failed), len(results),
                                                  args.threads, ", fast" if args.fast else ""),
          file=sys.stderr)
    refused = [] if args.only or args.only_runs or args.fast else check_documents(args, table)
    return 1 if failed or refused else 0


if __name__ == "__main__":
    sys.exit(main())
