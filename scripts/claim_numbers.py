"""The claim-number rule of scripts/check-claims.py: every number a document states as what a run
gives is a row of experiments/claims/claims.json (docs/EXPERIMENTS.md, "Every numbered claim
is a row").

Scanned: README.md, docs/*.md, every preset's "why" (experiments/*.json) and every string of the
lessons (resources/lessons/*.json). Each is read as one text, whitespace runs squeezed to one
space (a JSON file: its scanned strings joined by newlines).

Not read: code (fenced blocks, their fences at the start of a line, and `spans`), HTML
comments, link targets "](...)", a lesson's live values {{...}}, numbers in scientific notation
(3e-2: learning rates, coefficients), dates (2026-12-02) and arXiv ids (arXiv 2309.14322).

A claim number is, in what is read,
  - a range: two numbers joined by "-", "–", "—" or " to " ("2.35-2.61", "1–2",
    "−0.12 to +1.72"): both ends, integers too;
  - a decimal: a number with a fractional part ("5.55", "0.98x").
A lone integer is not (steps, seeds, sizes, thresholds are integers: "step 150").

Each claim number must lie in
  - the text of a claim row of its file, and equal (as |value|, or 100 |value| for a
    percentage) a bound of a claim row whose text holds it, or be one of that row's
    "mentions" (a threshold the claim reads at: "at most 1.3 up to step 15"); or
  - a span of "not_claims": a "setting" (a config value or a rule's threshold), a "constant"
    (its "value", a Python math expression, is computed and must round to the number written),
    a "record" (one run's or one sweep's measurement, labelled as such where it stands), a
    "quote" (the guide's or a paper's number, quoted as theirs), an "identifier" (a version,
    a size of a file) or an "example" (an illustration of a format, not a measurement). A
    span is "text" (every occurrence, in "file" or in every file for "*"), "from" .. "to"
    (the first "to" after each "from", both included) or the whole file.
A not_claims span that is not found, or exempts no claim number, is refused as stale.
"""
import glob
import json
import math
import os
import re

NUM = r"[−+-]?\d+(?:\.\d+)?"
RANGE = re.compile(r"(?<![\w.^])(%s)\s?(?:–|—|-|\sto\s)\s?(%s)(?![\w.]*\d)" % (NUM, NUM))
DECIMAL = re.compile(r"(?<![\w.^])[−+-]?\d+\.\d+(?!\.?\d)")
HIDDEN = [re.compile(p, re.S) for p in (
    "\x01.*?\x01", r"`[^`]{0,300}`", r"<!--.*?-->", r"\]\([^)]*\)", r"\{\{.*?\}\}",
    r"(?<![\w.])\d+(?:\.\d+)?[eE][-+]?\d+", r"\b\d{4}-\d{2}-\d{2}\b",
    r"arXiv \d{4}\.\d{4,5}")]
KINDS = ("setting", "constant", "record", "quote", "identifier", "example")


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


def read_text(path):
    """A document as the checker reads it: squeezed; a preset: its "why"; a lesson: its
    strings; any other JSON: its strings."""
    with open(path, encoding="utf-8") as f:
        raw = f.read()
    if not path.endswith(".json"):
        return squeeze(re.sub(r"(?m)^[ \t]*```", "\x01", raw))  # a fence opens a line
    doc = json.loads(raw)
    if os.path.basename(os.path.dirname(path)) == "experiments":
        return squeeze(doc.get("why", "") if isinstance(doc, dict) else "")
    return squeeze("\n".join(strings_of(doc)))


def scanned_files(root):
    """The documents whose numbers are claims, relative to root."""
    pats = ["README.md", "docs/*.md", "experiments/*.json", "resources/lessons/*.json"]
    return sorted(os.path.relpath(p, root) for pat in pats
                  for p in glob.glob(os.path.join(root, pat)))


def claim_numbers(text):
    """(start, end, value text) of every claim number of a squeezed text."""
    shown = list(text)
    for pat in HIDDEN:
        for m in pat.finditer(text):
            shown[m.start():m.end()] = " " * (m.end() - m.start())
    shown = "".join(shown)
    found, taken = [], set()
    for m in RANGE.finditer(shown):
        for g in (1, 2):
            found.append((m.start(g), m.end(g), m.group(g)))
            taken.add(m.start(g))
    for m in DECIMAL.finditer(shown):
        if m.start() not in taken:
            found.append((m.start(), m.end(), m.group()))
    return sorted(found)


def value_of(token):
    return float(token.replace("−", "-"))


def occurrences(text, needle):
    start = text.find(needle)
    while start >= 0:
        yield start, start + len(needle)
        start = text.find(needle, start + 1)


def same_number(written, bound):
    w, b = abs(written), abs(bound)
    return any(math.isclose(w, x, rel_tol=1e-9, abs_tol=1e-12) for x in (b, 100 * b))


def constant_problem(entry):
    """Why a constant's value does not round to the number its text writes, or None."""
    value = eval(entry["value"], {"__builtins__": {}}, vars(math))  # the table is ours
    nums = [t for _, _, t in claim_numbers(squeeze(entry["text"]))]
    if len(nums) != 1:
        return "constant %r: its text holds %d claim numbers, not one" % (entry["text"],
                                                                        len(nums))
    digits = len(nums[0].split(".")[1]) if "." in nums[0] else 0
    if round(value, digits) != value_of(nums[0]):
        return "constant %r: %s = %.6g, not %s" % (entry["text"], entry["value"], value,
                                                   nums[0])
    return None


def spans_of(entry, text):
    """Where a not_claims entry lies in one file's text."""
    if "text" in entry:
        return list(occurrences(text, squeeze(entry["text"])))
    if "from" in entry:
        out = []
        for start, _ in occurrences(text, squeeze(entry["from"])):
            end = text.find(squeeze(entry["to"]), start)
            if end >= 0:
                out.append((start, end + len(squeeze(entry["to"]))))
        return out
    return [(0, len(text))]


def claim_spans(claims, path, text):
    """(start, end, claim) of every occurrence of every claim text in one file."""
    return [(s, e, c) for c in claims if c["file"] == path
            for s, e in occurrences(text, squeeze(c["text"]))]


def claims_holding(start, end, spans):
    return [c for s, e, c in spans if s <= start and end <= e]


def is_bound(token, inside):
    """Whether a number equals a bound or a mention of one of the claims whose text holds it."""
    v = value_of(token)
    bounds = [b for c in inside for b in c["range"] if b is not None]
    bounds += [value_of(m) for c in inside for m in c.get("mentions", [])]
    return any(same_number(v, b) for b in bounds)


def context(text, start, end):
    return text[max(0, start - 40):end + 40]


def check_numbers(root, claims, not_claims):
    """Problems (strings) of the claim-number rule over the scanned documents."""
    problems, used = [], [0] * len(not_claims)
    for i, entry in enumerate(not_claims):
        if entry.get("kind") not in KINDS:
            problems.append("not_claims %d: kind %r is not one of %s" % (i, entry.get("kind"),
                                                                        ", ".join(KINDS)))
        elif entry["kind"] == "constant":
            why = constant_problem(entry)
            if why:
                problems.append(why)
        elif not entry.get("why"):
            problems.append("not_claims %d: say why (\"why\")" % i)
    for path in scanned_files(root):
        text = read_text(os.path.join(root, path))
        spans = claim_spans(claims, path, text)
        exempt = []
        for i, entry in enumerate(not_claims):
            if entry["file"] in (path, "*"):
                exempt += [(s, e, i) for s, e in spans_of(entry, text)]
        for start, end, token in claim_numbers(text):
            inside = claims_holding(start, end, spans)
            if inside and is_bound(token, inside):
                continue
            hits = [i for s, e, i in exempt if s <= start and end <= e]
            for i in hits:
                used[i] += 1
            if hits:
                continue
            what = ("is in the text of %s but none of its bounds or mentions" % ", ".join(
                c["id"] for c in inside) if inside else "is not a row of the claims table")
            problems.append("%s: %s %s: \"...%s...\"" % (path, token, what,
                                                          context(text, start, end)))
    for i, entry in enumerate(not_claims):
        if not used[i]:
            problems.append("not_claims %d (%s, %s): exempts no claim number: remove it" % (
                i, entry["file"], entry.get("text") or entry.get("from") or "whole file"))
    return problems
