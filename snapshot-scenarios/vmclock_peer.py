#!/usr/bin/env python3
"""vmclock_peer.py - the peer: Linux 7.x's VMClock generation counter.

usage: vmclock_peer.py [--kernel VMLINUZ] [--initrd CPIO] [--clones N] [--settle S]
                       [--modes epoch,pstream,stream,vstream] [--json FILE]

Debian's prebuilt Linux 7 cloud kernel (scripts/fetch-kernel-7.sh) has ptp_vmclock,
which maps VMClock's page read-only into user space (/dev/vmclock0): a program can watch
vm_generation_counter, which our QEMU 10.0 series bumps before the vCPUs resume on
loadvm and incoming migration (-device vmclock on the series' pc-i440fx-10.1, where
vm-gen-counter and the notification are on).  That kernel does nothing else with it:
its RNG reseeds after a restore only through vmgenid, if the VM has one.

With our QEMU, for each of '-device vmclock' and '-device vmclock' plus
'-device vmgenid,guid=auto', one source is saved to a migration file per mode of
guest-tests/scenario_vmclock_peer and --clones clones are started from it in turn, as
snapshot-scenarios/scenario_lib.py's stream_clones() does:

  epoch    spin on the counter (final - N <= 1: it moved before the clone's first
           instruction), then the first outputs after it: counter-guarded generator,
           getrandom(), vDSO getrandom()
  pstream  the counter-guarded user-space generator (guest-tests/epoch_prng.h), which
           reseeds from getrandom() when the counter moved since its last seed
  stream   getrandom() through the syscall
  vstream  getrandom() through the vDSO

and the streams' outputs after resume (from N + 1, N being the output in flight at the
snapshot, as scenarios 7 and 11) that the clones share are counted.  Measures; asserts
nothing but that the harness worked.  The guest initramfs is build/guest-7 (make
peer-vmclock builds it: the peer program and ptp_vmclock.ko, which guest/init loads).
"""

import argparse
import contextlib
import itertools
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "scripts"))
sys.path.insert(0, HERE)
import vmharness as vm  # noqa: E402
import scenario_lib as lib  # noqa: E402

PROGRAM = "scenario_vmclock_peer"
# The series' machine type: the only ones whose vmclock has vm-gen-counter and the
# notification on (hw_compat_10_0 turns both off for pc-i440fx-10.0 and older); the
# 'pc' of vmharness is its alias.  Checked over QMP on every source.
MACHINE = "pc-i440fx-10.1"
# The clones are restores started with -incoming: leak-on-migration=on (lib.VMCLOCK)
VMCLOCK = "vmclock,id=vclk,leak-on-migration=on"
KERNEL7 = os.path.join(vm.BUILD, "upstream-kernel-7", "vmlinuz")
INITRD7 = os.path.join(vm.BUILD, "guest-7", "initramfs.cpio.gz")
SMP = 2                 # the agent on one vCPU, the interrupts on the other (scenario 11)
DUMP = 4096             # outputs compared per clone, from N + 1
BOOT_TIMEOUT = 300      # TCG on a shared 2-core machine
# Seconds a source runs in its mode before it is saved, as in the scenarios (0.5 s): the
# guest's uptime is then about 4 s, when the crng reseeds on its own every max(1 s, uptime / 2)
# at its next draw; after 2 minutes of uptime, every 60 s.
SETTLE = 0.5
MODES = (("epoch", "first outputs after resume"),
         ("pstream", "vmclock-guarded generator"),
         ("stream", "getrandom() syscall"),
         ("vstream", "getrandom() vDSO"))
CONFIGS = (("vmclock", ()), ("vmclock+vmgenid", lib.VMGENID))
# The agent's event line: scenario_agent's fields and the vDSO's output.  Its own
# pattern, not scenario_lib.py's: that one follows scenario_agent.
EVENT = re.compile(r"# scenario: event n=(\d+) final_spins=(\d+) old_epoch=(0x[0-9a-f]+) "
                   r"new_epoch=(0x[0-9a-f]+) reseeds=(\d+) getrandom=([0-9a-f]{64}) "
                   r"prng=([0-9a-f]{64}) vdso=([0-9a-f]{64})")
FLAGS = re.compile(r"# scenario: vmclock flags=(0x[0-9a-f]+) seq_count=(\d+) "
                   r"disruption_marker=(\d+) vm_generation_counter=(\d+)")
VMGENID_DRIVER = re.compile(r"# scenario: vmgenid driver=(\w+)")
VMFORK = "random: crng reseeded due to virtual machine fork"    # vmgenid's reseed


class PeerAgent(lib.Agent):
    """scenario_vmclock_peer in a guest with VMClock (and vmgenid), on MACHINE."""

    def __init__(self, name, mode, kernel, initrd, extra_devices=(), incoming=None):
        self.name, self.mode, self.gpa, self.disk = name, mode, None, None
        extra = ["-S", "-incoming", f"exec:cat {incoming}"] if incoming else []
        self.g = vm.Guest(name, append=f"tests={PROGRAM} scenario={mode} "
                          f"scenario_cpu={SMP - 1}", kernel=kernel, initrd=initrd, smp=SMP,
                          devices=(VMCLOCK,) + tuple(extra_devices), extra=extra,
                          serial_input=True, machine=MACHINE)


def saved_source(tag, mode, kernel, initrd, devices, settle=SETTLE):
    """Boot a source, check its VMClock, save it to a file: (source, N, path, facts)."""
    src = PeerAgent(f"{tag}-src", mode, kernel, initrd, devices)
    try:
        src.boot(BOOT_TIMEOUT)
        gen = src.g.qmp("qom-get", path="/machine/peripheral/vclk", property="vm-gen-counter")
        lib.check(gen is True, f"{MACHINE}: vmclock has vm-gen-counter={gen}")
        src.wait_spinning(120)
        con = src.g.read_console()
        flags = FLAGS.search(con)
        facts = {"flags": int(flags.group(1), 16) if flags else None,
                 "vmgenid_driver": VMGENID_DRIVER.search(con).group(1),
                 "module": "module ptp_vmclock.ko loaded" in con}
        time.sleep(settle)
        path = os.path.join(vm.RUNDIR, f"{tag}.migration")
        n = lib.save_to_file(src, path, timeout=120)
    except lib.NotApplicable:
        raise
    except Exception:
        src.g.report_failure(f"{tag} source")
        raise
    finally:
        src.kill()
    return src, n, path, facts


@contextlib.contextmanager
def clone_of(tag, i, src, n, path, kernel, initrd, devices):
    c = PeerAgent(f"{tag}-clone{i}", src.mode, kernel, initrd, devices, incoming=path)
    c.g.start()
    try:
        c.wait_migrated(120)
        c.gpa = src.gpa
        lib.check(c.page()["spins"] == n, f"clone {i}: spin count differs from the source")
        yield c
    except Exception:
        c.g.report_failure(f"{tag} clone {i}")
        raise
    finally:
        c.kill()


def first_event(c, start, timeout=120):
    deadline = time.monotonic() + timeout
    while True:
        # The kernel's console messages can land inside the agent's line: cut them out.
        m = EVENT.search(lib.KERNEL_LINE.sub("", c.g.read_console()[start:]))
        if m:
            return {"final": int(m.group(2)), "old": int(m.group(3), 16),
                    "new": int(m.group(4), 16), "getrandom": m.group(6), "prng": m.group(7),
                    "vdso": m.group(8)}
        if time.monotonic() > deadline or not c.g.alive():
            raise lib.Failed(f"{c.name}: no event line after {timeout}s")
        time.sleep(0.02)


def shared(streams):
    """From outputs N..N+DUMP of each clone: what they share after resume."""
    pairs = [lib.common_prefix(a["raw"][1:], b["raw"][1:])
             for a, b in itertools.combinations(streams, 2)]
    f = lib.vdso_shared(streams)
    return {"pairs": pairs, "all": min(pairs), "max_pair": max(pairs),
            "median_pair": sorted(pairs)[len(pairs) // 2],
            "pairs_sharing": sum(1 for p in pairs if p), "indices": f["indices"],
            "in_flight": f["in_flight"], "guarded_indices": f["guarded"],
            "sampled": DUMP}


def measure_mode(tag, mode, kernel, initrd, devices, clones, settle=SETTLE):
    src, n, path, facts = saved_source(tag, mode, kernel, initrd, devices, settle)
    out = {"n": n, **facts}
    per, vmfork = [], 0
    try:
        for i in range(clones):
            with clone_of(tag, i, src, n, path, kernel, initrd, devices) as c:
                mark = c.g.console_size()
                c.g.qmp("cont")
                if mode == "epoch":
                    ev = first_event(c, mark)
                    ev["final_minus_n"] = ev["final"] - n
                    ev["moved_before_first_instruction"] = \
                        ev["new"] != ev["old"] and 0 <= ev["final"] - n <= 1
                    per.append(ev)
                else:
                    per.append({r: lib.read_stream(c, r, n, DUMP + 1)
                                for r in ("raw", "guarded")})
                vmfork += VMFORK in c.g.read_console()[mark:]
    finally:
        if os.path.exists(path):
            os.unlink(path)
    out["vmfork_reseeds"] = vmfork
    if mode == "epoch":
        out["clones"] = per
        for k in ("prng", "getrandom", "vdso"):
            out[f"distinct_{k}"] = len({e[k] for e in per})
    else:
        out.update(shared(per))
    return out


def measure(kernel, clones=8, initrd=INITRD7, settle=SETTLE, modes=None):
    """Every mode (or those of modes), without and with vmgenid: a dict of the figures
    (what table() prints)."""
    kernel, initrd = os.path.abspath(kernel), os.path.abspath(initrd)
    for f in (kernel, initrd):
        if not os.path.exists(f):
            raise SystemExit(f"{f} is missing: make peer-vmclock builds it")
    result = {"kernel": kernel, "initrd": initrd, "machine": MACHINE, "clones": clones,
              "smp": SMP, "settle": settle, "accel": vm.choose_accel(), "configs": {}}
    try:
        with open(kernel + ".package") as f:
            result["package"] = f.read().strip()
    except OSError:
        pass
    t_all = time.monotonic()
    for cname, devices in CONFIGS:
        conf = result["configs"][cname] = {}
        for mode, _ in MODES:
            if modes and mode not in modes:
                continue
            t0 = time.monotonic()
            try:
                conf[mode] = measure_mode(f"vmclock-peer-{cname.replace('+', '-')}-{mode}",
                                          mode, kernel, initrd, devices, clones, settle)
            except lib.NotApplicable as e:
                conf[mode] = {"not_applicable": str(e)}
            conf[mode]["seconds"] = round(time.monotonic() - t0, 1)
            vm.log(f"{cname} {mode}: {time.monotonic() - t0:.1f}s")
    result["seconds"] = round(time.monotonic() - t_all, 1)
    return result


def table(r):
    lines = [f"kernel {r.get('package', r['kernel'])}, QEMU {vm.QEMU_VERSION} ({vm.QEMU}), "
             f"-M {MACHINE}, {r['smp']} vCPUs (agent on the last), {r['accel'].upper()}, "
             f"{r['clones']} clones of one migration file per row, saved {r['settle']} s after "
             f"the agent started; {DUMP} outputs of 8 bytes sampled per clone from N + 1",
             "",
             f"{'mechanism':<28} {'devices':<16} {'all clones share':>16} "
             f"{'pair min/med/max':>18} {'pairs>0':>8} {'indices':>7} {'in flight':>9} "
             f"{'guarded':>7} {'vm fork reseed':>14}"]
    npairs = r["clones"] * (r["clones"] - 1) // 2
    for mode, what in MODES[1:]:
        for cname, _ in CONFIGS:
            f = r["configs"][cname].get(mode)
            if f is None:
                continue
            if "not_applicable" in f:
                lines.append(f"{what:<28} {cname:<16} not applicable: {f['not_applicable']}")
                continue
            mmm = f"{min(f['pairs'])}/{f['median_pair']}/{f['max_pair']}"
            lines.append(f"{what:<28} {cname:<16} {f['all']:>16} {mmm:>18} "
                         f"{f['pairs_sharing']:>4}/{npairs:<3} {f['indices']:>7} "
                         f"{f['in_flight']:>7}/{r['clones']:<1} {f['guarded_indices']:>7} "
                         f"{f['vmfork_reseeds']:>12}/{r['clones']}")
    lines += ["  all clones share: outputs after N that all clones have in common, in a row; "
              "pair: the same for each pair of clones;",
              "  indices: sampled indices after N where two clones agree; in flight: clones "
              "whose output N another clone has; guarded: indices from N where",
              "  two clones agree for a caller that re-reads the counter after each call and "
              "calls again when it moved; vm fork reseed: clones whose console showed "
              f"'{VMFORK}' (vmgenid's reseed) by the end", ""]
    for cname, _ in CONFIGS:
        f = r["configs"][cname].get("epoch")
        if f is None:
            continue
        if "not_applicable" in f:
            lines.append(f"{cname}: epoch mode not applicable: {f['not_applicable']}")
            continue
        lines.append(f"{cname}: source flags {f['flags']:#x}, vmgenid driver "
                     f"{f['vmgenid_driver']}, N={f['n']}; counter moved before the first "
                     "instruction (final - N <= 1), per clone:")
        for i, e in enumerate(f["clones"]):
            lines.append(f"  clone {i}: {'yes' if e['moved_before_first_instruction'] else 'NO'}"
                         f" (final-N={e['final_minus_n']}, counter {e['old']} -> {e['new']}); "
                         f"first outputs: generator {e['prng'][:16]}.. getrandom "
                         f"{e['getrandom'][:16]}.. vDSO {e['vdso'][:16]}..")
        lines.append(f"  distinct first outputs of {r['clones']}: generator "
                     f"{f['distinct_prng']}, getrandom {f['distinct_getrandom']}, vDSO "
                     f"{f['distinct_vdso']}; vmgenid's reseed on the console of "
                     f"{f['vmfork_reseeds']} clones")
    lines.append(f"total {r['seconds']:.1f}s")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    p.add_argument("--kernel", default=KERNEL7, help="Linux 7.x vmlinuz (default: "
                   "Debian's, from scripts/fetch-kernel-7.sh)")
    p.add_argument("--initrd", default=INITRD7, help="initramfs with the peer program "
                   "and ptp_vmclock.ko")
    p.add_argument("--clones", type=int, default=8)
    p.add_argument("--settle", type=float, default=SETTLE,
                   help="seconds each source runs before it is saved (default %(default)s)")
    p.add_argument("--modes", help="comma-separated subset of "
                   + ",".join(m for m, _ in MODES))
    p.add_argument("--json", help="also write the figures to this file")
    a = p.parse_args()
    print(f"# {vm.accel_line()}", flush=True)
    r = measure(a.kernel, a.clones, a.initrd, a.settle,
                a.modes.split(",") if a.modes else None)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(r, f, indent=1)
    for line in table(r).splitlines():
        print(f"# {line}")
    ok = all("not_applicable" not in m for c in r["configs"].values() for m in c.values())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
