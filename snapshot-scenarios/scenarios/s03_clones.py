"""Scenario 3: migrate to a file, 8 clones start from it with `-incoming`.

Asserts: each clone atomic, the epoch moved in each, getrandom() and the epoch-guarded
user-space generator pairwise different.
"""

from scenario_lib import clone_scenario, CLONES

NUM = 3
TITLE = f"{CLONES} clones from one file"


def run(ctx):
    return clone_scenario(ctx, "s3", "max")
