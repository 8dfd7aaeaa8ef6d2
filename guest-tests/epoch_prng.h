/* SPDX-License-Identifier: GPL-2.0 */
/*
 * epoch_prng.h - a user-space ChaCha20 generator guarded by the RNG epoch.
 *
 * The generator is what a TLS library or a UUID generator keeps in user space: seeded
 * once from getrandom(), then producing output on its own.  The guard is one load from
 * the epoch page before each call; when the value moved since the last seed (a snapshot
 * was taken or restored), the generator reseeds before it produces anything.
 *
 * Where the kernel also follows a hypervisor's VM generation counter (VMClock), the
 * epoch is two words: the value in the page and that counter, which the kernel maps as
 * the second page (rand_epoch_data.vm_counter_offset says where); the guard compares
 * both, as the hypervisor moves the counter before any vCPU runs and the kernel moves
 * the value only when it notices.  epoch_map() maps what the kernel offers.
 *
 * With epoch == NULL the generator is unguarded: the behaviour of every user-space PRNG
 * today, and the negative control of the snapshot scenarios.
 *
 * Like arc4random, it keeps the rest of its last ChaCha20 block for the next call, so that
 * small requests do not each cost a whole block; a reseed throws that rest away.
 */
#ifndef EPOCH_PRNG_H
#define EPOCH_PRNG_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "rng_uapi.h"

static const uint64_t epoch_no_vm_counter;

/*
 * The VM generation counter of a mapping made by epoch_map(), or a zero where the
 * kernel has none (vm_counter_offset, at byte 256 of the page, is 0 on kernels
 * without it).  Read it again whenever the value moved: the kernel moves the value
 * when a counter comes or goes.
 */
static inline const volatile uint64_t *epoch_vm_counter(const volatile uint32_t *epoch)
{
	uint32_t off = epoch ? epoch[EPOCH_VM_COUNTER_OFFSET_WORD] : 0;

	return off ? (const volatile uint64_t *)((const volatile char *)epoch + off) :
		     &epoch_no_vm_counter;
}

/*
 * Map the epoch of RNDEPOCH's descriptor: one page, or two where the kernel maps the VM
 * generation counter after it.  NULL with errno on failure.
 */
static inline const volatile uint32_t *epoch_map(int efd)
{
	long pg = sysconf(_SC_PAGESIZE);
	void *p = mmap(NULL, pg, PROT_READ, MAP_SHARED, efd, 0);

	if (p == MAP_FAILED)
		return NULL;
	if (!((const volatile uint32_t *)p)[EPOCH_VM_COUNTER_OFFSET_WORD])
		return p;
	munmap(p, pg);
	p = mmap(NULL, 2 * pg, PROT_READ, MAP_SHARED, efd, 0);
	return p == MAP_FAILED ? NULL : p;
}

struct epoch_prng {
	uint32_t key[8];
	uint64_t counter;
	const volatile uint32_t *epoch;	/* the mapped epoch page, or NULL */
	const volatile uint64_t *vm;	/* its VM generation counter, or a zero */
	uint32_t seen;			/* epoch value at the last seed */
	uint64_t vm_seen;		/* VM generation counter at the last seed */
	uint64_t reseeds;
	uint32_t block[16];		/* the last block; its last 'avail' bytes are unused */
	unsigned int avail;
};

#define EPOCH_PRNG_ROTL(v, n) (((v) << (n)) | ((v) >> (32 - (n))))
#define EPOCH_PRNG_QR(a, b, c, d) do {					\
	a += b; d ^= a; d = EPOCH_PRNG_ROTL(d, 16);			\
	c += d; b ^= c; b = EPOCH_PRNG_ROTL(b, 12);			\
	a += b; d ^= a; d = EPOCH_PRNG_ROTL(d, 8);			\
	c += d; b ^= c; b = EPOCH_PRNG_ROTL(b, 7);			\
} while (0)

/* One ChaCha20 block (RFC 8439) with a 64-bit block counter and a zero nonce. */
static inline void epoch_prng_block(const uint32_t key[8], uint64_t counter, uint32_t out[16])
{
	static const uint32_t sigma[4] = { 0x61707865, 0x3320646e, 0x79622d32, 0x6b206574 };
	uint32_t x[16], in[16];
	int i;

	memcpy(in, sigma, sizeof(sigma));
	memcpy(in + 4, key, 32);
	in[12] = (uint32_t)counter;
	in[13] = (uint32_t)(counter >> 32);
	in[14] = 0;
	in[15] = 0;
	memcpy(x, in, sizeof(x));
	for (i = 0; i < 10; i++) {
		EPOCH_PRNG_QR(x[0], x[4], x[8], x[12]);
		EPOCH_PRNG_QR(x[1], x[5], x[9], x[13]);
		EPOCH_PRNG_QR(x[2], x[6], x[10], x[14]);
		EPOCH_PRNG_QR(x[3], x[7], x[11], x[15]);
		EPOCH_PRNG_QR(x[0], x[5], x[10], x[15]);
		EPOCH_PRNG_QR(x[1], x[6], x[11], x[12]);
		EPOCH_PRNG_QR(x[2], x[7], x[8], x[13]);
		EPOCH_PRNG_QR(x[3], x[4], x[9], x[14]);
	}
	for (i = 0; i < 16; i++)
		out[i] = x[i] + in[i];
}

static inline int epoch_prng_seed(struct epoch_prng *p)
{
	/* Read the epoch before the seed: a leak during getrandom() is then seen next time. */
	if (p->epoch) {
		p->seen = *p->epoch;
		p->vm = epoch_vm_counter(p->epoch);
		p->vm_seen = *p->vm;
	}
	if (getrandom(p->key, sizeof(p->key), 0) != sizeof(p->key))
		return -1;
	p->counter = 0;
	memset(p->block, 0, sizeof(p->block));
	p->avail = 0;
	p->reseeds++;
	return 0;
}

static inline int epoch_prng_init(struct epoch_prng *p, const volatile uint32_t *epoch)
{
	memset(p, 0, sizeof(*p));
	p->epoch = epoch;
	return epoch_prng_seed(p);
}

/* Fill out[0..len) with generator output; reseed first if the epoch moved. */
static inline int epoch_prng_bytes(struct epoch_prng *p, void *out, size_t len)
{
	uint8_t *dst = out, *rest = (uint8_t *)p->block;
	size_t n;

	if (p->epoch && __builtin_expect(*p->epoch != p->seen || *p->vm != p->vm_seen, 0) &&
	    epoch_prng_seed(p))
		return -1;
	n = len < p->avail ? len : p->avail;
	memcpy(dst, rest + sizeof(p->block) - p->avail, n);
	memset(rest + sizeof(p->block) - p->avail, 0, n);
	p->avail -= n;
	dst += n;
	len -= n;
	for (; len >= sizeof(p->block); dst += sizeof(p->block), len -= sizeof(p->block)) {
		uint32_t block[16];

		epoch_prng_block(p->key, p->counter++, block);
		memcpy(dst, block, sizeof(block));
	}
	if (len) {
		epoch_prng_block(p->key, p->counter++, p->block);
		memcpy(dst, p->block, len);
		memset(p->block, 0, len);
		p->avail = sizeof(p->block) - len;
	}
	return 0;
}

#endif /* EPOCH_PRNG_H */
