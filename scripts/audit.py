#!/usr/bin/python3
"""audit.py - is a guest kernel clone-safe on this QEMU, and how big is the window?

usage: scripts/audit.py --kernel BZIMAGE [--modules DIR] [--out DIR] [--clones N]
       make audit KERNEL=/boot/vmlinuz-VERSION [MODULES=/lib/modules/VERSION]

For an operator's own guest kernel: boots it (with our initramfs and, from --modules,
the drivers it builds as modules: virtio_rng, vmgenid, ptp_vmclock and what they depend
on, loaded by the initramfs before the measurement), and measures what
snapshot-scenarios/run.py measures, per mechanism the hypervisor can offer:

  none          no device that signals a restore
  vmgenid       -device vmgenid (the ACPI VM generation ID; the kernel reseeds when told)
  VMClock       -device vmclock,leak-on-migration=on (its vm_generation_counter; QEMU
                10.0's row; the clones are restores started with -incoming)
  leak queues   virtio-rng with VIRTIO_RNG_F_LEAK (this tree's device)

Each: one guest streams getrandom(8) (the syscall; the vDSO's too where the kernel has
it), is saved to a file, and --clones clones of it resume; the figure is at how many of
the first 4096 outputs after resume two clones returned the same bytes.  Every figure is
labelled by what the guest really had in play (the guest's own report: driver bound,
feature negotiated), not by what QEMU offered.  Then, where the kernel has the RNG epoch
(RNDEPOCH), the atomicity figure: final - N over --clones clones with every device on.

Writes DIR/index.html (the verdict in one sentence, a chart, the numbers; one file, no
JavaScript, works offline), DIR/chart.svg (matplotlib) and DIR/report.json (its fields:
docs/operators.md, "report.json").  DIR is --out, by default build/audit/NAME-VERSION
for the kernel file NAME of that version: one per kernel, never the demo's build/report.

Exit status: 0 clone-safe, 1 not clone-safe by design (racy), 2 not clone-safe,
3 no verdict (bad arguments, or the audit failed).
"""

import argparse
import datetime
import html
import json
import os
import re
import struct
import subprocess
import sys
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULES = ("virtio_rng", "vmgenid", "ptp_vmclock")
DUMP = 4096


def progress(step, total, text):
    print(f"[{step}/{total}] {text}", flush=True)


def kernel_version(path):
    """The version string a bzImage carries (boot protocol: header 'HdrS' at 0x202,
    the string's offset - 0x200 at 0x20e)."""
    with open(path, "rb") as f:
        head = f.read(0x210)
        if len(head) < 0x210 or head[0x202:0x206] != b"HdrS":
            raise SystemExit(f"audit: {path} is not an x86 bzImage (no 'HdrS' header)")
        off = struct.unpack_from("<H", head, 0x20e)[0] + 0x200
        f.seek(off)
        return f.read(256).split(b"\0", 1)[0].decode(errors="replace").strip()


def default_row():
    with open(os.path.join(TOP, "versions.mk")) as f:
        m = re.search(r"^DEFAULT_ROW\s*:=\s*(\S+)", f.read(), re.M)
    return m.group(1)


def build_initramfs(out, row, modules):
    """Our initramfs with the scenario agent and the kernel's own modules."""
    src = os.path.join(TOP, "build", "src", f"linux-{row}")
    agent = os.path.join(TOP, "build", f"guest-{row}", "bin", "scenario_agent")
    for need in (src, agent):
        if not os.path.exists(need):
            raise SystemExit(f"audit: {need} is missing: run 'make guest' first")
    picked, absent = [], []
    kos = []
    if modules:
        moddir = os.path.join(out, "modules")
        r = subprocess.run([os.path.join(TOP, "scripts", "kmod-pick.sh"), "--optional",
                            modules, moddir, *MODULES], capture_output=True, text=True)
        if r.returncode:
            raise SystemExit(f"audit: picking modules from {modules}: {r.stderr.strip()}")
        absent = re.findall(r"^absent: (\S+)", r.stderr, re.M)
        with open(os.path.join(moddir, "order")) as f:
            picked = [line.strip()[:-3] for line in f if line.strip()]
        kos = [os.path.join(moddir, f"{m}.ko") for m in picked]
    initrd = os.path.join(out, "initramfs.cpio.gz")
    subprocess.run([os.path.join(TOP, "scripts", "build-initramfs.sh"), src, initrd, agent,
                    *kos], check=True, cwd=TOP, stdout=subprocess.DEVNULL)
    return initrd, picked, absent


# Exit status: the verdict's level, or ERROR for anything that kept the audit from one.
EXIT = {"safe": 0, "racy": 1, "unsafe": 2}
ERROR = 3


class Parser(argparse.ArgumentParser):
    """argparse exits 2 on a usage error, which here means 'unsafe'."""

    def error(self, message):
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(ERROR)


def default_out(kernel, version):
    """build/audit/NAME-VERSION: one folder per kernel, never the demo's build/report."""
    name = f"{os.path.basename(kernel)}-{version.split()[0] if version else 'unknown'}"
    return os.path.join(TOP, "build", "audit", re.sub(r"[^A-Za-z0-9._+-]", "_", name))


def main():
    p = Parser(description=__doc__.split("\n")[1],
               epilog="Exit status: 0 clone-safe, 1 not clone-safe by design (racy), "
                      "2 not clone-safe, 3 no verdict (bad arguments, a failure).")
    p.add_argument("--kernel", required=True, help="the guest kernel (bzImage) to audit")
    p.add_argument("--modules", help="its modules directory (lib/modules/VERSION)")
    p.add_argument("--out", help="where the report goes (default: build/audit/NAME-VERSION,"
                   " per kernel)")
    p.add_argument("--clones", type=int, default=4, help="clones per mechanism (4)")
    p.add_argument("--row", default=os.environ.get("RESEED_ROW"),
                   help="which row's QEMU and initramfs (default: the newest)")
    p.add_argument("--userspace", action="append", default=[], metavar="JSON",
                   help="add the user-space suite's figures (userspace.py --json) to the "
                   "report: a chart per library and the table (repeatable)")
    a = p.parse_args()
    if a.clones < 2:
        p.error("--clones must be at least 2")
    kernel = os.path.abspath(a.kernel)
    if not os.path.isfile(kernel):
        p.error(f"no such kernel: {a.kernel}")
    if a.modules and not os.path.isdir(a.modules):
        p.error(f"no such modules directory: {a.modules}")
    userspace = []
    for path in a.userspace:
        try:
            with open(path) as f:
                userspace.append(json.load(f))
            userspace[-1]["mechanisms"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            p.error(f"--userspace {path}: not the user-space suite's figures ({e})")
    version = kernel_version(kernel)
    out = os.path.abspath(a.out or default_out(kernel, version))
    os.makedirs(out, exist_ok=True)
    t_start = time.monotonic()
    steps = 8
    progress(1, steps, f"kernel {version} ({kernel})")

    row = a.row or default_row()
    initrd, picked, absent = build_initramfs(out, row, a.modules)
    progress(2, steps, "initramfs: agent" + (f", modules {' '.join(picked) or 'none'}"
                                              if a.modules else ", no modules directory "
                                              "given (built-in drivers only)") +
             (f"; not modules there: {' '.join(absent)} (built in, or not in this kernel)"
              if absent else ""))
    # vmharness takes the row's paths, the initramfs and the kernel (the accelerator
    # probe boots it: no kernel of ours needed) from the environment at import
    os.environ.update(RESEED_ROW=row, RESEED_INITRD=initrd, RESEED_KERNEL=kernel)
    sys.path.insert(0, os.path.join(TOP, "snapshot-scenarios"))
    import scenario_lib as lib
    vm = lib.vm
    has_vmclock = int(vm.QEMU_VERSION.split(".")[0]) >= 10
    ctx = lib.Ctx(kernel)
    mechanisms = [("none", "none", {"rng": False}),
                  ("vmgenid", "vmgenid", {"rng": False, "extra_devices": lib.VMGENID}),
                  ("vmclock", "VMClock", {"rng": False, "extra_devices": lib.VMCLOCK}),
                  ("leak", "leak queues", {"leak": True})]
    results = []
    for i, (key, name, agent) in enumerate(mechanisms, 3):
        entry = {"key": key, "mechanism": name}
        if key == "vmclock" and not has_vmclock:
            entry.update(in_play=False, label=f"not offered by QEMU {vm.QEMU_VERSION}")
            results.append(entry)
            progress(i, steps, f"{name}: {entry['label']}")
            continue
        for mode, what in (("stream", "syscall"), ("vstream", "vdso")):
            try:
                _, streams, has_epoch = lib.stream_clones(
                    ctx, f"audit-{key}-{mode}", a.clones, rings=("raw",), run=0,
                    dump=DUMP, mode=mode, smp=lib.VDSO_SMP, **agent)
                f = lib.vdso_shared(streams)
                entry[what] = {"shared": f["indices"], "longest_run": f["run"],
                               "in_flight": f["in_flight"], "sampled": DUMP}
            except lib.NotApplicable as e:
                entry[what] = {"not_applicable": str(e)}
            if mode == "stream":
                play = lib.in_play(f"audit-{key}-{mode}")
                entry["in_play"], entry["label"] = lib.mechanism_label(key, play)
                entry["guest_report"] = play
                entry["epoch"] = has_epoch
        results.append(entry)
        sc = entry["syscall"]
        vd = entry["vdso"]
        progress(i, steps, f"{name} ({entry['label']}): outputs two of {a.clones} clones "
                 f"shared after resume: syscall {sc['shared']}/{DUMP}, vDSO "
                 f"{vd.get('shared', 'n/a')}" + (f"/{DUMP}" if "shared" in vd else
                                                 f" ({vd.get('not_applicable')})"))

    has_epoch = any(r.get("epoch") for r in results)
    atomic = None
    if has_epoch:
        devices = lib.VMCLOCK if has_vmclock else ()
        n, evs = lib.clones(ctx, "audit-atomic", count=a.clones, extra_devices=devices)
        worst = max(ev["final"] - n for ev in evs)
        distinct = len({ev["getrandom"] for ev in evs})
        atomic = {"max_final_minus_n": worst, "n": n, "clones": a.clones,
                  "distinct_getrandom": distinct,
                  "devices": "virtio-rng with the leak queues" +
                             (" and vmclock" if devices else "")}
        progress(7, steps, f"atomicity: max final - N = {worst} over {a.clones} clones "
                 f"({distinct} distinct getrandom() outputs)")
    else:
        progress(7, steps, "atomicity: not applicable, the kernel has no RNG epoch "
                 "(RNDEPOCH): user space gets no atomic signal")

    # The verdict
    safe_mechs = [r for r in results if r.get("in_play") and r["key"] != "none" and
                  r["syscall"]["shared"] == 0 and r["vdso"].get("shared", 0) == 0]
    if atomic and atomic["max_final_minus_n"] <= 1 and \
            atomic["distinct_getrandom"] == a.clones and safe_mechs:
        names = " and the ".join(r["mechanism"] for r in safe_mechs)
        verdict, level = (f"Clone-safe: with the {names} this kernel "
                          f"shared no getrandom() output between {a.clones} clones after "
                          f"resume, and its RNG epoch moved before the first instruction "
                          f"(final - N = {atomic['max_final_minus_n']})."), "safe"
    elif safe_mechs:
        verdict, level = (f"Not clone-safe by design: with "
                          f"{', '.join(r['mechanism'] for r in safe_mechs)} the clones "
                          f"shared no output in this run, but the kernel reseeds only after "
                          f"vCPUs resume and gives user space no atomic signal: a race it "
                          f"can lose, and a user-space generator cannot tell."), "racy"
    else:
        best = min((r for r in results if r.get("in_play") and r["key"] != "none"),
                   key=lambda r: r["syscall"]["shared"], default=None)
        verdict, level = ("Not clone-safe: with every mechanism this kernel uses, clones of "
                          "one saved state returned the same getrandom() bytes after "
                          "resume" + (f" (the best, {best['mechanism']}: "
                                      f"{best['syscall']['shared']} of {DUMP} outputs)"
                                      if best else ", and it uses none of them") + "."), \
            "unsafe"
    report = {
        "verdict": verdict, "level": level,
        "kernel": {"path": kernel, "version": version, "modules": picked,
                   "modules_dir": a.modules, "not_modules": absent},
        "qemu": {"version": vm.QEMU_VERSION, "path": vm.QEMU, "accel": vm.choose_accel()},
        "row": row, "clones": a.clones, "sampled": DUMP,
        "mechanisms": results, "atomicity": atomic,
        "userspace": [{"row": u["row"], "date": u.get("date"), "commit": u.get("commit"),
                       "clones": u["clones"],
                       "consumers": {m: {n: {k: c[k] for k in ("shared", "after_resume")}
                                         for n, c in u["mechanisms"][m]["consumers"].items()}
                                     for m in u["mechanisms"]}} for u in userspace],
        "seconds": round(time.monotonic() - t_start, 1),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }
    with open(os.path.join(out, "report.json"), "w") as f:
        json.dump(report, f, indent=1)
    chart(report, os.path.join(out, "chart.svg"))
    write_html(report, out, userspace_section(userspace, out) if userspace else "")
    progress(8, steps, f"report: {os.path.join(out, 'index.html')} "
             f"({report['seconds']:.0f} s)")
    print(f"verdict: {verdict}")
    return EXIT[level]


def chart(report, path):
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "reseed-lab"     # stable ids in the SVG
    matplotlib.rcParams["svg.fonttype"] = "none"           # text stays text
    import matplotlib.pyplot as plt
    mechs = report["mechanisms"]
    names = [m["mechanism"] + ("" if m.get("in_play") else "\n(not in play)")
             for m in mechs]
    fig, ax = plt.subplots(figsize=(8, 3.6))
    width = 0.38
    for j, (what, colour) in enumerate((("syscall", "#1f5fa8"), ("vdso", "#e08a1e"))):
        xs, ys = [], []
        for i, m in enumerate(mechs):
            v = m.get(what, {}).get("shared")
            if v is not None:
                xs.append(i + (j - 0.5) * width)
                ys.append(v)
        bars = ax.bar(xs, ys, width, color=colour,
                      label="getrandom() syscall" if what == "syscall" else "vDSO getrandom()")
        ax.bar_label(bars, fmt="%d", fontsize=8)
    ax.set_xticks(range(len(mechs)), names, fontsize=9)
    ax.set_ylim(0, report["sampled"] * 1.15)
    ax.set_ylabel(f"outputs shared after resume\n(of {report['sampled']} sampled)")
    ax.set_title(f"{report['clones']} clones of one saved state, {report['kernel']['version']}",
                 fontsize=10)
    ax.legend(fontsize=8, loc="upper right")
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    fig.savefig(path, format="svg")
    plt.close(fig)


MECH_COLOURS = {"none": "#8c8c8c", "vmgenid": "#e08a1e", "vmclock": "#6a3d9a",
                "leak": "#1f5fa8"}


def library_chart(consumers, mechs, path, title, off=()):
    """One small chart per library (consumer): per mechanism, the share of its outputs
    after resume that another clone drew too.  consumers: {name: {mech: {'shared': n,
    'after_resume': n} or None}}; mechs: [(key, name)] in order; off: the mechanisms
    QEMU offered that the guest did not take up (hatched, 'not in play')."""
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "reseed-lab"
    matplotlib.rcParams["svg.fonttype"] = "none"
    import matplotlib.pyplot as plt
    names = list(consumers)
    cols = 4
    rows = max(1, (len(names) + cols - 1) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(10, 1.9 * rows + 0.5), squeeze=False,
                             sharey=True)
    for i, ax in enumerate(axes.flat):
        if i >= len(names):
            ax.set_visible(False)
            continue
        name = names[i]
        xs, ys, labels, colours = [], [], [], []
        for j, (key, _) in enumerate(mechs):
            c = consumers[name].get(key)
            if not c or not c.get("after_resume"):
                continue
            xs.append(j)
            ys.append(100.0 * c["shared"] / c["after_resume"])
            labels.append(f"{100.0 * c['shared'] / c['after_resume']:.0f}%")
            colours.append(MECH_COLOURS.get(key, "#444444"))
        bars = ax.bar(xs, ys, 0.7, color=colours)
        for x, bar in zip(xs, bars):
            if mechs[x][0] in off:
                bar.set_hatch("//")
                bar.set_alpha(0.5)
        ax.bar_label(bars, labels, fontsize=7)
        ax.set_xticks(range(len(mechs)), [k + ("*" if k in off else "") for k, _ in mechs],
                      fontsize=7)
        ax.set_ylim(0, 118)
        ax.set_title(name, fontsize=8)
        ax.spines[["top", "right"]].set_visible(False)
        if i % cols == 0:
            ax.set_ylabel("% shared", fontsize=7)
        ax.tick_params(axis="y", labelsize=7)
    fig.suptitle(title + ("\n* offered, not in play in the guest (hatched)" if off else ""),
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(path, format="svg")
    plt.close(fig)


def userspace_section(results, out):
    """The user-space suite's figures (snapshot-scenarios/userspace.py --json): a chart per
    library and the table, as HTML; the chart written to out/libraries-ROW.svg."""
    e = html.escape
    parts = []
    for r in results:
        mechs = [(m, m) for m in r["mechanisms"]]
        consumers = {}
        for m in r["mechanisms"]:
            for name, c in r["mechanisms"][m]["consumers"].items():
                consumers.setdefault(name, {})[m] = c
        svg_path = os.path.join(out, f"libraries-{r['row']}.svg")
        library_chart(consumers, mechs, svg_path,
                      f"row {r['row']}: {r['clones']} clones per mechanism, outputs "
                      "after resume that another clone drew too")
        with open(svg_path) as f:
            svg = f.read()
        svg = svg[svg.index("<svg"):]
        libraries = r.get("libraries", {})
        rows = []
        for name, per in consumers.items():
            lib = libraries.get(name, "")
            cells = "".join(f"<td>{per[m]['shared']:,} / {per[m]['after_resume']:,}</td>"
                            if m in per else "<td>-</td>" for m, _ in mechs)
            rows.append(f"<tr><td>{e(name)}</td><td>{e(lib)}</td>{cells}</tr>")
        play = "; ".join(f"{m}: {r['mechanisms'][m]['in_play']}" for m, _ in mechs)
        parts.append(f"""<h3>Row {e(r['row'])} ({e(r.get('date', '?'))}, {e(r.get('commit', '?'))})</h3>
{svg}
<table><tr><th>consumer</th><th>library</th>{''.join(f'<th>{e(m)}</th>' for m, _ in mechs)}</tr>
{''.join(rows)}
</table>
<p class="note">In play: {e(play)}.</p>""")
    return ("<h2 id=\"userspace\">User space: what clones share, per library</h2>\n"
            "<p class=\"note\">The user-space clone suite (snapshot-scenarios/userspace.py) in "
            "real Debian guests on this tree's kernel: per library, the outputs drawn after "
            "resume that another clone also drew / all drawn after resume (the call in "
            "flight at the snapshot not counted). 0 is the goal.</p>\n" + "\n".join(parts))


# What an operator does about each verdict (also docs/operators.md).
ADVICE = {
    "safe": "keep the mechanism that made it safe on for this guest (the leak queues, or "
            "VMClock with leak-on-migration=on for restores), and have user-space "
            "generators reseed at the RNG epoch: a TLS library keeps its own generator "
            "state, which the kernel cannot reach.",
    "racy": "the kernel reseeds only after the vCPUs run, so a clone can hand out bytes "
            "from before the reseed, and user space gets no atomic signal. Use a kernel "
            "with the RNG epoch and the leak queues, or restore each snapshot only once.",
    "unsafe": "do not clone this guest or restore one snapshot of it more than once. Give "
              "it a mechanism (at least vmgenid, better the leak queues with a kernel that "
              "has the RNG epoch), and reseed or regenerate what runs in it after a restore.",
}


def page_start(title, heading, report, advice):
    """An audit page from its head to what to do: one file, its style inline, the
    verdict in the colour of its level (scripts/audit-image.py's page too)."""
    e = html.escape
    colour = {"safe": "#1d7a33", "racy": "#a86b00", "unsafe": "#b3261e"}[report["level"]]
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{e(title)}</title>
<style>
body {{ font-family: sans-serif; max-width: 62em; margin: 2em auto; color: #222; }}
.verdict {{ border-left: 0.5em solid {colour}; padding: 0.6em 1em; font-size: 1.25em;
           background: #f6f6f6; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
td, th {{ border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }}
th {{ background: #eee; }}
.note {{ color: #555; font-size: 0.9em; }}
</style></head><body>
<h1>{e(heading)}</h1>
<p class="verdict" id="verdict">{e(report['verdict'])}</p>
<p id="advice"><b>What to do:</b> {e(advice)}</p>"""


def write_html(report, out, extra=""):
    e = html.escape
    with open(os.path.join(out, "chart.svg")) as f:
        svg = f.read()
    svg = svg[svg.index("<svg"):]               # inline: one file, works offline
    rows = []
    for m in report["mechanisms"]:
        def cell(what):
            v = m.get(what)
            if not v:
                return "-"
            if "shared" in v:
                return (f"{v['shared']} / {v['sampled']} (longest run {v['longest_run']}, "
                        f"in flight {v['in_flight']})")
            return "n/a: " + e(v.get("not_applicable", ""))
        rows.append(f"<tr><td>{e(m['mechanism'])}</td><td>{e(m.get('label', ''))}</td>"
                    f"<td>{'yes' if m.get('in_play') else 'no'}</td><td>{cell('syscall')}</td>"
                    f"<td>{cell('vdso')}</td></tr>")
    at = report["atomicity"]
    atomic = (f"final - N = {at['max_final_minus_n']} (worst of {at['clones']} clones; N = "
              f"{at['n']} spins at the snapshot, with {e(at['devices'])}): the RNG epoch "
              "moved " + ("before the first instruction after resume"
                          if at["max_final_minus_n"] <= 1 else "late") if at else
              "not applicable: this kernel has no RNG epoch (RNDEPOCH), so user space gets "
              "no atomic signal")
    k, q = report["kernel"], report["qemu"]
    page = page_start(f"Clone-safety audit: {k['version']}", "Clone-safety audit", report,
                      ADVICE[report["level"]]) + f"""
<h2>Outputs shared after resume, per mechanism</h2>
{svg}
<p class="note">{report['clones']} clones of one saved state per mechanism; each streams
getrandom(8) and the figure is at how many of the first {report['sampled']} outputs after
resume two clones returned the same bytes (0 is the goal). A mechanism counts as in play
only when the guest itself reported its driver bound (and, for the leak queues, the
feature negotiated).</p>
<h2>Atomicity</h2>
<p>{atomic}</p>
<p class="note">N is the count of loop iterations ("spins") a program in the guest had made
when the VM was saved; final is its count when it first saw the epoch move after resume.
final - N of 0 or 1 means it saw the move before it did any work on the old state. "In
flight": the call that was running when the VM was saved, which clones may share.</p>
<h2>Numbers</h2>
<table><tr><th>mechanism</th><th>what the guest had in play</th><th>in play</th>
<th>getrandom() syscall</th><th>vDSO getrandom()</th></tr>
{''.join(rows)}
</table>
<table>
<tr><th>kernel</th><td>{e(k['version'])}<br><span class="note">{e(k['path'])}</span></td></tr>
<tr><th>modules</th><td>{e(' '.join(k['modules']) or 'none loaded')}{
    ' from ' + e(k['modules_dir']) if k['modules_dir'] else ' (no modules directory given)'}</td></tr>
<tr><th>QEMU</th><td>{e(q['version'])} ({e(q['accel'].upper())})<br>
<span class="note">{e(q['path'])}</span></td></tr>
<tr><th>run</th><td>{e(report['date'])}, {report['seconds']:.0f} s</td></tr>
</table>
{extra}
<p class="note">Raw numbers: <a href="report.json">report.json</a>. Made by reseed-lab's
scripts/audit.py.</p>
</body></html>
"""
    with open(os.path.join(out, "index.html"), "w") as f:
        f.write(page)


def run_main(entry=None):
    """entry() (by default main()), with every way of failing mapped to ERROR: a
    SystemExit with a message (Python's status 1 would read as 'racy'), and an
    exception."""
    try:
        return (entry or main)()
    except SystemExit as e:
        if isinstance(e.code, int) or e.code is None:
            raise
        print(e.code, file=sys.stderr)
        return ERROR
    except Exception:      # noqa: BLE001 - no verdict, whatever went wrong
        import traceback
        traceback.print_exc()
        return ERROR


if __name__ == "__main__":
    sys.exit(run_main())
