#!/usr/bin/env python3
"""check-migrate-unpatched - migrate a guest between our QEMU and Debian's unpatched one.

usage: check-migrate-unpatched.py OUT.tap

A machine type that a QEMU release ships is a promise: a guest started on it migrates
to and from that release.  Our series must keep it, so the entropy-leak feature is off
for every machine type the row's QEMU version already has (pc-i440fx-7.2 on 7.2,
pc-i440fx-10.0 on 10.0) and on only for the machine type the series adds.  This checks
the promise against Debian's own binary package of the same QEMU version, unpacked into
build/debian-qemu/ (apt-get download + dpkg-deb -x of qemu-system-x86 and qemu-system-common; nothing is
installed):

  1. our QEMU on that machine type has leak=off by default;
  2. a guest (our kernel, the scenario agent in line mode) booted on our QEMU migrates
     to Debian's and runs there: its virtio-rng driver negotiated what our device
     offered, and Debian's QEMU loads that device;
  3. and migrates back to our QEMU and runs there;
  4. negative control: with leak=on given explicitly, the driver negotiates the
     feature and Debian's QEMU must refuse the stream, while our source runs on.  A
     check that cannot fail proves nothing.

"Runs" means: the agent answers a line typed on ttyS1 on the side it now runs on.
Writes one TAP line per check to OUT.tap and prints them; exits non-zero on a failure.
The Debian package version of each row's QEMU is pinned in versions.mk
(QEMU_DEBIAN_BINARY_<version>).
"""
import functools
import glob
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vmharness as vm  # noqa: E402

QV = vm.QEMU_VERSION
MACHINE = f"pc-i440fx-{QV}"           # the newest machine type the release has
PACKAGE = "qemu-system-x86"
# Debian builds QEMU with modules; 7.2's TCG is one (accel-tcg-x86_64.so), which
# qemu-system-common of the same version carries.
MODULES = "qemu-system-common"
DEBIAN_DIR = os.path.join(vm.BUILD, "debian-qemu")
READY = r"^# scenario: ready page_gpa=(0x[0-9a-f]+)"
EVENT = r"# scenario: event n=(\d+)"
BOOT_TIMEOUT = 120
MIGRATE_TIMEOUT = 120


class Failed(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failed(msg)


def dpkg_compare(a, b):
    if a == b:
        return 0
    gt = subprocess.run(["dpkg", "--compare-versions", a, "gt", b]).returncode == 0
    return 1 if gt else -1


def fetch_debian_qemu():
    """Debian's qemu-system-x86_64 of the row's QEMU version, unpacked into build/."""
    pinned = vm.VERSIONS.get(f"QEMU_DEBIAN_BINARY_{QV}")
    if not pinned:
        raise Failed(f"versions.mk pins no QEMU_DEBIAN_BINARY_{QV}")
    version = pinned
    policy = subprocess.run(["apt-cache", "madison", PACKAGE], capture_output=True,
                            text=True).stdout
    offered = [l.split("|")[1].strip() for l in policy.splitlines() if "|" in l]
    if version not in offered:
        # The newest of the same upstream major.minor that Debian still serves.
        same = [v for v in offered if v.split(":")[-1].startswith(f"{QV}.")
                or v.split(":")[-1].startswith(f"{QV}+")]
        if not same:
            raise Failed(f"Debian serves no {PACKAGE} {pinned} nor any {QV}.x "
                         f"(apt-cache madison: {', '.join(offered) or 'nothing'})")
        version = max(same, key=functools.cmp_to_key(dpkg_compare))
        print(f"# WARNING: {PACKAGE} {pinned} is no longer served; using {version}")
    root = os.path.join(DEBIAN_DIR, version.replace(":", "_"))
    binary = os.path.join(root, "usr", "bin", "qemu-system-x86_64")
    if not os.path.exists(binary):
        dl = root + ".dl"
        shutil.rmtree(dl, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)
        os.makedirs(dl)
        got = subprocess.run(["apt-get", "download", "-qq", f"{PACKAGE}={version}",
                              f"{MODULES}={version}"], cwd=dl, capture_output=True,
                             text=True)
        if got.returncode:
            raise Failed(f"apt-get download {PACKAGE}={version} {MODULES}={version}: "
                         f"{got.stderr.strip()}")
        for deb in glob.glob(os.path.join(dl, "*.deb")):
            subprocess.run(["dpkg-deb", "-x", deb, root], check=True)
        shutil.rmtree(dl)
    # Its modules where it looks for them (our own build has none)
    os.environ["QEMU_MODULE_DIR"] = os.path.join(root, "usr", "lib", "x86_64-linux-gnu",
                                                 "qemu")
    missing = [l.split()[0] for l in subprocess.run(
        ["ldd", binary], capture_output=True, text=True).stdout.splitlines()
        if "not found" in l]
    if missing:
        raise Failed(f"Debian's {binary} needs {', '.join(missing)} (run 'make deps')")
    out = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout
    return binary, version, out.splitlines()[0] if out else "?"


def guest(name, binary, leak=None, incoming=None):
    """A guest of our kernel with the agent in line mode, on binary, on MACHINE.

    Debian's binary has the default devices of a full build; ours has the device set
    of qemu-patches/reseed-lab-devices.mak, without the HPET, vmport and vmmouse that
    '-M pc' gives by default.  Both run without them: the same VM on either side."""
    rng = "virtio-rng-pci,id=rng0" + ("" if leak is None else f",leak={leak}")
    extra = ["-incoming", incoming] if incoming else []
    return vm.Guest(name, append="tests=scenario_agent scenario=line", devices=(rng,),
                    extra=extra, serial_input=True, qemu=binary,
                    machine=f"{MACHINE},hpet=off,vmport=off")


def answers(g, start=0, timeout=60):
    """The agent on g answers a line typed on ttyS1: the guest runs there."""
    offset = max(start, g.console_size())
    g.send_command("ping\n")
    g.wait_console(EVENT, timeout, offset)
    g.wait_console(r"# scenario: waiting for a line", timeout, offset)


def migrate(src, dest, uri, expect_ok=True):
    src.qmp("migrate", uri=uri)
    deadline = time.monotonic() + MIGRATE_TIMEOUT
    while True:
        status = src.qmp("query-migrate").get("status")
        if status in ("completed", "failed", "cancelled"):
            break
        check(time.monotonic() < deadline, f"migration still {status} after "
              f"{MIGRATE_TIMEOUT}s")
        time.sleep(0.05)
    if not expect_ok:
        return status
    check(status == "completed", f"migration {src.name} -> {dest.name}: {status}")
    while dest.status() == "inmigrate":
        check(time.monotonic() < deadline, f"{dest.name}: still inmigrate")
        time.sleep(0.05)
    check(dest.status() == "running", f"{dest.name}: {dest.status()} after migration")
    return status


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    results = []
    guests = []

    def record(ok, name):
        results.append((ok, name))
        print(f"{'ok' if ok else 'not ok'} {len(results)} - {name}", flush=True)

    def run(name, fn):
        try:
            fn()
            record(True, name)
            return True
        except (Failed, vm.Timeout, RuntimeError, subprocess.CalledProcessError) as e:
            for g in guests:
                if g.proc is not None:
                    g.report_failure(str(e))
            record(False, f"{name}: {e}")
            return False
        finally:
            for g in guests:
                g.kill()
            guests.clear()

    ours = vm.QEMU
    state = {}

    def fetch():
        state["debian"], state["version"], state["banner"] = fetch_debian_qemu()
        print(f"# Debian's {PACKAGE} {state['version']}: {state['banner']}")
        print(f"# ours: {ours}; machine type {MACHINE}; {vm.accel_line()}")

    run(f"Debian's {PACKAGE} for QEMU {QV} unpacked", fetch)
    debian = state.get("debian")
    label = f"Debian's {state.get('version', '?')}"

    def default_off():
        g = guest("mig-unpatched-default", ours)
        guests.append(g)
        g.start()
        leak = g.qmp("qom-get", path="/machine/peripheral/rng0/virtio-backend",
                     property="leak")
        check(leak is False, f"{MACHINE}: leak={leak} by default, want off")
        g.qmp("quit")

    run(f"{MACHINE}: virtio-rng leak is off by default", default_off)

    def there_and_back():
        a = guest("mig-unpatched-ours", ours)
        guests.append(a)
        a.start()
        a.wait_console(READY, BOOT_TIMEOUT)
        answers(a)
        sock = os.path.join(vm.RUNDIR, "mig-unpatched.sock")
        b = guest("mig-unpatched-debian", debian, incoming=f"unix:{sock}")
        guests.append(b)
        b.start()
        migrate(a, b, f"unix:{sock}")
        answers(b)
        state["there"] = True
        c = guest("mig-unpatched-back", ours, incoming=f"unix:{sock}")
        guests.append(c)
        c.start()
        migrate(b, c, f"unix:{sock}")
        answers(c)

    if debian:
        ok = run(f"{MACHINE}, guest booted on ours, migrated to {label} and back, runs "
                 "on each", there_and_back)
        if not ok and not state.get("there"):
            print(f"# the first migration failed: ours -> {label}")

    def leak_on_refused():
        a = guest("mig-unpatched-leak-on", ours, leak="on")
        guests.append(a)
        a.start()
        a.wait_console(READY, BOOT_TIMEOUT)
        status = a.qmp("x-query-virtio-status",
                       path="/machine/peripheral/rng0/virtio-backend")
        features = status["guest-features"]
        check(any("VIRTIO_RNG_F_LEAK" in f for f in features.get("dev-features", []))
              or features.get("unknown-dev-features", 0) & 1,
              f"the guest did not negotiate VIRTIO_RNG_F_LEAK: {features}")
        sock = os.path.join(vm.RUNDIR, "mig-unpatched-leak-on.sock")
        b = guest("mig-unpatched-leak-on-debian", debian, incoming=f"unix:{sock}")
        guests.append(b)
        b.start()
        status = migrate(a, b, f"unix:{sock}", expect_ok=False)
        try:
            code = b.wait_exit(30)
        except vm.Timeout:
            code = None
        check(code not in (None, 0), f"{label} did not refuse the stream (exit {code})")
        refused = [l for l in b.stderr().splitlines() if "virtio-rng" in l or "load" in l]
        print(f"# {label} said: {' / '.join(refused[-3:])}")
        # Without a return path the source may have sent everything before the
        # destination failed: it then reports 'completed' and waits stopped, and
        # the operator continues it.
        print(f"# the source reported the migration {status}; it is {a.status()}")
        check(status in ("failed", "completed"), f"leak=on: migration {status}")
        if a.status() != "running":
            a.qmp("cont")
        answers(a)

    if debian:
        run(f"negative control: leak=on on {MACHINE} is refused by {label}, the source "
            "runs on", leak_on_refused)

    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        f.write(f"TAP version 13\n1..{len(results)}\n")
        for i, (ok, name) in enumerate(results, 1):
            f.write(f"{'ok' if ok else 'not ok'} {i} - {name}\n")
    sys.exit(0 if results and all(ok for ok, _ in results) else 1)


if __name__ == "__main__":
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(__doc__.strip())
        sys.exit(0)
    main()
