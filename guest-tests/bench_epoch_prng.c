// SPDX-License-Identifier: GPL-2.0
/*
 * bench_epoch_prng - what the RNG epoch guard costs a user-space generator (docs/benchmarks.md).
 *
 * Four ways to get 16 and 4096 random bytes: the ChaCha20 generator of epoch_prng.h
 * guarded by the epoch page (one load and compare per call, reseed when it moved), the same
 * generator unguarded, getrandom(2), and the vDSO's getrandom() (Linux 6.11, what glibc
 * 2.41 calls; absent on older kernels, then left out).  Targets: the guard costs at most
 * 2% or 1 ns a call; the guarded generator is at least 10x faster than getrandom(2) for
 * 16 bytes.  The vDSO figures are measured, with no target: the ratio vDSO/guarded says
 * what a generator in the vDSO costs next to one in the program.
 *
 * usage: bench_epoch_prng [--anon] [--rounds R] [--ms M]
 *            timing: R rounds (default 15) of M ms (default 100) per variant, interleaved;
 *            prints the fastest round's ns/call (the least disturbed by interrupts and
 *            other guests) and the ratios.  The epoch page comes from RNDEPOCH
 *            (falling back to an anonymous page when there is none), or with --anon from an
 *            anonymous zero page standing in for it.
 *        bench_epoch_prng --anon --calls N
 *            exactly N calls of each generator variant, for instruction counts under
 *            valgrind --tool=callgrind: the inclusive cost of gen_guarded_16, gen_unguarded_16,
 *            gen_guarded_4096 and gen_unguarded_4096, divided by N, is the count per call.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "rng_uapi.h"
#include "epoch_prng.h"
#include "vdso_getrandom.h"

#ifndef RNDEPOCH
#define RNDEPOCH _IO('R', 0x08)	/* host build against older headers */
#endif

static uint8_t out[4096];
static volatile uint8_t sink;

/*
 * For callgrind, one function per variant and size, kept out of line and apart (noipa: no
 * inlining, no merging of identical bodies), so that it attributes the cost of each.  The
 * timing uses one function for both variants instead: two copies of the same code can
 * differ by several ns a call through their placement alone.
 */
#define DEFINE_GEN(name, size)							\
static __attribute__((noipa)) int name(struct epoch_prng *p)			\
{										\
	return epoch_prng_bytes(p, out, size);					\
}
DEFINE_GEN(gen_guarded_16, 16)
DEFINE_GEN(gen_unguarded_16, 16)
DEFINE_GEN(gen_guarded_4096, 4096)
DEFINE_GEN(gen_unguarded_4096, 4096)

static __attribute__((noipa)) int gen_bytes(struct epoch_prng *p, size_t size)
{
	return epoch_prng_bytes(p, out, size);
}

static __attribute__((noipa)) int gen_getrandom(size_t size)
{
	return getrandom(out, size, 0) == (ssize_t)size ? 0 : -1;
}

static struct vdso_getrandom vdso;

static __attribute__((noipa)) int gen_vdso(size_t size)
{
	return vdso_getrandom(&vdso, out, size) == (ssize_t)size ? 0 : -1;
}

enum variant { GUARDED, UNGUARDED, GETRANDOM, VDSO, NR_VARIANTS };
static const char *const variant_name[NR_VARIANTS] = {
	"guarded", "unguarded", "getrandom", "vdso"
};

static struct epoch_prng guarded, unguarded;

static int call(enum variant v, size_t size)
{
	switch (v) {
	case GUARDED:
		return gen_bytes(&guarded, size);
	case UNGUARDED:
		return gen_bytes(&unguarded, size);
	case GETRANDOM:
		return gen_getrandom(size);
	default:
		return gen_vdso(size);
	}
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* ns per call over about @ms milliseconds, in batches so that the clock is read rarely. */
static double measure(enum variant v, size_t size, unsigned int ms)
{
	double start = now_ns(), elapsed;
	unsigned long calls = 0, i, batch = size == 16 ? 256 : 8;

	do {
		for (i = 0; i < batch; i++) {
			if (call(v, size)) {
				perror("generator");
				exit(1);
			}
		}
		sink ^= out[0];
		calls += batch;
		elapsed = now_ns() - start;
	} while (elapsed < ms * 1e6);
	return elapsed / calls;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static const volatile uint32_t *epoch_page(int anon, const char **source)
{
	void *p;
	int fd, efd;

	if (!anon) {
		fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
		efd = fd < 0 ? -1 : ioctl(fd, RNDEPOCH);
		if (fd >= 0)
			close(fd);
		if (efd >= 0) {
			p = (void *)epoch_map(efd);
			close(efd);
			if (p) {
				*source = "the RNG epoch page (RNDEPOCH)";
				return p;
			}
		}
		fprintf(stderr, "# no RNG epoch (%s): an anonymous page stands in for it\n",
			strerror(errno));
	}
	p = mmap(NULL, getpagesize(), PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	*source = "an anonymous zero page";
	return p;
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 16, 4096 };
	unsigned int rounds = 15, ms = 100, r, s;
	unsigned long calls = 0, i;
	const volatile uint32_t *epoch;
	const char *source = "";
	int anon = 0, v, variants, met = 1;

	for (i = 1; i < (unsigned long)argc; i++) {
		if (!strcmp(argv[i], "--anon"))
			anon = 1;
		else if (!strcmp(argv[i], "--rounds") && i + 1 < (unsigned long)argc)
			rounds = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--ms") && i + 1 < (unsigned long)argc)
			ms = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--calls") && i + 1 < (unsigned long)argc)
			calls = strtoul(argv[++i], NULL, 0);
		else {
			fprintf(stderr, "usage: %s [--anon] [--rounds R] [--ms M] | --anon --calls N\n",
				argv[0]);
			return 2;
		}
	}
	if (!rounds || !ms)
		return 2;

	epoch = epoch_page(anon, &source);
	if (epoch_prng_init(&guarded, epoch) || epoch_prng_init(&unguarded, NULL)) {
		perror("getrandom");
		return 1;
	}

	if (calls) {
		for (i = 0; i < calls; i++) {
			gen_guarded_16(&guarded);
			gen_unguarded_16(&unguarded);
			gen_guarded_4096(&guarded);
			gen_unguarded_4096(&unguarded);
		}
		printf("# %lu calls each of gen_{guarded,unguarded}_{16,4096} over %s; "
		       "instructions per call = inclusive Ir / %lu\n", calls, source, calls);
		return sink & 0;
	}

	variants = vdso_getrandom_init(&vdso) ? VDSO : NR_VARIANTS;
	printf("# bench_epoch_prng: guard over %s; fastest of %u rounds of %u ms\n",
	       source, rounds, ms);
	if (variants == VDSO)
		printf("# vDSO getrandom: not measured: %s\n", vdso.why);
	printf("# %6s %12s %12s %12s %11s %10s %18s %10s %13s\n", "bytes", "guarded ns",
	       "unguarded ns", "getrandom ns", "guard cost", "guard ns", "getrandom/guarded",
	       "vdso ns", "vdso/guarded");
	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		double t[NR_VARIANTS][64], best[NR_VARIANTS], cost, cost_ns, speedup;

		if (rounds > 64)
			rounds = 64;
		for (r = 0; r < rounds; r++)
			for (v = 0; v < variants; v++)
				t[v][r] = measure(v, sizes[s], ms);
		for (v = 0; v < variants; v++) {
			qsort(t[v], rounds, sizeof(double), cmp_double);
			best[v] = t[v][0];
		}
		cost_ns = best[GUARDED] - best[UNGUARDED];
		cost = cost_ns / best[UNGUARDED] * 100;
		speedup = best[GETRANDOM] / best[GUARDED];
		printf("  %6zu %12.1f %12.1f %12.1f %10.2f%% %10.2f %17.1fx", sizes[s],
		       best[GUARDED], best[UNGUARDED], best[GETRANDOM], cost, cost_ns, speedup);
		if (variants == NR_VARIANTS)
			printf(" %10.1f %12.2fx\n", best[VDSO], best[VDSO] / best[GUARDED]);
		else
			printf(" %10s %13s\n", "-", "-");
		if (cost > 2 && cost_ns > 1) {
			printf("# %zu bytes: the guard costs %.2f%% (%.2f ns), over 2%% and 1 ns\n",
			       sizes[s], cost, cost_ns);
			met = 0;
		}
		if (sizes[s] == 16 && speedup < 10) {
			printf("# 16 bytes: guarded is only %.1fx faster than getrandom(2), not 10x\n",
			       speedup);
			met = 0;
		}
	}
	printf("# targets (guard <= 2%% or 1 ns; 16 bytes >= 10x getrandom): %s\n",
	       met ? "met" : "NOT met");
	printf("# reseeds: guarded %llu, unguarded %llu; variants:",
	       (unsigned long long)guarded.reseeds, (unsigned long long)unguarded.reseeds);
	for (v = 0; v < variants; v++)
		printf(" %s", variant_name[v]);
	printf("\n");
	return 0;
}
