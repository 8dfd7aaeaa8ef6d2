"""Scenario 4: as 3, with RDRAND and RDSEED hidden from the guest CPU.

Asserts: still pairwise different.
"""

from scenario_lib import clone_scenario, CLONES

NUM = 4
TITLE = f"{CLONES} clones, no RDRAND/RDSEED"


def run(ctx):
    return clone_scenario(ctx, "s4", "max,-rdrand,-rdseed")
