#!/usr/bin/env python3
"""guest-test.py - boot the reseed-lab guest once, run guest tests, report TAP.

usage: guest-test.py [options] TEST[,TEST...]

Boots the row's bzImage (build/linux-ROW) with its initramfs (build/guest-ROW) and the kernel command
line 'tests=TEST,...', waits for the guest to power off, and turns the console into TAP:
one line per kselftest case (named PROGRAM.CASE), one line per program for its exit
status, and one line saying that the kernel log is free of splats (lockdep, sleeping in
atomic context, KFENCE, WARNING, BUG).  With --kunit, the KUnit results printed at boot
are reported too.  The exit status is 0 only when every line is 'ok'.  A guest that
hangs is killed at --timeout and the test that was running is named.
"""

import argparse
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vmharness as vm  # noqa: E402

RESULT = re.compile(r"^(\s*)(not ok|ok)\s+\d+\s+(?:-\s+)?(.*?)\s*$")
TS = re.compile(r"^\[\s*\d+\.\d+\]\s?")


class Tap:
    def __init__(self, out):
        self.lines = []
        self.out = out

    def add(self, ok, name, directive=""):
        line = f"{'ok' if ok else 'not ok'} {len(self.lines) + 1} - {name}{directive}"
        self.lines.append(line)
        print(line, flush=True)

    def failed(self):
        return sum(1 for l in self.lines if l.startswith("not ok"))

    def write(self):
        if self.out:
            os.makedirs(os.path.dirname(os.path.abspath(self.out)), exist_ok=True)
            with open(self.out, "w") as f:
                f.write(f"TAP version 13\n1..{len(self.lines)}\n")
                f.write("\n".join(self.lines) + "\n")


def strip_ts(line):
    return TS.sub("", line)


def kunit_results(console, tap):
    """Report the KUnit cases printed before user space started."""
    head = console.split(vm.USERSPACE_UP)[0]
    suites = {}
    found = 0
    for raw in head.splitlines():
        line = strip_ts(raw)
        m = re.match(r"^(\s*)# Subtest: (\S+)", line)
        if m:
            suites[len(m.group(1))] = m.group(2)
            continue
        m = RESULT.match(line)
        if not m:
            continue
        indent, verdict, rest = len(m.group(1)), m.group(2), m.group(3)
        name, _, directive = rest.partition("#")
        if indent == 0:
            if verdict == "not ok":
                tap.add(False, f"kunit.{name.strip()}")
                found += 1
            continue
        suite = suites.get(indent, "?")
        skip = directive.strip().upper().startswith("SKIP")
        tap.add(verdict == "ok", f"kunit.{suite}.{name.strip()}",
                f" # {directive.strip()}" if skip else "")
        found += 1
    if not found:
        tap.add(False, "kunit: results on the console",
                "" if "KTAP" in head or "# Subtest" in head else " (no KUnit output at boot)")


def test_results(console, names, tap, hung):
    """Report each program's kselftest cases and exit status."""
    for name in names:
        begin = f"# reseed-lab: begin {name}"
        if begin not in console:
            tap.add(False, f"{name}: did not start" + (" (guest hung earlier)" if hung else ""))
            continue
        body = console.split(begin, 1)[1]
        end = re.search(rf"^# reseed-lab: end {re.escape(name)} rc=(\d+)", body, re.M)
        if end:
            body = body[:end.start()]
        cases = 0
        running = ""
        for raw in body.splitlines():
            line = strip_ts(raw)
            r = re.match(r"^#\s+RUN\s+(\S+)", line)
            if r:
                running = r.group(1).rstrip(".")
                continue
            m = RESULT.match(line)
            if not m or m.group(1):
                continue
            case, _, directive = m.group(3).partition("#")
            # 6.1's harness prints 'ok N # SKIP reason' without the case's name
            case = case.strip() or running
            d = directive.strip()
            skip = d.upper().startswith("SKIP")
            tap.add(m.group(2) == "ok", f"{name}.{case.strip()}", f" # {d}" if skip else "")
            cases += 1
        if end is None:
            tap.add(False, f"{name}: hung (killed at the timeout)" if hung
                    else f"{name}: did not finish")
        else:
            rc = int(end.group(1))
            tap.add(rc == 0 and cases > 0,
                    f"{name}: exit status {rc}, {cases} cases"
                    + ("" if cases else " (no TAP from the test)"))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    p.add_argument("tests", help="comma-separated test names (programs in /tests)")
    p.add_argument("--kernel", default=vm.KERNEL)
    p.add_argument("--initrd", default=vm.INITRD)
    p.add_argument("--timeout", type=float, default=300)
    p.add_argument("--tap", help="also write the TAP to this file")
    p.add_argument("--kunit", action="store_true", help="report KUnit results too")
    p.add_argument("--no-splat-check", action="store_true",
                   help="for kernels that are not ours (peers, differential runs)")
    p.add_argument("--name", default="guest-test", help="run directory under build/run")
    p.add_argument("--append", default="", help="more kernel command line")
    p.add_argument("--device", action="append", default=None,
                   help="QEMU -device (repeatable; default virtio-rng-pci)")
    p.add_argument("--snp", action="store_true",
                   help="add the fake SEV-SNP responder (docs/snp-responder.md)")
    p.add_argument("--cpu", default="max")
    p.add_argument("--raw", action="store_true",
                   help="programs that print figures, not TAP (benchmarks): show their "
                   "output; each passes when it exits 0")
    a = p.parse_args()

    names = [t for t in a.tests.split(",") if t]
    devices = a.device if a.device is not None else ["virtio-rng-pci,id=rng0"]
    if a.snp:
        devices = devices + [vm.snp_responder()]
    tap = Tap(a.tap)
    print(f"# {vm.accel_line()}", flush=True)
    g = vm.Guest(a.name, append=f"tests={','.join(names)} {a.append}", kernel=a.kernel,
                 initrd=a.initrd, devices=devices, cpu=a.cpu, qmp=False, kunit=a.kunit)
    t0 = time.monotonic()
    g.start()
    hung = False
    first_tap = None
    while g.alive():
        if first_tap is None and "\nTAP version" in g.read_console():
            first_tap = time.monotonic() - t0
        if time.monotonic() - t0 > a.timeout:
            hung = True
            break
        time.sleep(0.02)
    g.kill()
    elapsed = time.monotonic() - t0
    console = g.read_console()

    first = re.search(r"^(?:\[[^\]]*\]\s*)?(?:TAP version|ok 1|not ok 1)", console, re.M)
    up = console.find(vm.USERSPACE_UP)
    tap_at = f"after {first_tap:.2f}s" if first_tap is not None else "never"
    print(f"# boot to user space: {'reached' if up >= 0 else 'NOT reached'}; first TAP line "
          f"{tap_at}; run time {elapsed:.1f}s ({g.accel.upper()})", flush=True)

    if a.kunit:
        kunit_results(console, tap)
    if a.raw:
        for name in names:
            m = re.search(rf"^# reseed-lab: begin {re.escape(name)}\r?\n(.*?)"
                          rf"^# reseed-lab: end {re.escape(name)} rc=(\d+)", console, re.M | re.S)
            for line in (m.group(1) if m else "").splitlines():
                print(f"   {line.rstrip()}")
            tap.add(bool(m) and m.group(2) == "0",
                    f"{name}: exit status {m.group(2) if m else 'none (did not finish)'}")
    else:
        test_results(console, names, tap, hung)
    if not a.no_splat_check:
        found = vm.splats(console)
        tap.add(not found, "guest kernel log: no splat (lockdep, atomic sleep, KFENCE, WARNING, BUG)")
        for s in found[:3]:
            for line in s.splitlines():
                print(f"#   | {line}")
    tap.write()

    if tap.failed() or hung:
        if hung:
            print(f"# guest hung: killed after {a.timeout:.0f}s", flush=True)
        print(f"# last console lines ({g.console}):")
        for line in g.console_tail(30).splitlines():
            print(f"#   | {line}")
        if first is None and up < 0:
            print(f"# QEMU said: {g.stderr().strip()[:500]}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
