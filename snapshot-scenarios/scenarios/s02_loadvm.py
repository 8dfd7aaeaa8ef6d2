"""Scenario 2: loadvm of that snapshot.

Asserts: the same, after the restore.
"""

import time

from scenario_lib import atomic, check, NotApplicable

NUM = 2
TITLE = "loadvm of that snapshot"


def run(ctx):
    if not getattr(ctx, "s1", None):
        raise NotApplicable("needs the snapshot of scenario 1")
    a, n, _ = ctx.s1
    # Scenario 1's VM ends here: left spinning, it would take a core from every
    # scenario after this one.
    ctx.s1 = None
    try:
        return loadvm_once(a, n)
    finally:
        a.kill()


def loadvm_once(a, n):
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
