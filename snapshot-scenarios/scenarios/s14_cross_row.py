"""Scenario 14: migration between the rows' QEMUs (6.1 row; see "Migration between the rows' QEMUs").

Asserts: a VM booted on QEMU 7.2 (`-M pc-i440fx-7.2`, `leak=on`, the 6.1 kernel) saved
to a file and restored by QEMU 10.0, then saved there and restored by 7.2: each restore
atomic (final - N <= 1), the epoch moved, the driver's held fill and copy (2 requests)
performed by the QEMU that did not save them, no splat; seen failing with
`leak-on-migration=off` (no event line).
"""

import os
import time

from scenario_lib import (
    Agent, atomic, check, no_splat, NotApplicable, require_epoch, save_to_file, vm
)

NUM = 14
TITLE = "migration between the rows' QEMUs, 7.2 -> 10.0 -> 7.2"


# Scenario 14: a machine type both rows' QEMUs have, and the feature given explicitly
# (each QEMU has it on only for the machine type its series adds)
CROSS_MACHINE = "pc-i440fx-7.2"
CROSS_RNG = ",leak=on"


def run(ctx):
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
    src.kill()          # the last hop's VM: nothing after this scenario needs it
    return len(hops), ", ".join(figures), details
