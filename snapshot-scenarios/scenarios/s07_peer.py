"""Scenario 7: peer: vmgenid without our feature.

Asserts: how many getrandom() outputs two clones share after resume: no protection,
vmgenid, leak queues.
"""

from scenario_lib import (
    check, common_prefix, in_play, mechanism_label, stream_clones, VMGENID
)

NUM = 7
TITLE = "peer: vmgenid vs leak queues"


PEER_PAIRS = 2


def run(ctx):
    """Measure, not assert, the peer; assert only that our feature shares nothing."""
    def pairs(tag, **agent):
        """Outputs after resume that each pair of clones shares, and whether every pair's
        unguarded user-space generator repeated.  From N + 1: the output at N may have
        been generated before the snapshot, by the call in flight (the same allowance as
        final - N <= 1)."""
        _, streams, _ = stream_clones(ctx, tag, 2 * PEER_PAIRS, **agent)
        two = list(zip(streams[0::2], streams[1::2]))
        return ([common_prefix(a["raw"][1:], b["raw"][1:]) for a, b in two],
                all(a["prng"] == b["prng"] for a, b in two))

    none, none_rep = pairs("s7-none", leak=False)
    peer, peer_rep = pairs("s7-vmgenid", leak=False, extra_devices=VMGENID)
    ours, _ = pairs("s7-leak", leak=True)
    # Labelled by what the guest had in play, not by what QEMU offered: with an operator's
    # kernel (--kernel) the driver may not be there, and the column measures a device alone.
    peer_play, peer_label = mechanism_label("vmgenid", in_play("s7-vmgenid"))
    ours_play, ours_label = mechanism_label("leak", in_play("s7-leak"))
    fmt = lambda v: "/".join(str(x) for x in v)  # noqa: E731
    if ctx.has_epoch:
        check(ours_play, f"our kernel, and the leak queues not in play: {ours_label}")
        check(max(ours) == 0, f"with the leak feature two clones still shared {max(ours)} "
              "getrandom() outputs after resume")
        us = "(reseed before the first output after resume)"
    else:
        us = "(this kernel has no RNG epoch: the device's leak requests go unused)"
    tag = lambda play: "" if play else " (not in play)"  # noqa: E731
    return 6 * PEER_PAIRS, (f"shared outputs: vmgenid{tag(peer_play)} {fmt(peer)}, leak "
                            f"queues{tag(ours_play)} {fmt(ours)}"), [
        f"getrandom(8) outputs two clones shared after resume ({PEER_PAIRS} pairs each):",
        f"  no protection     {fmt(none)}",
        f"  vmgenid (peer)    {fmt(peer)}   (reseed from an ACPI notification, after vCPUs run)"
        f"; in play: {peer_label}",
        f"  leak queues (us)  {fmt(ours)}   {us}; in play: {ours_label}",
        f"unguarded user-space generator repeated across clones: no protection "
        f"{'yes' if none_rep else 'no'}, vmgenid {'yes' if peer_rep else 'no'} "
        "(vmgenid gives user space no signal)"]
