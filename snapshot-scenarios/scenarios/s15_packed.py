"""Scenario 15: packed rings (`packed=on,indirect_desc=off`).

Asserts: a clone of a saved VM whose driver negotiated the packed layout, then 6 leaks:
each atomic (final - N <= 1) with a new epoch, no splat, no virtio error from QEMU: the
held copy request's two descriptors come back from the migration stream as two, so each
leak queue is used again after its first return.
"""

import os

from scenario_lib import atomic, check, clone_of, no_splat, saved_source, stop_spinning

NUM = 15
TITLE = "packed rings: a held request's descriptors migrate"


PACKED_LEAKS = 6


def packed_negotiated(agent):
    """Whether the guest's driver runs the device's rings in the packed layout."""
    st = agent.g.qmp("x-query-virtio-status", path="/machine/peripheral/rng0/virtio-backend")
    return any("RING_PACKED" in f for f in st["guest-features"]["transports"])


def run(ctx):
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
