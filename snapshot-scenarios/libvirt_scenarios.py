#!/usr/bin/python3
"""libvirt_scenarios.py - the snapshot scenarios through libvirt, at a fan-out of 32 clones.

usage: libvirt_scenarios.py [--kernel BZIMAGE] [--clones N] [--only NAME[,NAME...]]
                            [--tap FILE] [--json FILE]

Operators snapshot and clone through libvirt, not QMP.  This runs Debian's libvirtd (a
private one: scripts/libvirtd.sh, started here and stopped at the end, nothing left
running) with our patched QEMU as the domains' <emulator>, and asserts what the raw
scenarios (run.py) assert, through libvirt's own operations:

  snapshot   virsh snapshot-create-as + snapshot-revert (internal snapshot in the qcow2):
             the original after the snapshot and the reverted VM (libvirt starts a new
             QEMU with -loadvm) each see the epoch move atomically (final - N <= 1)
  managedsave  virsh managedsave + start: atomic in the restored VM
  clones     virsh save once, then 32 clones with virsh restore, each with its own name,
             UUID, disk overlay (qemu-img) and consoles; per mechanism:
               leak queues  each clone atomic, getrandom() and the epoch-guarded
                            generator pairwise different across all 32, no splat
               none         leak=off, no vmgenid: the negative control, the clones'
                            generator outputs repeat (asserted)
               vmgenid      leak=off with <genid/> (libvirt gives each restore a new
                            GUID): measured, not asserted
             and prints the time to restore 32 clones from one save file, the memory they
             use (PSS), and the getrandom() outputs the clones share after resume.

How the device set reaches libvirt: <rng model='virtio'> is virtio-rng-pci with id rng0;
libvirt has no element for the leak feature (it is on by default: the device's
property), so leak=off goes through <qemu:override> on rng0 (libvirt >= 8.2).  -L (our
firmware) and the device's trace go through <qemu:commandline>; <features><acpi/>, or
libvirt 9.0 passes -no-acpi, which QEMU 9 removed.  virsh restore --xml cannot rename
a domain (libvirt's ABI check refuses another name or UUID), so each clone gets a copy of
the save file whose header (libvirt's domain XML) names it: clone_save().
"""

import argparse
import concurrent.futures
import contextlib
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import scenario_lib as lib  # noqa: E402
from scenario_lib import NotApplicable, check, vm  # noqa: E402

try:
    import libvirt
    import libvirt_qemu
except ImportError:     # reported by main(): the package, not a traceback
    libvirt = None

CLONES = 32
LIBVIRT_DIR = os.path.join(vm.BUILD, "libvirt")
RUNDIR = os.path.join(vm.RUNDIR, "libvirt")
LIBVIRTD = os.path.join(vm.TOP, "scripts", "libvirtd.sh")
QEMU_NS = "http://libvirt.org/schemas/domain/qemu/1.0"


# -- the daemon

class Daemon:
    """The private libvirtd of scripts/libvirtd.sh; stopped by close(), at exit and on
    SIGTERM/SIGINT, with every domain it runs."""

    def __init__(self, path=LIBVIRT_DIR):
        self.path = path
        self.uri = None
        self.conn = None

    def start(self):
        out = subprocess.run([LIBVIRTD, "start", self.path], capture_output=True, text=True)
        if out.returncode:
            raise RuntimeError(f"libvirtd did not start: {out.stderr.strip()}")
        self.uri = out.stdout.strip()
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        libvirt.registerErrorHandler(lambda _ctx, _err: None, None)  # errors raise anyway
        self.conn = libvirt.open(self.uri)
        return self

    def _on_signal(self, signum, _frame):
        self.close()
        sys.exit(128 + signum)

    def version(self):
        v = self.conn.getLibVersion()
        return f"{v // 1000000}.{v // 1000 % 1000}.{v % 1000}"

    def qemu_pid(self, name):
        with open(os.path.join(self.path, "run", "qemu", f"{name}.pid")) as f:
            return int(f.read().strip())

    def close(self):
        if self.conn:
            try:
                self.conn.close()
            except libvirt.libvirtError:
                pass
            self.conn = None
        subprocess.run([LIBVIRTD, "stop", self.path], check=False)


# -- one domain, with the interface of vmharness.Guest that lib.Agent uses

def domain_xml(name, ddir, kernel, append, leak=True, genid=False, disk=None, accel="tcg"):
    """Our device set as libvirt 9.0 domain XML (see the module's docstring)."""
    override = ""
    if not leak:
        override = """
  <qemu:override>
    <qemu:device alias='rng0'><qemu:frontend>
      <qemu:property name='leak' type='bool' value='false'/>
    </qemu:frontend></qemu:device>
  </qemu:override>"""
    disk_xml = ""
    if disk:
        disk_xml = f"""
    <disk type='file' device='disk'><driver name='qemu' type='qcow2'/>
      <source file='{disk}'/><target dev='vda' bus='virtio'/></disk>"""
    return f"""<domain type='{'kvm' if accel == 'kvm' else 'qemu'}' xmlns:qemu='{QEMU_NS}'>
  <name>{name}</name>
  <uuid>{uuid.uuid4()}</uuid>{'''
  <genid/>''' if genid else ''}
  <memory unit='MiB'>256</memory>
  <vcpu>1</vcpu>
  <os>
    <type arch='x86_64' machine='pc'>hvm</type>
    <kernel>{kernel}</kernel>
    <initrd>{vm.INITRD}</initrd>
    <cmdline>console=ttyS0 panic=-1 oops=panic {vm.KERNEL_ARGS} {vm.KUNIT_OFF} {append}</cmdline>
  </os>
  <features><acpi/><apic/></features>
  <cpu mode='maximum'/>
  <clock offset='utc'/>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>destroy</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
    <emulator>{vm.QEMU}</emulator>{disk_xml}
    <controller type='usb' model='none'/>
    <serial type='file'><source path='{ddir}/console.log' append='on'/><target port='0'/></serial>
    <serial type='unix'><source mode='bind' path='{ddir}/command.sock'/><target port='1'/></serial>
    <rng model='virtio'><backend model='random'>/dev/urandom</backend></rng>
    <memballoon model='none'/>
  </devices>
  <qemu:commandline>
    <qemu:arg value='-L'/><qemu:arg value='{vm.FIRMWARE}'/>
    <qemu:arg value='-trace'/><qemu:arg value='enable=virtio_rng_leak*'/>
  </qemu:commandline>{override}
</domain>
"""


class VirtGuest(vm.Guest):
    """A libvirt domain seen as a vmharness.Guest: what concerns the process (start,
    alive, kill, QMP, QEMU's output) goes through libvirt, QMP by its monitor
    pass-through; the console file, ttyS1, HMP, pmemsave and failure reports are
    Guest's own."""

    def __init__(self, daemon, name):       # no QEMU command line: libvirt makes it
        self.daemon = daemon
        self.name = name
        self.dir = os.path.join(RUNDIR, name)
        self.console = os.path.join(self.dir, "console.log")
        self.serial_path = os.path.join(self.dir, "command.sock")
        self.dom = None
        self._command = None
        self.qmp_log = []

    def attach(self):
        self.dom = self.daemon.conn.lookupByName(self.name)
        return self

    def start(self):     # the domain was defined or restored by the caller
        return self.attach()

    def alive(self):
        try:
            return bool(self.dom and self.dom.isActive())
        except libvirt.libvirtError:
            return False

    def kill(self):
        if self._command:
            self._command.close()
            self._command = None
        if self.dom is None:
            return
        try:
            if self.dom.isActive():
                self.dom.destroy()
        except libvirt.libvirtError:
            pass
        try:
            if self.dom.isPersistent():
                self.dom.undefineFlags(libvirt.VIR_DOMAIN_UNDEFINE_MANAGED_SAVE |
                                       libvirt.VIR_DOMAIN_UNDEFINE_SNAPSHOTS_METADATA)
        except libvirt.libvirtError:
            pass

    def stderr(self):
        path = os.path.join(self.daemon.path, "log", "qemu", f"{self.name}.log")
        try:
            with open(path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def qmp(self, cmd, **args):
        req = {"execute": cmd, **({"arguments": args} if args else {})}
        resp = json.loads(libvirt_qemu.qemuMonitorCommand(self.dom, json.dumps(req), 0))
        self.qmp_log.append((cmd, args, resp))
        if "error" in resp:
            raise RuntimeError(f"{self.name}: QMP {cmd} {args}: {resp['error']}")
        return resp["return"]

    def gone(self):
        return None if self.alive() else "the domain ended"


class VirtAgent(lib.Agent):
    """scenario_agent in a libvirt domain.  define(): a persistent domain, started;
    restored(): a domain that restore or start brought up."""

    def __init__(self, daemon, name, kernel, mode="epoch", leak=True, genid=False,
                 disk=False):
        self.name = name
        self.mode = mode
        self.gpa = None
        self.g = VirtGuest(daemon, name)
        self.leak, self.genid, self.kernel = leak, genid, kernel
        self.disk = os.path.join(self.g.dir, "disk.qcow2") if disk else None

    def xml(self):
        return domain_xml(self.name, self.g.dir, self.kernel,
                          f"tests=scenario_agent scenario={self.mode}", leak=self.leak,
                          genid=self.genid, disk=self.disk, accel=vm.choose_accel())

    def define(self):
        shutil.rmtree(self.g.dir, ignore_errors=True)
        os.makedirs(self.g.dir)
        if self.disk:
            vm.make_qcow2(self.disk)
        dom = self.g.daemon.conn.defineXML(self.xml())
        dom.create()
        return self

    def boot(self, timeout=120):
        self.define()
        return super().boot(timeout)


# -- save files: one per clone, libvirt's header naming the clone

SAVE_HEADER = struct.Struct("<16sIIIII56s")     # qemu_saveimage.h, version 2: 92 bytes
SAVE_MAGIC = b"LibvirtQemudSave"


def clone_save(src, dst, old, new):
    """Copy the save file src to dst with the domain XML in libvirt's header changed for
    a clone: the name, a new UUID, and the paths of the source's directory (disk,
    consoles) moved to the clone's.  The migration stream after the header is copied
    as it is (copy_file_range: no pass through user space)."""
    with open(src, "rb") as f:
        head = f.read(SAVE_HEADER.size)
        magic, version, data_len, running, compressed, cookie_off, rest = \
            SAVE_HEADER.unpack(head)
        check(magic == SAVE_MAGIC and version == 2,
              f"{src}: not a libvirt save image of version 2 ({magic!r}, {version})")
        data = f.read(data_len)
        xml = data[:cookie_off].rstrip(b"\0").decode()
        cookie = data[cookie_off:].split(b"\0", 1)[0]
        xml, n = re.subn(r"<uuid>[0-9a-f-]+</uuid>", f"<uuid>{uuid.uuid4()}</uuid>", xml)
        check(n == 1, f"{src}: no <uuid> in the header's XML")
        xml = xml.replace(f"<name>{old}</name>", f"<name>{new}</name>")
        xml = xml.replace(f"/{old}/", f"/{new}/")
        body = xml.encode() + b"\0" + cookie + b"\0"
        check(len(body) <= data_len, f"{dst}: the clone's XML does not fit the header")
        body += b"\0" * (data_len - len(body))
        with open(dst, "wb") as out:
            out.write(SAVE_HEADER.pack(magic, version, data_len, running, compressed,
                                       len(xml) + 1, rest))
            out.write(body)
            out.flush()
            pos = SAVE_HEADER.size + data_len
            end = os.fstat(f.fileno()).st_size
            while pos < end:
                done = os.copy_file_range(f.fileno(), out.fileno(), end - pos, pos, pos)
                check(done > 0, f"{dst}: short copy")
                pos += done


def pss_mb(pid):
    """Proportional set size of a process, MiB (shared pages split among sharers)."""
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Pss:"):
                return int(line.split()[1]) / 1024
    return 0.0


class Ctx:
    def __init__(self, daemon, kernel, clones):
        self.daemon = daemon
        self.kernel = kernel
        self.clones = clones
        self.figures = {}


# -- the scenarios: each returns (VMs, figure, detail lines)

@contextlib.contextmanager
def persistent_agent(ctx, name, what):
    """A persistent domain running the agent, spinning on the epoch; on an error its QMP
    exchange, QEMU's output and console are printed; at the end no splat, and it is
    destroyed and undefined either way."""
    a = VirtAgent(ctx.daemon, name, ctx.kernel, disk=True)
    try:
        a.boot()
        lib.require_epoch(a)
        a.wait_spinning()
        yield a
        lib.no_splat(a.g)
    except NotApplicable:
        raise
    except Exception:
        a.g.report_failure(what)
        raise
    finally:
        a.g.kill()


def resume_and_check(a, n, who):
    mark = a.g.console_size()
    a.g.dom.resume()
    ev = a.wait_event(mark)
    return lib.atomic(ev, n, who), ev


def l_snapshot(ctx):
    """virsh snapshot-create-as on a paused VM, resume; then snapshot-revert (a new QEMU
    started by libvirt with -loadvm), resume."""
    with persistent_agent(ctx, "lv-snap", "snapshot") as a:
        a.g.dom.suspend()
        n = a.page()["spins"]
        t0 = time.monotonic()
        snap = a.g.dom.snapshotCreateXML("<domainsnapshot><name>s1</name></domainsnapshot>")
        t_snap = time.monotonic() - t0
        d1, ev1 = resume_and_check(a, n, "original after snapshot-create-as")
        time.sleep(0.2)
        t0 = time.monotonic()
        a.g.dom.revertToSnapshot(snap)       # the snapshot was taken paused: stays paused
        t_revert = time.monotonic() - t0
        check(a.g.dom.state()[0] == libvirt.VIR_DOMAIN_PAUSED,
              f"after snapshot-revert the domain is in state {a.g.dom.state()}, not paused")
        check(a.page()["spins"] == n, "snapshot-revert did not restore the snapshot's spins")
        d2, ev2 = resume_and_check(a, n, "after snapshot-revert")
        check(ev2["old"] == ev1["old"], f"the reverted VM started from epoch {ev2['old']:#x}, "
              f"not the snapshot's {ev1['old']:#x}")
        # The value may repeat (both timelines moved on from the snapshot's): what must
        # differ is what each drew after its move.
        check(ev2["getrandom"] != ev1["getrandom"] and ev2["prng"] != ev1["prng"],
              "the reverted VM repeats the original's getrandom() or generator output")
    return 1, f"final-N {d1} / {d2} (N={n})", [
        f"snapshot-create-as {t_snap:.2f} s: epoch {ev1['old']:#010x} -> {ev1['new']:#010x}, "
        f"final-N {d1}",
        f"snapshot-revert {t_revert:.2f} s (new QEMU, -loadvm): epoch {ev2['old']:#010x} -> "
        f"{ev2['new']:#010x}, final-N {d2}; outputs differ from the original's"]


def l_managedsave(ctx):
    """virsh managedsave of a paused VM, then virsh start: libvirt restores the image."""
    with persistent_agent(ctx, "lv-msave", "managedsave") as a:
        a.g.dom.suspend()
        n = a.page()["spins"]
        t0 = time.monotonic()
        a.g.dom.managedSave()
        t_save = time.monotonic() - t0
        check(a.g.dom.hasManagedSaveImage(), "no managed save image after managedsave")
        check(not a.g.dom.isActive(), "the domain is still running after managedsave")
        t0 = time.monotonic()
        a.g.dom.create()                    # saved paused: starts paused
        t_start = time.monotonic() - t0
        check(not a.g.dom.hasManagedSaveImage(), "start kept the managed save image")
        check(a.page()["spins"] == n, "start did not restore the saved spins")
        d, ev = resume_and_check(a, n, "after managedsave + start")
    return 1, f"final-N {d} (N={n})", [
        f"managedsave {t_save:.2f} s, start {t_start:.2f} s: epoch {ev['old']:#010x} -> "
        f"{ev['new']:#010x}, final-N {d}"]


MECHANISMS = (
    # key, label, leak, genid, agent mode
    ("leak", "leak queues", True, False, "epoch"),
    ("none", "none (leak=off, negative control)", False, False, "line"),
    ("vmgenid", "vmgenid (leak=off, <genid/>)", False, True, "line"),
)


def fan_out(ctx, key, leak, genid, mode):
    """virsh save of one source, ctx.clones clones restored from it (8 at a time),
    resumed together; returns N, the clones' events, restore time, PSS."""
    daemon, count = ctx.daemon, ctx.clones
    src = VirtAgent(daemon, f"lv-{key}-src", ctx.kernel, mode=mode, leak=leak, genid=genid,
                    disk=True).boot()
    clones = []
    try:
        if mode == "epoch":
            lib.require_epoch(src)
        src.wait_spinning()
        time.sleep(0.3)
        src.g.dom.suspend()
        n = src.page()["spins"]
        save = os.path.join(RUNDIR, f"lv-{key}.save")
        src.g.dom.save(save)            # the domain ends; its disk is the clones' base
        src.g.dom.undefine()
        for i in range(count):
            c = VirtAgent(daemon, f"lv-{key}-c{i:02d}", ctx.kernel, mode=mode, leak=leak,
                          genid=genid)
            c.gpa = src.gpa
            shutil.rmtree(c.g.dir, ignore_errors=True)
            os.makedirs(c.g.dir)
            subprocess.run([vm.QEMU_IMG, "create", "-q", "-f", "qcow2", "-F", "qcow2",
                            "-b", src.disk, os.path.join(c.g.dir, "disk.qcow2")], check=True)
            clone_save(save, os.path.join(c.g.dir, "clone.save"), src.name, c.name)
            clones.append(c)
        os.unlink(save)

        def restore(c):
            path = os.path.join(c.g.dir, "clone.save")
            daemon.conn.restoreFlags(path, None, libvirt.VIR_DOMAIN_SAVE_PAUSED)
            os.unlink(path)
            c.g.attach()

        t0 = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(restore, clones))
        t_restore = time.monotonic() - t0
        for i, c in enumerate(clones):
            check(c.page()["spins"] == n, f"clone {i}: spin count differs from the source")
        marks = [c.g.console_size() for c in clones]
        t0 = time.monotonic()
        for c in clones:
            c.g.dom.resume()
        if mode == "line":
            for c in clones:
                c.g.send_command("go\n")
        events = [c.wait_event(m, timeout=180) for c, m in zip(clones, marks)]
        t_events = time.monotonic() - t0
        pss = sum(pss_mb(daemon.qemu_pid(c.name)) for c in clones)
        for i, c in enumerate(clones):
            lib.no_splat(c.g, f"clone {i}")
    except Exception:
        for c in [src] + clones:
            if c.g.dom is not None and c.g.alive():
                c.g.report_failure(f"{key} fan-out")
                break
        raise
    finally:
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda c: c.g.kill(), clones))
        src.g.kill()
    return n, events, t_restore, t_events, pss


def l_clones(ctx):
    count = ctx.clones
    lines, figs = [], []
    for key, label, leak, genid, mode in MECHANISMS:
        n, evs, t_restore, t_events, pss = fan_out(ctx, key, leak, genid, mode)
        kernel_shared = lib.shared_count([e["getrandom"] for e in evs])
        prng_shared = lib.shared_count([e["prng"] for e in evs])
        ctx.figures[key] = {"clones": count, "restore_s": round(t_restore, 2),
                            "first_event_s": round(t_events, 2), "pss_mib": round(pss),
                            "getrandom_shared": kernel_shared, "generator_shared": prng_shared}
        if key == "leak":
            worst = max(lib.atomic(ev, n, f"clone {i}") for i, ev in enumerate(evs))
            lib.pairwise_different([e["getrandom"] for e in evs], "getrandom() output")
            lib.pairwise_different([e["prng"] for e in evs], "user-space generator output")
            ctx.figures[key]["max_final_minus_n"] = worst
            figs.append(f"max final-N {worst}")
        elif key == "none":
            check(prng_shared == count,
                  f"leak=off: the clones' generator outputs should all repeat, {prng_shared} of "
                  f"{count} did: the check could not tell a broken device")
        lines.append(f"{label}: {count} clones restored from one save file in {t_restore:.1f} s "
                     f"(8 at a time), all printed after resume within {t_events:.1f} s, PSS "
                     f"{pss:.0f} MiB ({pss / count:.0f} each); outputs shared with another "
                     f"clone: getrandom() {kernel_shared}/{count}, generator {prng_shared}/{count}")
        figs.append(f"{key} {kernel_shared}/{count}")
    return 3 * (count + 1), ", ".join(figs), lines


SCENARIOS = (
    ("snapshot", "virsh snapshot-create-as + snapshot-revert (internal, qcow2)", l_snapshot),
    ("managedsave", "virsh managedsave + start", l_managedsave),
    ("clones", "virsh save + restore of 32 clones, per mechanism", l_clones),
)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    p.add_argument("--kernel", default=vm.KERNEL)
    p.add_argument("--clones", type=int, default=CLONES)
    p.add_argument("--only", help="comma-separated scenario names: " +
                   ", ".join(s[0] for s in SCENARIOS))
    p.add_argument("--tap", help="also write TAP to this file")
    p.add_argument("--json", help="write the figures as JSON to this file")
    a = p.parse_args()
    todo = [s for s in SCENARIOS if not a.only or s[0] in a.only.split(",")]
    titles = [t.replace("32", str(a.clones)) for _, t, _ in todo]
    print(f"1..{len(todo)}", flush=True)
    os.makedirs(RUNDIR, exist_ok=True)
    daemon = Daemon()
    ctx = Ctx(daemon, os.path.abspath(a.kernel), a.clones)
    refused = None
    try:
        if libvirt is None:
            refused = "python3-libvirt is missing (make deps installs it)"
        else:
            try:
                daemon.start()
                print(f"# libvirt {daemon.version()} (private libvirtd, {daemon.uri}); "
                      f"QEMU {vm.QEMU}; {vm.accel_line()}", flush=True)
            except Exception as e:  # noqa: BLE001 - every scenario fails with it
                refused = f"{type(e).__name__}: {e}"
        failed = lib.run_scenarios([(name, title, fn) for (name, _, fn), title
                                    in zip(todo, titles)], ctx, "libvirt", a.tap, refused)
    finally:
        if libvirt is not None:
            daemon.close()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(ctx.figures, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
