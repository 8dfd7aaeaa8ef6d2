#!/usr/bin/python3
"""audit-image.py - do clones of an operator's disk image share random outputs: its own
kernel, modules and libraries, measured across clones of one saved state.

usage: scripts/audit-image.py --image DISK [--clones N] [--out DIR] [--mechanisms LIST]
       make audit IMAGE=disk.qcow2 [CLONES=N] [OUT=DIR]

DISK is a raw or qcow2 disk image with a Debian or Ubuntu cloud image's layout: a
partition table (GPT or MBR; or a bare file system) and an ext2/3/4 root file system
with /boot on it or on a partition of its own.  Nothing is written to DISK: every VM runs
on a qcow2 overlay of it, and its SHA-256 is compared before and after.  The image's
newest kernel and initramfs (/boot/vmlinuz-V, /boot/initrd.img-V) are read out of it
with debugfs (no loop mount) and boot it with systemd as init; the kernel command line
asks systemd (systemd.run=) to mount a read-only disk of ours and start the measuring
programs of the user-space suite from it (userspace/guest: the agent, and consumers of
the image's own OpenSSL, glibc, GnuTLS, libsodium, Python and Java, dynamically linked
or on the image's interpreter; Go's and Rust's generators, built in).  A consumer whose library the image lacks is left out
and said so.

Per mechanism (none; vmgenid; VMClock on QEMU 10; the leak queues), as
snapshot-scenarios/userspace.py measures: the guest boots and is saved to a file, --clones
clones resume from it, and per library the figure is how many of the outputs drawn after
resume another clone drew too.  Each labelled with what the guest had in play (its
drivers bound, the leak feature negotiated), not with what QEMU offered.

The verdict (exit status), over the cryptographic consumers (Python's random and Go's
math/rand/v2 are measured, not judged: they are not meant for secrets):
  0 clone-safe      with some mechanism in play, no consumer shared an output
  1 not clone-safe by design: the kernel gave every clone its own bytes (getrandom()
                    and the consumers that ask it on each call shared nothing), but a
                    library with generator state of its own repeated other clones
  2 not clone-safe  even what asks the kernel on each call shared outputs, with every
                    mechanism
  3 no verdict      bad arguments, or the audit failed
Writes DIR/index.html (verdict, a chart per library, the table), DIR/libraries.svg and
DIR/report.json; DIR is --out, by default build/audit/image-FOLDER-NAME (the image's
folder and file names).
"""

import argparse
import concurrent.futures
import datetime
import hashlib
import html
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "scripts"))
import audit  # noqa: E402  (its report's style, chart and exit statuses)

TOOLS = "/run/reseed-tools"
TOOLS_LABEL = "reseed-tools"
# The programs the audit brings (make's US_BIN), and rand_python.py
PROGRAMS = ("us_agent", "rand_openssl", "rand_getrandom", "rand_arc4random", "rand_gnutls",
            "rand_sodium", "tls_client", "rand_go", "rand_rust", "RandJava.class")
# The consumers, as userspace/guest/consumers has them, on the image's own configuration
CONSUMERS = f"""\
openssl         1 {TOOLS}/rand_openssl openssl-RAND_bytes
getrandom       1 {TOOLS}/rand_getrandom
arc4random      1 {TOOLS}/rand_arc4random
gnutls          1 {TOOLS}/rand_gnutls
sodium          1 {TOOLS}/rand_sodium
python-random   1 /usr/bin/python3 {TOOLS}/rand_python.py random
python-secrets  1 /usr/bin/python3 {TOOLS}/rand_python.py secrets
python-uuid4    1 /usr/bin/python3 {TOOLS}/rand_python.py uuid4
tls-server      0 /usr/bin/openssl s_server -quiet -www -accept 127.0.0.1:4433 -cert {TOOLS}/tls/cert.pem -key {TOOLS}/tls/key.pem
tls-client      2 {TOOLS}/tls_client 4433 tls
go              2 {TOOLS}/rand_go
rust            1 {TOOLS}/rand_rust
java            3 /usr/bin/java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx64m -cp {TOOLS} RandJava
"""
# Run by systemd.run= in the image, on the image's own shell: keeps the consumers whose
# program and libraries the image has (the dynamic linker's --list says 'not found'
# otherwise), says which it left out, then becomes the agent.
START = f"""\
#!/bin/sh
exec >/dev/ttyS0 2>&1
keep=/run/reseed-us.consumers
: >"$keep"
ldso=/lib64/ld-linux-x86-64.so.2
server=
while read -r name slots prog rest; do
	case "$name" in '' | '#'*) continue ;; esac
	why=
	if [ ! -x "$prog" ]; then
		why="$prog is not in the image"
	elif [ "$name" = tls-client ] && [ -z "$server" ]; then
		why="no TLS server (no /usr/bin/openssl)"
	elif [ -x "$ldso" ]; then
		for p in "$prog" $rest; do
			case "$p" in {TOOLS}/*.py | *.pem | -* | [0-9]* | tls | {TOOLS}) continue ;; esac
			[ -f "$p" ] || continue
			missing=$("$ldso" --list "$p" 2>&1 | grep 'not found' | head -n 1)
			[ -z "$missing" ] || why="$(basename "$p"): $missing"
		done
	fi
	if [ -n "$why" ]; then
		echo "# image-audit: absent $name: $why"
		continue
	fi
	[ "$name" = tls-server ] && server=1
	echo "$name $slots $prog $rest" >>"$keep"
done <{TOOLS}/consumers
exec {TOOLS}/us_agent "$keep"
"""
ABSENT = re.compile(r"# image-audit: absent (\S+): ([^\r\n]*)")
# Measured, not judged: generators not meant for secrets
NOT_JUDGED = ("python-random", "go-math-rand-v2")


class Parser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(audit.ERROR)


def progress(step, total, text):
    print(f"[{step}/{total}] {text}", flush=True)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(1 << 20)
            if not b:
                return h.hexdigest()
            h.update(b)


def partitions(path):
    """[(number, offset, size)] of the disk's partitions (GPT, or MBR's primaries); a
    disk without a partition table is one file system at offset 0."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        mbr = f.read(512)
        if len(mbr) < 512 or mbr[510:512] != b"\x55\xaa":
            return [(0, 0, size)]
        types = [mbr[446 + 16 * i + 4] for i in range(4)]
        if 0xee in types:
            f.seek(512)
            hdr = f.read(92)
            if hdr[:8] != b"EFI PART":
                raise SystemExit(f"audit-image: {path}: a protective MBR without a GPT")
            lba, n, esize = struct.unpack_from("<QII", hdr, 72)
            if not (0 < n <= 1024 and 128 <= esize <= 4096):
                raise SystemExit(f"audit-image: {path}: a GPT of {n} entries of {esize} bytes")
            f.seek(lba * 512)
            data = f.read(n * esize)
            out = []
            for i in range(n):
                e = data[i * esize:(i + 1) * esize]
                if len(e) < 48 or e[:16] == bytes(16):
                    continue
                first, last = struct.unpack_from("<QQ", e, 32)
                out.append((i + 1, first * 512, (last - first + 1) * 512))
            return out
        out = []
        for i in range(4):
            e = mbr[446 + 16 * i:446 + 16 * (i + 1)]
            start, count = struct.unpack_from("<II", e, 8)
            if e[4] and e[4] not in (0x05, 0x0f, 0x85) and count:
                out.append((i + 1, start * 512, count * 512))
        return out


def is_ext(path, offset):
    with open(path, "rb") as f:
        f.seek(offset + 1024 + 0x38)
        return f.read(2) == b"\x53\xef"


def debugfs(view, offset, command):
    """debugfs's output for command on the file system at offset (read-only)."""
    r = subprocess.run(["debugfs", "-R", command, f"{view}?offset={offset}"],
                       capture_output=True)
    return r.stdout


def listing(view, offset, directory):
    """Names in directory ('ls -p': /inode/mode/uid/gid/name/size/)."""
    out = debugfs(view, offset, f"ls -p {directory}").decode(errors="replace")
    return [line.split("/")[5] for line in out.splitlines() if line.count("/") >= 6]


def version_key(v):
    return [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", v)]


def dpkg_versions(status):
    """{package: version} of the installed packages in a dpkg status file."""
    out = {}
    for para in status.decode(errors="replace").split("\n\n"):
        f = dict(re.findall(r"^(Package|Version|Status): (.*)$", para, re.M))
        if f.get("Status", "").endswith(" installed") and "Package" in f:
            out[f["Package"]] = f.get("Version", "?")
    return out


def inspect(view):
    """The image's root file system, kernel and facts, read with debugfs."""
    root = boot = None
    for num, off, size in partitions(view):
        if not is_ext(view, off):
            continue
        names = listing(view, off, "/")
        if "etc" in names and ("usr" in names or "sbin" in names):
            root = root or (num, off)
        for d in ("/boot", "/"):
            kernels = [n for n in listing(view, off, d) if n.startswith("vmlinuz-")]
            if kernels and boot is None:
                boot = (num, off, d, kernels)
    if root is None:
        raise SystemExit("audit-image: no ext2/3/4 root file system (with /etc and /usr) "
                         "in the image")
    if boot is None:
        raise SystemExit("audit-image: no /boot/vmlinuz-VERSION in the image")
    num, off, d, kernels = boot
    names = listing(view, off, d)
    usable = [k for k in kernels if "initrd.img-" + k[len("vmlinuz-"):] in names]
    if not usable:
        raise SystemExit(f"audit-image: {', '.join(kernels)} without an initrd.img of its "
                         "version")
    kernel = max(usable, key=lambda k: version_key(k[len("vmlinuz-"):]))
    release = kernel[len("vmlinuz-"):]
    dumpe2fs = subprocess.run(["dumpe2fs", "-h", f"{view}?offset={root[1]}"],
                              capture_output=True, text=True).stdout
    uuid = re.search(r"^Filesystem UUID:\s+(\S+)", dumpe2fs, re.M)
    if not uuid:
        raise SystemExit("audit-image: the root file system has no UUID")
    osr = (debugfs(view, root[1], "cat /usr/lib/os-release") or
           debugfs(view, root[1], "cat /etc/os-release")).decode(errors="replace")
    pretty = re.search(r'^PRETTY_NAME="?([^"\n]*)', osr, re.M)
    return {"root_partition": root[0], "root_uuid": uuid.group(1),
            "boot_partition": num, "boot_dir": d, "kernel_file": kernel, "release": release,
            "boot_offset": off,
            "os": pretty.group(1) if pretty else "unknown (no os-release)",
            "packages": dpkg_versions(debugfs(view, root[1], "cat /var/lib/dpkg/status"))}


def tools_disk(work, us_bin):
    """The read-only disk of the measuring programs (ext2: any kernel mounts it)."""
    d = os.path.join(work, "tools")
    os.makedirs(os.path.join(d, "tls"))
    for p in PROGRAMS:
        src = os.path.join(us_bin, p)
        if not os.path.exists(src):
            raise SystemExit(f"audit-image: {src} is missing (make audit builds it)")
        shutil.copy2(src, d)
    shutil.copy2(os.path.join(TOP, "userspace", "guest", "rand_python.py"), d)
    with open(os.path.join(d, "consumers"), "w") as f:
        f.write(CONSUMERS)
    with open(os.path.join(d, "start"), "w") as f:
        f.write(START)
    os.chmod(os.path.join(d, "start"), 0o755)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-days", "3650", "-subj",
                    "/CN=reseed-audit", "-keyout", os.path.join(d, "tls", "key.pem"),
                    "-out", os.path.join(d, "tls", "cert.pem")],
                   check=True, capture_output=True)
    os.chmod(os.path.join(d, "tls", "key.pem"), 0o644)
    disk = os.path.join(work, "tools.img")
    subprocess.run(["mke2fs", "-q", "-t", "ext2", "-L", TOOLS_LABEL, "-d", d, disk, "64M"],
                   check=True)
    return disk


def host_version(package):
    r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package],
                       capture_output=True, text=True)
    return r.stdout.strip() or "?"


# The packages a consumer runs on: userspace.py's table, where an operator's image may
# have other names for them (Debian 11's libssl1.1, python3-minimal without python3, older
# and newer JDKs).
IMAGE_PACKAGES = {
    "openssl-RAND_bytes": ("libssl3t64", "libssl3", "libssl1.1"),
    "python-random": ("python3-minimal", "python3"),
    "python-secrets": ("python3-minimal", "python3"),
    "python-uuid4": ("python3-minimal", "python3"),
    **{n: ("openjdk-25-jre-headless", "openjdk-21-jre-headless", "openjdk-17-jre-headless",
           "openjdk-11-jre-headless") for n in ("java-SecureRandom", "java-DRBG", "java-UUID")},
}


def libraries(names, packages, us):
    """{consumer: the image's package and version it runs on}; Go's and Rust's programs
    are ours, built with the host's packages (their versions asked once)."""
    table = {**us.LIBRARY, **IMAGE_PACKAGES}
    ours = {"go-": f"Go {host_version(us.vm.VERSIONS['GO_PACKAGE'])} (built in, ours)",
            "rust-": f"rand {host_version('librust-rand-dev')} (built in, ours)"}
    out = {}
    for n in names:
        out[n] = next((f"{p} {packages[p]}" for p in table.get(n, ()) if p in packages),
                      next((v for k, v in ours.items() if n.startswith(k)), "?"))
    return out


def main():
    p = Parser(description=" ".join(__doc__.split("\n")[:2]),
               formatter_class=argparse.RawDescriptionHelpFormatter,
               epilog="Exit status: 0 clone-safe, 1 not clone-safe by design (a library "
                      "repeats), 2 not clone-safe, 3 no verdict.")
    p.add_argument("--image", required=True, help="the disk image (raw or qcow2)")
    p.add_argument("--clones", type=int, default=2, help="clones per mechanism (2)")
    p.add_argument("--out", help="where the report goes (default build/audit/"
                   "image-FOLDER-NAME)")
    p.add_argument("--mechanisms", default="none,vmgenid,vmclock,leak",
                   help="comma-separated, of none, vmgenid, vmclock, leak")
    p.add_argument("--run", type=float, default=2.0, help="seconds each clone runs")
    p.add_argument("--boot-timeout", type=float, default=300)
    p.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                   help="mechanisms measured at a time (each its own guests; default: 2, "
                   "or 1 on one CPU)")
    p.add_argument("--row", default=os.environ.get("RESEED_ROW"),
                   help="whose QEMU (default: the newest row)")
    a = p.parse_args()
    if not 2 <= a.clones <= 32:
        p.error("--clones must be from 2 to 32")
    if not 1 <= a.jobs <= 8:
        p.error("--jobs must be from 1 to 8")
    mechs = [m for m in a.mechanisms.split(",") if m]
    bad = [m for m in mechs if m not in ("none", "vmgenid", "vmclock", "leak")]
    if bad or not mechs:
        p.error(f"--mechanisms: no mechanism {','.join(bad)}; they are none, vmgenid, "
                "vmclock, leak")
    image = os.path.abspath(a.image)
    if not os.path.isfile(image):
        p.error(f"no such image: {a.image}")
    # its folder's name and its own: images are often all called disk.qcow2
    name = re.sub(r"[^A-Za-z0-9._+-]", "_", "-".join(image.split(os.sep)[-2:]))
    out = os.path.abspath(a.out or os.path.join(TOP, "build", "audit", f"image-{name}"))
    work = os.path.join(out, "work")
    # The image's kernel and initramfs go here; every guest boots them (the accelerator's
    # probe too: no kernel of ours is needed)
    kernel, initrd = os.path.join(work, "vmlinuz"), os.path.join(work, "initrd.img")
    os.environ.update(RESEED_ROW=a.row or audit.default_row(), RESEED_KERNEL=kernel)
    sys.path.insert(0, os.path.join(TOP, "snapshot-scenarios"))
    import userspace as us
    import scenario_lib as lib
    vm = us.vm
    info = subprocess.run([vm.QEMU_IMG, "info", "--output=json", image],
                          capture_output=True, text=True)
    if info.returncode:
        p.error(f"{a.image}: qemu-img cannot read it: {info.stderr.strip()}")
    fmt = json.loads(info.stdout).get("format")
    if fmt not in ("raw", "qcow2"):
        p.error(f"{a.image}: a {fmt} image; raw or qcow2 only")
    os.makedirs(out, exist_ok=True)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    t_start = time.monotonic()
    steps = len(mechs) + 4
    try:
        digest = sha256(image)
        progress(1, steps, f"image {image} ({fmt}, sha256 {digest[:16]}...)")
        view = image
        if fmt == "qcow2":      # debugfs reads raw: a sparse copy to read the files from
            view = os.path.join(work, "view.raw")
            subprocess.run([vm.QEMU_IMG, "convert", "-O", "raw", image, view], check=True)
        facts = inspect(view)
        boot_dir = "/" if facts["boot_dir"] == "/" else "/boot/"
        for f, src in ((kernel, facts["kernel_file"]),
                       (initrd, "initrd.img-" + facts["release"])):
            debugfs(view, facts["boot_offset"], f"dump {boot_dir}{src} {f}")
            if not os.path.exists(f) or not os.path.getsize(f):
                raise SystemExit(f"audit-image: could not read {boot_dir}{src} out of the "
                                 "image")
        if view != image:
            os.unlink(view)
        version = audit.kernel_version(kernel)
        progress(2, steps, f"{facts['os']}: kernel {version} (partition "
                 f"{facts['boot_partition']}), root UUID {facts['root_uuid']} (partition "
                 f"{facts['root_partition']}), {len(facts['packages'])} packages")
        tools = tools_disk(work, os.environ.get("RESEED_US_BIN") or
                           os.path.join(TOP, "build", "userspace", "bin"))
        boot = {
            "kernel": kernel, "initrd": initrd,
            "append": f"root=UUID={facts['root_uuid']} ro systemd.show_status=error "
                      "systemd.getty_auto=0 systemd.run=\"/bin/sh -c 'mkdir -p "
                      f"{TOOLS} && mount -o ro LABEL={TOOLS_LABEL} {TOOLS} && exec "
                      f"{TOOLS}/start'\" systemd.run_success_action=none "
                      "systemd.run_failure_action=none",
            "extra": ("-drive", f"file={tools},if=none,id=tools,format=raw,readonly=on",
                      "-device", "virtio-blk-pci,drive=tools,serial=reseed-tools"),
            "hooks": False,
        }
        progress(3, steps, f"measuring programs on a read-only disk ({TOOLS}), the image "
                 "on a qcow2 overlay")
        os.makedirs(vm.RUNDIR, exist_ok=True)
        results, absent, done = {}, {}, [3]

        def one(mech):
            """Measure one mechanism (a boot, a save, the clones one after the other)."""
            if mech == "vmclock":
                try:
                    lib.require_vmclock()
                except lib.NotApplicable as e:
                    return {"in_play": False, "label": str(e), "consumers": {}}, {}
            t0 = time.monotonic()
            try:
                r = us.measure(mech, a.clones, a.run, a.boot_timeout, boot=boot,
                               disk=(image, fmt), tag="image")
            except (lib.Failed, vm.Timeout) as e:
                raise SystemExit(f"audit-image: {mech}: {e} (the guests' consoles and "
                                 f"QEMU's output: {vm.RUNDIR}/image-{mech}-*/)")
            with open(os.path.join(vm.RUNDIR, f"image-{mech}-src", "console.log"),
                      errors="replace") as f:
                left_out = dict(ABSENT.findall(f.read()))
            ok, label = lib.mechanism_label(mech, r["play"])
            consumers = {}
            for n in r["at_save"]:
                total, count, same_flight, prefix = us.shared(r["clones"], n)
                drew = [len(c[n]) - 1 for c in r["clones"]]
                # a clone whose consumer drew nothing after resume (a stalled process)
                # leaves nothing to compare: the figure stands, but judges nothing
                consumers[n] = {"after_resume": total, "shared": count,
                                "in_flight_same": same_flight, "identical_prefix": prefix,
                                "per_clone": drew, "complete": min(drew) > 0}
            return {"in_play": ok or mech == "none", "label": label,
                    "boot_s": round(r["boot_s"], 1),
                    "seconds": round(time.monotonic() - t0, 1),
                    "consumers": consumers}, left_out

        # --jobs mechanisms at a time: each is a guest of its own, most of its time a boot
        with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
            futures = {pool.submit(one, m): m for m in mechs}
            for fut in concurrent.futures.as_completed(futures):
                mech = futures[fut]
                results[mech], left_out = fut.result()
                absent.update(left_out)
                done[0] += 1
                r = results[mech]
                progress(done[0], steps, f"{mech} ({r['label']}): " + (", ".join(
                    f"{n} {c['shared']}/{c['after_resume']}"
                    for n, c in r["consumers"].items()) or "not measured"))
        results = {m: results[m] for m in mechs}
        after = sha256(image)
        if after != digest:
            raise SystemExit(f"audit-image: the image changed during the audit (sha256 "
                             f"{digest} before, {after} after)")
    finally:
        shutil.rmtree(work, ignore_errors=True)

    # The verdict
    judged = lambda n: n not in NOT_JUDGED                                 # noqa: E731
    played = [m for m in results if m != "none" and results[m]["in_play"]
              and results[m]["consumers"]]
    def shared_by(m, names):
        """What shared outputs with mechanism m, of names; a consumer that did not draw
        in every clone counts as sharing (-1): it cannot show that it did not."""
        return {n: c["shared"] if c["complete"] else -1
                for n, c in results[m]["consumers"].items()
                if judged(n) and n in names and (c["shared"] or not c["complete"])}
    kernel_each = us.KERNEL_EACH_CALL
    every = [n for m in results for n in results[m]["consumers"]]
    safe = [m for m in played if not shared_by(m, every)]
    kernel_ok = [m for m in played if not shared_by(m, kernel_each)]
    if safe:
        level = "safe"
        verdict = (f"Clone-safe: with {' and '.join(safe)} in play, no library of this "
                   f"image shared an output between {a.clones} clones after resume.")
    elif kernel_ok:
        level = "racy"
        best = min(kernel_ok, key=lambda m: len(shared_by(m, every)))
        lib_shared = shared_by(best, every)
        verdict = (f"Not clone-safe by design: with {best} the kernel gave every clone its "
                   "own bytes, but libraries that keep generator state of their own "
                   "repeated other clones' outputs after resume: " +
                   ", ".join(f"{n} ({c} shared)" if c >= 0 else f"{n} (not drawing in "
                             "every clone)" for n, c in lib_shared.items()) + ".")
    else:
        level = "unsafe"
        verdict = ("Not clone-safe: with every mechanism this image uses, clones of one "
                   "saved state returned the same bytes after resume even from what asks "
                   "the kernel on each call" +
                   ("".join(f" (with {m}: " + ", ".join(
                       f"{n} {c} shared" if c >= 0 else f"{n} not drawing in every clone"
                       for n, c in shared_by(m, kernel_each).items()) + ")" for m in played)
                    if played else ", and it uses none of them") + ".")
    libraries_of = libraries(dict.fromkeys(every), facts["packages"], us)
    report = {
        "verdict": verdict, "level": level,
        "image": {"path": image, "format": fmt, "sha256": digest, "unchanged": True,
                  "os": facts["os"], "root_partition": facts["root_partition"],
                  "root_uuid": facts["root_uuid"]},
        "kernel": {"file": f"{boot_dir}{facts['kernel_file']}", "version": version},
        "qemu": {"version": vm.QEMU_VERSION, "path": vm.QEMU, "accel": vm.choose_accel()},
        "clones": a.clones, "run_s": a.run, "mechanisms": results, "absent": absent,
        "libraries": libraries_of, "not_judged": list(NOT_JUDGED),
        "seconds": round(time.monotonic() - t_start, 1),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }
    with open(os.path.join(out, "report.json"), "w") as f:
        json.dump(report, f, indent=1)
    consumers = {}
    for m in results:
        for n, c in results[m]["consumers"].items():
            consumers.setdefault(n, {})[m] = c
    audit.library_chart(consumers, [(m, m) for m in results],
                        os.path.join(out, "libraries.svg"),
                        f"{facts['os']}, kernel {facts['release']}: {a.clones} clones per "
                        "mechanism, outputs after resume another clone drew too",
                        off=[m for m in results if not results[m]["in_play"]])
    write_html(report, consumers, out)
    progress(steps, steps, f"report: {os.path.join(out, 'index.html')} "
             f"({report['seconds']:.0f} s); the image unchanged (sha256 {digest[:16]}...)")
    print(f"verdict: {verdict}")
    return audit.EXIT[level]


ADVICE = {
    "safe": "keep the mechanism that made it safe on for this guest when you snapshot, "
            "restore or clone it.",
    "racy": "the kernel is not the problem: the libraries named keep generator state in "
            "process memory that no restore signal reaches. Restart the programs that use "
            "them after a restore, or give the guest a kernel with the RNG epoch and have "
            "them reseed at it (for OpenSSL, the EPOCH-DRBG provider; for daemons, a "
            "reseed-notify hook); until then restore each snapshot only once.",
    "unsafe": "do not clone this image or restore one snapshot of it more than once. Give "
              "it a mechanism (at least vmgenid, better the leak queues with a kernel that "
              "has the RNG epoch), and regenerate what runs in it after a restore.",
}


def write_html(report, consumers, out):
    e = html.escape
    with open(os.path.join(out, "libraries.svg")) as f:
        svg = f.read()
    svg = svg[svg.index("<svg"):]
    mechs = list(report["mechanisms"])
    rows = []
    for n, per in consumers.items():
        cells = "".join(f"<td>{per[m]['shared']:,} / {per[m]['after_resume']:,}" +
                        ("" if per[m]["complete"] else
                         f" &dagger; (per clone: {', '.join(map(str, per[m]['per_clone']))})")
                        + "</td>" if m in per else "<td>-</td>" for m in mechs)
        note = " (not judged)" if n in report["not_judged"] else ""
        rows.append(f"<tr><td>{e(n)}{note}</td><td>{e(report['libraries'].get(n, '?'))}</td>"
                    f"{cells}</tr>")
    play = "".join(f"<tr><td>{e(m)}</td><td>{e(str(r['label']))}</td>"
                   f"<td>{'yes' if r['in_play'] else 'no'}</td></tr>"
                   for m, r in report["mechanisms"].items())
    absent = "".join(f"<li>{e(n)}: {e(why)}</li>" for n, why in report["absent"].items())
    im, k, q = report["image"], report["kernel"], report["qemu"]
    page = audit.page_start(f"Clone-safety audit of an image: {os.path.basename(im['path'])}",
                            "Clone-safety audit of a disk image", report,
                            ADVICE[report["level"]]) + f"""
<h2>Outputs shared after resume, per library and mechanism</h2>
{svg}
<p class="note">{report['clones']} clones of one saved state per mechanism, each running
{report['run_s']:g} s after resume; per library, the outputs drawn after resume that
another clone also drew / all drawn after resume (the call in flight at the snapshot not
counted). 0 is the goal. Python's random and Go's math/rand/v2 are not meant for secrets:
measured, not judged. &dagger;: in a clone the consumer drew nothing after resume (a
stalled process): its figure compares fewer clones and judges nothing.</p>
<table id="libraries"><tr><th>consumer</th><th>library in the image</th>
{''.join(f'<th>{e(m)}</th>' for m in mechs)}</tr>
{''.join(rows)}
</table>
{f'<p>Left out, the image lacks them:</p><ul>{absent}</ul>' if absent else ''}
<h2>Mechanisms</h2>
<table><tr><th>mechanism</th><th>what the guest had in play</th><th>in play</th></tr>
{play}
</table>
<table>
<tr><th>image</th><td>{e(im['path'])} ({e(im['format'])})<br><span class="note">sha256
{e(im['sha256'])}, the same after the audit: nothing was written to it</span></td></tr>
<tr><th>system</th><td>{e(im['os'])}; root file system UUID {e(im['root_uuid'])}
(partition {im['root_partition']})</td></tr>
<tr><th>kernel</th><td>{e(k['version'])}<br><span class="note">{e(k['file'])}, the
image's own, with its initramfs and modules</span></td></tr>
<tr><th>QEMU</th><td>{e(q['version'])} ({e(q['accel'].upper())})<br>
<span class="note">{e(q['path'])}</span></td></tr>
<tr><th>run</th><td>{e(report['date'])}, {report['seconds']:.0f} s</td></tr>
</table>
<p class="note">Raw numbers: <a href="report.json">report.json</a>. Made by reseed-lab's
scripts/audit-image.py.</p>
</body></html>
"""
    with open(os.path.join(out, "index.html"), "w") as f:
        f.write(page)


if __name__ == "__main__":
    sys.exit(audit.run_main(main))
