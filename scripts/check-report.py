#!/usr/bin/python3
"""check-report.py - the audit and its report, tested as an operator would use them.

usage: check-report.py --tap FILE --clones N OUT-DIR KERNEL=[!]LEVEL [KERNEL=[!]LEVEL...]

First, bad arguments (too few clones, no kernel, a kernel that is not a bzImage): each
must end at once with status 3 and a message naming it, writing no report.  Then for
each KERNEL (a bzImage), runs scripts/audit.py into OUT-DIR/<n>/ and checks, as TAP:
  - the exit status is the verdict's (0 safe, 1 racy, 2 unsafe);
  - the verdict's level is LEVEL (safe, racy or unsafe; !LEVEL: any other): our kernel
    must be found clone-safe and Debian's stock kernel must not (racy or unsafe: whether
    vmgenid wins its race differs from run to run), or the audit cannot tell them apart;
  - report.json has a figure and an in-play label for every mechanism;
  - the page is self-contained: no <script>, nothing loaded from the network, the chart
    inline and made by matplotlib;
  - headless Chromium renders it: the screenshot is not blank, and the rendered DOM
    holds the verdict sentence.
"""

import argparse
import html
import json
import os
import re
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHROMIUM = "chromium-headless-shell"
MECHANISMS = ("none", "vmgenid", "vmclock", "leak")
EXIT = {"safe": 0, "racy": 1, "unsafe": 2}          # scripts/audit.py; 3: no verdict


class Tap:
    def __init__(self):
        self.lines = []

    def ok(self, cond, what, why=""):
        n = len(self.lines) + 1
        line = f"{'ok' if cond else 'not ok'} {n} - {what}"
        self.lines.append(line)
        print(line, flush=True)
        if not cond and why:
            for w in str(why).splitlines()[:20]:
                print(f"#   {w}", flush=True)
        return cond


def chromium(args):
    return subprocess.run([CHROMIUM, "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           *args], capture_output=True, text=True, timeout=60)


def not_blank(png):
    """Fraction of pixels that are not white, and how many distinct colours there are."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.image
    import numpy
    img = matplotlib.image.imread(png)[:, :, :3]
    inked = float((img.min(axis=2) < 0.95).mean())
    colours = len(numpy.unique((img * 255).astype(numpy.uint8).reshape(-1, 3), axis=0))
    return inked, colours


def check_one(tap, out, kernel, level, clones):
    name = os.path.relpath(os.path.abspath(kernel), TOP)
    r = subprocess.run([os.path.join(TOP, "scripts", "audit.py"), "--kernel", kernel,
                        "--clones", str(clones), "--out", out], capture_output=True, text=True)
    for line in r.stdout.splitlines():
        print(f"# {line}")
    if not tap.ok(r.returncode in EXIT.values(), f"audit of {name} ran to a verdict "
                  f"(status {r.returncode})", r.stderr[-2000:]):
        return
    with open(os.path.join(out, "report.json")) as f:
        report = json.load(f)
    tap.ok(r.returncode == EXIT.get(report["level"]), f"{name}: exit status "
           f"{r.returncode} is the verdict's ({report['level']})")
    if level.startswith("!"):
        tap.ok(report["level"] != level[1:], f"{name}: verdict not {level[1:]} "
               f"({report['level']})", report["verdict"])
    else:
        tap.ok(report["level"] == level, f"{name}: verdict {level}",
               f"got {report['level']}: {report['verdict']}")
    mechs = {m["key"]: m for m in report["mechanisms"]}
    missing = [k for k in MECHANISMS
               if k not in mechs or "label" not in mechs[k] or
               (mechs[k].get("in_play") and "shared" not in mechs[k].get("syscall", {}))]
    tap.ok(not missing, f"{name}: every mechanism has its figure and what was in play",
           f"missing: {missing}")
    page_path = os.path.join(out, "index.html")
    with open(page_path) as f:
        page = f.read()
    tap.ok('id="advice"><b>What to do:</b>' in page, f"{name}: the page says what to do "
           f"about a {report['level']} verdict")
    external = re.findall(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//[^"' >]+""", page)
    tap.ok("<script" not in page.lower() and not external and "<svg" in page and
           "Matplotlib" in page,
           f"{name}: the page is one file: no script, nothing from the network, "
           "matplotlib's chart inline", f"external: {external}")
    shot = os.path.join(out, "screenshot.png")
    c = chromium(["--window-size=1100,1500", f"--screenshot={shot}", f"file://{page_path}"])
    if tap.ok(c.returncode == 0 and os.path.exists(shot), f"{name}: Chromium renders the page",
              c.stderr[-1500:]):
        inked, colours = not_blank(shot)
        tap.ok(inked > 0.03 and colours > 16, f"{name}: the screenshot is not blank "
               f"({inked:.1%} of pixels inked, {colours} colours)")
    d = chromium(["--dump-dom", f"file://{page_path}"])
    m = re.search(r'<p class="verdict" id="verdict">(.*?)</p>', d.stdout, re.S)
    shown = html.unescape(m.group(1)) if m else ""
    tap.ok(shown == report["verdict"], f"{name}: the rendered page shows the verdict",
           f"rendered: {shown[:200]!r}")


def bad_arguments(tap, out, kernel):
    """Bad arguments: status 3 (no verdict; argparse's own 2 would read as 'unsafe'), a
    message naming the argument, no report written and no guest booted (in seconds)."""
    script = os.path.join(TOP, "scripts", "audit.py")
    cases = (("--clones 1", ["--kernel", kernel, "--clones", "1"], "--clones"),
             ("a kernel that does not exist", ["--kernel", out + "/no-such-bzImage"],
              "no such kernel"),
             ("a file that is not a bzImage", ["--kernel", script], "not an x86 bzImage"),
             ("no --kernel", [], "--kernel"))
    for what, args, named in cases:
        r = subprocess.run([script, *args, "--out", out], capture_output=True, text=True,
                           timeout=60)
        tap.ok(r.returncode == 3 and named in r.stderr and not os.path.exists(
               os.path.join(out, "report.json")),
               f"audit with {what}: status 3, the error names it, no report",
               f"status {r.returncode}: {r.stderr[-500:]}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    p.add_argument("--tap", required=True)
    p.add_argument("--clones", type=int, default=2)
    p.add_argument("out")
    p.add_argument("kernels", nargs="+", metavar="KERNEL=LEVEL")
    a = p.parse_args()
    tap = Tap()
    bad_arguments(tap, os.path.abspath(os.path.join(a.out, "bad")), a.kernels[0].rpartition("=")[0])
    print("# audits and their reports", flush=True)
    for i, spec in enumerate(a.kernels):
        kernel, _, level = spec.rpartition("=")
        if not kernel or level.lstrip("!") not in ("safe", "racy", "unsafe"):
            p.error(f"{spec}: want KERNEL=[!]safe|racy|unsafe")
        # absolute: Chromium takes the page as a file:// URL
        check_one(tap, os.path.abspath(os.path.join(a.out, str(i))), kernel, level, a.clones)
    with open(a.tap, "w") as f:
        f.write(f"TAP version 13\n1..{len(tap.lines)}\n" + "\n".join(tap.lines) + "\n")
    return 0 if all(line.startswith("ok") for line in tap.lines) else 1


if __name__ == "__main__":
    sys.exit(main())
