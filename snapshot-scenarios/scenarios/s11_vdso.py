"""Scenario 11: getrandom() from the vDSO across clones (6.12 row; see below).

Asserts: 2 and then 8 clones of one saved state calling `__vdso_getrandom` in a loop: 0
outputs generated after resume shared by two clones, also with savevm/loadvm in one
process; the same run measures leak=off (shares: proof it can fail), Debian's 6.12 with
and without vmgenid.

getrandom() in the vDSO (6.11) is what glibc 2.41 calls.  Each process keeps its own
key in user memory and rekeys when its state is stale; with our kernel a state is keyed
on the RNG epoch too, which the device writes before any vCPU runs (the vvar area maps
the epoch page).  The agent streams the vDSO's outputs into two rings: 'raw', the first
output of each index, and 'guarded', what a caller that re-reads the epoch after the
call (and calls again when it moved) keeps.  Index N, in flight at the snapshot, is
reported apart: it may have been generated, in part or whole, before the snapshot.
"""

import os
import time

from scenario_lib import (
    Agent, check, CLONES, NotApplicable, read_stream, UPSTREAM_KERNEL, vdso_clones,
    VDSO_DUMP, VDSO_RINGS, vdso_shared, VDSO_SMP, vm, VMGENID
)

NUM = 11
TITLE = "vDSO getrandom across clones"


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


def run(ctx):
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
