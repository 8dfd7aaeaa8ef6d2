#!/usr/bin/env python3
"""run.py - snapshot and clone scenarios: is the RNG epoch atomic, do clones diverge?

usage: run.py [--kernel BZIMAGE] [--only N[,N...]] [--tap FILE]
       run.py [--kernel BZIMAGE] --demo

Each scenario boots the guest (our kernel and initramfs, or --kernel for an operator's
own kernel) with guest-tests/scenario_agent, drives QEMU over QMP (stop, savevm, loadvm,
migrate to a file, clones started with -incoming from that file, cont) and asserts, from
guest memory read while the VM is stopped and from what the agent prints afterwards:

  1 savevm, the original resumes       final - N <= 1 spin (N read at the snapshot)
  2 loadvm of that snapshot            final - N <= 1
  3 8 clones from one migration file   each atomic, epoch moved, outputs pairwise different
  4 as 3, RDRAND/RDSEED hidden         still pairwise different
  5 100 savevm/loadvm cycles           epoch moves every time, never repeats, no splat
  6 negative control, leak=off         the clones' user-space generator outputs REPEAT
  7 peer: vmgenid without our feature  getrandom outputs two clones share after resume,
                                       next to the same figure with our feature

Where the kernel has no RNG epoch (RNDEPOCH fails), scenarios 1-5 report 'not
applicable' (TAP SKIP with that reason) and 6-7 still measure what the kernel does.
Ends with one table: scenario, VMs, result, spin figure, time.
"""

import argparse
import itertools
import os
import re
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "scripts"))
import vmharness as vm  # noqa: E402

CLONES = 8
CYCLES = 100
PEER_PAIRS = 2
READY = r"^# scenario: ready page_gpa=(0x[0-9a-f]+) mode=(\w+) epoch=(\w+)"
EVENT = re.compile(r"^# scenario: event n=(\d+) final_spins=(\d+) old_epoch=(0x[0-9a-f]+) "
                   r"new_epoch=(0x[0-9a-f]+) reseeds=(\d+) getrandom=([0-9a-f]+) "
                   r"prng=([0-9a-f]+)", re.M)
PAGE = struct.Struct("<QQIIQ")          # struct agent_page
AGENT_MAGIC = 0x72657365656421


class NotApplicable(Exception):
    pass


class Failed(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failed(what)


class Agent:
    """One guest running scenario_agent, and what we know of its page."""

    def __init__(self, name, mode="epoch", kernel=vm.KERNEL, leak=True, cpu="max",
                 disk=False, extra_devices=(), incoming=None):
        rng = "virtio-rng-pci,id=rng0" + ("" if leak else ",leak=off")
        # The device's leak trace (held, performed, rejected, events) goes to qemu.stderr
        # in the run directory: a few lines per leak, and what explains a failure.
        extra = ["-trace", "enable=virtio_rng_leak*"]
        if incoming:
            extra += ["-S", "-incoming", f"exec:cat {incoming}"]
        self.name = name
        self.disk = vm.make_qcow2(os.path.join(vm.RUNDIR, f"{name}.qcow2")) if disk else None
        self.g = vm.Guest(name, append=f"tests=scenario_agent scenario={mode}",
                          kernel=kernel, cpu=cpu, devices=(rng,) + tuple(extra_devices),
                          drive=self.disk, extra=extra, serial_input=True)
        self.gpa = None
        self.mode = mode

    def boot(self, timeout=120):
        self.g.start()
        m = self.g.wait_console(READY, timeout)
        self.gpa = int(m.group(1), 16)
        self.mode = m.group(2)
        self.has_epoch = m.group(3) == "present"
        return self

    def page(self):
        magic, spins, epoch, mode, events = PAGE.unpack(self.g.read_phys(self.gpa, PAGE.size))
        check(magic == AGENT_MAGIC, f"{self.name}: no agent page at {self.gpa:#x}")
        return {"spins": spins, "epoch": epoch, "events": events}

    def wait_spinning(self, timeout=60, start=0):
        self.g.wait_console(r"^# scenario: (spinning|waiting|streaming)", timeout, start)

    def wait_event(self, start, timeout=60):
        """The agent's next event line after console offset start.  In epoch mode, also
        wait until it watches the new epoch: a VM stopped between the two lines would
        take its next snapshot before the agent re-read the epoch, and the agent would
        then wait for a change that has already happened."""
        m = EVENT.search(self.g.read_console(), start)
        deadline = time.monotonic() + timeout
        while not m:
            if time.monotonic() > deadline or not self.g.alive():
                raise Failed(f"{self.name}: no event line after {timeout}s")
            time.sleep(0.02)
            m = EVENT.search(self.g.read_console(), start)
        if self.mode == "epoch":
            self.g.wait_console(rf"^# scenario: spinning epoch={m.group(4)}", timeout, m.end())
        return {"n": int(m.group(1)), "final": int(m.group(2)), "old": int(m.group(3), 16),
                "new": int(m.group(4), 16), "getrandom": m.group(6), "prng": m.group(7),
                "end": m.end()}

    def wait_migrated(self, timeout=60):
        deadline = time.monotonic() + timeout
        while self.g.status() == "inmigrate":
            if time.monotonic() > deadline:
                raise Failed(f"{self.name}: incoming migration not done after {timeout}s")
            time.sleep(0.02)

    def kill(self):
        self.g.kill()


def save_to_file(src, path, timeout=60):
    """Stop src, migrate its state to path; return N, the spin count at the snapshot."""
    if src.g.status() == "running":
        src.g.qmp("stop")
    n = src.page()["spins"]
    if os.path.exists(path):
        os.unlink(path)
    src.g.qmp("migrate", uri=f"exec:cat > {path}")
    deadline = time.monotonic() + timeout
    while True:
        st = src.g.qmp("query-migrate").get("status")
        if st == "completed":
            return n
        if st in ("failed", "cancelled") or time.monotonic() > deadline:
            raise Failed(f"migration to {path}: {st}")
        time.sleep(0.02)


def require_epoch(agent):
    if not agent.has_epoch:
        raise NotApplicable("the guest kernel has no RNG epoch (RNDEPOCH failed)")


def atomic(ev, n, who):
    check(ev["final"] >= n, f"{who}: final spins {ev['final']} < N {n} read at the snapshot")
    check(ev["final"] - n <= 1,
          f"{who}: {ev['final'] - n} spins ran after the snapshot before the epoch moved")
    check(ev["new"] != ev["old"], f"{who}: the epoch did not change")
    return ev["final"] - n


def pairwise_different(values, what):
    for (i, a), (j, b) in itertools.combinations(enumerate(values), 2):
        check(a != b, f"clones {i} and {j} produced the same {what}: {a[:16]}...")


# -- the scenarios: each returns (vms, spin figure text, detail lines)

def s1_savevm(ctx):
    a = Agent("s1", disk=True, kernel=ctx.kernel).boot()
    ctx.keep(a)
    require_epoch(a)
    a.wait_spinning()
    time.sleep(0.3)
    a.g.qmp("stop")
    n = a.page()["spins"]
    a.g.hmp("savevm s1")
    mark = a.g.console_size()
    a.g.qmp("cont")
    ev = a.wait_event(mark)
    d = atomic(ev, n, "original after savevm")
    ctx.s1 = (a, n, ev)
    return 1, f"final-N={d} (N={n})", [f"epoch {ev['old']:#010x} -> {ev['new']:#010x}"]


def s2_loadvm(ctx):
    if not getattr(ctx, "s1", None):
        raise NotApplicable("needs the snapshot of scenario 1")
    a, n, _ = ctx.s1
    a.g.qmp("stop")
    t0 = time.monotonic()
    a.g.hmp("loadvm s1")
    loadvm = time.monotonic() - t0
    restored = a.page()["spins"]
    check(restored == n, f"restored spin count {restored} != {n} saved in the snapshot")
    mark = a.g.console_size()
    a.g.qmp("cont")
    ev = a.wait_event(mark)
    d = atomic(ev, n, "VM after loadvm")
    backend = "/machine/peripheral/rng0/virtio-backend"
    ns = a.g.qmp("qom-get", path=backend, property="x-leak-last-ns")
    reqs = a.g.qmp("qom-get", path=backend, property="x-leak-last-requests")
    return 1, f"final-N={d} (N={n})", [
        f"epoch {ev['old']:#010x} -> {ev['new']:#010x}",
        f"leak handler {ns / 1000:.1f} us for {reqs} requests; loadvm {loadvm * 1000:.1f} ms; "
        f"share {100 * ns / 1e9 / loadvm:.3f} %"]


def clones(ctx, tag, cpu="max", leak=True, mode="epoch", want_epoch=True):
    """Boot a source, save it to a file, start CLONES clones from it; return events."""
    src = Agent(f"{tag}-src", kernel=ctx.kernel, cpu=cpu, leak=leak, mode=mode).boot()
    try:
        if want_epoch:
            require_epoch(src)
        src.wait_spinning()
        time.sleep(0.3)
        path = os.path.join(vm.RUNDIR, f"{tag}.migration")
        n = save_to_file(src, path)
    finally:
        src.kill()
    events = []
    for i in range(CLONES):
        c = Agent(f"{tag}-clone{i}", kernel=ctx.kernel, cpu=cpu, leak=leak, mode=mode,
                  incoming=path)
        c.g.start()
        try:
            c.wait_migrated()
            c.gpa = src.gpa       # same memory: the agent page is where the source had it
            check(c.page()["spins"] == n, f"clone {i}: spin count differs from the source")
            mark = c.g.console_size()
            c.g.qmp("cont")
            if mode == "line":
                c.g.send_command("go\n")
            ev = c.wait_event(mark)
            ev["n_snapshot"] = n
            events.append(ev)
        except Exception:
            c.g.report_failure(f"clone {i}")
            raise
        finally:
            c.kill()
    os.unlink(path)
    return n, events


class Ctx:
    def __init__(self, kernel):
        self.kernel = kernel
        self._keep = []

    def keep(self, agent):
        self._keep.append(agent)

    def close(self):
        for a in self._keep:
            a.kill()


def clone_scenario(ctx, tag, cpu):
    n, evs = clones(ctx, tag, cpu=cpu)
    worst = max(atomic(ev, n, f"clone {i}") for i, ev in enumerate(evs))
    pairwise_different([e["getrandom"] for e in evs], "getrandom() output")
    pairwise_different([e["prng"] for e in evs], "user-space generator output")
    ctx.last_clones = (n, evs)
    return CLONES + 1, f"max final-N={worst} (N={n})", [
        f"clone {i}: epoch {e['old']:#010x} -> {e['new']:#010x}, getrandom {e['getrandom'][:16]}..,"
        f" generator {e['prng'][:16]}.." for i, e in enumerate(evs)]


def s3_clones(ctx):
    return clone_scenario(ctx, "s3", "max")


def s4_clones_no_rdrand(ctx):
    return clone_scenario(ctx, "s4", "max,-rdrand,-rdseed")


def s5_cycles(ctx):
    a = Agent("s5", disk=True, kernel=ctx.kernel).boot()
    try:
        require_epoch(a)
        a.wait_spinning()
        timeline = [a.page()["epoch"]]
        for k in range(CYCLES):
            a.g.qmp("stop")
            a.g.hmp("savevm c")
            mark = a.g.console_size()
            a.g.qmp("cont")
            ev = a.wait_event(mark)
            check(ev["new"] != ev["old"], f"cycle {k}: savevm did not move the epoch")
            a.g.qmp("stop")
            a.g.hmp("loadvm c")
            mark = a.g.console_size()
            a.g.qmp("cont")
            ev = a.wait_event(mark)
            check(ev["old"] == timeline[-1],
                  f"cycle {k}: restored epoch {ev['old']:#x} is not the snapshot's")
            check(ev["new"] not in timeline,
                  f"cycle {k}: epoch {ev['new']:#x} repeats an earlier value of this run")
            timeline.append(ev["new"])
        check(a.g.status() == "running", "QEMU does not report the VM running")
        found = vm.splats(a.g.read_console())
        check(not found, "kernel splat on the console:\n" + (found[0] if found else ""))
    finally:
        a.kill()
    return 1, f"{2 * CYCLES} leaks, {len(set(timeline))} distinct epochs", []


def s6_negative(ctx):
    n, evs = clones(ctx, "s6", leak=False, mode="line", want_epoch=False)
    same_prng = len({e["prng"] for e in evs}) == 1
    same_kernel = len({e["getrandom"] for e in evs}) == 1
    check(same_prng, "without the leak feature the clones' generator outputs should repeat "
          "each other, and they did not: the scenarios could not tell a broken device")
    return CLONES + 1, "n/a", [
        f"all {CLONES} clones printed generator output {evs[0]['prng'][:16]}..",
        f"getrandom() outputs: {'all identical' if same_kernel else 'differ'}"]


def stream_window(ctx, tag, leak, extra_devices=(), pairs=1, dump=4096):
    """Two clones stream getrandom(8): how many outputs after resume do they share?"""
    src = Agent(f"{tag}-src", kernel=ctx.kernel, leak=leak, mode="stream",
                extra_devices=extra_devices).boot()
    ctx.has_epoch = src.has_epoch
    try:
        src.wait_spinning()
        time.sleep(0.5)
        path = os.path.join(vm.RUNDIR, f"{tag}.migration")
        n = save_to_file(src, path)
    finally:
        src.kill()
    dumps, prngs = [], []
    for i in range(2 * pairs):
        c = Agent(f"{tag}-clone{i}", kernel=ctx.kernel, leak=leak, mode="stream",
                  extra_devices=extra_devices, incoming=path)
        c.g.start()
        try:
            c.wait_migrated()
            c.gpa = src.gpa
            c.g.qmp("cont")
            time.sleep(1.0)
            mark = c.g.console_size()
            c.g.send_command(f"dump {n} {dump}\n")
            c.g.wait_console(r"^# scenario: dump end", 60, mark)
            text = c.g.read_console()[mark:]
            vals = []
            for line in re.findall(r"^# scenario: dump (.*?)\r?$", text, re.M):
                if line.strip() != "end":
                    vals += line.split()
            mark = c.g.console_size()
            c.g.send_command("event\n")
            prngs.append(c.wait_event(mark)["prng"])
            dumps.append(vals)
        except Exception:
            c.g.report_failure(f"stream clone {i}")
            raise
        finally:
            c.kill()
    os.unlink(path)
    shared = []
    for a, b in zip(dumps[0::2], dumps[1::2]):
        k = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        shared.append(k)
    repeated = all(x == y for x, y in zip(prngs[0::2], prngs[1::2]))
    return shared, repeated


def s7_peer(ctx):
    """Measure, not assert, the peer; assert only that our feature shares nothing."""
    none, none_rep = stream_window(ctx, "s7-none", leak=False, pairs=PEER_PAIRS)
    peer, peer_rep = stream_window(ctx, "s7-vmgenid", leak=False,
                                   extra_devices=("vmgenid,guid=auto",), pairs=PEER_PAIRS)
    ours, _ = stream_window(ctx, "s7-leak", leak=True, pairs=PEER_PAIRS)
    ctx.peer = (none, peer, ours)
    fmt = lambda v: "/".join(str(x) for x in v)  # noqa: E731
    if ctx.has_epoch:
        check(max(ours) == 0, f"with the leak feature two clones still shared {max(ours)} "
              "getrandom() outputs after resume")
        us = "(reseed before the first output after resume)"
    else:
        us = "(this kernel has no RNG epoch: the device's leak requests go unused)"
    return 6 * PEER_PAIRS, f"shared outputs: vmgenid {fmt(peer)}, leak queues {fmt(ours)}", [
        f"getrandom(8) outputs two clones shared after resume ({PEER_PAIRS} pairs each):",
        f"  no protection     {fmt(none)}",
        f"  vmgenid (peer)    {fmt(peer)}   (reseed from an ACPI notification, after vCPUs run)",
        f"  leak queues (us)  {fmt(ours)}   {us}",
        f"unguarded user-space generator repeated across clones: no protection "
        f"{'yes' if none_rep else 'no'}, vmgenid {'yes' if peer_rep else 'no'} "
        "(vmgenid gives user space no signal)"]


SCENARIOS = [
    (1, "savevm, original resumes", s1_savevm),
    (2, "loadvm of that snapshot", s2_loadvm),
    (3, f"{CLONES} clones from one file", s3_clones),
    (4, f"{CLONES} clones, no RDRAND/RDSEED", s4_clones_no_rdrand),
    (5, f"{CYCLES} savevm/loadvm cycles", s5_cycles),
    (6, "negative control: leak=off", s6_negative),
    (7, "peer: vmgenid vs leak queues", s7_peer),
]


def demo(ctx):
    """Scenario 3 told for a newcomer, with the leak=off control next to it."""
    say = lambda text="": print(text, flush=True)  # noqa: E731
    say("What happens to randomness when a VM is cloned")
    say("===============================================")
    say(f"We boot a VM (our Linux 6.1 in our QEMU 7.2, {vm.accel_line()}).")
    say("A program in it maps the kernel's RNG epoch page, seeds a user-space random")
    say("generator from getrandom(), and spins, counting, while the epoch stays the same.")
    say(f"Then we pause the VM, save its whole state to one file, and start {CLONES} clones")
    say("from that file, one after the other, as a cloud would.")
    say()
    try:
        n, evs = clones(ctx, "demo", cpu="max")
    except NotApplicable as e:
        say(f"This kernel cannot show it: {e}.")
        return 1
    say(f"At the snapshot the program had counted {n} spins. In every clone, QEMU performed")
    say("the guest driver's held leak requests before the clone ran one instruction: it")
    say("wrote fresh random bytes into the guest and moved the epoch.")
    say()
    say("clone  epoch before -> after     spins after resume  getrandom()        generator")
    for i, e in enumerate(evs):
        say(f"  {i}    {e['old']:#010x} -> {e['new']:#010x}   {e['final'] - n:>6}"
            f"              {e['getrandom'][:16]}   {e['prng'][:16]}")
    distinct_k = len({e["getrandom"] for e in evs})
    distinct_u = len({e["prng"] for e in evs})
    worst = max(e["final"] - n for e in evs)
    say()
    say(f"The program noticed the new epoch after at most {worst} more spin(s): the change")
    say("was already in memory when the clone resumed. It reseeded at once, so the clones")
    say(f"produced {distinct_k} different kernel outputs and {distinct_u} different "
        f"user-space generator outputs out of {CLONES}.")
    say()
    say("And without the feature? The same run with '-device virtio-rng-pci,leak=off':")
    n, evs = clones(ctx, "demo-off", leak=False, mode="line", want_epoch=False)
    same_u = len({e["prng"] for e in evs}) == 1
    same_k = len({e["getrandom"] for e in evs}) == 1
    say(f"  {CLONES} clones, user-space generator output: "
        f"{'all identical, ' + evs[0]['prng'][:16] if same_u else 'different'}")
    say(f"  {CLONES} clones, kernel getrandom() output:   "
        f"{'all identical, ' + evs[0]['getrandom'][:16] if same_k else 'different'}")
    if same_u:
        say(f"That is {CLONES} VMs handing out the same 'random' nonces and keys.")
    ok = distinct_k == CLONES and distinct_u == CLONES and worst <= 1
    say()
    say("Demo: " + ("as promised." if ok else "NOT as promised: see the figures above."))
    return 0 if ok else 1


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    p.add_argument("--kernel", default=vm.KERNEL,
                   help="guest kernel to test (default: ours); e.g. an operator's own")
    p.add_argument("--only", help="comma-separated scenario numbers")
    p.add_argument("--tap", help="also write TAP to this file")
    p.add_argument("--demo", action="store_true", help="tell scenario 3 for a newcomer")
    a = p.parse_args()
    if a.demo:
        ctx = Ctx(os.path.abspath(a.kernel))
        try:
            return demo(ctx)
        finally:
            ctx.close()

    only = {int(x) for x in a.only.split(",")} if a.only else None
    todo = [s for s in SCENARIOS if not only or s[0] in only]
    print(f"# {vm.accel_line()}")
    print(f"# guest kernel: {a.kernel}")
    print(f"1..{len(todo)}", flush=True)
    ctx = Ctx(os.path.abspath(a.kernel))
    rows, tap, failed = [], [], 0
    for i, (num, title, fn) in enumerate(todo, 1):
        t0 = time.monotonic()
        try:
            vms, figure, details = fn(ctx)
            result, line = "pass", f"ok {i} - scenario:{num} {title}"
        except NotApplicable as e:
            vms, figure, details = 0, "-", []
            result, line = "n/a", f"ok {i} - scenario:{num} {title} # SKIP not applicable: {e}"
        except Exception as e:  # noqa: BLE001 - any error is this scenario's failure
            vms, figure, details = 0, "-", [f"{type(e).__name__}: {e}"]
            result, line = "FAIL", f"not ok {i} - scenario:{num} {title}"
            failed += 1
        secs = time.monotonic() - t0
        for d in details:
            print(f"#   {d}")
        print(line, flush=True)
        tap.append(line)
        rows.append((num, title, vms, result, figure, secs))
    ctx.close()

    print("#")
    print(f"# {'scenario':<38} {'VMs':>3}  {'result':<6} {'spin figure':<40} time")
    for num, title, vms, result, figure, secs in rows:
        print(f"# {num} {title:<36} {vms:>3}  {result:<6} {figure:<40} {secs:5.1f}s")
    print(f"# total {sum(r[5] for r in rows):.1f}s")
    if a.tap:
        with open(a.tap, "w") as f:
            f.write(f"TAP version 13\n1..{len(tap)}\n" + "\n".join(tap) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
