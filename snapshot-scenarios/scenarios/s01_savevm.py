"""Scenario 1: savevm, the original VM resumes.

Asserts: the guest's spin loop ran at most 1 iteration after the snapshot before it saw
the new epoch.
"""

import time

from scenario_lib import Agent, atomic, require_epoch

NUM = 1
TITLE = "savevm, original resumes"


def run(ctx):
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
