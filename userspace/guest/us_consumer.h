/* SPDX-License-Identifier: GPL-2.0 */
/*
 * us_consumer.h - what a C consumer of the user-space clone suite shares: its slots of
 * the ring (us_ring.h), named by the agent through the environment (RESEED_US_RING,
 * RESEED_US_SLOT: the first of its slots), and us_put(), which records one output.
 */
#ifndef US_CONSUMER_H
#define US_CONSUMER_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "us_ring.h"

struct us_out {
	struct us_slot *slot;
	uint8_t *entries;
};

static void us_die(const char *what)
{
	fprintf(stderr, "# userspace: consumer %d: %s: %s\n", (int)getpid(), what,
		strerror(errno));
	exit(1);
}

/* The i-th slot of this consumer, labelled name, for outputs of width bytes. */
static struct us_out us_open(int i, const char *name, unsigned int width)
{
	static struct us_header *h;
	const char *path = getenv("RESEED_US_RING"), *first = getenv("RESEED_US_SLOT");
	struct us_out o;
	int fd, k;

	if (!path || !first) {
		errno = EINVAL;
		us_die("RESEED_US_RING and RESEED_US_SLOT unset (run by us_agent)");
	}
	if (!h) {
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			us_die(path);
		h = mmap(NULL, US_RING_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (h == MAP_FAILED)
			us_die("mmap the ring");
		close(fd);
		if (h->magic != US_MAGIC) {
			errno = EPROTO;
			us_die("not a ring file");
		}
	}
	k = atoi(first) + i;
	if (k < 0 || k >= (int)h->used) {
		errno = ERANGE;
		us_die("slot");
	}
	o.slot = &h->slot[k];
	o.entries = (uint8_t *)h + US_ENTRIES_OFF + (uint64_t)k * US_CAPACITY * US_WIDTH;
	snprintf(o.slot->name, sizeof(o.slot->name), "%s", name);
	o.slot->width = width;
	o.slot->pid = getpid();
	return o;
}

static void us_put(struct us_out *o, const void *out, size_t len)
{
	uint64_t n = o->slot->count;
	uint8_t *e = o->entries + (n % US_CAPACITY) * US_WIDTH;

	memset(e, 0, US_WIDTH);
	memcpy(e, out, len < US_WIDTH ? len : US_WIDTH);
	__atomic_store_n(&o->slot->count, n + 1, __ATOMIC_RELEASE);
	if ((n + 1) % US_BATCH == 0)
		nanosleep(&(struct timespec){ .tv_nsec = US_PAUSE_NS }, NULL);
}

#endif /* US_CONSUMER_H */
