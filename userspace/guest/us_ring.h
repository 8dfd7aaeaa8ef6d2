/* SPDX-License-Identifier: GPL-2.0 */
/*
 * us_ring.h - the output rings of the user-space clone suite (docs/userspace.md).
 *
 * One file in tmpfs (/dev/shm/reseed-us.ring), mapped shared by the agent (us_agent.c),
 * which locks it in memory and tells the host where its first page is, and by every
 * consumer, each of which owns one slot or more.  A consumer writes output n to entry
 * n % US_CAPACITY of its slot, then publishes count = n + 1 with a release store: the
 * host reads the counts with the VM stopped (the index in flight at a snapshot), and
 * the entries from the agent's dump.  A consumer pauses US_PAUSE_NS after every
 * US_BATCH outputs: at most 3,200 outputs a second, so that its slot holds every output
 * of a clone's run (20 s of them; a clone with reseed-notify's hooks runs 7-12 s), and
 * so that seventeen consumers leave the guest's two vCPUs time for everything else.
 *
 *   page 0         struct us_header: magic, geometry, one struct us_slot per slot
 *   page 1...      slot k's entries at US_ENTRIES_OFF + k * US_CAPACITY * US_WIDTH
 *
 * Python consumers (rand_python.py) write the same layout through mmap.
 */
#ifndef US_RING_H
#define US_RING_H

#include <stdint.h>

#define US_MAGIC	0x2173676e69727375ULL	/* "usrings!" */
#define US_SLOTS	20			/* rand_go and rand_rust say it again */
#define US_CAPACITY	(1u << 16)
#define US_WIDTH	16			/* bytes kept of each output */
#define US_BATCH	128
#define US_PAUSE_NS	40000000
#define US_ENTRIES_OFF	4096
#define US_RING_SIZE	(US_ENTRIES_OFF + (uint64_t)US_SLOTS * US_CAPACITY * US_WIDTH)
#define US_RING_PATH	"/dev/shm/reseed-us.ring"

struct us_slot {			/* 64 bytes */
	uint64_t count;			/* outputs written; release store after the entry */
	char name[24];			/* the consumer's label, NUL-terminated */
	uint32_t width;			/* bytes of each output (at most US_WIDTH are kept) */
	uint32_t pid;
	uint64_t reserved[3];
};

struct us_header {
	uint64_t magic;
	uint32_t slots;
	uint32_t capacity;
	uint32_t width;
	uint32_t used;			/* slots handed out by the agent */
	uint64_t reserved[5];
	struct us_slot slot[US_SLOTS];
};

_Static_assert(sizeof(struct us_slot) == 64, "slot layout is ABI with the host");
_Static_assert(__builtin_offsetof(struct us_header, slot) == 64, "slot[0] at 64");
_Static_assert(sizeof(struct us_header) <= US_ENTRIES_OFF, "header fits its page");

#endif /* US_RING_H */
