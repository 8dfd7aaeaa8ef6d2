"""Scenario 5: 100 savevm/loadvm cycles in one VM.

Asserts: the epoch moves every time and never repeats in the surviving timeline, no
kernel splat, QEMU still answers QMP.
"""

from scenario_lib import Agent, check, CYCLES, no_splat, require_epoch

NUM = 5
TITLE = f"{CYCLES} savevm/loadvm cycles"


def run(ctx):
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
