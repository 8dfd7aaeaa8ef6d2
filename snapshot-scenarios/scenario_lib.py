"""scenario_lib.py - what the snapshot scenarios share: the guest agent (Agent), the
clone helpers (a saved source, its clones, their events), the checks (atomic, pairwise
different, no kernel splat), the streams of outputs and the runner (run_scenarios).

The scenarios themselves are the modules of scenarios/, one each; run.py runs them.
Not a program: imported by run.py, userspace.py, libvirt_scenarios.py, vmclock_peer.py
and scripts/audit.py.
"""

import contextlib
import itertools
import os
import re
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "scripts"))
import vmharness as vm  # noqa: E402

CLONES = 8
CYCLES = 100

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


FILL_CLONES = 4

VDSO_RINGS = ("raw", "guarded")
VDSO_DUMP = 4096
# Every VM of the vDSO streams has two vCPUs, the agent on one and the interrupts on the
# other, as programs and devices are apart in real VMs.  On one vCPU under TCG, the
# interrupt that a restore leaves pending always runs before the agent's next
# instruction, and its handler's first random draw reseeds the crng (the epoch moved):
# that would hide a kernel whose vDSO does not learn of the leak before the vCPUs run.
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


# The clones are restores of a saved state started with -incoming, which QEMU cannot tell
# from a live migration: as management would, say so (the device's default, off, is for
# live migration, where the counter must stay).
VMCLOCK = ("vmclock,leak-on-migration=on",)


def require_vmclock():
    devices = subprocess.run([vm.QEMU, "-device", "help"], capture_output=True, text=True)
    if '"vmclock"' not in devices.stdout:
        raise NotApplicable(f"this row's QEMU has no vmclock device ({vm.QEMU})")


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
