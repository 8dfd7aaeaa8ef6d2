"""Scenario 6: negative control: as 3 with `leak=off`.

Asserts: the clones' user-space generator outputs **repeat** each other: proof that the
scenarios can fail.
"""

from scenario_lib import check, CLONES, clones

NUM = 6
TITLE = "negative control: leak=off"


def run(ctx):
    n, evs = clones(ctx, "s6", leak=False, mode="line", want_epoch=False)
    same_prng = len({e["prng"] for e in evs}) == 1
    same_kernel = len({e["getrandom"] for e in evs}) == 1
    check(same_prng, "without the leak feature the clones' generator outputs should repeat "
          "each other, and they did not: the scenarios could not tell a broken device; "
          "per clone: " + ", ".join(f"{i}: n={e['n']} {e['prng'][:16]}" for i, e in enumerate(evs)))
    return CLONES + 1, "n/a", [
        f"all {CLONES} clones printed generator output {evs[0]['prng'][:16]}..",
        f"getrandom() outputs: {'all identical' if same_kernel else 'differ'}"]
