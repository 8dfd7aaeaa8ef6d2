"""Scenario 12: a snapshot between a leak and the driver's re-arm.

Asserts: the source's leak notification held back (`x-leak-notify-delay`, fault
injection) so that it is saved with no request held; 4 clones per delay (1, 10, 50 ms)
of their own notification: each clone's own leak performs nothing, the clones share
getrandom() outputs until the re-arm and then diverge, and the shared run grows with the
delay (the driver re-arms in the interrupt). Measured, median per pair: **0** outputs at
1 ms, 196 at 10 ms, 6107 at 50 ms (6.12); 0, 66, 4403 (6.1); the middle figure moves
most from run to run under TCG (another 6.12 run: 0, 0, 4762); why the protocol cannot
close it: `docs/leak-protocol.md`.
"""

import itertools
import os
import re
import time

from scenario_lib import (
    Agent, check, clone_of, common_prefix, read_stream, require_epoch, save_to_file,
    vm
)

NUM = 12
TITLE = "a snapshot between a leak and the re-arm"


WINDOW_CLONES = 4
WINDOW_SOURCE_DELAY = 60000         # ms of virtual time: the source's driver never hears
WINDOW_DELAYS = (1, 10, 50)         # ms after resume until a clone's driver hears of it
WINDOW_DUMP = 16384                 # outputs compared per clone
LEAK_DONE = re.compile(r"virtio_rng_leak rng \S+ leak: (\d+) requests performed")


def window_rng(delay):
    """The virtio-rng options of scenario 12: each queue on its own MSI-X vector, and the
    leak notification delay ms late."""
    return f",vectors=4,x-leak-notify-delay={delay}"


def run(ctx):
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
