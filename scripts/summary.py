#!/usr/bin/env python3
"""summary.py - count the TAP results of every suite and print the closing line.

usage: summary.py RESULTS_DIR [ROW...]

Reads RESULTS_DIR/*.tap (suites of no row) and RESULTS_DIR/ROW/*.tap for each row
named (one file per suite), prints one line per suite, named 'suite[ROW]', a total per
row and, last, 'N passed, N failed, N skipped' over everything.  A skip is not a pass.
Exits non-zero when anything failed, when a suite file is missing a plan's worth of
lines, when a row named has no results, or when no test ran.
"""
import glob
import os
import re
import sys

LINE = re.compile(r"^\s*(not ok|ok)\b[^#]*(#\s*(\w+))?", re.I)


def count(path):
    """pass/fail/skip of one TAP file; a plan the file falls short of is a failure."""
    c = {"pass": 0, "fail": 0, "skip": 0}
    plan = None
    with open(path, errors="replace") as f:
        for line in f:
            m = re.match(r"^1\.\.(\d+)", line)
            if m and plan is None:
                plan = int(m.group(1))
            m = LINE.match(line)
            if not m or line.startswith((" ", "\t")):
                continue
            directive = (m.group(3) or "").upper()
            if directive == "SKIP":
                c["skip"] += 1
            elif m.group(1) == "ok" and directive != "TODO":
                c["pass"] += 1
            else:
                c["fail"] += 1
    seen = sum(c.values())
    if plan is not None and seen != plan:
        c["fail"] += max(plan - seen, 1)
        print(f"# {path}: plan said {plan} tests, saw {seen}")
    return c


def line(name, c):
    return f"{name:<28} {c['pass']} passed, {c['fail']} failed, {c['skip']} skipped"


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    top, rows = sys.argv[1], sys.argv[2:]
    total = {"pass": 0, "fail": 0, "skip": 0}
    groups = [(None, sorted(glob.glob(os.path.join(top, "*.tap"))))]
    groups += [(r, sorted(glob.glob(os.path.join(top, r, "*.tap")))) for r in rows]
    for row, files in groups:
        sub = {"pass": 0, "fail": 0, "skip": 0}
        if row is not None and not files:
            print(f"# row {row}: no test results at all (its build failed?)")
            sub["fail"] += 1
        for path in files:
            suite = os.path.basename(path)[:-4]
            c = count(path)
            print("# " + line(f"{suite}[{row}]" if row else suite, c))
            for k in sub:
                sub[k] += c[k]
        if row is not None:
            print("# " + line(f"== row {row}", sub))
        for k in total:
            total[k] += sub[k]
    if not any(files for _, files in groups):
        print("# no test results at all")
        total["fail"] += 1
    print(f"{total['pass']} passed, {total['fail']} failed, {total['skip']} skipped")
    return 1 if total["fail"] or total["pass"] == 0 else 0


if __name__ == "__main__":
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(__doc__.strip())
        sys.exit(0)
    sys.exit(main())
