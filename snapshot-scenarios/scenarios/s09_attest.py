"""Scenario 9: attestation across savevm/loadvm and clones (with `sev-snp-responder`).

Asserts: configfs-tsm reports before and after savevm, after loadvm, and in 2 clones of
one saved state: every request accepted, so sev-guest's sequence number (guest memory)
and the responder's (device state) came back together.
"""

import errno
import os
import re

from scenario_lib import Agent, check, clone_of, NotApplicable, save_to_file, vm

NUM = 9
TITLE = "attestation across savevm/loadvm and clones"


ATTEST = r"# scenario: attest tag={} rc=(\d+) \((.*?)\) epoch=(0x[0-9a-f]+)"
PSP_REQUEST = re.compile(r"snp_responder_request exit_code 0x[0-9a-f]+ type (\d+) vmpck (\d+) "
                         r"seqno (\d+) exitinfo2 0x([0-9a-f]+)")
SNP_AGENT = {"mode": "attest", "extra_devices": (vm.snp_responder(),),
             "trace": ("snp_responder_request",)}


def attest(agent, tag, timeout=60):
    """Have the agent get one attestation report; return the RNG epoch it saw."""
    mark = agent.g.console_size()
    agent.g.send_command(f"report {tag}\n")
    m = agent.g.wait_console(ATTEST.format(re.escape(tag)), timeout, mark)
    if int(m.group(1)) in (errno.ENOENT, errno.ENXIO):
        raise NotApplicable(f"no configfs-tsm provider in the guest kernel ({m.group(2)})")
    check(m.group(1) == "0", f"{agent.name}: report {tag} failed: {m.group(2)}")
    return int(m.group(3), 16)


def psp_seqnos(agent):
    """The sequence numbers the responder accepted, in order (from its trace)."""
    seqnos = []
    for m in PSP_REQUEST.finditer(agent.g.stderr()):
        check(int(m.group(4), 16) == 0, f"{agent.name}: the responder refused a request: "
              f"{m.group(0)}")
        seqnos.append(int(m.group(3)))
    return seqnos


def run(ctx):
    """sev-guest keeps its message sequence number in guest memory (the secrets page's OS
    area) and the PSP keeps its own; both must come back together from a snapshot, or the
    first request after loadvm is refused and sev-guest wipes its VMPCK for good."""
    a = Agent("s9", disk=True, kernel=ctx.kernel, **SNP_AGENT).boot()
    ctx.keep(a)
    a.wait_spinning()
    epoch_a = attest(a, "a")
    a.g.qmp("stop")
    a.g.hmp("savevm s9")
    a.g.qmp("cont")
    attest(a, "b")
    a.g.qmp("stop")
    a.g.hmp("loadvm s9")
    a.g.qmp("cont")
    epoch_c = attest(a, "c")
    attest(a, "d")
    seq = psp_seqnos(a)
    check(len(seq) == 4, f"the responder saw {len(seq)} requests for 4 reports: {seq}")
    details = [f"responder accepted sequence numbers {seq}"]
    if seq[2] == seq[1]:
        details.append(f"after loadvm the guest sent {seq[2]} again, with another message: "
                       "AES-GCM IV reuse under VMPCK0 (a real SNP guest cannot be "
                       "snapshotted like this)")
    if a.has_epoch:
        check(epoch_c != epoch_a, "the RNG epoch did not move across loadvm")
        details.append(f"RNG epoch {epoch_a:#010x} -> {epoch_c:#010x}: sev-guest could know")

    # Two clones of one saved state: each continues the same sequence.
    path = os.path.join(vm.RUNDIR, "s9.migration")
    save_to_file(a, path)
    a.kill()
    clone_seq = []
    for i in range(2):
        with clone_of(ctx, "s9", i, a, path, disk=True, **SNP_AGENT) as c:
            c.g.qmp("cont")
            attest(c, f"clone{i}")
            clone_seq.append(psp_seqnos(c))
    os.unlink(path)
    check(all(len(s) == 1 for s in clone_seq), f"clone requests: {clone_seq}")
    check(clone_seq[0] == clone_seq[1], f"clones used sequence numbers {clone_seq}")
    details.append(f"2 clones each got their report with sequence number {clone_seq[0][0]}")
    return 3, "4 reports across savevm/loadvm, 1 in each of 2 clones", details
