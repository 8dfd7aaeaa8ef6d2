"""Scenario 13: VMClock (6.12 row; see "VMClock").

Asserts: 8 clones with the vmclock device alone and with virtio-rng too: the guest
registered the counter, each clone atomic (final - N <= 1) with the counter moved by
one, getrandom() and the guarded generator pairwise different; vDSO getrandom() of 8
more clones (notification off) shares nothing after resume, guarded or not (seen failing
with a vDSO that does not read the counter: 255 shared); 100 savevm/loadvm cycles with
the device alone: the counter moves at each loadvm only, nothing repeats, no splat;
without RDRAND: measured with host time and under `-icount`.
"""

import os

from scenario_lib import (
    Agent, atomic, check, CLONES, clones, CYCLES, FILL_CLONES, no_splat,
    pairwise_different, require_epoch, require_vmclock, vdso_clones, vdso_shared,
    vm, VMCLOCK
)

NUM = 13
TITLE = f"VMClock: {CLONES} clones, vmclock alone and with virtio-rng"


VMCLOCK_SETUPS = (("vmclock only", "vmclock", {"rng": False, "extra_devices": VMCLOCK}),
                  ("vmclock and virtio-rng", "both", {"extra_devices": VMCLOCK}))
# The vDSO clones without the device's notification: its GPE makes the driver reseed the
# crng, which also moves the vDSO's generation, soon after resume, and hides whether the
# vDSO itself saw the counter; without it nothing in the kernel reseeds for seconds.
VMCLOCK_QUIET = "vmclock,leak-on-migration=on,notification=off"
VMCLOCK_VDSO_CLONES = 8


def run(ctx):
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
