#!/usr/bin/env python3
"""summary.py - count the TAP results of every suite and print the closing line.

usage: summary.py RESULTS_DIR

Reads RESULTS_DIR/*.tap (one file per suite), prints one line per suite and, last,
'N passed, N failed, N skipped'.  A skip is not a pass.  Exits non-zero when anything
failed, when a suite file is missing a plan's worth of lines, or when no test ran.
"""
import glob
import os
import re
import sys

LINE = re.compile(r"^\s*(not ok|ok)\b[^#]*(#\s*(\w+))?", re.I)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    total = {"pass": 0, "fail": 0, "skip": 0}
    files = sorted(glob.glob(os.path.join(sys.argv[1], "*.tap")))
    for path in files:
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
            print(f"# {os.path.basename(path)}: plan said {plan} tests, saw {seen}")
        print(f"# {os.path.basename(path)[:-4]:<12} {c['pass']} passed, {c['fail']} failed,"
              f" {c['skip']} skipped")
        for k in total:
            total[k] += c[k]
    if not files:
        print("# no test results at all")
        total["fail"] += 1
    print(f"{total['pass']} passed, {total['fail']} failed, {total['skip']} skipped")
    return 1 if total["fail"] or total["pass"] == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
