"""Scenario 10: fill-on-leak bytes alone separate clones.

Asserts: under `-icount` (guest time follows instructions, not the host) and without
RDRAND/RDSEED, the request queue fed from the host's /dev/urandom: 4 clones given the
same fill-on-leak bytes (`-seed 7`) repeat each other, 4 given different ones (`-seed
1..4`) are pairwise different.
"""

import os

from scenario_lib import (
    atomic, check, clone_event, FILL_CLONES, pairwise_different, saved_source
)

NUM = 10
TITLE = "fill-on-leak bytes alone separate clones"


def run(ctx):
    """What separates the clones: the device's fill-on-leak bytes, or anything else?
    Everything runs with -icount (instruction counting: the guest's clock, TSC and timer
    interrupts follow the instructions it ran, not host time) and without RDRAND/RDSEED.
    The fill-on-leak bytes come from QEMU's guest random numbers, which -seed makes a
    function of the seed; the virtio-rng request queue reads the host's /dev/urandom, so
    it differs between clones whatever the seed.  Clones with the same seed get the same
    fill bytes and must repeat each other; clones with different seeds must not."""
    agent = {"cpu": "max,-rdrand,-rdseed", "rng_opts": ",rng=hostrng"}
    base = ("-icount", "shift=0,sleep=off",
            "-object", "rng-random,id=hostrng,filename=/dev/urandom")
    src, n, path = saved_source(ctx, "s10", 0.3, want_epoch=True, qemu_args=base, **agent)
    out = {}
    for variant, seeds in (("same", [7] * FILL_CLONES), ("different", range(1, 1 + FILL_CLONES))):
        evs = [clone_event(ctx, f"s10-{variant}", i, src, n, path,
                           qemu_args=base + ("-seed", str(seed)), **agent)
               for i, seed in enumerate(seeds)]
        for i, ev in enumerate(evs):
            atomic(ev, n, f"{variant}-seed clone {i}")
        out[variant] = evs
    os.unlink(path)
    pairwise_different([e["getrandom"] for e in out["different"]], "getrandom() output")
    pairwise_different([e["prng"] for e in out["different"]], "generator output")
    same_k = {e["getrandom"] for e in out["same"]}
    same_u = {e["prng"] for e in out["same"]}
    check(len(same_k) == 1 and len(same_u) == 1,
          f"clones with the same fill bytes still differ ({len(same_k)} getrandom, "
          f"{len(same_u)} generator outputs of {FILL_CLONES}): something besides the "
          "fill-on-leak bytes separates them")
    return 1 + 2 * FILL_CLONES, "fill bytes alone decide", [
        f"same -seed, {FILL_CLONES} clones: getrandom {next(iter(same_k))[:16]}.. in all",
        f"different -seed, {FILL_CLONES} clones: {FILL_CLONES} distinct getrandom and "
        "generator outputs"]
