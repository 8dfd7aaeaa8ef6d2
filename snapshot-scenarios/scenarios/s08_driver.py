"""Scenario 8: driver conformance from the device's traces.

Asserts: leaks declared over QMP, running and stopped: the driver holds exactly one fill
and one copy on the active queue only, well-formed, re-armed after each leak, queues
alternating, the epoch values it asked for written.

How: QEMU traces what the driver makes available on each queue and what the device
does with it; the scenario checks the driver's side of the spec (docs/spec/rng-leak.tex,
RNG-LEAK-R*) from that trace.
"""

import os
import re
import time

from scenario_lib import Agent, atomic, check, Failed, no_splat, READY, require_epoch, vm

NUM = 8
TITLE = "driver conformance from the device's traces"


TRACE_EVENTS = ("virtqueue_pop", "virtio_queue_notify", "virtio_rng_leak*")
TRACE_PREFIX = r"^(?:\d+@\d+\.\d+:)?"
TRACE = [(kind, re.compile(TRACE_PREFIX + rx)) for kind, rx in (
    ("notify", r"virtio_queue_notify vdev \S+ n (?P<q>\d+) vq (?P<vq>\S+)"),
    ("pop", r"virtqueue_pop vq (?P<vq>\S+) elem \S+ in_num (?P<inn>\d+) out_num (?P<outn>\d+)"),
    ("held", r"virtio_rng_leak_held rng \S+ leakq\.(?P<q>\d) request (?P<head>\d+) held, "
             r"(?P<len>\d+) bytes"),
    ("performed", r"virtio_rng_leak_performed rng \S+ leakq\.(?P<q>\d) request (?P<head>\d+) "
                  r"performed: (?P<op>fill|copy)-on-leak of (?P<len>\d+) bytes"),
    ("rejected", r"virtio_rng_leak_rejected rng \S+ leakq\.(?P<q>\d) request (?P<head>\d+) "
                 r"rejected: (?P<why>.*)"),
    ("leak", r"virtio_rng_leak rng \S+ leak: (?P<n>\d+) requests performed, "
             r"leakq\.(?P<active>\d) active"),
    ("early", r"virtio_rng_leak_before_driver_ok "),
    ("event", r"virtio_rng_leak_event "),
)]
S8_LEAKS = (False, True, False, True)       # running, stopped, running, stopped


def parse_trace(text):
    events = []
    for line in text.splitlines():
        for kind, rx in TRACE:
            m = rx.match(line)
            if m:
                events.append((kind, {k: (v if k in ("vq", "op", "why") else int(v))
                                      for k, v in m.groupdict().items()}))
                break
    return events


def check_driver_trace(events):
    """The driver's side of the spec, from the device's trace (see s8_driver).  Returns
    the copy-on-leak requests performed, in order, as (queue, i-th copy on that queue),
    the kicks of the leak queues and the leaks that found the driver ready."""
    queue_of = {}                            # vq pointer -> queue index
    requestq_pops = 0
    drv = 1                                  # the queue the driver should consider active
    switch = False                           # it saw a used buffer of that queue
    batch = None                             # [queue, [[head, op or None, held]]]: a kick
    batches, held, copies, leaks = [], {1: {}, 2: {}}, [], []
    per_queue = {1: 0, 2: 0}
    early = False                            # a leak before the driver was ready
    for kind, ev in events:
        if kind == "notify":
            queue_of[ev["vq"]] = ev["q"]
            if ev["q"] == 0:
                continue
            if switch:
                drv, switch = 3 - drv, False
            check(ev["q"] == drv, f"RNG-LEAK-R9: the driver made requests available on "
                  f"leakq.{ev['q']} while it should consider leakq.{drv} active")
            batch = [ev["q"], []]
            batches.append(batch)
        elif kind == "pop":
            q = queue_of.get(ev["vq"])
            check(q is not None, f"a request popped from vq {ev['vq']}, never notified")
            if q == 0:
                requestq_pops += 1
                check(ev["outn"] == 0, "RNG-LEAK-R2: a device-readable buffer on the requestq")
        elif kind == "rejected":
            raise Failed(f"RNG-LEAK-R4: the device rejected a request of the driver on "
                         f"leakq.{ev['q']}: {ev['why']}")
        elif kind == "held":
            check(batch is not None and batch[0] == ev["q"],
                  f"leakq.{ev['q']}: a request held outside a kick of that queue")
            held[ev["q"]][ev["head"]] = len(batch[1])
            batch[1].append([ev["head"], None, True])
        elif kind == "performed":
            q = ev["q"]
            if ev["head"] in held[q]:
                pos = held[q].pop(ev["head"])
                owner = next(b for b in reversed(batches) if b[0] == q and
                             pos < len(b[1]) and b[1][pos][0] == ev["head"])
                owner[1][pos][1] = ev["op"]
            else:                            # made available on the inactive queue
                check(batch is not None and batch[0] == q,
                      f"leakq.{q}: a request performed outside a kick of that queue")
                batch[1].append([ev["head"], ev["op"], False])
            if ev["op"] == "copy":
                per_queue[q] += 1
                copies.append((q, per_queue[q] - 1))
            if q == drv:
                switch = True
        elif kind == "event":                # a leak is declared: no kick runs on
            batch = None
        elif kind == "early":
            early = True
        elif kind == "leak":
            if not early:                    # an early leak performs nothing
                leaks.append(ev)
            early = False
    check(requestq_pops > 0, "no request on the requestq: the trace is incomplete")
    check(batches and batches[0][0] == 1, "RNG-LEAK-R7: the driver's first requests were "
          "not on leakq.1")
    for i, (q, reqs) in enumerate(batches):
        ops = [r[1] for r in reqs]
        done = [op for op in ops if op]
        check(len(reqs) == 2 and done == ["fill", "copy"][:len(done)] and
              (len(done) == 2 or i == len(batches) - 1),
              f"kick {i} on leakq.{q}: requests {ops}, want one fill-on-leak then one "
              "copy-on-leak")
    for i, (a, b) in enumerate(zip(batches, batches[1:])):
        check(b[0] != a[0], f"RNG-LEAK-R12: kicks {i} and {i + 1} both on leakq.{a[0]}")
    check(all(ev["n"] == 2 for ev in leaks),
          "RNG-LEAK-R10: a leak found fewer than 2 requests held: "
          + ", ".join(str(ev["n"]) for ev in leaks))
    return copies, batches, leaks


class TracedAgent(Agent):
    """The agent, with the device's queues traced to a file, and a leak declared before
    the guest runs.  The guest's virtio core resets the device before the driver
    probes, and a reset forgets an early leak (RNG-LEAK-D1): the driver must start on
    leakq.1 all the same, where its first requests are held."""

    def __init__(self, name, kernel):
        self.name, self.mode, self.gpa, self.disk = name, "epoch", None, None
        self.trace = os.path.join(vm.RUNDIR, name, "trace.log")
        extra = ["-S"]
        for event in TRACE_EVENTS[:-1]:
            extra += ["-trace", f"enable={event}"]
        extra += ["-trace", f"enable={TRACE_EVENTS[-1]},file={self.trace}"]
        # ioeventfd=off: every kick is traced (virtio_queue_notify), with its queue.
        # iommu_platform=on: the driver maps its requests through the DMA API (direct,
        # no bounce), whose debug checks (CONFIG_DMA_API_DEBUG) then see every leak.
        self.g = vm.Guest(name, append="tests=scenario_agent scenario=epoch", kernel=kernel,
                          devices=("virtio-rng-pci,id=rng0,ioeventfd=off,"
                                   "iommu_platform=on,disable-legacy=on",), extra=extra,
                          serial_input=True)

    def boot(self, timeout=120):
        self.g.start()
        self.g.qmp("entropy-leak")
        self.g.qmp("cont")
        m = self.g.wait_console(READY, timeout)
        self.gpa, self.mode = int(m.group(1), 16), m.group(2)
        self.has_epoch = m.group(3) == "present"
        return self

    def events(self):
        try:
            with open(self.trace, errors="replace") as f:
                return parse_trace(f.read())
        except FileNotFoundError:
            return []

    def wait_held(self, count, timeout=60):
        """Wait until the device has held count requests since boot."""
        deadline = time.monotonic() + timeout
        while True:
            events = self.events()
            bad = [ev for k, ev in events if k == "rejected"]
            check(not bad, "RNG-LEAK-R4: the device rejected a request of the driver: "
                  + "; ".join(f"leakq.{ev['q']}: {ev['why']}" for ev in bad))
            if sum(1 for k, _ in events if k == "held") >= count:
                return
            if time.monotonic() > deadline or not self.g.alive():
                raise Failed(f"{self.name}: the driver did not re-arm: fewer than {count} "
                             f"requests held after {timeout}s (RNG-LEAK-R10)")
            time.sleep(0.05)


def run(ctx):
    a = TracedAgent("s8", ctx.kernel)
    try:
        a.boot()
        require_epoch(a)
        m = a.g.wait_console(r"^# scenario: spinning epoch=(0x[0-9a-f]+)(?=\r?\n)", 60)
        epochs = [int(m.group(1), 16)]
        a.wait_held(2)
        worst = 0
        for k, stopped in enumerate(S8_LEAKS):
            mark = a.g.console_size()
            if stopped:
                a.g.qmp("stop")
                n = a.page()["spins"]
                a.g.qmp("entropy-leak")
                a.g.qmp("cont")
            else:
                a.g.qmp("entropy-leak")
            ev = a.wait_event(mark)
            if stopped:
                worst = max(worst, atomic(ev, n, f"leak {k} declared while stopped"))
            check(ev["old"] == epochs[-1], f"leak {k}: the agent saw {ev['old']:#x} before, "
                  f"not {epochs[-1]:#x}")
            epochs.append(ev["new"])
            a.wait_held(2 * (k + 2))
        a.g.qmp("stop")
        events = a.events()
        copies, batches, leaks = check_driver_trace(events)
        check(any(k == "early" for k, _ in events),
              "the leak declared before the guest ran was not one before DRIVER_OK")
        check(all(r[2] for r in batches[0][1]), "the driver's first requests were performed at "
              "once: the guest's reset did not forget the leak before it")
        check(len(leaks) == len(S8_LEAKS), f"{len(leaks)} leaks performed, "
              f"want {len(S8_LEAKS)}")
        # Each copy-on-leak wrote the value the driver placed in its source when it made
        # the request available: odd counters from leakq.1, even ones from leakq.2, in
        # order (RNG-LEAK-R5), so every epoch is new.  Before the first, no notifier
        # had written the page: 0.
        ident = epochs[-1] >> 24
        want = [0] + [(ident << 24) | (q + 2 * i) for q, i in copies]
        check(epochs == want, "epoch values " + " ".join(f"{e:#010x}" for e in epochs)
              + ", want " + " ".join(f"{e:#010x}" for e in want))
        err = [line for line in a.g.stderr().splitlines() if "virtio" in line]
        check(not err, "QEMU reported a virtio error: " + "; ".join(err[:3]))
        no_splat(a.g)
    except Exception:
        a.g.report_failure("scenario 8")
        raise
    finally:
        a.kill()
    return 1, f"{len(leaks)} leaks, {sum(len(b[1]) for b in batches)} requests, " \
        f"final-N<={worst}", [
        "kicks: " + " ".join(f"leakq.{q}:{'+'.join(x[1] or 'held' for x in r)}"
                             for q, r in batches),
        "epochs: " + " ".join(f"{e:#010x}" for e in epochs)]
