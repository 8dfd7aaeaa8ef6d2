#!/usr/bin/env python3
"""run.py - snapshot and clone scenarios: is the RNG epoch atomic, do clones diverge?

usage: run.py [--kernel BZIMAGE] [--only N[,N...]] [--tap FILE]
       run.py [--kernel BZIMAGE] --demo
       run.py --list | --table

Each scenario boots the guest (our kernel and initramfs, or --kernel for an operator's
own kernel) with guest-tests/scenario_agent, drives QEMU over QMP (stop, savevm, loadvm,
migrate to a file, clones started with -incoming from that file, cont) and asserts, from
guest memory read while the VM is stopped and from what the agent prints afterwards.
The scenarios are the modules of snapshot-scenarios/scenarios/, one each (NUM, TITLE,
run(ctx)); each module's docstring says what it asserts, and --table prints them as the
table of docs/testing.md (make check-help checks that the two agree).  What they share
is snapshot-scenarios/scenario_lib.py.

Where the kernel has no RNG epoch (RNDEPOCH fails), scenarios 1-5, 8 and 10 report 'not
applicable' (TAP SKIP with that reason) and 6-7 and 11 still measure what the kernel does;
where it has no configfs-tsm provider for the responder, 9 is not applicable, and where
its vDSO has no getrandom() (before 6.11, so the 6.1 row), 11 is not applicable.  14
runs on the 6.1 row only: make check builds QEMU 10.0 (the 6.12 row) first.
Ends with one table: scenario, VMs, result, spin figure, time.
"""

import argparse
import importlib
import os
import pkgutil
import sys

from scenario_lib import CLONES, Ctx, NotApplicable, clones, run_scenarios, vm

SCENARIO_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scenarios")
TABLE_START = "<!-- the scenario table: snapshot-scenarios/run.py --table -->"
TABLE_END = "<!-- end of the scenario table -->"


def load_scenarios():
    """The scenario modules, by number: [(num, title, run, module)]."""
    mods = [importlib.import_module(f"scenarios.{m.name}")
            for m in pkgutil.iter_modules([SCENARIO_DIR]) if m.name.startswith("s")]
    out = sorted((m.NUM, m.TITLE, m.run, m) for m in mods)
    nums = [s[0] for s in out]
    if len(set(nums)) != len(nums):
        sys.exit(f"run.py: two scenario modules share a number: {nums}")
    return out


def table(scenarios):
    """The Markdown table of docs/testing.md, from the modules' docstrings: the first
    line 'Scenario N: WHAT.', then a paragraph 'Asserts: ...'."""
    rows = ["| # | scenario | asserts |", "|---|---|---|"]
    for num, _, _, mod in scenarios:
        paras = [" ".join(p.split()) for p in mod.__doc__.strip().split("\n\n")]
        what = paras[0].split(": ", 1)[1].rstrip(".")
        asserts = paras[1].split(": ", 1)[1].rstrip(".")
        rows.append(f"| {num} | {what} | {asserts} |")
    return "\n".join(rows)


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


def main():
    scenarios = load_scenarios()
    p = argparse.ArgumentParser(
        description=__doc__.split("\n")[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="scenarios:\n" + "\n".join(f"  {n:2} {t}" for n, t, _, _ in scenarios))
    p.add_argument("--kernel", default=vm.KERNEL,
                   help="guest kernel to test (default: ours); e.g. an operator's own")
    p.add_argument("--only", help="comma-separated scenario numbers")
    p.add_argument("--tap", help="also write TAP to this file")
    p.add_argument("--demo", action="store_true", help="tell scenario 3 for a newcomer")
    p.add_argument("--list", action="store_true", help="list the scenarios and exit")
    p.add_argument("--table", action="store_true",
                   help="print docs/testing.md's scenario table, from the modules' docstrings")
    a = p.parse_args()
    if a.list:
        print("\n".join(f"{n:2} {t}" for n, t, _, _ in scenarios))
        return 0
    if a.table:
        print(f"{TABLE_START}\n{table(scenarios)}\n{TABLE_END}")
        return 0
    if a.demo:
        ctx = Ctx(os.path.abspath(a.kernel))
        try:
            return demo(ctx)
        finally:
            ctx.close()

    only = {int(x) for x in a.only.split(",")} if a.only else None
    unknown = (only or set()) - {s[0] for s in scenarios}
    if unknown:
        p.error(f"--only: no scenario {', '.join(map(str, sorted(unknown)))} "
                f"(see --list)")
    todo = [s[:3] for s in scenarios if not only or s[0] in only]
    print(f"# {vm.accel_line()}")
    print(f"# guest kernel: {a.kernel}")
    print(f"1..{len(todo)}", flush=True)
    ctx = Ctx(os.path.abspath(a.kernel))
    failed = run_scenarios(todo, ctx, "scenario", a.tap)
    ctx.close()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
