#!/usr/bin/python3
"""rand_python.py KIND - a consumer of the user-space clone suite in the guest's own
Python: KIND is 'random' (random.getrandbits(128), the Mersenne Twister seeded once at
start), 'secrets' (secrets.token_bytes(16)) or 'uuid4' (uuid.uuid4().bytes).  Each
output goes to its slot of the ring (userspace/guest/us_ring.h) through mmap, paced as the C consumers are."""
import mmap
import os
import random
import secrets
import struct
import sys
import time
import uuid

US_MAGIC = 0x2173676e69727375
US_CAPACITY = 1 << 16
US_WIDTH = 16
US_ENTRIES_OFF = 4096
US_BATCH = 128                          # a pause of US_PAUSE seconds after each batch
US_PAUSE = 0.04
HEADER = struct.Struct("<QIIII")        # magic, slots, capacity, width, used
SLOT_OFF = 64                           # offsetof(struct us_header, slot)
SLOT_SIZE = 64

DRAW = {
    "random": lambda: random.getrandbits(128).to_bytes(16, "little"),
    "secrets": lambda: secrets.token_bytes(16),
    "uuid4": lambda: uuid.uuid4().bytes,
}


def main():
    kind = sys.argv[1] if len(sys.argv) == 2 else None
    if kind not in DRAW:
        sys.exit(f"usage: {sys.argv[0]} {'|'.join(DRAW)}")
    draw = DRAW[kind]
    with open(os.environ["RESEED_US_RING"], "r+b") as f:
        ring = mmap.mmap(f.fileno(), 0)
    magic, _, capacity, width, used = HEADER.unpack_from(ring, 0)
    k = int(os.environ["RESEED_US_SLOT"])
    if magic != US_MAGIC or capacity != US_CAPACITY or width != US_WIDTH or k >= used:
        sys.exit("rand_python: not a ring of this layout")
    slot = SLOT_OFF + k * SLOT_SIZE
    struct.pack_into("<24sII", ring, slot + 8, f"python-{kind}".encode(), 16, os.getpid())
    base = US_ENTRIES_OFF + k * US_CAPACITY * US_WIDTH
    n = 0
    while True:
        off = base + (n % US_CAPACITY) * US_WIDTH
        ring[off:off + US_WIDTH] = draw()
        n += 1
        struct.pack_into("<Q", ring, slot, n)
        if n % US_BATCH == 0:
            time.sleep(US_PAUSE)


if __name__ == "__main__":
    main()
