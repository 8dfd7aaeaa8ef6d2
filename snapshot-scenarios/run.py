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
  8 the driver, from device traces     a leak before DRIVER_OK, then leaks while running
                                       and while stopped: the driver's requests (held,
                                       performed, queues, epoch values) as the spec says
  9 attestation (sev-snp-responder)    configfs-tsm reports keep working across savevm/
                                       loadvm and in clones: sev-guest's sequence number
                                       (guest memory) and the responder's come back
                                       together; the IV reuse this implies is reported
 10 fill-on-leak bytes alone           under -icount, without RDRAND: clones given the
                                       same fill bytes (same -seed) repeat each other,
                                       clones given different ones diverge
 11 vDSO getrandom across clones       2 and 8 clones of one saved state calling the
                                       vDSO's getrandom() in a loop share no output
                                       after resume, and a caller that re-checks the
                                       epoch keeps none from before; measured next to
                                       Debian's 6.12 with and without vmgenid, leak=off
                                       (asserted to share) and in-process loadvm
 12 a snapshot between a leak and      the one window the protocol leaves: a VM saved
    the driver's re-arm                after a leak was performed and before its driver
                                       re-armed holds no request, so its clones learn of
                                       their own leak only when the driver re-arms (the
                                       re-arm on the queue that is not active completes
                                       at once).  The leak queues' interrupt is delayed
                                       (x-leak-notify-delay) to save the VM in that
                                       window; the getrandom() outputs the clones share
                                       after resume are measured per delay, and the
                                       clones must diverge once the re-arm completes
 14 migration between the rows'       (6.1 row) a VM on QEMU 7.2 saved to a file and
    QEMUs                              restored by QEMU 10.0, then saved there and
                                       restored by 7.2 (pc-i440fx-7.2, leak=on): each
                                       restore atomic, the held fill and copy performed
                                       by the version that did not save them
 15 packed rings                       (packed=on,indirect_desc=off) a clone of a saved
                                       VM, then 6 leaks: each atomic, a new epoch every
                                       time (a held request's descriptor count migrates)
 16 vmclock, a leak during a live      (6.12 row) the counter a leak moved on the source
    migration                          while the migration ran is the destination's

Where the kernel has no RNG epoch (RNDEPOCH fails), scenarios 1-5, 8 and 10 report 'not
applicable' (TAP SKIP with that reason) and 6-7 and 11 still measure what the kernel does;
where it has no configfs-tsm provider for the responder, 9 is not applicable, and where
its vDSO has no getrandom() (before 6.11, so the 6.1 row), 11 is not applicable.  14
runs on the 6.1 row only: make check builds QEMU 10.0 (the 6.12 row) first.
Ends with one table: scenario, VMs, result, spin figure, time.
"""

import argparse
import subprocess
import contextlib
import errno
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
VMGENID = ("vmgenid,guid=auto",)
UPSTREAM_KERNEL = os.path.join(vm.BUILD, "upstream-kernel", "vmlinuz")   # Debian's 6.12
# A whole line only, as EVENT below: the console is read while the UART still sends it,
# and a cut "epoch=pres" must not read as absent (nor a cut page_gpa as an address).
READY = r"^# scenario: ready page_gpa=(0x[0-9a-f]+) mode=(\w+) epoch=(\w+)(?=\r?\n)"
# Not anchored at line starts: after a loadvm the UART's restored state can glue an agent
# line to the end of the previous one in the console log.
EVENT = re.compile(r"# scenario: event n=(\d+) final_spins=(\d+) old_epoch=(0x[0-9a-f]+) "
                   r"new_epoch=(0x[0-9a-f]+) reseeds=(\d+) getrandom=([0-9a-f]{64}) "
                   r"prng=([0-9a-f]{64}) vm_counter=(\d+)->(\d+)"
                   # A whole line only: the console is read while the UART still sends it
                   # (a cut "vm_counter=49->5" must not read as 5).  A kernel message can
                   # start right after it, before the agent's newline.
                   r"(?=\r?\n|\[ *\d+\.\d+\])")
KERNEL_LINE = re.compile(r"\[ *\d+\.\d+\] [^\n]*\n")     # a printk line on the console
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
                 disk=False, extra_devices=(), incoming=None, trace=(), qemu_args=(),
                 rng_opts="", smp=1, rng=True, qemu_dir=vm.QEMU_DIR, machine="pc"):
        rng = ("virtio-rng-pci,id=rng0" + ("" if leak else ",leak=off") + rng_opts,) \
            if rng else ()
        # The device's leak trace (held, performed, rejected, events) goes to qemu.stderr
        # in the run directory: a few lines per leak, and what explains a failure.
        extra = ["-trace", "enable=virtio_rng_leak*"]
        for t in trace:
            extra += ["-trace", f"enable={t}"]
        extra += list(qemu_args)
        if incoming:
            extra += ["-S", "-incoming", f"exec:cat {incoming}"]
        self.name = name
        self.disk = vm.make_qcow2(os.path.join(vm.RUNDIR, f"{name}.qcow2")) if disk else None
        # More than one vCPU: the agent on the last, the interrupts on the others.
        append = f"tests=scenario_agent scenario={mode}" + \
            (f" scenario_cpu={smp - 1}" if smp > 1 else "")
        self.g = vm.Guest(name, append=append, kernel=kernel, cpu=cpu, smp=smp,
                          devices=rng + tuple(extra_devices), drive=self.disk, extra=extra,
                          serial_input=True, machine=machine,
                          qemu=os.path.join(qemu_dir, "qemu-system-x86_64"),
                          firmware=os.path.join(qemu_dir, "pc-bios"))
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
        m = self.g.wait_console(r"^# scenario: (spinning|waiting|streaming|"
                                r"not applicable: ([^\r\n]*)(?=\r?\n))", timeout, start)
        if m.group(2):
            raise NotApplicable(m.group(2).strip())

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
            # Any value: with a VM generation counter the kernel may move the page's value
            # only after the agent printed the event (at its getrandom()), so the agent
            # watches a later value than the event's new one.
            self.g.wait_console(r"# scenario: spinning epoch=0x[0-9a-f]+", timeout, m.end())
        return {"n": int(m.group(1)), "final": int(m.group(2)), "old": int(m.group(3), 16),
                "new": int(m.group(4), 16), "getrandom": m.group(6), "prng": m.group(7),
                "vm_old": int(m.group(8)), "vm_new": int(m.group(9)),
                "end": m.end()}

    def wait_migrated(self, timeout=60):
        deadline = time.monotonic() + timeout
        while self.g.status() == "inmigrate":
            if time.monotonic() > deadline:
                raise Failed(f"{self.name}: incoming migration not done after {timeout}s")
            time.sleep(0.02)

    def kill(self):
        self.g.kill()


def stop_spinning(a, tries=100):
    """Stop the VM while the agent spins on the epoch it last printed; return the spins
    of that stop.

    A leak declared while the agent is between seeing the epoch move and reading it
    again (printing its event line) moves the epoch before the agent reads the value it
    then waits on: the leak is in that value, and no event line ever tells of it.  With
    both-queues the re-arm's second leak moves the epoch shortly after the first event
    line, so a stop right after that line's 'spinning' can land there.  The agent is in
    its loop when, across a short run between two stops, its page kept the same epoch
    and its spin count went up."""
    a.g.qmp("stop")
    before = a.page()
    for _ in range(tries):
        a.g.qmp("cont")
        time.sleep(0.02)
        a.g.qmp("stop")
        now = a.page()
        if now["epoch"] == before["epoch"] and now["spins"] > before["spins"]:
            return now["spins"]
        before = now
    raise Failed(f"{a.name}: the agent was never found spinning in {tries} stops")


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
    check(ev["new"] != ev["old"] or ev.get("vm_new") != ev.get("vm_old"),
          f"{who}: the epoch did not change (neither its value nor its VM counter)")
    return ev["final"] - n


def no_splat(g, who=""):
    """Fail when the guest's console shows a kernel splat (vmharness.SPLAT); who names the
    guest when several run."""
    found = vm.splats(g.read_console())
    check(not found, (f"{who}: " if who else "") + "kernel splat on the console:\n" +
          (found[0] if found else ""))


def shared_count(values):
    """How many of values another one equals."""
    return sum(1 for v in values if values.count(v) > 1)


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


def saved_source(ctx, tag, settle, want_epoch=False, **agent):
    """Boot a source agent, let it run for settle seconds, save it to a migration file
    and end it.  Returns (source, N at the snapshot, path of the file)."""
    src = Agent(f"{tag}-src", **{"kernel": ctx.kernel, **agent}).boot()
    ctx.has_epoch = src.has_epoch
    try:
        if want_epoch:
            require_epoch(src)
        src.wait_spinning()
        time.sleep(settle)
        path = os.path.join(vm.RUNDIR, f"{tag}.migration")
        n = save_to_file(src, path)
    finally:
        src.kill()
    return src, n, path


@contextlib.contextmanager
def clone_of(ctx, tag, i, src, path, **agent):
    """Clone i, started with -incoming from path and paused until the caller's cont;
    on an error its QMP exchange, device trace and console are printed; always ended."""
    c = Agent(f"{tag}-clone{i}", incoming=path, **{"kernel": ctx.kernel, **agent})
    c.g.start()
    try:
        c.wait_migrated()
        c.gpa = src.gpa       # same memory: the agent page is where the source had it
        yield c
    except Exception:
        c.g.report_failure(f"{tag} clone {i}")
        raise
    finally:
        c.kill()


def clones(ctx, tag, count=CLONES, want_epoch=True, **agent):
    """Boot a source, save it to a file, start count clones from it; return N and their
    events.  agent: Agent's arguments (cpu, leak, mode, devices...) for all of them."""
    src, n, path = saved_source(ctx, tag, 0.3, want_epoch=want_epoch, **agent)
    events = [clone_event(ctx, tag, i, src, n, path, **agent) for i in range(count)]
    os.unlink(path)
    return n, events


def clone_event(ctx, tag, i, src, n, path, **agent):
    """Start clone i of src from path, let it run, return the agent's first event."""
    with clone_of(ctx, tag, i, src, path, **agent) as c:
        check(c.page()["spins"] == n, f"clone {i}: spin count differs from the source")
        mark = c.g.console_size()
        c.g.qmp("cont")
        if c.mode == "line":
            c.g.send_command("go\n")
        return c.wait_event(mark)


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
        no_splat(a.g)
    finally:
        a.kill()
    return 1, f"{2 * CYCLES} leaks, {len(set(timeline))} distinct epochs", []


def s6_negative(ctx):
    n, evs = clones(ctx, "s6", leak=False, mode="line", want_epoch=False)
    same_prng = len({e["prng"] for e in evs}) == 1
    same_kernel = len({e["getrandom"] for e in evs}) == 1
    check(same_prng, "without the leak feature the clones' generator outputs should repeat "
          "each other, and they did not: the scenarios could not tell a broken device; "
          "per clone: " + ", ".join(f"{i}: n={e['n']} {e['prng'][:16]}" for i, e in enumerate(evs)))
    return CLONES + 1, "n/a", [
        f"all {CLONES} clones printed generator output {evs[0]['prng'][:16]}..",
        f"getrandom() outputs: {'all identical' if same_kernel else 'differ'}"]


def read_stream(agent, ring, start, count):
    """Outputs start..start+count-1 of a streaming agent's ring ('raw' or 'guarded'),
    as 8-digit hex strings (the low 32 bits of each 8-byte output)."""
    mark = agent.g.console_size()
    agent.g.send_command(f"dump {start} {count} {ring}\n")
    m = agent.g.wait_console(r"# scenario: dump (end|refused.*|overrun.*)", 60, mark)
    check(m.group(1) == "end", f"{agent.name}: dump {m.group(1)}")
    # The kernel's console messages can land inside a line of the agent's: cut them out.
    text = KERNEL_LINE.sub("", agent.g.read_console()[mark:m.start()])
    values = [v for line in re.findall(rf"# scenario: dump {ring}((?: [0-9a-f]{{8}})+)", text)
              for v in line.split()]
    check(len(values) == count, f"{agent.name}: {len(values)} outputs of ring {ring}, "
          f"want {count}")
    return values


def stream_clones(ctx, tag, count, rings=("raw",), run=1.0, dump=4096, **agent):
    """Save one source streaming a generator's outputs (scenario=stream or vstream), start
    count clones of it in turn, let each run for run seconds; return N, the index in
    flight at the snapshot, per clone its outputs N..N+dump of each ring and one output of
    its unguarded user-space generator ('prng'), and whether the guest had the epoch."""
    agent.setdefault("mode", "stream")
    src, n, path = saved_source(ctx, tag, 0.5, **agent)
    streams = []
    for i in range(count):
        with clone_of(ctx, tag, i, src, path, **agent) as c:
            c.g.qmp("cont")
            time.sleep(run)
            stream = {r: read_stream(c, r, n, dump + 1) for r in rings}
            mark = c.g.console_size()
            c.g.send_command("event\n")
            stream["prng"] = c.wait_event(mark)["prng"]
            streams.append(stream)
    os.unlink(path)
    return n, streams, src.has_epoch


IN_PLAY = re.compile(r"# scenario: in-play virtio_rng=(\S+) leak=(\S+) vmgenid=(\S+) "
                     r"vmclock=(\S+)")


def in_play(tag):
    """What the source guest of a saved_source(tag) reported in play (agent_common.h's
    print_in_play()): the clones are copies of it."""
    try:
        with open(os.path.join(vm.RUNDIR, f"{tag}-src", "console.log"),
                  encoding="latin-1") as f:
            m = IN_PLAY.search(f.read())
    except OSError:
        return None
    if not m:
        return None
    return dict(zip(("virtio_rng", "leak", "vmgenid", "vmclock"), m.groups()))


def mechanism_label(key, play):
    """Whether the mechanism key (none, vmgenid, vmclock, leak) was really in play when
    QEMU offered it, and in words what the guest had: a device alone is no mechanism."""
    if play is None:
        return False, "the agent did not report (kernel without the in-play line?)"
    if key == "none":
        return True, "no device"
    if key == "vmgenid":
        ok = play["vmgenid"] == "bound"
        return ok, ("vmgenid driver bound" if ok else
                    f"device offered, vmgenid driver {play['vmgenid']}: the device alone")
    if key == "vmclock":
        ok = play["vmclock"] == "counter"
        return ok, ("ptp_vmclock bound, vm_generation_counter mapped" if ok else
                    f"device offered, ptp_vmclock: {play['vmclock']}: the device alone")
    ok = play["virtio_rng"] == "bound" and play["leak"] == "yes"
    if ok:
        return True, "virtio_rng bound, VIRTIO_RNG_F_LEAK negotiated"
    if play["virtio_rng"] == "bound":
        return False, "virtio_rng bound without the leak feature: a plain hwrng"
    return False, f"device offered, virtio_rng {play['virtio_rng']}: the device alone"


def common_prefix(a, b):
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def s7_peer(ctx):
    """Measure, not assert, the peer; assert only that our feature shares nothing."""
    def pairs(tag, **agent):
        """Outputs after resume that each pair of clones shares, and whether every pair's
        unguarded user-space generator repeated.  From N + 1: the output at N may have
        been generated before the snapshot, by the call in flight (the same allowance as
        final - N <= 1)."""
        _, streams, _ = stream_clones(ctx, tag, 2 * PEER_PAIRS, **agent)
        two = list(zip(streams[0::2], streams[1::2]))
        return ([common_prefix(a["raw"][1:], b["raw"][1:]) for a, b in two],
                all(a["prng"] == b["prng"] for a, b in two))

    none, none_rep = pairs("s7-none", leak=False)
    peer, peer_rep = pairs("s7-vmgenid", leak=False, extra_devices=VMGENID)
    ours, _ = pairs("s7-leak", leak=True)
    # Labelled by what the guest had in play, not by what QEMU offered: with an operator's
    # kernel (--kernel) the driver may not be there, and the column measures a device alone.
    peer_play, peer_label = mechanism_label("vmgenid", in_play("s7-vmgenid"))
    ours_play, ours_label = mechanism_label("leak", in_play("s7-leak"))
    fmt = lambda v: "/".join(str(x) for x in v)  # noqa: E731
    if ctx.has_epoch:
        check(ours_play, f"our kernel, and the leak queues not in play: {ours_label}")
        check(max(ours) == 0, f"with the leak feature two clones still shared {max(ours)} "
              "getrandom() outputs after resume")
        us = "(reseed before the first output after resume)"
    else:
        us = "(this kernel has no RNG epoch: the device's leak requests go unused)"
    tag = lambda play: "" if play else " (not in play)"  # noqa: E731
    return 6 * PEER_PAIRS, (f"shared outputs: vmgenid{tag(peer_play)} {fmt(peer)}, leak "
                            f"queues{tag(ours_play)} {fmt(ours)}"), [
        f"getrandom(8) outputs two clones shared after resume ({PEER_PAIRS} pairs each):",
        f"  no protection     {fmt(none)}",
        f"  vmgenid (peer)    {fmt(peer)}   (reseed from an ACPI notification, after vCPUs run)"
        f"; in play: {peer_label}",
        f"  leak queues (us)  {fmt(ours)}   {us}; in play: {ours_label}",
        f"unguarded user-space generator repeated across clones: no protection "
        f"{'yes' if none_rep else 'no'}, vmgenid {'yes' if peer_rep else 'no'} "
        "(vmgenid gives user space no signal)"]


# -- 8: the Linux driver as the device sees it.  QEMU traces what the driver makes
# available on each queue and what the device does with it; the scenario checks the
# driver's side of the spec (docs/spec/rng-leak.tex, RNG-LEAK-R*) from that trace.

TRACE_EVENTS = ("virtqueue_pop", "virtio_queue_notify", "virtio_rng_leak*")
TRACE_PREFIX = r"^(?:\d+@\d+\.\d+:)?"
TRACE = [(kind, re.compile(TRACE_PREFIX + rx)) for kind, rx in (
    ("notify", r"virtio_queue_notify vdev \S+ n (?P<q>\d+) vq (?P<vq>\S+)"),
    ("pop", r"virtqueue_pop vq (?P<vq>\S+) elem \S+ in_num (?P<inn>\d+) out_num (?P<outn>\d+)"),
    ("held", r"virtio_rng_leak_held rng \S+ leakq\.(?P<q>\d) request (?P<head>\d+) held, "
             r"(?P<len>\d+) bytes"),
    ("performed", r"virtio_rng_leak_performed rng \S+ leakq\.(?P<q>\d) request (?P<head>\d+) "
                  r"performed: (?P<op>fill|copy)-on-leak of (?P<len>\d+) bytes"),
    ("rejected", r"virtio_rng_leak_rejected rng \S+ leakq\.(?P<q>\d) request (?P<head>\d+) "
                 r"rejected: (?P<why>.*)"),
    ("leak", r"virtio_rng_leak rng \S+ leak: (?P<n>\d+) requests performed, "
             r"leakq\.(?P<active>\d) active"),
    ("early", r"virtio_rng_leak_before_driver_ok "),
    ("event", r"virtio_rng_leak_event "),
)]
S8_LEAKS = (False, True, False, True)       # running, stopped, running, stopped


def parse_trace(text):
    events = []
    for line in text.splitlines():
        for kind, rx in TRACE:
            m = rx.match(line)
            if m:
                events.append((kind, {k: (v if k in ("vq", "op", "why") else int(v))
                                      for k, v in m.groupdict().items()}))
                break
    return events


def check_driver_trace(events):
    """The driver's side of the spec, from the device's trace (see s8_driver).  Returns
    the copy-on-leak requests performed, in order, as (queue, i-th copy on that queue),
    the kicks of the leak queues and the leaks that found the driver ready."""
    queue_of = {}                            # vq pointer -> queue index
    requestq_pops = 0
    drv = 1                                  # the queue the driver should consider active
    switch = False                           # it saw a used buffer of that queue
    batch = None                             # [queue, [[head, op or None, held]]]: a kick
    batches, held, copies, leaks = [], {1: {}, 2: {}}, [], []
    per_queue = {1: 0, 2: 0}
    early = False                            # a leak before the driver was ready
    for kind, ev in events:
        if kind == "notify":
            queue_of[ev["vq"]] = ev["q"]
            if ev["q"] == 0:
                continue
            if switch:
                drv, switch = 3 - drv, False
            check(ev["q"] == drv, f"RNG-LEAK-R9: the driver made requests available on "
                  f"leakq.{ev['q']} while it should consider leakq.{drv} active")
            batch = [ev["q"], []]
            batches.append(batch)
        elif kind == "pop":
            q = queue_of.get(ev["vq"])
            check(q is not None, f"a request popped from vq {ev['vq']}, never notified")
            if q == 0:
                requestq_pops += 1
                check(ev["outn"] == 0, "RNG-LEAK-R2: a device-readable buffer on the requestq")
        elif kind == "rejected":
            raise Failed(f"RNG-LEAK-R4: the device rejected a request of the driver on "
                         f"leakq.{ev['q']}: {ev['why']}")
        elif kind == "held":
            check(batch is not None and batch[0] == ev["q"],
                  f"leakq.{ev['q']}: a request held outside a kick of that queue")
            held[ev["q"]][ev["head"]] = len(batch[1])
            batch[1].append([ev["head"], None, True])
        elif kind == "performed":
            q = ev["q"]
            if ev["head"] in held[q]:
                pos = held[q].pop(ev["head"])
                owner = next(b for b in reversed(batches) if b[0] == q and
                             pos < len(b[1]) and b[1][pos][0] == ev["head"])
                owner[1][pos][1] = ev["op"]
            else:                            # made available on the inactive queue
                check(batch is not None and batch[0] == q,
                      f"leakq.{q}: a request performed outside a kick of that queue")
                batch[1].append([ev["head"], ev["op"], False])
            if ev["op"] == "copy":
                per_queue[q] += 1
                copies.append((q, per_queue[q] - 1))
            if q == drv:
                switch = True
        elif kind == "event":                # a leak is declared: no kick runs on
            batch = None
        elif kind == "early":
            early = True
        elif kind == "leak":
            if not early:                    # an early leak performs nothing
                leaks.append(ev)
            early = False
    check(requestq_pops > 0, "no request on the requestq: the trace is incomplete")
    check(batches and batches[0][0] == 1, "RNG-LEAK-R7: the driver's first requests were "
          "not on leakq.1")
    for i, (q, reqs) in enumerate(batches):
        ops = [r[1] for r in reqs]
        done = [op for op in ops if op]
        check(len(reqs) == 2 and done == ["fill", "copy"][:len(done)] and
              (len(done) == 2 or i == len(batches) - 1),
              f"kick {i} on leakq.{q}: requests {ops}, want one fill-on-leak then one "
              "copy-on-leak")
    for i, (a, b) in enumerate(zip(batches, batches[1:])):
        check(b[0] != a[0], f"RNG-LEAK-R12: kicks {i} and {i + 1} both on leakq.{a[0]}")
    check(all(ev["n"] == 2 for ev in leaks),
          "RNG-LEAK-R10: a leak found fewer than 2 requests held: "
          + ", ".join(str(ev["n"]) for ev in leaks))
    return copies, batches, leaks


class TracedAgent(Agent):
    """The agent, with the device's queues traced to a file, and a leak declared before
    the guest runs.  The guest's virtio core resets the device before the driver
    probes, and a reset forgets an early leak (RNG-LEAK-D1): the driver must start on
    leakq.1 all the same, where its first requests are held."""

    def __init__(self, name, kernel):
        self.name, self.mode, self.gpa, self.disk = name, "epoch", None, None
        self.trace = os.path.join(vm.RUNDIR, name, "trace.log")
        extra = ["-S"]
        for event in TRACE_EVENTS[:-1]:
            extra += ["-trace", f"enable={event}"]
        extra += ["-trace", f"enable={TRACE_EVENTS[-1]},file={self.trace}"]
        # ioeventfd=off: every kick is traced (virtio_queue_notify), with its queue.
        # iommu_platform=on: the driver maps its requests through the DMA API (direct,
        # no bounce), whose debug checks (CONFIG_DMA_API_DEBUG) then see every leak.
        self.g = vm.Guest(name, append="tests=scenario_agent scenario=epoch", kernel=kernel,
                          devices=("virtio-rng-pci,id=rng0,ioeventfd=off,"
                                   "iommu_platform=on,disable-legacy=on",), extra=extra,
                          serial_input=True)

    def boot(self, timeout=120):
        self.g.start()
        self.g.qmp("entropy-leak")
        self.g.qmp("cont")
        m = self.g.wait_console(READY, timeout)
        self.gpa, self.mode = int(m.group(1), 16), m.group(2)
        self.has_epoch = m.group(3) == "present"
        return self

    def events(self):
        try:
            with open(self.trace, errors="replace") as f:
                return parse_trace(f.read())
        except FileNotFoundError:
            return []

    def wait_held(self, count, timeout=60):
        """Wait until the device has held count requests since boot."""
        deadline = time.monotonic() + timeout
        while True:
            events = self.events()
            bad = [ev for k, ev in events if k == "rejected"]
            check(not bad, "RNG-LEAK-R4: the device rejected a request of the driver: "
                  + "; ".join(f"leakq.{ev['q']}: {ev['why']}" for ev in bad))
            if sum(1 for k, _ in events if k == "held") >= count:
                return
            if time.monotonic() > deadline or not self.g.alive():
                raise Failed(f"{self.name}: the driver did not re-arm: fewer than {count} "
                             f"requests held after {timeout}s (RNG-LEAK-R10)")
            time.sleep(0.05)


def s8_driver(ctx):
    a = TracedAgent("s8", ctx.kernel)
    try:
        a.boot()
        require_epoch(a)
        m = a.g.wait_console(r"^# scenario: spinning epoch=(0x[0-9a-f]+)(?=\r?\n)", 60)
        epochs = [int(m.group(1), 16)]
        a.wait_held(2)
        worst = 0
        for k, stopped in enumerate(S8_LEAKS):
            mark = a.g.console_size()
            if stopped:
                a.g.qmp("stop")
                n = a.page()["spins"]
                a.g.qmp("entropy-leak")
                a.g.qmp("cont")
            else:
                a.g.qmp("entropy-leak")
            ev = a.wait_event(mark)
            if stopped:
                worst = max(worst, atomic(ev, n, f"leak {k} declared while stopped"))
            check(ev["old"] == epochs[-1], f"leak {k}: the agent saw {ev['old']:#x} before, "
                  f"not {epochs[-1]:#x}")
            epochs.append(ev["new"])
            a.wait_held(2 * (k + 2))
        a.g.qmp("stop")
        events = a.events()
        copies, batches, leaks = check_driver_trace(events)
        check(any(k == "early" for k, _ in events),
              "the leak declared before the guest ran was not one before DRIVER_OK")
        check(all(r[2] for r in batches[0][1]), "the driver's first requests were performed at "
              "once: the guest's reset did not forget the leak before it")
        check(len(leaks) == len(S8_LEAKS), f"{len(leaks)} leaks performed, "
              f"want {len(S8_LEAKS)}")
        # Each copy-on-leak wrote the value the driver placed in its source when it made
        # the request available: odd counters from leakq.1, even ones from leakq.2, in
        # order (RNG-LEAK-R5), so every epoch is new.  Before the first, no notifier
        # had written the page: 0.
        ident = epochs[-1] >> 24
        want = [0] + [(ident << 24) | (q + 2 * i) for q, i in copies]
        check(epochs == want, "epoch values " + " ".join(f"{e:#010x}" for e in epochs)
              + ", want " + " ".join(f"{e:#010x}" for e in want))
        err = [line for line in a.g.stderr().splitlines() if "virtio" in line]
        check(not err, "QEMU reported a virtio error: " + "; ".join(err[:3]))
        no_splat(a.g)
    except Exception:
        a.g.report_failure("scenario 8")
        raise
    finally:
        a.kill()
    return 1, f"{len(leaks)} leaks, {sum(len(b[1]) for b in batches)} requests, " \
        f"final-N<={worst}", [
        "kicks: " + " ".join(f"leakq.{q}:{'+'.join(x[1] or 'held' for x in r)}"
                             for q, r in batches),
        "epochs: " + " ".join(f"{e:#010x}" for e in epochs)]


ATTEST = r"# scenario: attest tag={} rc=(\d+) \((.*?)\) epoch=(0x[0-9a-f]+)"
PSP_REQUEST = re.compile(r"snp_responder_request exit_code 0x[0-9a-f]+ type (\d+) vmpck (\d+) "
                         r"seqno (\d+) exitinfo2 0x([0-9a-f]+)")
SNP_AGENT = {"mode": "attest", "extra_devices": (vm.snp_responder(),),
             "trace": ("snp_responder_request",)}


def attest(agent, tag, timeout=60):
    """Have the agent get one attestation report; return the RNG epoch it saw."""
    mark = agent.g.console_size()
    agent.g.send_command(f"report {tag}\n")
    m = agent.g.wait_console(ATTEST.format(re.escape(tag)), timeout, mark)
    if int(m.group(1)) in (errno.ENOENT, errno.ENXIO):
        raise NotApplicable(f"no configfs-tsm provider in the guest kernel ({m.group(2)})")
    check(m.group(1) == "0", f"{agent.name}: report {tag} failed: {m.group(2)}")
    return int(m.group(3), 16)


def psp_seqnos(agent):
    """The sequence numbers the responder accepted, in order (from its trace)."""
    seqnos = []
    for m in PSP_REQUEST.finditer(agent.g.stderr()):
        check(int(m.group(4), 16) == 0, f"{agent.name}: the responder refused a request: "
              f"{m.group(0)}")
        seqnos.append(int(m.group(3)))
    return seqnos


FILL_CLONES = 4


def s10_fill_bytes(ctx):
    """What separates the clones: the device's fill-on-leak bytes, or anything else?
    Everything runs with -icount (instruction counting: the guest's clock, TSC and timer
    interrupts follow the instructions it ran, not host time) and without RDRAND/RDSEED.
    The fill-on-leak bytes come from QEMU's guest random numbers, which -seed makes a
    function of the seed; the virtio-rng request queue reads the host's /dev/urandom, so
    it differs between clones whatever the seed.  Clones with the same seed get the same
    fill bytes and must repeat each other; clones with different seeds must not."""
    agent = {"cpu": "max,-rdrand,-rdseed", "rng_opts": ",rng=hostrng"}
    base = ("-icount", "shift=0,sleep=off",
            "-object", "rng-random,id=hostrng,filename=/dev/urandom")
    src, n, path = saved_source(ctx, "s10", 0.3, want_epoch=True, qemu_args=base, **agent)
    out = {}
    for variant, seeds in (("same", [7] * FILL_CLONES), ("different", range(1, 1 + FILL_CLONES))):
        evs = [clone_event(ctx, f"s10-{variant}", i, src, n, path,
                           qemu_args=base + ("-seed", str(seed)), **agent)
               for i, seed in enumerate(seeds)]
        for i, ev in enumerate(evs):
            atomic(ev, n, f"{variant}-seed clone {i}")
        out[variant] = evs
    os.unlink(path)
    pairwise_different([e["getrandom"] for e in out["different"]], "getrandom() output")
    pairwise_different([e["prng"] for e in out["different"]], "generator output")
    same_k = {e["getrandom"] for e in out["same"]}
    same_u = {e["prng"] for e in out["same"]}
    check(len(same_k) == 1 and len(same_u) == 1,
          f"clones with the same fill bytes still differ ({len(same_k)} getrandom, "
          f"{len(same_u)} generator outputs of {FILL_CLONES}): something besides the "
          "fill-on-leak bytes separates them")
    return 1 + 2 * FILL_CLONES, "fill bytes alone decide", [
        f"same -seed, {FILL_CLONES} clones: getrandom {next(iter(same_k))[:16]}.. in all",
        f"different -seed, {FILL_CLONES} clones: {FILL_CLONES} distinct getrandom and "
        "generator outputs"]


def s9_attest(ctx):
    """sev-guest keeps its message sequence number in guest memory (the secrets page's OS
    area) and the PSP keeps its own; both must come back together from a snapshot, or the
    first request after loadvm is refused and sev-guest wipes its VMPCK for good."""
    a = Agent("s9", disk=True, kernel=ctx.kernel, **SNP_AGENT).boot()
    ctx.keep(a)
    a.wait_spinning()
    epoch_a = attest(a, "a")
    a.g.qmp("stop")
    a.g.hmp("savevm s9")
    a.g.qmp("cont")
    attest(a, "b")
    a.g.qmp("stop")
    a.g.hmp("loadvm s9")
    a.g.qmp("cont")
    epoch_c = attest(a, "c")
    attest(a, "d")
    seq = psp_seqnos(a)
    check(len(seq) == 4, f"the responder saw {len(seq)} requests for 4 reports: {seq}")
    details = [f"responder accepted sequence numbers {seq}"]
    if seq[2] == seq[1]:
        details.append(f"after loadvm the guest sent {seq[2]} again, with another message: "
                       "AES-GCM IV reuse under VMPCK0 (a real SNP guest cannot be "
                       "snapshotted like this)")
    if a.has_epoch:
        check(epoch_c != epoch_a, "the RNG epoch did not move across loadvm")
        details.append(f"RNG epoch {epoch_a:#010x} -> {epoch_c:#010x}: sev-guest could know")

    # Two clones of one saved state: each continues the same sequence.
    path = os.path.join(vm.RUNDIR, "s9.migration")
    save_to_file(a, path)
    a.kill()
    clone_seq = []
    for i in range(2):
        with clone_of(ctx, "s9", i, a, path, disk=True, **SNP_AGENT) as c:
            c.g.qmp("cont")
            attest(c, f"clone{i}")
            clone_seq.append(psp_seqnos(c))
    os.unlink(path)
    check(all(len(s) == 1 for s in clone_seq), f"clone requests: {clone_seq}")
    check(clone_seq[0] == clone_seq[1], f"clones used sequence numbers {clone_seq}")
    details.append(f"2 clones each got their report with sequence number {clone_seq[0][0]}")
    return 3, "4 reports across savevm/loadvm, 1 in each of 2 clones", details


# -- 11: getrandom() in the vDSO (6.11), what glibc 2.41 calls.  Each process keeps its
# own key in user memory and rekeys when its state is stale; with our kernel a state is
# keyed on the RNG epoch too, which the device writes before any vCPU runs (the vvar area
# maps the epoch page).  The agent streams the vDSO's outputs into two rings: 'raw', the first output of
# each index, and 'guarded', what a caller that re-reads the epoch after the call (and
# calls again when it moved) keeps.  Index N, in flight at the snapshot, is reported
# apart: it may have been generated, in part or whole, before the snapshot.
#
# Every VM here has two vCPUs, the agent on one and the interrupts on the other, as
# programs and devices are apart in real VMs.  On one vCPU under TCG, the interrupt that
# a restore leaves pending always runs before the agent's next instruction, and its
# handler's first random draw reseeds the crng (the epoch moved): that would hide a
# kernel whose vDSO does not learn of the leak before the vCPUs run.

VDSO_RINGS = ("raw", "guarded")
VDSO_DUMP = 4096
VDSO_SMP = 2


def vdso_clones(ctx, tag, count, mode="vstream", **agent):
    """count clones of one saved state streaming vDSO getrandom(8) (mode="stream": the
    syscall's): their outputs from N, and whether the guest had the epoch.  The host asks
    for the outputs right after cont: the agent is then still near N + 1, and they come
    from its own loop either way."""
    _, streams, has_epoch = stream_clones(ctx, tag, count, rings=VDSO_RINGS, run=0,
                                          dump=VDSO_DUMP, mode=mode, smp=VDSO_SMP,
                                          **agent)
    return streams, has_epoch


def vdso_loadvm(ctx, tag, **agent):
    """One QEMU process: savevm, the original resumes and streams; loadvm of that snapshot
    and it streams again.  The two timelines' outputs from N, like two clones'."""
    a = Agent(tag, disk=True, mode="vstream", smp=VDSO_SMP,
              **{"kernel": ctx.kernel, **agent}).boot()
    timelines = []
    try:
        a.wait_spinning()
        time.sleep(0.5)
        a.g.qmp("stop")
        n = a.page()["spins"]
        a.g.hmp(f"savevm {tag}")
        for restore in (False, True):
            if restore:
                a.g.qmp("stop")
                a.g.hmp(f"loadvm {tag}")
                check(a.page()["spins"] == n, f"{tag}: loadvm did not restore index {n}")
            a.g.qmp("cont")
            timelines.append({r: read_stream(a, r, n, VDSO_DUMP + 1) for r in VDSO_RINGS})
    except NotApplicable:
        raise
    except Exception:
        a.g.report_failure(tag)
        raise
    finally:
        a.kill()
    return timelines, a.has_epoch


def vdso_shared(streams):
    """From outputs N..N+K of two or more VMs: the longest run after resume (from N + 1)
    that two of them share, at how many indices after resume any two agree, how many VMs
    share their output at N with another, and, when the streams have a guarded ring, at
    how many indices from N (the one in flight included) any two guarded outputs agree."""
    def agreeing(columns):
        return sum(1 for col in columns if len(set(col)) < len(col))

    raw = list(zip(*(s["raw"] for s in streams)))
    f = {"run": max(common_prefix(a["raw"][1:], b["raw"][1:])
                    for a, b in itertools.combinations(streams, 2)),
         "indices": agreeing(raw[1:]),
         "in_flight": shared_count(raw[0])}
    if all("guarded" in s for s in streams):
        f["guarded"] = agreeing(zip(*(s["guarded"] for s in streams)))
    return f


def upstream_kernel_name():
    """Debian's prebuilt kernel, named by its package, or None when it was not fetched."""
    if not os.path.exists(UPSTREAM_KERNEL):
        return None
    try:
        with open(UPSTREAM_KERNEL + ".package") as f:
            return "Debian " + f.read().strip().replace("linux-image-", "").replace(
                "-unsigned", "")
    except OSError:
        return "Debian's prebuilt kernel"


def s11_vdso(ctx):
    ours = f"ours ({vm.ROW})" if ctx.kernel == os.path.abspath(vm.KERNEL) else "--kernel"
    debian = upstream_kernel_name()
    up = {"kernel": UPSTREAM_KERNEL, "leak": False}
    rows = []                   # mechanism, short name, kernel, VMs, figures, guard usable

    def measure(mechanism, short, kernel, vms, result):
        streams, has_epoch = result
        rows.append((mechanism, short, kernel, vms, len(streams), vdso_shared(streams),
                     has_epoch))
        return rows[-1][5], has_epoch

    # One saved state for both sets: the 2-clone figure is that of its first two clones.
    clones8 = vdso_clones(ctx, "s11-leak", CLONES, leak=True)
    two, has_epoch = measure("leak queues (us)", "us", ours, 2, (clones8[0][:2], clones8[1]))
    eight, _ = measure("leak queues (us)", f"us x{CLONES}", ours, CLONES, clones8)
    off, _ = measure("negative control: leak=off", "leak=off", ours, 2,
                     vdso_clones(ctx, "s11-off", 2, leak=False))
    if debian:
        measure("no protection", "none", debian, 2, vdso_clones(ctx, "s11-none", 2, **up))
        measure("vmgenid (peer)", "vmgenid", debian, 2,
                vdso_clones(ctx, "s11-vmgenid", 2, extra_devices=VMGENID, **up))
    loadvm, _ = measure("leak queues, in-process loadvm", "us loadvm", ours, 1,
                        vdso_loadvm(ctx, "s11-loadvm", leak=True))
    if debian:
        measure("vmgenid, in-process loadvm", "vmgenid loadvm", debian, 1,
                vdso_loadvm(ctx, "s11-loadvm-vmgenid", extra_devices=VMGENID, **up))

    table = [f"vDSO getrandom(8) outputs shared after resume, {VDSO_DUMP} sampled from N+1 "
             f"(N: the call in flight at the snapshot); {VDSO_SMP} vCPUs, the agent on one, "
             "the interrupts on the other; in-process loadvm compares the original's "
             "timeline after savevm with the restored one:",
             f"  {'mechanism':<31} {'kernel':<34} {'VMs':>3} {'longest run':>11} "
             f"{'indices':>7} {'in flight':>9} {'guarded':>7}"]
    for mechanism, _, kernel, vms, streams, f, guard in rows:
        in_flight = f"{f['in_flight']}/{streams}"
        table.append(f"  {mechanism:<31} {kernel:<34} {vms:>3} {f['run']:>11} "
                     f"{f['indices']:>7} {in_flight:>9} {f['guarded'] if guard else 'n/a':>7}")
    if not debian:
        table.append(f"  Debian's 6.12: not measured, {UPSTREAM_KERNEL} is missing "
                     "(make build/upstream-kernel/vmlinuz)")
    table += ["  longest run: outputs two VMs shared in a row; indices: at how many sampled "
              "indices two VMs agreed; in flight: VMs whose output N another VM has too;",
              "  guarded: indices from N on where two VMs agreed for a caller that re-reads "
              "the epoch after each call and calls again when it moved (n/a: no epoch)"]
    text = "\n".join(table)

    check(off["indices"] > 0, "with leak=off the clones' vDSO getrandom() outputs should "
          "repeat each other, and they did not: this scenario could not tell a broken "
          "device\n" + text)
    if has_epoch:
        for what, f in (("2 clones", two), (f"{CLONES} clones", eight),
                        ("savevm/loadvm in one process", loadvm)):
            check(f["indices"] == 0, f"leak queues, {what}: vDSO getrandom() outputs shared "
                  f"after resume at {f['indices']} indices (longest run {f['run']})\n" + text)
            check(f["guarded"] == 0, f"leak queues, {what}: the epoch-guarded caller kept "
                  f"a shared output at {f['guarded']} indices\n" + text)
    else:
        table.append("  (this kernel has no RNG epoch: nothing asserted for the leak queues)")
    figure = ", ".join(f"{short} {f['indices']}" for _, short, _, _, _, f, _ in rows)
    vms = 1 + CLONES + 3 + 1 + (3 + 3 + 1 if debian else 0)
    return vms, f"shared indices: {figure}", table


# -- 13: VMClock's vm_generation_counter as a source of the epoch.

# The clones are restores of a saved state started with -incoming, which QEMU cannot tell
# from a live migration: as management would, say so (the device's default, off, is for
# live migration, where the counter must stay).
VMCLOCK = ("vmclock,leak-on-migration=on",)
VMCLOCK_SETUPS = (("vmclock only", "vmclock", {"rng": False, "extra_devices": VMCLOCK}),
                  ("vmclock and virtio-rng", "both", {"extra_devices": VMCLOCK}))
# The vDSO clones without the device's notification: its GPE makes the driver reseed the
# crng, which also moves the vDSO's generation, soon after resume, and hides whether the
# vDSO itself saw the counter; without it nothing in the kernel reseeds for seconds.
VMCLOCK_QUIET = "vmclock,leak-on-migration=on,notification=off"
VMCLOCK_VDSO_CLONES = 8


def require_vmclock():
    devices = subprocess.run([vm.QEMU, "-device", "help"], capture_output=True, text=True)
    if '"vmclock"' not in devices.stdout:
        raise NotApplicable(f"this row's QEMU has no vmclock device ({vm.QEMU})")


def s13_vmclock(ctx):
    """Clones with the vmclock device alone and with virtio-rng too: the epoch moves
    before the first instruction (final - N <= 1), the getrandom() and guarded generator
    outputs differ in every pair of clones, and so do the vDSO's getrandom() outputs after
    resume (the vDSO reads the counter too; checked without the device's notification,
    which would make the kernel reseed and hide a vDSO that does not)."""
    require_vmclock()
    rows, vms = [], 0
    for name, short, agent in VMCLOCK_SETUPS:
        tag = f"s13-{short}"
        # With the leak queues the epoch page moves as well (scenario 11): 2 clones.
        vdso_count = VMCLOCK_VDSO_CLONES if short == "vmclock" else 2
        n, evs = clones(ctx, tag, **agent)
        with open(os.path.join(vm.RUNDIR, f"{tag}-src", "console.log")) as f:
            registered = f.read().count("VM generation counter moves the RNG epoch")
        check(registered == 1, f"{name}: the guest's vmclock driver did not register the "
              "counter")
        worst = max(atomic(ev, n, f"{name}, clone {i}") for i, ev in enumerate(evs))
        check(all(ev["vm_new"] == ev["vm_old"] + 1 for ev in evs),
              f"{name}: the VM counter did not move by one in every clone: " +
              ", ".join(f"{ev['vm_old']}->{ev['vm_new']}" for ev in evs))
        pairwise_different([e["getrandom"] for e in evs], f"{name}: getrandom() output")
        pairwise_different([e["prng"] for e in evs], f"{name}: guarded generator output")
        quiet = {**agent, "extra_devices": (VMCLOCK_QUIET,)}
        streams, _ = vdso_clones(ctx, f"{tag}-vdso", vdso_count, **quiet)
        vdso = vdso_shared(streams)
        check(vdso["indices"] == 0 and vdso["guarded"] == 0,
              f"{name}: vDSO getrandom() outputs shared after resume at {vdso['indices']} "
              f"indices (longest run {vdso['run']}), guarded {vdso['guarded']}")
        rows.append((name, worst, evs, vdso, vdso_count))
        vms += 2 + CLONES + vdso_count
    # The syscall's stream with the device alone, where nothing else would move the crng.
    quiet = {**VMCLOCK_SETUPS[0][2], "extra_devices": (VMCLOCK_QUIET,)}
    streams, _ = vdso_clones(ctx, "s13-vmclock-stream", VMCLOCK_VDSO_CLONES, mode="stream",
                             **quiet)
    syscall = vdso_shared(streams)
    check(syscall["indices"] == 0 and syscall["guarded"] == 0,
          f"{VMCLOCK_SETUPS[0][0]}: getrandom() syscall outputs shared after resume at "
          f"{syscall['indices']} indices, guarded {syscall['guarded']}")
    vms += 1 + VMCLOCK_VDSO_CLONES
    # What a counter with no entropy behind it gives without RDRAND/RDSEED: scenario 10's
    # method (-icount: the clock and TSC follow the instructions run), measured only.
    entropy = []
    for label, qargs in (("host time", ()), ("-icount", ("-icount", "shift=0,sleep=off"))):
        agent = {"rng": False, "extra_devices": VMCLOCK, "cpu": "max,-rdrand,-rdseed",
                 "qemu_args": qargs}
        tag = f"s13-nordrand-{'icount' if qargs else 'time'}"
        n, evs = clones(ctx, tag, count=FILL_CLONES, **agent)
        for i, ev in enumerate(evs):
            atomic(ev, n, f"vmclock only, no RDRAND ({label}), clone {i}")
        entropy.append((label, len({e["getrandom"] for e in evs}),
                        len({e["prng"] for e in evs})))
        vms += 1 + FILL_CLONES
    lines = [f"{'devices':<24} {'max final-N':>11} {'value moved':>11} "
             f"{'getrandom/generator shared':>26} {'vDSO shared':>22} "
             f"{'in flight':>9}"]
    for name, worst, evs, vdso, vdso_count in rows:
        moved = sum(ev["new"] != ev["old"] for ev in evs)
        lines.append(f"{name:<24} {worst:>11} {moved:>8}/{len(evs)} "
                     f"{'0 of ' + str(len(evs)) + ' clones':>26} "
                     f"{str(vdso['indices']) + ' (run ' + str(vdso['run']) + ')':>22} "
                     f"{str(vdso['in_flight']) + '/' + str(vdso_count):>9}")
    lines += ["value moved: clones whose page value had moved when the agent saw the epoch "
              "change (the VM counter moves first; the kernel moves the value at its next "
              "output)",
              "vDSO shared: sampled indices after resume where two clones agreed "
              "(longest run), the device's notification off; in flight: clones whose call "
              "in flight at the snapshot returned what the other's did"]
    lines += [f"vmclock only, no RDRAND/RDSEED, {FILL_CLONES} clones, clock from {label}: "
              f"{k} distinct getrandom() and {u} distinct generator outputs"
              for label, k, u in entropy]
    lines.append(f"{VMCLOCK_SETUPS[0][0]}, notification off, {VMCLOCK_VDSO_CLONES} clones "
                 f"streaming getrandom(8) by syscall: {syscall['indices']} sampled indices "
                 f"after resume where two agreed, call in flight shared by "
                 f"{syscall['in_flight']}")
    cycles = vmclock_cycles(ctx)
    lines.append(f"vmclock only, {CYCLES} savevm/loadvm cycles in one VM: the counter moved "
                 f"by one at every loadvm ({cycles[0]} -> {cycles[-1]}), never at savevm, no "
                 "value repeated, no splat")
    figure = ", ".join(f"{short} final-N {w}, vDSO {v['indices']}"
                       for (_, short, _), (_, w, _, v, _) in zip(VMCLOCK_SETUPS, rows))
    return vms + 1, figure + f", {CYCLES} cycles", lines


def vmclock_cycles(ctx):
    """CYCLES savevm/loadvm cycles with the vmclock device alone: savevm moves nothing
    (the VM that goes on was not restored), each loadvm moves the counter by one before
    the first instruction, the epoch never repeats in the surviving timeline, no splat."""
    a = Agent("s13-cycles", disk=True, kernel=ctx.kernel, rng=False,
              extra_devices=VMCLOCK).boot()
    try:
        require_epoch(a)
        a.wait_spinning()
        counters, values = [], []
        for k in range(CYCLES):
            a.g.qmp("stop")
            n = a.page()["spins"]
            a.g.hmp("savevm c")
            a.g.qmp("cont")
            a.g.qmp("stop")
            check(a.page()["events"] == k, f"cycle {k}: savevm moved the epoch")
            a.g.hmp("loadvm c")
            check(a.page()["spins"] == n, f"cycle {k}: loadvm did not restore {n} spins")
            mark = a.g.console_size()
            a.g.qmp("cont")
            ev = a.wait_event(mark)
            atomic(ev, n, f"cycle {k}")
            check(ev["vm_new"] == ev["vm_old"] + 1,
                  f"cycle {k}: counter {ev['vm_old']} -> {ev['vm_new']}")
            check(not counters or ev["vm_old"] == counters[-1],
                  f"cycle {k}: restored counter {ev['vm_old']} is not the snapshot's "
                  f"{counters[-1] if counters else ''}")
            check((ev["new"], ev["vm_new"]) not in values,
                  f"cycle {k}: epoch {ev['new']:#x}/{ev['vm_new']} repeats")
            counters.append(ev["vm_new"])
            values.append((ev["new"], ev["vm_new"]))
        check(a.g.status() == "running", "QEMU does not report the VM running")
        no_splat(a.g)
    finally:
        a.kill()
    return counters


# -- 12: the window between a leak and the driver's re-arm.

WINDOW_CLONES = 4
WINDOW_SOURCE_DELAY = 60000         # ms of virtual time: the source's driver never hears
WINDOW_DELAYS = (1, 10, 50)         # ms after resume until a clone's driver hears of it
WINDOW_DUMP = 16384                 # outputs compared per clone
LEAK_DONE = re.compile(r"virtio_rng_leak rng \S+ leak: (\d+) requests performed")


def window_rng(delay):
    """The virtio-rng options of scenario 12: each queue on its own MSI-X vector, and the
    leak notification delay ms late."""
    return f",vectors=4,x-leak-notify-delay={delay}"


def s12_rearm_window(ctx):
    """Save a VM right after a leak whose notification it has not taken, then measure
    how many getrandom() outputs its clones share before their own leak reaches the
    kernel.  Nothing in the clones moves the epoch until then: the RNG epoch page holds
    the value the last leak wrote, which the source had already seen.  Each queue has
    its own MSI-X vector (vectors=4): with the default 2 the request queue shares the
    leak queues' vector, and its first completion after resume runs the leak queues'
    callback too, which closes the window early by chance."""
    src = Agent("s12-src", kernel=ctx.kernel, mode="stream",
                rng_opts=window_rng(WINDOW_SOURCE_DELAY)).boot()
    try:
        require_epoch(src)
        src.wait_spinning()
        time.sleep(0.5)
        src.g.qmp("entropy-leak")
        time.sleep(0.2)
        path = os.path.join(vm.RUNDIR, "s12.migration")
        n = save_to_file(src, path)
        done = [int(x) for x in LEAK_DONE.findall(src.g.stderr())]
        check(done and done[-1] >= 2, f"the source's leak performed {done[-1:] or 'no'} "
              "requests; want the driver's fill and copy")
    finally:
        src.kill()
    details, figures, windows = [], [], {}
    for delay in WINDOW_DELAYS:
        streams = []
        for i in range(WINDOW_CLONES):
            with clone_of(ctx, f"s12-{delay}ms", i, src, path, mode="stream",
                          rng_opts=window_rng(delay)) as c:
                c.g.qmp("cont")
                time.sleep(1.0)
                raw = read_stream(c, "raw", n, WINDOW_DUMP + 1)
                guarded = read_stream(c, "guarded", n, WINDOW_DUMP + 1)
                done = [int(x) for x in LEAK_DONE.findall(c.g.stderr())]
                check(done and done[0] == 0, f"clone {i}: its own leak performed "
                      f"{done[:1] or 'no'} requests: the VM was not saved in the window")
                streams.append((raw, guarded))
        # From N + 1, as in scenario 7: the output at N may predate the snapshot.
        shared = [common_prefix(a[0][1:], b[0][1:]) for a, b in
                  itertools.combinations(streams, 2)]
        guarded = [common_prefix(a[1][1:], b[1][1:]) for a, b in
                   itertools.combinations(streams, 2)]
        check(max(shared) < WINDOW_DUMP,
              f"{delay} ms: two clones still agreed after {WINDOW_DUMP} outputs: the "
              "driver's re-arm did not reach the device, or it did not perform it at once")
        windows[delay] = shared
        median = sorted(shared)[len(shared) // 2]
        figures.append(f"{delay} ms: {median}")
        details.append(f"interrupt {delay} ms after resume: getrandom(8) outputs shared by "
                       f"each pair of {WINDOW_CLONES} clones {min(shared)}-{max(shared)} "
                       f"(median {median}), "
                       f"by the epoch-guarded caller {min(guarded)}-{max(guarded)}")
    os.unlink(path)
    first, last = WINDOW_DELAYS[0], WINDOW_DELAYS[-1]
    # Not every pair: a clone can reseed on its own in the window (the kernel's timed
    # reseed, every uptime/2 seconds in the first two minutes, draws on RDRAND).
    check(max(windows[last]) > 0, f"no two clones whose driver heard of the leak {last} "
          "ms after resume shared an output: the VM was not saved in the window")
    # RNG-LEAK-R13: the window ends with the notification, so a later notification
    # means a longer window; a driver that re-armed later (from a work item, a timer)
    # would add its own delay to every case.
    check(max(windows[first]) < max(windows[last]),
          f"the window does not follow the notification: {first} ms shared up to "
          f"{max(windows[first])} outputs, {last} ms up to {max(windows[last])}")
    details.append("each clone's own leak found no request held; the epoch moved only "
                   "when the driver's re-arm completed on the queue that was not active")
    return 1 + WINDOW_CLONES * len(WINDOW_DELAYS), "shared outputs, median " + \
        ", ".join(figures), details


# Scenario 14: a machine type both rows' QEMUs have, and the feature given explicitly
# (each QEMU has it on only for the machine type its series adds)
CROSS_MACHINE = "pc-i440fx-7.2"
CROSS_RNG = ",leak=on"


def s14_cross_row(ctx):
    """A VM saved by one row's QEMU and restored by the other's, then back: the held
    requests travel in the stream, and the restoring QEMU performs them before the guest
    runs, whichever version saved them."""
    if vm.ROW != "6.1":
        raise NotApplicable("runs on the 6.1 row, after the 6.12 row built QEMU 10.0 "
                            "(make check builds the rows newest first)")
    other = vm.row_paths("6.12")["qemu"]
    if not os.path.exists(os.path.join(other, "qemu-system-x86_64")):
        raise NotApplicable(f"QEMU 10.0 is not built ({other}): make qemu ROW=6.12")
    hops = [("7.2", vm.QEMU_DIR), ("10.0", other), ("7.2", vm.QEMU_DIR)]
    agent = {"kernel": ctx.kernel, "machine": CROSS_MACHINE, "rng_opts": CROSS_RNG}
    src = Agent("s14-on-7.2", **agent).boot()
    ctx.keep(src)
    require_epoch(src)
    src.wait_spinning()
    time.sleep(0.3)
    details, figures = [], []
    backend = "/machine/peripheral/rng0/virtio-backend"
    for i in range(1, len(hops)):
        (was, _), (now, qemu_dir) = hops[i - 1], hops[i]
        who = f"QEMU {was} -> {now}"
        path = os.path.join(vm.RUNDIR, f"s14-{i}.migration")
        n = save_to_file(src, path)
        src.kill()
        dst = Agent(f"s14-on-{now}-{i}", incoming=path, qemu_dir=qemu_dir, **agent)
        dst.g.start()
        ctx.keep(dst)
        dst.wait_migrated()
        dst.gpa = src.gpa
        check(dst.page()["spins"] == n, f"{who}: spin count differs from the source's")
        mark = dst.g.console_size()
        dst.g.qmp("cont")
        ev = dst.wait_event(mark)
        d = atomic(ev, n, who)
        reqs = dst.g.qmp("qom-get", path=backend, property="x-leak-last-requests")
        check(reqs >= 2, f"{who}: the restoring QEMU performed {reqs} held requests, "
              "want the driver's fill and copy (2)")
        no_splat(dst.g, who)
        os.unlink(path)
        figures.append(f"{was}->{now} final-N={d}")
        details.append(f"{who}: epoch {ev['old']:#010x} -> {ev['new']:#010x}, "
                       f"{reqs} held requests performed before the guest ran")
        src = dst
    return len(hops), ", ".join(figures), details


PACKED_LEAKS = 6


def packed_negotiated(agent):
    """Whether the guest's driver runs the device's rings in the packed layout."""
    st = agent.g.qmp("x-query-virtio-status", path="/machine/peripheral/rng0/virtio-backend")
    return any("RING_PACKED" in f for f in st["guest-features"]["transports"])


def s15_packed(ctx):
    """Packed rings with direct descriptors: the driver's held copy-on-leak request has two
    descriptors, and the descriptor count the device keeps for it (what it returns the
    ring position by) must come back from the migration stream.  Counted as one, the
    device returns every later request of that queue at the wrong position and the driver
    never sees it, so it never re-arms: a later leak on that queue finds nothing held and
    the epoch stays.  A clone of a saved VM takes PACKED_LEAKS more leaks, so that each
    leak queue is used again after its first return."""
    opts = ",packed=on,indirect_desc=off"
    src, n, path = saved_source(ctx, "s15", 0.3, want_epoch=True, rng_opts=opts)
    try:
        with clone_of(ctx, "s15", 0, src, path, rng_opts=opts) as c:
            check(packed_negotiated(c), "the driver did not negotiate VIRTIO_F_RING_PACKED: "
                  "the scenario would test the split ring")
            mark = c.g.console_size()
            c.g.qmp("cont")
            worst = atomic(c.wait_event(mark, timeout=30), n, "clone after restore")
            epochs = set()
            for i in range(PACKED_LEAKS):
                n = stop_spinning(c)
                mark = c.g.console_size()
                c.g.qmp("entropy-leak")
                c.g.qmp("cont")
                ev = c.wait_event(mark, timeout=30)
                worst = max(worst, atomic(ev, n, f"leak {i + 1} after restore"))
                check(ev["new"] not in epochs, f"leak {i + 1}: epoch {ev['new']:#x} repeats")
                epochs.add(ev["new"])
            err = [line for line in c.g.stderr().splitlines()
                   if "virtio" in line and "virtio_rng_leak" not in line]
            check(not err, "QEMU reported: " + "; ".join(err[:3]))
            no_splat(c.g, "clone")
    finally:
        os.unlink(path)
    return 2, f"max final-N={worst} (N={n})", [
        f"restore and {PACKED_LEAKS} leaks on packed rings, each atomic, epochs all new"]


VMCLOCK_ADDR = 0xfeffb000           # QEMU's include/hw/acpi/vmclock.h
VMCLOCK_GEN_OFFSET = 104            # vm_generation_counter in struct vmclock_abi


def vmclock_generation(agent):
    return struct.unpack("<Q", agent.g.read_phys(VMCLOCK_ADDR + VMCLOCK_GEN_OFFSET, 8))[0]


def migration_status(agent):
    info = agent.g.qmp("query-migrate")
    return info.get("status"), info.get("ram", {}).get("dirty-sync-count", 0)


def s16_vmclock_live(ctx):
    """A leak declared while a live migration runs reaches the destination.  vmclock's
    page is guest RAM that QEMU writes through its own pointer: unless the device marks
    it dirty, a page sent before the leak is not sent again, and the destination runs on
    with the counter from before it (the guest saw it move, then sees it move back).  The
    migration is kept from converging (a downtime shorter than one page takes at the
    bandwidth allowed, and the agent dirtying its page) until its first pass over RAM is
    done and the leak declared; the device is as a live migration runs it
    (leak-on-migration off, its default), so that the destination itself moves nothing."""
    require_vmclock()
    live = {"rng": False, "extra_devices": ("vmclock",)}
    path = os.path.join(vm.RUNDIR, "s16.migration")
    # Under load the agent's vCPU can miss a whole pass without dirtying its page, and
    # the precopy then converges before the leak: boot again (at most 3 times; the
    # figure says how many it took), as that is the harness's timing, not the device's.
    for attempt in range(1, 4):
        src = Agent("s16-src", kernel=ctx.kernel, **live).boot()
        try:
            require_epoch(src)
            src.wait_spinning()
            before = vmclock_generation(src)
            # Precopy completes once what is left to send fits the downtime at the
            # measured bandwidth.  At 2 MiB/s and 1 ms that is half a page (at 4 MiB/s,
            # 4194 bytes, one dirty page fits: seen converging), and the agent dirties its
            # page all the time: the migration goes on iterating until the limits rise.
            src.g.qmp("migrate-set-parameters", **{"max-bandwidth": 2 << 20,
                                                   "downtime-limit": 1})
            if os.path.exists(path):
                os.unlink(path)
            src.g.qmp("migrate", uri=f"exec:cat > {path}")
            deadline = time.monotonic() + 120
            while True:
                status, syncs = migration_status(src)
                if status not in ("setup", "active") or syncs >= 3:
                    break
                check(time.monotonic() < deadline, "the first pass over RAM took over 120 s")
                time.sleep(0.05)
            if status not in ("setup", "active"):
                check(attempt < 3, f"migration {status} before its first pass was done, "
                      f"in {attempt} attempts")
                continue
            mark = src.g.console_size()
            src.g.qmp("entropy-leak")
            ev = src.wait_event(mark, timeout=30)
            check(ev["vm_new"] == before + 1, f"the leak moved the source's counter "
                  f"{ev['vm_old']} -> {ev['vm_new']}, not from {before} by one")
            status, syncs_at_leak = migration_status(src)
            check(status == "active", f"migration {status} before the leak was declared")
            src.g.qmp("migrate-set-parameters", **{"max-bandwidth": 1 << 30,
                                                   "downtime-limit": 300})
            while (status := migration_status(src)[0]) not in ("completed", "failed",
                                                               "cancelled"):
                check(time.monotonic() < deadline + 60, f"migration still {status}")
                time.sleep(0.05)
            check(status == "completed", f"migration {status}")
            sent = vmclock_generation(src)
            check(sent == before + 1, f"source's counter {sent} after the migration")
            break
        finally:
            src.kill()
    try:
        with clone_of(ctx, "s16", 0, src, path, **live) as dst:
            got = vmclock_generation(dst)
            check(got == sent, f"the destination's counter is {got}, the source's was {sent} "
                  f"when the migration completed: the leak's update of the page was not "
                  f"sent again")
            dst.g.qmp("cont")
            time.sleep(1)
            check(vmclock_generation(dst) == sent,
                  "the live migration itself moved the counter (leak-on-migration is off)")
            no_splat(dst.g, "destination")
    finally:
        os.unlink(path)
    return 1 + attempt, "n/a", [f"counter {before} -> {sent} by a leak declared after "
                                f"{syncs_at_leak - 1} passes over RAM; the destination "
                                f"loaded {got}" + (f" (attempt {attempt}: the earlier ones "
                                                   f"converged before the leak)"
                                                   if attempt > 1 else "")]


SCENARIOS = [
    (1, "savevm, original resumes", s1_savevm),
    (2, "loadvm of that snapshot", s2_loadvm),
    (3, f"{CLONES} clones from one file", s3_clones),
    (4, f"{CLONES} clones, no RDRAND/RDSEED", s4_clones_no_rdrand),
    (5, f"{CYCLES} savevm/loadvm cycles", s5_cycles),
    (6, "negative control: leak=off", s6_negative),
    (7, "peer: vmgenid vs leak queues", s7_peer),
    (8, "driver conformance from the device's traces", s8_driver),
    (9, "attestation across savevm/loadvm and clones", s9_attest),
    (10, "fill-on-leak bytes alone separate clones", s10_fill_bytes),
    (11, "vDSO getrandom across clones", s11_vdso),
    (12, "a snapshot between a leak and the re-arm", s12_rearm_window),
    (13, f"VMClock: {CLONES} clones, vmclock alone and with virtio-rng", s13_vmclock),
    (14, "migration between the rows' QEMUs, 7.2 -> 10.0 -> 7.2", s14_cross_row),
    (15, "packed rings: a held request's descriptors migrate", s15_packed),
    (16, "vmclock: a leak during a live migration reaches the destination",
     s16_vmclock_live),
]


def demo(ctx):
    """Scenario 3 told for a newcomer, with the leak=off control next to it."""
    say = lambda text="": print(text, flush=True)  # noqa: E731
    say("What happens to randomness when a VM is cloned")
    say("===============================================")
    say(f"We boot a VM (our Linux {vm.ROW} in our QEMU "
        f"{vm.VERSIONS['QEMU_OF_ROW_' + vm.ROW]}, {vm.accel_line()}).")
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


def run_scenarios(todo, ctx, kind, tap_path=None, refused=None):
    """Run each (id, title, fn) of todo with ctx: print its detail lines and TAP line
    ('ok N - KIND:ID TITLE'), then the table of all (VMs, result, figure, time), and
    write TAP to tap_path.  refused: a reason every scenario fails with, unrun (the
    engine they need did not start).  Returns how many failed."""
    rows, tap, failed = [], [], 0
    for i, (num, title, fn) in enumerate(todo, 1):
        t0 = time.monotonic()
        try:
            if refused:
                raise Failed(refused)
            vms, figure, details = fn(ctx)
            result, line = "pass", f"ok {i} - {kind}:{num} {title}"
        except NotApplicable as e:
            vms, figure, details = 0, "-", []
            result, line = "n/a", f"ok {i} - {kind}:{num} {title} # SKIP not applicable: {e}"
        except Exception as e:  # noqa: BLE001 - any error is this scenario's failure
            vms, figure, details = 0, "-", f"{type(e).__name__}: {e}".splitlines()
            result, line = "FAIL", f"not ok {i} - {kind}:{num} {title}"
            failed += 1
        secs = time.monotonic() - t0
        for d in details:
            print(f"#   {d}")
        print(line, flush=True)
        tap.append(line)
        rows.append((num, title, vms, result, figure, secs))

    print("#")
    print(f"# {'scenario':<38} {'VMs':>3}  {'result':<6} {'spin figure':<40} time")
    for num, title, vms, result, figure, secs in rows:
        print(f"# {num} {title:<36} {vms:>3}  {result:<6} {figure:<40} {secs:5.1f}s")
    print(f"# total {sum(r[5] for r in rows):.1f}s")
    if tap_path:
        with open(tap_path, "w") as f:
            f.write(f"TAP version 13\n1..{len(tap)}\n" + "\n".join(tap) + "\n")
    return failed


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
    failed = run_scenarios(todo, ctx, "scenario", a.tap)
    ctx.close()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
