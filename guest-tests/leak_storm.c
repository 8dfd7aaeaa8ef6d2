// SPDX-License-Identifier: GPL-2.0
/*
 * leak_storm - getrandom() while the host declares entropy leaks as fast as it can.
 * scripts/check-hostile.py boots the guest with virtio-rng's
 * x-leak-storm=N (N leaks per second) and once without, and compares the rates.
 *
 * For leak_storm_seconds= (default 3) seconds it calls getrandom(32) in a loop and
 * reads the RNG epoch page after each call.  Asserted: every call returns 32 bytes, no
 * call takes longer than 1 s, and the epoch never takes a value it had before (it
 * never goes back and never repeats, however many leaks).  Printed, for the host:
 *
 *   # leak_storm: calls=C seconds=S per_second=R epoch_moves=M slowest_us=U
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "cmdline.h"
#include "rng_uapi.h"

/*
 * A call that livelocks under the storm never returns, so any bound catches it; what a
 * call costs under the storm is the host's rate comparison.  The bound is wall time:
 * under TCG the guest's clock is the host's, and a vCPU thread that the host does not
 * run stretches a call (102 ms once without any storm, with builds beside the tests).
 */
#define SLOWEST_ALLOWED_NS	(1000 * 1000 * 1000ULL)

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

TEST(getrandom_under_leak_storm)
{
	uint64_t start, end, t0, t1, slowest = 0, calls = 0, seconds = 3;
	const volatile uint32_t *epoch;
	size_t moves = 0, cap = 1 << 16, i;
	uint32_t *seen, cur;
	uint8_t buf[32];
	char arg[32];
	int fd, efd;

	if (cmdline_value("leak_storm_seconds", arg, sizeof(arg)))
		seconds = strtoull(arg, NULL, 0);
	fd = open("/dev/random", O_RDONLY);
	ASSERT_LE(0, fd);
	efd = ioctl(fd, RNDEPOCH);
	if (efd < 0 && errno == ENOTTY)
		SKIP(return, "no RNG epoch (no virtio-rng with the leak feature)");
	ASSERT_LE(0, efd) TH_LOG("RNDEPOCH: %s", strerror(errno));
	epoch = mmap(NULL, getpagesize(), PROT_READ, MAP_SHARED, efd, 0);
	ASSERT_NE(MAP_FAILED, epoch);
	seen = malloc(cap * sizeof(*seen));
	ASSERT_NE(NULL, seen);
	cur = seen[moves++] = *epoch;

	start = now_ns();
	end = start + seconds * 1000000000ULL;
	do {
		t0 = now_ns();
		ASSERT_EQ(32, getrandom(buf, sizeof(buf), 0)) TH_LOG("%s", strerror(errno));
		t1 = now_ns();
		if (t1 - t0 > slowest)
			slowest = t1 - t0;
		calls++;
		if (*epoch != cur) {
			cur = *epoch;
			if (moves == cap) {
				cap *= 2;
				seen = realloc(seen, cap * sizeof(*seen));
				ASSERT_NE(NULL, seen);
			}
			seen[moves++] = cur;
		}
	} while (t1 < end);

	printf("# leak_storm: calls=%llu seconds=%.3f per_second=%.0f epoch_moves=%zu slowest_us=%llu\n",
	       (unsigned long long)calls, (t1 - start) / 1e9, calls * 1e9 / (t1 - start),
	       moves - 1, (unsigned long long)(slowest / 1000));
	EXPECT_GT(SLOWEST_ALLOWED_NS, slowest) TH_LOG("a getrandom() call took %llu us",
						      (unsigned long long)(slowest / 1000));
	qsort(seen, moves, sizeof(*seen), cmp_u32);
	for (i = 1; i < moves; i++)
		EXPECT_NE(seen[i - 1], seen[i]) TH_LOG("the epoch took %#x twice", seen[i]);
	free(seen);
	close(efd);
	close(fd);
}

TEST_HARNESS_MAIN
