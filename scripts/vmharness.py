"""vmharness - start, drive and stop reseed-lab QEMU guests from the host.

Everything that boots a guest goes through this module: the guest-test runner
(scripts/guest-test.py), the snapshot scenarios and the benchmarks.  It

  * picks the accelerator: KVM only when a real probe boot of our kernel works there
    (on this project's machines /dev/kvm exists but kills ordinary guests), TCG
    otherwise, and says which, once;
  * starts QEMU with a QMP socket and a serial log in its own directory under build/;
  * waits on console lines and QMP events with timeouts;
  * ends only the processes it started, by pid.
"""

import fcntl
import os
import re
import shutil
import signal
import subprocess
import sys
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(TOP, "build")


def read_versions():
    """The 'NAME := VALUE' lines of versions.mk, where the rows are pinned."""
    out = {}
    with open(os.path.join(TOP, "versions.mk")) as f:
        for line in f:
            m = re.match(r"^([A-Za-z0-9_.]+)\s*:=\s*(.*?)\s*$", line)
            if m:
                out[m.group(1)] = m.group(2)
    return out


VERSIONS = read_versions()
ROWS = VERSIONS["ROWS"].split()


def row_paths(row):
    """Where the builds of a row of base trees are (the Makefile's layout)."""
    if row not in ROWS:
        raise SystemExit(f"unknown row {row!r}: the rows of versions.mk are {' '.join(ROWS)}")
    qv = VERSIONS[f"QEMU_OF_ROW_{row}"]
    return {
        "qemu": os.path.join(BUILD, f"qemu-{qv}"),
        "qemu_src": os.path.join(BUILD, "src", f"qemu-{qv}"),
        "kernel": os.path.join(BUILD, f"linux-{row}", "arch", "x86", "boot", "bzImage"),
        "initrd": os.path.join(BUILD, f"guest-{row}", "initramfs.cpio.gz"),
        "qemu_version": qv,
    }


# The row: the Makefile exports RESEED_ROW and the paths of its builds (which differ
# with KASAN=1); run by hand, a script uses the default row, or RESEED_ROW.
ROW = os.environ.get("RESEED_ROW") or VERSIONS["DEFAULT_ROW"]
# Under TCG on a loaded host the kernel's check that the IO-APIC delivers the timer
# can time out and panic the boot ("IO-APIC + timer doesn't work!", seen with two
# test runs sharing 2 cores): the emulated timer is wired right, so skip the check.
# pty.legacy_count=0: tinyconfig keeps the 256 BSD pty pairs, whose registration is
# 0.5 s of every boot under TCG; no guest here opens one (they use /dev/pts).
KERNEL_ARGS = "no_timer_check pty.legacy_count=0"
# Our kernels have the RNG epoch's, the leak queues' and configfs-tsm's KUnit suites built
# in, and they run at every boot (0.5-0.6 s under TCG).  The guest suite's boots report
# them (guest-test.py --kunit, Guest(kunit=True)); every other boot skips them with a
# filter no suite matches (kunit.enable= is 6.3's; the 6.1 row's kernel has the filter).
KUNIT_OFF = "kunit.filter_glob=none"
_paths = row_paths(ROW)
QEMU_DIR = os.environ.get("RESEED_QEMU") or _paths["qemu"]
QEMU_SRC = os.environ.get("RESEED_QEMU_SRC") or _paths["qemu_src"]
QEMU_VERSION = _paths["qemu_version"]
QEMU = os.path.join(QEMU_DIR, "qemu-system-x86_64")
QEMU_IMG = os.path.join(QEMU_DIR, "qemu-img")
FIRMWARE = os.path.join(QEMU_DIR, "pc-bios")
KERNEL = os.environ.get("RESEED_KERNEL") or _paths["kernel"]
INITRD = os.environ.get("RESEED_INITRD") or _paths["initrd"]
RUNDIR = os.path.join(BUILD, "run", ROW)

# What a kernel prints when something is wrong that a test might not notice.
SPLAT = re.compile(
    r"WARNING:|BUG:|KASAN:|KFENCE:|UBSAN:|Oops|Kernel panic|"
    r"general protection fault|sleeping function called from invalid context|"
    r"possible (circular|recursive) locking|inconsistent lock state|"
    r"suspicious RCU usage|INFO: task .* blocked|Call Trace:")

# The fake SEV-SNP responder (docs/snp-responder.md) with the chain scripts/snp-certs.sh
# made in build/snp.
SNP_CERTS = os.path.join(BUILD, "snp")


def snp_responder(extra=""):
    """The device with the fake chain, and the chip id its VCEK certifies."""
    d = SNP_CERTS
    try:
        with open(os.path.join(d, "chip_id.hex")) as f:
            chip = f",chip-id={f.read().strip()}"
    except OSError:
        chip = ""
    return (f"sev-snp-responder,id=snp0,vcek-key={d}/vcek.key,vcek-cert={d}/vcek.der,"
            f"ask-cert={d}/ask.der,ark-cert={d}/ark.der{chip}{extra}")


USERSPACE_UP = "# reseed-lab: userspace up"
ALL_DONE = "# reseed-lab: all tests done"

_started = []


def log(msg):
    print(f"# {msg}", flush=True)


def qmp_class():
    """QEMU's own QMP client, from the unpacked QEMU source tree."""
    path = os.path.join(QEMU_SRC, "python")
    if path not in sys.path:
        sys.path.insert(0, path)
    from qemu.qmp.legacy import QEMUMonitorProtocol  # noqa: E402
    return QEMUMonitorProtocol


def _kill_all():
    for g in list(_started):
        g.kill()


def _on_signal(signum, _frame):
    _kill_all()
    sys.exit(128 + signum)


signal.signal(signal.SIGTERM, _on_signal)
signal.signal(signal.SIGINT, _on_signal)


def _refused(exc):
    """Whether a QMP connect failed in a way that trying again can mend: nothing
    listened on the socket yet, or the session's first message was not a greeting
    (seen once in 40 fresh-clone runs, on a loaded host, at scenario 12's first VM)."""
    while exc is not None:
        if isinstance(exc, ConnectionRefusedError) or "Greeting" in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


class Timeout(Exception):
    pass


class Guest:
    """One QEMU process: a guest booted from our kernel and initramfs."""

    def __init__(self, name, append="", kernel=KERNEL, initrd=INITRD, accel=None,
                 mem=256, smp=1, cpu="max", devices=("virtio-rng-pci,id=rng0",),
                 drive=None, extra=(), qmp=True, serial_input=False, qemu=QEMU,
                 firmware=FIRMWARE, machine="pc", kunit=False):
        self.name = name
        self.dir = os.path.join(RUNDIR, name)
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        self.console = os.path.join(self.dir, "console.log")
        self.qmp_path = os.path.join(self.dir, "qmp.sock")
        self.stderr_path = os.path.join(self.dir, "qemu.stderr")
        self.serial_path = os.path.join(self.dir, "command.sock")
        self._command = None
        self.accel = accel or choose_accel()
        self.args = [
            qemu, "-nodefaults", "-display", "none", "-no-reboot",
            "-L", firmware,
            "-machine", machine, "-accel", self.accel, "-cpu", cpu,
            "-m", str(mem), "-smp", str(smp),
            "-kernel", kernel, *(("-initrd", initrd) if initrd else ()),
            "-append", f"console=ttyS0 panic=-1 oops=panic {KERNEL_ARGS} "
                       f"{'' if kunit else KUNIT_OFF + ' '}{append}".strip(),
        ]
        self.args += ["-serial", f"file:{self.console}"]
        if serial_input:
            # A second UART (ttyS1) that the guest only reads: the host types commands
            # there.  Not the console: a host connected to the console's chardev slows
            # the guest's output to a crawl, and bytes it sent are lost when it leaves.
            self.args += ["-chardev", f"socket,id=cmd0,path={self.serial_path},server=on,"
                          "wait=off", "-serial", "chardev:cmd0"]
        if qmp:
            self.args += ["-qmp", f"unix:{self.qmp_path},server=on,wait=off"]
        if drive:
            self.args += ["-drive", f"file={drive},if=none,id=disk0,format=qcow2",
                          "-device", "virtio-blk-pci,drive=disk0"]
        for d in devices:
            self.args += ["-device", d]
        self.args += list(extra)
        self.proc = None
        self.monitor = None
        self.qmp_log = []

    # -- process
    def start(self):
        self._stderr = open(self.stderr_path, "w")
        self.proc = subprocess.Popen(self.args, stdin=subprocess.DEVNULL,
                                     stdout=self._stderr, stderr=subprocess.STDOUT)
        _started.append(self)
        if "-qmp" in self.args:
            try:
                self._connect_qmp()
            except BaseException:
                self.kill()     # no QEMU left running when its start fails
                raise
        return self

    def _connect_qmp(self, timeout=10):
        """Connect to QEMU's QMP socket once it exists and listens.  QEMU binds the
        socket before it listens: on a loaded host a connect() can fall between the two
        and be refused, so a refusal, like a missing socket, is retried until the
        deadline; QEMU exiting meanwhile is reported with its stderr."""
        cls = qmp_class()
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name}: QEMU exited at start-up:\n{self.stderr()}")
            error = None
            if os.path.exists(self.qmp_path):
                monitor = cls(self.qmp_path)
                try:
                    monitor.connect()
                    self.monitor = monitor
                    return
                except Exception as e:
                    if not _refused(e):
                        raise
                    error = e
                    try:
                        monitor.close()
                    except Exception:
                        pass
            if time.monotonic() > deadline:
                if error:
                    raise error
                raise Timeout(f"{self.name}: no QMP socket after {timeout}s")
            time.sleep(0.02)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def wait_exit(self, timeout):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise Timeout(f"{self.name}: still running after {timeout}s") from None

    def kill(self):
        if self._command:
            self._command.close()
            self._command = None
        if self.monitor:
            try:
                self.monitor.close()
            except Exception:
                pass
            self.monitor = None
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self in _started:
            _started.remove(self)
        if getattr(self, "_stderr", None):
            self._stderr.close()
            self._stderr = None

    def stderr(self):
        with open(self.stderr_path, errors="replace") as f:
            return f.read()

    # -- QMP
    def qmp(self, cmd, **args):
        """Run a QMP command; return its 'return' value, raise on 'error'."""
        # QEMU 7.2's legacy client: cmd() is the whole response; 10.0's: cmd_raw().
        raw = getattr(self.monitor, "cmd_raw", self.monitor.cmd)
        resp = raw(cmd, args) if args else raw(cmd)
        self.qmp_log.append((cmd, args, resp))
        if "error" in resp:
            raise RuntimeError(f"{self.name}: QMP {cmd} {args}: {resp['error']}")
        return resp["return"]

    def hmp(self, line):
        """Run an HMP command; HMP reports errors as text, so any output is an error
        unless the caller expects output (then use hmp_output)."""
        out = self.hmp_output(line)
        if out.strip():
            raise RuntimeError(f"{self.name}: HMP '{line}': {out.strip()}")

    def hmp_output(self, line):
        return self.qmp("human-monitor-command", **{"command-line": line})

    def wait_event(self, name, timeout):
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Timeout(f"{self.name}: no QMP event {name} after {timeout}s")
            ev = self.monitor.pull_event(wait=left)
            if ev is not None:
                self.qmp_log.append(("event", {}, ev))
                if ev["event"] == name:
                    return ev

    def status(self):
        return self.qmp("query-status")["status"]

    # -- guest memory (read while the VM is stopped)
    def read_phys(self, addr, size):
        path = os.path.join(self.dir, "pmem.bin")
        self.qmp("pmemsave", val=addr, size=size, filename=path)
        with open(path, "rb") as f:
            data = f.read()
        os.unlink(path)
        return data

    # -- console
    def send_command(self, text):
        """Type text on the guest's command UART, ttyS1 (needs serial_input=True)."""
        import socket
        if self._command is None:
            self._command = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self._command.connect(self.serial_path)
        self._command.sendall(text.encode())

    def console_size(self):
        try:
            return os.path.getsize(self.console)
        except OSError:
            return 0

    def read_console(self):
        try:
            # latin-1: one character per byte, so offsets agree with console_size()
            with open(self.console, encoding="latin-1", newline="") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def wait_console(self, pattern, timeout, start=0):
        """Wait until the console (from offset start) matches pattern; return the match."""
        rx = re.compile(pattern, re.M)
        deadline = time.monotonic() + timeout
        while True:
            m = rx.search(self.read_console(), start)
            if m:
                return m
            gone = self.gone()
            if gone:
                raise Timeout(f"{self.name}: {gone} before the console showed /{pattern}/")
            if time.monotonic() > deadline:
                raise Timeout(f"{self.name}: console did not show /{pattern}/ in {timeout}s")
            time.sleep(0.02)

    def gone(self):
        """Why the guest can print nothing more (QEMU exited), or None."""
        if self.proc.poll() is not None:
            return f"QEMU exited (status {self.proc.returncode})"
        return None

    def console_tail(self, n=40):
        return "\n".join(self.read_console().splitlines()[-n:])

    def report_failure(self, what):
        """Print what explains a failure: the last QMP exchange and console lines."""
        log(f"{self.name}: {what}")
        for cmd, args, resp in self.qmp_log[-10:]:
            log(f"  qmp {cmd} {args} -> {str(resp)[:300]}")
        lines = self.stderr().splitlines()
        trace = [l for l in lines if l.startswith(("virtio_rng", "snp_responder"))]
        if trace:
            log(f"  last device trace lines of {self.name}:")
            for line in trace[-12:]:
                log(f"  t {line}")
        # What QEMU itself said (a refused incoming migration, a bad option): not trace.
        said = [l for l in lines if l not in trace and not re.match(r"^\d+@\d", l)]
        if said:
            log(f"  QEMU's messages of {self.name}:")
            for line in said[-8:]:
                log(f"  ! {line}")
        log(f"  last console lines of {self.name}:")
        for line in self.console_tail().splitlines():
            log(f"  | {line}")


def make_qcow2(path, size="64M"):
    """An empty qcow2 disk: savevm needs one to store its snapshots in."""
    subprocess.run([QEMU_IMG, "create", "-q", "-f", "qcow2", path, size], check=True)
    return path


def splats(console):
    """Lines of a console log that show a kernel splat, with context."""
    lines = console.splitlines()
    out = []
    for i, line in enumerate(lines):
        if SPLAT.search(line):
            out.append("\n".join(lines[max(0, i - 3):i + 12]))
    return out


# -- accelerator choice

def _kvm_probe():
    for f in (QEMU, KERNEL, INITRD):
        if not os.path.exists(f):
            raise RuntimeError(f"cannot probe the accelerator: {f} is missing (make guest)")
    if not os.path.exists("/dev/kvm"):
        return "tcg", "no /dev/kvm"
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return "tcg", "/dev/kvm is not accessible"
    g = Guest("kvm-probe", accel="kvm", qmp=False)
    g.start()
    try:
        g.wait_exit(15)
    except Timeout:
        g.kill()
        return "tcg", "KVM probe boot did not reach user space in 15s"
    finally:
        g.kill()
    con = g.read_console()
    err = g.stderr().strip().splitlines()
    if USERSPACE_UP in con and ALL_DONE in con:
        return "kvm", "KVM probe boot reached user space"
    why = next((l for l in err if "KVM" in l or "error" in l.lower()), None)
    return "tcg", f"KVM probe boot failed: {why or 'guest did not reach user space'}"


ACCEL_PROBE_MAX_AGE = 24 * 3600


def _accel_cache():
    """Outside the clone, as the build caches are (a fresh clone whose QEMU came from
    the build cache has the same binary); RESEED_BUILD_CACHE= keeps it in build/."""
    if os.environ.get("RESEED_BUILD_CACHE", "on"):
        base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
        d = os.path.join(base, "reseed-lab", "accel")
    else:
        d = BUILD
    os.makedirs(d, exist_ok=True)
    return os.path.join(d, f"accel-qemu-{QEMU_VERSION}")


def choose_accel():
    """'kvm' when a real boot works there, else 'tcg'; cached for a day per host kernel
    and QEMU binary (whether KVM works is the host's property, not the guest kernel's,
    so a rebuilt guest kernel does not pay for a new probe)."""
    forced = os.environ.get("RESEED_ACCEL")
    if forced:
        return forced
    cache = _accel_cache()
    st = os.stat(QEMU)
    u = os.uname()
    key = f"{u.release} {u.version}:{st.st_size}:{int(st.st_mtime)}"

    def cached():
        try:
            with open(cache) as f:
                k, accel, _ = f.read().rstrip("\n").split("\t")
            if k == key and time.time() - os.stat(cache).st_mtime < ACCEL_PROBE_MAX_AGE:
                return accel
        except (OSError, ValueError):
            pass
        return None

    accel = cached()
    if accel:
        return accel
    # One probe at a time (make check runs two suites at once, and the probe's guest
    # has one name): the second finds the first's answer.
    with open(f"{cache}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        accel = cached()
        if accel:
            return accel
        accel, why = _kvm_probe()
        tmp = f"{cache}.{os.getpid()}"
        with open(tmp, "w") as f:
            f.write(f"{key}\t{accel}\t{why}\n")
        os.replace(tmp, cache)
    return accel


def accel_line():
    """One line saying which accelerator is in use and why."""
    accel = choose_accel()
    try:
        with open(_accel_cache()) as f:
            why = f.read().rstrip("\n").split("\t")[2]
    except (OSError, IndexError):
        why = "set by RESEED_ACCEL"
    return f"row {ROW} (QEMU {QEMU_VERSION}): accelerator: {accel.upper()} ({why})"
