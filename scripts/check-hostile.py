#!/usr/bin/env python3
"""check-hostile.py - a hostile host against the guest kernel, as TAP.

usage: check-hostile.py RESULTS_DIR [--only leak,storm,snp]

The devices' fault injection (off by default, never migrated; docs/hostile-host.md)
makes QEMU break the protocols on purpose, and the guest must survive it: no splat
(lockdep, KASAN or KFENCE report, WARNING, BUG), what it must refuse refused, and an RNG
epoch that never goes back or repeats.

  leak   virtio-rng x-leak-fault=used-len, zero-fill, both-queues, wrong-queue: the agent
         of snapshot-scenarios/ runs while the host declares leaks (QMP entropy-leak,
         the VM stopped around each, as savevm does).  A leak the driver can see moves
         the epoch atomically (final - N <= 1); wrong-queue corrupts the other queue's
         used ring, which the guest's virtio core must refuse (the queue is broken, the
         guest goes on).  RESULTS_DIR/hostile-leak.tap
  storm  virtio-rng x-leak-storm=STORM_HZ: guest-tests/leak_storm calls getrandom() for
         3 s under the storm and in a boot without it; each call bounded, the epoch never
         repeats, and the rate under the storm is printed as a share of the rate without.
         RESULTS_DIR/hostile-storm.tap
  snp    sev-snp-responder x-fault=wrong-seqno, bad-tag, no-response, oversize-report,
         bad-status: guest-tests/sev_hostile, one boot each.  RESULTS_DIR/hostile-snp.tap
"""

import argparse
import importlib.util
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import vmharness as vm  # noqa: E402


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


gt = _load("guest_test", os.path.join(HERE, "guest-test.py"))
lib = _load("scenario_lib", os.path.join(TOP, "snapshot-scenarios", "scenario_lib.py"))

LEAK_FAULTS = ("used-len", "zero-fill", "both-queues", "wrong-queue")
SNP_FAULTS = ("wrong-seqno", "bad-tag", "no-response", "oversize-report", "bad-status")
LEAKS = 5
STORM_HZ = 10000
STORM_SECONDS = 3        # leak_storm's default run time
# What the storm may cost: the getrandom() loop time lost to it, per epoch move the guest
# sees (each is a CRNG reseed, and the leaks' interrupts come with it).  Measured under
# TCG: 140-530 us (6.1, 6.12), 470 us with KASAN.  The share of the rate without the
# storm depends on how many leaks the guest sees, and is printed.
STORM_MAX_US_PER_MOVE = 2000
STORM_LINE = re.compile(r"# leak_storm: calls=(\d+) seconds=([\d.]+) per_second=(\d+) "
                        r"epoch_moves=(\d+) slowest_us=(\d+)")
# What the guest's virtio core says when a device returns an id it never made available
BAD_RING = re.compile(r"leakq\.\d:id \d+ (is not a head|out of range)")


class QuietTap(gt.Tap):
    """The lines of one program, collected to be added to the part's TAP under a prefix."""

    def __init__(self):
        super().__init__(None)

    def add(self, ok, name, directive=""):
        self.lines.append((ok, name, directive))


def add_program(tap, console, program, prefix):
    sub = QuietTap()
    gt.test_results(console, [program], sub, False)
    for ok, name, directive in sub.lines:
        tap.add(ok, f"{prefix}: {name}", directive)


def splat_check(tap, console, what):
    found = vm.splats(console)
    tap.add(not found, f"{what}: guest kernel log: no splat")
    for s in found[:3]:
        for line in s.splitlines():
            print(f"#   | {line}")


def wait_event(a, start, timeout=30):
    """The agent's first event line after console offset start, once the agent watches
    the epoch again.  Unlike lib.Agent.wait_event it takes any epoch in the 'spinning'
    line: with both-queues the driver's re-arm is a second leak, and the epoch may move
    again before the agent reads it."""
    deadline = time.monotonic() + timeout
    while not (m := lib.EVENT.search(a.g.read_console(), start)):
        if time.monotonic() > deadline or not a.g.alive():
            raise lib.Failed(f"{a.name}: no event line after {timeout}s")
        time.sleep(0.02)
    a.g.wait_console(r"# scenario: spinning epoch=", timeout, m.end())
    return {"final": int(m.group(2)), "old": int(m.group(3), 16), "new": int(m.group(4), 16)}


def leak_fault(fault, tap, leaks=LEAKS):
    """One boot with x-leak-fault=fault; leaks declared while the agent spins."""
    what = f"leak fault {fault}"
    a = lib.Agent(f"hostile-{fault}", rng_opts=f",x-leak-fault={fault}")
    try:
        a.boot()
        if not a.has_epoch:
            tap.add(True, what, " # SKIP the guest kernel has no RNG epoch")
            return
        a.wait_spinning()
        first = a.page()["epoch"]
        worst = 0
        for i in range(leaks if fault != "wrong-queue" else 1):
            n = lib.stop_spinning(a)
            mark = a.g.console_size()
            a.g.qmp("entropy-leak")
            a.g.qmp("cont")
            ev = wait_event(a, mark)
            worst = max(worst, lib.atomic(ev, n, f"{what}, leak {i + 1}"))
        detail = f"every leak moved the epoch, max final-N={worst}"
        if fault == "wrong-queue":
            # The device performed the copy-on-leak (the epoch moved) but returned it
            # on the other ring: the guest must refuse that ring and go on.
            m = a.g.wait_console(BAD_RING.pattern, 30)
            s0 = a.page()["spins"]
            time.sleep(1)
            s1 = a.page()["spins"]
            lib.check(s1 > s0, f"{what}: user space stopped after the broken ring")
            # What a second leak does now that a leak queue is broken: printed only.
            before = a.page()["epoch"]
            a.g.qmp("entropy-leak")
            time.sleep(1)
            after = a.page()["epoch"]
            detail += (f"; the guest refused the ring ('{m.group(0)}') and went on; a second "
                       f"leak {'moved' if after != before else 'did not move'} the epoch")
        console = a.g.read_console()
        news = [int(m.group(4), 16) for m in lib.EVENT.finditer(console)]
        lib.check(first not in news and len(set(news)) == len(news),
                  f"{what}: an epoch value came back: {first:#x} then {[hex(v) for v in news]}")
        lib.check(a.g.alive(), f"{what}: QEMU ended")
        tap.add(True, f"{what}: {detail}; {len(news)} epoch values, none repeated")
    except (lib.Failed, vm.Timeout) as e:
        tap.add(False, f"{what}: {e}")
        a.g.report_failure(what)
    finally:
        a.kill()
    splat_check(tap, a.g.read_console(), what)


def boot_program(name, program, devices, append="", timeout=180):
    """Boot the guest with one guest-tests program; return (console, the last
    x-leak-events read while it ran)."""
    g = vm.Guest(name, append=f"tests={program} {append}".strip(), devices=devices)
    g.start()
    events = None
    deadline = time.monotonic() + timeout
    while g.alive() and vm.ALL_DONE not in g.read_console():
        if time.monotonic() > deadline:
            break
        try:
            events = g.qmp("qom-get", path="/machine/peripheral/rng0/virtio-backend",
                           property="x-leak-events")
        except Exception:      # the guest powered off in the meantime
            break
        time.sleep(0.5)
    g.kill()
    return g.read_console(), events


def storm(tap):
    rates = {}
    for label, dev in (("without", "virtio-rng-pci,id=rng0"),
                       ("storm", f"virtio-rng-pci,id=rng0,x-leak-storm={STORM_HZ}")):
        console, events = boot_program(f"hostile-storm-{label}", "leak_storm", [dev])
        add_program(tap, console, "leak_storm", f"{label} x-leak-storm")
        splat_check(tap, console, f"{label} x-leak-storm")
        m = STORM_LINE.search(console)
        if m:
            rates[label] = (int(m.group(3)), int(m.group(4)), int(m.group(5)), events)
            print(f"# {label}: {m.group(0)[2:]}; host x-leak-events={events}", flush=True)
    if len(rates) != 2:
        tap.add(False, "x-leak-storm: the rates of both boots (leak_storm printed none)")
        return
    (storm_rate, moves, slowest, events), base = rates["storm"], rates["without"][0]
    share = storm_rate / max(base, 1)
    # The time the storm took from the loop, per epoch move it caused (a reseed each)
    lost_us = 1e6 * STORM_SECONDS * (1 - share) / max(moves, 1)
    tap.add(lost_us <= STORM_MAX_US_PER_MOVE and moves > 0,
            f"x-leak-storm={STORM_HZ}: getrandom(32) {storm_rate}/s against {base}/s "
            f"without ({100 * share:.0f} %); the epoch moved {moves} times in "
            f"{STORM_SECONDS} s, {lost_us:.0f} us of the loop per move (at most "
            f"{STORM_MAX_US_PER_MOVE}); slowest call {slowest} us; {events} leaks declared")


def snp(tap):
    for fault in SNP_FAULTS:
        devices = ["virtio-rng-pci,id=rng0", vm.snp_responder(f",x-fault={fault}")]
        console, _ = boot_program(f"hostile-snp-{fault}", "sev_hostile", devices,
                                  append=f"snp_fault={fault}")
        add_program(tap, console, "sev_hostile", f"x-fault={fault}")
        splat_check(tap, console, f"x-fault={fault}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    p.add_argument("results")
    p.add_argument("--only", default="leak,storm,snp")
    p.add_argument("--faults", default=",".join(LEAK_FAULTS),
                   help="the leak part's faults (default: all)")
    p.add_argument("--leaks", type=int, default=LEAKS,
                   help=f"leaks declared per fault (default {LEAKS})")
    a = p.parse_args()
    print(f"# {vm.accel_line()}", flush=True)
    failed = 0
    for part in a.only.split(","):
        tap = gt.Tap(os.path.join(a.results, f"hostile-{part}.tap"))
        if part == "leak":
            for fault in a.faults.split(","):
                if fault not in LEAK_FAULTS:
                    p.error(f"--faults: no fault '{fault}' ({', '.join(LEAK_FAULTS)})")
                leak_fault(fault, tap, a.leaks)
        elif part == "storm":
            storm(tap)
        elif part == "snp":
            snp(tap)
        else:
            p.error(f"--only: no part '{part}' (leak, storm, snp)")
        tap.write()
        failed += tap.failed()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
