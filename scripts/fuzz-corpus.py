#!/usr/bin/env python3
"""fuzz-corpus.py - write the seed corpus of the fuzz targets (scripts/fuzz.sh).

usage: fuzz-corpus.py OUTDIR

Writes OUTDIR/virtio-rng-leak/*.bin and OUTDIR/sev-snp-responder/*.bin: generic-fuzz
inputs (QEMU's tests/qtest/fuzz/generic_fuzz.c: operations separated by "FUZZ", each an
opcode byte and its operand) that make the well-formed requests of our qtests
(tests/qtest/virtio-rng-test.c, sev-snp-responder-test.c), so that the fuzzer starts
from a device that holds, performs and answers, not from one that refuses everything.

virtio-rng goes through the legacy virtio-pci registers (the fuzzable I/O BAR): status,
features (VIRTIO_RNG_F_LEAK), the two leak queues' page numbers, DRIVER_OK, then DMA
patterns that generic-fuzz hands out, in order, for each read the device makes of guest
memory (the available ring's index, its entry, the descriptors, a copy's source), a
kick, and OP_LEAK (running, or stopped then run).  sev-snp-responder gets requests
encrypted with the VMPCK0 that scripts/fuzz.sh gives it (FUZZ_VMPCK0), as the PSP wants
them, and some it must refuse.  The committed corpus (fuzz/corpus/) is this script's
output; it needs python3-cryptography only to be run again.
"""

import os
import struct
import sys

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

SEP = b"FUZZ"
OP_IN, OP_OUT, OP_READ, OP_WRITE, OP_PCI_READ, OP_PCI_WRITE, OP_DISABLE_PCI, \
    OP_ADD_DMA_PATTERN, OP_CLEAR_DMA_PATTERNS, OP_CLOCK_STEP, OP_LEAK = range(11)
BYTE, WORD, LONG, QUAD = range(4)

# The VMPCK0 scripts/fuzz.sh sets on the responder (the qtests' fixed one)
FUZZ_VMPCK0 = bytes(range(0xc0, 0xe0))

# legacy virtio-pci (I/O BAR 0) without MSI-X
HOST_FEATURES, GUEST_FEATURES, QUEUE_PFN, QUEUE_NUM, QUEUE_SEL, QUEUE_NOTIFY, STATUS = \
    0, 4, 8, 12, 14, 16, 18
ACK, DRIVER, DRIVER_OK = 1, 2, 4
VIRTIO_RNG_F_LEAK = 1 << 0
DESC_F_NEXT, DESC_F_WRITE = 1, 2
LEAKQ = (1, 2)
PFN = {1: 0x100, 2: 0x200}          # the rings at 1 MiB and 2 MiB
BUF = 0x400000                      # request buffers from 4 MiB on


def out(offset, value, size):
    return bytes([OP_OUT]) + struct.pack("<BBHI", size, 0, offset, value)


def write(offset, value, size):
    return bytes([OP_WRITE]) + struct.pack("<BBxxIQ", size, 0, offset, value)  # C struct padding


def dma(data, index=0, stride=0):
    return bytes([OP_ADD_DMA_PATTERN]) + struct.pack("<BB", index, stride) + data


def clear():
    return bytes([OP_CLEAR_DMA_PATTERNS])


def leak(stopped=False):
    return bytes([OP_LEAK, 1 if stopped else 0])


def clock():
    return bytes([OP_CLOCK_STEP])


def desc(addr, length, flags, nxt=0):
    return struct.pack("<QIHH", addr, length, flags, nxt)


def join(ops):
    return SEP.join(ops)


def driver_setup(features=VIRTIO_RNG_F_LEAK):
    ops = [out(STATUS, ACK | DRIVER, BYTE), out(GUEST_FEATURES, features, LONG)]
    for q in LEAKQ:
        ops += [out(QUEUE_SEL, q, WORD), out(QUEUE_PFN, PFN[q], LONG)]
    return ops + [out(STATUS, ACK | DRIVER | DRIVER_OK, BYTE)]


def kick(q, chain, source=None, idx=1):
    """DMA patterns for one request, in the order the device reads guest memory: the
    available ring's index and entry, the first descriptor, a copy's source bytes (mapped
    before the next descriptor is read), the rest of the chain; then the kick."""
    ops = [clear(), dma(struct.pack("<H", idx)), dma(struct.pack("<H", idx - 1)),
           dma(chain[0])]
    if source:
        ops.append(dma(source))
    ops += [dma(d) for d in chain[1:]]
    return ops + [out(QUEUE_NOTIFY, q, WORD)]


def fill(n, length=64):
    return [desc(BUF + 0x1000 * n, length, DESC_F_WRITE)]


def copy(n, length=12, head=0):
    return [desc(BUF + 0x1000 * n, length, DESC_F_NEXT, head + 1),
            desc(BUF + 0x1000 * n + 0x800, length, DESC_F_WRITE)]


def virtio_rng_seeds():
    s = {}
    setup = driver_setup()
    s["fill-held-leak"] = setup + kick(1, fill(0)) + [leak()]
    s["copy-held-leak"] = setup + kick(1, copy(1), b"epoch\x01\x00\x00vdso") + [leak()]
    s["fill-copy-leak-stopped"] = setup + kick(1, fill(2)) + \
        kick(1, copy(3, head=1), b"epoch\x03\x00\x00vdso", idx=2) + [leak(stopped=True)]
    s["inactive-queue-at-once"] = setup + kick(2, fill(4)) + kick(2, copy(5), b"x" * 12)
    s["leak-then-rearm"] = setup + kick(1, fill(6)) + [leak()] + kick(2, fill(7)) + \
        [leak(), leak()]
    s["leak-before-driver-ok"] = [leak()] + setup + kick(1, fill(8))
    s["reject-readable-only"] = setup + kick(1, [desc(BUF, 64, 0)])
    s["reject-length-mismatch"] = setup + kick(1, [desc(BUF, 8, DESC_F_NEXT, 1),
                                                  desc(BUF + 0x800, 16, DESC_F_WRITE)],
                                               b"y" * 8)
    s["reject-too-long"] = setup + kick(1, [desc(BUF, 65537, DESC_F_WRITE)])
    s["reset-while-held"] = setup + kick(1, fill(9)) + [out(STATUS, 0, BYTE), leak()]
    s["requestq"] = setup + [out(QUEUE_SEL, 0, WORD), out(QUEUE_PFN, 0x300, LONG)] + \
        kick(0, fill(10, 32)) + [clock()]
    s["no-leak-feature"] = driver_setup(0) + kick(1, fill(11)) + [leak()]
    return {k: join(v) for k, v in s.items()}


# sev-snp-responder (BAR 0, MMIO), docs/snp-responder.md
R_REQ_GPA, R_RESP_GPA, R_DATA_GPA, R_DATA_NPAGES, R_DOORBELL, R_FAIL_NEXT = \
    0x08, 0x10, 0x18, 0x20, 0x28, 0x48
GUEST_REQ, EXT_GUEST_REQ = 0x80000011, 0x80000012
REQ_GPA, RESP_GPA, DATA_GPA = 0x100000, 0x101000, 0x110000


def snp_msg(msg_type, payload, seqno=1, vmpck=0, key=FUZZ_VMPCK0, version=1):
    hdr = bytearray(0x60)
    struct.pack_into("<Q", hdr, 0x20, seqno)
    hdr[0x30], hdr[0x31] = 1, 1
    struct.pack_into("<HBBH", hdr, 0x32, 0x60, msg_type, version, len(payload))
    hdr[0x3c] = vmpck
    iv = struct.pack("<Q", seqno) + bytes(4)
    ct = AESGCM(key).encrypt(iv, bytes(payload), bytes(hdr[0x30:0x60]))
    hdr[0:16] = ct[-16:]
    return bytes(hdr) + ct[:-16]


def report_req(vmpl=0):
    return bytes(range(64)) + struct.pack("<I", vmpl) + bytes(28)


def key_req(root=0, vmpl=0, mix=0):
    return struct.pack("<IIQQ", root, vmpl, mix, 0) + bytes(8)


def ring(page, exit_code=GUEST_REQ, ext=()):
    ops = [clear(), dma(page), write(R_REQ_GPA, REQ_GPA, QUAD),
           write(R_RESP_GPA, RESP_GPA, QUAD)]
    ops += list(ext)
    return ops + [write(R_DOORBELL, exit_code, LONG)]


def snp_seeds():
    s = {}
    s["report"] = ring(snp_msg(5, report_req()))
    s["report-twice"] = ring(snp_msg(5, report_req())) + ring(snp_msg(5, report_req(), 3))
    s["report-vmpl3"] = ring(snp_msg(5, report_req(3)))
    s["key"] = ring(snp_msg(3, key_req()))
    s["key-vcek-mix"] = ring(snp_msg(3, key_req(1, 0, 0x3f)))
    s["ext-report"] = ring(snp_msg(5, report_req()), EXT_GUEST_REQ,
                           [write(R_DATA_GPA, DATA_GPA, QUAD), write(R_DATA_NPAGES, 4, LONG)])
    s["ext-too-small"] = ring(snp_msg(5, report_req()), EXT_GUEST_REQ,
                              [write(R_DATA_GPA, DATA_GPA, QUAD),
                               write(R_DATA_NPAGES, 0, LONG)])
    s["replay"] = ring(snp_msg(5, report_req())) + ring(snp_msg(5, report_req()))
    s["bad-key"] = ring(snp_msg(5, report_req(), key=bytes(32)))
    s["bad-version"] = ring(snp_msg(5, report_req(), version=2))
    s["fail-next"] = [write(R_FAIL_NEXT, 1, LONG)] + ring(snp_msg(5, report_req()))
    s["bad-command"] = ring(snp_msg(5, report_req()), 0x80000013)
    return {k: join(v) for k, v in s.items()}


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n")[1])
    for target, seeds in (("virtio-rng-leak", virtio_rng_seeds()),
                          ("sev-snp-responder", snp_seeds())):
        d = os.path.join(sys.argv[1], target)
        os.makedirs(d, exist_ok=True)
        for name, data in seeds.items():
            with open(os.path.join(d, f"{name}.bin"), "wb") as f:
                f.write(data)
        print(f"{d}: {len(seeds)} seeds")


if __name__ == "__main__":
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(__doc__.strip())
        sys.exit(0)
    main()
