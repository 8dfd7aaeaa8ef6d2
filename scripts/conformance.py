#!/usr/bin/env python3
"""conformance.py - map the spec's normative statements to test results.

usage: conformance.py STATEMENTS.tsv RESULTS_DIR OUT.md
       conformance.py --map STATEMENTS.tsv MAP.md [--check]
       conformance.py --self-test

STATEMENTS.tsv (docs/spec/statements.tsv) has one statement a line, tab-separated:
id, section, statement, tests.  The tests column is a comma-separated list of
SUITE:NAME (SUITE one of qtest, guest, kunit, scenario), or "untestable: REASON".

RESULTS_DIR holds one TAP file per suite, SUITE.tap.  Result lines are
'ok N - name', 'not ok N - name', 'ok N - name # SKIP reason' (the '-' and the
number are optional, as GLib prints them); indented lines are subtests, named
PARENT.name after a '# Subtest: PARENT' line (KTAP).  A line of another suite's
file whose name starts with 'SUITE.' also counts for SUITE, so KUnit results that
guest.tap reports as 'kunit.SUITE.CASE' answer 'kunit:SUITE.CASE'.

A statement's test matches a result of its suite whose name is equal to NAME, or
else the one result whose name ends in NAME after a '/', '.', ':' or space (so
'qtest:virtio-rng-pci-tests/leak-reset' finds the full qos-test path).  Several results under one name
combine to the worst of them; a suffix that fits several names is ambiguous and
counts as missing.  A scenario test named N-name also matches the one scenario
result numbered N ('scenario:N title', as snapshot-scenarios/run.py prints it).
A TODO result is not a pass.

Writes OUT.md, a table of id, statement, tests and result (pass, fail, skip,
missing, no test, untestable), prints a summary, and exits 1 when a statement has
no test, or any test is missing, failed or was skipped (a skip is not a pass);
2 when STATEMENTS.tsv cannot be used.  --self-test checks the parser and the
verdicts on inline examples and prints TAP.

--map writes the map without results (docs/spec/conformance-map.md, committed): per
statement its id, section, level (MUST, SHOULD, MAY) and tests, and the counts per kind
(device, driver) and level.  With --check it writes nothing and exits 1 when MAP.md differs from
what it would write (the map is stale: regenerate it with --map), or when
docs/spec/README.md states other counts than the map's.
"""
import glob
import os
import re
import sys
import tempfile

SUITES = ("qtest", "guest", "kunit", "scenario")
RESULT = re.compile(r"^(?P<indent>\s*)(?P<verdict>not ok|ok)\b(?:\s+(?P<num>\d+))?"
                    r"(?:\s*-)?\s*(?P<rest>.*)$", re.I)
DIRECTIVE = re.compile(r"(?:^|\s)#\s*(?P<kind>SKIP|TODO)\w*\b:?\s*(?P<reason>.*)$", re.I)
SUBTEST = re.compile(r"^(?P<indent>\s*)#\s*Subtest:\s*(?P<name>.+?)\s*$")
BOUNDARY = "/.: "
SCENARIO_NUMBER = re.compile(r"^(?:scenario:)?\s*0*(\d+)(?=\D|$)")
RANK = {"pass": 0, "skip": 1, "missing": 2, "fail": 3}


class UsageError(Exception):
    pass


# --- TAP --------------------------------------------------------------------------
def indent_width(s):
    return len(s.expandtabs(8))


def parse_tap(text):
    """Return [(name, verdict, note)] for every result line, subtests qualified."""
    results, subtests = [], []          # subtests: [(indent, name)], innermost last
    for line in text.splitlines():
        m = SUBTEST.match(line)
        if m:
            width = indent_width(m.group("indent"))
            subtests = [s for s in subtests if s[0] < width] + [(width, m.group("name"))]
            continue
        m = RESULT.match(line)
        if not m:
            continue
        width = indent_width(m.group("indent"))
        rest, note = m.group("rest"), ""
        d = DIRECTIVE.search(rest)
        if d:
            rest, kind = rest[:d.start()], d.group("kind").upper()
            note = f"{kind}: {d.group('reason').strip()}".rstrip(": ")
            verdict = "skip" if kind == "SKIP" else "fail"      # a TODO is not a pass
        else:
            verdict = "pass" if m.group("verdict").lower() == "ok" else "fail"
        rest = re.sub(r"\s+#.*$", "", rest).strip()             # any other comment
        subtests = [s for s in subtests if s[0] <= width]
        parents = [s[1] for s in subtests]
        if width == 0:
            parents = []
        name = ".".join(parents + [rest]) if rest else ".".join(parents)
        if name:
            results.append((name, verdict, note))
    return results


def load_results(results_dir):
    """Return {suite: [(name, verdict, note, source)]}."""
    files = {os.path.basename(p)[:-4]: p
             for p in sorted(glob.glob(os.path.join(results_dir, "*.tap")))}
    parsed = {}
    for suite, path in files.items():
        with open(path, errors="replace") as f:
            parsed[suite] = parse_tap(f.read())
    by_suite = {}
    for suite, results in parsed.items():
        for name, verdict, note in results:
            by_suite.setdefault(suite, []).append((name, verdict, note, f"{suite}.tap"))
            head, dot, tail = name.partition(".")
            if dot and tail and head in SUITES and head != suite:
                by_suite.setdefault(head, []).append((tail, verdict, note, f"{suite}.tap"))
    return by_suite


def worst(verdicts):
    return max(verdicts, key=lambda v: RANK[v]) if verdicts else "missing"


def scenario_number(name):
    m = SCENARIO_NUMBER.match(name)
    return int(m.group(1)) if m else None


def match(name, candidates, suite=None):
    """Verdict and note for test NAME among candidates [(name, verdict, note, src)]."""
    exact = [c for c in candidates if c[0] == name]
    tries = [lambda c: c[0].endswith(name) and len(c[0]) > len(name)
             and c[0][-len(name) - 1] in BOUNDARY]
    if suite == "scenario" and scenario_number(name) is not None:
        tries.append(lambda c: scenario_number(c[0]) == scenario_number(name))
    for fits in tries:
        if exact:
            break
        found = [c for c in candidates if fits(c)]
        names = sorted({c[0] for c in found})
        if len(names) > 1:
            return "missing", "ambiguous: " + ", ".join(names[:3]) + \
                (", ..." if len(names) > 3 else "")
        exact = found
    if not exact:
        return "missing", "no such result"
    verdict = worst([c[1] for c in exact])
    notes = sorted({c[2] for c in exact if c[2] and c[1] == verdict})
    if len(exact) > 1:
        notes.append(f"{len(exact)} results")
    return verdict, "; ".join(notes)


# --- statements -------------------------------------------------------------------
def tsv_rows(path):
    """(line number, columns) of every statement row of STATEMENTS.tsv: blank lines,
    comments and the header are skipped.  spec-md.py reads the file through this too."""
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            cols = line.split("\t")
            if cols[0] != "id":
                yield n, cols


def read_statements(path):
    statements, errors, seen = [], [], set()
    for n, cols in tsv_rows(path):
        where = f"{path}:{n}"
        if len(cols) < 3 or len(cols) > 4:
            errors.append(f"{where}: expected 4 tab-separated columns, found {len(cols)}")
            continue
        ident, section, sentence = (c.strip() for c in cols[:3])
        field = cols[3].strip() if len(cols) == 4 else ""
        if ident in seen:
            errors.append(f"{where}: {ident} appears twice")
        seen.add(ident)
        st = {"id": ident, "section": section, "statement": sentence,
              "tests": [], "untestable": None}
        if field.lower().startswith("untestable"):
            reason = field.partition(":")[2].strip()
            if not reason:
                errors.append(f"{where}: {ident} is untestable without a reason")
            st["untestable"] = reason
        elif field:
            for test in (t.strip() for t in field.split(",")):
                suite, colon, name = test.partition(":")
                if not colon or suite not in SUITES or not name.strip():
                    errors.append(f"{where}: {ident}: '{test}' is not SUITE:NAME "
                                  f"with SUITE one of {', '.join(SUITES)}")
                    continue
                st["tests"].append((suite, name.strip()))
        statements.append(st)
    if not statements and not errors:
        errors.append(f"{path}: no statements")
    return statements, errors


def evaluate(statements, by_suite):
    for st in statements:
        st["results"] = []
        if st["untestable"] is not None:
            st["verdict"] = "untestable"
            continue
        if not st["tests"]:
            st["verdict"] = "no test"
            continue
        for suite, name in st["tests"]:
            verdict, note = match(name, by_suite.get(suite, []), suite)
            if verdict == "missing" and suite not in by_suite:
                note = f"no {suite}.tap results"
            st["results"].append((suite, name, verdict, note))
        st["verdict"] = worst([r[2] for r in st["results"]])
    return statements


# --- output -----------------------------------------------------------------------
def cell(text):
    return text.replace("|", "\\|").replace("\n", " ")


def write_map(statements, out, tsv_path, results_dir):
    spec = os.path.join(os.path.dirname(os.path.abspath(tsv_path)), "rng-leak.md")
    link = os.path.relpath(spec, os.path.dirname(os.path.abspath(out))) \
        if os.path.exists(spec) else None
    counts = summary_counts(statements)
    lines = [
        "<!-- Generated by scripts/conformance.py: edit statements.tsv or the tests, "
        "not this file. -->",
        "",
        "# Conformance map: VIRTIO_RNG_F_LEAK",
        "",
        f"Statements: `{tsv_path}`. Results: `{results_dir}`. "
        + ", ".join(f"{v} {k}" for k, v in counts.items()) + ".",
        "",
        "A statement passes when every test named for it passed; a skipped or missing "
        "test is not a pass.",
        "",
        "| id | statement | tests | result |",
        "|---|---|---|---|",
    ]
    for st in statements:
        ident = f"[{st['id']}]({link}#{st['id']})" if link else st["id"]
        if st["verdict"] == "untestable":
            tests = "untestable: " + cell(st["untestable"])
        elif st["verdict"] == "no test":
            tests = "(none)"
        else:
            tests = "<br>".join(
                f"`{s}:{cell(n)}` {v}" + (f" ({cell(note)})" if note and v != "pass" else "")
                for s, n, v, note in st["results"])
        verdict = st["verdict"] if st["verdict"] in ("pass", "untestable") \
            else f"**{st['verdict']}**"
        lines.append(f"| {ident} | {cell(st['statement'])} | {tests} | {verdict} |")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def summary_counts(statements):
    counts = {k: 0 for k in ("pass", "fail", "skip", "missing", "no test", "untestable")}
    for st in statements:
        counts[st["verdict"]] += 1
    return counts


def run(tsv, results_dir, out, stream=sys.stdout):
    statements, errors = read_statements(tsv)
    if errors:
        for e in errors:
            print(f"conformance: {e}", file=stream)
        return 2
    if not os.path.isdir(results_dir):
        print(f"conformance: {results_dir} is not a directory", file=stream)
        return 2
    evaluate(statements, load_results(results_dir))
    write_map(statements, out, tsv, results_dir)
    for st in statements:
        if st["verdict"] in ("pass", "untestable"):
            continue
        if st["verdict"] == "no test":
            print(f"# {st['id']}: no test", file=stream)
        for suite, name, verdict, note in st["results"]:
            if verdict != "pass":
                print(f"# {st['id']}: {suite}:{name} {verdict}"
                      + (f" ({note})" if note else ""), file=stream)
    counts = summary_counts(statements)
    print(f"conformance: {len(statements)} statements: "
          + ", ".join(f"{v} {k}" for k, v in counts.items()) + f" (map: {out})",
          file=stream)
    absent = sorted({suite for st in statements for suite, _, _, note in st["results"]
                     if note == f"no {suite}.tap results"})
    if absent:
        # KUnit's results come with the guest suite's (guest.tap)
        suites = sorted({"guest" if s == "kunit" else s for s in absent})
        print(f"conformance: no results of {', '.join(absent)} in {results_dir}: the map "
              f"reads the results of the suites run before it, so run them in the same "
              f"invocation (make check SUITES={','.join(suites)},conformance, or make check)",
              file=stream)
    bad = len(statements) - counts["pass"] - counts["untestable"]
    return 1 if bad else 0


# --- self-test --------------------------------------------------------------------
def self_test():
    checks = []

    def check(ok, what):
        checks.append((bool(ok), what))

    # 1. the TAP parser
    tap = parse_tap("\n".join([
        "TAP version 13",
        "1..9",
        "ok 1 - smoke.getrandom_returns_distinct_output",
        "not ok 2 - epoch_abi.epoch_moves",
        "ok 3 - epoch_abi.needs_feature # SKIP no VIRTIO_RNG_F_LEAK",
        "ok 4 /x86_64/pc/i440FX-pcihost/pci-bus-pc/pci-bus/virtio-rng-pci/virtio-rng/"
        "virtio-rng-tests/leak/hold",
        "not ok 5 - flaky # TODO not yet",
        "ok 6 - skipped lower case # skip why not",
        "    KTAP version 1",
        "    # Subtest: virtio_rng_leak",
        "    1..2",
        "    ok 1 probe_arms_leakq1",
        "    not ok 2 rejected_request_ignored",
        "ok 7 virtio_rng_leak",
        "# a comment line: ok 99 - not a result",
        "ok 8 - name with a comment # just a comment",
        "bail out? no",
    ]))
    names = {n: (v, note) for n, v, note in tap}
    check(names.get("smoke.getrandom_returns_distinct_output", ("",))[0] == "pass",
          "parse: 'ok N - name' is a pass")
    check(names.get("epoch_abi.epoch_moves", ("",))[0] == "fail",
          "parse: 'not ok N - name' is a fail")
    check(names.get("epoch_abi.needs_feature") == ("skip", "SKIP: no VIRTIO_RNG_F_LEAK"),
          "parse: '# SKIP reason' is a skip and keeps its reason")
    check(any(n.endswith("/virtio-rng-tests/leak/hold") and v == "pass" for n, v, _ in tap),
          "parse: GLib 'ok N /path' without a dash")
    check(names.get("flaky", ("",))[0] == "fail", "parse: a TODO is not a pass")
    check(names.get("skipped lower case", ("",))[0] == "skip", "parse: '# skip' in lower case")
    check(names.get("virtio_rng_leak.probe_arms_leakq1", ("",))[0] == "pass"
          and names.get("virtio_rng_leak.rejected_request_ignored", ("",))[0] == "fail",
          "parse: indented KTAP subtests are named PARENT.case")
    check(names.get("virtio_rng_leak", ("",))[0] == "pass",
          "parse: the parent line after subtests keeps its own name")
    check(names.get("name with a comment", ("",))[0] == "pass" and "ok 99" not in str(tap),
          "parse: comments are neither names nor results")
    check(len(tap) == 10, f"parse: 10 results found (got {len(tap)})")

    # 2. matching
    cands = [(n, v, note, "x.tap") for n, v, note in tap] + [
        ("/a/virtio-rng-tests/leak/unhold", "pass", "", "x.tap"),
        ("/b/leak/twice", "pass", "", "x.tap"), ("/c/leak/twice", "fail", "", "x.tap"),
        ("dup", "pass", "", "x.tap"), ("dup", "skip", "again", "x.tap")]
    check(match("leak/hold", cands)[0] == "pass", "match: unique suffix after '/'")
    check(match("hold", cands)[0] == "pass", "match: suffix on a path boundary only")
    check(match("old", cands)[0] == "missing", "match: no match inside a path component")
    check(match("leak/twice", cands)[0] == "missing"
          and match("leak/twice", cands)[1].startswith("ambiguous"),
          "match: a suffix that fits two names is ambiguous, not a pass")
    check(match("dup", cands) == ("skip", "again; 2 results"),
          "match: repeated results combine to the worst")
    check(match("nothing/here", cands)[0] == "missing", "match: absent test is missing")
    scen = [("scenario:1 savevm, original resumes", "pass", "", "s.tap"),
            ("scenario:12 loadvm, clones", "fail", "", "s.tap"),
            ("scenario:3 8 clones from one file", "skip", "SKIP: not applicable", "s.tap")]
    check(match("1-savevm-resume", scen, "scenario")[0] == "pass"
          and match("01-savevm-resume", scen, "scenario")[0] == "pass",
          "match: a scenario is found by its number, with or without leading zeros")
    check(match("12-loadvm", scen, "scenario")[0] == "fail"
          and match("2-loadvm", scen, "scenario")[0] == "missing",
          "match: scenario 2 is not scenario 12")
    check(match("3-clones", scen, "scenario")[0] == "skip",
          "match: a skipped scenario is a skip")
    check(match("1-savevm-resume", scen, "qtest")[0] == "missing",
          "match: numbers match only in the scenario suite")

    # 3. end to end: files, verdicts, exit status
    with tempfile.TemporaryDirectory() as tmp:
        res = os.path.join(tmp, "results")
        os.mkdir(res)

        def write(name, text):
            with open(os.path.join(res if name.endswith(".tap") else tmp, name), "w") as f:
                f.write(text)

        write("qtest.tap", "TAP version 13\n1..3\n"
              "ok 1 - /x86_64/pc/virtio-rng-pci/virtio-rng/virtio-rng-tests/leak/hold\n"
              "not ok 2 - /x86_64/pc/virtio-rng-pci/virtio-rng/virtio-rng-tests/leak/copy\n"
              "ok 3 - /x86_64/pc/virtio-rng-pci/virtio-rng/virtio-rng-tests/leak/fill"
              " # SKIP no backend\n")
        write("guest.tap", "TAP version 13\n1..2\n"
              "ok 1 - kunit.virtio_rng_leak.probe_arms_leakq1\n"
              "ok 2 - epoch_abi.epoch_stable_without_leak\n")
        header = "# comment\nid\tsection\tstatement\ttests\n"
        passing = (header +
                   "RNG-LEAK-D1\tS\tThe device MUST hold.\tqtest:leak/hold, "
                   "guest:epoch_abi.epoch_stable_without_leak\n"
                   "RNG-LEAK-R1\tS\tThe driver MUST arm leakq1.\t"
                   "kunit:virtio_rng_leak.probe_arms_leakq1\n"
                   "RNG-LEAK-R2\tS\tThe driver MAY x.\tuntestable: not exercised\n")
        write("pass.tsv", passing)
        out = os.path.join(tmp, "map", "conformance.md")
        sink = open(os.devnull, "w")
        rc = run(os.path.join(tmp, "pass.tsv"), res, out, sink)
        check(rc == 0, f"run: all pass (kunit found in guest.tap) -> exit 0 (got {rc})")
        text = open(out).read() if os.path.exists(out) else ""
        check("| RNG-LEAK-D1 | The device MUST hold. |" in text and "| pass |" in text,
              "run: the map has a row per statement with its result")
        check("untestable: not exercised" in text, "run: untestable statements are listed")

        for label, row, want_rc, verdict in (
                ("a failing test", "qtest:leak/copy", 1, "fail"),
                ("a skipped test", "qtest:leak/fill", 1, "skip"),
                ("a test absent from the results", "qtest:leak/order", 1, "missing"),
                ("a suite without results", "scenario:01-savevm-resume", 1, "missing"),
                ("a statement without a test", "", 1, "no test")):
            write("bad.tsv", passing + f"RNG-LEAK-D9\tS\tThe device MUST x.\t{row}\n")
            rc = run(os.path.join(tmp, "bad.tsv"), res, out, sink)
            text = open(out).read()
            check(rc == want_rc and f"| **{verdict}** |" in text,
                  f"run: {label} -> {verdict}, exit {want_rc} (got {rc})")

        for label, row in (("an unknown suite", "RNG-LEAK-D9\tS\tx\tunit:foo\n"),
                           ("a duplicate id", "RNG-LEAK-D1\tS\tx\tqtest:leak/hold\n"),
                           ("untestable without reason", "RNG-LEAK-D9\tS\tx\tuntestable:\n"),
                           ("too few columns", "RNG-LEAK-D9\tx\n")):
            write("bad.tsv", passing + row)
            rc = run(os.path.join(tmp, "bad.tsv"), res, out, sink)
            check(rc == 2, f"run: {label} in the statements -> exit 2 (got {rc})")
        sink.close()

    print("TAP version 13")
    print(f"1..{len(checks)}")
    for i, (ok, what) in enumerate(checks, 1):
        print(f"{'ok' if ok else 'not ok'} {i} - {what}")
    return 0 if all(ok for ok, _ in checks) else 1


def level(sentence):
    """The strongest keyword of RFC 2119 the statement uses."""
    for word in ("MUST", "SHOULD", "MAY"):
        if re.search(rf"\b{word}\b", sentence):
            return word
    return "?"


def counts_sentence(statements):
    """'43: 31 device (26 MUST, 5 MAY) and 12 driver (9 MUST, 3 SHOULD)', as
    docs/spec/README.md states it."""
    parts = []
    for kind, letter in (("device", "D"), ("driver", "R")):
        mine = [st for st in statements if st["id"].startswith(f"RNG-LEAK-{letter}")]
        levels = [level(st["statement"]) for st in mine]
        by = ", ".join(f"{levels.count(w)} {w}" for w in ("MUST", "SHOULD", "MAY")
                       if levels.count(w))
        parts.append(f"{len(mine)} {kind} ({by})")
    return f"{len(statements)}: {parts[0]} and {parts[1]}"


def map_text(statements, tsv_path):
    lines = [
        "<!-- Generated by scripts/conformance.py --map from statements.tsv: edit that, then "
        "run 'make spec-map'. -->",
        "",
        "# Conformance map: VIRTIO_RNG_F_LEAK, statement by statement",
        "",
        f"The normative statements of `rng-leak.tex` ({os.path.basename(tsv_path)}) and the "
        "tests that check each; `make check` writes the same map with each test's result "
        "(`build/results/<row>/conformance.md`). Statements: "
        + counts_sentence(statements) + ".",
        "",
        "| id | section | level | tests |",
        "|---|---|---|---|",
    ]
    for st in statements:
        tests = ("untestable: " + cell(st["untestable"]) if st["untestable"] is not None
                 else "<br>".join(f"`{s}:{cell(n)}`" for s, n in st["tests"]) or "(none)")
        lines.append(f"| [{st['id']}](rng-leak.md#{st['id']}) | {cell(st['section'])} | "
                     f"{level(st['statement'])} | {tests} |")
    return "\n".join(lines) + "\n"


def spec_map(tsv, out, check):
    statements, errors = read_statements(tsv)
    if errors:
        for e in errors:
            print(f"conformance: {e}", file=sys.stderr)
        return 2
    text = map_text(statements, tsv)
    if not check:
        with open(out, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"conformance: {out}: {counts_sentence(statements)}")
        return 0
    stale = []
    try:
        with open(out, encoding="utf-8") as f:
            if f.read() != text:
                stale.append(f"{out} is stale: run 'make spec-map' (scripts/conformance.py "
                             f"--map {tsv} {out})")
    except OSError as e:
        stale.append(f"{out}: {e.strerror}: run 'make spec-map'")
    readme = os.path.join(os.path.dirname(os.path.abspath(tsv)), "README.md")
    want = f"There are {counts_sentence(statements)}"
    with open(readme, encoding="utf-8") as f:
        if want not in " ".join(f.read().split()):
            stale.append(f"{readme} does not say '{want}'")
    for line in stale:
        print(f"conformance: {line}", file=sys.stderr)
    return 1 if stale else 0


def main(argv):
    if argv == ["--self-test"]:
        return self_test()
    if argv[:1] == ["--map"] and len(argv) in (3, 4) and argv[3:] in ([], ["--check"]):
        return spec_map(argv[1], argv[2], argv[3:] == ["--check"])
    if len(argv) != 3 or any(a.startswith("-") for a in argv):
        print(__doc__, file=sys.stderr)
        return 2
    return run(*argv)


if __name__ == "__main__":
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(__doc__.strip())
        sys.exit(0)
    sys.exit(main(sys.argv[1:]))
