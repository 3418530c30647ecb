#!/usr/bin/env python3
"""scripts/check-claims.py on small crafted tables and documents, with a fake qklab-cli that
"trains" instantly and answers each (preset, seed, measure) from a table the test writes.

    python3 tests/claims/check_claims_test.py        (ctest: claims_checker_test)

Issue 36: a range must be checked on seeds it was not made from (held out), with the margin
the table states, and a number in the documents that is not a row of the table is refused.
"""
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECKER = os.path.join(ROOT, "scripts", "check-claims.py")
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import claim_numbers  # noqa: E402

# A stand-in for qklab-cli: `run` stores the run's preset and seed under its name in a state
# file beside --db; `value` and `show` answer from FAKE_VALUES[preset][seed][measure].
FAKE_CLI = textwrap.dedent("""\
    #!/usr/bin/env python3
    import json, os, sys
    args = sys.argv[1:]
    db = args[args.index("--db") + 1]
    state_path = db + ".fake"
    state = json.load(open(state_path)) if os.path.exists(state_path) else {}
    values = json.load(open(os.environ["FAKE_VALUES"]))
    if args[0] == "run":
        name = args[args.index("--name") + 1]
        seed = [a for a in args if a.startswith("run.seed=")][0].split("=")[1]
        state[name] = [os.path.basename(args[1]), seed]
        json.dump(state, open(state_path, "w"))
    elif args[0] == "show":
        if args[1] not in state:
            sys.exit(2)
        print(json.dumps({"summary": {"status": "finished"}}))
    elif args[0] == "value":
        preset, seed = state[args[1]]
        print(json.dumps({m: values[preset][seed][m] for m in args[2:args.index("--json")]}))
    """)

DOC = "docs/EXPERIMENTS.md"


class Lab:
    """A checkout in a temporary directory: documents, one preset, a claims table, fake CLI."""

    def __init__(self, tmp, table, docs, values):
        self.tmp = tmp
        os.makedirs(os.path.join(tmp, "docs"))
        os.makedirs(os.path.join(tmp, "experiments", "claims"))
        with open(os.path.join(tmp, "experiments", "p.json"), "w") as f:
            json.dump({"why": "A preset for the test."}, f)
        for path, text in docs.items():
            with open(os.path.join(tmp, path), "w") as f:
                f.write(text)
        self.table = os.path.join(tmp, "experiments", "claims", "claims.json")
        with open(self.table, "w") as f:
            json.dump(table, f)
        self.cli = os.path.join(tmp, "fake-cli")
        with open(self.cli, "w") as f:
            f.write(FAKE_CLI)
        os.chmod(self.cli, 0o755)
        self.values = os.path.join(tmp, "values.json")
        with open(self.values, "w") as f:
            json.dump({"p.json": {str(s): {"m": v} for s, v in values.items()}}, f)

    def check(self, *extra):
        env = dict(os.environ, FAKE_VALUES=self.values)
        out = subprocess.run([sys.executable, CHECKER, "--root", self.tmp, "--table", self.table,
                              "--cli", self.cli] + list(extra), capture_output=True, text=True,
                             env=env)
        return out.returncode, out.stdout + out.stderr


def table(made_from, held_out, rng, margin=0.5, text="loss 1.0-2.0", **claim):
    run = {"preset": "p.json", "made_from": made_from}
    if held_out is not None:
        run["held_out"] = held_out
    row = {"id": "c1", "file": DOC, "text": text, "run": "r", "measure": "m", "range": rng}
    row.update(claim)
    return {"about": "test", "margin": margin, "runs": {"r": run}, "claims": [row],
            "not_claims": []}


def load_checker():
    spec = importlib.util.spec_from_file_location("check_claims", CHECKER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class FakeRunner:
    """check()'s runner without training: every measure of seed s is values[s]."""

    def __init__(self, root, values):
        self.root, self.values, self.seeds_read = root, values, []

    def measure(self, run, seed, what):
        self.seeds_read.append(seed)
        return self.values[seed]


class HeldOutSeeds(unittest.TestCase):
    """check() in this process on a one-claim table; the first and the last test run the
    checker as a process with the fake qklab-cli."""

    checker = load_checker()

    def check(self, tbl, values, doc="The loss 1.0-2.0 here.\n", fast=False):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        os.makedirs(os.path.join(tmp.name, "docs"))
        with open(os.path.join(tmp.name, DOC), "w") as f:
            f.write(doc)
        self.runner = FakeRunner(tmp.name, values)
        return self.checker.check(self.runner, tbl["claims"][0], tbl["runs"], tbl["margin"],
                                  fast)

    def test_a_range_checked_only_on_its_own_seeds_is_refused(self):
        for held_out in (None, [], [2, 3]):
            tbl = table([1, 2], held_out, [1.0, 2.0])
            problems = self.checker.table_problems(tbl["runs"], tbl["claims"])
            self.assertEqual(len(problems), 1, problems)
            self.assertIn("held_out", problems[0])
        with tempfile.TemporaryDirectory() as tmp:
            lab = Lab(tmp, table([1, 2], [], [1.0, 2.0]), {DOC: "The loss 1.0-2.0 here.\n"}, {})
            rc, out = lab.check()
        self.assertEqual(rc, 2, out)
        self.assertIn("run r: no \"held_out\" seeds", out)

    def test_over_divides_by_the_other_runs_measure_on_the_same_seed(self):
        class TwoRuns:
            def measure(self, run, seed, what):
                return {"r": 6.0 * seed, "o": {1: 8.0, 2: 0.0}[seed]}[run]

        claim = {"id": "c1", "run": "r", "measure": "m", "over": {"run": "o", "measure": "m"}}
        self.assertEqual(self.checker.value_of(TwoRuns(), claim, 1), 0.75)
        self.assertIsNone(self.checker.value_of(TwoRuns(), claim, 2))  # a ratio to 0: none
        claim["minus"] = {"run": "o", "measure": "m"}
        self.assertEqual(self.checker.value_of(TwoRuns(), claim, 1), -2.0)  # minus first
        runs = {"r": {"preset": "p.json", "made_from": [1], "held_out": [2]},
                "o": {"preset": "p.json", "made_from": [1], "held_out": [2]}}
        problems = self.checker.table_problems(runs, [claim])
        self.assertEqual(problems, ['claim c1: "minus" and "over" both given'])

    def test_a_held_out_seed_out_of_range_fails_the_claim(self):
        holds, _, why = self.check(table([1, 2], [3], [1.0, 2.0]), {1: 1.4, 2: 1.6, 3: 2.3})
        self.assertFalse(holds)
        self.assertEqual(why, "held-out seed 3 gives 2.3")

    def test_held_out_seeds_in_range_hold(self):
        holds, measured, why = self.check(table([1, 2], [3], [1.0, 2.0]),
                                          {1: 1.4, 2: 1.6, 3: 1.9})
        self.assertTrue(holds, why)
        self.assertEqual(measured, "made from 1: 1.4, 2: 1.6; held out 3: 1.9")

    def test_a_range_on_the_edge_of_its_seeds_is_refused(self):
        # Spread 0.2, margin 0.5: the range must reach 1.3 .. 1.7 at least; [1.35, 2] does not.
        holds, _, why = self.check(table([1, 2], [3], [1.35, 2.0], text="loss 1.35-2.0"),
                                   {1: 1.4, 2: 1.6, 3: 1.5}, doc="The loss 1.35-2.0 here.\n")
        self.assertFalse(holds)
        self.assertIn("edge: their min-max 1.4-1.6 with margin 0.5 needs [1.3, 1.7]", why)

    def test_the_margin_stops_at_what_the_measure_cannot_pass(self):
        # Spread 0.2, margin 0.5: [1.3, 1.7], but the measure cannot pass 1.65.
        tbl = table([1, 2], [3], [1.3, 1.65], text="loss 1.3-1.65")
        doc = "The loss 1.3-1.65 here.\n"
        holds, _, why = self.check(tbl, {1: 1.4, 2: 1.6, 3: 1.5}, doc=doc)
        self.assertFalse(holds)
        self.assertIn("needs [1.3, 1.7]", why)
        tbl["claims"][0]["limits"] = [None, 1.65]
        holds, _, why = self.check(tbl, {1: 1.4, 2: 1.6, 3: 1.5}, doc=doc)
        self.assertTrue(holds, why)

    def test_fast_reads_the_first_made_from_and_the_first_held_out_seed(self):
        tbl = table([1, 2], [3, 4], [1.0, 2.0], fast=True)
        values = {1: 1.4, 2: 1.6, 3: 1.9, 4: 5.0}
        holds, measured, why = self.check(tbl, values, fast=True)
        self.assertTrue(holds, why)
        self.assertEqual(self.runner.seeds_read, [1, 3])
        holds, _, why = self.check(tbl, values)
        self.assertFalse(holds)
        self.assertEqual(why, "held-out seed 4 gives 5")

    def test_a_claims_own_seeds_replace_its_runs(self):
        # Re-made from seeds 1-3 after failing on seed 3, checked on seed 4.
        tbl = table([1, 2], [3], [1.0, 3.0], text="loss 1.0-3.0")
        tbl["claims"][0].update(made_from=[1, 2, 3], held_out=[4])
        holds, measured, _ = self.check(tbl, {1: 1.4, 2: 1.6, 3: 2.3, 4: 5.0},
                                        doc="The loss 1.0-3.0 here.\n")
        self.assertFalse(holds)
        self.assertEqual(measured, "made from 1: 1.4, 2: 1.6, 3: 2.3; held out 4: 5")
        tbl["claims"][0]["held_out"] = [3, 4]
        problems = self.checker.table_problems(tbl["runs"], tbl["claims"])
        self.assertEqual(problems, ["claim c1: seeds 3 are both made_from and held_out"])

    def test_a_claim_on_named_seeds_needs_no_held_out_seed(self):
        tbl = table([1, 2], [3], [None, 0.0], text="lower on seed 2", seeds=[2])
        holds, measured, why = self.check(tbl, {1: 0.5, 2: -0.1, 3: 0.5},
                                          doc="It ended lower on seed 2.\n")
        self.assertTrue(holds, why)
        self.assertEqual(self.runner.seeds_read, [2])

    def test_the_checker_process_fails_a_held_out_seed(self):
        with tempfile.TemporaryDirectory() as tmp:
            lab = Lab(tmp, table([1, 2], [3], [1.0, 2.0]), {DOC: "The loss 1.0-2.0 here.\n"},
                      {1: 1.4, 2: 1.6, 3: 2.3})
            rc, out = lab.check()
        self.assertEqual(rc, 1, out)
        self.assertIn("claim fails: c1 (held-out seed 3 gives 2.3)", out)


class ClaimNumbers(unittest.TestCase):
    """The document scan alone (check-claims.py --numbers and claim_numbers.check_numbers)."""

    def problems(self, doc, claims=(), not_claims=(), path=DOC):
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "docs"))
            with open(os.path.join(tmp, path), "w") as f:
                f.write(doc)
            return claim_numbers.check_numbers(tmp, list(claims), list(not_claims))

    def claim(self, text, rng, **extra):
        row = {"id": "c", "file": DOC, "text": text, "run": "r", "measure": "m", "range": rng}
        row.update(extra)
        return row

    def test_what_counts_as_a_claim_number(self):
        found = [t for _, _, t in claim_numbers.claim_numbers(
            "log Z 5.55 at step 0, 14.3-14.9 at 200; −0.12 to +1.72; 1–2 spikes; LR 3e-2; "
            "2026-12-02; step 150; `0.5 in code`; {{loss at=0.5}}; ](x1.2.png) 25.2x")]
        self.assertEqual(found, ["5.55", "14.3", "14.9", "−0.12", "+1.72", "1", "2", "25.2"])

    def test_a_sentence_ends_a_number_and_a_fence_opens_a_line(self):
        doc = ("Logits 5.55.\n```sh\nrun --set x=1.5\n```\nSay ``` mid-line; then 0.98.\n")
        problems = self.problems(doc)
        self.assertEqual([p.split(":")[1].split()[0] for p in problems], ["5.55", "0.98"],
                         problems)

    def test_a_number_that_is_not_a_row_is_refused(self):
        doc = "At step 0 log Z is ln 256 = 5.55 for every run.\n"
        problems = self.problems(doc)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("5.55 is not a row", problems[0])

    def test_the_issues_cases_are_refused(self):
        cases = ["| no z-loss (seeds 1, 2, 3) | 14.31–14.93 | 23.10–23.74 |",
                 "keeps the max logit at 5.4-5.5 (bound",
                 "the raw max logit at 5.5-5.6, just under the bound, at every LR",
                 "| incident | 175, loss | never | 0.98, 0.92, 0.93 |"]
        for doc in cases:
            self.assertTrue(self.problems(doc + "\n"), doc)

    def test_a_number_in_a_claims_text_must_be_one_of_its_bounds(self):
        text = "entropy 2.2-2.7 at the end"
        self.assertEqual(self.problems("The " + text + ".\n", [self.claim(text, [2.2, 2.7])]),
                         [])
        problems = self.problems("The " + text + ".\n", [self.claim(text, [2.35, 2.61])])
        self.assertEqual(len(problems), 2, problems)
        self.assertIn("2.2 is in the text of c but none of its bounds", problems[0])

    def test_percentages_signs_and_mentions_match_bounds(self):
        text = "60-82% at the cap, 0.09–0.16 below, at most 1.3 up to step 20"
        claims = [self.claim(text, [0.6, 0.82]), self.claim(text, [-0.16, -0.09]),
                  self.claim(text, [25, None], mentions=["1.3"])]
        self.assertEqual(self.problems(text + "\n", claims), [])

    def test_not_claims_exempt_their_spans_and_must_exempt_something(self):
        doc = "## Sweep\nmean 0.305 over seeds.\n## Settings\nstart 0.98 here; 0.4M model.\n"
        spans = [{"file": DOC, "from": "## Sweep", "to": "over seeds.", "kind": "record",
                  "why": "one sweep"},
                 {"file": DOC, "text": "start 0.98", "kind": "setting", "why": "a config value"},
                 {"file": "*", "text": "0.4M", "kind": "identifier", "why": "the model's size"}]
        self.assertEqual(self.problems(doc, not_claims=spans), [])
        stale = spans + [{"file": DOC, "text": "nowhere 1.5", "kind": "setting", "why": "x"}]
        problems = self.problems(doc, not_claims=stale)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("exempts no claim number", problems[0])
        problems = self.problems(doc, not_claims=spans[1:])
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("0.305 is not a row", problems[0])

    def test_a_constant_must_equal_its_value(self):
        good = {"file": "*", "text": "ln 256 = 5.545", "kind": "constant", "value": "log(256)"}
        self.assertEqual(self.problems("Here ln 256 = 5.545.\n", not_claims=[good]), [])
        bad = dict(good, text="ln 256 = 5.55")
        self.assertEqual(self.problems("Here ln 256 = 5.55.\n", not_claims=[bad]), [])
        worse = dict(good, text="ln 256 = 5.57")
        problems = self.problems("Here ln 256 = 5.57.\n", not_claims=[worse])
        self.assertTrue(any("log(256) = 5.54518, not 5.57" in p for p in problems), problems)

    def test_a_presets_why_and_a_lessons_strings_are_read(self):
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "experiments"))
            os.makedirs(os.path.join(tmp, "resources", "lessons"))
            with open(os.path.join(tmp, "experiments", "p.json"), "w") as f:
                json.dump({"why": "max 5.4-5.5 here", "optim": {"lr": 0.01}}, f)
            with open(os.path.join(tmp, "resources", "lessons", "01.json"), "w") as f:
                json.dump({"steps": [{"text": "loss 0.87 then {{loss at=150}}"}]}, f)
            problems = claim_numbers.check_numbers(tmp, [], [])
        self.assertEqual(len(problems), 3, problems)
        self.assertTrue(problems[0].startswith("experiments/p.json: 5.4"), problems)
        self.assertTrue(problems[2].startswith("resources/lessons/01.json: 0.87"), problems)

    def test_the_checker_refuses_a_document_number(self):
        with tempfile.TemporaryDirectory() as tmp:
            lab = Lab(tmp, table([1, 2], [3], [1.0, 2.0]),
                      {DOC: "The loss 1.0-2.0 here; log Z 5.55 at step 0.\n"}, {})
            rc, out = lab.check("--numbers")
        self.assertEqual(rc, 1, out)
        self.assertIn("5.55 is not a row", out)


if __name__ == "__main__":
    unittest.main()
