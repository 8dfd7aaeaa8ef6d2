#!/usr/bin/env python3
"""check-lanes.py - run the suites of make check, every row's, two at a time.

usage: check-lanes.py [--slots N] [--suites a,b] --default-row ROW ROW [ROW...]

Most suites boot one single-vCPU TCG guest after another and keep one core busy: on a
2-core machine two of them run side by side, so the suites of all rows share two slots
(--slots, default 2).  Per row, in order:

  gate     make check-row-gate ROW=r: the row's QEMU, kernel, guest programs, SNP
           certificates and Debian's kernel.  The first row's in the foreground; each
           later row's starts when the row before it passed its gate, at nice 10 and -j2
           beside the suites (log: build/prebuild-ROW.log), then once more in the
           foreground to find it built.  A row whose gate fails runs no suite.
  begin    make check-row-begin ROW=r: its results folder, its series checks in the
           background at nice 19 (make check prints their log at the end).
  suites   make suite-NAME ROW=r, the longest first over all rows (a measured warm time
           per suite orders them), each holding one slot.  hostile-storm holds them all:
           it compares a rate under a leak storm with a boot without it, and a guest
           beside either boot would move the figure; fuzz holds them all too (its four
           targets already share the cores).  A job that holds all slots goes first if
           it is ready before any other has started, else last.  A suite that needs a
           build of its own (the sanitizer QEMU, the Debian guest image, the image
           audit's disk) has it made first, by make suite-prep-NAME, without a slot.
  end      make suite-conformance ROW=r, after the row's other suites.

Each job's output goes to RESULTS/ROW/logs/NAME.log and is printed whole when the job
ends, so that two suites' lines never interleave; the stages inside still record their
times in build/timings.log.  A suite's exit status does not count (its TAP files do, in
scripts/summary.py).  Exit status: 0, or 1 when a row's gate failed (named at the end).
"""

import argparse
import os
import subprocess
import sys
import threading
import time

# (job, suite of SUITES it belongs to, slots: 1 or 'all', seconds measured warm on the
# newest row (fresh-clone CI, 2026-12-07), prep group or None, the job it runs after or
# None).  Jobs of one prep group have their builds made one at a time (qtest-asan's
# sanitizer QEMU is fuzz's); the report reads the user-space suite's figures.
JOBS = (
    ("hostile-storm", "hostile", "all", 12, None, None),
    ("fuzz", "fuzz", "all", 62, "san", None),
    ("scenario", "scenario", 1, 290, None, None),
    ("userspace", "userspace", 1, 125, "image", None),
    ("report", "report", 1, 150, "cloud", "userspace"),
    ("libvirt", "libvirt", 1, 97, None, None),
    ("hostile", "hostile", 1, 38, None, None),
    ("qtest-asan", "qtest-asan", 1, 28, "san", None),
    ("qtest", "qtest", 1, 21, None, None),
    ("migrate-unpatched", "migrate-unpatched", 1, 11, None, None),
    ("attest", "attest", 1, 10, None, None),
    ("differential", "differential", 1, 8, None, None),
    ("guest", "guest", 1, 5, None, None),
    ("guest-dma", "guest-dma", 1, 4, None, None),
    ("guest-bounce", "guest-bounce", 1, 4, None, None),
    ("guest-leak-off", "guest-leak-off", 1, 4, None, None),
)
# On rows other than the newest these only write a SKIP line (the Makefile's suite
# recipes decide, the one of qtest-asan in its prep): no slot, no weight.
NEWEST_ONLY = {"qtest-asan", "fuzz", "libvirt", "report"}
# Measured warm times that differ on the older rows.
OLDER_ROW_SECONDS = {"scenario": 137, "userspace": 140, "qtest": 6}
CONFORMANCE = "conformance"

out_lock = threading.Lock()


def say(text):
    with out_lock:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()


def make_env():
    """The environment of the sub-makes: the caller's, without its jobserver (these are
    not recursive makes of its own; a -j2 caller would make them warn)."""
    env = dict(os.environ)
    flags = env.get("MAKEFLAGS", "").split()
    env["MAKEFLAGS"] = " ".join(f for f in flags if not f.startswith(("--jobserver", "-j")))
    env.pop("MFLAGS", None)
    return env


def run_make(target, row, log, nice=0, extra=()):
    """make TARGET ROW=row, its output to log; return its exit status."""
    cmd = (["nice", "-n", str(nice)] if nice else []) + \
        ["make", "--no-print-directory", *extra, target, f"ROW={row}"]
    with open(log, "w") as f:
        return subprocess.call(cmd, stdout=f, stderr=subprocess.STDOUT, env=make_env())


def show(log, title):
    with open(log, errors="replace") as f:
        text = f.read()
    say(f"---- {title} ({log})\n{text}")


class Lanes:
    """Slots for the jobs, taken in order of the jobs' keys.  A job that does not fit
    yet is not overtaken by one that would delay it: a later job starts beside it only
    when its measured time ends before the slots the first one waits for are free
    (backfilling, as batch schedulers do), so a job that needs every slot is neither
    starved nor waited for with a core idle."""

    def __init__(self, slots):
        self.slots = slots
        self.free = slots
        self.cond = threading.Condition()
        self.ready = []
        self.running = {}               # id(job) -> (slots, expected end)
        self.closed = False
        self.shared_started = False

    def need(self, job):
        return self.slots if job["slots"] == "all" else min(job["slots"], self.slots)

    def submit(self, job):
        with self.cond:
            if self.need(job) == self.slots > 1 and self.shared_started:
                # It would stop every later job until the running ones end, with a slot
                # idle: it goes last instead, and costs its own time only.
                job["key"] = (2,) + job["key"][1:]
            self.ready.append(job)
            self.ready.sort(key=lambda j: j["key"])
            self.cond.notify_all()

    def _start(self, job, now):
        if 0 < self.need(job) < self.slots:
            self.shared_started = True
        self.ready.remove(job)
        self.free -= self.need(job)
        self.running[id(job)] = (self.need(job), now + job["secs"])
        return job

    def take(self):
        """The next job to run, once it may; None when closed."""
        with self.cond:
            while True:
                if self.closed:
                    return None
                now = time.monotonic()
                if self.ready:
                    head = self.ready[0]
                    if self.need(head) <= self.free:
                        return self._start(head, now)
                    # When the head's slots are free, by the running jobs' times.
                    free, shadow = self.free, now
                    for n, end in sorted(self.running.values(), key=lambda r: r[1]):
                        free += n
                        shadow = max(end, now)
                        if free >= self.need(head):
                            break
                    for job in self.ready[1:]:
                        if self.need(job) <= self.free and now + job["secs"] <= shadow:
                            return self._start(job, now)
                self.cond.wait(timeout=1.0)

    def done(self, job):
        with self.cond:
            self.free += self.need(job)
            del self.running[id(job)]
            self.cond.notify_all()

    def close(self):
        with self.cond:
            self.closed = True
            self.cond.notify_all()


def plan(i, row, default_row, wanted):
    """Row i's jobs, with their slots, times and keys (the lanes' order)."""
    newest = row == default_row
    jobs = []
    for name, suite, slots, secs, group, after in JOBS:
        if wanted and suite not in wanted:
            continue
        if not newest and name in NEWEST_ONLY:
            slots, secs = 0, 0
        elif not newest:
            secs = OLDER_ROW_SECONDS.get(name, secs)
        jobs.append({"name": name, "row": row, "slots": slots, "secs": secs,
                     "group": group, "after": after, "ended": threading.Event()})
    # Jobs that take every slot first (each waits only for what already runs), then the
    # longest chain: a job's time and that of the jobs that run after it (the user-space
    # suite, then the report); rows in order.
    for job in jobs:
        tail = sum(j["secs"] for j in jobs if j["after"] == job["name"])
        job["key"] = (0 if job["slots"] == "all" else 1, -(job["secs"] + tail), i)
    return jobs


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("rows", nargs="+")
    p.add_argument("--default-row", required=True)
    p.add_argument("--suites", default="",
                   help="only these suites (make check's SUITES); empty: all")
    p.add_argument("--slots", type=int, default=2)
    p.add_argument("--results", default="build/results")
    p.add_argument("--dry-run", action="store_true",
                   help="print the jobs per row in their order, run nothing (make -n)")
    a = p.parse_args()
    if a.slots < 1:
        p.error("--slots: at least 1")
    wanted = set(filter(None, a.suites.split(",")))

    if a.dry_run:
        for i, row in enumerate(a.rows):
            print(f"make check-row-gate ROW={row}" + (" (nice 10, -j2, then again)" if i else ""))
            print(f"make check-row-begin ROW={row} SUITES={a.suites}")
            for job in sorted(plan(i, row, a.default_row, wanted), key=lambda j: j["key"]):
                print(f"make {'suite-prep-' + job['name'] + ' && make ' if job['group'] else ''}"
                      f"suite-{job['name']} ROW={row}    # slots {job['slots']}, about "
                      f"{job['secs']} s" + (f", after {job['after']}" if job["after"] else ""))
            if not wanted or CONFORMANCE in wanted:
                print(f"make suite-conformance ROW={row}")
        return 0
    lanes = Lanes(a.slots)
    failed_rows = []
    left = {}                           # row -> its jobs not yet ended
    left_lock = threading.Lock()
    gated = {r: threading.Event() for r in a.rows}
    ended = {r: threading.Event() for r in a.rows}

    def logdir(row):
        d = os.path.join(a.results, row, "logs")
        os.makedirs(d, exist_ok=True)
        return d

    def end_row(row):
        if not wanted or CONFORMANCE in wanted:
            log = os.path.join(logdir(row), "conformance.log")
            run_make("suite-conformance", row, log)
            show(log, f"conformance[{row}]")
        ended[row].set()

    def job_ended(job):
        with left_lock:
            left[job["row"]] -= 1
            last = left[job["row"]] == 0
        if last:
            end_row(job["row"])

    def worker():
        while True:
            job = lanes.take()
            if job is None:
                return
            try:
                log = os.path.join(logdir(job["row"]), f"{job['name']}.log")
                t0 = time.monotonic()
                rc = run_make(f"suite-{job['name']}", job["row"], log)
                show(log, f"{job['name']}[{job['row']}]: {time.monotonic() - t0:.1f} s"
                     + (f", status {rc}" if rc else ""))
            except Exception as e:      # its TAP file is missing: the summary says so
                say(f"check-lanes: {job['name']}[{job['row']}]: {e}")
            finally:
                lanes.done(job)
                job["ended"].set()
                job_ended(job)

    prep_locks = {}

    def launch(job, after):
        """The job to the lanes once the job it runs after has ended and its build is
        made (one build of a group at a time)."""
        try:
            if after is not None:
                after.wait()
            if job["group"]:
                with prep_locks.setdefault((job["row"], job["group"]), threading.Lock()):
                    log = os.path.join(logdir(job["row"]), f"prep-{job['name']}.log")
                    rc = run_make(f"suite-prep-{job['name']}", job["row"], log)
                    show(log, f"prep-{job['name']}[{job['row']}]" +
                         (f": status {rc}" if rc else ""))
        except Exception as e:          # the suite runs and reports what is missing
            say(f"check-lanes: prep-{job['name']}[{job['row']}]: {e}")
        lanes.submit(job)

    def gate(i, row):
        """The row's builds, then its begin; then its jobs to the lanes."""
        if i == 0:
            # Nothing else builds yet: its output as it comes.
            rc = subprocess.call(["make", "--no-print-directory", "check-row-gate",
                                  f"ROW={row}"], env=make_env())
        else:
            gated[a.rows[i - 1]].wait()
            prebuild = f"build/prebuild-{row}.log"
            say(f"check: building row {row} (nice 10) beside the tests: {prebuild}")
            run_make("check-row-gate", row, prebuild, nice=10, extra=("-j2",))
            log = f"build/gate-{row}.log"
            rc = run_make("check-row-gate", row, log)
            show(log, f"gate[{row}]" + (f": status {rc}" if rc else ""))
        gated[row].set()
        if rc:
            say(f"check: the build of row {row} failed: none of its suites runs")
            failed_rows.append(row)
            ended[row].set()
            return
        log = os.path.join("build", f"begin-{row}.log")
        run_make("check-row-begin", row, log, extra=(f"SUITES={a.suites}",))
        show(log, f"check-row-begin[{row}]")
        jobs = plan(i, row, a.default_row, wanted)
        with left_lock:
            left[row] = len(jobs)
        if not jobs:
            end_row(row)
            return
        by_name = {j["name"]: j for j in jobs}
        for job in jobs:
            after = by_name.get(job["after"])
            if job["group"] or after:
                threading.Thread(target=launch, daemon=True,
                                 args=(job, after and after["ended"])).start()
            else:
                lanes.submit(job)

    workers = [threading.Thread(target=worker, daemon=True) for _ in range(a.slots)]
    for w in workers:
        w.start()
    gates = [threading.Thread(target=gate, args=(i, r)) for i, r in enumerate(a.rows)]
    for t in gates:
        t.start()
    for t in gates:
        t.join()
    for r in a.rows:
        ended[r].wait()
    lanes.close()
    if failed_rows:
        say(f"check: the build of row(s) {' '.join(failed_rows)} failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
