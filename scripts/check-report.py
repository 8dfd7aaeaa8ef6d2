#!/usr/bin/python3
"""check-report.py - the audit and its report, tested as an operator would use them.

usage: check-report.py --tap FILE --clones N [--userspace JSON] [--image RAW=[!]LEVEL
                       --qemu-img PATH] OUT-DIR KERNEL=[!]LEVEL [KERNEL=[!]LEVEL...]

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
    holds the verdict sentence;
  - with --userspace (the user-space suite's figures), the first kernel's page has them:
    a chart per library, one panel per consumer, and the table.
With --image (a raw disk of Debian with Debian's kernel, scripts/build-cloud-image.sh),
the image audit as an operator would run it on the qcow2 they have (converted with
--qemu-img): bad arguments end with status 3 and no report; then
scripts/audit-image.py with vmgenid and the leak queues: status and verdict as for a kernel, the
image's SHA-256 the same after as before (computed here), what is certain asserted
(OpenSSL's default DRBG and the generators seeded once repeat in every clone with every
mechanism; Debian's kernel binds vmgenid and does not negotiate the leak feature), a
chart panel and a table row per library, the page self-contained and rendered.
"""

import argparse
import hashlib
import html
import json
import os
import re
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHROMIUM = "chromium-headless-shell"
MECHANISMS = ("none", "vmgenid", "vmclock", "leak")
# The image audit in make check: the two mechanisms that tell Debian's kernel apart (one
# it has, one it lacks), measured side by side in one round; make audit IMAGE= runs all four
IMAGE_MECHANISMS = ("vmgenid", "leak")
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


def run_audit(tap, name, out, command):
    """Run an audit (command, writing into out); TAP: it ran to a verdict, and its exit
    status is the verdict's.  Its report.json, or None."""
    r = subprocess.run(command + ["--out", out], capture_output=True, text=True)
    for line in r.stdout.splitlines():
        print(f"# {line}")
    if not tap.ok(r.returncode in EXIT.values(), f"{name}: the audit ran to a verdict "
                  f"(status {r.returncode})", r.stderr[-2000:]):
        return None
    with open(os.path.join(out, "report.json")) as f:
        report = json.load(f)
    tap.ok(r.returncode == EXIT.get(report["level"]), f"{name}: exit status "
           f"{r.returncode} is the verdict's ({report['level']})")
    return report


def check_one(tap, out, kernel, level, clones, userspace=None):
    name = os.path.relpath(os.path.abspath(kernel), TOP)
    report = run_audit(tap, name, out, [os.path.join(TOP, "scripts", "audit.py"), "--kernel",
                                        kernel, "--clones", str(clones)] +
                       (["--userspace", userspace] if userspace else []))
    if report is None:
        return
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
    page = page_checks(tap, name, page_path, report["verdict"])
    tap.ok('id="advice"><b>What to do:</b>' in page, f"{name}: the page says what to do "
           f"about a {report['level']} verdict")
    if userspace:
        with open(userspace) as f:
            us = json.load(f)
        names = list(dict.fromkeys(n for m in us["mechanisms"].values()
                                   for n in m["consumers"]))
        with open(os.path.join(out, f"libraries-{us['row']}.svg")) as f:
            panels = library_panels(f.read(), names)
        tap.ok('id="userspace"' in page and names and panels == names and
               all(f"<tr><td>{html.escape(n)}</td>" in page for n in names),
               f"{name}: the page has the user-space suite's figures (row {us['row']}): a "
               f"chart panel and a table row per library ({len(panels)} of {len(names)})",
               f"panels {panels}")


def page_checks(tap, name, page_path, verdict):
    """Self-contained, rendered by Chromium (not blank), showing the verdict."""
    with open(page_path) as f:
        page = f.read()
    external = re.findall(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//[^"' >]+""", page)
    tap.ok("<script" not in page.lower() and not external and "<svg" in page and
           "Matplotlib" in page,
           f"{name}: the page is one file: no script, nothing from the network, "
           "matplotlib's charts inline", f"external: {external}")
    shot = os.path.join(os.path.dirname(page_path), "screenshot.png")
    c = chromium(["--window-size=1100,1500", f"--screenshot={shot}", f"file://{page_path}"])
    if tap.ok(c.returncode == 0 and os.path.exists(shot), f"{name}: Chromium renders the page",
              c.stderr[-1500:]):
        inked, colours = not_blank(shot)
        tap.ok(inked > 0.03 and colours > 16, f"{name}: the screenshot is not blank "
               f"({inked:.1%} of pixels inked, {colours} colours)")
    d = chromium(["--dump-dom", f"file://{page_path}"])
    m = re.search(r'<p class="verdict" id="verdict">(.*?)</p>', d.stdout, re.S)
    shown = html.unescape(m.group(1)) if m else ""
    tap.ok(shown == verdict, f"{name}: the rendered page shows the verdict",
           f"rendered: {shown[:200]!r}")
    return page


def library_panels(svg_text, names):
    """The consumers that have a panel (its title as text) in a library chart."""
    return [n for n in names if f">{html.escape(n)}<" in svg_text]


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def check_layouts(tap, out):
    """audit-image.py's reading of the layouts the test image does not have: an MBR disk
    with /boot a partition of its own (two kernels: the newest is picked), and a bare
    file system without a kernel (an error naming it)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "audit_image", os.path.join(TOP, "scripts", "audit-image.py"))
    ai = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ai)
    d = os.path.join(out, "layouts")
    subprocess.run(["rm", "-rf", d], check=True)
    for sub in ("root/etc", "root/usr/lib", "boot"):
        os.makedirs(os.path.join(d, sub))
    with open(os.path.join(d, "root/usr/lib/os-release"), "w") as f:
        f.write('PRETTY_NAME="Layout Test"\n')
    for v in ("6.1.0-9", "6.1.0-10"):
        for name, size in ((f"vmlinuz-{v}", 4096), (f"initrd.img-{v}", 512)):
            with open(os.path.join(d, "boot", name), "wb") as f:
                f.write(os.urandom(size))
    disk = os.path.join(d, "mbr.raw")
    for cmd in (["mke2fs", "-q", "-t", "ext4", "-d", f"{d}/root", f"{d}/root.ext4", "16M"],
                ["mke2fs", "-q", "-t", "ext2", "-d", f"{d}/boot", f"{d}/boot.ext2", "8M"],
                ["truncate", "-s", "30M", disk]):
        subprocess.run(cmd, check=True, capture_output=True)
    subprocess.run(["sfdisk", "-q", disk], check=True, capture_output=True, text=True,
                   input="label: dos\nstart=2048, size=16384, type=83\n"
                         "start=18432, size=32768, type=83\n")
    for part, seek in (("boot.ext2", 2048), ("root.ext4", 18432)):
        subprocess.run(["dd", f"if={d}/{part}", f"of={disk}", "bs=512", f"seek={seek}",
                        "conv=notrunc", "status=none"], check=True)
    try:
        f = ai.inspect(disk)
        got = (f["root_partition"], f["boot_partition"], f["boot_dir"], f["kernel_file"],
               f["os"])
    except SystemExit as e:
        got = str(e)
    tap.ok(got == (2, 1, "/", "vmlinuz-6.1.0-10", "Layout Test"),
           "image audit: an MBR disk with /boot a partition of its own: root partition 2, "
           f"the newest kernel of partition 1 (6.1.0-10 over 6.1.0-9): {got}")
    try:
        got = ai.inspect(f"{d}/root.ext4")
    except SystemExit as e:
        got = str(e)
    tap.ok(isinstance(got, str) and "no /boot/vmlinuz" in got,
           f"image audit: a bare file system without a kernel: {got}")


def check_image(tap, out, raw, level, clones, qemu_img):
    """The image audit of raw (as a qcow2, as operators have them)."""
    script = os.path.join(TOP, "scripts", "audit-image.py")
    os.makedirs(out, exist_ok=True)
    check_layouts(tap, out)
    if not tap.ok(os.path.isfile(raw), f"the image audit's test image was built ({raw})",
                  "make cloud-image: its log is build/rootfs.log in make check"):
        return
    refused(tap, "image audit", script, os.path.join(out, "bad"), (
        ("an image that does not exist", ["--image", out + "/no-such.qcow2"],
         "no such image"),
        ("a file that is no disk image", ["--image", os.path.join(TOP, "README.md")],
         "no ext2/3/4 root file system"),
        ("--clones 1", ["--image", raw, "--clones", "1"], "--clones"),
        ("a mechanism that does not exist", ["--image", raw, "--mechanisms", "sgx"],
         "--mechanisms")))
    image = os.path.join(out, "disk.qcow2")
    subprocess.run([qemu_img, "convert", "-O", "qcow2", raw, image], check=True)
    before = sha256(image)
    name = "image audit of Debian's image"
    report = run_audit(tap, name, out, [script, "--image", image, "--clones", str(clones),
                                        "--mechanisms", ",".join(IMAGE_MECHANISMS)])
    if report is None:
        return
    want = level.lstrip("!")
    tap.ok((report["level"] != want) if level.startswith("!") else report["level"] == want,
           f"{name}: verdict {'not ' if level.startswith('!') else ''}{want} "
           f"({report['level']})", report["verdict"])
    after = sha256(image)
    tap.ok(before == after == report["image"]["sha256"], f"{name}: nothing written to the "
           f"image (sha256 {before[:16]}... before, after, and in the report)")
    mechs = report["mechanisms"]
    tap.ok(list(mechs) == list(IMAGE_MECHANISMS) and all("label" in m for m in mechs.values()),
           f"{name}: every mechanism has what the guest had in play",
           json.dumps({k: m.get("label") for k, m in mechs.items()}))
    measured = [m for m in mechs.values() if m["consumers"]]
    for consumer, what in (("openssl-RAND_bytes", "OpenSSL's default DRBG"),
                           ("python-random", "Python's random, seeded once"),
                           ("go-math-rand-v2", "Go's math/rand/v2 (seeded once)")):
        # a clone where it drew nothing after resume (a stalled process) shows nothing
        figures = {k: m["consumers"].get(consumer) for k, m in mechs.items() if m["consumers"]}
        judged = [c for c in figures.values() if c and c["complete"]]
        tap.ok(measured and len(judged) >= 1 and all(c["shared"] > 0 for c in judged),
               f"{name}: {what} repeats other clones' outputs with every mechanism (" +
               ", ".join(f"{k} {c['shared']}/{c['after_resume']}" +
                         ("" if c["complete"] else " not drawing in every clone")
                         if c else f"{k} -" for k, c in figures.items()) + ")")
    tap.ok(mechs["vmgenid"]["in_play"] and not mechs["leak"]["in_play"] and
           "without the leak feature" in mechs["leak"]["label"],
           f"{name}: Debian's kernel binds vmgenid ({mechs['vmgenid']['label']}) and has "
           f"no leak queues ({mechs['leak']['label']})")
    page = page_checks(tap, name, os.path.join(out, "index.html"), report["verdict"])
    names = list(report["libraries"])
    with open(os.path.join(out, "libraries.svg")) as f:
        panels = library_panels(f.read(), names)
    rows = re.findall(r"<tr><td>([^<]+?)(?: \(not judged\))?</td><td>", page)
    tap.ok(len(names) >= 10 and panels == names and set(names) <= set(rows),
           f"{name}: a chart panel and a table row per library ({len(panels)} panels of "
           f"{len(names)} consumers)", f"panels {panels}, rows {rows}")


def bad_arguments(tap, out, kernel):
    """Bad arguments: status 3 (no verdict; argparse's own 2 would read as 'unsafe'), a
    message naming the argument, no report written and no guest booted (in seconds)."""
    script = os.path.join(TOP, "scripts", "audit.py")
    cases = (("--clones 1", ["--kernel", kernel, "--clones", "1"], "--clones"),
             ("a kernel that does not exist", ["--kernel", out + "/no-such-bzImage"],
              "no such kernel"),
             ("a file that is not a bzImage", ["--kernel", script], "not an x86 bzImage"),
             ("no --kernel", [], "--kernel"))
    refused(tap, "audit", script, out, cases)


def refused(tap, who, script, out, cases):
    """Each (what, arguments, the words the error must hold): status 3, the error names
    it, no report written."""
    for what, args, named in cases:
        r = subprocess.run([script, *args, "--out", out], capture_output=True, text=True,
                           timeout=120)
        tap.ok(r.returncode == 3 and named in r.stderr and not os.path.exists(
               os.path.join(out, "report.json")),
               f"{who} with {what}: status 3, the error names it, no report",
               f"status {r.returncode}: {r.stderr[-500:]}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    p.add_argument("--tap", required=True)
    p.add_argument("--clones", type=int, default=2)
    p.add_argument("--userspace", help="the user-space suite's figures, for the first "
                   "kernel's report")
    p.add_argument("--image", metavar="RAW=LEVEL", help="also audit this disk image")
    p.add_argument("--qemu-img", help="the qemu-img that makes the image's qcow2")
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
        check_one(tap, os.path.abspath(os.path.join(a.out, str(i))), kernel, level, a.clones,
                  a.userspace if i == 0 else None)
    if a.image:
        raw, _, level = a.image.rpartition("=")
        if not raw or level.lstrip("!") not in ("safe", "racy", "unsafe") or not a.qemu_img:
            p.error(f"--image {a.image}: want RAW=[!]safe|racy|unsafe, and --qemu-img")
        print("# the image audit", flush=True)
        check_image(tap, os.path.abspath(os.path.join(a.out, "image")), os.path.abspath(raw),
                    level, a.clones, a.qemu_img)
    with open(a.tap, "w") as f:
        f.write(f"TAP version 13\n1..{len(tap.lines)}\n" + "\n".join(tap.lines) + "\n")
    return 0 if all(line.startswith("ok") for line in tap.lines) else 1


if __name__ == "__main__":
    sys.exit(main())
